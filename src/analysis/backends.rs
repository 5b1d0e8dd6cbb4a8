//! Backend against backend on the same configuration, as the seed pages compare their two
//! Asio stacks: what the runtime changes when everything else (program, protocol, payload,
//! clients, window, IO model, threads, work) stays the same.
//!
//! Each pair is decided by the comparison rule ([`crate::analysis::decision`]): higher,
//! lower, equivalent within the margin, or undecided. A configuration that one backend
//! cannot run ([`echomark_archive::unsupported`]) is listed as such, never as a gap or a
//! failure.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use crate::analysis::aggregate::{Configuration, Stat, Status};
use crate::analysis::decision::{decide, Rules};
use crate::analysis::rank::{GroupKey, Ranking};
use echomark_archive::{CaseKey, Metric};
use echomark_decide::{Decision, Verdict};

/// One configuration measured on both backends, both passed.
#[derive(Debug, Clone, Copy)]
pub struct Pair<'a> {
    pub subject: &'a Configuration,
    pub base: &'a Configuration,
    /// Median round trips/s of the subject ÷ the base's.
    pub throughput_ratio: f64,
    /// The rule's decision on the subject's throughput against the base's.
    pub throughput: Decision,
    /// Median p99 of the subject ÷ the base's, when both have latency.
    pub p99_ratio: Option<f64>,
    pub p99: Option<Decision>,
}

/// A row of a backend comparison.
#[derive(Debug, Clone, Copy)]
pub enum Row<'a> {
    /// Measured and passed on both.
    Pair(Pair<'a>),
    /// Measured on the base only: the subject backend cannot run its IO model.
    Unsupported(&'a Configuration),
    /// On both, but failed on at least one: not comparable.
    Failed {
        subject: &'a Configuration,
        base: &'a Configuration,
    },
}

/// The backend others are compared against: tokio when present, then a server named for it
/// (`serve-tokio`, echomark's `serve` on tokio), else the first by name.
pub fn base_backend<'a>(backends: &BTreeSet<&'a str>) -> Option<&'a str> {
    backends
        .get("tokio")
        .or_else(|| backends.iter().find(|b| b.ends_with("-tokio")))
        .or_else(|| backends.iter().next())
        .copied()
}

/// A per-echo figure of `backend`'s passed runs in `runs` (the io_uring server's
/// `io_uring_enter` calls, the measuring process's system calls): the median, lowest and
/// highest of its configurations' medians, or `None` where no run of it recorded the figure.
pub fn per_echo(
    runs: &[crate::model::Run],
    backend: &str,
    figure: impl Fn(&crate::model::Run) -> Option<f64>,
) -> Option<crate::analysis::aggregate::Stat> {
    let mut by_configuration: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in runs.iter().filter(|r| r.passed && r.key.backend == backend) {
        if let Some(e) = figure(r) {
            by_configuration
                .entry(format!("{:?}", r.key))
                .or_default()
                .push(e);
        }
    }
    let medians: Vec<f64> = by_configuration
        .values()
        .filter_map(|v| echomark_archive::plan::median(v))
        .collect();
    crate::analysis::ratios::median_range(medians)
}

/// The server CPU per echo of `subject` over `base`'s, load by load (the medians of their
/// passed runs), as the median, lowest and highest ratio; `None` where no load has both.
pub fn server_cpu_ratio(
    runs: &[crate::model::Run],
    subject: &str,
    base: &str,
) -> Option<crate::analysis::aggregate::Stat> {
    let per_load = |backend: &str| {
        let mut by_load: HashMap<CaseKey, Vec<f64>> = HashMap::new();
        for r in runs.iter().filter(|r| r.passed && r.key.backend == backend) {
            if let Some(cpu) = r.instruments.server_cpu_us_per_echo {
                by_load
                    .entry(without_backend(&r.key))
                    .or_default()
                    .push(cpu);
            }
        }
        by_load
            .into_iter()
            .filter_map(|(k, v)| Some((k, echomark_archive::plan::median(&v)?)))
            .collect::<HashMap<CaseKey, f64>>()
    };
    let (s, b) = (per_load(subject), per_load(base));
    let ratios: Vec<f64> = s
        .iter()
        .filter_map(|(k, sv)| b.get(k).and_then(|bv| ratio(*sv, *bv)))
        .collect();
    crate::analysis::ratios::median_range(ratios)
}

fn without_backend(key: &CaseKey) -> CaseKey {
    CaseKey {
        backend: echomark_archive::Backend::Named(String::new()),
        ..key.clone()
    }
}

