//! A dataset's "latency under load" page: for every open-loop curve, a chart of the
//! corrected p50, p99 and p99.9 against the achieved rate, the knee, and a table of every
//! offered rate with what the schedule achieved; a summary of the knees first.

use echomark_archive::{AddressFamily, Arrival};
use serde::Serialize;

use super::{DatasetView, Image, PageSpec};
use crate::analysis::aggregate::{Stat, Status};
use crate::analysis::load_curve::{LoadCurve, LoadPoint, KNEE_MULTIPLE};
use crate::format;
use crate::output::safe_name;
use crate::site::charts::curves::{self, CurveChart, CurvePoint};
use crate::site::charts::ChartText;
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::Markup;
use crate::site::table::{Align, Table};

use super::ChartFile;

/// A latency-curve dataset's load page: the knee of every curve and its chart.
#[derive(Serialize)]
pub struct LoadPage {
    pub title: Markup,
    pub lead: Markup,
    pub conditions: Markup,
    pub knees: Table,
    pub knee_rule: Markup,
    pub sections: Vec<CurveSection>,
    pub legend: Markup,
    pub methodology: Markup,
}

/// One curve: its chart, its knee and its points.
#[derive(Serialize)]
pub struct CurveSection {
    pub heading: Markup,
    pub image: Image,
    pub knee: Markup,
    pub table: Table,
}

/// The curves of `view`, or `None` when the dataset has none.
pub fn page(cat: &Catalog, view: &DatasetView) -> Option<PageSpec> {
    if view.curves.is_empty() {
        return None;
    }
    let mut charts = Vec::new();
    let sections: Vec<CurveSection> = view
        .curves
        .iter()
        .map(|c| section(cat, c, &mut charts))
        .collect();
    let title = cat.fill("load.title", &[("dataset", &view.dataset.name)]);
    let arrivals: Vec<Markup> = view
        .curves
        .iter()
        .map(|c| c.arrival)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|a| arrival_label(cat, a))
        .collect();
    let model = LoadPage {
        title: title.clone(),
        lead: cat.fill(
            "load.lead",
            &[
                ("curves", &Markup::trusted(view.curves.len().to_string())),
                (
                    "repetitions",
                    &Markup::trusted(view.dataset.repetitions().to_string()),
                ),
            ],
        ),
        conditions: cat.fill(
            if view.dataset.measures_external_servers() {
                "load.conditions_external"
            } else {
                "load.conditions"
            },
            &[
                ("arrival", &labels::join_list(cat, &arrivals)),
                ("host", &Markup::trusted(loopback_host(view))),
                ("path", &labels::path_kind(cat, view.dataset.path_kind())),
            ],
        ),
        knees: knee_table(cat, &view.curves),
        knee_rule: cat.fill(
            "load.knee_rule",
            &[(
                "multiple",
                &Markup::trusted(format::grouped(KNEE_MULTIPLE, 0)),
            )],
        ),
        sections,
        legend: cat.fill(
            "load.legend",
            &[(
                "share",
                &Markup::trusted(format::grouped(
                    crate::analysis::load_curve::SENDER_BOUND_SHARE * 100.0,
                    0,
                )),
            )],
        ),
        methodology: cat.fill(
            "load.methodology",
            &[("link", &Markup::trusted("../methodology.md"))],
        ),
    };
    Some(PageSpec::new(
        format!("{}/{}/load", cat.code, view.slug()),
        "load.md",
        title,
        &model,
        charts,
    ))
}

