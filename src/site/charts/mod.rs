//! SVG charts drawn with plotters, one file per language: grouped bars ([`bars`]), lines
//! over windows ([`lines`]) and heat maps ([`heatmap`]); this module holds what they share.
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

use crate::analysis::aggregate::Stat;
use crate::format;

pub mod bars;
pub mod curves;
pub mod heatmap;
pub mod lines;
pub mod phone;

pub use bars::BarChart;
pub use curves::CurveChart;
pub use heatmap::{HeatCell, Heatmap};
pub use lines::LineChart;

/// The font family written into every SVG `<text>`; the first family present wins.
/// Font sizes as plotters takes them; its SVG writes 1/1.24 of each, so 14 renders at
/// 11.3 CSS px at a chart's own width: the least any chart text may be.
pub(crate) const TEXT_SIZE: u32 = 14;
pub(crate) const AXIS_SIZE: u32 = 15;
pub(crate) const TITLE_SIZE: u32 = 20;
pub(crate) const MARK_SIZE: u32 = 16;
/// Where a chart's plot starts below its top edge: the title's line, then a gap as tall
/// as an axis label, since the top y-axis label is centred on the plot's top edge and
/// reaches half its height above it.
pub(crate) const PLOT_TOP: u32 = 12 + TITLE_SIZE + TEXT_SIZE;

/// Draws `title` (cut as [`drawn_title`] cuts it) along the top of `root`, centred over
/// what lies left of the legend column, above a plot that starts [`PLOT_TOP`] px down.
pub(crate) fn draw_title(root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>, title: &str) {
    let width = root.dim_in_pixel().0 as i32;
    let centre = (width - LEGEND_WIDTH as i32 + 12) / 2;
    let drawn = drawn_title(title);
    root.draw(&centered(
        &drawn,
        (centre, 12 + TITLE_SIZE as i32 / 2),
        TITLE_SIZE,
    ))
    .expect("title");
}
/// The longest title drawn in a chart (at [`TITLE_SIZE`] about its width); the full title
/// is the chart's accessible name and the figure's heading.
const TITLE_CHARS: usize = 68;

/// `title` as a chart draws it: cut with an ellipsis when it would run off the chart.
pub(crate) fn drawn_title(title: &str) -> String {
    // A CJK character is about twice as wide as a Latin one.
    let width = |c: char| if c.is_ascii() { 1 } else { 2 };
    if title.chars().map(width).sum::<usize>() <= TITLE_CHARS {
        return title.to_string();
    }
    let mut used = 0;
    let cut: String = title
        .chars()
        .take_while(|&c| {
            used += width(c);
            used < TITLE_CHARS
        })
        .collect();
    format!("{}…", cut.trim_end())
}

pub const FONT_STACK: &str =
    "Noto Sans CJK SC, PingFang SC, Microsoft YaHei, DejaVu Sans, sans-serif";
static FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");

pub(crate) fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        plotters::style::register_font(FONT_STACK, FontStyle::Normal, FONT)
            .unwrap_or_else(|_| panic!("the embedded DejaVu Sans is a valid font"));
    });
}

/// The text every bar and line chart carries beside its data.
#[derive(Debug, Clone)]
pub struct ChartText {
    pub title: String,
    /// The accessible description (`<desc>`).
    pub description: String,
    pub y_label: String,
    /// One name per series, in legend order.
    pub series: Vec<String>,
    /// Each series' colour, a palette index, so that one IO model has one colour on
    /// every chart of the site (see [`topology_colour`]).
    pub colours: Vec<usize>,
    /// The legend entry of excluded configurations.
    pub failed_label: String,
}

/// How many palette colours past the canonical topologies' six other topologies (and the
/// latency-under-load series) share.
const SPARE_COLOURS: usize = 3;

