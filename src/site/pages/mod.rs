//! Page models, one module per page. Each page is a typed `Serialize` struct holding every
//! number and label the page shows, already in the page's language; its template only
//! arranges it. [`DatasetView`] selects one dataset's share of the analysis. Every kind of
//! page is registered in one table, [`registry::PAGES`]: its templates and how its pages
//! are built.

pub mod answers;
pub mod changes;
pub mod charts;
pub mod dimensions;
pub mod explore;
pub mod failures;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod fleet;
pub mod hosts;
pub mod imported;
pub mod index;
pub mod key_results;
pub mod lists;
pub mod load;
pub mod methodology;
pub mod overview;
pub mod pairs;
pub mod protocol;
pub mod provenance;
pub mod quic_report;
pub mod recommend;
pub mod registry;
pub mod udp_report;

use std::collections::BTreeSet;

use echomark_archive::Protocol;

pub use super::subject::Subject;

use super::labels;
use super::markup::Markup;
use crate::analysis::aggregate::Configuration;
use crate::analysis::rank::Ranking;
use crate::analysis::{Analysis, DatasetAnalysis};
use crate::model::Dataset;

/// A chart to write next to a page.
#[derive(Debug)]
pub struct ChartFile {
    /// Relative to the page's folder (`charts/tcp-tokio-work0-throughput.svg`).
    pub rel: String,
    pub svg: String,
    /// The same chart drawn for a phone's width, shown in its place on narrow screens (in
    /// the HTML only; the Markdown links the file).
    pub phone: Option<String>,
}

/// An image a page shows: its title (the alt text) and its path.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Image {
    pub title: Markup,
    /// A path echomark built from sanitised names.
    pub src: Markup,
}

impl Image {
    /// An image of `title` at `src`.
    pub fn new(title: Markup, src: &str) -> Self {
        Self {
            title,
            src: Markup::trusted(src),
        }
    }
}

/// A page ready to render: where it goes, its template and model, and its charts.
pub struct PageSpec {
    /// Relative to the site root, without extension, e.g. `en/epyc/tcp`.
    pub stem: String,
    pub template: &'static str,
    pub title: Markup,
    pub context: minijinja::Value,
    pub charts: Vec<ChartFile>,
    /// HTML echomark wrote (never data) that follows the page's body in its HTML only: the
    /// explorer's container and scripts.
    pub app: Option<String>,
}

impl PageSpec {
    /// A page whose model is `model`.
    pub fn new(
        stem: String,
        template: &'static str,
        title: Markup,
        model: &impl serde::Serialize,
        charts: Vec<ChartFile>,
    ) -> Self {
        Self {
            stem,
            template,
            title,
            context: minijinja::Value::from_serialize(model),
            charts,
            app: None,
        }
    }
}

/// One dataset's share of the analysis.
pub struct DatasetView<'a> {
    pub dataset: &'a Dataset,
    pub configs: Vec<&'a Configuration>,
    pub rankings: Vec<&'a Ranking>,
    /// The dataset's latency-against-load curves (open-loop configurations).
    pub curves: Vec<&'a crate::analysis::load_curve::LoadCurve>,
    pub analysis: &'a DatasetAnalysis,
    /// The rules every comparison of the site is decided with.
    pub rules: crate::analysis::decision::Rules,
}

impl<'a> DatasetView<'a> {
    /// The view of `dataset`, the `index`-th of the analysed datasets.
    pub fn new(dataset: &'a Dataset, all: &'a Analysis, index: usize) -> Self {
        Self {
            dataset,
            configs: all
                .configurations
                .iter()
                .filter(|c| c.dataset == dataset.name)
                .collect(),
            rankings: all
                .rankings
                .iter()
                .filter(|r| r.group.dataset == dataset.name)
                .collect(),
            curves: all
                .curves
                .iter()
                .filter(|c| c.dataset == dataset.name)
                .collect(),
            analysis: &all.datasets[index],
            rules: all.rules_of(&dataset.name),
        }
    }

    /// The dataset's rankings, protocols in page order; within a protocol they keep their
    /// load order (the sort is stable).
    pub fn rankings_in_protocol_order(&self) -> Vec<&'a Ranking> {
        let mut rankings = self.rankings.to_vec();
        rankings.sort_by_key(|r| crate::site::labels::protocol_rank(r.group.protocol));
        rankings
    }

    /// The configurations of one protocol, whichever program measured them.
    pub fn configs_of_protocol(&self, protocol: Protocol) -> Vec<&'a Configuration> {
        self.configs
            .iter()
            .copied()
            .filter(|c| c.key.protocol == protocol)
            .collect()
    }

    /// The configurations one protocol page shows.
    pub fn configs_of(&self, subject: Subject) -> Vec<&'a Configuration> {
        self.configs
            .iter()
            .copied()
            .filter(|c| Subject::of(&c.key) == subject)
            .collect()
    }

    /// The dataset's protocols, in page order.
    pub fn protocols(&self) -> Vec<Protocol> {
        let present: BTreeSet<Protocol> = self.configs.iter().map(|c| c.key.protocol).collect();
        let mut out: Vec<Protocol> = present.into_iter().collect();
        out.sort_by_key(|p| labels::protocol_rank(*p));
        out
    }

    /// The dataset's protocol pages, in page order.
    pub fn subjects(&self) -> Vec<Subject> {
        let present: BTreeSet<Subject> = self.configs.iter().map(|c| Subject::of(&c.key)).collect();
        let mut out: Vec<Subject> = present.into_iter().collect();
        out.sort_by_key(|s| s.rank());
        out
    }

    /// The dataset's folder name on the site.
    pub fn slug(&self) -> String {
        dataset_slug(self.dataset)
    }
}

/// The dataset's folder name on the site.
pub fn dataset_slug(d: &Dataset) -> String {
    crate::output::dataset_folder(&d.name)
}

/// A run's `once` command line as a reader would type it (the runner's absolute path
/// replaced by its name); `None` for runs not started through `once`.
pub fn once_command(command: &str) -> Option<String> {
    command
        .split_once(" once ")
        .map(|(_, rest)| format!("echomark-runner once {rest}"))
}
