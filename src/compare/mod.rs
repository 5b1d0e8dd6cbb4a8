//! `echomark compare`: did a change make a dataset faster or slower? Every configuration
//! present on both sides gets a verdict per metric that the repetitions and the recorded
//! histograms can support, never one read off a fixed percentage alone.
//!
//! The rule, per configuration and metric (throughput and the p50, p99 and p99.9 latency):
//!
//! 1. Both sides must be valid (every run passed) with at least [`MIN_REPETITIONS`]
//!    repetitions; otherwise the configuration is *not comparable*, with the reason.
//! 2. The change is median(new) / median(base) − 1, with a seeded bootstrap interval at 95%.
//! 3. It is *significant* by an exact Mann-Whitney test when the repetitions can reach
//!    α = 0.05 at all (4 against 4 or more), with the p-values of every test in the report
//!    adjusted together (Benjamini-Hochberg), so that an A/A comparison raises a false alarm
//!    anywhere with a chance of at most α. With fewer repetitions the bootstrap interval of
//!    the ratio decides, at a confidence of 1 − α / m for m such tests (Bonferroni); with 3
//!    against 3 that means the two ranges do not overlap.
//! 4. A significant change counts only if it is at least the threshold: the minimum effect
//!    (`--min-effect`, 5% unless told) or, with `--noise A1 A2`, the largest change an A/A pair
//!    of the same build showed, whichever is larger.
//! 5. A latency percentile must also move beyond its sampling uncertainty: the
//!    distribution-free intervals of that percentile in the two sides' pooled histograms must
//!    not overlap (echomark archives; arknet's have no histograms, which the report says).
//!
//! A configuration regressed if any metric regressed, improved if any improved and none
//! regressed. Which hosts and builds the sides come from is part of the report.

pub mod markdown;
pub mod side;
pub mod stats;
pub mod text;

use std::collections::BTreeMap;

use echomark_archive::{AddressFamily, CaseKey, Metric};
use serde::Serialize;

use crate::format;
use crate::model::{Dataset, HostInfo};
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

/// The minimum effect unless `--min-effect` says otherwise: 5%.
pub const DEFAULT_MIN_EFFECT: f64 = 0.05;

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
fn higher_is_better(metric: Metric) -> bool {
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
    NoChange,
    NotComparable,
}

impl Verdict {
    /// The verdict's name in reports.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Regressed => "regressed",
            Verdict::Improved => "improved",
            Verdict::NoChange => "no change",
            Verdict::NotComparable => "not comparable",
        }
    }
}

/// How significance was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Exact Mann-Whitney rank-sum test on the repetitions.
    MannWhitney,
    /// Percentile bootstrap interval of the ratio of medians.
    Bootstrap,
}

/// One metric of one configuration, compared.
#[derive(Debug, Clone, Serialize)]
pub struct MetricChange {
    pub metric: Metric,
    pub base_median: f64,
    pub new_median: f64,
    /// new / base − 1.
    pub change: f64,
    /// The bootstrap interval of the change at 95%.
    pub interval: Option<(f64, f64)>,
    pub method: Method,
    /// The Mann-Whitney p-value when that test decided.
    pub p_value: Option<f64>,
    /// That p-value adjusted over every rank test of the comparison (Benjamini-Hochberg).
    pub adjusted_p_value: Option<f64>,
    /// The smallest change that counts here (minimum effect or noise band).
    pub threshold: f64,
    /// The percentile's interval in each side's pooled histogram (µs), when recorded.
    pub base_tail: Option<(f64, f64)>,
    pub new_tail: Option<(f64, f64)>,
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
#[derive(Debug, Clone)]
pub struct Options {
    /// The smallest relative change that counts (0.05 = 5%).
    pub min_effect: f64,
    pub noise: Option<NoiseBand>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            min_effect: DEFAULT_MIN_EFFECT,
            noise: None,
        }
    }
}

/// Totals over the configurations.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Counts {
    pub regressed: usize,
    pub improved: usize,
    pub no_change: usize,
    pub not_comparable: usize,
}