/// The colours of a fleet's scaling chart: the merged rate and the rate per generator, kept
/// apart from every IO model's and series' colour.
pub const FLEET_COLOURS: [usize; 2] = [6 + SPARE_COLOURS, 7 + SPARE_COLOURS];

/// The colour of an IO model on every chart: the canonical topologies (shared 1, 2 and 4,
/// sharded 2 and 4, sharded 1) have one each; others share what is left by thread count.
pub fn topology_colour(io_model: echomark_archive::IoModel, threads: u64) -> usize {
    use echomark_archive::IoModel::{Sharded, Shared};
    match (io_model, threads) {
        (Shared, 1) => 0,
        (Shared, 2) => 1,
        (Shared, 4) => 2,
        (Sharded, 2) => 3,
        (Sharded, 4) => 4,
        (Sharded, 1) => 5,
        (_, t) => 6 + (t as usize % SPARE_COLOURS),
    }
}

impl ChartText {
    /// The colour of series `s`.
    pub fn colour(&self, s: usize) -> RGBColor {
        PALETTE[self.colours.get(s).copied().unwrap_or(s) % PALETTE.len()]
    }
}

/// Where a chart's plot sits in its drawing: the desktop's (a legend column on the right,
/// the title cut to one line) or a phone's ([`phone::frame`]: title and legend on top, the
/// plot the full width).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Frame {
    pub width: u32,
    pub height: u32,
    /// Room right of the plot (the legend column).
    pub right: u32,
    /// Where the plot starts below the top edge.
    pub top: u32,
    /// Room left of the plot for the y axis's labels and name.
    pub y_labels: u32,
    pub phone: bool,
}

impl Frame {
    /// The desktop frame of a chart `height` px tall.
    pub(crate) fn wide(height: u32) -> Self {
        Self {
            width: CHART_WIDTH,
            height,
            right: LEGEND_WIDTH,
            top: PLOT_TOP,
            y_labels: 84,
            phone: false,
        }
    }

    pub(crate) fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }
}

/// Width of a bar or line chart, and of the legend column right of its plot.
pub(crate) const CHART_WIDTH: u32 = 860;
pub(crate) const LEGEND_WIDTH: u32 = 200;
/// Heights of a bar chart and of a line chart.
pub(crate) const BAR_HEIGHT: u32 = 420;
pub(crate) const LINE_HEIGHT: u32 = 400;

/// One bar: a median with its range, or a configuration that was excluded.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Value { stat: Stat, tooltip: String },
    Failed { tooltip: String },
    Missing,
}

pub(crate) const PALETTE: [RGBColor; 11] = [
    RGBColor(0x3b, 0x6e, 0xa8),
    RGBColor(0xe0, 0x8e, 0x2b),
    RGBColor(0x4c, 0x9a, 0x5b),
    RGBColor(0xb8, 0x4a, 0x62),
    RGBColor(0x7a, 0x5c, 0xa8),
    RGBColor(0x5f, 0x8f, 0x9a),
    RGBColor(0x8c, 0x6d, 0x31),
    RGBColor(0x2f, 0x4f, 0x4f),
    RGBColor(0xc4, 0x62, 0xa8),
    // A fleet's scaling chart (FLEET_COLOURS): teal and olive.
    RGBColor(0x0f, 0x7b, 0x6c),
    RGBColor(0x7c, 0x8a, 0x1c),
];
pub(crate) const FAILED: RGBColor = RGBColor(0xc0, 0x1c, 0x28);

