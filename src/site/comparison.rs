//! The Markdown report, short enough for a pull-request comment or a GitHub job summary:
//! the verdict in one sentence, the sides, the regressions and improvements, then every
//! configuration in a collapsed table. It is a page model rendered by the site's templates
//! (`templates/pages/compare.md`), so its tables are the site's [`Table`] and every archive
//! string crosses the site's one escaping boundary ([`Markup`]).

use serde::Serialize;

use super::markup::Markup;
use super::render::environment;
use super::table::{Align, Table};
use crate::analysis::compare::{
    change_text, metric_label, signed_percent, tail_text, value_text, Comparison,
    ConfigurationChange, MetricChange, SideSummary, Verdict, COMPARED,
};
use crate::format;

/// GitHub refuses comments longer than 65,536 characters; the collapsed table stops short
/// of that and says how many rows it left out.
const LIMIT: usize = 60_000;

/// How many names of configurations found on one side only are listed.
const ONLY_IN_SHOWN: usize = 20;

/// The report as the template arranges it.
#[derive(Serialize)]
struct Report {
    headline: Markup,
    host_differences: Vec<Markup>,
    /// "regressed" or "improved", when nearly every configuration did.
    uniform_shift: Option<&'static str>,
    sides: Table,
    noise: Option<Markup>,
    findings: Vec<Findings>,
    /// "N configurations".
    configurations: Markup,
    all: Table,
    /// "N rows", when rows of `all` were left out to stay under [`LIMIT`].
    left_out: Option<Markup>,
    /// "base (N): a; b; …" for each side with configurations the other lacks.
    only_in: Vec<Markup>,
}

/// Regressions or improvements.
#[derive(Serialize)]
struct Findings {
    title: &'static str,
    table: Table,
    /// "N rows", when rows were left out to stay under [`LIMIT`].
    left_out: Option<Markup>,
}

fn plural(n: usize, one: &str, many: &str) -> Markup {
    Markup::trusted(format!("{n} {}", if n == 1 { one } else { many }))
}

/// `values` as code spans, or "not recorded".
fn code_list(values: &[String]) -> Markup {
    if values.is_empty() {
        return Markup::trusted("not recorded");
    }
    let spans: Vec<Markup> = values.iter().map(|v| Markup::code(v)).collect();
    Markup::join(&spans, &Markup::trusted(", "))
}

fn side_cells(s: &SideSummary) -> [Markup; 4] {
    let host = match (&s.host.cpu, s.host.logical_cpus) {
        (Some(cpu), Some(n)) => {
            let mut m = Markup::text(cpu);
            m.push(&Markup::trusted(format!(", {n} logical CPUs")));
            m
        }
        (Some(cpu), None) => Markup::text(cpu),
        _ => Markup::trusted("not recorded"),
    };
    let mut build = code_list(&s.builds);
    build.push(&Markup::trusted(" from "));
    build.push(&code_list(&s.revisions));
    let mut dataset = Markup::text(&s.dataset);
    dataset.push(&Markup::trusted(format!(
        " ({} runs)",
        format::count(s.runs as u64)
    )));
    [
        dataset,
        host,
        build,
        s.first_recorded_utc
            .as_deref()
            .map(Markup::text)
            .unwrap_or_else(|| Markup::trusted("not recorded")),
    ]
}

fn sides_table(c: &Comparison) -> Table {
    let mut t = Table::new(
        vec![
            Markup::default(),
            Markup::trusted("base"),
            Markup::trusted("new"),
        ],
        &[Align::Default, Align::Default, Align::Default],
    );
    let [base, new] = [side_cells(&c.base), side_cells(&c.new)];
    for (i, (b, n)) in base.into_iter().zip(new).enumerate() {
        let label = ["dataset", "host", "build", "recorded (UTC)"][i];
        t.push(vec![Markup::trusted(label), b, n]);
    }
    t
}

fn evidence(m: &MetricChange) -> Markup {
    let mut text = Markup::text(&m.reason);
    if let (Some(b), Some(n)) = (m.base_tail, m.new_tail) {
        text.push(&Markup::trusted(format!(
            "; histograms {} → {} µs",
            tail_text(b),
            tail_text(n)
        )));
    }
    text
}

fn findings_table(found: &[(&ConfigurationChange, &MetricChange)]) -> Table {
    let mut t = Table::new(
        [
            "configuration",
            "metric",
            "base",
            "new",
            "change [95% interval]",
            "evidence",
        ]
        .map(Markup::trusted)
        .to_vec(),
        &[
            Align::Default,
            Align::Default,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Default,
        ],
    );
    for (c, m) in found {
        t.push(vec![
            Markup::text(&c.label),
            Markup::trusted(metric_label(m.metric)),
            Markup::trusted(value_text(m.metric, m.base_median)),
            Markup::trusted(value_text(m.metric, m.new_median)),
            Markup::trusted(change_text(m)),
            evidence(m),
        ]);
    }
    t
}

