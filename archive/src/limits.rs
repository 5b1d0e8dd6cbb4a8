//! The bounds of what a real run can be, in one place for the runner (the ranges of its
//! flags) and the generator (what `validate` and `import` accept): a figure outside them is
//! not a measurement, whoever wrote it. Where the runner has a flag for a value, its range
//! is the flag's, and whatever reads a setting back from an archive (`matrix --resume`,
//! `validate`) holds it to the same range, so an edited archive cannot ask for what the
//! command line refuses; elsewhere the bound is what is physically possible, with room to
//! spare.

use std::ops::RangeInclusive;

use crate::archive::Settings;

/// The most connections (or clients, or streams) one run can hold: Linux's default
/// `fs.nr_open`, the most file descriptors one process may have open.
pub const MAX_CONNECTIONS: u64 = 1 << 20;

/// `--udp-batch`: datagrams per `recvmmsg`/`sendmmsg` call. One is no batch; Linux's
/// `UIO_MAXIOV` is far above 64, and more would only grow the buffers.
pub const UDP_BATCH: RangeInclusive<u64> = 2..=MAX_UDP_BATCH;

/// The largest `--udp-batch`.
pub const MAX_UDP_BATCH: u64 = 64;

/// The longest a run (or anything inside it) can last: 7 days, in seconds.
pub const MAX_RUN_SECONDS: f64 = 7.0 * 86_400.0;

/// The most memory one machine can have, in bytes: 256 TiB, the physical address space of
/// x86-64 with 4-level paging (48 bits), eight times the largest servers sold.
pub const MAX_MEMORY_BYTES: u64 = 1 << 48;

/// The sum of counts read from input, stopping at `u64::MAX` instead of wrapping (or
/// panicking): a total no run can reach is then refused by its bound, not read as a small
/// one.
pub fn saturating_sum(counts: impl IntoIterator<Item = u64>) -> u64 {
    counts.into_iter().fold(0, u64::saturating_add)
}

/// A range a figure of a real run stays in, with the words that say what it is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    pub min: f64,
    /// Whether `min` itself is outside (a duration or an offered rate of 0 is no run).
    pub above_min: bool,
    pub max: f64,
    /// What the range is, for messages: "a run lasts from 1 ms to 7 days".
    pub rule: &'static str,
}

/// A figure outside its [`Bound`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{} is not a real run's figure: {rule}", Shown(*.value))]
pub struct OutOfRange {
    pub value: f64,
    pub rule: &'static str,
}

/// A figure as a message shows it: plain where that is short, in exponent form where the
/// plain form would run to hundreds of digits (`1e-300`, `1e308`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shown(pub f64);

impl std::fmt::Display for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = self.0;
        if v != 0.0 && v.is_finite() && !(1e-3..1e15).contains(&v.abs()) {
            write!(f, "{v:e}")
        } else {
            write!(f, "{v}")
        }
    }
}

impl Bound {
    /// `value` when it is finite and inside the bound.
    pub fn check(&self, value: f64) -> Result<f64, OutOfRange> {
        let above = if self.above_min {
            value > self.min
        } else {
            value >= self.min
        };
        if value.is_finite() && above && value <= self.max {
            Ok(value)
        } else {
            Err(OutOfRange {
                value,
                rule: self.rule,
            })
        }
    }
}

/// How long a run lasts, seconds.
pub const DURATION_SECONDS: Bound = Bound {
    min: 1e-3,
    above_min: false,
    max: MAX_RUN_SECONDS,
    rule: "a run lasts from 1 ms to 7 days (604,800 s)",
};

/// Connections, clients, users or streams of one run.
pub const CONNECTIONS: Bound = Bound {
    min: 1.0,
    above_min: false,
    max: MAX_CONNECTIONS as f64,
    rule: "a run holds from 1 to 1,048,576 connections (Linux's fs.nr_open, the most \
           descriptors one process may have)",
};

/// Requests, answers or messages per second, as measured (0 when nothing was answered).
pub const RATE_PER_SECOND: Bound = Bound {
    min: 0.0,
    above_min: false,
    max: 1e9,
    rule: "a rate is from 0 to 10^9 per second (a nanosecond per request)",
};

/// The rate a run was asked to offer, per second.
pub const OFFERED_RATE_PER_SECOND: Bound = Bound {
    above_min: true,
    rule: "an offered rate is above 0 and at most 10^9 per second (a nanosecond per request)",
    ..RATE_PER_SECOND
};

