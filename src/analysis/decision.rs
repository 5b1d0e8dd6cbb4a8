//! The comparison rule ([`echomark_decide`]) applied to configurations: every place that
//! sets one configuration against another (backends, servers, IO models, hosts, paths,
//! protocols, tools, a dataset against its predecessor) asks here, so one rule decides
//! them all and says so the same way.
//!
//! The rule judges each metric's per-run values: throughput with the throughput margin
//! (±5 % by default), latency percentiles with the latency margin (±10 %). A configuration
//! whose runs did not all pass is not compared.

use echomark_archive::Metric;
use echomark_decide::{compare, Decision, Reason, Rule, Verdict};
use serde::Serialize;

use super::aggregate::{Configuration, Status};

/// The rules a site or a comparison is built with: the confidence level and the margins,
/// stated on every page that uses them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rules {
    pub throughput: Rule,
    pub latency: Rule,
}

impl Default for Rules {
    fn default() -> Self {
        Self {
            throughput: echomark_decide::THROUGHPUT,
            latency: echomark_decide::LATENCY,
        }
    }
}

impl Rules {
    /// The rule for `metric`: latency percentiles take the latency margin, everything else
    /// (rates, CPU, memory) the throughput margin.
    pub fn for_metric(&self, metric: Metric) -> Rule {
        match metric {
            Metric::RttP50Us | Metric::RttP95Us | Metric::RttP99Us | Metric::RttP999Us => {
                self.latency
            }
            _ => self.throughput,
        }
    }

    /// The rules `dataset` is judged by: these, or, for a dataset measured until decided,
    /// its recorded margin for throughput and its number of looks on both (each look spent
    /// part of the error).
    pub fn for_dataset(self, dataset: &crate::model::Dataset) -> Self {
        let until = dataset
            .files
            .iter()
            .filter_map(|f| f.matrix.as_ref()?.until_decided.as_ref())
            .max_by_key(|u| u.looks.len());
        match until {
            None => self,
            Some(u) => Self {
                throughput: Rule {
                    margin: u.margin,
                    level: u.level,
                    ..self.throughput
                },
                ..self
            }
            .with_looks(u.looks.len() as u32),
        }
    }

    /// These rules with `looks` on both (a dataset measured until decided).
    pub fn with_looks(self, looks: u32) -> Self {
        Self {
            throughput: Rule {
                looks,
                ..self.throughput
            },
            latency: Rule {
                looks,
                ..self.latency
            },
        }
    }
}

/// Whether a higher value of `metric` is better (rates) rather than worse (latency, CPU,
/// memory).
pub fn higher_is_better(metric: Metric) -> bool {
    matches!(
        metric,
        Metric::RoundtripsPerSecond | Metric::PayloadMibPerSecond
    )
}

/// `subject` against `base` on `metric`; `None` when either side has no value of it.
pub fn decide(
    base: &Configuration,
    subject: &Configuration,
    metric: Metric,
    rules: &Rules,
) -> Option<Decision> {
    let (b, s) = (base.values.get(&metric)?, subject.values.get(&metric)?);
    let rule = rules.for_metric(metric);
    if base.status != Status::Valid || subject.status != Status::Valid {
        let mut d = compare(&[], &[], &rule);
        d.base_runs = b.len();
        d.subject_runs = s.len();
        d.verdict = Verdict::NotComparable {
            reason: Reason::Empty,
        };
        return Some(d);
    }
    Some(compare(b, s, &rule))
}

/// How a decision reads for a metric: better, worse, equivalent or undecided for the
/// subject (the engine speaks of higher and lower; a lower p99 is better).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Judgement {
    Better,
    Worse,
    Equivalent,
    Undecided,
    NotComparable,
}

