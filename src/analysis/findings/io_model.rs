//! The IO-model finding of one load: a winner is named only where the comparison rule
//! ([`crate::analysis::decision`]) finds the best model's throughput higher than every other
//! model's; otherwise there is no single choice, and the candidates are the models the best
//! is not decided higher than (equivalent within the margin, or undecided). A winner's p99
//! and CPU against the runner-up's are decided too, so its trade-off is stated with its
//! size, as the seed says "Boost 双线程吞吐量稍高，但 p99 和 CPU 占用也更高". A load
//! measured with one IO model has no IO-model finding at all.

use echomark_archive::Metric;
use echomark_decide::{Decision, Verdict as Rule};
use serde::Serialize;

use crate::analysis::aggregate::{Configuration, Status};
use crate::analysis::decision::{decide, Rules};
use crate::analysis::rank::{group_of, Contender, GroupKey, Ranking};

/// What the rule decides for one load.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Verdict {
    /// The best's throughput is higher than every other model's.
    Winner {
        runner_up: Box<Contender>,
        /// The best's throughput against the runner-up's.
        throughput: Decision,
        /// The best's p99 against the runner-up's (higher is a cost).
        p99: Option<Decision>,
        /// The best's process CPU against the runner-up's (higher is a cost).
        cpu: Option<Decision>,
    },
    /// The best is not decided higher than every other model: these are the candidates,
    /// the best first, then each model it is not decided higher than (by throughput
    /// median), with that decision.
    NoSingleChoice {
        candidates: Vec<Contender>,
        decisions: Vec<Decision>,
    },
}

/// The finding of one load.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IoModelFinding {
    pub group: GroupKey,
    /// The highest throughput median (the winner only when [`Verdict::Winner`]).
    pub best: Contender,
    pub verdict: Verdict,
    /// Best against one thread: the median ratio and the rule's decision; `None` when the
    /// best is the one-thread model or one thread did not pass.
    pub versus_one_thread: Option<(f64, Decision)>,
    /// The one-thread model's figures, when it passed.
    pub one_thread: Option<Contender>,
    /// `(threads, logical CPUs)` when the best runs more threads than the host has CPUs.
    pub oversubscribed: Option<(u64, u64)>,
}

impl IoModelFinding {
    /// Whether the finding names one model as the fastest.
    pub fn crowns_a_winner(&self) -> bool {
        matches!(self.verdict, Verdict::Winner { .. })
    }
}

/// The findings of `rankings`, in their order, for loads with at least two valid IO models.
/// `configs` are the dataset's configurations (for CPU and latency) and `logical_cpus` the
/// host's.
pub fn io_model_findings(
    rankings: &[&Ranking],
    configs: &[&Configuration],
    logical_cpus: Option<u64>,
    rules: &Rules,
) -> Vec<IoModelFinding> {
    rankings
        .iter()
        .filter(|r| r.candidates >= 2)
        .filter_map(|r| finding(r, configs, logical_cpus, rules))
        .collect()
}