/// Bytes per second over a link.
pub const BYTES_PER_SECOND: Bound = Bound {
    min: 0.0,
    above_min: false,
    max: 1.25e12,
    rule: "a transfer is from 0 to 1.25 × 10^12 bytes per second (10 Tbit/s, above any link \
           or loopback)",
};

/// Bits per second over a link.
pub const BITS_PER_SECOND: Bound = Bound {
    max: 1e13,
    rule: "a transfer is from 0 to 10^13 bits per second (10 Tbit/s, above any link or \
           loopback)",
    ..BYTES_PER_SECOND
};

/// A latency or a round-trip time, microseconds.
pub const LATENCY_US: Bound = Bound {
    min: 0.0,
    above_min: false,
    max: MAX_RUN_SECONDS * 1e6,
    rule: "a latency is from 0 to 7 days (the longest run), in microseconds",
};

/// CPU time of one process over a run, seconds.
pub const CPU_SECONDS: Bound = Bound {
    min: 0.0,
    above_min: false,
    max: MAX_RUN_SECONDS * 8192.0,
    rule: "CPU time is from 0 to 7 days on each of 8,192 CPUs (Linux's most)",
};

/// A congestion or flow-control window, bytes: what a sender may have in flight, each byte
/// kept until it is acknowledged.
pub const WINDOW_BYTES: Bound = Bound {
    min: 0.0,
    above_min: false,
    max: MAX_MEMORY_BYTES as f64,
    rule: "a window is from 0 to 256 TiB (bytes kept in flight until acknowledged, more than \
           any machine's memory)",
};

/// A share, percent.
pub const PERCENT: Bound = Bound {
    min: 0.0,
    above_min: false,
    max: 100.0,
    rule: "a share is from 0 to 100 percent",
};

/// Payload bytes: the 16-byte message header, up to the largest UDP datagram.
pub const PAYLOAD: RangeInclusive<u64> = 16..=65_507;
/// Clients and windows: 1 to 1,024 (arknet's range).
pub const COUNT: RangeInclusive<u64> = 1..=1024;
/// IO threads: 1 to 64.
pub const THREADS: RangeInclusive<u64> = 1..=64;
/// Synthetic work per echo: 0 to 10,000,000 rounds.
pub const WORK: RangeInclusive<u64> = 0..=10_000_000;
/// Socket buffer requests: 1 B to 2 GiB.
pub const BUFFER: RangeInclusive<u64> = 1..=(1 << 31);
/// Open-loop rates: 1 to 100 million messages per second.
pub const RATE: RangeInclusive<u64> = 1..=100_000_000;
/// The UDP loss timeout: 1 ms to 60 s.
pub const UDP_TIMEOUT_MS: RangeInclusive<u64> = 1..=60_000;
/// Repetitions of every configuration of a matrix.
pub const REPETITIONS: RangeInclusive<u64> = 1..=1000;
/// A rate sweep's shares of the closed-loop throughput, in percent.
pub const SWEEP_PERCENT: RangeInclusive<u64> = 1..=1000;
/// `--shard I/N`: at most this many parts.
pub const SHARDS: RangeInclusive<u64> = 1..=10_000;
/// The longest `--host-name`.
pub const HOST_NAME_CHARS: usize = 32;

/// Why `name` cannot be a host's name, if it cannot: 1 to [`HOST_NAME_CHARS`] ASCII letters,
/// digits, `.`, `_` or `-`, starting with a letter or digit (it becomes part of page text and
/// is safe in any of them).
pub fn host_name_problem(name: &str) -> Option<String> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if name.is_empty() || name.chars().count() > HOST_NAME_CHARS {
        return Some(format!(
            "{name:?} is not a host name: give 1 to {HOST_NAME_CHARS} characters"
        ));
    }
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) || !name.chars().all(ok_char) {
        return Some(format!(
            "{name:?} is not a host name: use ASCII letters, digits, '.', '_' and '-', starting with a letter or digit"
        ));
    }
    None
}

/// The most runs one matrix may plan: a million 1 s runs are eleven days of measuring, far
/// beyond any real matrix, and their plan still fits in memory.
pub const MAX_PLANNED_RUNS: u64 = 1_000_000;