impl Judgement {
    /// The judgement of `decision` on `metric`.
    pub fn of(decision: &Decision, metric: Metric) -> Self {
        let up = higher_is_better(metric);
        match decision.verdict {
            Verdict::Higher if up => Self::Better,
            Verdict::Lower if !up => Self::Better,
            Verdict::Higher | Verdict::Lower => Self::Worse,
            Verdict::Equivalent => Self::Equivalent,
            Verdict::Undecided { .. } => Self::Undecided,
            Verdict::NotComparable { .. } => Self::NotComparable,
        }
    }
}

/// How many decisions of a set came out each way, as pages count them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub better: usize,
    pub worse: usize,
    pub equivalent: usize,
    pub undecided: usize,
}

impl Tally {
    /// Counts `judgements` (not comparable ones are left out).
    pub fn of(judgements: impl IntoIterator<Item = Judgement>) -> Self {
        let mut t = Self::default();
        for j in judgements {
            match j {
                Judgement::Better => t.better += 1,
                Judgement::Worse => t.worse += 1,
                Judgement::Equivalent => t.equivalent += 1,
                Judgement::Undecided => t.undecided += 1,
                Judgement::NotComparable => {}
            }
        }
        t
    }

    /// Every comparison counted.
    pub fn total(&self) -> usize {
        self.better + self.worse + self.equivalent + self.undecided
    }

    /// Those decided one way or another.
    pub fn decided(&self) -> usize {
        self.total() - self.undecided
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::aggregate::{test_configuration, Stat};
    use std::collections::BTreeMap;

    fn config(rates: &[f64], status: Status) -> Configuration {
        let stat = Stat {
            median: rates[rates.len() / 2],
            min: rates[0],
            max: rates[rates.len() - 1],
        };
        let mut c = test_configuration(
            "tcp",
            "shared",
            1,
            BTreeMap::from([(Metric::RoundtripsPerSecond, stat)]),
            status,
        );
        c.values = BTreeMap::from([(Metric::RoundtripsPerSecond, rates.to_vec())]);
        c
    }

    #[test]
    fn configurations_are_judged_on_their_runs_with_the_metrics_rule() {
        let base = config(&[100.0, 101.0, 102.0], Status::Valid);
        let fast = config(&[130.0, 131.0, 132.0], Status::Valid);
        let m = Metric::RoundtripsPerSecond;
        let d = decide(&base, &fast, m, &Rules::default()).unwrap();
        assert_eq!(Judgement::of(&d, m), Judgement::Better);
        assert_eq!(d.margin, 0.05);
        // A failed side is never compared.
        let failed = config(&[130.0, 131.0, 132.0], Status::Failed);
        let d = decide(&base, &failed, m, &Rules::default()).unwrap();
        assert_eq!(Judgement::of(&d, m), Judgement::NotComparable);
        // No p99 recorded: nothing to decide.
        assert!(decide(&base, &fast, Metric::RttP99Us, &Rules::default()).is_none());
    }

    #[test]
    fn a_lower_latency_is_better_and_takes_the_latency_margin() {
        let rules = Rules::default();
        assert_eq!(rules.for_metric(Metric::RttP99Us).margin, 0.10);
        assert_eq!(rules.for_metric(Metric::RoundtripsPerSecond).margin, 0.05);
        let d = compare(&[100.0, 101.0, 99.0], &[50.0, 51.0, 49.0], &rules.latency);
        assert_eq!(Judgement::of(&d, Metric::RttP99Us), Judgement::Better);
        assert_eq!(
            Judgement::of(&d, Metric::RoundtripsPerSecond),
            Judgement::Worse
        );
    }

    #[test]
    fn a_tally_counts_each_way_and_leaves_out_what_was_not_compared() {
        use Judgement::*;
        let t = Tally::of([Better, Worse, Worse, Equivalent, Undecided, NotComparable]);
        assert_eq!((t.better, t.worse, t.equivalent, t.undecided), (1, 2, 1, 1));
        assert_eq!((t.total(), t.decided()), (5, 4));
    }
}
