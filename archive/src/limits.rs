//! The ranges a run's settings can take: the runner's command line accepts exactly these,
//! and whatever reads a setting back from an archive (`matrix --resume`, `validate`) holds it
//! to the same range, so an edited archive cannot ask for what the command line refuses.

use std::ops::RangeInclusive;

use crate::archive::Settings;

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
/// `--udp-batch`: datagrams per system call.
pub const UDP_BATCH: RangeInclusive<u64> = 2..=64;
/// A rate sweep's shares of the closed-loop throughput, in percent.
pub const SWEEP_PERCENT: RangeInclusive<u64> = 1..=1000;
/// `--shard I/N`: at most this many parts.
pub const SHARDS: RangeInclusive<u64> = 1..=10_000;
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

#[cfg(test)]
mod tests {
    use super::*;

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
