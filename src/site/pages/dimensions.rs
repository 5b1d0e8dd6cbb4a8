//! A dataset's payload × window × IO model page for one protocol: line charts over windows
//! per backend, work level and payload, the findings, and for UDP the loss heat maps.

use std::collections::BTreeSet;

use echomark_archive::{IoModel, Metric, Protocol};
use serde::Serialize;

use super::charts as chart_model;
use super::failures::{failed_table, raw_reasons};
use super::{ChartFile, DatasetView, Image, PageSpec};
use crate::analysis::aggregate::Configuration;
use crate::format;
use crate::output::safe_name;
use crate::site::charts::{self, HeatCell, Heatmap, LineChart};
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::Markup;
use crate::site::table::Table;

/// A dimensions dataset's page: one chart section per protocol and group, the loss maps and what failed.
#[derive(Serialize)]
pub struct DimensionsPage {
    pub title: Markup,
    pub intro: Markup,
    pub methodology: Markup,
    pub sections: Vec<Section>,
    pub findings: Vec<Markup>,
    pub loss_maps: Vec<Image>,
    pub failed: Table,
    pub raw_reasons: Vec<Markup>,
}

/// One section of the page: its heading and what it shows.
#[derive(Serialize)]
pub struct Section {
    pub heading: Markup,
    pub images: Vec<Image>,
}

/// Whether `protocol` in `view` was measured over enough windows for a dimensions page.
/// Isolation cases vary the server buffer too; they have their own table in the UDP report;
/// a fleet measured at several generator counts has its scaling chart on the overview.
pub fn applies(view: &DatasetView, protocol: Protocol) -> bool {
    let mine = || view.configs.iter().filter(|c| c.key.protocol == protocol);
    let windows: BTreeSet<u64> = mine().map(|c| c.key.window).collect();
    let fleets: BTreeSet<Option<u64>> = mine().map(|c| c.key.generators).collect();
    windows.len() >= 3
        && fleets.len() <= 1
        && mine().all(|c| c.key.udp_server_recv_buffer.is_none())
}

/// A group of one backend and work level.
struct Group<'a> {
    backend: &'a str,
    work: u64,
    configs: Vec<&'a Configuration>,
    topologies: Vec<(IoModel, u64)>,
    series: Vec<Markup>,
}

impl Group<'_> {
    fn find(&self, payload: u64, window: u64, (m, t): (IoModel, u64)) -> Option<&Configuration> {
        self.configs.iter().copied().find(|c| {
            c.key.payload_bytes == payload
                && c.key.window == window
                && c.key.io_model == m
                && c.key.io_threads == t
        })
    }
}

/// The line charts of one group: throughput and p99 over windows, per payload.
fn line_charts(
    cat: &Catalog,
    dataset: &str,
    protocol: Protocol,
    g: &Group,
    windows: &[u64],
    payloads: &BTreeSet<u64>,
    charts: &mut Vec<ChartFile>,
) -> Vec<Image> {
    let label_p = labels::protocol(cat, protocol);
    let mut images = Vec::new();
    for &payload in payloads {
        for (metric, key) in [
            (Metric::RoundtripsPerSecond, "dimensions.throughput_title"),
            (Metric::RttP99Us, "dimensions.p99_title"),
        ] {
            let mut title = Markup::text(dataset);
            title.push(&Markup::trusted(" · "));
            title.push(&cat.fill(
                key,
                &[
                    ("backend", &labels::backend(cat, g.backend)),
                    ("protocol", &label_p),
                    ("payload", &labels::count(payload)),
                    ("work", &labels::work(cat, g.work)),
                ],
            ));
            let points = g
                .topologies
                .iter()
                .zip(&g.series)
                .map(|(topology, name)| {
                    windows
                        .iter()
                        .map(|w| {
                            let group = format!("window {w}");
                            let found = g.find(payload, *w, *topology);
                            chart_model::cell(cat, found, metric, name, &group)
                        })
                        .collect()
                })
                .collect();
            let (y_label, _) = chart_model::axis(cat, metric);
            let chart = LineChart {
                text: chart_model::text(
                    cat,
                    &title,
                    y_label,
                    &g.series,
                    g.topologies
                        .iter()
                        .map(|(m, t)| charts::topology_colour(*m, *t))
                        .collect(),
                ),
                x_label: cat.raw("dimensions.x_window").to_string(),
                x_ticks: windows.iter().map(u64::to_string).collect(),
                points,
                marks: Vec::new(),
            };
            let rel = format!(
                "charts/dimensions-{}-{}-work{}-{payload}-{}.svg",
                protocol.as_str(),
                safe_name(g.backend),
                g.work,
                chart_model::suffix(metric)
            );
            images.push(Image::new(title, &rel));
            charts.push(ChartFile {
                rel,
                svg: charts::lines::draw(&chart),
                phone: Some(charts::lines::phone(&chart)),
            });
        }
    }
    images
}