fn cell(c: &ConfigurationChange, metric: echomark_archive::Metric) -> Markup {
    Markup::trusted(match c.metrics.iter().find(|m| m.metric == metric) {
        None => "–".to_string(),
        Some(m) => match m.verdict {
            Verdict::Regressed | Verdict::Improved => {
                format!("**{}**", signed_percent(m.change))
            }
            _ => signed_percent(m.change),
        },
    })
}

/// Every configuration, one row each, with its verdict and the change of each metric.
fn all_table(c: &Comparison) -> Table {
    let mut labels = vec![Markup::trusted("configuration"), Markup::trusted("verdict")];
    labels.extend(COMPARED.iter().map(|&m| Markup::trusted(metric_label(m))));
    let mut aligns = vec![Align::Default, Align::Default];
    aligns.extend(COMPARED.iter().map(|_| Align::Right));
    let mut t = Table::new(labels, &aligns);
    for config in &c.configurations {
        let mut row = vec![
            Markup::text(&config.label),
            Markup::trusted(config.verdict.label()),
        ];
        if config.verdict == Verdict::NotComparable {
            row.push(Markup::text(config.reason.as_deref().unwrap_or("")));
        } else {
            row.extend(COMPARED.iter().map(|&m| cell(config, m)));
        }
        t.push(row);
    }
    t
}

fn only_in(side: &str, list: &[String]) -> Markup {
    let shown: Vec<Markup> = list
        .iter()
        .take(ONLY_IN_SHOWN)
        .map(|l| Markup::text(l))
        .collect();
    let mut m = Markup::trusted(format!("{side} ({}): ", list.len()));
    m.push(&Markup::join(&shown, &Markup::trusted("; ")));
    if list.len() > ONLY_IN_SHOWN {
        m.push(&Markup::trusted("; …"));
    }
    m
}

fn report(c: &Comparison) -> Report {
    let n = &c.counts;
    let headline = Markup::trusted(format!(
        "**{}** and **{}** in {} compared; {} equivalent (within ±{}% throughput, ±{}% latency), {} undecided (α = {} over every test).",
        plural(
            n.regressed,
            "configuration regressed",
            "configurations regressed"
        ),
        plural(n.improved, "improved", "improved"),
        plural(c.configurations.len(), "configuration", "configurations"),
        n.equivalent,
        format::grouped(c.rules.throughput.margin * 100.0, 1),
        format::grouped(c.rules.latency.margin * 100.0, 1),
        n.undecided,
        c.alpha
    ));
    let noise = c.noise.as_ref().map(|noise| {
        let mut m = Markup::trusted("Noise band from the A/A pair ");
        m.push(&Markup::text(&noise.datasets.0));
        m.push(&Markup::trusted(" and "));
        m.push(&Markup::text(&noise.datasets.1));
        m.push(&Markup::trusted(format!(": {}.", noise.describe())));
        m
    });
    let findings = [
        (Verdict::Regressed, "Regressions"),
        (Verdict::Improved, "Improvements"),
    ]
    .into_iter()
    .filter_map(|(verdict, title)| {
        let found = c.findings(verdict);
        (!found.is_empty()).then(|| Findings {
            title,
            table: findings_table(&found),
            left_out: None,
        })
    })
    .collect();
    Report {
        headline,
        host_differences: c.host_differences.iter().map(|d| Markup::text(d)).collect(),
        uniform_shift: c.uniform_shift.map(|v| v.label()),
        sides: sides_table(c),
        noise,
        findings,
        configurations: plural(c.configurations.len(), "configuration", "configurations"),
        all: all_table(c),
        left_out: None,
        only_in: [("base", &c.only_in_base), ("new", &c.only_in_new)]
            .into_iter()
            .filter(|(_, list)| !list.is_empty())
            .map(|(side, list)| only_in(side, list))
            .collect(),
    }
}

fn render_report(report: &Report) -> String {
    environment()
        .get_template("compare.md")
        .and_then(|t| t.render(report))
        .expect("the compare template renders every report (tested)")
}

