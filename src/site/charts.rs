//! SVG charts drawn with plotters, one file per language.
//!
//! plotters draws the picture (axes, bars, whiskers, labels, legend); this module then adds
//! what plotters cannot: a `<title>`/`<desc>` pair and `role="img"` for screen readers, and a
//! transparent layer of rectangles, one per bar, whose `<title>` holds the exact values as a
//! tooltip. Text is measured with an embedded DejaVu Sans, so layout is the same on every
//! machine; the SVG names a CJK-capable font stack so Chinese labels render in browsers.

use std::fmt::Write as _;
use std::sync::Once;

use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::aggregate::Stat;
use crate::format;

/// The font family written into every SVG `<text>`; the first family present wins.
pub const FONT_STACK: &str =
    "Noto Sans CJK SC, PingFang SC, Microsoft YaHei, DejaVu Sans, sans-serif";
static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        plotters::style::register_font(FONT_STACK, FontStyle::Normal, FONT)
            .unwrap_or_else(|_| panic!("the embedded DejaVu Sans is a valid font"));
    });
}

/// One bar: a median with its range, or a configuration that was excluded.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Value { stat: Stat, tooltip: String },
    Failed { tooltip: String },
    Missing,
}

/// A grouped bar chart: for every group (x position), one bar per series.
#[derive(Debug, Clone)]
pub struct BarChart {
    pub title: String,
    pub description: String,
    pub y_label: String,
    pub groups: Vec<String>,
    pub series: Vec<String>,
    /// `cells[group][series]`.
    pub cells: Vec<Vec<Cell>>,
    /// Text shown at an excluded bar's position.
    pub failed_label: String,
}

const PALETTE: [RGBColor; 6] = [
    RGBColor(0x3b, 0x6e, 0xa8),
    RGBColor(0xe0, 0x8e, 0x2b),
    RGBColor(0x4c, 0x9a, 0x5b),
    RGBColor(0xb8, 0x4a, 0x62),
    RGBColor(0x7a, 0x5c, 0xa8),
    RGBColor(0x5f, 0x8f, 0x9a),
];
const FAILED: RGBColor = RGBColor(0xc0, 0x1c, 0x28);

fn escape_xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Adds the accessible title/description and the tooltip layer to plotters' SVG.
fn finish_svg(
    mut svg: String,
    title: &str,
    description: &str,
    tips: &[(i32, i32, i32, i32, String)],
) -> String {
    if let Some(end) = svg.find('>').filter(|_| svg.starts_with("<svg")) {
        let head = format!(
            " role=\"img\" aria-labelledby=\"t d\"><title id=\"t\">{}</title><desc id=\"d\">{}</desc",
            escape_xml(title),
            escape_xml(description)
        );
        svg.insert_str(end, &head);
    }
    let mut layer = String::from("<g class=\"tips\" fill=\"#000\" fill-opacity=\"0\">\n");
    for (x, y, w, h, tip) in tips {
        let _ = writeln!(
            layer,
            "<rect x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\"><title>{}</title></rect>",
            escape_xml(tip)
        );
    }
    layer.push_str("</g>\n");
    if let Some(end) = svg.rfind("</svg>") {
        svg.insert_str(end, &layer);
    }
    svg
}

/// The top of the y axis: 12% above the largest whisker (1 for an empty chart).
fn axis_top<'a>(cells: impl Iterator<Item = &'a Cell>) -> f64 {
    let max = cells
        .filter_map(|c| match c {
            Cell::Value { stat, .. } => Some(stat.max),
            _ => None,
        })
        .fold(0.0f64, f64::max);
    if max > 0.0 {
        max * 1.12
    } else {
        1.0
    }
}

/// The plotting area both chart kinds share: caption, margins (the legend column on the
/// right), a light horizontal mesh and a grouped y axis; the x axis is drawn by the caller.
#[allow(clippy::too_many_arguments)]
fn plot_area<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    title: &str,
    x: std::ops::Range<f64>,
    y_max: f64,
    x_label_area: u32,
    legend_width: u32,
    y_label: &str,
    hide_x_axis: bool,
) -> ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
> {
    let font = |size: u32| (FONT_STACK, size).into_font();
    let mut ctx = ChartBuilder::on(root)
        .caption(title, font(18))
        .margin(12)
        .margin_right(legend_width)
        .x_label_area_size(x_label_area)
        .y_label_area_size(84)
        .build_cartesian_2d(x, 0f64..y_max)
        .expect("valid ranges");
    let formatter = |v: &f64| format::grouped(*v, if y_max < 10.0 { 1 } else { 0 });
    let mut mesh = ctx.configure_mesh();
    mesh.disable_x_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(BLACK.mix(0.12))
        .x_labels(0)
        .y_desc(y_label)
        .y_label_formatter(&formatter)
        .label_style(font(12))
        .axis_desc_style(font(13));
    if hide_x_axis {
        mesh.disable_x_axis();
    }
    mesh.draw().expect("mesh");
    ctx
}

