//! The Markdown report, short enough for a pull-request comment or a GitHub job summary:
//! the verdict in one sentence, the sides, the regressions and improvements, then every
//! configuration in a collapsed table. Every archive string is escaped here, once, by the
//! site's escaping boundary ([`escape`]).

use std::fmt::Write as _;

use super::{
    change_text, metric_label, signed_percent, tail_text, value_text, Comparison,
    ConfigurationChange, MetricChange, SideSummary, Verdict, COMPARED,
};
use crate::format;
use crate::site::markup::escape;

/// GitHub refuses comments longer than 65,536 characters; the collapsed table stops short
/// of that and says how many rows it left out.
const LIMIT: usize = 60_000;

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn side_cells(s: &SideSummary) -> [String; 4] {
    let host = match (&s.host.cpu, s.host.logical_cpus) {
        (Some(cpu), Some(n)) => format!("{}, {n} logical CPUs", escape(cpu)),
        (Some(cpu), None) => escape(cpu),
        _ => "not recorded".to_string(),
    };
    let build = if s.builds.is_empty() {
        "not recorded".to_string()
    } else {
        s.builds
            .iter()
            .map(|b| format!("`{}`", b.replace('`', "")))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let revision = if s.revisions.is_empty() {
        "not recorded".to_string()
    } else {
        s.revisions
            .iter()
            .map(|r| format!("`{}`", r.replace('`', "")))
            .collect::<Vec<_>>()
            .join(", ")
    };
    [
        format!(
            "{} ({} runs)",
            escape(&s.dataset),
            format::count(s.runs as u64)
        ),
        host,
        format!("{build} from {revision}"),
        s.first_recorded_utc
            .as_deref()
            .map(escape)
            .unwrap_or_else(|| "not recorded".to_string()),
    ]
}

fn evidence(m: &MetricChange) -> String {
    let mut text = escape(&m.reason);
    if let (Some(b), Some(n)) = (m.base_tail, m.new_tail) {
        let _ = write!(text, "; histograms {} → {} µs", tail_text(b), tail_text(n));
    }
    text
}

fn findings_table(out: &mut String, found: &[(&ConfigurationChange, &MetricChange)]) {
    out.push_str("| configuration | metric | base | new | change [95% interval] | evidence |\n");
    out.push_str("| --- | --- | ---: | ---: | ---: | --- |\n");
    for (c, m) in found {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            escape(&c.label),
            metric_label(m.metric),
            value_text(m.metric, m.base_median),
            value_text(m.metric, m.new_median),
            change_text(m),
            evidence(m)
        );
    }
}

fn cell(c: &ConfigurationChange, metric: echomark_archive::Metric) -> String {
    match c.metrics.iter().find(|m| m.metric == metric) {
        None => "–".to_string(),
        Some(m) => match m.verdict {
            Verdict::Regressed | Verdict::Improved => {
                format!("**{}**", signed_percent(m.change))
            }
            _ => signed_percent(m.change),
        },
    }
}

/// The report as GitHub-flavoured Markdown.
pub fn render(c: &Comparison) -> String {
    let mut out = String::from("## echomark compare\n\n");
    let n = &c.counts;
    let _ = writeln!(
        out,
        "**{}** and **{}** in {} compared (threshold {}%, α = {}).\n",
        plural(
            n.regressed,
            "configuration regressed",
            "configurations regressed"
        ),
        plural(n.improved, "improved", "improved"),
        plural(c.configurations.len(), "configuration", "configurations"),
        format::grouped(c.min_effect * 100.0, 1),
        c.alpha
    );
    if !c.host_differences.is_empty() {
        out.push_str("> **Different hosts.** Every change below includes the difference between the machines:\n");
        for d in &c.host_differences {
            let _ = writeln!(out, "> - {}", escape(d));
        }
        out.push('\n');
    }
    if let Some(v) = c.uniform_shift {
        let _ = writeln!(
            out,
            "> **Nearly every configuration {}.** That is more often the machine than the code: measure both builds interleaved (`scripts/ab-compare`) before blaming either.\n",
            v.label()
        );
    }
    let [b, nw] = [side_cells(&c.base), side_cells(&c.new)];
    out.push_str("| | base | new |\n| --- | --- | --- |\n");
    for (i, row) in ["dataset", "host", "build", "recorded (UTC)"]
        .iter()
        .enumerate()
    {
        let _ = writeln!(out, "| {row} | {} | {} |", b[i], nw[i]);
    }
    out.push('\n');
    if let Some(noise) = &c.noise {
        let _ = writeln!(
            out,
            "Noise band from the A/A pair {} and {}: {}.\n",
            escape(&noise.datasets.0),
            escape(&noise.datasets.1),
            noise.describe()
        );
    }
    for (verdict, title) in [
        (Verdict::Regressed, "Regressions"),
        (Verdict::Improved, "Improvements"),
    ] {
        let found = c.findings(verdict);
        if !found.is_empty() {
            let _ = writeln!(out, "### {title}\n");
            findings_table(&mut out, &found);
            out.push('\n');
        }
    }
    let _ = writeln!(
        out,
        "<details><summary>All {} (changes of medians; bold where the data supports a verdict)</summary>\n",
        plural(c.configurations.len(), "configuration", "configurations")
    );
    out.push_str("| configuration | verdict |");
    for m in COMPARED {
        let _ = write!(out, " {} |", metric_label(m));
    }
    out.push_str("\n| --- | --- |");
    for _ in COMPARED {
        out.push_str(" ---: |");
    }
    out.push('\n');
    let mut left_out = 0;
    for config in &c.configurations {
        let mut row = format!("| {} | {} |", escape(&config.label), config.verdict.label());
        if config.verdict == Verdict::NotComparable {
            let reason = escape(config.reason.as_deref().unwrap_or(""));
            let _ = write!(row, " {reason} |{}", " |".repeat(COMPARED.len() - 1));
        } else {
            for m in COMPARED {
                let _ = write!(row, " {} |", cell(config, m));
            }
        }
        row.push('\n');
        if out.len() + row.len() > LIMIT {
            left_out += 1;
        } else {
            out.push_str(&row);
        }
    }
    if left_out > 0 {
        let _ = writeln!(
            out,
            "\n{} left out to stay within GitHub's comment size; `echomark compare --json` has them all.",
            plural(left_out, "row", "rows")
        );
    }
    for (side, list) in [("base", &c.only_in_base), ("new", &c.only_in_new)] {
        if !list.is_empty() {
            let shown: Vec<String> = list.iter().take(20).map(|l| escape(l)).collect();
            let _ = writeln!(
                out,
                "\nOnly in {side} ({}): {}{}",
                list.len(),
                shown.join("; "),
                if list.len() > 20 { "; …" } else { "" }
            );
        }
    }
    out.push_str("\n</details>\n");
    out
}
