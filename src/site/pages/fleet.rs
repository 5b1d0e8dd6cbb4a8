//! The fleet section of a fleet dataset's overview: its generators (hosts and CPUs), how
//! closely they started and how well their clocks agreed, and per load the merged rate at
//! each generator count, its scaling chart and the comparison rule's word on the most
//! generators against the fewest. Every figure and verdict comes from the analysis
//! ([`crate::analysis::fleet`]); this module only words and draws it.

use serde::Serialize;

use super::charts as chart_model;
use super::{ChartFile, DatasetView, Image};
use crate::analysis::aggregate::Stat;
use crate::analysis::fleet::{FleetAnalysis, GeneratorCpus, Point, Scaling};
use crate::format;
use crate::output::safe_name;
use crate::site::charts::{self, Cell, LineChart};
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::Markup;
use crate::site::table::{Align, Table};

/// The section's model.
#[derive(Debug, Serialize)]
pub struct FleetSection {
    /// The fleet in one sentence: its size, the coordinator, the generator counts.
    pub intro: Markup,
    /// One row per generator: its index, host, logical CPUs and its client's CPUs.
    pub generators: Table,
    /// The start skew: median and worst, with the uncertainty.
    pub skew: Markup,
    /// The clock offsets and drift, with their uncertainties.
    pub clocks: Markup,
    /// Per load: the merged figures by generator count, the chart, the rule's word.
    pub loads: Vec<FleetLoad>,
    /// Where the generators' clients ran (that they shared one CPU, where they did).
    pub cpus: Markup,
    /// The scaling charts' files (written beside the page).
    #[serde(skip)]
    pub charts: Vec<ChartFile>,
}

/// One load of the fleet: its figures by generator count.
#[derive(Debug, Serialize)]
pub struct FleetLoad {
    /// The load, named only where the dataset has several.
    pub heading: Option<Markup>,
    pub table: Table,
    pub chart: Image,
    /// The merged rate at the most generators against the fewest, as the rule decided it.
    pub verdict: Option<Markup>,
}

/// The fleet section of `view`'s overview; `None` for a dataset without fleet runs.
pub fn section(cat: &Catalog, view: &DatasetView) -> Option<FleetSection> {
    let fleet = view.analysis.fleet.as_ref()?;
    let several = fleet.scaling.len() > 1;
    let mut charts = Vec::new();
    let loads = fleet
        .scaling
        .iter()
        .map(|s| {
            let (chart, file) = scaling_chart(cat, view, s);
            charts.push(file);
            FleetLoad {
                heading: several.then(|| load_name(cat, s)),
                table: points_table(cat, &s.points),
                chart,
                verdict: s.decision.map(|d| {
                    cat.fill(
                        "fleet.verdict",
                        &[
                            ("rule", &labels::rule_short(cat, &view.rules, "../")),
                            ("subject", &labels::count(d.subject)),
                            ("base", &labels::count(d.base)),
                            (
                                "decision",
                                &labels::decision(
                                    cat,
                                    &d.decision,
                                    echomark_archive::Metric::RoundtripsPerSecond,
                                ),
                            ),
                        ],
                    )
                }),
            }
        })
        .collect();
    Some(FleetSection {
        intro: intro(cat, fleet),
        generators: generators_table(cat, fleet),
        skew: cat.fill(
            "fleet.skew",
            &[
                ("samples", &labels::count(fleet.skew.samples as u64)),
                ("median", &micro(fleet.skew.median_us)),
                ("worst", &micro(fleet.skew.worst_us)),
                ("uncertainty", &micro(fleet.skew.uncertainty_us)),
            ],
        ),
        clocks: clocks(cat, fleet),
        loads,
        cpus: cpus(cat, &fleet.cpus),
        charts,
    })
}

/// A time or drift to three significant digits, as the pages give latencies.
fn micro(v: f64) -> Markup {
    labels::number(format::latency(v))
}

fn intro(cat: &Catalog, fleet: &FleetAnalysis) -> Markup {
    let size = fleet.size.unwrap_or(fleet.generators.len() as u64);
    let coordinators: Vec<Markup> = fleet
        .coordinator_hosts
        .iter()
        .map(|h| Markup::text(h))
        .collect();
    let counts: Vec<Markup> = fleet.counts.iter().map(|n| labels::count(*n)).collect();
    cat.fill(
        "fleet.intro",
        &[
            ("size", &labels::count(size)),
            ("coordinator", &labels::join_list(cat, &coordinators)),
            ("counts", &labels::join_list(cat, &counts)),
        ],
    )
}

/// One row per generator: index, host, logical CPUs, the CPUs its client was allowed on.
fn generators_table(cat: &Catalog, fleet: &FleetAnalysis) -> Table {
    use Align::{Default as L, Right as R};
    let mut table = Table::new(cat.list("fleet.generator_columns", &[]), &[R, L, R, L]);
    let sep = Markup::trusted(", ");
    for g in &fleet.generators {
        let hosts: Vec<Markup> = g.hosts.iter().map(|h| Markup::text(h)).collect();
        let logical: Vec<Markup> = g.logical_cpus.iter().map(|n| labels::count(*n)).collect();
        let cpus: Vec<Markup> = g
            .client_cpus
            .iter()
            .map(|l| Markup::text(&l.to_string()))
            .collect();
        table.push(vec![
            labels::count(g.index),
            Markup::join(&hosts, &sep),
            Markup::join(&logical, &sep),
            if cpus.is_empty() {
                cat.text("overview.not_recorded")
            } else {
                Markup::join(&cpus, &sep)
            },
        ]);
    }
    table
}

