//! What the comparison rule decided, as the pages word it: a decision with its size and
//! interval, the rule and its margins, and links into the explorer.

use echomark_archive::Metric;

use super::number;
use crate::format;
use crate::site::i18n::Catalog;
use crate::site::markup::Markup;

/// A share as a percentage for a decision: one decimal below 10 %, none above (`4.2%`,
/// `37%`).
fn percent(share: f64) -> String {
    let p = share.abs() * 100.0;
    format!("{}%", format::grouped(p, if p < 10.0 { 1 } else { 0 }))
}

/// What the comparison rule decided of a subject against a base on `metric`, as a cell or
/// a clause says it: "faster by 12% [5.0%, 19%]", "equivalent within ±5%", "undecided;
/// about 8 repetitions a side would decide". A rate reads faster or slower, any other
/// figure higher or lower; a change of at least 2× (or at most ½) reads as a ratio.
pub fn decision(cat: &Catalog, d: &echomark_decide::Decision, metric: Metric) -> Markup {
    use echomark_decide::Verdict;
    let rate = crate::analysis::decision::higher_is_better(metric);
    let (word, up) = match d.verdict {
        Verdict::Higher => (if rate { "faster" } else { "higher" }, true),
        Verdict::Lower => (if rate { "slower" } else { "lower" }, false),
        Verdict::Equivalent => {
            return cat.fill(
                "decision.equivalent",
                &[("margin", &number(whole_percent(d.margin)))],
            )
        }
        Verdict::Undecided {
            runs_needed: Some(runs),
        } => {
            return cat.fill(
                "decision.undecided_runs",
                &[("runs", &number(format::count(runs)))],
            )
        }
        Verdict::Undecided { runs_needed: None } if d.base_runs < 2 || d.subject_runs < 2 => {
            return cat.text("decision.undecided_one")
        }
        Verdict::Undecided { runs_needed: None } => return cat.text("decision.undecided_far"),
        Verdict::NotComparable { .. } => return cat.text("decision.not_comparable"),
    };
    let far = d.ratio >= 2.0 || d.ratio <= 0.5;
    if far {
        return cat.fill(
            &format!("decision.{word}_times"),
            &[
                ("ratio", &number(format::ratio(d.ratio))),
                ("low", &number(format::grouped(d.low, 2))),
                ("high", &number(format::grouped(d.high, 2))),
            ],
        );
    }
    // The change's size and its interval, both as shares of the base, nearest first.
    let (near, far_end) = if up {
        (d.low - 1.0, d.high - 1.0)
    } else {
        (1.0 - d.high, 1.0 - d.low)
    };
    cat.fill(
        &format!("decision.{word}"),
        &[
            ("change", &number(percent(d.ratio - 1.0))),
            ("low", &number(percent(near))),
            ("high", &number(percent(far_end))),
        ],
    )
}

/// The rule in a few words, linked to its explanation: "95 %; ±5 % throughput, ±10 %
/// latency".
pub fn rule_short(cat: &Catalog, rules: &crate::analysis::decision::Rules, up: &str) -> Markup {
    cat.fill(
        "decision.rule_short",
        &[
            ("level", &number(whole_percent(rules.throughput.level))),
            (
                "throughput",
                &number(whole_percent(rules.throughput.margin)),
            ),
            ("latency", &number(whole_percent(rules.latency.margin))),
            ("methodology", &number(format!("{up}methodology.md"))),
        ],
    )
}

/// A link into the explorer with its view preset: `params` as the explorer's address keeps
/// them (each value percent-encoded), `up` leading to the language's folder.
pub fn explore_link(cat: &Catalog, key: &str, up: &str, params: &[(&str, &str)]) -> Markup {
    let encode = |v: &str| {
        v.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    let view = params
        .iter()
        .map(|(k, v)| format!("{k}={}", encode(v)))
        .collect::<Vec<_>>()
        .join("&");
    cat.fill(
        key,
        &[("link", &Markup::trusted(format!("{up}explore.md#{view}")))],
    )
}

/// A rule's margin as a percentage ("5%", "2.5%").
pub fn margin(rule: echomark_decide::Rule) -> Markup {
    number(whole_percent(rule.margin))
}

/// A share as a percentage without decimals when it is whole ("5%", "2.5%").
fn whole_percent(share: f64) -> String {
    let p = share * 100.0;
    let decimals = if (p - p.round()).abs() < 1e-9 { 0 } else { 1 };
    format!("{}%", format::grouped(p, decimals))
}

/// The paragraph that states the comparison rule, its level and its margins, on every
/// page that decides; `up` leads from the page to the language's folder.
pub fn rule(cat: &Catalog, rules: &crate::analysis::decision::Rules, up: &str) -> Markup {
    cat.fill(
        "decision.rule",
        &[
            ("level", &number(whole_percent(rules.throughput.level))),
            (
                "throughput",
                &number(whole_percent(rules.throughput.margin)),
            ),
            ("latency", &number(whole_percent(rules.latency.margin))),
            ("methodology", &number(format!("{up}methodology.md"))),
        ],
    )
}