/// A whole comparison: the report's model, rendered by [`text`], [`markdown`] and as JSON.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub base: SideSummary,
    pub new: SideSummary,
    /// Host fields that differ between the sides (`cpu: A → B`); empty for the same host.
    pub host_differences: Vec<String>,
    /// Whether the two sides ran different builds.
    pub different_builds: bool,
    pub alpha: f64,
    pub min_effect: f64,
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
            match c.verdict {
                Verdict::Regressed => counts.regressed += 1,
                Verdict::Improved => counts.improved += 1,
                Verdict::NoChange => counts.no_change += 1,
                Verdict::NotComparable => counts.not_comparable += 1,
            }
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
            alpha: stats::ALPHA,
            min_effect: options.min_effect,
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
    let comparable = counts.regressed + counts.improved + counts.no_change;
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

/// A configuration in one line of plain text: `tcp 1,024 B, 16 × 1, shared 1, tokio`.
pub fn label(k: &CaseKey, af: AddressFamily) -> String {
    let mut out = format!(
        "{} {} B, {} × {}, {} {}, {}",
        k.protocol,
        format::count(k.payload_bytes),
        k.clients,
        k.window,
        k.io_model,
        k.io_threads,
        k.backend
    );
    if k.implementation != echomark_archive::IMPLEMENTATION {
        out.push_str(&format!(" ({})", k.implementation));
    }
    if k.handler_work > 0 {
        out.push_str(&format!(", work {}", k.handler_work));
    }
    if let Some(buffer) = k.udp_server_recv_buffer {
        out.push_str(&format!(", server buffer {}", format::buffer_size(buffer)));
    }
    if af == AddressFamily::Ipv6 {
        out.push_str(", IPv6");
    }
    out
}

/// A configuration with its comparability settled and no metric judged yet.
fn unjudged(id: &ConfigId, base: &Group, new: &Group) -> ConfigurationChange {
    let (key, af) = id;
    let side_problem = |name: &str, g: &Group| -> Option<String> {
        if !g.valid {
            return Some(format!(
                "{name}: {} of {} runs passed; {}",
                g.runs_passed,
                g.runs,
                g.failure.as_deref().unwrap_or("a run failed")
            ));
        }
        (g.runs_passed < MIN_REPETITIONS).then(|| {
            format!(
                "{name}: {} repetition{}; a verdict needs at least {MIN_REPETITIONS} a side",
                g.runs_passed,
                if g.runs_passed == 1 { "" } else { "s" }
            )
        })
    };
    ConfigurationChange {
        label: label(key, *af),
        key: key.clone(),
        address_family: *af,
        base_runs: base.runs,
        new_runs: new.runs,
        verdict: Verdict::NotComparable,
        reason: side_problem("base", base).or_else(|| side_problem("new", new)),
        metrics: Vec::new(),
    }
}

/// One metric of one comparable configuration, before its verdict.
struct Test<'a> {
    config: usize,
    metric: Metric,
    base: &'a [f64],
    new: &'a [f64],
    /// The percentile's histogram interval on each side.
    base_tail: Option<Interval>,
    new_tail: Option<Interval>,
    threshold: f64,
}

/// A (low, high) interval.
pub type Interval = (f64, f64);