/// The loopback address the dataset's runs used: 127.0.0.1 (IPv4) or ::1 (IPv6), or both.
fn loopback_host(view: &DatasetView) -> String {
    let mut families: Vec<AddressFamily> =
        view.dataset.runs.iter().map(|r| r.address_family).collect();
    families.sort();
    families.dedup();
    families
        .iter()
        .map(|f| match f {
            AddressFamily::Ipv4 => "127.0.0.1, IPv4",
            AddressFamily::Ipv6 => "::1, IPv6",
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// What a curve is: protocol, load and model.
fn curve_name(cat: &Catalog, c: &LoadCurve) -> Markup {
    labels::configuration(cat, &c.key)
}

/// One row per curve: where its knee is and what it starts from.
fn knee_table(cat: &Catalog, curves: &[&LoadCurve]) -> Table {
    use Align::{Default as L, Right as R};
    let mut table = Table::new(cat.list("load.knee_columns", &[]), &[L, L, R, R, R, R, R]);
    for c in curves {
        let knee = c.knee.map(|i| &c.points[i]);
        table.push(vec![
            curve_name(cat, c),
            arrival_label(cat, c.arrival),
            labels::median(c.closed_loop_rate, format::throughput),
            labels::number(c.low_load_p99().map_or("N/A".into(), format::latency)),
            labels::number(c.baseline_p99.map_or("N/A".into(), format::latency)),
            knee.map_or_else(
                || cat.text("load.no_knee"),
                |p| rate_with_share(p.offered_rate, c.closed_loop_rate),
            ),
            labels::median(knee.and_then(|p| p.p99_us), format::latency),
        ]);
    }
    table
}

/// "uniform" / "Poisson (seeded)" in the page's language.
fn arrival_label(cat: &Catalog, arrival: Arrival) -> Markup {
    cat.text(&format!("load.arrival_{}", arrival.as_str()))
}

/// `rate` as a whole percentage of the closed-loop maximum ("40"); `None` without one.
fn percent_of_max(rate: u64, closed: Option<Stat>) -> Option<String> {
    closed
        .filter(|s| s.median > 0.0)
        .map(|s| format::grouped(rate as f64 / s.median * 100.0, 0))
}

/// " (40% of the closed-loop maximum)", or nothing without a closed-loop reference.
fn share_of_max(cat: &Catalog, rate: u64, closed: Option<Stat>) -> Markup {
    percent_of_max(rate, closed).map_or_else(Markup::default, |share| {
        cat.fill("load.share", &[("share", &Markup::trusted(share))])
    })
}

/// "23,400 (40%)": an offered rate and its share of the closed-loop maximum.
fn rate_with_share(rate: u64, closed: Option<Stat>) -> Markup {
    let share = percent_of_max(rate, closed).map_or_else(String::new, |p| format!(" ({p}%)"));
    Markup::trusted(format!("{}{share}", format::count(rate)))
}

fn section(cat: &Catalog, c: &LoadCurve, charts: &mut Vec<ChartFile>) -> CurveSection {
    let name = curve_name(cat, c);
    let arrival = arrival_label(cat, c.arrival);
    let heading = Markup::join(&[name.clone(), arrival.clone()], &Markup::trusted(" / "));
    let k = &c.key;
    let mut buffer = k
        .udp_server_recv_buffer
        .map_or(String::new(), |b| format!("-rcvbuf{b}"));
    if let Some(n) = k.generators {
        buffer.push_str(&format!("-gen{n}"));
    }
    let rel = format!(
        "charts/load-{}.svg",
        safe_name(&format!(
            "{}-{}-{}-{}-{}x{}-{}{}-work{}{buffer}-{}",
            k.backend,
            k.implementation,
            k.protocol,
            k.payload_bytes,
            k.clients,
            k.window,
            k.io_model,
            k.io_threads,
            k.handler_work,
            c.arrival
        ))
    );
    let chart = chart(cat, c, &heading);
    charts.push(ChartFile {
        rel: rel.clone(),
        svg: curves::draw(&chart),
        phone: Some(curves::phone(&chart)),
    });
    let knee = match c.knee.map(|i| &c.points[i]) {
        Some(p) => cat.fill(
            "load.knee",
            &[
                ("rate", &labels::count(p.offered_rate)),
                (
                    "share",
                    &share_of_max(cat, p.offered_rate, c.closed_loop_rate),
                ),
                ("p99", &labels::median(p.p99_us, format::latency)),
                (
                    "low",
                    &labels::number(c.baseline_p99.map_or("N/A".into(), format::latency)),
                ),
                (
                    "multiple",
                    &Markup::trusted(format::grouped(KNEE_MULTIPLE, 0)),
                ),
            ],
        ),
        None if c.points.iter().any(|p| p.usable()) => cat.fill(
            "load.no_knee_above",
            &[
                (
                    "low",
                    &labels::number(c.baseline_p99.map_or("N/A".into(), format::latency)),
                ),
                (
                    "multiple",
                    &Markup::trusted(format::grouped(KNEE_MULTIPLE, 0)),
                ),
            ],
        ),
        None => cat.text("load.no_knee_text"),
    };
    CurveSection {
        image: Image::new(heading.clone(), &rel),
        heading,
        knee,
        table: points_table(cat, c),
    }
}

fn status(cat: &Catalog, c: &LoadCurve, index: usize) -> Markup {
    let p = &c.points[index];
    let mut marks = Vec::new();
    if p.status == Status::Failed {
        marks.push(cat.text("load.status_failed"));
    } else if p.saturated {
        marks.push(cat.text("load.status_saturated"));
    } else {
        marks.push(cat.text("load.status_ok"));
    }
    if c.knee == Some(index) {
        marks.push(cat.text("load.status_knee"));
    }
    if p.sender_bound() {
        marks.push(cat.text("load.status_sender"));
    }
    Markup::join(&marks, &Markup::trusted(", "))
}

fn points_table(cat: &Catalog, c: &LoadCurve) -> Table {
    use Align::{Default as L, Right as R};
    let mut table = Table::new(cat.list("load.columns", &[]), &[R, R, R, R, R, R, R, R, L]);
    let latency = labels::latency_range;
    for (i, p) in c.points.iter().enumerate() {
        let o = &p.open_loop;
        table.push(vec![
            rate_with_share(p.offered_rate, c.closed_loop_rate),
            labels::median(Some(o.achieved_rate), format::throughput),
            latency(p.p50_us),
            latency(p.p99_us),
            latency(p.p999_us),
            labels::median(Some(o.service_p99_us), format::latency),
            labels::median(Some(o.schedule_lag_p99_us), format::latency),
            labels::median(Some(o.late_sends), format::throughput),
            status(cat, c, i),
        ]);
    }
    table
}

fn chart(cat: &Catalog, c: &LoadCurve, heading: &Markup) -> CurveChart {
    // Palette entries no canonical IO model uses: on every chart of the site one colour
    // means one IO model, so the percentiles take colours of their own.
    let series = [
        ("load.series_p50", 7),
        ("load.series_p99", 6),
        ("load.series_p999", 8),
    ];
    let names: Vec<String> = series.iter().map(|(k, _)| cat.raw(k).to_string()).collect();
    let lines = [
        |p: &LoadPoint| p.p50_us,
        |p: &LoadPoint| p.p99_us,
        |p: &LoadPoint| p.p999_us,
    ]
    .iter()
    .zip(&names)
    .map(|(pick, name)| {
        c.points
            .iter()
            .filter(|p| p.status == Status::Valid)
            .filter_map(|p| {
                let y = pick(p)?;
                let x = p.open_loop.achieved_rate.median;
                let mut tooltip = cat
                    .fill(
                        "load.tooltip",
                        &[
                            ("series", &Markup::text(name)),
                            ("offered", &Markup::trusted(format::count(p.offered_rate))),
                            ("achieved", &Markup::trusted(format::throughput(x))),
                            ("median", &Markup::trusted(format::latency(y.median))),
                            ("min", &Markup::trusted(format::latency(y.min))),
                            ("max", &Markup::trusted(format::latency(y.max))),
                        ],
                    )
                    .to_string();
                if p.saturated {
                    tooltip.push_str(&format!(" ({})", cat.raw("load.status_saturated")));
                }
                Some(CurvePoint {
                    x,
                    y,
                    saturated: p.saturated,
                    tooltip,
                })
            })
            .collect()
    })
    .collect();
    let knee = c.knee.map(|i| {
        (
            c.points[i].open_loop.achieved_rate.median,
            cat.raw("load.knee_label").to_string(),
        )
    });
    CurveChart {
        text: ChartText {
            title: heading.to_string(),
            description: cat
                .fill("load.chart_description", &[("curve", heading)])
                .to_string(),
            y_label: cat.raw("load.y_label").to_string(),
            series: names,
            colours: series.iter().map(|(_, c)| *c).collect(),
            failed_label: String::new(),
        },
        x_label: cat.raw("load.x_label").to_string(),
        lines,
        knee,
        saturated_label: cat.raw("load.status_saturated").to_string(),
    }
}
