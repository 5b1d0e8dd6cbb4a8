//! Dimension findings (arknet-reports.md §4.2): per protocol, backend and work level, at the
//! payload nearest 1 KiB, which topology and window had the highest throughput median and
//! which the lowest p99 median, over every window and topology that passed.

use echomark_archive::{IoModel, Metric, Protocol};
use serde::Serialize;

use crate::analysis::aggregate::{Configuration, Stat, Status};

/// The reference payload of a finding.
const NEAR_PAYLOAD: u64 = 1024;

/// Where a finding's extreme lies.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Extreme {
    pub io_model: IoModel,
    pub io_threads: u64,
    pub window: u64,
    pub value: Stat,
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub protocol: Protocol,
    pub backend: String,
    pub handler_work: u64,
    pub payload_bytes: u64,
    pub highest_throughput: Extreme,
    pub lowest_p99: Extreme,
}

/// The findings of one dataset's configurations, by protocol, backend and work.
pub fn findings(configs: &[&Configuration]) -> Vec<Finding> {
    // One pass into groups (a scan per group was quadratic in the number of groups).
    let mut groups: std::collections::BTreeMap<(Protocol, &str, u64), Vec<&&Configuration>> =
        std::collections::BTreeMap::new();
    for c in configs {
        groups
            .entry((c.key.protocol, c.key.backend.as_str(), c.key.handler_work))
            .or_default()
            .push(c);
    }
    groups
        .into_iter()
        .filter_map(|((protocol, backend, work), of_group)| {
            let payload = of_group
                .iter()
                .map(|c| c.key.payload_bytes)
                .min_by_key(|p| (p.abs_diff(NEAR_PAYLOAD), *p))?;
            let valid: Vec<&&&Configuration> = of_group
                .iter()
                .filter(|c| c.status == Status::Valid && c.key.payload_bytes == payload)
                .collect();
            let extreme = |c: &Configuration, value: Stat| Extreme {
                io_model: c.key.io_model,
                io_threads: c.key.io_threads,
                window: c.key.window,
                value,
            };
            // Ties go to the canonical topology order, then to the smaller window.
            let best = valid
                .iter()
                .filter_map(|c| c.stat(Metric::RoundtripsPerSecond).map(|s| (c, s)))
                .max_by(|a, b| {
                    a.1.median
                        .total_cmp(&b.1.median)
                        .then(b.0.key.topology_rank().cmp(&a.0.key.topology_rank()))
                })?;
            let lowest = valid
                .iter()
                .filter_map(|c| c.stat(Metric::RttP99Us).map(|s| (c, s)))
                .min_by(|a, b| {
                    a.1.median
                        .total_cmp(&b.1.median)
                        .then(a.0.key.topology_rank().cmp(&b.0.key.topology_rank()))
                })?;
            Some(Finding {
                protocol,
                backend: backend.to_string(),
                handler_work: work,
                payload_bytes: payload,
                highest_throughput: extreme(best.0, best.1),
                lowest_p99: extreme(lowest.0, lowest.1),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(io_model: &str, threads: u64, window: u64, rate: f64, p99: f64) -> Configuration {
        let mut c = crate::analysis::aggregate::test_rated(
            "udp",
            io_model,
            threads,
            (rate, p99),
            Status::Valid,
        );
        c.key.window = window;
        c
    }

    #[test]
    fn extremes_are_found_over_windows_and_topologies() {
        let all = [
            config("shared", 1, 1, 90.0, 200.0),
            config("shared", 1, 16, 120.0, 900.0),
            config("sharded", 4, 16, 120.0, 950.0),
            config("shared", 4, 1, 80.0, 260.0),
        ];
        let refs: Vec<&Configuration> = all.iter().collect();
        let f = &findings(&refs)[0];
        // 120 on shared 1 and sharded 4: the tie goes to the simpler topology.
        assert_eq!(
            (f.highest_throughput.io_model, f.highest_throughput.window),
            (IoModel::Shared, 16)
        );
        assert_eq!((f.lowest_p99.io_threads, f.lowest_p99.window), (1, 1));
    }
}
