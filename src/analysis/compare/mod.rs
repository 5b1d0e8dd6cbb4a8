//! `echomark compare`: did a change make a dataset faster or slower? Every configuration
//! present on both sides gets a verdict per metric from the site's one comparison rule
//! ([`echomark_decide`]), never one read off a fixed percentage alone.
//!
//! The rule, per configuration and metric (throughput and the p50, p99 and p99.9 latency):
//!
//! 1. Both sides must be valid (every run passed) with at least [`MIN_REPETITIONS`]
//!    repetitions; otherwise the configuration is *not comparable*, with the reason.
//! 2. The change is the ratio of the sides' geometric means − 1, with a Welch t interval on
//!    the logarithms of the repetitions.
//! 3. The report is one family: a change is *improved* or *regressed* only where
//!    Benjamini-Hochberg over every test of the report discovers it (so an A/A comparison
//!    raises a false alarm anywhere with a chance of at most α) and its interval, stated at
//!    the family's false-coverage level, excludes no change.
//! 4. It is *equivalent* where that interval lies within the margin (`--margin`, 5% for
//!    throughput, `--latency-margin`, 10% for percentiles) or, with `--noise A1 A2`, within
//!    the largest change an A/A pair of the same build showed, whichever is larger; otherwise
//!    it is *undecided*, with the repetitions a side that would likely decide it. A change
//!    no larger than that A/A change is never counted as the build's.
//!
//! A configuration regressed if any metric regressed, improved if any improved and none
//! regressed, equivalent if every metric is, undecided otherwise. Each percentile's
//! histogram interval on both sides is reported beside it. Which hosts and builds the sides
//! come from is part of the report.

mod describe;
mod judge;
pub mod side;
pub mod stats;
pub mod text;

use std::collections::BTreeMap;

use echomark_archive::{AddressFamily, CaseKey, Metric};
use serde::Serialize;

use crate::format;
use crate::model::HostInfo;
pub use describe::{change_text, label, signed_percent, tail_text, value_text};
use describe::{host_differences, summary};
use judge::{judge_all, unjudged};
use side::{ConfigId, Group, Side};

/// The metrics compared, in report order.
pub const COMPARED: [Metric; 4] = [
    Metric::RoundtripsPerSecond,
    Metric::RttP50Us,
    Metric::RttP99Us,
    Metric::RttP999Us,
];

/// Fewer repetitions than this on a side leave no spread to judge noise by.
pub const MIN_REPETITIONS: usize = 3;

/// The quantile a latency metric reports; `None` for throughput.
pub fn quantile(metric: Metric) -> Option<f64> {
    match metric {
        Metric::RttP50Us => Some(0.5),
        Metric::RttP95Us => Some(0.95),
        Metric::RttP99Us => Some(0.99),
        Metric::RttP999Us => Some(0.999),
        _ => None,
    }
}

/// Whether a larger value of `metric` is better.
pub(crate) fn higher_is_better(metric: Metric) -> bool {
    matches!(
        metric,
        Metric::RoundtripsPerSecond | Metric::PayloadMibPerSecond
    )
}

/// The metric's name in reports.
pub fn metric_label(metric: Metric) -> &'static str {
    match metric {
        Metric::RoundtripsPerSecond => "round trips/s",
        Metric::RttP50Us => "p50",
        Metric::RttP99Us => "p99",
        Metric::RttP999Us => "p99.9",
        other => other.name(),
    }
}

/// What the data says about one metric or one configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Regressed,
    Improved,
    Undecided,
    Equivalent,
    NotComparable,
}

impl Verdict {
    /// The verdict's name in reports.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Regressed => "regressed",
            Verdict::Improved => "improved",
            Verdict::Equivalent => "equivalent",
            Verdict::Undecided => "undecided",
            Verdict::NotComparable => "not comparable",
        }
    }
}

/// One metric of one configuration, compared.
#[derive(Debug, Clone, Serialize)]
pub struct MetricChange {
    pub metric: Metric,
    pub base_median: f64,
    pub new_median: f64,
    /// new / base − 1, of the geometric means.
    pub change: f64,
    /// The interval of the change at [`MetricChange::level`]; `None` when a side has one
    /// repetition.
    pub interval: Option<(f64, f64)>,
    /// The interval's confidence: the family's false-coverage level.
    pub level: f64,
    /// Welch's p-value of "no change" on the logarithms.
    pub p_value: f64,
    /// Its Benjamini-Hochberg q-value over every test of the comparison.
    pub adjusted_p_value: f64,
    /// The equivalence margin here (the rule's margin or the noise band, whichever is
    /// larger).
    pub margin: f64,
    /// The percentile's interval in each side's pooled histogram (µs), when recorded.
    pub base_tail: Option<(f64, f64)>,
    pub new_tail: Option<(f64, f64)>,
    /// Undecided: the repetitions a side that would likely decide it.
    pub runs_needed: Option<u64>,
    pub verdict: Verdict,
    /// Why the verdict is what it is, in a sentence.
    pub reason: String,
}

