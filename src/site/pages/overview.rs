//! A dataset's overview page: test conditions, a fleet's generators and scaling, key results
//! per backend, the main charts, the choosing-an-IO-model table, excluded configurations,
//! toolchain, raw data and scope.

use echomark_archive::AddressFamily;
use serde::Serialize;

use super::answers;
use super::failures::{failed_table, raw_reasons};
use super::provenance::{host_table, toolchain};
use super::recommend::Section;
use super::{once_command, ChartFile, DatasetView, Image, PageSpec};
use crate::model::Dataset;
use crate::reproduce::commands;
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::Markup;
use crate::site::table::{Align, Table};

mod main_load;
mod threads;
use main_load::main_load_section;
use threads::placement_line;

/// The model of a dataset's overview page: every number and label it shows, in the page's
/// language.
#[derive(Debug, Serialize)]
pub struct OverviewPage {
    pub title: Markup,
    /// How many runs and configurations, over which address family, and how many passed.
    pub lead: Markup,
    /// What to use for each load class; absent when the dataset offers one choice.
    pub recommend: Option<Section>,
    /// What a dataset with one choice measured, load by load.
    pub measured: Option<Section>,
    /// Every configuration of the dataset in the explorer.
    pub explore: Markup,
    /// What the CPU column covers.
    pub cpu_note: Markup,
    /// The machine the dataset was measured on.
    pub host: Table,
    /// Seconds per run, warm-up and repetitions.
    pub settings_line: Markup,
    /// What the main load is (empty when the dataset has none).
    pub main_load: Markup,
    /// The CPUs client and server ran on, as the runs recorded them.
    pub placement: Markup,
    /// What one CPU is of the machine.
    pub cpu_share: Markup,
    /// One bullet per load at the main load: the IO-model finding, or the choices.
    pub key_results: Vec<Markup>,
    /// The load the key results were measured at.
    pub key_caveat: Markup,
    pub throughput_charts: Vec<Image>,
    pub p99_charts: Vec<Image>,
    /// Absent when every load was measured with one IO model: there is nothing to choose.
    pub choosing: Option<Table>,
    /// The comparison rule, stated once on the page where it first decides: after the
    /// answer when backends or servers are compared, else beside the choosing table.
    pub rule_in_answer: Option<Markup>,
    pub rule_in_choosing: Option<Markup>,
    /// Said instead of key results when every load was measured with one IO model.
    pub one_model: Option<Markup>,
    /// Each IO model, the workloads it suits, what to watch for.
    pub guide: Table,
    /// Each other backend (or server) against the base one, when the dataset has several.
    pub backends: Vec<answers::BackendsSection>,
    /// Open loop: per protocol, whose knee comes latest (or that none is distinguishable).
    pub knee_answers: Vec<Markup>,
    /// What this dataset answers together with another (a veth dataset against its loopback
    /// companion), as the index says it.
    pub across: Vec<Markup>,
    /// UDP buffer isolation: loss against the server's receive buffer.
    pub buffer_answer: Option<answers::BufferAnswer>,
    /// A fleet dataset: its generators, their start and clocks, and the merged rate by
    /// generator count with its chart.
    pub fleet: Option<super::fleet::FleetSection>,
    /// When the IO model is all the dataset varies: in how many loads one model wins.
    pub io_model_answer: Option<Markup>,
    /// A link to each protocol page of the dataset.
    pub protocols: Vec<ProtocolLink>,
    /// Present when the dataset has arknet's native program, whose RTT is per batch.
    pub batch_rtt_caveat: Option<Markup>,
    pub summary_json: Markup,
    pub summary_csv: Markup,
    /// The configurations excluded, with why.
    pub failed: Table,
    pub raw_reasons: Vec<Markup>,
    pub toolchain: Table,
    pub metrics_text: Markup,
    pub source_hash: Markup,
    /// One line per raw archive: its published file, runs, recording time and build hash.
    pub raw_files: Vec<Markup>,
    /// The commands that reproduce the dataset.
    pub commands: Option<Markup>,
    /// What to build first, with a link to the README's install section.
    pub commands_intro: Markup,
    /// The command of one run.
    pub one_run: Option<Markup>,
    /// The first validation notes.
    pub warnings: Vec<Markup>,
    pub scope_text: Markup,
    /// The main charts' files (written beside the page; not part of its template's
    /// context).
    #[serde(skip)]
    pub charts: Vec<ChartFile>,
}