pub(crate) fn escape_xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Adds the accessible title/description and the tooltip layer to plotters' SVG.
pub(crate) fn finish_svg(svg: String, title: &str, description: &str, tips: &[Tip]) -> String {
    // Every text names the same font and every shape an opacity of 1 (plotters writes both
    // on each element): the font is said once on the root and the default left unsaid,
    // which takes about a third off a chart that pages inline.
    let mut svg = svg
        .replace(&format!(" font-family=\"{FONT_STACK}\""), "")
        .replace(" opacity=\"1\"", "");
    if let Some(end) = svg.find('>').filter(|_| svg.starts_with("<svg")) {
        let head = format!(
            " font-family=\"{FONT_STACK}\" role=\"img\" aria-labelledby=\"t d\"><title id=\"t\">{}</title><desc id=\"d\">{}</desc",
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

/// One tooltip: a rectangle (x, y, width, height) and its text.
pub(crate) type Tip = (i32, i32, i32, i32, String);

/// A chart's whole drawing area.
pub(crate) type Root<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// The plot of a bar or line chart ([`plot_area`]): linear on both axes.
pub(crate) type Plot<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// [`render_svg`] for a chart with `text`.
pub(crate) fn render_chart(
    size: (u32, u32),
    text: &ChartText,
    paint: impl FnOnce(&DrawingArea<SVGBackend, plotters::coord::Shift>, &mut Vec<Tip>),
) -> String {
    render_svg(size, &text.title, &text.description, paint)
}

/// Draws on a white SVG canvas of `size` with `paint` (which collects the tooltips) and
/// returns the finished document with its title, description and tooltip layer.
pub(crate) fn render_svg(
    size: (u32, u32),
    title: &str,
    description: &str,
    paint: impl FnOnce(&DrawingArea<SVGBackend, plotters::coord::Shift>, &mut Vec<Tip>),
) -> String {
    register_font();
    let mut svg = String::new();
    let mut tips = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE)
            .expect("drawing into a string cannot fail");
        paint(&root, &mut tips);
        root.present().expect("present");
    }
    finish_svg(svg, title, description, &tips)
}

/// The top of the y axis: 12% above the largest whisker (1 for an empty chart).
pub(crate) fn axis_top<'a>(cells: impl Iterator<Item = &'a Cell>) -> f64 {
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
pub(crate) fn plot_area<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    frame: &Frame,
    text: &ChartText,
    (x, y_max): (std::ops::Range<f64>, f64),
    x_label_area: u32,
    hide_x_axis: bool,
) -> Plot<'a, 'b> {
    let y_label = &text.y_label;
    let font = |size: u32| (FONT_STACK, size).into_font();
    let mut ctx = ChartBuilder::on(root)
        .margin(12)
        .margin_top(frame.top)
        .margin_right(frame.right)
        .x_label_area_size(x_label_area)
        .y_label_area_size(frame.y_labels)
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
        .label_style(font(TEXT_SIZE))
        .axis_desc_style(font(AXIS_SIZE));
    if hide_x_axis {
        mesh.disable_x_axis();
    }
    mesh.draw().expect("mesh");
    ctx
}

/// The title and legend of a chart in `frame`: on a desktop the title along the top and
/// the legend in the column right of the plot; on a phone both on top, wrapped. The legend
/// has one swatch per series, and the ✕ of excluded configurations when `failed`.
pub(crate) fn header(
    root: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    frame: &Frame,
    text: &ChartText,
    failed: bool,
) {
    if frame.phone {
        phone::header(root, text, failed);
        return;
    }
    draw_title(root, &text.title);
    legend(
        root,
        (frame.width - frame.right + 12) as i32,
        text,
        failed.then_some(text.failed_label.as_str()),
    );
}

/// Whether any of `cells` is an excluded configuration.
pub(crate) fn any_failed<'a>(cells: impl IntoIterator<Item = &'a Cell>) -> bool {
    cells.into_iter().any(|c| matches!(c, Cell::Failed { .. }))
}

fn legend(
    root: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    x: i32,
    text: &ChartText,
    with_failed: Option<&str>,
) {
    let font = (FONT_STACK, TEXT_SIZE).into_font();
    let mut entries: Vec<(Option<RGBColor>, &str)> = text
        .series
        .iter()
        .enumerate()
        .map(|(i, n)| (Some(text.colour(i)), n.as_str()))
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
                    (FONT_STACK, MARK_SIZE).into_font().color(&FAILED),
                ))
                .expect("swatch"),
        }
        root.draw(&Text::new(*name, (x + 18, y - 7), font.clone()))
            .expect("legend text");
    }
}