/// Judges every metric of every comparable configuration as one family of tests, so that
/// the chance of a false alarm anywhere in the report stays at α: rank-test p-values are
/// adjusted by Benjamini-Hochberg over all rank tests, bootstrap intervals are widened to
/// 1 − α / m over the m bootstrap tests.
fn judge_all(
    configurations: &mut [ConfigurationChange],
    paired: &[(&ConfigId, &Group, &Group)],
    options: &Options,
) {
    let mut tests = Vec::new();
    for (i, (id, base, new)) in paired.iter().enumerate() {
        if configurations[i].reason.is_some() {
            continue;
        }
        for m in COMPARED {
            let (b, n) = (&base.values[&m], &new.values[&m]);
            if b.is_empty() || n.is_empty() {
                continue; // latency not recorded on a side
            }
            let band = options
                .noise
                .as_ref()
                .and_then(|band| band.for_metric(id, m));
            tests.push(Test {
                config: i,
                metric: m,
                base: b,
                new: n,
                base_tail: base.tails.get(&m).copied(),
                new_tail: new.tails.get(&m).copied(),
                threshold: options.min_effect.max(band.unwrap_or(0.0)),
            });
        }
    }
    let ranked = |t: &Test| stats::rank_test_possible(t.base.len(), t.new.len());
    let p_values: Vec<f64> = tests
        .iter()
        .filter(|t| ranked(t))
        .map(|t| stats::mann_whitney_p(t.base, t.new))
        .collect();
    let mut adjusted = stats::benjamini_hochberg(&p_values).into_iter();
    let mut raw = p_values.into_iter();
    let bootstrap_tests = tests.iter().filter(|t| !ranked(t)).count().max(1);
    let decision_confidence = 1.0 - stats::ALPHA / bootstrap_tests as f64;
    for t in &tests {
        let label = &configurations[t.config].label;
        let seed = stats::seed_of(&format!("{label}|{}", t.metric.name()));
        let evidence = if ranked(t) {
            Evidence::Rank {
                p: raw.next().unwrap_or(1.0),
                adjusted: adjusted.next().unwrap_or(1.0),
            }
        } else {
            Evidence::Bootstrap {
                confidence: decision_confidence,
                tests: bootstrap_tests,
            }
        };
        if let Some(change) = judge(t, evidence, seed) {
            configurations[t.config].metrics.push(change);
        }
    }
    for c in configurations.iter_mut().filter(|c| c.reason.is_none()) {
        let any = |v: Verdict| c.metrics.iter().any(|m| m.verdict == v);
        c.verdict = if any(Verdict::Regressed) {
            Verdict::Regressed
        } else if any(Verdict::Improved) {
            Verdict::Improved
        } else if c.metrics.is_empty() {
            c.reason = Some("no metric was recorded on both sides".to_string());
            Verdict::NotComparable
        } else {
            Verdict::NoChange
        };
    }
}

/// What decides significance for one test.
#[derive(Clone, Copy)]
enum Evidence {
    /// The exact rank test's p-value, raw and adjusted over the family.
    Rank { p: f64, adjusted: f64 },
    /// The bootstrap interval at `confidence` (1 − α / `tests`).
    Bootstrap { confidence: f64, tests: usize },
}

/// The verdict for one metric; `None` when a median is missing.
fn judge(t: &Test, evidence: Evidence, seed: u64) -> Option<MetricChange> {
    let (metric, base, new, threshold) = (t.metric, t.base, t.new, t.threshold);
    let (base_tail, new_tail) = (t.base_tail, t.new_tail);
    let base_median = stats::median(base)?;
    let new_median = stats::median(new)?;
    let mut out = MetricChange {
        metric,
        base_median,
        new_median,
        change: 0.0,
        interval: None,
        method: Method::Bootstrap,
        p_value: None,
        adjusted_p_value: None,
        threshold,
        base_tail,
        new_tail,
        verdict: Verdict::NotComparable,
        reason: String::new(),
    };
    if base_median <= 0.0 {
        out.reason = "the base median is 0".to_string();
        return Some(out);
    }
    out.change = new_median / base_median - 1.0;
    let levels = match evidence {
        Evidence::Bootstrap { confidence, .. } => vec![1.0 - stats::ALPHA, confidence],
        Evidence::Rank { .. } => vec![1.0 - stats::ALPHA],
    };
    let intervals = stats::bootstrap_ratio_intervals(base, new, seed, &levels);
    let as_change = |(low, high): (f64, f64)| (low - 1.0, high - 1.0);
    out.interval = intervals.as_ref().map(|v| as_change(v[0]));
    let runs = format!("{} against {} repetitions", base.len(), new.len());
    let (significant, evidence_text) = match evidence {
        Evidence::Rank { p, adjusted } => {
            out.method = Method::MannWhitney;
            out.p_value = Some(p);
            out.adjusted_p_value = Some(adjusted);
            (
                adjusted <= stats::ALPHA,
                format!(
                    "Mann-Whitney p = {}, {} after adjusting for every test ({runs})",
                    format::grouped(p, 4),
                    format::grouped(adjusted, 4)
                ),
            )
        }
        Evidence::Bootstrap { confidence, tests } => {
            let decisive = intervals.as_ref().map(|v| as_change(v[1]));
            (
                decisive.is_some_and(|(low, high)| low > 0.0 || high < 0.0),
                format!(
                    "the bootstrap interval at {}% ({} test{}) {} no change ({runs})",
                    format::grouped(confidence * 100.0, 2),
                    tests,
                    if tests == 1 { "" } else { "s" },
                    if decisive.is_some_and(|(low, high)| low > 0.0 || high < 0.0) {
                        "excludes"
                    } else {
                        "includes"
                    }
                ),
            )
        }
    };
    let percent = |x: f64| format!("{}%", format::grouped(x * 100.0, 1));
    out.verdict = Verdict::NoChange;
    out.reason = if !significant {
        format!("not significant: {evidence_text}")
    } else if out.change.abs() < threshold {
        format!(
            "significant but smaller than the threshold of {}",
            percent(threshold)
        )
    } else if let (Some(b), Some(n), Some(_)) = (base_tail, new_tail, quantile(metric)) {
        if b.0 <= n.1 && n.0 <= b.1 {
            format!(
                "within the histograms' sampling uncertainty ({} µs against {} µs)",
                tail_text(b),
                tail_text(n)
            )
        } else {
            String::new()
        }
    } else {
        String::new()
    };
    if out.reason.is_empty() {
        let better = (out.change > 0.0) == higher_is_better(metric);
        out.verdict = if better {
            Verdict::Improved
        } else {
            Verdict::Regressed
        };
        out.reason = evidence_text;
    }
    Some(out)
}