fn finding(
    r: &Ranking,
    configs: &[&Configuration],
    logical_cpus: Option<u64>,
    rules: &Rules,
) -> Option<IoModelFinding> {
    let members: Vec<&Configuration> = configs
        .iter()
        .copied()
        .filter(|c| c.status == Status::Valid && group_of(c) == r.group)
        .collect();
    let of = |c: &Contender| {
        members
            .iter()
            .find(|m| m.key.io_model == c.io_model && m.key.io_threads == c.io_threads)
            .copied()
    };
    let second = r.rivals.first()?;
    let verdict = if r.best_is_decided() {
        let cost = |metric: Metric| decide(of(&second.contender)?, of(&r.best)?, metric, rules);
        Verdict::Winner {
            runner_up: Box::new(second.contender.clone()),
            throughput: second.throughput,
            p99: cost(Metric::RttP99Us),
            cpu: cost(Metric::CpuPercent),
        }
    } else {
        let close: Vec<_> = r
            .rivals
            .iter()
            .filter(|rival| rival.throughput.verdict != Rule::Higher)
            .collect();
        Verdict::NoSingleChoice {
            candidates: std::iter::once(r.best.clone())
                .chain(close.iter().map(|rival| rival.contender.clone()))
                .collect(),
            decisions: close.iter().map(|rival| rival.throughput).collect(),
        }
    };
    let best_is_one_thread =
        r.best.io_model == echomark_archive::IoModel::Shared && r.best.io_threads == 1;
    Some(IoModelFinding {
        group: r.group.clone(),
        best: r.best.clone(),
        verdict,
        versus_one_thread: match (r.speedup, r.against_baseline) {
            (Some(s), Some(d)) if !best_is_one_thread => Some((s, d)),
            _ => None,
        },
        one_thread: r.baseline.clone(),
        oversubscribed: logical_cpus
            .filter(|cpus| r.best.io_threads > *cpus)
            .map(|cpus| (r.best.io_threads, cpus)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::aggregate::{test_configuration, Stat};
    use crate::analysis::rank::rankings;
    use echomark_archive::IoModel;
    use std::collections::BTreeMap;

    fn range(median: f64, spread: f64) -> Stat {
        Stat {
            median,
            min: median - spread,
            max: median + spread,
        }
    }

    /// A configuration with throughput, p99 and CPU ranges.
    fn config(model: &str, threads: u64, rate: Stat, p99: Stat, cpu: Stat) -> Configuration {
        let stats = BTreeMap::from([
            (Metric::RoundtripsPerSecond, rate),
            (Metric::RttP99Us, p99),
            (Metric::CpuPercent, cpu),
        ]);
        test_configuration("udp", model, threads, stats, Status::Valid)
    }

    fn findings_of(configs: &[Configuration], cpus: Option<u64>) -> Vec<IoModelFinding> {
        let rules = Rules::default();
        let ranked = rankings(configs, &|_| rules);
        let refs: Vec<&Ranking> = ranked.iter().collect();
        let all: Vec<&Configuration> = configs.iter().collect();
        io_model_findings(&refs, &all, cpus, &rules)
    }

    #[test]
    fn a_tie_is_never_crowned() {
        // The seed's UDP case: 4 runtimes ahead by median, but its range overlaps 2 runtimes'.
        let configs = [
            config(
                "shared",
                1,
                range(150.0, 2.0),
                range(90.0, 1.0),
                range(100.0, 1.0),
            ),
            config(
                "shared",
                4,
                range(204.0, 6.0),
                range(2132.0, 9.0),
                range(190.0, 1.0),
            ),
            config(
                "shared",
                2,
                range(203.0, 7.0),
                range(109.0, 1.0),
                range(180.0, 1.0),
            ),
        ];
        let f = &findings_of(&configs, Some(2))[0];
        assert!(!f.crowns_a_winner(), "{f:?}");
        let Verdict::NoSingleChoice { candidates, .. } = &f.verdict else {
            unreachable!()
        };
        let names: Vec<u64> = candidates.iter().map(|c| c.io_threads).collect();
        assert_eq!(
            names,
            [4, 2],
            "the models the best is not decided above, best first; one thread is below"
        );
        assert_eq!(f.oversubscribed, Some((4, 2)));
    }

    #[test]
    fn a_winner_with_a_worse_p99_and_cpu_gets_the_trade_off() {
        let configs = [
            config(
                "shared",
                1,
                range(100.0, 1.0),
                range(90.0, 1.0),
                range(100.0, 1.0),
            ),
            config(
                "shared",
                2,
                range(120.0, 1.0),
                range(140.0, 1.0),
                range(170.0, 1.0),
            ),
        ];
        let f = &findings_of(&configs, Some(2))[0];
        let Verdict::Winner {
            runner_up,
            throughput,
            p99,
            cpu,
        } = &f.verdict
        else {
            panic!("{f:?}")
        };
        assert_eq!(
            (runner_up.io_model, runner_up.io_threads),
            (IoModel::Shared, 1)
        );
        assert_eq!(throughput.verdict, Rule::Higher);
        // p99 140 against 90 and CPU 170 against 100: both decided higher, with their size.
        let p99 = p99.expect("latency on both");
        assert_eq!(p99.verdict, Rule::Higher);
        assert!((p99.ratio - 140.0 / 90.0).abs() < 0.01, "{p99:?}");
        assert_eq!(cpu.map(|d| d.verdict), Some(Rule::Higher));
        assert_eq!(f.oversubscribed, None);
        assert_eq!(
            f.versus_one_thread.map(|(_, d)| d.verdict),
            Some(Rule::Higher)
        );
    }

    #[test]
    fn a_winner_whose_costs_overlap_has_no_trade_off() {
        let configs = [
            config(
                "shared",
                1,
                range(100.0, 1.0),
                range(90.0, 20.0),
                range(100.0, 1.0),
            ),
            config(
                "sharded",
                2,
                range(130.0, 1.0),
                range(95.0, 20.0),
                range(99.0, 1.0),
            ),
        ];
        let f = &findings_of(&configs, None)[0];
        let Verdict::Winner { p99, cpu, .. } = &f.verdict else {
            panic!("{f:?}")
        };
        assert!(
            !matches!(p99.map(|d| d.verdict), Some(Rule::Higher)),
            "{p99:?}"
        );
        assert!(
            !matches!(cpu.map(|d| d.verdict), Some(Rule::Higher)),
            "{cpu:?}"
        );
    }

    #[test]
    fn a_load_with_one_io_model_has_no_io_model_finding() {
        let configs = [config(
            "shared",
            1,
            range(100.0, 1.0),
            range(90.0, 1.0),
            range(100.0, 1.0),
        )];
        assert!(findings_of(&configs, Some(2)).is_empty());
    }
}
