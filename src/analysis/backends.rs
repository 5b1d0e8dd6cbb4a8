//! Backend against backend on the same configuration, as the seed pages compare their two
//! Asio stacks: what the runtime changes when everything else (program, protocol, payload,
//! clients, window, IO model, threads, work) stays the same.
//!
//! A difference is claimed only where the [min, max] ranges of the repetitions do not
//! overlap; otherwise the pair is "not distinguishable". A configuration that one backend
//! cannot run ([`echomark_archive::unsupported`]) is listed as such, never as a gap or a
//! failure.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use crate::analysis::aggregate::{Configuration, Stat, Status};
use crate::analysis::rank::{GroupKey, Ranking};
use echomark_archive::{CaseKey, Metric};

/// How one metric of a pair compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The subject's whole range lies above the base's.
    SubjectHigher,
    /// The subject's whole range lies below the base's.
    SubjectLower,
    /// The ranges overlap.
    NotDistinguishable,
}

impl Verdict {
    /// Compares two ranges.
    pub fn of(subject: &Stat, base: &Stat) -> Self {
        if subject.overlaps(base) {
            Verdict::NotDistinguishable
        } else if subject.min > base.max {
            Verdict::SubjectHigher
        } else {
            Verdict::SubjectLower
        }
    }
}

/// One configuration measured on both backends, both passed.
#[derive(Debug, Clone, Copy)]
pub struct Pair<'a> {
    pub subject: &'a Configuration,
    pub base: &'a Configuration,
    /// Median round trips/s of the subject ÷ the base's.
    pub throughput_ratio: f64,
    pub throughput: Verdict,
    /// Median p99 of the subject ÷ the base's, when both have latency.
    pub p99_ratio: Option<f64>,
    pub p99: Option<Verdict>,
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
pub fn rows<'a>(configs: &[&'a Configuration], subject: &str, base: &str) -> Vec<Row<'a>> {
    let subjects: HashMap<CaseKey, &Configuration> = configs
        .iter()
        .filter(|c| c.key.backend == subject)
        .map(|c| (without_backend(&c.key), *c))
        .collect();
    configs
        .iter()
        .filter(|c| c.key.backend == base)
        .filter_map(|b| match subjects.get(&without_backend(&b.key)).copied() {
            Some(s) => row(s, b),
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
) -> Vec<Row<'a>> {
    let by_key: HashMap<&CaseKey, &Configuration> = subjects.iter().map(|c| (&c.key, *c)).collect();
    bases
        .iter()
        .filter_map(|b| row(by_key.get(&b.key).copied()?, b))
        .collect()
}

/// One configuration measured on both sides: a pair when both passed, else not comparable.
fn row<'a>(s: &'a Configuration, b: &'a Configuration) -> Option<Row<'a>> {
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
        throughput: Verdict::of(&st, &bt),
        p99_ratio: p99.and_then(|(s, b)| ratio(s.median, b.median)),
        p99: p99.map(|(s, b)| Verdict::of(&s, &b)),
    }))
}

fn ratio(subject: f64, base: f64) -> Option<f64> {
    (base > 0.0).then_some(subject / base)
}

/// Counts of a comparison's throughput verdicts and the spread of its ratios.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tally {
    pub pairs: usize,
    pub subject_higher: usize,
    pub subject_lower: usize,
    pub not_distinguishable: usize,
    pub unsupported: usize,
    pub failed: usize,
    /// Median, min and max of the throughput ratios (`None` without pairs).
    pub ratios: Option<Stat>,
}

/// The tally of `rows`.
pub fn tally(rows: &[Row]) -> Tally {
    let mut t = Tally {
        pairs: 0,
        subject_higher: 0,
        subject_lower: 0,
        not_distinguishable: 0,
        unsupported: 0,
        failed: 0,
        ratios: None,
    };
    let mut ratios = Vec::new();
    for row in rows {
        match row {
            Row::Pair(p) => {
                t.pairs += 1;
                ratios.push(p.throughput_ratio);
                match p.throughput {
                    Verdict::SubjectHigher => t.subject_higher += 1,
                    Verdict::SubjectLower => t.subject_lower += 1,
                    Verdict::NotDistinguishable => t.not_distinguishable += 1,
                }
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
    /// The subject's best throughput range against the base's best.
    pub verdict: Verdict,
}

/// For every load ranked on both `subject` and `base` (in the order of `rankings`' base
/// entries), the two backends' fastest models.
pub fn duels<'a>(rankings: &[&'a Ranking], subject: &str, base: &str) -> Vec<Duel<'a>> {
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
                verdict: Verdict::of(&s.best.roundtrips_per_second, &b.best.roundtrips_per_second),
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
    pub throughput: Verdict,
    pub rtt_p99_us_ratio: Option<f64>,
    pub rtt_p99: Option<Verdict>,
}

/// Every pair of every other backend in `configs` against the [`base_backend`].
pub fn backend_rows(configs: &[&Configuration]) -> Vec<BackendRow> {
    let backends: BTreeSet<&str> = configs.iter().map(|c| c.key.backend.as_str()).collect();
    let Some(base) = base_backend(&backends) else {
        return Vec::new();
    };
    backends
        .iter()
        .filter(|b| **b != base)
        .flat_map(|subject| rows(configs, subject, base))
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
        c
    }

    #[test]
    fn only_separate_ranges_are_a_difference_and_unsupported_models_are_listed() {
        let all = [
            config("tokio", "shared", 1, (100.0, 110.0)),
            config("monoio", "shared", 1, (120.0, 130.0)),
            config("tokio", "sharded", 2, (200.0, 220.0)),
            config("monoio", "sharded", 2, (210.0, 230.0)),
            config("tokio", "shared", 2, (150.0, 160.0)),
        ];
        let refs: Vec<&Configuration> = all.iter().collect();
        let found = rows(&refs, "monoio", "tokio");
        assert_eq!(found.len(), 3);
        let Row::Pair(first) = found[0] else {
            panic!("a pair")
        };
        assert_eq!(first.throughput, Verdict::SubjectHigher);
        let Row::Pair(second) = found[1] else {
            panic!("a pair")
        };
        assert_eq!(second.throughput, Verdict::NotDistinguishable);
        assert!(matches!(found[2], Row::Unsupported(c) if c.key.io_threads == 2));
        let t = tally(&found);
        assert_eq!(
            (
                t.pairs,
                t.subject_higher,
                t.not_distinguishable,
                t.unsupported
            ),
            (2, 1, 1, 1)
        );
        assert_eq!(
            base_backend(&BTreeSet::from(["monoio", "tokio"])),
            Some("tokio")
        );
        assert_eq!(
            base_backend(&BTreeSet::from(["standalone", "boost"])),
            Some("boost")
        );
        assert_eq!(
            Verdict::of(&stat(1.0, 2.0), &stat(3.0, 4.0)),
            Verdict::SubjectLower
        );
    }

    fn stat(min: f64, max: f64) -> Stat {
        Stat {
            median: (min + max) / 2.0,
            min,
            max,
        }
    }
}
