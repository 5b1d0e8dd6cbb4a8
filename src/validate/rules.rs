//! The one strict rule that classifies every run, and the per-run invariants it includes.
//!
//! A run fails on: a non-zero or missing return code; missing metrics; `ok` not true; any
//! error text (entry or metrics); any non-zero error counter; `warmup_ok` false; or a broken
//! invariant. Invariants and their tolerances (IDs from arknet-archives.md §15):
//!
//! | ID | invariant | tolerance |
//! | --- | --- | --- |
//! | E1 | every case parameter echoed in `metrics` equals the request (`echomark_archive::check_echo`; seconds and warmup too in echomark archives) | exact |
//! | E3 | `returncode` = 0 ⇔ `ok` = true | exact |
//! | L1 | `payload_roundtrip_bytes` = 2 × payload × `messages` | exact |
//! | L2 | `roundtrips_per_second` = `messages` / `elapsed_seconds` | relative 1e-6 (12-digit printing) |
//! | L3 | `payload_mib_per_second` = 2 × payload × `messages` / `elapsed_seconds` / 2^20 | relative 1e-6 |
//! | L10 | `warmup_ok` ⇔ `warmup_errors` = 0 | exact |
//! | L12 | sent − received = lost + unfinished (when no content or unexpected errors) | exact |
//! | L13 | no `udp_lost_messages` or `udp_late_messages` outside datagram protocols, no `unfinished_messages` in them | exact |
//! | L14 | `udp_late_messages` ≤ received (a late echo is a received one) | exact |
//! | S1 | `rtt_samples` ≤ `rtt_observations` | exact |
//! | C1 | coroutine `latency_mode` is `message` exactly when window = 1 | exact |
//! | C2 | coroutine observations = messages (message mode) or messages / window (batch) | exact |
//! | V1 | a passing run has finite throughput > 0 and finite latency, MiB/s and RSS ≥ 0 | exact |
//! | O1 | open-loop figures are present exactly when the configuration has an offered load, and name its rate and arrival | exact |
//! | O2 | scheduled = sent + unsent, and `saturated` ⇔ sent < 99% of scheduled | exact |
//! | O3 | Little's law on an unsaturated open-loop run without loss: mean in the system = completion rate × mean corrected latency (`echomark_archive::little_check`) | 2% |
//!
//! Received means `messages_received` in echomark archives (which count drain echoes there)
//! and `messages` in arknet's.

use echomark_archive::open_loop::LITTLE_TOLERANCE;
use echomark_archive::{check_echo, little_check, OpenLoopMetrics};

use crate::measurement::Measurement;
use crate::model::EntryFacts;
use crate::model::Program;

/// The classification of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub passed: bool,
    pub reasons: Vec<String>,
    /// arknet's dimensions rule (§10.4), for comparison with arknet's own pages.
    pub arknet_passed: bool,
}

const REL_TOLERANCE: f64 = 1e-6;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= REL_TOLERANCE * a.abs().max(b.abs()) + 1e-9
}

/// Classifies one run with the strict rule.
pub fn classify(entry: &EntryFacts, metrics: Option<&Measurement>) -> Verdict {
    let mut reasons = Vec::new();
    match entry.returncode {
        Some(0) => {}
        Some(code) => reasons.push(format!("returncode {code}")),
        None => reasons.push("no returncode (timed out)".to_string()),
    }
    if let Some(e) = entry.runner_error.filter(|e| !e.is_empty()) {
        reasons.push(format!("runner error: {e}"));
    }
    let Some(m) = metrics else {
        reasons.push("no metrics".to_string());
        return Verdict {
            passed: false,
            reasons,
            arknet_passed: false,
        };
    };
    if m.ok != Some(true) {
        reasons.push("ok is not true".to_string());
    }
    if let Some(e) = m.error.as_deref().filter(|e| !e.is_empty()) {
        reasons.push(format!("error: {e}"));
    }
    let counters = m.counters();
    for (name, value) in counters {
        if let Some(v) = value.filter(|v| *v > 0) {
            reasons.push(format!("{name} {v}"));
        }
    }
    if m.warmup_ok == Some(false) {
        reasons.push("warmup_ok is false".to_string());
    }
    let arknet_passed = entry.returncode == Some(0)
        && m.ok == Some(true)
        && entry.runner_error.is_none_or(str::is_empty)
        && m.error.as_deref().is_none_or(str::is_empty)
        && counters.iter().all(|(_, v)| v.unwrap_or(0) == 0)
        && m.warmup_ok != Some(false);
    invariants(entry, m, &mut reasons);
    Verdict {
        passed: reasons.is_empty(),
        reasons,
        arknet_passed,
    }
}

