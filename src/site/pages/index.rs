//! The index page of one language: every dataset with its protocols, host, pass counts and
//! recording time.

use serde::Serialize;

use super::{DatasetView, PageSpec};
use crate::format;
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::Markup;
use crate::site::table::{Align, Table};

#[derive(Serialize)]
struct IndexPage {
    datasets: Table,
    methodology: Markup,
}

/// The index page of one language.
pub fn page(cat: &Catalog, views: &[DatasetView]) -> PageSpec {
    use Align::{Default as L, Right as R};
    let mut datasets = Table::new(cat.list("index.columns", &[]), &[L, L, L, R, R, L]);
    for v in views {
        let d = v.dataset;
        let r = &v.analysis.report;
        let protocols: Vec<Markup> = v
            .subjects()
            .into_iter()
            .map(|s| labels::subject(cat, s))
            .collect();
        let recorded = d.recorded_at().unwrap_or("");
        let count = |n: usize| labels::number(format::count(n as u64));
        let of = |a: usize, b: usize| Markup::trusted(format!("{} / {}", count(a), count(b)));
        datasets.push(vec![
            Markup::trusted(format!(
                "[{}]({}/overview.md)",
                Markup::text(&d.name),
                v.slug()
            )),
            Markup::join(&protocols, &cat.text("list.sep")),
            labels::host(cat, d, &Markup::default()),
            of(r.runs_passed, r.runs),
            of(r.configurations_valid, r.configurations),
            Markup::text(recorded.get(..19).unwrap_or(recorded)),
        ]);
    }
    let model = IndexPage {
        datasets,
        methodology: cat.fill(
            "index.methodology",
            &[("link", &Markup::trusted("methodology.md"))],
        ),
    };
    PageSpec::new(
        format!("{}/index", cat.code),
        "index.md",
        cat.text("index.title"),
        &model,
        Vec::new(),
    )
}
