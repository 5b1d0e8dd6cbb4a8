//! The verdict rule of a comparison (see the [module documentation](super)): which
//! configurations are comparable, and the family of decisions that judges their metrics.

use echomark_archive::Metric;
use echomark_decide::{family, Rule, Verdict as Rule_};

use super::side::{ConfigId, Group};
use super::{
    higher_is_better, label, quantile, tail_text, ConfigurationChange, MetricChange, Options,
    Verdict, COMPARED, MIN_REPETITIONS,
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
    base_tail: Option<(f64, f64)>,
    new_tail: Option<(f64, f64)>,
    rule: Rule,
    /// The A/A pair's change here (`--noise`): a change no larger is not counted.
    band: Option<f64>,
}

/// Judges every metric of every comparable configuration as one family
/// ([`echomark_decide::family`]): the false discovery rate over the whole report stays at α,
/// and each interval is stated at the family's false-coverage level.
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
            let rule = options.rules.for_metric(m);
            tests.push(Test {
                config: i,
                metric: m,
                base: b,
                new: n,
                base_tail: base.tails.get(&m).copied(),
                new_tail: new.tails.get(&m).copied(),
                rule: Rule {
                    margin: rule.margin.max(band.unwrap_or(0.0)),
                    ..rule
                },
                band,
            });
        }
    }
    let rows: Vec<family::Row> = tests
        .iter()
        .map(|t| family::Row {
            base: t.base,
            subject: t.new,
            rule: t.rule,
        })
        .collect();
    for (t, (d, q)) in tests.iter().zip(family::judge(&rows)) {
        if let Some(change) = judge(t, &d, q) {
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
        } else if c.metrics.iter().all(|m| m.verdict == Verdict::Equivalent) {
            Verdict::Equivalent
        } else {
            Verdict::Undecided
        };
    }
}

/// The verdict for one metric from its family decision `d` and q-value; `None` when a
/// median is missing.
fn judge(t: &Test, d: &echomark_decide::Decision, q_value: f64) -> Option<MetricChange> {
    let base_median = super::stats::median(t.base)?;
    let new_median = super::stats::median(t.new)?;
    let percent = |x: f64| format!("{}%", format::grouped(x * 100.0, 1));
    let runs = format!("{} against {} repetitions", t.base.len(), t.new.len());
    let interval = (d.low.is_finite() && d.high.is_finite()).then_some((d.low - 1.0, d.high - 1.0));
    let stated = |(low, high): (f64, f64)| {
        format!(
            "{} [{}, {}] at {}%",
            percent(d.ratio - 1.0),
            percent(low),
            percent(high),
            format::grouped(d.level * 100.0, 2)
        )
    };
    let within_band = t.band.filter(|b| (d.ratio - 1.0).abs() <= *b);
    let (verdict, reason) = match d.verdict {
        // A change an A/A pair of the same build also showed is not the build's.
        Rule_::Higher | Rule_::Lower if within_band.is_some() => (
            Verdict::Undecided,
            format!(
                "{} is no larger than the A/A noise band of {} ({runs})",
                interval.map_or_else(String::new, stated),
                percent(within_band.unwrap_or(0.0))
            ),
        ),
        Rule_::Higher | Rule_::Lower => {
            let better = (d.verdict == Rule_::Higher) == higher_is_better(t.metric);
            let verdict = if better {
                Verdict::Improved
            } else {
                Verdict::Regressed
            };
            (
                verdict,
                format!(
                    "{} ({runs}, q = {} over every test)",
                    interval.map_or_else(String::new, stated),
                    format::grouped(q_value, 4)
                ),
            )
        }
        Rule_::Equivalent => (
            Verdict::Equivalent,
            format!(
                "equivalent within ±{}: {} ({runs})",
                percent(t.rule.margin),
                interval.map_or_else(String::new, stated)
            ),
        ),
        Rule_::Undecided { runs_needed } => (
            Verdict::Undecided,
            format!(
                "undecided: {} ({runs}){}",
                interval.map_or_else(|| "no interval".to_string(), stated),
                match runs_needed {
                    Some(n) => format!("; about {n} repetitions a side would decide"),
                    None => String::new(),
                }
            ),
        ),
        Rule_::NotComparable { .. } => (
            Verdict::NotComparable,
            "a side has no positive value".to_string(),
        ),
    };
    // A percentile's move is also set beside each side's sampling uncertainty, as a
    // reader checks it (the rule decides on the runs' percentiles).
    let tails = match (t.base_tail, t.new_tail, quantile(t.metric)) {
        (Some(b), Some(n), Some(_)) => format!(
            "; histogram intervals {} µs against {} µs",
            tail_text(b),
            tail_text(n)
        ),
        _ => String::new(),
    };
    Some(MetricChange {
        metric: t.metric,
        base_median,
        new_median,
        change: d.ratio - 1.0,
        interval,
        level: d.level,
        p_value: d.p_value,
        adjusted_p_value: q_value,
        margin: t.rule.margin,
        base_tail: t.base_tail,
        new_tail: t.new_tail,
        runs_needed: match d.verdict {
            Rule_::Undecided { runs_needed } => runs_needed,
            _ => None,
        },
        verdict,
        reason: reason + &tails,
    })
}