fn clocks(cat: &Catalog, fleet: &FleetAnalysis) -> Markup {
    let c = &fleet.clocks;
    cat.fill(
        "fleet.clocks",
        &[
            ("offset", &micro(c.offset_us.abs())),
            ("offset_uncertainty", &micro(c.offset_uncertainty_us)),
            ("drift", &micro(c.drift_ppm.abs())),
            ("drift_uncertainty", &micro(c.drift_uncertainty_ppm)),
            (
                "within",
                &cat.text(if c.within_uncertainty {
                    "fleet.clocks_within"
                } else {
                    "fleet.clocks_apart"
                }),
            ),
        ],
    )
}

/// Where the generators' clients ran, as their records say.
fn cpus(cat: &Catalog, cpus: &GeneratorCpus) -> Markup {
    let list = |l: &echomark_archive::cpus::CpuList| {
        let key = if l.len() == 1 {
            "overview.placement_cpu"
        } else {
            "overview.placement_cpus"
        };
        cat.fill(key, &[("list", &Markup::text(&l.to_string()))])
    };
    match cpus {
        GeneratorCpus::Shared { cpus } => cat.fill(
            if cpus.len() == 1 {
                "fleet.cpus_shared_one"
            } else {
                "fleet.cpus_shared"
            },
            &[("cpus", &list(cpus))],
        ),
        GeneratorCpus::SameNumbers { cpus } => {
            cat.fill("fleet.cpus_same_numbers", &[("cpus", &list(cpus))])
        }
        GeneratorCpus::Different => cat.text("fleet.cpus_different"),
        GeneratorCpus::NotRecorded => cat.text("fleet.cpus_unknown"),
    }
}

/// The load of a scaling, without its generators: "TCP / echomark-serve / 1,024 B / 16
/// clients / window 1 / 1 runtime / 1 thread".
fn load_name(cat: &Catalog, s: &Scaling) -> Markup {
    labels::configuration(cat, &s.load)
}

/// One row per generator count: the merged rate, the rate per generator and the p99.
fn points_table(cat: &Catalog, points: &[Point]) -> Table {
    use Align::Right as R;
    let mut table = Table::new(cat.list("fleet.columns", &[]), &[R, R, R, R]);
    let na = || Markup::trusted("N/A");
    for p in points {
        let rate = |s: Option<Stat>| {
            if p.valid {
                labels::range(s, 0)
            } else {
                cat.text("chart.failed")
            }
        };
        table.push(vec![
            labels::count(p.generators),
            rate(p.merged),
            rate(p.per_generator),
            p.p99_us
                .map_or_else(na, |s| labels::number(format::latency(s.median))),
        ]);
    }
    table
}

/// The scaling chart of one load: merged round trips/s and the rate per generator over the
/// generator counts, with its file.
fn scaling_chart(cat: &Catalog, view: &DatasetView, s: &Scaling) -> (Image, ChartFile) {
    let title = Markup::join(
        &[
            Markup::text(&view.dataset.name),
            cat.text("fleet.chart_title"),
            load_name(cat, s),
        ],
        &Markup::trusted(" · "),
    );
    let series = [
        cat.text("fleet.series_merged"),
        cat.text("fleet.series_each"),
    ];
    let points = series
        .iter()
        .enumerate()
        .map(|(i, name)| {
            s.points
                .iter()
                .map(|p| {
                    let group = labels::generators(cat, p.generators).to_string();
                    let stat = if i == 0 { p.merged } else { p.per_generator };
                    match stat {
                        _ if !p.valid => Cell::Failed {
                            tooltip: format!("{name}, {group}: {}", cat.raw("chart.failed")),
                        },
                        Some(stat) => Cell::Value {
                            stat,
                            tooltip: chart_model::tooltip(cat, name, &group, stat, 0),
                        },
                        None => Cell::Missing,
                    }
                })
                .collect()
        })
        .collect();
    let (y_label, _) = chart_model::axis(cat, echomark_archive::Metric::RoundtripsPerSecond);
    let chart = LineChart {
        text: chart_model::text(
            cat,
            &title,
            y_label,
            &series,
            charts::FLEET_COLOURS.to_vec(),
        ),
        x_label: cat.raw("fleet.x_label").to_string(),
        x_ticks: s
            .points
            .iter()
            .map(|p| format::count(p.generators))
            .collect(),
        points,
        marks: Vec::new(),
    };
    let k = &s.load;
    let rel = format!(
        "charts/fleet-{}.svg",
        safe_name(&format!(
            "{}-{}-{}-{}-{}x{}-{}{}-work{}",
            k.backend,
            k.implementation,
            k.protocol,
            k.payload_bytes,
            k.clients,
            k.window,
            k.io_model,
            k.io_threads,
            k.handler_work
        ))
    );
    let file = ChartFile {
        rel: rel.clone(),
        svg: charts::lines::draw(&chart),
        phone: Some(charts::lines::phone(&chart)),
    };
    (Image::new(title, &rel), file)
}

#[cfg(test)]
mod tests;