/// One configuration present on both sides.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigurationChange {
    /// A one-line plain-text description (archive strings unescaped; renderers escape).
    pub label: String,
    pub key: CaseKey,
    pub address_family: AddressFamily,
    pub base_runs: usize,
    pub new_runs: usize,
    pub verdict: Verdict,
    /// Why a configuration is not comparable.
    pub reason: Option<String>,
    pub metrics: Vec<MetricChange>,
}

/// What a side is: which dataset, host and build.
#[derive(Debug, Clone, Serialize)]
pub struct SideSummary {
    pub dataset: String,
    pub files: usize,
    pub runs: usize,
    pub host: HostInfo,
    /// Distinct runner builds (short hashes of the measured executables), sorted.
    pub builds: Vec<String>,
    /// Distinct git revisions the runner was built from, sorted (`+dirty` when dirty).
    pub revisions: Vec<String>,
    pub first_recorded_utc: Option<String>,
    pub last_recorded_utc: Option<String>,
}

/// The A/A noise band: the largest |change| each metric showed between two datasets of the
/// same build, per configuration and over all of them.
#[derive(Debug, Clone, Default, Serialize)]
pub struct NoiseBand {
    pub datasets: (String, String),
    /// The largest |change| over every configuration measured in both, per metric.
    pub largest: BTreeMap<Metric, f64>,
    #[serde(skip)]
    per_configuration: BTreeMap<(ConfigId, Metric), f64>,
}

impl NoiseBand {
    /// Whether the pair shared no configuration, so the band says nothing.
    pub fn is_empty(&self) -> bool {
        self.per_configuration.is_empty()
    }

    /// The band the A/A pair `a1`, `a2` shows.
    pub fn of(a1: &Side, a2: &Side) -> NoiseBand {
        let mut band = NoiseBand {
            datasets: (a1.dataset.name.clone(), a2.dataset.name.clone()),
            ..NoiseBand::default()
        };
        for (id, one) in &a1.groups {
            let Some(two) = a2.groups.get(id) else {
                continue;
            };
            if !(one.valid && two.valid) {
                continue;
            }
            for m in COMPARED {
                let (Some(x), Some(y)) = (
                    stats::median(&one.values[&m]),
                    stats::median(&two.values[&m]),
                ) else {
                    continue;
                };
                if x == 0.0 {
                    continue;
                }
                let change = (y / x - 1.0).abs();
                band.per_configuration.insert((id.clone(), m), change);
                let largest = band.largest.entry(m).or_insert(0.0);
                *largest = largest.max(change);
            }
        }
        band
    }

    /// The largest change per metric in one line: `round trips/s 3.1%, p50 2.0%`.
    pub fn describe(&self) -> String {
        self.largest
            .iter()
            .map(|(m, v)| format!("{} {}%", metric_label(*m), format::grouped(v * 100.0, 1)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The band for one configuration's metric: its own A/A change where it was measured,
    /// else the largest of that metric.
    fn for_metric(&self, id: &ConfigId, metric: Metric) -> Option<f64> {
        self.per_configuration
            .get(&(id.clone(), metric))
            .or_else(|| self.largest.get(&metric))
            .copied()
    }
}

/// What to compare with.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The rule's level and margins (5% for throughput, 10% for percentiles by default).
    pub rules: crate::analysis::decision::Rules,
    pub noise: Option<NoiseBand>,
}

/// Totals over the configurations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub regressed: usize,
    pub improved: usize,
    pub equivalent: usize,
    pub undecided: usize,
    pub not_comparable: usize,
}

impl Counts {
    /// Counts one configuration's verdict.
    fn count(&mut self, v: Verdict) {
        match v {
            Verdict::Regressed => self.regressed += 1,
            Verdict::Improved => self.improved += 1,
            Verdict::Equivalent => self.equivalent += 1,
            Verdict::Undecided => self.undecided += 1,
            Verdict::NotComparable => self.not_comparable += 1,
        }
    }

    /// The configurations that could be compared.
    pub fn comparable(&self) -> usize {
        self.regressed + self.improved + self.equivalent + self.undecided
    }
}

/// One protocol's share of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ProtocolCounts {
    pub protocol: echomark_archive::Protocol,
    pub counts: Counts,
    /// new / base − 1 of the median throughput, the largest in size over the protocol's
    /// comparable configurations.
    pub largest_throughput_change: Option<f64>,
}

