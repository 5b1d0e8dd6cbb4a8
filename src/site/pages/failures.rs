//! The table of excluded configurations that the overview and the dimension pages share:
//! each configuration with a failed run, how many runs passed, and every reason.

use echomark_archive::Protocol;

use super::DatasetView;
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::Markup;
use crate::site::table::{Align, Table};

/// The excluded configurations (of one protocol, or all), with every reason.
pub fn failed_table(cat: &Catalog, view: &DatasetView, protocol: Option<Protocol>) -> Table {
    use Align::{Default as L, Right as R};
    let mut table = Table::new(cat.list("overview.failed_columns", &[]), &[L, R, L]);
    for f in view
        .analysis
        .report
        .failed_configurations
        .iter()
        .filter(|f| protocol.is_none_or(|p| f.key.protocol == p))
    {
        let k = &f.key;
        let what = labels::configuration(cat, k);
        let total = Markup::trusted(f.runs.to_string());
        let summary: Vec<Markup> = f
            .kinds
            .iter()
            .map(|k| {
                let what = cat
                    .tree_value("counter")
                    .and_then(|c| c.get(&k.kind))
                    .and_then(|v| v.as_str())
                    .map_or_else(|| Markup::text(&k.kind), Markup::trusted);
                let runs = Markup::trusted(k.runs.to_string());
                match k.largest {
                    Some(max) => cat.fill(
                        "failure.counter",
                        &[
                            ("what", &what),
                            ("runs", &runs),
                            ("total", &total),
                            ("max", &labels::number(crate::format::count(max))),
                        ],
                    ),
                    None => cat.fill(
                        "failure.other",
                        &[("what", &what), ("runs", &runs), ("total", &total)],
                    ),
                }
            })
            .collect();
        table.push(vec![
            what,
            Markup::trusted(format!("{} / {}", f.runs_passed, f.runs)),
            Markup::join(&summary, &cat.text("overview.phrase_sep")),
        ]);
    }
    table
}

/// The raw reasons behind a failed-configurations table, one line per failed run (kept in
/// the page for a reader who wants them, folded away by the template).
pub fn raw_reasons(view: &DatasetView, protocol: Option<Protocol>) -> Vec<Markup> {
    view.analysis
        .report
        .failed_configurations
        .iter()
        .filter(|f| protocol.is_none_or(|p| f.key.protocol == p))
        .flat_map(|f| {
            f.failures.iter().map(move |r| {
                Markup::trusted(format!(
                    "{} results\\[{}\\] ({} {} B, {}, {} {}, repetition {}): {}",
                    Markup::text(&r.file),
                    r.index,
                    f.key.protocol,
                    f.key.payload_bytes,
                    f.key.clients_by_window(),
                    f.key.io_model,
                    f.key.io_threads,
                    r.repetition,
                    Markup::text(&r.reasons.join("; "))
                ))
            })
        })
        .collect()
}