/// Draws `chart` as an SVG document.
pub fn grouped_bars(chart: &BarChart) -> String {
    register_font();
    let (width, height) = (860u32, 420u32);
    // The legend sits in a column right of the plot, so it never covers a bar.
    let legend_width = 200u32;
    let y_max = axis_top(chart.cells.iter().flatten());
    let groups = chart.groups.len().max(1);
    let series = chart.series.len().max(1);
    let mut svg = String::new();
    let mut tips = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE)
            .expect("drawing into a string cannot fail");
        let font = |size: u32| (FONT_STACK, size).into_font();
        let mut ctx = plot_area(
            &root,
            &chart.title,
            0f64..groups as f64,
            y_max,
            34,
            legend_width,
            &chart.y_label,
            true,
        );
        let slot = 0.8 / series as f64;
        for s in 0..chart.series.len() {
            let color = PALETTE[s % PALETTE.len()];
            let mut bars = Vec::new();
            for (g, row) in chart.cells.iter().enumerate() {
                let x0 = g as f64 + 0.1 + s as f64 * slot;
                let x1 = x0 + slot * 0.9;
                match row.get(s) {
                    Some(Cell::Value { stat, tooltip }) => {
                        bars.push(Rectangle::new(
                            [(x0, 0.0), (x1, stat.median)],
                            color.filled(),
                        ));
                        let top = ctx.backend_coord(&(x0, stat.max));
                        let bottom = ctx.backend_coord(&(x1, 0.0));
                        tips.push((
                            top.0,
                            top.1,
                            bottom.0 - top.0,
                            bottom.1 - top.1,
                            tooltip.clone(),
                        ));
                    }
                    Some(Cell::Failed { tooltip }) => {
                        let at = ctx.backend_coord(&((x0 + x1) / 2.0, 0.0));
                        let mark = Text::new(
                            "✕",
                            (at.0, at.1 - 14),
                            font(16)
                                .color(&FAILED)
                                .pos(plotters::style::text_anchor::Pos::new(
                                    plotters::style::text_anchor::HPos::Center,
                                    plotters::style::text_anchor::VPos::Center,
                                )),
                        );
                        root.draw(&mark).expect("marker");
                        tips.push((at.0 - 8, at.1 - 24, 16, 20, tooltip.clone()));
                    }
                    _ => {}
                }
            }
            ctx.draw_series(bars).expect("bars");
            // Whiskers: min to max, with caps.
            let whiskers = chart
                .cells
                .iter()
                .enumerate()
                .filter_map(|(g, row)| match row.get(s) {
                    Some(Cell::Value { stat, .. }) => {
                        let mid = g as f64 + 0.1 + s as f64 * slot + slot * 0.45;
                        Some(PathElement::new(
                            vec![(mid, stat.min), (mid, stat.max)],
                            BLACK.stroke_width(1),
                        ))
                    }
                    _ => None,
                });
            ctx.draw_series(whiskers).expect("whiskers");
            let caps = chart.cells.iter().enumerate().flat_map(|(g, row)| {
                let mid = g as f64 + 0.1 + s as f64 * slot + slot * 0.45;
                let half = slot * 0.18;
                match row.get(s) {
                    Some(Cell::Value { stat, .. }) => vec![
                        PathElement::new(
                            vec![(mid - half, stat.min), (mid + half, stat.min)],
                            BLACK.stroke_width(1),
                        ),
                        PathElement::new(
                            vec![(mid - half, stat.max), (mid + half, stat.max)],
                            BLACK.stroke_width(1),
                        ),
                    ],
                    _ => vec![],
                }
            });
            ctx.draw_series(caps).expect("caps");
        }
        for (g, label) in chart.groups.iter().enumerate() {
            let at = ctx.backend_coord(&(g as f64 + 0.5, 0.0));
            root.draw(&centered(label, (at.0, at.1 + 16), 12))
                .expect("group label");
        }
        // The legend, drawn on the root area (outside the plot's clipping).
        let failed = chart
            .cells
            .iter()
            .flatten()
            .any(|c| matches!(c, Cell::Failed { .. }));
        legend(
            &root,
            (width - legend_width + 12) as i32,
            &chart.series,
            failed.then_some(chart.failed_label.as_str()),
        );
        root.present().expect("present");
    }
    finish_svg(svg, &chart.title, &chart.description, &tips)
}

