//! The terminal report of a comparison: who was compared, then regressions, improvements and
//! the totals. Archive strings pass through [`printable`] so they cannot drive a terminal.

use std::fmt::Write as _;

use super::{change_text, metric_label, value_text, Comparison, SideSummary, Verdict};
use crate::error::printable;
use crate::format;

fn side_line(out: &mut String, name: &str, s: &SideSummary) {
    let _ = writeln!(
        out,
        "{name}: {} ({} file{}, {} runs{}), build {}{}",
        printable(&s.dataset),
        s.files,
        if s.files == 1 { "" } else { "s" },
        format::count(s.runs as u64),
        s.first_recorded_utc
            .as_deref()
            .map(|t| format!(", recorded {}", printable(t)))
            .unwrap_or_default(),
        if s.builds.is_empty() {
            "not recorded".to_string()
        } else {
            printable(&s.builds.join(", "))
        },
        if s.revisions.is_empty() {
            String::new()
        } else {
            format!(" from {}", printable(&s.revisions.join(", ")))
        }
    );
}

/// The report as plain text.
pub fn render(c: &Comparison) -> String {
    let mut out = String::new();
    side_line(&mut out, "base", &c.base);
    side_line(&mut out, "new ", &c.new);
    if c.host_differences.is_empty() {
        out.push_str("hosts: the same\n");
    } else {
        out.push_str("warning: the sides were measured on different hosts, so every change below includes the machines:\n");
        for d in &c.host_differences {
            let _ = writeln!(out, "  {}", printable(d));
        }
    }
    if let Some(v) = c.uniform_shift {
        let _ = writeln!(
            out,
            "warning: nearly every configuration {}: that is more often the machine than the code; measure both builds interleaved (scripts/ab-compare) before blaming either",
            v.label()
        );
    }
    if !c.different_builds {
        out.push_str("builds: the same on both sides (an A/A comparison)\n");
    }
    let _ = writeln!(
        out,
        "rule: equivalent within ±{}% (throughput) and ±{}% (latency); α = {} as a false discovery rate over all {} tests together",
        format::grouped(c.rules.throughput.margin * 100.0, 1),
        format::grouped(c.rules.latency.margin * 100.0, 1),
        c.alpha,
        c.tests_made()
    );
    if let Some(noise) = &c.noise {
        let _ = writeln!(
            out,
            "noise band from {} against {}: {}",
            printable(&noise.datasets.0),
            printable(&noise.datasets.1),
            noise.describe()
        );
    }
    for (verdict, title) in [
        (Verdict::Regressed, "regressions"),
        (Verdict::Improved, "improvements"),
    ] {
        let found = c.findings(verdict);
        let _ = writeln!(out, "\n{title}: {}", found.len());
        for (config, m) in found {
            let _ = writeln!(
                out,
                "  {}: {} {} → {} ({}); {}",
                printable(&config.label),
                metric_label(m.metric),
                value_text(m.metric, m.base_median),
                value_text(m.metric, m.new_median),
                change_text(m),
                m.reason
            );
        }
    }
    let n = &c.counts;
    let _ = writeln!(
        out,
        "\nconfigurations compared: {}: {} regressed, {} improved, {} equivalent, {} undecided, {} not comparable",
        c.configurations.len(),
        n.regressed,
        n.improved,
        n.equivalent,
        n.undecided,
        n.not_comparable
    );
    for config in c
        .configurations
        .iter()
        .filter(|x| x.verdict == Verdict::NotComparable)
    {
        let _ = writeln!(
            out,
            "  not comparable: {}: {}",
            printable(&config.label),
            printable(config.reason.as_deref().unwrap_or(""))
        );
    }
    for (side, list) in [("base", &c.only_in_base), ("new", &c.only_in_new)] {
        if !list.is_empty() {
            let _ = writeln!(out, "only in {side}: {}", list.len());
            for label in list {
                let _ = writeln!(out, "  {}", printable(label));
            }
        }
    }
    out
}
