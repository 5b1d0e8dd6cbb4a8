//! Two sides compared configuration by configuration, as a summary sentence and one table per
//! load: a backend against the base backend on a protocol page, a host against the base host
//! on the hosts page. The rows come from [`backends`]; only the labels and the wording of the
//! summary differ between the two uses.

use echomark_archive::Metric;
use serde::Serialize;

use crate::analysis::aggregate::{Configuration, Status};
use crate::analysis::backends;
use crate::format;
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::{Fill, Markup};
use crate::site::table::{Align, Table};

/// One load's table.
#[derive(Serialize)]
pub struct LoadTable {
    pub heading: Markup,
    pub table: Table,
}

/// What the two sides are called on the page, and the rules their pairs are decided by.
pub struct Sides {
    pub subject: Markup,
    pub base: Markup,
    /// The throughput margin, as the summary states it.
    pub margin: Markup,
    pub rules: crate::analysis::decision::Rules,
}

/// The catalog keys of a comparison's summary sentences; each may use `{subject}` and
/// `{base}`, the summary also the counts and the ratio spread.
pub struct Texts {
    pub summary: &'static str,
    pub none: &'static str,
    pub unsupported: &'static str,
    pub failed: &'static str,
}

/// Backends on one protocol page.
pub const BACKEND_TEXTS: Texts = Texts {
    summary: "compare.backend_summary",
    none: "compare.backend_none",
    unsupported: "compare.backend_unsupported",
    failed: "compare.backend_failed",
};

/// The summary and the per-load tables of `rows`.
pub fn section(
    cat: &Catalog,
    rows: &[backends::Row],
    sides: &Sides,
    texts: &Texts,
) -> (Markup, Vec<LoadTable>) {
    (summary(cat, rows, sides, texts), tables(cat, rows, sides))
}

fn summary(cat: &Catalog, rows: &[backends::Row], sides: &Sides, texts: &Texts) -> Markup {
    let names: [(&str, &dyn Fill); 2] = [("subject", &sides.subject), ("base", &sides.base)];
    let t = backends::tally(rows);
    let n = |v: usize| labels::number(format::count(v as u64));
    let mut summary = match t.ratios {
        None => cat.fill(texts.none, &names),
        Some(r) => {
            let x = |v: f64| labels::number(format::ratio(v));
            cat.fill(
                texts.summary,
                &[
                    ("subject", &sides.subject),
                    ("base", &sides.base),
                    ("pairs", &n(t.pairs)),
                    ("higher", &n(t.subject_higher)),
                    ("lower", &n(t.subject_lower)),
                    ("equivalent", &n(t.equivalent)),
                    ("undecided", &n(t.undecided)),
                    ("margin", &sides.margin),
                    ("median", &x(r.median)),
                    ("min", &x(r.min)),
                    ("max", &x(r.max)),
                ],
            )
        }
    };
    for (count, text) in [(t.unsupported, texts.unsupported), (t.failed, texts.failed)] {
        if count > 0 {
            summary.push(&cat.text("site.sentence_sep"));
            summary.push(&cat.fill(
                text,
                &[
                    ("count", &n(count)),
                    ("subject", &sides.subject),
                    ("base", &sides.base),
                ],
            ));
        }
    }
    summary
}

fn tables(cat: &Catalog, rows: &[backends::Row], sides: &Sides) -> Vec<LoadTable> {
    use Align::{Left, Right};
    let names: [(&str, &dyn Fill); 2] = [("subject", &sides.subject), ("base", &sides.base)];
    let columns = cat.list("compare.backend_columns", &names);
    let aligns = [Left, Right, Right, Right, Left, Right, Right, Left];
    let mut loads: Vec<LoadTable> = Vec::new();
    // The subject against the base, as the rule decided it.
    let verdict = |d: Option<echomark_decide::Decision>, metric: Metric| {
        d.map_or_else(
            || Markup::trusted("N/A"),
            |d| labels::decision(cat, &d, metric),
        )
    };
    let rate = |c: &Configuration| labels::range(c.stat(Metric::RoundtripsPerSecond), 0);
    // p99 as medians: the decision beside them comes from every run's p99.
    let p99 = |c: &Configuration| labels::median(c.stat(Metric::RttP99Us), format::latency);
    let topology = |c: &Configuration| {
        labels::topology(
            cat,
            c.key.backend.as_str(),
            c.key.io_model,
            c.key.io_threads,
        )
    };
    let dash = || Markup::trusted("—");
    for row in rows {
        let base = match *row {
            backends::Row::Pair(p) => p.base,
            backends::Row::Unsupported(b) => b,
            backends::Row::Failed { base, .. } => base,
        };
        let heading = labels::load(cat, &base.key);
        if loads.last().is_none_or(|l| l.heading != heading) {
            loads.push(LoadTable {
                heading,
                table: Table::new(columns.clone(), &aligns),
            });
        }
        let cells = match *row {
            backends::Row::Pair(p) => vec![
                topology(p.base),
                rate(p.subject),
                rate(p.base),
                labels::number(format::ratio(p.throughput_ratio)),
                verdict(Some(p.throughput), Metric::RoundtripsPerSecond),
                p99(p.subject),
                p99(p.base),
                verdict(p.p99, Metric::RttP99Us),
            ],
            backends::Row::Unsupported(b) => vec![
                topology(b),
                cat.text("compare.not_supported"),
                rate(b),
                dash(),
                dash(),
                dash(),
                p99(b),
                dash(),
            ],
            backends::Row::Failed { subject, base } => {
                let cell = |c: &Configuration, value: Markup| {
                    if c.status == Status::Failed {
                        cat.text("compare.not_comparable")
                    } else {
                        value
                    }
                };
                vec![
                    topology(base),
                    cell(subject, rate(subject)),
                    cell(base, rate(base)),
                    dash(),
                    cat.text("compare.not_comparable"),
                    cell(subject, p99(subject)),
                    cell(base, p99(base)),
                    dash(),
                ]
            }
        };
        if let Some(load) = loads.last_mut() {
            load.table.push(cells);
        }
    }
    loads
}