/// A histogram interval in µs: `12.30–12.45`.
pub fn tail_text((low, high): (f64, f64)) -> String {
    format!(
        "{}–{}",
        format::two_decimals(low),
        format::two_decimals(high)
    )
}

/// A signed relative change with one decimal: `+3.2%`, `-11.0%`.
pub fn signed_percent(change: f64) -> String {
    let text = format::grouped(change * 100.0, 1);
    if change > 0.0 {
        format!("+{text}%")
    } else {
        format!("{text}%")
    }
}

/// A metric's value as the site shows it: round trips/s grouped, latency in µs.
pub fn value_text(metric: Metric, value: f64) -> String {
    if higher_is_better(metric) {
        format::throughput(value)
    } else {
        format!("{} µs", format::two_decimals(value))
    }
}

/// `-11.0% [-13.1%, -9.2%]`: the change and its interval.
pub fn change_text(m: &MetricChange) -> String {
    match m.interval {
        Some((low, high)) => format!(
            "{} [{}, {}]",
            signed_percent(m.change),
            signed_percent(low),
            signed_percent(high)
        ),
        None => signed_percent(m.change),
    }
}

fn summary(d: &Dataset) -> SideSummary {
    let mut builds: Vec<String> = d
        .files
        .iter()
        .filter_map(|f| {
            f.runner_sha256
                .as_deref()
                .or(f.executable_sha256.as_deref())
        })
        .map(|h| format::short_hash(h).to_string())
        .collect();
    builds.sort();
    builds.dedup();
    let mut revisions: Vec<String> = d
        .files
        .iter()
        .filter_map(|f| {
            let head = format::short_hash(f.git_head.as_deref()?).to_string();
            Some(if f.dirty {
                format!("{head}+dirty")
            } else {
                head
            })
        })
        .collect();
    revisions.sort();
    revisions.dedup();
    let mut times: Vec<&str> = d
        .files
        .iter()
        .filter_map(|f| f.recorded_at_utc.as_deref())
        .collect();
    times.sort();
    SideSummary {
        dataset: d.name.clone(),
        files: d.files.len(),
        runs: d.runs.len(),
        host: d.files.first().map(|f| f.host.clone()).unwrap_or_default(),
        builds,
        revisions,
        first_recorded_utc: times.first().map(|t| t.to_string()),
        last_recorded_utc: times.last().map(|t| t.to_string()),
    }
}

/// `field: base → new` for every host field recorded on both sides that differs.
fn host_differences(base: &HostInfo, new: &HostInfo) -> Vec<String> {
    let as_map = |h: &HostInfo| match serde_json::to_value(h) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    let (b, n) = (as_map(base), as_map(new));
    let mut fields: Vec<&String> = b.keys().chain(n.keys()).collect();
    fields.sort();
    fields.dedup();
    let shown = |v: Option<&serde_json::Value>| match v {
        None => "not recorded".to_string(),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    fields
        .into_iter()
        // A field recorded on one side only (an older archive) says nothing about the host.
        .filter(|f| matches!((b.get(*f), n.get(*f)), (Some(x), Some(y)) if x != y))
        .map(|f| format!("{f}: {} → {}", shown(b.get(f)), shown(n.get(f))))
        .collect()
}
