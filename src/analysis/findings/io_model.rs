//! The IO-model finding of one load: a winner is named only where the choosing table's rule
//! (the best's min/max range does not overlap the runner-up's) distinguishes it; otherwise
//! the finding is "no distinguishable winner" with every candidate whose range overlaps the
//! best's. A winner whose p99 or CPU is distinguishably worse than the runner-up's carries
//! that trade-off, as the seed says "Boost 双线程吞吐量稍高，但 p99 和 CPU 占用也更高".
//! A load measured with one IO model has no IO-model finding at all.

use echomark_archive::Metric;
use serde::Serialize;

use crate::analysis::aggregate::{Configuration, Stat, Status};
use crate::analysis::rank::{contender, group_of, Contender, GroupKey, Ranking};

/// What the throughput ranges decide for one load.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Verdict {
    /// The best's range lies wholly above the runner-up's.
    Winner {
        runner_up: Contender,
        /// The winner's p99 range lies wholly above the runner-up's.
        worse_p99: bool,
        /// The winner's process CPU range lies wholly above the runner-up's.
        more_cpu: bool,
    },
    /// The best's range overlaps at least one other model's: these are the candidates
    /// (the best first, then by throughput median).
    NoDistinguishableWinner { candidates: Vec<Contender> },
}

/// The finding of one load.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IoModelFinding {
    pub group: GroupKey,
    /// The highest throughput median (the winner only when [`Verdict::Winner`]).
    pub best: Contender,
    pub verdict: Verdict,
    /// Best ÷ one thread, and whether their ranges are apart; `None` when the best is the
    /// one-thread model or one thread did not pass.
    pub versus_one_thread: Option<(f64, bool)>,
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
/// `configs` are the dataset's configurations (for CPU and the candidates' ranges) and
/// `logical_cpus` the host's.
pub fn io_model_findings(
    rankings: &[&Ranking],
    configs: &[&Configuration],
    logical_cpus: Option<u64>,
) -> Vec<IoModelFinding> {
    rankings
        .iter()
        .filter(|r| r.candidates >= 2)
        .filter_map(|r| finding(r, configs, logical_cpus))
        .collect()
}

fn finding(
    r: &Ranking,
    configs: &[&Configuration],
    logical_cpus: Option<u64>,
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
    let best_range = r.best.roundtrips_per_second;
    let verdict = match (&r.runner_up, r.distinguishable_from_runner_up) {
        (Some(second), Some(true)) => {
            let cpu = |c: &Contender| of(c).and_then(|m| m.stat(Metric::CpuPercent));
            Verdict::Winner {
                runner_up: second.clone(),
                worse_p99: above(r.best.rtt_p99_us, second.rtt_p99_us),
                more_cpu: above(cpu(&r.best), cpu(second)),
            }
        }
        (Some(_), _) => {
            let mut candidates: Vec<&Configuration> = members
                .iter()
                .copied()
                .filter(|m| {
                    m.stat(Metric::RoundtripsPerSecond)
                        .is_some_and(|s| s.overlaps(&best_range))
                })
                .collect();
            candidates.sort_by(|a, b| {
                let median = |c: &Configuration| {
                    c.stat(Metric::RoundtripsPerSecond)
                        .map_or(0.0, |s| s.median)
                };
                median(b)
                    .total_cmp(&median(a))
                    .then(a.key.topology_rank().cmp(&b.key.topology_rank()))
            });
            Verdict::NoDistinguishableWinner {
                candidates: candidates
                    .into_iter()
                    .filter_map(|c| Some(contender(c, c.stat(Metric::RoundtripsPerSecond)?)))
                    .collect(),
            }
        }
        (None, _) => return None,
    };
    let best_is_one_thread =
        r.best.io_model == echomark_archive::IoModel::Shared && r.best.io_threads == 1;
    Some(IoModelFinding {
        group: r.group.clone(),
        best: r.best.clone(),
        verdict,
        versus_one_thread: match (r.speedup, r.distinguishable_from_baseline) {
            (Some(s), Some(apart)) if !best_is_one_thread => Some((s, apart)),
            _ => None,
        },
        oversubscribed: logical_cpus
            .filter(|cpus| r.best.io_threads > *cpus)
            .map(|cpus| (r.best.io_threads, cpus)),
    })
}

/// Whether `a`'s range lies wholly above `b`'s.
fn above(a: Option<Stat>, b: Option<Stat>) -> bool {
    matches!((a, b), (Some(a), Some(b)) if a.min > b.max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::aggregate::test_configuration;
    use crate::analysis::rank::rankings;
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
        let ranked = rankings(configs);
        let refs: Vec<&Ranking> = ranked.iter().collect();
        let all: Vec<&Configuration> = configs.iter().collect();
        io_model_findings(&refs, &all, cpus)
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
        let Verdict::NoDistinguishableWinner { candidates } = &f.verdict else {
            unreachable!()
        };
        let names: Vec<u64> = candidates.iter().map(|c| c.io_threads).collect();
        assert_eq!(
            names,
            [4, 2],
            "the overlapping models, best first; one thread is apart"
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
        assert_eq!(
            f.verdict,
            Verdict::Winner {
                runner_up: Contender {
                    io_model: echomark_archive::IoModel::Shared,
                    io_threads: 1,
                    roundtrips_per_second: range(100.0, 1.0),
                    rtt_p99_us: Some(range(90.0, 1.0)),
                },
                worse_p99: true,
                more_cpu: true,
            }
        );
        assert_eq!(f.oversubscribed, None);
        assert_eq!(f.versus_one_thread.map(|(_, apart)| apart), Some(true));
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
        assert!(matches!(
            f.verdict,
            Verdict::Winner {
                worse_p99: false,
                more_cpu: false,
                ..
            }
        ));
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
