//! Analysis, computed once for every output: per configuration the aggregate of its runs
//! ([`aggregate`]), per load the IO-model ranking ([`rank`]), protocol-against-protocol
//! ratios ([`ratios`]), backend-against-backend pairs ([`backends`]), the UDP loss and invariant accounting ([`udp`]), the dimension
//! findings ([`findings`]), hosts set against each other ([`hosts`]), where threads ran ([`placement`]), latency against offered load ([`load_curve`]), a fleet's generators and scaling ([`fleet`]), and the
//! validation report. Pages and summaries only select and
//! arrange what is here.

pub mod across;
pub mod aggregate;
pub mod agreement;
pub mod backends;
pub mod compare;
pub mod decision;
pub mod findings;
pub mod fleet;
pub mod history;
pub mod hosts;
pub mod load_curve;
pub mod loads;
pub mod measured;
pub mod method;
pub mod path_tools;
pub mod placement;
pub mod quic;
pub mod rank;
pub mod ratios;
pub mod recommend;
pub mod udp;

use polars::prelude::PolarsResult;

use crate::model::Dataset;
use crate::validate::{self, DatasetReport};
use aggregate::Configuration;
use rank::Ranking;

/// Everything computed from the datasets.
pub struct Analysis {
    /// The comparison rules every verdict was decided with (stated on the pages); a dataset
    /// measured until decided is judged by its own ([`Analysis::rules_of`]).
    pub rules: decision::Rules,
    /// Each dataset's rules, by name.
    pub dataset_rules: std::collections::BTreeMap<String, decision::Rules>,
    /// Every closed-loop configuration of every dataset, in canonical order.
    pub configurations: Vec<Configuration>,
    /// Every latency-against-load curve (the open-loop configurations) of every dataset.
    pub curves: Vec<load_curve::LoadCurve>,
    /// Every ranked load of every dataset.
    pub rankings: Vec<Ranking>,
    /// One entry per dataset, in the order of the datasets.
    pub datasets: Vec<DatasetAnalysis>,
    /// Series of datasets of one host and matrix, each step compared; empty until
    /// [`Analysis::with_history`] (only the site shows it).
    pub history: Vec<history::Series>,
    /// Each other host against the first dataset's host, through one pair of datasets.
    pub hosts: Vec<hosts::HostPair>,
    /// What the datasets answer, each question from its best witness (the index's summary).
    pub answers: Vec<across::Answer>,
}

/// What is computed per dataset.
pub struct DatasetAnalysis {
    pub report: DatasetReport,
    pub ratios: Vec<ratios::RatioRow>,
    pub backends: Vec<backends::BackendRow>,
    pub udp: udp::UdpAnalysis,
    /// QUIC: each protocol against its baselines, and quinn's counters per configuration.
    pub quic: quic::QuicAnalysis,
    pub findings: Vec<findings::Finding>,
    /// Per load with several valid IO models, what the ranges decide (in ranking order).
    pub io_models: Vec<findings::io_model::IoModelFinding>,
    /// Open loop: per protocol, payload and arrival with several curves, which curve's knee
    /// comes latest (indices into the dataset's curves, in [`Analysis::curves`] order).
    pub knees: Vec<findings::knees::KneeFinding>,
    /// UDP buffer isolation: loss against the server's receive buffer, when cases set one.
    pub udp_buffers: Option<findings::udp_buffers::BufferFinding>,
    /// What to use for each load class, when the dataset offers several choices.
    pub recommendations: Vec<recommend::Recommendation>,
    /// Each protocol at the main load, choice against choice (the key results where the
    /// dataset compares backends or servers rather than IO models).
    pub main_load_choices: Vec<recommend::StratumAdvice>,
    /// A fleet dataset: its generators, their start and clocks, and how the merged rate
    /// went with their number.
    pub fleet: Option<fleet::FleetAnalysis>,
}

impl Analysis {
    /// Analyses `datasets` (validated by the reader) with the default comparison rules.
    pub fn of(datasets: &[Dataset]) -> PolarsResult<Self> {
        Self::with_rules(datasets, decision::Rules::default())
    }

