//! Chart models built from configurations: which bars and points a page's charts show, with
//! their labels and tooltips in the page's language. The drawing is in [`crate::site::charts`].

use echomark_archive::{IoModel, Metric};

use super::ChartFile;
use crate::analysis::aggregate::{Configuration, Stat, Status};
use crate::format;
use crate::site::charts::{self, BarChart, Cell, ChartText};
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::Markup;

/// The y-axis label and decimals of a metric's charts.
pub fn axis(cat: &Catalog, metric: Metric) -> (String, usize) {
    if metric == Metric::RttP99Us {
        (cat.raw("chart.y_p99").to_string(), 2)
    } else {
        (cat.raw("chart.y_throughput").to_string(), 0)
    }
}

/// "series, group: median …, min …, max …".
pub fn tooltip(cat: &Catalog, series: &Markup, group: &str, s: Stat, decimals: usize) -> String {
    let n = |v: f64| Markup::trusted(format::grouped(v, decimals));
    cat.fill(
        "chart.tooltip",
        &[
            ("series", series),
            ("group", &Markup::trusted(group)),
            ("median", &n(s.median)),
            ("min", &n(s.min)),
            ("max", &n(s.max)),
        ],
    )
    .to_string()
}

/// The cell of one configuration (or of none) in a chart of `metric`.
pub fn cell(
    cat: &Catalog,
    found: Option<&Configuration>,
    metric: Metric,
    series: &Markup,
    group: &str,
) -> Cell {
    let (_, decimals) = axis(cat, metric);
    match found {
        Some(c) if c.status == Status::Failed => Cell::Failed {
            tooltip: format!("{series}, {group}: {}", cat.raw("chart.failed")),
        },
        Some(c) => match c.stat(metric) {
            Some(stat) => Cell::Value {
                stat,
                tooltip: tooltip(cat, series, group, stat, decimals),
            },
            None => Cell::Missing,
        },
        None => Cell::Missing,
    }
}

/// A bar chart of `metric` for `configs`, grouped by `group_of`, one series per topology
/// in canonical order.
pub fn bars(
    cat: &Catalog,
    title: &Markup,
    metric: Metric,
    configs: &[&Configuration],
    group_of: &dyn Fn(&Configuration) -> String,
) -> BarChart {
    let (y_label, _) = axis(cat, metric);
    let mut groups: Vec<String> = Vec::new();
    for c in configs {
        let g = group_of(c);
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    let mut topologies: Vec<(&str, IoModel, u64)> = configs
        .iter()
        .map(|c| (c.key.backend.as_str(), c.key.io_model, c.key.io_threads))
        .collect();
    topologies.sort_by_key(|(b, m, t)| (*b, u8::from(*m != IoModel::Shared), *t));
    topologies.dedup();
    let series: Vec<Markup> = topologies
        .iter()
        .map(|(b, m, t)| labels::topology(cat, b, *m, *t))
        .collect();
    let cells = groups
        .iter()
        .map(|g| {
            topologies
                .iter()
                .zip(&series)
                .map(|((b, m, t), name)| {
                    let found = configs.iter().copied().find(|c| {
                        &group_of(c) == g
                            && c.key.backend == *b
                            && c.key.io_model == *m
                            && c.key.io_threads == *t
                    });
                    cell(cat, found, metric, name, g)
                })
                .collect()
        })
        .collect();
    let colours = topologies
        .iter()
        .map(|(_, m, t)| charts::topology_colour(*m, *t))
        .collect();
    BarChart {
        text: text(cat, title, y_label, &series, colours),
        groups,
        cells,
    }
}

/// The text of a chart titled `title` with these series and their colours.
pub fn text(
    cat: &Catalog,
    title: &Markup,
    y_label: String,
    series: &[Markup],
    colours: Vec<usize>,
) -> ChartText {
    ChartText {
        description: format!("{title}. {}", cat.raw("overview.chart_note")),
        title: title.to_string(),
        y_label,
        series: series.iter().map(Markup::to_string).collect(),
        colours,
        failed_label: cat.raw("chart.failed").to_string(),
    }
}

/// Draws `chart` into the file `rel` beside the page.
pub fn bar_file(rel: String, chart: &BarChart) -> ChartFile {
    ChartFile {
        rel,
        svg: charts::bars::draw(chart),
        phone: Some(charts::phone::bars(chart)),
    }
}

/// The file suffix of a metric's charts.
pub fn suffix(metric: Metric) -> &'static str {
    if metric == Metric::RttP99Us {
        "p99"
    } else {
        "throughput"
    }
}