/// Lines over a categorical x axis (windows): one line per series, whiskers at each point,
/// excluded configurations marked on the axis.
#[derive(Debug, Clone)]
pub struct LineChart {
    pub title: String,
    pub description: String,
    pub x_label: String,
    pub y_label: String,
    pub x_ticks: Vec<String>,
    pub series: Vec<String>,
    /// `points[series][x]`.
    pub points: Vec<Vec<Cell>>,
    pub failed_label: String,
}

fn legend(
    root: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    x: i32,
    names: &[String],
    with_failed: Option<&str>,
) {
    let font = (FONT_STACK, 12).into_font();
    let mut entries: Vec<(Option<RGBColor>, &str)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (Some(PALETTE[i % PALETTE.len()]), n.as_str()))
        .collect();
    if let Some(failed) = with_failed {
        entries.push((None, failed));
    }
    for (i, (color, name)) in entries.iter().enumerate() {
        let y = 48 + i as i32 * 20;
        match color {
            Some(c) => root
                .draw(&Rectangle::new([(x, y - 8), (x + 12, y + 4)], c.filled()))
                .expect("swatch"),
            None => root
                .draw(&Text::new(
                    "✕",
                    (x, y - 8),
                    (FONT_STACK, 14).into_font().color(&FAILED),
                ))
                .expect("swatch"),
        }
        root.draw(&Text::new(*name, (x + 18, y - 7), font.clone()))
            .expect("legend text");
    }
}

fn centered(text: &str, at: (i32, i32), size: u32) -> Text<'_, (i32, i32), &str> {
    Text::new(
        text,
        at,
        TextStyle::from((FONT_STACK, size).into_font()).pos(
            plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Center,
                plotters::style::text_anchor::VPos::Center,
            ),
        ),
    )
}

/// Draws `chart` as an SVG document.
pub fn lines(chart: &LineChart) -> String {
    register_font();
    let (width, height, legend_width) = (860u32, 400u32, 200u32);
    let y_max = axis_top(chart.points.iter().flatten());
    let n = chart.x_ticks.len().max(1);
    let mut svg = String::new();
    let mut tips = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE)
            .expect("drawing into a string cannot fail");
        let font = |size: u32| (FONT_STACK, size).into_font();
        let mut ctx = plot_area(
            &root,
            &chart.title,
            -0.5f64..(n as f64 - 0.5),
            y_max,
            44,
            legend_width,
            &chart.y_label,
            false,
        );
        for (s, row) in chart.points.iter().enumerate() {
            let color = PALETTE[s % PALETTE.len()];
            // One polyline per run of consecutive values: a gap where a point is missing.
            let mut run: Vec<(f64, f64)> = Vec::new();
            let mut runs = Vec::new();
            for (x, cell) in row.iter().enumerate() {
                match cell {
                    Cell::Value { stat, tooltip } => {
                        run.push((x as f64, stat.median));
                        let top = ctx.backend_coord(&(x as f64, stat.max));
                        let bottom = ctx.backend_coord(&(x as f64, stat.min));
                        tips.push((
                            top.0 - 6,
                            top.1 - 6,
                            12,
                            (bottom.1 - top.1) + 12,
                            tooltip.clone(),
                        ));
                        ctx.draw_series(std::iter::once(PathElement::new(
                            vec![(x as f64, stat.min), (x as f64, stat.max)],
                            color.stroke_width(1),
                        )))
                        .expect("whisker");
                    }
                    Cell::Failed { tooltip } => {
                        runs.push(std::mem::take(&mut run));
                        let at = ctx.backend_coord(&(x as f64, 0.0));
                        root.draw(&Text::new(
                            "✕",
                            (at.0 - 5, at.1 - 22 - 12 * s as i32),
                            font(14).color(&FAILED),
                        ))
                        .expect("marker");
                        tips.push((at.0 - 8, at.1 - 24 - 12 * s as i32, 16, 16, tooltip.clone()));
                    }
                    Cell::Missing => runs.push(std::mem::take(&mut run)),
                }
            }
            runs.push(run);
            for points in runs.into_iter().filter(|r| !r.is_empty()) {
                ctx.draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
                    .expect("line");
                ctx.draw_series(
                    points
                        .into_iter()
                        .map(|p| Circle::new(p, 3, color.filled())),
                )
                .expect("points");
            }
        }
        for (x, tick) in chart.x_ticks.iter().enumerate() {
            let at = ctx.backend_coord(&(x as f64, 0.0));
            root.draw(&centered(tick, (at.0, at.1 + 14), 12))
                .expect("tick");
        }
        let axis = ctx.backend_coord(&((n as f64 - 1.0) / 2.0, 0.0));
        root.draw(&centered(&chart.x_label, (axis.0, axis.1 + 34), 13))
            .expect("x label");
        let failed = chart
            .points
            .iter()
            .flatten()
            .any(|c| matches!(c, Cell::Failed { .. }));
        legend(
            &root,
            (width - legend_width + 12) as i32,
            &chart.series,
            failed.then_some(chart.failed_label.as_str()),
        );
        root.present().expect("present");
    }
    finish_svg(svg, &chart.title, &chart.description, &tips)
}