fn invariants(e: &EntryFacts, m: &Measurement, reasons: &mut Vec<String>) {
    let mut broken = |id: &str, what: String| reasons.push(format!("{id}: {what}"));
    // E1: the program measured what was asked for.
    for field in check_echo(&e.request, &m.parameters()) {
        broken("E1", format!("metrics.{field} differs from the request"));
    }
    // E3: the exit code and the verdict agree.
    if let (Some(code), Some(ok)) = (e.returncode, m.ok) {
        if (code == 0) != ok {
            broken("E3", format!("returncode {code} but ok is {ok}"));
        }
    }
    rates(e, m, &mut broken);
    accounting(e, m, &mut broken);
    if e.program == Program::ArknetCoroutine {
        coroutine(e, m, &mut broken);
    }
    open_loop(e, m, &mut broken);
    usable(m, &mut broken);
}

/// L1–L3: the byte count and the rates follow from the messages and the time.
fn rates(e: &EntryFacts, m: &Measurement, broken: &mut impl FnMut(&str, String)) {
    let messages = m.messages;
    let payload = e.key.payload_bytes;
    if let (Some(bytes), Some(n)) = (m.payload_roundtrip_bytes, messages) {
        if bytes != 2 * payload * n {
            broken(
                "L1",
                format!("payload_roundtrip_bytes {bytes} ≠ 2 × {payload} × {n}"),
            );
        }
    }
    if let (Some(n), Some(elapsed)) = (messages, m.elapsed_seconds.filter(|s| *s > 0.0)) {
        if let Some(rate) = m.roundtrips_per_second {
            if !close(rate, n as f64 / elapsed) {
                broken(
                    "L2",
                    format!("roundtrips_per_second {rate} ≠ {n} / {elapsed}"),
                );
            }
        }
        if let Some(mib) = m.payload_mib_per_second {
            let expected = 2.0 * payload as f64 * n as f64 / elapsed / 1_048_576.0;
            if !close(mib, expected) {
                broken("L3", format!("payload_mib_per_second {mib} ≠ {expected}"));
            }
        }
    }
}

/// L10, L12, L13, L14, S1: the warmup verdict, the message accounting (sent − received = lost + unfinished), loss and late echoes only on datagrams and unfinished messages only on streams, late echoes among those received, samples within observations.
fn accounting(e: &EntryFacts, m: &Measurement, broken: &mut impl FnMut(&str, String)) {
    let messages = m.messages;
    if let (Some(ok), Some(errors)) = (m.warmup_ok, m.warmup_errors) {
        if ok != (errors == 0) {
            broken("L10", format!("warmup_ok {ok} with warmup_errors {errors}"));
        }
    }
    let lost = m.udp_lost_messages.unwrap_or(0);
    let unfinished = m.unfinished_messages.unwrap_or(0);
    if let Some(sent) = m.messages_sent {
        let received = m.messages_received.or(messages).unwrap_or(0);
        let clean = m.content_errors.unwrap_or(0) == 0 && m.unexpected_messages.unwrap_or(0) == 0;
        if clean && sent.checked_sub(received) != Some(lost + unfinished) {
            broken(
                "L12",
                format!(
                    "sent {sent} − received {received} ≠ lost {lost} + unfinished {unfinished}"
                ),
            );
        }
    }
    let udp = e.key.protocol.is_datagram();
    if !udp && lost > 0 {
        broken(
            "L13",
            format!("udp_lost_messages {lost} in a {} run", e.key.protocol),
        );
    }
    let late = m.udp_late_messages.unwrap_or(0);
    if !udp && late > 0 {
        broken(
            "L13",
            format!("udp_late_messages {late} in a {} run", e.key.protocol),
        );
    }
    if let Some(received) = m.messages_received.filter(|&r| late > r) {
        broken(
            "L14",
            format!("udp_late_messages {late} > messages_received {received}"),
        );
    }
    if udp && unfinished > 0 {
        broken(
            "L13",
            format!("unfinished_messages {unfinished} in a UDP run"),
        );
    }
    if let (Some(samples), Some(observations)) = (m.rtt_samples, m.rtt_observations) {
        if samples > observations {
            broken(
                "S1",
                format!("rtt_samples {samples} > rtt_observations {observations}"),
            );
        }
    }
}

/// C1, C2: arknet's coroutine program times a message at window 1 and a batch above it.
fn coroutine(e: &EntryFacts, m: &Measurement, broken: &mut impl FnMut(&str, String)) {
    let messages = m.messages;
    let window = e.key.window;
    let message_mode = window == 1;
    match m.latency_mode.as_deref() {
        Some("message") if message_mode => {}
        Some("batch") if !message_mode => {}
        other => broken("C1", format!("latency_mode {other:?} at window {window}")),
    }
    if let (Some(obs), Some(n)) = (m.rtt_observations, messages) {
        let expected_ok = if message_mode {
            obs == n
        } else {
            obs * window == n
        };
        if !expected_ok {
            broken(
                "C2",
                format!("rtt_observations {obs} does not fit {n} messages at window {window}"),
            );
        }
    }
}