/// A link to one protocol page of the dataset.
#[derive(Debug, Serialize)]
pub struct ProtocolLink {
    pub label: Markup,
    pub link: Markup,
}

/// How many validation notes the page lists.
const WARNINGS_SHOWN: usize = 20;

/// The choosing-an-IO-model table: per load, the fastest valid model.
fn choosing(cat: &Catalog, view: &DatasetView) -> Table {
    use Align::{Default as L, Right as R};
    let mut table = Table::new(
        cat.list("overview.choose_columns", &[]),
        &[L, L, L, L, L, R],
    );
    let dash = || Markup::trusted("—");
    let decided = |d: Option<&echomark_decide::Decision>| {
        d.map_or_else(dash, |d| {
            labels::decision(cat, d, echomark_archive::Metric::RoundtripsPerSecond)
        })
    };
    for r in view.rankings_in_protocol_order() {
        let g = &r.group;
        let mut load = labels::load(cat, &r.best_key());
        if g.handler_work > 0 {
            load.push(&Markup::trusted(", "));
            load.push(&labels::work(cat, g.handler_work));
        }
        let vs_base = decided(r.against_baseline.as_ref());
        let mut what = labels::protocol(cat, g.protocol);
        what.push(&Markup::trusted(" / "));
        what.push(&labels::backend(cat, &g.backend));
        let best = labels::topology(cat, &g.backend, r.best.io_model, r.best.io_threads);
        let fastest = match &r.runner_up {
            Some(second) if !r.best_is_decided() => cat.fill(
                "overview.no_winner",
                &[
                    ("best", &best),
                    (
                        "runner_up",
                        &labels::topology(cat, &g.backend, second.io_model, second.io_threads),
                    ),
                ],
            ),
            _ => best,
        };
        table.push(vec![
            what,
            load,
            fastest,
            vs_base,
            decided(r.against_runner_up()),
            if r.excluded.is_empty() {
                dash()
            } else {
                Markup::trusted(r.excluded.len().to_string())
            },
        ]);
    }
    table
}

/// The seed's qualitative table: each IO model, the workloads it suits, what to watch for.
fn guide(cat: &Catalog) -> Table {
    let mut table = Table::new(cat.list("overview.guide_columns", &[]), &[]);
    let rows = cat
        .tree_value("overview.guide_rows")
        .and_then(|v| v.as_array())
        .cloned()
        .unwrap_or_default();
    for row in rows {
        let cells = row.as_array().cloned().unwrap_or_default();
        table.push(
            cells
                .iter()
                .filter_map(|c| c.as_str().map(Markup::trusted))
                .collect(),
        );
    }
    table
}

/// The overview page's stem: where a link to the dataset leads.
pub fn stem(cat: &Catalog, view: &DatasetView) -> String {
    format!("{}/{}/overview", cat.code, view.slug())
}

/// The opening sentence: how many runs and configurations, over which address family, and
/// how many passed.
fn lead(cat: &Catalog, view: &DatasetView) -> Markup {
    let d = view.dataset;
    let r = &view.analysis.report;
    let family = match d.files.first().map(|f| f.address_family) {
        Some(AddressFamily::Ipv6) => "IPv6",
        _ => "IPv4",
    };
    let count = |n: usize| labels::count(n as u64);
    cat.fill(
        &labels::for_path("overview.lead", d),
        &[
            ("runs", &count(r.runs)),
            ("family", &Markup::trusted(family)),
            ("passed", &count(r.runs_passed)),
            ("configs", &count(r.configurations)),
            ("valid", &count(r.configurations_valid)),
        ],
    )
}