    /// Analyses `datasets`, deciding every comparison with `rules`.
    pub fn with_rules(datasets: &[Dataset], rules: decision::Rules) -> PolarsResult<Self> {
        let all = aggregate::configurations(datasets)?;
        // Datasets with other tools' runs have a page of their own, which shows their
        // open-loop loads beside the closed ones; they witness none of echomark's answers.
        let imported: std::collections::BTreeSet<&str> = datasets
            .iter()
            .filter(|d| d.has_imported())
            .map(|d| d.name.as_str())
            .collect();
        let is_imported = |c: &Configuration| imported.contains(c.dataset.as_str());
        // Open-loop configurations are points of curves; every other page and ranking is
        // about closed-loop throughput and latency. Imported datasets keep theirs: their
        // page lists every load a tool measured.
        let (imported_configs, own): (Vec<Configuration>, Vec<Configuration>) =
            all.into_iter().partition(is_imported);
        let curves = load_curve::curves(&own);
        // echomark's closed-loop configurations first, then the imported ones: the first
        // part is what rankings, answers and host pairs weigh (pages select by dataset).
        let mut configurations: Vec<Configuration> =
            own.into_iter().filter(|c| c.key.load.is_none()).collect();
        let measured_count = configurations.len();
        configurations.extend(imported_configs);
        let measured = &configurations[..measured_count];
        let dataset_rules: std::collections::BTreeMap<String, decision::Rules> = datasets
            .iter()
            .map(|d| (d.name.clone(), rules.for_dataset(d)))
            .collect();
        let rules_of = |name: &str| dataset_rules.get(name).copied().unwrap_or(rules);
        let rankings = rank::rankings(measured, &rules_of);
        let per_dataset: Vec<DatasetAnalysis> = datasets
            .iter()
            .map(|d| {
                let mine: Vec<&Configuration> = configurations
                    .iter()
                    .filter(|c| c.dataset == d.name)
                    .collect();
                let ranked: Vec<&Ranking> = rankings
                    .iter()
                    .filter(|r| r.group.dataset == d.name)
                    .collect();
                let cpus = placement::io_cpus(d);
                let own_curves: Vec<&load_curve::LoadCurve> =
                    curves.iter().filter(|c| c.dataset == d.name).collect();
                let udp = udp::analyse(d, &mine);
                let rules = rules_of(&d.name);
                DatasetAnalysis {
                    io_models: findings::io_model::io_model_findings(&ranked, &mine, cpus, &rules),
                    report: validate::report(d),
                    ratios: ratios::ratio_rows(&mine),
                    backends: backends::backend_rows(&mine, &rules),
                    knees: findings::knees::knee_findings(&own_curves),
                    udp_buffers: findings::udp_buffers::buffer_finding(&udp.loss),
                    quic: quic::analyse(d, &mine, &rules),
                    // Where other load generators took turns with echomark's client, the
                    // choice is the client to measure with.
                    recommendations: if d.has_imported() {
                        recommend::clients(&mine, &rules)
                    } else {
                        recommend::recommendations(&mine, &rules)
                    },
                    main_load_choices: recommend::main_load_choices(&mine, &rules),
                    fleet: fleet::analyse(d, &mine, &rules),
                    udp,
                    findings: findings::findings(&mine),
                }
            })
            .collect();
        Ok(Self {
            answers: across::answers(datasets, &per_dataset, measured, &rules_of),
            rules,
            dataset_rules,
            hosts: hosts::pairs(datasets, measured),
            configurations,
            curves,
            rankings,
            datasets: per_dataset,
            history: Vec::new(),
        })
    }

    /// The rules the dataset called `name` is judged by.
    pub fn rules_of(&self, name: &str) -> decision::Rules {
        self.dataset_rules.get(name).copied().unwrap_or(self.rules)
    }

    /// Adds the series of `datasets` (the same datasets this analysis was made of).
    pub fn with_history(mut self, datasets: &[Dataset]) -> Result<Self, crate::Error> {
        self.history = history::series(datasets)?;
        Ok(self)
    }
}
