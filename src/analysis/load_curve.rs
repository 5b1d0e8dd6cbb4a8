//! Latency against offered load: the open-loop configurations of a dataset grouped into
//! curves (one per closed-loop configuration and arrival process), each point an offered
//! rate with its corrected latency, and the knee where the p99 leaves its low-load level.

use std::collections::BTreeMap;

use echomark_archive::{Arrival, CaseKey, Metric};
use serde::Serialize;

use super::aggregate::{Configuration, OpenLoopStats, Stat, Status};

/// A point is past the knee once its p99 exceeds this multiple of the curve's low-load p99
/// (the p99 at its lowest offered rate).
pub const KNEE_MULTIPLE: f64 = 2.0;

/// One offered rate of a curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadPoint {
    pub offered_rate: u64,
    pub status: Status,
    pub runs: u64,
    /// Some run could not keep the schedule: shown, never drawn as a point of the curve.
    pub saturated: bool,
    pub open_loop: OpenLoopStats,
    /// Corrected latency (from each message's due time), over the runs.
    pub p50_us: Option<Stat>,
    pub p99_us: Option<Stat>,
    pub p999_us: Option<Stat>,
}

impl LoadPoint {
    /// Whether the point belongs on the curve: every run passed and kept its schedule.
    pub fn usable(&self) -> bool {
        self.status == Status::Valid && !self.saturated
    }
}

/// One curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadCurve {
    pub dataset: String,
    /// The configuration without its load.
    pub key: CaseKey,
    pub arrival: Arrival,
    /// Closed-loop throughput of the same configuration, when the dataset has it (a
    /// rate sweep measures it first).
    pub closed_loop_rate: Option<Stat>,
    /// Ascending offered rate.
    pub points: Vec<LoadPoint>,
    /// Index in `points` of the knee: the highest usable rate up to which every usable
    /// point's p99 stays within [`KNEE_MULTIPLE`] × the first usable point's.
    pub knee: Option<usize>,
}

impl LoadCurve {
    /// The p99 the knee is measured against.
    pub fn low_load_p99(&self) -> Option<f64> {
        self.points
            .iter()
            .find(|p| p.usable())
            .and_then(|p| p.p99_us)
            .map(|s| s.median)
    }
}

/// The curves of `configs` (open-loop configurations become points; closed-loop ones are
/// the references), in the order of their first point's configuration.
pub fn curves(configs: &[Configuration]) -> Vec<LoadCurve> {
    let mut out: Vec<LoadCurve> = Vec::new();
    // (dataset, key without load, arrival) → position in `out`.
    let mut position: BTreeMap<(&str, CaseKey, Arrival), usize> = BTreeMap::new();
    for c in configs {
        let (Some(load), Some(open)) = (c.key.load, c.open_loop) else {
            continue;
        };
        let base = CaseKey {
            load: None,
            ..c.key.clone()
        };
        let point = LoadPoint {
            offered_rate: load.rate,
            status: c.status,
            runs: c.runs,
            saturated: open.saturated_runs > 0,
            open_loop: open,
            p50_us: c.stat(Metric::RttP50Us),
            p99_us: c.stat(Metric::RttP99Us),
            p999_us: c.stat(Metric::RttP999Us),
        };
        match position.get(&(c.dataset.as_str(), base.clone(), load.arrival)) {
            Some(&at) => out[at].points.push(point),
            None => {
                position.insert((c.dataset.as_str(), base.clone(), load.arrival), out.len());
                let closed_loop_rate = configs
                    .iter()
                    .find(|r| r.dataset == c.dataset && r.key == base && r.status == Status::Valid)
                    .and_then(|r| r.stat(Metric::RoundtripsPerSecond));
                out.push(LoadCurve {
                    dataset: c.dataset.clone(),
                    key: base,
                    arrival: load.arrival,
                    closed_loop_rate,
                    points: vec![point],
                    knee: None,
                });
            }
        }
    }
    for curve in &mut out {
        curve.points.sort_by_key(|p| p.offered_rate);
        curve.knee = knee(&curve.points);
    }
    out
}

fn knee(points: &[LoadPoint]) -> Option<usize> {
    let mut usable = points
        .iter()
        .enumerate()
        .filter(|(_, p)| p.usable())
        .filter_map(|(i, p)| Some((i, p.p99_us?.median)));
    let (first, low) = usable.next()?;
    let limit = KNEE_MULTIPLE * low;
    let mut knee = first;
    for (i, p99) in usable {
        if p99 > limit {
            break;
        }
        knee = i;
    }
    Some(knee)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use echomark_archive::OfferedLoad;

    use super::*;
    use crate::analysis::aggregate::test_configuration;

    fn stat(v: f64) -> Stat {
        Stat {
            median: v,
            min: v,
            max: v,
        }
    }

    fn open(rate: u64, p99: f64, saturated: bool) -> Configuration {
        let stats = BTreeMap::from([(Metric::RttP99Us, stat(p99))]);
        let mut c = test_configuration("tcp", "shared", 1, stats, Status::Valid);
        c.key.load = Some(OfferedLoad {
            rate,
            arrival: Arrival::Uniform,
        });
        c.open_loop = Some(OpenLoopStats {
            achieved_rate: stat(rate as f64),
            service_p99_us: stat(p99),
            schedule_lag_p99_us: stat(1.0),
            late_sends: stat(0.0),
            saturated_runs: u64::from(saturated),
        });
        c
    }

    #[test]
    fn points_group_into_one_curve_sorted_by_rate_with_the_closed_loop_reference() {
        let mut closed = test_configuration("tcp", "shared", 1, BTreeMap::new(), Status::Valid);
        closed
            .stats
            .insert(Metric::RoundtripsPerSecond, stat(50_000.0));
        let configs = vec![closed, open(30_000, 40.0, false), open(10_000, 30.0, false)];
        let curves = curves(&configs);
        assert_eq!(curves.len(), 1);
        let c = &curves[0];
        assert_eq!(c.key.load, None);
        assert_eq!(c.closed_loop_rate.map(|s| s.median), Some(50_000.0));
        let rates: Vec<u64> = c.points.iter().map(|p| p.offered_rate).collect();
        assert_eq!(rates, [10_000, 30_000]);
    }

    #[test]
    fn the_knee_is_the_last_rate_before_p99_doubles_and_ignores_saturated_points() {
        let configs = vec![
            open(1_000, 30.0, false),
            open(2_000, 45.0, false),
            open(3_000, 59.0, false),
            open(4_000, 61.0, false),
            open(5_000, 40.0, true),
        ];
        let c = &curves(&configs)[0];
        assert_eq!(c.low_load_p99(), Some(30.0));
        assert_eq!(c.knee, Some(2), "59 µs ≤ 2 × 30 µs; 61 µs is past it");
        assert!(!c.points[4].usable());
    }

    #[test]
    fn a_curve_of_saturated_points_has_no_knee() {
        let c = &curves(&[open(1_000, 30.0, true)])[0];
        assert_eq!(c.knee, None);
    }
}