/// What one CPU is of the machine (100 % = one of `cpus` logical CPUs).
fn cpu_share(cat: &Catalog, cpus: Option<u64>) -> Markup {
    match cpus {
        Some(n) => cat.fill(
            "overview.cpu_share",
            &[
                ("cpus", &Markup::trusted(n.to_string())),
                (
                    "share",
                    &Markup::trusted(format!("{:.2}", 100.0 / n as f64)),
                ),
            ],
        ),
        None => cat.text("overview.cpu_share_unknown"),
    }
}

/// One line per raw archive: its published file, runs, recording time and build hash.
fn raw_files(cat: &Catalog, view: &DatasetView, not_recorded: &Markup) -> Vec<Markup> {
    let d = view.dataset;
    let slug = view.slug();
    d.files
        .iter()
        .map(|f| {
            cat.fill(
                "overview.file_line",
                &[
                    (
                        "file",
                        &Markup::text(&crate::site::published_archive_name(&f.name)),
                    ),
                    (
                        "link",
                        &Markup::trusted(format!(
                            "../../data/{slug}/{}",
                            crate::site::published_archive_name(&f.name)
                        )),
                    ),
                    ("runs", &labels::count(f.runs as u64)),
                    (
                        "recorded",
                        &f.recorded_at_utc
                            .as_deref()
                            .map_or(not_recorded.clone(), Markup::text),
                    ),
                    (
                        "hash",
                        &f.executable_sha256
                            .as_deref()
                            .map_or(not_recorded.clone(), Markup::text),
                    ),
                ],
            )
        })
        .collect()
}

/// A link to each protocol page of the dataset.
fn protocol_links(cat: &Catalog, view: &DatasetView) -> Vec<ProtocolLink> {
    view.subjects()
        .into_iter()
        .map(|s| ProtocolLink {
            label: labels::subject(cat, s),
            link: Markup::trusted(format!("{}.md", s.slug())),
        })
        .collect()
}

/// A dataset's overview page.
pub fn page(cat: &Catalog, view: &DatasetView, across: Vec<Markup>) -> PageSpec {
    let mut model = model(cat, view, across);
    let charts = std::mem::take(&mut model.charts);
    let title = model.title.clone();
    PageSpec::new(stem(cat, view), "overview.md", title, &model, charts)
}

/// Seconds per run, warm-up and repetitions.
fn settings_line(cat: &Catalog, d: &Dataset) -> Markup {
    let [seconds, warmup, repetitions] = labels::timing(d);
    cat.fill(
        "overview.settings_line",
        &[
            ("seconds", &seconds),
            ("warmup", &warmup),
            ("repetitions", &repetitions),
        ],
    )
}

/// The source hash the first archive recorded.
fn source_hash(cat: &Catalog, d: &Dataset, not_recorded: &Markup) -> Markup {
    cat.fill(
        "overview.source_hash",
        &[(
            "hash",
            &d.files
                .first()
                .and_then(|f| f.source_sha256.as_deref())
                .map_or(not_recorded.clone(), Markup::text),
        )],
    )
}

/// What the dataset does not say, for a machine of `cpus` logical CPUs.
fn scope_text(cat: &Catalog, d: &Dataset, cpus: Option<u64>, not_recorded: &Markup) -> Markup {
    cat.fill(
        &labels::for_path("overview.scope_text", d),
        &[(
            "cpus",
            &cpus.map_or(not_recorded.clone(), |n| Markup::trusted(n.to_string())),
        )],
    )
}

/// How to reproduce the dataset: its commands, what to build first, one run's command.
fn reproduction(cat: &Catalog, d: &Dataset) -> (Option<Markup>, Markup, Option<Markup>) {
    let commands = commands(d);
    (
        (!commands.is_empty()).then(|| Markup::code_block("sh", &commands)),
        cat.fill(
            "overview.commands",
            &[("install", &Markup::trusted(crate::reproduce::INSTALL_URL))],
        ),
        d.runs
            .first()
            .and_then(|r| once_command(&r.command))
            .map(|c| Markup::code_block("sh", &[c])),
    )
}