/// The UDP heat maps of one group: runs passed and lost datagrams per payload × window.
fn loss_maps(
    cat: &Catalog,
    view: &DatasetView,
    g: &Group,
    windows: &[u64],
    payloads: &BTreeSet<u64>,
    charts: &mut Vec<ChartFile>,
) -> Vec<Image> {
    let mut images = Vec::new();
    for (&(m, t), name) in g.topologies.iter().zip(&g.series) {
        let cells = payloads
            .iter()
            .map(|p| {
                windows
                    .iter()
                    .map(|w| match g.find(*p, *w, (m, t)) {
                        None => HeatCell {
                            failed_share: None,
                            label: "—".into(),
                            tooltip: String::new(),
                        },
                        Some(c) => {
                            let lost = view.analysis.udp.loss.get(&c.key).map_or(0, |l| l.median);
                            let passed = format!("{}/{}", c.runs_passed, c.runs);
                            let label = if lost > 0 {
                                format!("{passed} · {}", format::count(lost))
                            } else {
                                passed
                            };
                            let n = |v: u64| Markup::trusted(v.to_string());
                            let tooltip = cat.fill(
                                "dimensions.loss_tooltip",
                                &[
                                    ("payload", &labels::count(*p)),
                                    ("window", &n(*w)),
                                    ("passed", &n(c.runs_passed)),
                                    ("runs", &n(c.runs)),
                                    ("lost", &labels::count(lost)),
                                ],
                            );
                            HeatCell {
                                failed_share: Some(c.failed_share()),
                                label,
                                tooltip: tooltip.to_string(),
                            }
                        }
                    })
                    .collect()
            })
            .collect();
        let title = cat.fill(
            "dimensions.loss_title",
            &[
                ("backend", &labels::backend(cat, g.backend)),
                ("model", name),
            ],
        );
        let map = Heatmap {
            description: cat.raw("dimensions.loss_note").to_string(),
            title: title.to_string(),
            x_label: cat.raw("dimensions.x_window").to_string(),
            y_label: cat.raw("dimensions.y_payload").to_string(),
            x_ticks: windows.iter().map(u64::to_string).collect(),
            y_ticks: payloads
                .iter()
                .map(|p| format!("{} B", format::count(*p)))
                .collect(),
            cells,
        };
        let rel = format!(
            "charts/loss-{}-work{}-{m}{t}.svg",
            safe_name(g.backend),
            g.work
        );
        images.push(Image::new(title, &rel));
        charts.push(ChartFile {
            rel,
            svg: charts::heatmap::draw(&map),
            phone: Some(charts::heatmap::phone(&map)),
        });
    }
    images
}

/// One sentence per finding of the protocol: the best throughput and the lowest p99, each
/// with the model and window that reached it.
fn findings(cat: &Catalog, view: &DatasetView, protocol: Protocol) -> Vec<Markup> {
    view.analysis
        .findings
        .iter()
        .filter(|f| f.protocol == protocol)
        .map(|f| {
            let (b, l) = (&f.highest_throughput, &f.lowest_p99);
            let n = |v: u64| Markup::trusted(v.to_string());
            cat.fill(
                "dimensions.finding",
                &[
                    ("backend", &labels::backend(cat, &f.backend)),
                    ("work", &labels::work(cat, f.handler_work)),
                    ("payload", &labels::count(f.payload_bytes)),
                    (
                        "model",
                        &labels::topology(cat, &f.backend, b.io_model, b.io_threads),
                    ),
                    ("window", &n(b.window)),
                    ("rate", &labels::number(format::throughput(b.value.median))),
                    (
                        "p99_model",
                        &labels::topology(cat, &f.backend, l.io_model, l.io_threads),
                    ),
                    ("p99_window", &n(l.window)),
                    ("p99", &labels::number(format::latency(l.value.median))),
                ],
            )
        })
        .collect()
}

