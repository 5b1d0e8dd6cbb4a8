//! What a dataset that offers one choice measured: no recommendation is possible, so its
//! overview states each load's median figures instead.

use std::collections::BTreeSet;

use echomark_archive::Metric;
use serde::Serialize;

use crate::analysis::aggregate::{Configuration, Status};
use crate::analysis::recommend::{cpu_per_echo_us, Choice, Stratum};

/// The figures of a dataset with one choice, load by load: what was measured, stated.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Measured {
    pub stratum: Stratum,
    pub payload_bytes: u64,
    pub clients: u64,
    pub window: u64,
    pub handler_work: u64,
    pub roundtrips_per_second: f64,
    pub rtt_p99_us: Option<f64>,
    /// Median process CPU time per echo, µs.
    pub cpu_per_echo_us: Option<f64>,
    pub runs: u64,
    pub passed: bool,
}

/// Whether `configs` (one dataset's) offer a single choice: one backend, one IO model and
/// one thread count over every closed-loop configuration.
pub fn single_choice(configs: &[&Configuration]) -> Option<Choice> {
    let choices: BTreeSet<Choice> = configs
        .iter()
        .filter(|c| c.key.load.is_none())
        .map(|c| Choice::of(c))
        .collect();
    (choices.len() == 1).then(|| choices.into_iter().next().expect("one choice"))
}

/// Every closed-loop load of a single-choice dataset with its median figures, in the
/// configurations' (canonical) order.
pub fn measured(configs: &[&Configuration]) -> Vec<Measured> {
    let median = |v: Vec<f64>| echomark_archive::plan::median(&v);
    configs
        .iter()
        .filter(|c| c.key.load.is_none())
        .filter_map(|c| {
            Some(Measured {
                stratum: Stratum {
                    protocol: c.key.protocol,
                    implementation: c.key.implementation.clone(),
                    generators: c.key.generators,
                },
                payload_bytes: c.key.payload_bytes,
                clients: c.key.clients,
                window: c.key.window,
                handler_work: c.key.handler_work,
                roundtrips_per_second: c.stat(Metric::RoundtripsPerSecond)?.median,
                rtt_p99_us: c.stat(Metric::RttP99Us).map(|s| s.median),
                cpu_per_echo_us: median(cpu_per_echo_us(c)),
                runs: c.runs,
                passed: c.status == Status::Valid,
            })
        })
        .collect()
}