/// Every configuration of `base` in `configs` (in their order) against the same
/// configuration on `subject`.
pub fn rows<'a>(
    configs: &[&'a Configuration],
    subject: &str,
    base: &str,
    rules: &Rules,
) -> Vec<Row<'a>> {
    let subjects: HashMap<CaseKey, &Configuration> = configs
        .iter()
        .filter(|c| c.key.backend == subject)
        .map(|c| (without_backend(&c.key), *c))
        .collect();
    configs
        .iter()
        .filter(|c| c.key.backend == base)
        .filter_map(|b| match subjects.get(&without_backend(&b.key)).copied() {
            Some(s) => row(s, b, rules),
            None => {
                let k = &b.key;
                echomark_archive::unsupported(subject, k.io_model, k.io_threads)
                    .map(|_| Row::Unsupported(b))
            }
        })
        .collect()
}

/// Every configuration of `bases` (in their order) against the configuration of `subjects`
/// with the same key, where there is one: the same stack measured in two places (two hosts).
pub fn rows_between<'a>(
    subjects: &[&'a Configuration],
    bases: &[&'a Configuration],
    rules: &Rules,
) -> Vec<Row<'a>> {
    let by_key: HashMap<&CaseKey, &Configuration> = subjects.iter().map(|c| (&c.key, *c)).collect();
    bases
        .iter()
        .filter_map(|b| row(by_key.get(&b.key).copied()?, b, rules))
        .collect()
}

/// One configuration measured on both sides: a pair when both passed, else not comparable.
fn row<'a>(s: &'a Configuration, b: &'a Configuration, rules: &Rules) -> Option<Row<'a>> {
    if s.status == Status::Failed || b.status == Status::Failed {
        return Some(Row::Failed {
            subject: s,
            base: b,
        });
    }
    let (st, bt) = (
        s.stat(Metric::RoundtripsPerSecond)?,
        b.stat(Metric::RoundtripsPerSecond)?,
    );
    let p99 = s.stat(Metric::RttP99Us).zip(b.stat(Metric::RttP99Us));
    Some(Row::Pair(Pair {
        subject: s,
        base: b,
        throughput_ratio: ratio(st.median, bt.median)?,
        throughput: decide(b, s, Metric::RoundtripsPerSecond, rules)?,
        p99_ratio: p99.and_then(|(s, b)| ratio(s.median, b.median)),
        p99: p99.and_then(|_| decide(b, s, Metric::RttP99Us, rules)),
    }))
}

fn ratio(subject: f64, base: f64) -> Option<f64> {
    (base > 0.0).then_some(subject / base)
}

/// Counts of a comparison's throughput decisions and the spread of its ratios.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Tally {
    pub pairs: usize,
    pub subject_higher: usize,
    pub subject_lower: usize,
    pub equivalent: usize,
    pub undecided: usize,
    pub unsupported: usize,
    pub failed: usize,
    /// Median, min and max of the throughput ratios (`None` without pairs).
    pub ratios: Option<Stat>,
}

impl Tally {
    /// Counts one throughput decision.
    pub fn count(&mut self, d: &Decision) {
        match d.verdict {
            Verdict::Higher => self.subject_higher += 1,
            Verdict::Lower => self.subject_lower += 1,
            Verdict::Equivalent => self.equivalent += 1,
            Verdict::Undecided { .. } | Verdict::NotComparable { .. } => self.undecided += 1,
        }
    }

    /// The decided share of the pairs (higher, lower or equivalent), as a fraction.
    pub fn decided_share(&self) -> Option<f64> {
        (self.pairs > 0).then(|| (self.pairs - self.undecided) as f64 / self.pairs as f64)
    }
}

/// The tally of `rows`.
pub fn tally(rows: &[Row]) -> Tally {
    let mut t = Tally::default();
    let mut ratios = Vec::new();
    for row in rows {
        match row {
            Row::Pair(p) => {
                t.pairs += 1;
                ratios.push(p.throughput_ratio);
                t.count(&p.throughput);
            }
            Row::Unsupported(_) => t.unsupported += 1,
            Row::Failed { .. } => t.failed += 1,
        }
    }
    t.ratios = crate::analysis::ratios::median_range(ratios);
    t
}

/// One load's fastest model on each of two backends, and which is faster.
#[derive(Debug, Clone, Copy)]
pub struct Duel<'a> {
    pub subject: &'a Ranking,
    pub base: &'a Ranking,
    /// The subject's best throughput against the base's best.
    pub verdict: Decision,
}