/// A whole comparison: the report's model, rendered by [`text`], [`crate::site::comparison`] and as JSON.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub base: SideSummary,
    pub new: SideSummary,
    /// Host fields that differ between the sides (`cpu: A → B`); empty for the same host.
    pub host_differences: Vec<String>,
    /// Whether the two sides ran different builds.
    pub different_builds: bool,
    pub alpha: f64,
    pub rules: crate::analysis::decision::Rules,
    pub noise: Option<NoiseBand>,
    pub counts: Counts,
    /// Configurations on both sides, regressions first, then improvements, then the rest.
    pub configurations: Vec<ConfigurationChange>,
    pub only_in_base: Vec<String>,
    pub only_in_new: Vec<String>,
    /// Set when nearly every comparable configuration moved the same way (at least
    /// [`UNIFORM_SHARE`] of them, and at least [`UNIFORM_MINIMUM`]): more often the machine
    /// than the code, unless the two sides were measured interleaved.
    pub uniform_shift: Option<Verdict>,
}

/// The share of comparable configurations that must share a verdict for
/// [`Comparison::uniform_shift`].
pub const UNIFORM_SHARE: f64 = 0.8;
/// The fewest comparable configurations for which a uniform shift is reported.
pub const UNIFORM_MINIMUM: usize = 10;

impl Comparison {
    /// Compares `new` against `base`.
    pub fn of(base: &Side, new: &Side, options: &Options) -> Comparison {
        let paired: Vec<(&ConfigId, &Group, &Group)> = base
            .groups
            .iter()
            .filter_map(|(id, b)| Some((id, b, new.groups.get(id)?)))
            .collect();
        let mut configurations: Vec<ConfigurationChange> =
            paired.iter().map(|(id, b, n)| unjudged(id, b, n)).collect();
        judge_all(&mut configurations, &paired, options);
        // Stable: within a verdict, the canonical configuration order stays.
        configurations.sort_by_key(|c| c.verdict);
        let mut counts = Counts::default();
        for c in &configurations {
            counts.count(c.verdict);
        }
        let only = |one: &Side, other: &Side| -> Vec<String> {
            one.groups
                .keys()
                .filter(|id| !other.groups.contains_key(*id))
                .map(|(k, af)| label(k, *af))
                .collect()
        };
        let base_summary = summary(base.dataset);
        let new_summary = summary(new.dataset);
        Comparison {
            host_differences: host_differences(&base_summary.host, &new_summary.host),
            different_builds: base_summary.builds != new_summary.builds
                || base_summary.revisions != new_summary.revisions,
            base: base_summary,
            new: new_summary,
            alpha: 1.0 - options.rules.throughput.level,
            rules: options.rules,
            noise: options.noise.clone(),
            counts,
            configurations,
            only_in_base: only(base, new),
            only_in_new: only(new, base),
            uniform_shift: uniform_shift(&counts),
        }
    }

    /// Whether any configuration regressed.
    pub fn has_regression(&self) -> bool {
        self.counts.regressed > 0
    }

    /// Per protocol (in protocol order), how many configurations regressed, improved, were
    /// equivalent, undecided or not comparable, and the largest throughput change among
    /// them.
    pub fn by_protocol(&self) -> Vec<ProtocolCounts> {
        let mut out: Vec<ProtocolCounts> = Vec::new();
        for c in &self.configurations {
            let at = match out.iter().position(|p| p.protocol == c.key.protocol) {
                Some(at) => at,
                None => {
                    out.push(ProtocolCounts {
                        protocol: c.key.protocol,
                        counts: Counts::default(),
                        largest_throughput_change: None,
                    });
                    out.len() - 1
                }
            };
            let p = &mut out[at];
            p.counts.count(c.verdict);
            let throughput = c
                .metrics
                .iter()
                .find(|m| {
                    m.metric == Metric::RoundtripsPerSecond && m.verdict != Verdict::NotComparable
                })
                .map(|m| m.change);
            if let Some(change) = throughput {
                if p.largest_throughput_change
                    .is_none_or(|x| change.abs() > x.abs())
                {
                    p.largest_throughput_change = Some(change);
                }
            }
        }
        out.sort_by_key(|p| p.protocol);
        out
    }

    /// The (configuration, metric) pairs with a verdict of `verdict`, in report order.
    pub fn findings(&self, verdict: Verdict) -> Vec<(&ConfigurationChange, &MetricChange)> {
        self.configurations
            .iter()
            .flat_map(|c| c.metrics.iter().map(move |m| (c, m)))
            .filter(|(_, m)| m.verdict == verdict)
            .collect()
    }

    /// How many metric tests were made (the family α is spread over).
    pub fn tests_made(&self) -> usize {
        self.configurations
            .iter()
            .flat_map(|c| &c.metrics)
            .filter(|m| m.verdict != Verdict::NotComparable)
            .count()
    }
}

fn uniform_shift(counts: &Counts) -> Option<Verdict> {
    let comparable = counts.comparable();
    if comparable < UNIFORM_MINIMUM {
        return None;
    }
    [
        (Verdict::Regressed, counts.regressed),
        (Verdict::Improved, counts.improved),
    ]
    .into_iter()
    .find(|(_, n)| *n as f64 >= UNIFORM_SHARE * comparable as f64)
    .map(|(v, _)| v)
}
