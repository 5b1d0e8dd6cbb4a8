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
        let what = Markup::join(
            &[
                labels::protocol(cat, k.protocol),
                labels::backend(cat, &k.backend),
                labels::load(cat, k),
                labels::topology(cat, &k.backend, k.io_model, k.io_threads),
            ],
            &Markup::trusted(" / "),
        );
        let mut reasons: Vec<String> = f
            .failures
            .iter()
            .flat_map(|x| x.reasons.iter().cloned())
            .collect();
        reasons.sort();
        reasons.dedup();
        table.push(vec![
            what,
            Markup::trusted(format!("{} / {}", f.runs_passed, f.runs)),
            Markup::text(&reasons.join("; ")),
        ]);
    }
    table
}
