//! The verdict rule of a comparison (see the [module documentation](super)): which
//! configurations are comparable, and the family of tests that judges their metrics.

use echomark_archive::Metric;

use super::side::{ConfigId, Group};
use super::{
    higher_is_better, label, quantile, stats, tail_text, ConfigurationChange, Method, MetricChange,
    Options, Verdict, COMPARED, MIN_REPETITIONS,
};
use crate::format;

/// A configuration with its comparability settled and no metric judged yet.
pub(super) fn unjudged(id: &ConfigId, base: &Group, new: &Group) -> ConfigurationChange {
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
pub(super) fn judge_all(
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
    let cases: Vec<(&Test, Evidence, u64)> = tests
        .iter()
        .map(|t| {
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
            (t, evidence, seed)
        })
        .collect();
    // Each test's bootstrap is seeded by its own configuration and metric: judged on every
    // core, the verdicts are the ones a loop would give.
    let judged =
        crate::parallel::map_in_order(&cases, |(t, evidence, seed)| judge(t, *evidence, *seed));
    for ((t, _, _), change) in cases.iter().zip(judged) {
        if let Some(change) = change {
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

/// Whether the min–max ranges of two samples share a value.
fn ranges_overlap(base: &[f64], new: &[f64]) -> bool {
    let range = |v: &[f64]| {
        let low = v.iter().copied().fold(f64::INFINITY, f64::min);
        let high = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (low, high)
    };
    let ((b0, b1), (n0, n1)) = (range(base), range(new));
    b0 <= n1 && n0 <= b1
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
        ranges_overlap: ranges_overlap(base, new),
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