/// The first setting of `s` outside its range, as (JSON path under `settings`, what is
/// wrong). Durations and CPU lists are the runner's to check; this covers every count,
/// size and list.
pub fn settings_problem(s: &Settings) -> Option<(String, String)> {
    let out = |path: String, value: u64, range: &RangeInclusive<u64>| {
        (!range.contains(&value)).then(|| {
            (
                path,
                format!("must be {} to {}, got {value}", range.start(), range.end()),
            )
        })
    };
    let mut checks: Vec<Option<(String, String)>> = vec![
        out("repetitions".into(), s.repetitions, &REPETITIONS),
        out("udp_timeout_ms".into(), s.udp_timeout_ms, &UDP_TIMEOUT_MS),
    ];
    for (name, value) in [
        ("udp_send_buffer", s.udp_send_buffer),
        ("udp_recv_buffer", s.udp_recv_buffer),
        ("udp_server_recv_buffer", s.udp_server_recv_buffer),
    ] {
        checks.extend(value.map(|v| out(name.into(), v, &BUFFER)));
    }
    checks.extend(s.udp_batch.map(|v| out("udp_batch".into(), v, &UDP_BATCH)));
    checks.extend(
        s.udp_throughput_window
            .map(|v| out("udp_throughput_window".into(), v, &COUNT)),
    );
    for (i, &p) in s.payloads.iter().enumerate() {
        checks.push(out(format!("payloads[{i}]"), p, &PAYLOAD));
    }
    for (i, p) in s.profiles.iter().enumerate() {
        checks.push(out(format!("profiles[{i}].clients"), p.clients, &COUNT));
        checks.push(out(format!("profiles[{i}].window"), p.window, &COUNT));
    }
    for (i, p) in s.io_profiles.iter().enumerate() {
        let at = |f: &str| format!("io_profiles[{i}].{f}");
        checks.push(out(at("io_threads"), p.io_threads, &THREADS));
        checks.push(out(at("handler_work"), p.handler_work, &WORK));
    }
    for (i, c) in s.cases.iter().flatten().enumerate() {
        let at = |f: &str| format!("cases[{i}].{f}");
        checks.push(out(at("payload_bytes"), c.payload_bytes, &PAYLOAD));
        checks.push(out(at("clients"), c.clients, &COUNT));
        checks.push(out(at("window"), c.window, &COUNT));
        checks.push(out(at("io_threads"), c.io_threads, &THREADS));
        checks.push(out(at("handler_work"), c.handler_work, &WORK));
        checks.extend(
            c.udp_server_recv_buffer
                .map(|b| out(at("udp_server_recv_buffer"), b, &BUFFER)),
        );
    }
    if let Some(open) = &s.open_loop {
        for (i, &r) in open.rates.iter().enumerate() {
            checks.push(out(format!("open_loop.rates[{i}]"), r, &RATE));
        }
        for (i, &p) in open.sweep_percent.iter().enumerate() {
            checks.push(out(
                format!("open_loop.sweep_percent[{i}]"),
                p,
                &SWEEP_PERCENT,
            ));
        }
    }
    if let Some(shard) = s.shard {
        checks.push(out("shard.count".into(), shard.count, &SHARDS));
        if !shard.is_valid() {
            checks.push(Some((
                "shard".into(),
                format!("part {} of {} does not exist", shard.index, shard.count),
            )));
        }
    }
    if let Some(u) = &s.until_decided {
        checks.push(until_decided_problem(u, s.repetitions));
    }
    if let Some(problem) = checks.into_iter().flatten().next() {
        return Some(problem);
    }
    let runs = s.planned_runs_bound();
    (runs > MAX_PLANNED_RUNS).then(|| {
        (
            "repetitions".into(),
            format!(
                "the settings plan up to {runs} runs, more than the {MAX_PLANNED_RUNS} a matrix may hold"
            ),
        )
    })
}