/// `text` broken at spaces into at most three lines of about `width` px each at `size` (the
/// second cut with an ellipsis if it is still too long), so neighbouring category labels
/// never run into each other; the full text is in the chart's table and tooltips.
pub(crate) fn wrapped(text: &str, width: i32, size: u32) -> Vec<String> {
    wrap(text, width, size, Some(3))
}

/// `text` broken at spaces (and at its " · " parts) into lines of about `width` px at
/// `size`, as many as it takes when `most` is `None`.
pub(crate) fn wrap(text: &str, width: i32, size: u32, most: Option<usize>) -> Vec<String> {
    // DejaVu Sans averages about 0.6 em a Latin character, a CJK one about twice that;
    // plotters writes size / 1.24 px.
    let char_px = f64::from(size) / 1.24 * 0.6;
    let per_line = ((f64::from(width) - 4.0) / char_px).floor().max(4.0) as usize;
    let wide = |c: char| c as u32 >= 0x2E80;
    let units = |s: &str| {
        s.chars()
            .map(|c| if wide(c) { 2 } else { 1 })
            .sum::<usize>()
    };
    // A label's " · " parts ("16 KiB · 16×16") are lines of their own; a part that does not
    // fit is broken at its spaces, and between any two CJK characters (Chinese has no
    // spaces to break at).
    let mut lines: Vec<String> = Vec::new();
    for part in text.split(" · ") {
        let mut fresh = true;
        for word in part.split_whitespace() {
            // The word's pieces: runs of Latin characters, and each CJK character alone.
            let mut pieces: Vec<String> = Vec::new();
            for c in word.chars() {
                match pieces.last_mut() {
                    Some(p) if !wide(c) && !p.chars().last().is_some_and(wide) => p.push(c),
                    _ => pieces.push(c.to_string()),
                }
            }
            for (k, piece) in pieces.iter().enumerate() {
                let sep = usize::from(k == 0);
                match lines.last_mut() {
                    Some(line) if !fresh && units(line) + sep + units(piece) <= per_line => {
                        if k == 0 {
                            line.push(' ');
                        }
                        line.push_str(piece);
                    }
                    _ => lines.push(piece.clone()),
                }
                fresh = false;
            }
        }
    }
    if let Some(most) = most.filter(|m| lines.len() > *m && *m > 0) {
        let rest = lines.split_off(most - 1).join(" ");
        lines.push(rest);
    }
    for line in &mut lines {
        if units(line) > per_line {
            let mut used = 0;
            let cut: String = line
                .chars()
                .take_while(|c| {
                    used += if wide(*c) { 2 } else { 1 };
                    used < per_line
                })
                .collect();
            *line = format!("{}…", cut.trim_end());
        }
    }
    lines
}

/// [`wrapped`] lines of `text` centred under `at`, one below the other.
pub(crate) fn centered_lines(
    text: &str,
    at: (i32, i32),
    width: i32,
    size: u32,
) -> Vec<Text<'static, (i32, i32), String>> {
    let line_height = (f64::from(size) / 1.24 * 1.25).round() as i32;
    wrapped(text, width, size)
        .into_iter()
        .enumerate()
        .map(|(i, line)| {
            Text::new(
                line,
                (at.0, at.1 + i as i32 * line_height),
                TextStyle::from((FONT_STACK, size).into_font()).pos(
                    plotters::style::text_anchor::Pos::new(
                        plotters::style::text_anchor::HPos::Center,
                        plotters::style::text_anchor::VPos::Center,
                    ),
                ),
            )
        })
        .collect()
}

pub(crate) fn centered(text: &str, at: (i32, i32), size: u32) -> Text<'_, (i32, i32), &str> {
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