/// One cell of a heat map.
#[derive(Debug, Clone, PartialEq)]
pub struct HeatCell {
    /// 0 = every run passed; 1 = every run failed. `None`: not measured.
    pub failed_share: Option<f64>,
    /// Short text shown in the cell (e.g. "2/3 · 767").
    pub label: String,
    pub tooltip: String,
}

/// A grid of cells, for UDP loss over payload × window.
#[derive(Debug, Clone)]
pub struct Heatmap {
    pub title: String,
    pub description: String,
    pub x_label: String,
    pub y_label: String,
    pub x_ticks: Vec<String>,
    pub y_ticks: Vec<String>,
    /// `cells[y][x]`.
    pub cells: Vec<Vec<HeatCell>>,
}

/// Draws `map` as an SVG document: green where every run passed, shading to red with the
/// share of failed runs.
pub fn heatmap(map: &Heatmap) -> String {
    register_font();
    let (cols, rows) = (
        map.x_ticks.len().max(1) as i32,
        map.y_ticks.len().max(1) as i32,
    );
    let (left, top, cell_w, cell_h) = (120i32, 56i32, 130i32, 40i32);
    let (width, height) = (
        (left + cols * cell_w + 24) as u32,
        (top + rows * cell_h + 64) as u32,
    );
    let mut svg = String::new();
    let mut tips = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE)
            .expect("drawing into a string cannot fail");
        root.draw(&centered(&map.title, (width as i32 / 2, 20), 17))
            .expect("title");
        for (y, row) in map.cells.iter().enumerate() {
            for (x, cell) in row.iter().enumerate() {
                let x0 = left + x as i32 * cell_w;
                let y0 = top + y as i32 * cell_h;
                let fill = match cell.failed_share {
                    None => RGBColor(0xee, 0xee, 0xee),
                    Some(f) if f <= 0.0 => RGBColor(0xcd, 0xe8, 0xd0),
                    Some(f) => {
                        let t = f.clamp(0.0, 1.0);
                        let mix =
                            |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * t).round() as u8;
                        RGBColor(mix(0xf6, 0xd7), mix(0xd3, 0x5a), mix(0xa4, 0x5a))
                    }
                };
                root.draw(&Rectangle::new(
                    [(x0, y0), (x0 + cell_w - 2, y0 + cell_h - 2)],
                    fill.filled(),
                ))
                .expect("cell");
                root.draw(&centered(
                    &cell.label,
                    (x0 + cell_w / 2, y0 + cell_h / 2),
                    12,
                ))
                .expect("cell text");
                tips.push((x0, y0, cell_w - 2, cell_h - 2, cell.tooltip.clone()));
            }
        }
        for (x, tick) in map.x_ticks.iter().enumerate() {
            root.draw(&centered(
                tick,
                (
                    left + x as i32 * cell_w + cell_w / 2,
                    top + rows * cell_h + 14,
                ),
                12,
            ))
            .expect("x tick");
        }
        for (y, tick) in map.y_ticks.iter().enumerate() {
            root.draw(&centered(
                tick,
                (left / 2, top + y as i32 * cell_h + cell_h / 2),
                12,
            ))
            .expect("y tick");
        }
        root.draw(&centered(
            &map.x_label,
            (left + cols * cell_w / 2, top + rows * cell_h + 40),
            13,
        ))
        .expect("x label");
        root.draw(&centered(&map.y_label, (left / 2, top - 14), 13))
            .expect("y label");
        root.present().expect("present");
    }
    finish_svg(svg, &map.title, &map.description, &tips)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> BarChart {
        let stat = |m: f64| Stat {
            median: m,
            min: m * 0.9,
            max: m * 1.1,
        };
        BarChart {
            title: "TCP 吞吐量 <test>".into(),
            description: "median bars".into(),
            y_label: "往返 / s".into(),
            groups: vec!["64 B".into(), "1024 B".into()],
            series: vec!["1 / 1".into(), "2 / 1".into()],
            cells: vec![
                vec![
                    Cell::Value {
                        stat: stat(1000.0),
                        tooltip: "a: 1,000".into(),
                    },
                    Cell::Failed {
                        tooltip: "excluded".into(),
                    },
                ],
                vec![
                    Cell::Value {
                        stat: stat(800.0),
                        tooltip: "c: 800".into(),
                    },
                    Cell::Missing,
                ],
            ],
            failed_label: "excluded".into(),
        }
    }

    #[test]
    fn line_chart_and_heatmap_are_accessible_and_mark_failures() {
        let stat = |m: f64| Stat {
            median: m,
            min: m * 0.9,
            max: m * 1.1,
        };
        let chart = LineChart {
            title: "UDP over windows".into(),
            description: "d".into(),
            x_label: "window".into(),
            y_label: "rt/s".into(),
            x_ticks: vec!["1".into(), "4".into(), "16".into()],
            series: vec!["1 / 1".into()],
            points: vec![vec![
                Cell::Value {
                    stat: stat(10.0),
                    tooltip: "w1: 10".into(),
                },
                Cell::Value {
                    stat: stat(30.0),
                    tooltip: "w4: 30".into(),
                },
                Cell::Failed {
                    tooltip: "w16 excluded".into(),
                },
            ]],
            failed_label: "excluded".into(),
        };
        let svg = lines(&chart);
        assert_eq!(svg, lines(&chart));
        assert!(
            svg.contains("<title>w4: 30</title>")
                && svg.contains("<title>w16 excluded</title>")
                && svg.contains("✕")
        );
        assert!(svg.contains("<polyline"), "a line is drawn");
        let map = Heatmap {
            title: "loss".into(),
            description: "d".into(),
            x_label: "window".into(),
            y_label: "payload".into(),
            x_ticks: vec!["1".into(), "64".into()],
            y_ticks: vec!["16384 B".into()],
            cells: vec![vec![
                HeatCell {
                    failed_share: Some(0.0),
                    label: "3/3".into(),
                    tooltip: "ok".into(),
                },
                HeatCell {
                    failed_share: Some(1.0),
                    label: "0/3 · 767".into(),
                    tooltip: "lost 767".into(),
                },
            ]],
        };
        let svg = heatmap(&map);
        assert!(
            svg.contains("<title>lost 767</title>")
                && svg.contains("0/3 · 767")
                && svg.contains("role=\"img\"")
        );
    }

    #[test]
    fn chart_is_accessible_byte_stable_and_has_tooltips() {
        let a = grouped_bars(&sample());
        let b = grouped_bars(&sample());
        assert_eq!(a, b, "same input, same bytes");
        assert!(a.starts_with("<svg") && a.contains("role=\"img\""));
        assert!(
            a.contains("<title id=\"t\">TCP 吞吐量 &lt;test&gt;</title>"),
            "escaped, accessible title"
        );
        assert!(a.contains("<title>a: 1,000</title>") && a.contains("<title>excluded</title>"));
        assert!(a.contains("✕"), "failed configuration marked");
        assert!(a.contains(FONT_STACK));
        assert!(a.contains("往返 / s"));
        assert!(!a.contains("<script"));
    }
}