/// The model of a dataset's overview page; `across` is what the dataset answers together
/// with another, as the index says it.
pub fn model(cat: &Catalog, view: &DatasetView, across: Vec<Markup>) -> OverviewPage {
    let d = view.dataset;
    let slug = view.slug();
    let not_recorded = cat.text("overview.not_recorded");
    let cpus = d.host().and_then(|h| h.logical_cpus).filter(|n| *n > 0);
    let main = main_load_section(cat, view).unwrap_or_default();
    let several_models = view.rankings.iter().any(|r| r.candidates >= 2);
    let measured = super::recommend::measured_section(cat, view);
    let recommend = super::recommend::section(cat, view);
    let one_model = main.key_results.is_empty().then(|| {
        cat.text(if measured.is_some() {
            "recommend.key_measured"
        } else {
            "overview.one_model"
        })
    });
    let backends = answers::backends_sections(cat, view);
    let mut fleet = super::fleet::section(cat, view);
    let mut charts = main.charts;
    charts.extend(
        fleet
            .as_mut()
            .map_or_else(Vec::new, |f| std::mem::take(&mut f.charts)),
    );
    let rule = labels::rule(cat, &view.rules, "../");
    let (commands, commands_intro, one_run) = reproduction(cat, d);
    OverviewPage {
        // The recommendation's intro states the rule in brief; the full paragraph goes
        // where the first decision is, only when there is no recommendation.
        rule_in_answer: (recommend.is_none() && !backends.is_empty()).then(|| rule.clone()),
        rule_in_choosing: (recommend.is_none() && backends.is_empty() && several_models)
            .then(|| rule.clone()),
        cpu_note: labels::cpu_note(cat, d),
        title: cat.fill(
            &labels::for_path("overview.title", d),
            &[("dataset", &d.name)],
        ),
        lead: lead(cat, view),
        recommend,
        measured,
        explore: labels::explore_link(cat, "explore.this_dataset", "../", &[("ds", &d.name)]),
        host: host_table(cat, d, &not_recorded),
        settings_line: settings_line(cat, d),
        main_load: main.text,
        placement: placement_line(cat, d),
        cpu_share: cpu_share(cat, cpus),
        key_results: main.key_results,
        key_caveat: main.caveat,
        throughput_charts: main.throughput,
        p99_charts: main.p99,
        choosing: several_models.then(|| choosing(cat, view)),
        one_model,
        backends,
        io_model_answer: answers::io_model_answer(cat, view),
        knee_answers: answers::knee_answers(cat, view),
        across,
        buffer_answer: answers::buffer_answer(cat, view),
        fleet,
        guide: guide(cat),
        protocols: protocol_links(cat, view),
        batch_rtt_caveat: view
            .subjects()
            .contains(&super::Subject::NativeTcp)
            .then(|| cat.text("subject.native_overview_caveat")),
        summary_json: Markup::trusted(format!("../../data/{slug}/summary.json")),
        summary_csv: Markup::trusted(format!("../../data/{slug}/summary.csv")),
        failed: failed_table(cat, view, None),
        raw_reasons: raw_reasons(view, None),
        toolchain: toolchain(cat, d, &not_recorded),
        metrics_text: cat.fill(
            "overview.metrics_text",
            &[("link", &Markup::trusted("../methodology.md"))],
        ),
        source_hash: source_hash(cat, d, &not_recorded),
        raw_files: raw_files(cat, view, &not_recorded),
        commands,
        commands_intro,
        one_run,
        warnings: d
            .warnings
            .iter()
            .take(WARNINGS_SHOWN)
            .map(|w| Markup::text(&w.to_string()))
            .collect(),
        scope_text: scope_text(cat, d, cpus, &not_recorded),
        charts,
    }
}

#[cfg(test)]
mod tests;