/// The report as GitHub-flavoured Markdown, within 60,000 characters: when every row
/// does not fit, the most rows that do — regressions first, then improvements, then the
/// collapsed table of every configuration — and, under each table, how many were left out.
pub fn render(c: &Comparison) -> String {
    let mut model = report(c);
    let whole = render_report(&model);
    if whole.len() <= LIMIT {
        return whole;
    }
    let all_rows = std::mem::take(&mut model.all.rows);
    let rows: Vec<Vec<Vec<Markup>>> = model
        .findings
        .iter_mut()
        .map(|f| std::mem::take(&mut f.table.rows))
        .chain([all_rows])
        .collect();
    let total: usize = rows.iter().map(Vec::len).sum();
    // The most rows that fit, kept in order: the rendering grows with every row kept.
    let (mut low, mut high) = (0, total);
    while low < high {
        let middle = (low + high).div_ceil(2);
        if keep(&mut model, &rows, middle).len() <= LIMIT {
            low = middle;
        } else {
            high = middle - 1;
        }
    }
    keep(&mut model, &rows, low)
}

/// The report with the first `kept` of `rows` (the findings tables' rows, then the full
/// table's), each table saying how many of its rows are left out.
fn keep(model: &mut Report, rows: &[Vec<Vec<Markup>>], mut kept: usize) -> String {
    let mut tables: Vec<(&mut Table, &mut Option<Markup>)> = model
        .findings
        .iter_mut()
        .map(|f| (&mut f.table, &mut f.left_out))
        .collect();
    tables.push((&mut model.all, &mut model.left_out));
    for ((table, left_out), all) in tables.into_iter().zip(rows) {
        let here = kept.min(all.len());
        kept -= here;
        table.rows = all[..here].to_vec();
        *left_out = (here < all.len()).then(|| plural(all.len() - here, "row", "rows"));
    }
    render_report(model)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::compare::side::{load_dataset, Side};
    use crate::analysis::compare::Options;

    fn committed(name: &str) -> crate::model::Dataset {
        load_dataset(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("raw-results")
                .join(name),
        )
        .expect("a committed dataset")
    }

    /// The pipes of a table row that end cells: those no backslash escapes.
    fn bare_pipes(row: &str) -> usize {
        let mut backslashes = 0;
        let mut bare = 0;
        for c in row.chars() {
            if c == '|' && backslashes % 2 == 0 {
                bare += 1;
            }
            backslashes = if c == '\\' { backslashes + 1 } else { 0 };
        }
        bare
    }

    #[test]
    fn a_report_longer_than_a_comment_keeps_regressions_first_and_counts_what_it_left_out() {
        let (base, new) = (
            committed("epyc2-20261201-baseline"),
            committed("epyc2-20261201-baseline-rerun"),
        );
        let c = Comparison::of(
            &Side::of(&base).unwrap(),
            &Side::of(&new).unwrap(),
            &Options::default(),
        );
        let regressions = c.findings(Verdict::Regressed).len();
        let out = render(&c);
        assert!(out.len() <= LIMIT, "{} characters", out.len());
        let section = &out[out.find("### Regressions").expect("a regressions section")..];
        let section = &section[..section.find("\n### ").unwrap_or(section.len())];
        let shown = section
            .lines()
            .filter(|l| {
                l.starts_with("| ") && !l.starts_with("| configuration") && !l.starts_with("| ---")
            })
            .count();
        assert!(shown > 0, "some regressions are shown");
        let left: usize = section
            .lines()
            .find_map(|l| l.strip_suffix(" rows left out to stay within GitHub's comment size; `echomark compare --json` has them all."))
            .map(|n| n.replace(',', "").parse().unwrap())
            .unwrap_or(0);
        assert_eq!(
            shown + left,
            regressions,
            "every regression is shown or counted"
        );
        assert!(out.ends_with("</details>\n"));
    }

    #[test]
    fn archive_strings_cannot_open_markup_or_break_a_table_row() {
        let data = committed("epyc2-20261202-external");
        let side = Side::of(&data).unwrap();
        let mut c = Comparison::of(&side, &side, &Options::default());
        c.base.host.cpu = Some("EPYC | <img src=x> `tick` **bold**\nsecond line".into());
        c.base.builds = vec!["ab`|`cd".into()];
        c.only_in_new = vec!["[link](javascript:alert(1))".into()];
        let out = render(&c);
        assert!(!out.contains("<img"), "{out}");
        assert!(!out.contains("](javascript"), "{out}");
        let sides: Vec<&str> = out.lines().filter(|l| l.starts_with('|')).take(6).collect();
        assert!(sides.iter().all(|row| bare_pipes(row) == 4), "{sides:?}");
        let html = crate::site::markdown::to_html(&out, &Default::default());
        assert!(html.contains("<code>ab`|`cd</code>"), "{html}");
        assert!(!html.contains("<img"), "{html}");
    }
}
