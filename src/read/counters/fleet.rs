//! A fleet run's record against its generators': one record per generator of the run's
//! count, in index order, each one process's metrics of the same case; the merged counters
//! and histogram their sums; the skew figures the generators'. What the runner's exact merge
//! guarantees, an edited or damaged archive can break.

use echomark_archive::{Entry, Metrics};

use super::at;
use crate::model::ArchiveFile;
use crate::read::FileRead;

/// Every check of entry `index`'s fleet record.
pub fn check(out: &mut FileRead, file: &ArchiveFile, index: usize, entry: &Entry) {
    let Some(m) = entry.metrics.as_ref() else {
        return;
    };
    let asked = entry.run.case.generators;
    let Some(fleet) = m.fleet.as_deref() else {
        if let Some(n) = asked {
            let message = format!("is missing, though the run was measured by {n} generators");
            at(out, file, index, "metrics.fleet", message);
        }
        return;
    };
    let mut problem = |field: String, message: String| {
        at(out, file, index, &format!("metrics.fleet.{field}"), message)
    };
    let count = fleet.generators.len() as u64;
    if asked != Some(count) || fleet.generator_count != count {
        let asked = asked.map_or("no generators".to_string(), |n| format!("{n} generators"));
        problem(
            "generator_count".into(),
            format!(
                "is {}, with {count} generator records, for a run of {asked}",
                fleet.generator_count
            ),
        );
    }
    for (i, g) in fleet.generators.iter().enumerate() {
        if g.index != i as u64 {
            problem(
                format!("generators[{i}].index"),
                format!("is {}, not {i}", g.index),
            );
        }
        if g.metrics.fleet.is_some() {
            let message = "is present: a generator's metrics are one process's".to_string();
            problem(format!("generators[{i}].metrics.fleet"), message);
        }
        if g.metrics.parameters() != m.parameters() {
            let message = "differ from the run's: every generator measures the same case";
            problem(format!("generators[{i}].metrics"), message.to_string());
        }
    }
    sums(&mut problem, m, fleet.metrics().collect());
    skews(&mut problem, fleet);
}

/// A counter of a metrics object, by name.
type Counter = (&'static str, fn(&Metrics) -> u64);

/// The merged counters and histogram are the generators' sums.
fn sums(problem: &mut impl FnMut(String, String), m: &Metrics, parts: Vec<&Metrics>) {
    let counters: [Counter; 5] = [
        ("messages", |m| m.messages),
        ("messages_sent", |m| m.messages_sent),
        ("messages_received", |m| m.messages_received),
        ("rtt_samples", |m| m.rtt_samples),
        ("payload_roundtrip_bytes", |m| m.payload_roundtrip_bytes),
    ];
    for (name, value) in counters {
        let sum: u64 = parts.iter().map(|p| value(p)).sum();
        if value(m) != sum {
            let message = format!("{name} {} is not the generators' sum {sum}", value(m));
            problem("generators".into(), message);
        }
    }
    let count = |m: &Metrics| {
        m.rtt_histogram
            .as_deref()
            .and_then(|h| echomark_archive::histogram::decode(h).ok())
            .map(|h| h.len())
    };
    let parts_total: Option<u64> = parts.iter().map(|p| count(p)).sum();
    if let (Some(merged), Some(total)) = (count(m), parts_total) {
        if merged != total {
            let message = format!(
                "the merged rtt_histogram holds {merged} round trips, the generators' {total}"
            );
            problem("generators".into(), message);
        }
    }
}

/// The skew figures are the generators': the worst is one of theirs, farthest from zero,
/// and every uncertainty is a distance.
fn skews(problem: &mut impl FnMut(String, String), fleet: &echomark_archive::FleetRecord) {
    let worst = fleet
        .generators
        .iter()
        .map(|g| g.start_skew_us)
        .max_by(|a, b| a.abs().total_cmp(&b.abs()));
    if let Some(worst) = worst.filter(|w| (w - fleet.start_skew_worst_us).abs() > 1e-6) {
        let message = format!(
            "is {}, but the generators' skew farthest from zero is {worst}",
            fleet.start_skew_worst_us
        );
        problem("start_skew_worst_us".into(), message);
    }
    for (i, g) in fleet.generators.iter().enumerate() {
        let c = &g.clock;
        for (field, value) in [
            ("clock.uncertainty_us", c.uncertainty_us),
            ("clock.uncertainty_end_us", c.uncertainty_end_us),
            ("clock.delay_us", c.delay_us),
            ("start_skew_uncertainty_us", g.start_skew_uncertainty_us),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                let message = format!("is {value}: an uncertainty is a distance");
                problem(format!("generators[{i}].{field}"), message);
            }
        }
    }
    if fleet.end_unix_ns <= fleet.start_unix_ns {
        let message = format!(
            "is {}, not after the start {}",
            fleet.end_unix_ns, fleet.start_unix_ns
        );
        problem("end_unix_ns".into(), message);
    }
}