/// For every load ranked on both `subject` and `base` (in the order of `rankings`' base
/// entries), the two backends' fastest models (found among `configs`), decided.
pub fn duels<'a>(
    rankings: &[&'a Ranking],
    configs: &[&Configuration],
    subject: &str,
    base: &str,
    rules: &Rules,
) -> Vec<Duel<'a>> {
    let best = |r: &Ranking| {
        let key = r.best_key();
        configs
            .iter()
            .copied()
            .find(|c| c.dataset == r.group.dataset && c.key == key)
    };
    let load = |r: &Ranking| GroupKey {
        backend: String::new(),
        ..r.group.clone()
    };
    let subjects: BTreeMap<GroupKey, &Ranking> = rankings
        .iter()
        .filter(|r| r.group.backend == subject)
        .map(|r| (load(r), *r))
        .collect();
    rankings
        .iter()
        .filter(|r| r.group.backend == base)
        .filter_map(|b| {
            let s = *subjects.get(&load(b))?;
            Some(Duel {
                subject: s,
                base: b,
                verdict: decide(best(b)?, best(s)?, Metric::RoundtripsPerSecond, rules)?,
            })
        })
        .collect()
}

/// The median, min and max of the duels' ratios (subject's best median ÷ base's); `None`
/// without a duel whose base median is positive.
pub fn duel_ratios(duels: &[Duel]) -> Option<Stat> {
    crate::analysis::ratios::median_range(
        duels
            .iter()
            .filter_map(|d| {
                ratio(
                    d.subject.best.roundtrips_per_second.median,
                    d.base.best.roundtrips_per_second.median,
                )
            })
            .collect(),
    )
}

/// One pair as `summary.json` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct BackendRow {
    #[serde(flatten)]
    pub key: CaseKey,
    pub base_backend: String,
    pub roundtrips_per_second_ratio: f64,
    pub throughput: Decision,
    pub rtt_p99_us_ratio: Option<f64>,
    pub rtt_p99: Option<Decision>,
}

/// Every pair of every other backend in `configs` against the [`base_backend`].
pub fn backend_rows(configs: &[&Configuration], rules: &Rules) -> Vec<BackendRow> {
    let backends: BTreeSet<&str> = configs.iter().map(|c| c.key.backend.as_str()).collect();
    let Some(base) = base_backend(&backends) else {
        return Vec::new();
    };
    backends
        .iter()
        .filter(|b| **b != base)
        .flat_map(|subject| rows(configs, subject, base, rules))
        .filter_map(|row| match row {
            Row::Pair(p) => Some(BackendRow {
                key: p.subject.key.clone(),
                base_backend: base.to_string(),
                roundtrips_per_second_ratio: p.throughput_ratio,
                throughput: p.throughput,
                rtt_p99_us_ratio: p.p99_ratio,
                rtt_p99: p.p99,
            }),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::aggregate::test_configuration;
    use std::collections::BTreeMap;

    fn config(backend: &str, model: &str, threads: u64, rate: (f64, f64)) -> Configuration {
        let stats = BTreeMap::from([(
            Metric::RoundtripsPerSecond,
            Stat {
                median: (rate.0 + rate.1) / 2.0,
                min: rate.0,
                max: rate.1,
            },
        )]);
        let mut c = test_configuration("tcp", model, threads, stats, Status::Valid);
        c.key.backend = backend.into();
        c.values = BTreeMap::from([(
            Metric::RoundtripsPerSecond,
            vec![rate.0, (rate.0 + rate.1) / 2.0, rate.1],
        )]);
        c
    }

    #[test]
    fn pairs_are_decided_by_the_rule_and_unsupported_models_are_listed() {
        let all = [
            config("tokio", "shared", 1, (100.0, 110.0)),
            config("monoio", "shared", 1, (120.0, 130.0)),
            config("tokio", "sharded", 2, (200.0, 220.0)),
            config("monoio", "sharded", 2, (210.0, 230.0)),
            config("tokio", "shared", 2, (150.0, 160.0)),
        ];
        let refs: Vec<&Configuration> = all.iter().collect();
        let found = rows(&refs, "monoio", "tokio", &Rules::default());
        assert_eq!(found.len(), 3);
        let Row::Pair(first) = found[0] else {
            panic!("a pair")
        };
        // 120, 125, 130 against 100, 105, 110: higher by 19 %.
        assert_eq!(first.throughput.verdict, Verdict::Higher);
        let Row::Pair(second) = found[1] else {
            panic!("a pair")
        };
        // 210, 220, 230 against 200, 210, 220: 5 % apart, within the spread.
        assert!(matches!(
            second.throughput.verdict,
            Verdict::Undecided { .. }
        ));
        assert!(matches!(found[2], Row::Unsupported(c) if c.key.io_threads == 2));
        let t = tally(&found);
        assert_eq!(
            (t.pairs, t.subject_higher, t.undecided, t.unsupported),
            (2, 1, 1, 1)
        );
        assert_eq!(t.decided_share(), Some(0.5));
        assert_eq!(
            base_backend(&BTreeSet::from(["monoio", "tokio"])),
            Some("tokio")
        );
        assert_eq!(
            base_backend(&BTreeSet::from(["standalone", "boost"])),
            Some("boost")
        );
    }
}
