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
#[derive(Debug, Serialize)]
pub struct LoadTable {
    /// The load the table's rows were measured at.
    pub heading: Markup,
    pub table: Table,
}

/// Two sides compared: the summary sentence and one table per load, a row per pair of
/// configurations (or per configuration one side could not measure).
#[derive(Debug, Serialize)]
pub struct PairsSection {
    /// The tally of the rule's verdicts and the spread of the throughput ratios.
    pub summary: Markup,
    pub loads: Vec<LoadTable>,
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
) -> PairsSection {
    PairsSection {
        summary: summary(cat, rows, sides, texts),
        loads: tables(cat, rows, sides),
    }
}

fn summary(cat: &Catalog, rows: &[backends::Row], sides: &Sides, texts: &Texts) -> Markup {
    let names: [(&str, &dyn Fill); 2] = [("subject", &sides.subject), ("base", &sides.base)];
    let t = backends::tally(rows);
    let n = |v: usize| labels::count(v as u64);
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::analysis::aggregate::{test_configuration, Stat};
    use crate::analysis::decision::Rules;
    use crate::site::pages::fixtures::english;

    /// TCP on tokio, one runtime, at `rates` (three runs) on `backend`.
    fn configuration(backend: &str, rates: [f64; 3], status: Status) -> Configuration {
        let stat = Stat {
            median: rates[0],
            min: rates.iter().copied().fold(f64::INFINITY, f64::min),
            max: rates.iter().copied().fold(0.0, f64::max),
        };
        let stats = BTreeMap::from([(Metric::RoundtripsPerSecond, stat)]);
        let mut c = test_configuration("tcp", "shared", 1, stats, status);
        c.key.backend = echomark_archive::Backend::named(backend);
        c.values = BTreeMap::from([(Metric::RoundtripsPerSecond, rates.to_vec())]);
        c
    }

    fn sides() -> Sides {
        let rules = Rules::default();
        Sides {
            subject: Markup::text("monoio"),
            base: Markup::text("tokio"),
            margin: labels::margin(rules.throughput),
            rules,
        }
    }

    #[test]
    fn a_pair_decided_faster_is_tallied_and_tabled() {
        let cat = english();
        let subject = configuration("monoio", [130_000.0, 130_600.0, 129_400.0], Status::Valid);
        let base = configuration("tokio", [100_000.0, 100_500.0, 99_500.0], Status::Valid);
        let rows = backends::rows(&[&subject, &base], "monoio", "tokio", &Rules::default());
        let section = section(&cat, &rows, &sides(), &BACKEND_TEXTS);
        assert!(
            section
                .summary
                .as_str()
                .contains("monoio is faster in 1, slower in 0"),
            "{:?}",
            section.summary
        );
        assert_eq!(section.loads.len(), 1, "one load");
        let row = &section.loads[0].table.rows[0];
        // Topology, both rates, the ratio, the rule's word.
        assert_eq!(row[0].as_str(), "1 runtime / 1 thread");
        assert_eq!(row[3].as_str(), "1.30×");
        assert!(row[4].as_str().starts_with("faster by 30%"), "{row:?}");
    }

    #[test]
    fn a_failed_side_is_not_compared() {
        let cat = english();
        let subject = configuration("monoio", [130_000.0, 130_600.0, 129_400.0], Status::Failed);
        let base = configuration("tokio", [100_000.0, 100_500.0, 99_500.0], Status::Valid);
        let rows = backends::rows(&[&subject, &base], "monoio", "tokio", &Rules::default());
        let section = section(&cat, &rows, &sides(), &BACKEND_TEXTS);
        let row = &section.loads[0].table.rows[0];
        assert_eq!(row[1].as_str(), cat.raw("compare.not_comparable"));
        assert_eq!(row[3].as_str(), "—", "no ratio");
        assert!(
            section.summary.as_str().contains(
                cat.fill(
                    BACKEND_TEXTS.failed,
                    &[
                        ("count", &Markup::trusted("1")),
                        ("subject", &Markup::text("monoio")),
                        ("base", &Markup::text("tokio")),
                    ],
                )
                .as_str()
            ),
            "{:?}",
            section.summary
        );
    }
}