/// V1: a run that claims success has usable numbers.
fn usable(m: &Measurement, broken: &mut impl FnMut(&str, String)) {
    let messages = m.messages;
    if m.ok == Some(true) {
        let finite_nonneg = |v: Option<f64>| v.is_some_and(|x| x.is_finite() && x >= 0.0);
        if !m
            .roundtrips_per_second
            .is_some_and(|x| x.is_finite() && x > 0.0)
        {
            broken("V1", "roundtrips_per_second missing or not > 0".to_string());
        }
        if messages.is_none_or(|n| n == 0) {
            broken("V1", "no completed messages".to_string());
        }
        for (name, v) in [
            ("payload_mib_per_second", m.payload_mib_per_second),
            ("rtt_p50_us", m.rtt_p50_us),
            ("rtt_p95_us", m.rtt_p95_us),
            ("rtt_p99_us", m.rtt_p99_us),
        ] {
            if !finite_nonneg(v) {
                broken("V1", format!("{name} missing or negative"));
            }
        }
        if m.peak_rss_bytes.is_none() {
            broken("V1", "peak_rss_bytes missing".to_string());
        }
    }
}

/// O1–O3: the open-loop figures fit the configuration and each other.
fn open_loop(e: &EntryFacts, m: &Measurement, broken: &mut impl FnMut(&str, String)) {
    let open = match (e.key.load, &m.open_loop) {
        (None, None) => return,
        (Some(load), Some(open)) => {
            if (open.offered_rate, open.arrival) != (load.rate, load.arrival) {
                broken(
                    "O1",
                    format!(
                        "metrics.open_loop is {} msg/s {} but the run asked for {load}",
                        open.offered_rate, open.arrival
                    ),
                );
            }
            open
        }
        (Some(load), None) => {
            return broken(
                "O1",
                format!("asked for {load} but metrics.open_loop is missing"),
            )
        }
        (None, Some(_)) => {
            return broken("O1", "metrics.open_loop in a closed-loop run".to_string())
        }
    };
    if let Some(sent) = m.messages_sent {
        if sent + open.unsent_messages != open.scheduled_messages {
            broken(
                "O2",
                format!(
                    "sent {sent} + unsent {} ≠ scheduled {}",
                    open.unsent_messages, open.scheduled_messages
                ),
            );
        }
        if open.saturated != OpenLoopMetrics::is_saturated(sent, open.scheduled_messages) {
            broken(
                "O2",
                format!(
                    "saturated is {} with {sent} of {} scheduled messages sent",
                    open.saturated, open.scheduled_messages
                ),
            );
        }
    }
    // Late echoes break the in-flight integral as losses do (see little_law).
    let lost = m.udp_lost_messages.unwrap_or(0)
        + m.unfinished_messages.unwrap_or(0)
        + m.udp_late_messages.unwrap_or(0);
    let has_latency = m.rtt_samples.unwrap_or(0) > 0;
    let check = m
        .messages_received
        .zip(m.rtt_mean_us)
        .filter(|_| has_latency)
        .and_then(|(received, mean)| little_check(open, received, mean, lost));
    if let Some(c) = check.filter(|c| !c.holds()) {
        broken(
            "O3",
            format!(
                "Little's law: {:.4} in the system on average, but rate × mean latency is {:.4} ({:.1}% apart, tolerance {:.0}%)",
                c.measured,
                c.predicted,
                c.gap * 100.0,
                LITTLE_TOLERANCE * 100.0
            ),
        );
    }
}

/// CPU percent of one logical CPU and whether it was estimated (arknet-reports.md §3.1).
pub fn cpu_percent(m: &Measurement) -> (Option<f64>, bool) {
    let (seconds, from_total) = match (m.cpu_seconds, m.total_cpu_seconds) {
        (Some(s), _) => (s, false),
        (None, Some(t)) => (t, true),
        (None, None) => return (None, m.cpu_elapsed_seconds.is_none()),
    };
    let estimated = m.cpu_elapsed_seconds.is_none();
    let mut wall = m.cpu_elapsed_seconds.or(m.elapsed_seconds);
    if estimated && from_total {
        wall = wall
            .zip(m.warmup_seconds.filter(|w| w.is_finite() && *w >= 0.0))
            .map(|(a, b)| a + b);
    }
    let percent = wall
        .filter(|w| w.is_finite() && *w > 0.0)
        .filter(|_| seconds.is_finite() && seconds >= 0.0)
        .map(|w| seconds / w * 100.0);
    (percent, estimated)
}