/// What is wrong with `--until-decided`'s recorded rule, if anything: level and margin
/// shares in (0, 1), looks that start at the planned repetitions and grow to at most the
/// command line's most repetitions, and a budget of at most 7 days.
fn until_decided_problem(
    u: &crate::decided::UntilDecided,
    repetitions: u64,
) -> Option<(String, String)> {
    let share = |v: f64| v.is_finite() && v > 0.0 && v < 1.0;
    let at = |f: &str| format!("until_decided.{f}");
    if !share(u.level) {
        return Some((
            at("level"),
            format!("must be above 0 and below 1, got {}", u.level),
        ));
    }
    if !share(u.margin) {
        return Some((
            at("margin"),
            format!("must be above 0 and below 1, got {}", u.margin),
        ));
    }
    let growing = u.looks.windows(2).all(|w| w[0] < w[1]);
    if u.looks.first() != Some(&repetitions) || !growing || u.max_repetitions() > *REPETITIONS.end()
    {
        return Some((
            at("looks"),
            format!(
                "must start at the {repetitions} planned repetitions and grow to at most {}, got {:?}",
                REPETITIONS.end(),
                u.looks
            ),
        ));
    }
    u.budget_seconds
        .filter(|b| !(b.is_finite() && *b > 0.0 && *b <= MAX_RUN_SECONDS))
        .map(|b| {
            (
                at("budget_seconds"),
                format!("must be above 0 and at most 7 days, got {b}"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_hold_their_ends_and_refuse_what_is_not_finite() {
        assert_eq!(DURATION_SECONDS.check(1e-3), Ok(1e-3));
        assert_eq!(DURATION_SECONDS.check(MAX_RUN_SECONDS), Ok(MAX_RUN_SECONDS));
        let e = DURATION_SECONDS.check(1e-300).unwrap_err();
        assert_eq!(
            e.to_string(),
            "1e-300 is not a real run's figure: a run lasts from 1 ms to 7 days (604,800 s)"
        );
        assert!(RATE_PER_SECOND.check(0.0).is_ok());
        assert!(OFFERED_RATE_PER_SECOND.check(0.0).is_err());
        assert!(OFFERED_RATE_PER_SECOND.check(0.5).is_ok());
        assert!(CONNECTIONS.check(1e12).is_err());
        assert!(CONNECTIONS.check(MAX_CONNECTIONS as f64).is_ok());
        assert_eq!(Shown(1e308).to_string(), "1e308");
        assert_eq!(Shown(98_592.5).to_string(), "98592.5");
        for bad in [f64::NAN, f64::INFINITY, -1.0, 1e308] {
            assert!(LATENCY_US.check(bad).is_err(), "{bad}");
        }
    }

    fn settings() -> Settings {
        serde_json::from_value(serde_json::json!({
            "seconds": 1.0, "warmup": 0.25, "repetitions": 3, "payloads": [64, 1024],
            "profiles": [{"clients": 1, "window": 1}, {"clients": 16, "window": 16}],
            "udp_throughput_window": 1,
            "io_profiles": [{"io_model": "shared", "io_threads": 1, "handler_work": 0}],
            "protocols": ["tcp", "udp"], "execution_modes": null, "address_family": "ipv4",
            "preset": null, "shuffle_seed": null, "case_timeout_seconds": 30.0,
            "udp_timeout_ms": 250, "udp_send_buffer": null, "udp_recv_buffer": null,
            "udp_server_recv_buffer": null, "keep_going": false
        }))
        .expect("valid settings")
    }

    #[test]
    fn settings_the_command_line_allows_pass() {
        assert_eq!(settings_problem(&settings()), None);
    }

    #[test]
    fn each_setting_out_of_range_is_named_by_its_path() {
        type Edit = Box<dyn Fn(&mut Settings)>;
        let cases: Vec<(&str, Edit)> = vec![
            ("repetitions", Box::new(|s| s.repetitions = 1_000_000_000)),
            ("repetitions", Box::new(|s| s.repetitions = 1001)),
            ("payloads[1]", Box::new(|s| s.payloads[1] = 70_000)),
            (
                "profiles[0].clients",
                Box::new(|s| s.profiles[0].clients = 0),
            ),
            (
                "profiles[1].window",
                Box::new(|s| s.profiles[1].window = 5000),
            ),
            (
                "io_profiles[0].io_threads",
                Box::new(|s| s.io_profiles[0].io_threads = 1000),
            ),
            ("udp_batch", Box::new(|s| s.udp_batch = Some(1_000_000_000))),
            ("udp_recv_buffer", Box::new(|s| s.udp_recv_buffer = Some(0))),
            ("udp_timeout_ms", Box::new(|s| s.udp_timeout_ms = 0)),
        ];
        for (path, edit) in cases {
            let mut s = settings();
            edit(&mut s);
            let (at, why) = settings_problem(&s).expect(path);
            assert_eq!(at, path, "{why}");
        }
    }

    #[test]
    fn a_plan_too_large_to_hold_is_refused_before_it_is_built() {
        let mut s = settings();
        s.repetitions = 1000;
        s.payloads = (16..1016).collect();
        let (at, why) = settings_problem(&s).expect("too large");
        assert_eq!(at, "repetitions");
        assert!(why.contains("4000000 runs"), "{why}");
    }
}