/// The configurations of one backend and handler work, with their topologies in chart
/// order (shared first, then by threads) and each topology's label.
fn group<'a>(
    cat: &Catalog,
    backend: &'a str,
    work: u64,
    configs: Vec<&'a Configuration>,
) -> Group<'a> {
    let mut topo: Vec<(IoModel, u64)> = configs
        .iter()
        .map(|c| (c.key.io_model, c.key.io_threads))
        .collect();
    topo.sort_by_key(|(m, t)| (u8::from(*m != IoModel::Shared), *t));
    topo.dedup();
    Group {
        backend,
        work,
        series: topo
            .iter()
            .map(|(m, t)| labels::topology(cat, backend, *m, *t))
            .collect(),
        topologies: topo,
        configs,
    }
}

/// A dataset's payload × window × IO model page for one protocol.
pub fn page(cat: &Catalog, view: &DatasetView, protocol: Protocol) -> PageSpec {
    let d = view.dataset;
    let label_p = labels::protocol(cat, protocol);
    let mine = view.configs_of_protocol(protocol);
    let windows: Vec<u64> = mine
        .iter()
        .map(|c| c.key.window)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let clients: BTreeSet<u64> = mine.iter().map(|c| c.key.clients).collect();
    let topologies: BTreeSet<(u8, u64)> = mine.iter().map(|c| c.key.topology_rank()).collect();
    let mut charts = Vec::new();
    let (mut sections, mut loss) = (Vec::new(), Vec::new());
    let groups: BTreeSet<(&str, u64)> = mine
        .iter()
        .map(|c| (c.key.backend.as_str(), c.key.handler_work))
        .collect();
    for (backend, work) in groups {
        let configs: Vec<&Configuration> = mine
            .iter()
            .copied()
            .filter(|c| c.key.backend == backend && c.key.handler_work == work)
            .collect();
        let payloads: BTreeSet<u64> = configs.iter().map(|c| c.key.payload_bytes).collect();
        let group = group(cat, backend, work, configs);
        let images = line_charts(
            cat,
            &d.name,
            protocol,
            &group,
            &windows,
            &payloads,
            &mut charts,
        );
        let mut heading = labels::backend(cat, backend);
        heading.push(&Markup::trusted(" / "));
        heading.push(&labels::work(cat, work));
        sections.push(Section { heading, images });
        if protocol == Protocol::Udp {
            loss.extend(loss_maps(
                cat,
                view,
                &group,
                &windows,
                &payloads,
                &mut charts,
            ));
        }
    }
    let findings = findings(cat, view, protocol);
    let list = |v: &mut dyn Iterator<Item = u64>| {
        Markup::trusted(v.map(|n| n.to_string()).collect::<Vec<_>>().join("/"))
    };
    let title = cat.fill("dimensions.title", &[("protocol", &label_p)]);
    let model = DimensionsPage {
        title: title.clone(),
        intro: cat.fill(
            "dimensions.intro",
            &[
                ("dataset", &d.name),
                ("clients", &list(&mut clients.iter().copied())),
                ("windows", &list(&mut windows.iter().copied())),
                ("topologies", &Markup::trusted(topologies.len().to_string())),
                ("repetitions", &Markup::trusted(d.repetitions().to_string())),
            ],
        ),
        methodology: cat.fill(
            "page.methodology",
            &[("link", &Markup::trusted("../methodology.md"))],
        ),
        sections,
        findings,
        loss_maps: loss,
        failed: failed_table(cat, view, Some(protocol)),
        raw_reasons: raw_reasons(view, Some(protocol)),
    };
    PageSpec::new(
        format!(
            "{}/{}/dimensions-{}",
            cat.code,
            view.slug(),
            protocol.as_str()
        ),
        "dimensions.md",
        title,
        &model,
        charts,
    )
}
