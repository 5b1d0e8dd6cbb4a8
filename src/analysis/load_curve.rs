//! Latency against offered load: the open-loop configurations of a dataset grouped into
//! curves (one per closed-loop configuration and arrival process), each point an offered
//! rate with its corrected latency, and the knee where the p99 leaves the low-load level.
//!
//! The low-load level is not each curve's own: a curve whose lowest rate already sits on
//! a scheduler quantum would be measured against its own bad start and look the most
//! patient. It is the best low-load p99 that any curve of the same protocol, payload and
//! arrival process reached on the dataset: what this host shows that protocol can do.

use std::collections::BTreeMap;

use echomark_archive::{Arrival, CaseKey, Metric};
use serde::Serialize;

use super::aggregate::{Configuration, OpenLoopStats, Stat, Status};

/// A point is past the knee once its p99 exceeds this multiple of the baseline: the best
/// low-load p99 (the p99 at a curve's lowest usable rate) among the curves of its protocol,
/// payload and arrival process on the dataset.
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

/// A point whose sender lag p99 is at least this share of its corrected p99 measured the
/// load generator's host as much as the server: the page marks it.
pub const SENDER_BOUND_SHARE: f64 = 0.5;

impl LoadPoint {
    /// Whether the point belongs on the curve: every run passed and kept its schedule.
    pub fn usable(&self) -> bool {
        self.status == Status::Valid && !self.saturated
    }

    /// Whether the sender's own lag is a large share ([`SENDER_BOUND_SHARE`]) of the point's
    /// corrected p99.
    pub fn sender_bound(&self) -> bool {
        self.p99_us.is_some_and(|p99| {
            p99.median > 0.0
                && self.open_loop.schedule_lag_p99_us.median >= SENDER_BOUND_SHARE * p99.median
        })
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
    /// The best low-load p99 of the curves of this protocol, payload and arrival on the
    /// dataset (µs): what the knee is measured against.
    pub baseline_p99: Option<f64>,
    /// Index in `points` of the knee: the highest usable rate up to which every usable
    /// point's p99 stays within [`KNEE_MULTIPLE`] × `baseline_p99`; `None` when no point
    /// is usable or the first usable one is already above that.
    pub knee: Option<usize>,
}

impl LoadCurve {
    /// The point after the knee (the first offered rate where the p99 left the band, or
    /// could not be used); `None` when the knee is the highest rate measured, or there is
    /// no knee.
    pub fn past_knee(&self) -> Option<&LoadPoint> {
        self.points.get(self.knee? + 1)
    }

    /// The p99 at this curve's lowest usable rate.
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
                    baseline_p99: None,
                    knee: None,
                });
            }
        }
    }
    for curve in &mut out {
        curve.points.sort_by_key(|p| p.offered_rate);
    }
    // The baseline of each (dataset, protocol, payload, arrival): its best low-load p99.
    let group = |c: &LoadCurve| {
        (
            c.dataset.clone(),
            c.key.protocol,
            c.key.payload_bytes,
            c.arrival,
        )
    };
    let mut baselines: BTreeMap<_, f64> = BTreeMap::new();
    for c in &out {
        if let Some(low) = c.low_load_p99() {
            let best = baselines.entry(group(c)).or_insert(low);
            *best = best.min(low);
        }
    }
    for curve in &mut out {
        curve.baseline_p99 = baselines.get(&group(curve)).copied();
        curve.knee = curve
            .baseline_p99
            .and_then(|baseline| knee(&curve.points, baseline));
    }
    out
}

/// The last usable point before the first usable one whose p99 exceeds
/// [`KNEE_MULTIPLE`] × `baseline`.
fn knee(points: &[LoadPoint], baseline: f64) -> Option<usize> {
    let limit = KNEE_MULTIPLE * baseline;
    let mut knee = None;
    for (i, p) in points.iter().enumerate().filter(|(_, p)| p.usable()) {
        match p.p99_us {
            Some(p99) if p99.median <= limit => knee = Some(i),
            _ => break,
        }
    }
    knee
}

/// Whether two curves' knees tell them apart: only when one curve keeps its p99 in the band
/// at an offered rate above the one where the other had already left it (the other's first
/// rate past its knee, or its highest rate when it never left), so that the sweep's steps
/// cannot account for the difference. A knee against none is a difference; two curves
/// without a knee are not told apart.
pub fn knees_distinguishable(a: &LoadCurve, b: &LoadCurve) -> bool {
    let knee_rate = |c: &LoadCurve| c.knee.map(|k| c.points[k].offered_rate);
    let (Some(ra), Some(rb)) = (knee_rate(a), knee_rate(b)) else {
        return a.knee.is_some() != b.knee.is_some();
    };
    let (high, low) = if ra >= rb { (ra, b) } else { (rb, a) };
    let Some(k) = low.knee else { return false };
    let left_band_at = low
        .points
        .get(k + 1)
        .or(low.points.last())
        .map_or(u64::MAX, |p| p.offered_rate);
    high > left_band_at
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
    fn the_knee_is_measured_against_the_protocols_best_low_load_p99_not_its_own() {
        // Two curves of one protocol: shared 1 starts at 30 µs, shared 2 at 2,200 µs (a
        // scheduler quantum). Against its own start shared 2 would hold to the last rate.
        let mut configs = vec![open(1_000, 30.0, false), open(2_000, 50.0, false)];
        for (rate, p99) in [(1_000, 2_200.0), (2_000, 2_300.0)] {
            let mut c = open(rate, p99, false);
            c.key.io_threads = 2;
            configs.push(c);
        }
        let curves = curves(&configs);
        assert_eq!(curves.len(), 2);
        assert!(curves.iter().all(|c| c.baseline_p99 == Some(30.0)));
        assert_eq!(curves[0].knee, Some(1));
        assert_eq!(
            curves[1].knee, None,
            "2,200 µs is above 2 × 30 µs from the start"
        );
        assert!(knees_distinguishable(&curves[0], &curves[1]));
    }

    #[test]
    fn knees_a_step_apart_are_not_distinguishable() {
        let mut configs = vec![
            open(1_000, 30.0, false),
            open(2_000, 40.0, false),
            open(3_000, 100.0, false),
        ];
        for (rate, p99) in [(1_000, 31.0), (2_000, 35.0), (3_000, 45.0)] {
            let mut c = open(rate, p99, false);
            c.key.io_threads = 2;
            configs.push(c);
        }
        let curves = curves(&configs);
        assert_eq!((curves[0].knee, curves[1].knee), (Some(1), Some(2)));
        assert!(!knees_distinguishable(&curves[0], &curves[1]));
    }

    #[test]
    fn a_curve_of_saturated_points_has_no_knee() {
        let c = &curves(&[open(1_000, 30.0, true)])[0];
        assert_eq!(c.knee, None);
    }
}
