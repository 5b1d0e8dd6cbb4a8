//! Small datasets built in memory and analysed as the site analyses them, for the page
//! models' unit tests.

use echomark_archive::{IoModel, Protocol};

use super::DatasetView;
use crate::analysis::Analysis;
use crate::model::{Dataset, Format, Run};
use crate::site::i18n::{catalogs, Catalog};

/// The English catalog.
pub fn english() -> Catalog {
    catalogs().swap_remove(0)
}

/// Three passing runs of one configuration (1,024 B, 16 clients × window 1, no work): of
/// `protocol` on tokio with `model` × `threads`, at `rate` round trips per second ±0.5 %.
pub fn runs(protocol: Protocol, model: IoModel, threads: u64, rate: f64) -> Vec<Run> {
    [1.0, 1.005, 0.995]
        .iter()
        .enumerate()
        .map(|(i, spread)| {
            let mut r = crate::model::tests::run(protocol, i as u64 + 1);
            (r.key.io_model, r.key.io_threads) = (model, threads);
            r.roundtrips_per_second = Some(rate * spread);
            r
        })
        .collect()
}

/// A dataset of one complete archive, recorded on a 4-CPU machine called `host`, with
/// `runs` (numbered in order).
pub fn dataset(name: &str, host: &str, runs: Vec<Run>) -> Dataset {
    let path = std::path::Path::new("a.json");
    let mut file = crate::read::file_record(path, Format::Echomark, None);
    file.complete = true;
    (file.seconds, file.warmup, file.repetitions) = (1.0, 0.5, 3);
    file.runs = runs.len();
    file.recorded_at_utc = Some("2026-01-02T03:04:05Z".into());
    file.host.name = Some(host.into());
    file.host.cpu = Some(format!("{host} CPU"));
    file.host.logical_cpus = Some(4);
    let runs = runs
        .into_iter()
        .enumerate()
        .map(|(i, r)| Run { index: i, ..r })
        .collect();
    Dataset {
        name: name.into(),
        files: vec![file],
        runs,
        warnings: Vec::new(),
    }
}

/// Datasets and their analysis: what the site's pages are built from.
pub struct Analysed {
    pub datasets: Vec<Dataset>,
    pub analysis: Analysis,
}

impl Analysed {
    /// `datasets` analysed with the default rules.
    pub fn of(datasets: Vec<Dataset>) -> Self {
        let analysis = Analysis::of(&datasets).expect("the test datasets analyse");
        Self { datasets, analysis }
    }

    /// Each dataset's view, as the site makes them.
    pub fn views(&self) -> Vec<DatasetView<'_>> {
        self.datasets
            .iter()
            .enumerate()
            .map(|(i, d)| DatasetView::new(d, &self.analysis, i))
            .collect()
    }
}
