//! Bar charts drawn for a phone's width: the same data as [`super::bars`], turned on its
//! side. The title wraps instead of being cut, the legend sits on top in as many rows as it
//! needs, and each group is a label above one horizontal bar per series, its median written
//! beside its whisker, so nothing needs an axis to be read and nothing scrolls sideways.

use std::fmt::Write as _;

use super::{wrap, Cell, ChartText, Tip, FAILED};
use crate::analysis::aggregate::Stat;
use crate::format;

/// The width every phone chart is drawn at: a 390 px screen less the page's margins, so a
/// chart shows at its own size and its smallest text at 11.3 CSS px.
pub(crate) const PHONE_WIDTH: u32 = 350;

const MARGIN: i32 = 10;
/// The title's size: 13.7 CSS px, smaller than a wide chart's so a long one takes fewer lines.
pub(crate) const TITLE: u32 = 17;
/// Room right of the longest whisker for its median.
const VALUE_ROOM: i32 = 74;
const BAR: i32 = 14;
const BAR_GAP: i32 = 4;

fn line_height(size: u32) -> i32 {
    (f64::from(size) / 1.24 * 1.3).round() as i32
}

/// The legend's entries laid out in rows across the width: (row, x) of each entry.
fn legend_rows(names: &[&str]) -> Vec<(i32, i32)> {
    let char_px = f64::from(super::TEXT_SIZE) / 1.24 * 0.62;
    let mut out = Vec::new();
    let (mut row, mut x) = (0, MARGIN);
    for name in names {
        // A CJK character is about twice as wide as a Latin one.
        let units: usize = name
            .chars()
            .map(|c| if c as u32 >= 0x2E80 { 2 } else { 1 })
            .sum();
        let w = 18 + (units as f64 * char_px).ceil() as i32 + 12;
        if x > MARGIN && x + w > PHONE_WIDTH as i32 - MARGIN {
            row += 1;
            x = MARGIN;
        }
        out.push((row, x));
        x += w;
    }
    out
}

/// The height of a phone chart's title and legend, for `text` (with the ✕ entry when
/// `failed`).
fn header_height(text: &ChartText, failed: bool) -> i32 {
    let title = wrap(&text.title, PHONE_WIDTH as i32 - 2 * MARGIN, TITLE, None);
    let mut names: Vec<&str> = text.series.iter().map(String::as_str).collect();
    if failed {
        names.push(&text.failed_label);
    }
    let rows = legend_rows(&names).last().map_or(0, |(r, _)| r + 1);
    MARGIN + title.len() as i32 * line_height(TITLE) + 4 + rows * line_height(super::TEXT_SIZE) + 8
}

/// The frame of a line or curve chart on a phone: the title and legend on top, then a plot
/// `plot_height` px tall over the full width.
pub(crate) fn frame(text: &ChartText, failed: bool, plot_height: u32) -> super::Frame {
    let top = header_height(text, failed) as u32;
    super::Frame {
        width: PHONE_WIDTH,
        height: top + plot_height + 58 + 12,
        // Room for half the last x tick's label past the plot's right end.
        right: 30,
        top,
        y_labels: 84,
        phone: true,
    }
}

/// Draws a phone chart's title (wrapped) and legend (in rows) along its top.
pub(crate) fn header(
    root: &plotters::prelude::DrawingArea<plotters::prelude::SVGBackend, plotters::coord::Shift>,
    text: &ChartText,
    failed: bool,
) {
    use plotters::prelude::*;
    let font = |size: u32| (super::FONT_STACK, size).into_font();
    let title = wrap(&text.title, PHONE_WIDTH as i32 - 2 * MARGIN, TITLE, None);
    let mut y = MARGIN;
    for line in title {
        root.draw(&Text::new(line, (MARGIN, y), font(TITLE)))
            .expect("title");
        y += line_height(TITLE);
    }
    y += 4;
    let mut names: Vec<&str> = text.series.iter().map(String::as_str).collect();
    if failed {
        names.push(&text.failed_label);
    }
    let text_h = line_height(super::TEXT_SIZE);
    for (i, (row, x)) in legend_rows(&names).into_iter().enumerate() {
        let ly = y + row * text_h;
        if i < text.series.len() {
            root.draw(&Rectangle::new(
                [(x, ly + 1), (x + 12, ly + 13)],
                text.colour(i).filled(),
            ))
            .expect("swatch");
        } else {
            root.draw(&Text::new(
                "✕",
                (x, ly - 1),
                font(super::MARK_SIZE).color(&FAILED),
            ))
            .expect("swatch");
        }
        root.draw(&Text::new(names[i], (x + 18, ly), font(super::TEXT_SIZE)))
            .expect("legend text");
    }
}

/// Draws `chart` for a phone as an SVG document, written directly (a phone page inlines one
/// per chart, so every byte counts): text inherits its font from the root element.
pub fn bars(chart: &super::BarChart) -> String {
    let layout = BarsLayout::of(chart);
    let mut svg = format!(
        "<svg width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" xmlns=\"http://www.w3.org/2000/svg\">\n<rect width=\"{width}\" height=\"{height}\" fill=\"#FFFFFF\"/>\n<g font-size=\"{}\" fill=\"#000000\">\n",
        px(super::TEXT_SIZE),
        width = PHONE_WIDTH as i32,
        height = layout.height(),
    );
    layout.header(&mut svg);
    let mut tips = Vec::new();
    let mut y = layout.top;
    for (g, row) in chart.cells.iter().enumerate() {
        y = layout.group(&mut svg, &mut tips, g, row, y);
    }
    svg.push_str("</g>\n</svg>\n");
    super::finish_svg(svg, &chart.text.title, &chart.text.description, &tips)
}

/// A size as a phone chart's SVG writes it: the CSS px plotters would write for `size`.
fn px(size: u32) -> String {
    format::grouped(f64::from(size) / 1.24, 1).replace(',', "")
}

/// `#RRGGBB` of a colour.
fn hex(c: plotters::style::RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

/// The attributes of the ✕ of an excluded configuration.
fn failed_mark() -> String {
    format!(
        " font-size=\"{}\" fill=\"{}\"",
        px(super::MARK_SIZE),
        hex(FAILED)
    )
}

/// Writes text `t` at (`x`, `y`) with `extra` attributes, placed by its top edge, as the wide
/// charts place theirs.
fn put(svg: &mut String, x: i32, y: i32, extra: &str, t: &str) {
    let _ = writeln!(
        svg,
        "<text x=\"{x}\" y=\"{y}\" dy=\"0.76em\"{extra}>{}</text>",
        super::escape_xml(t)
    );
}

/// Where everything of a phone bar chart goes: the wrapped title, the legend's rows, each
/// group's wrapped label, and the scale of the bars.
struct BarsLayout<'a> {
    chart: &'a super::BarChart,
    title: Vec<String>,
    /// The legend's entries: the series, then the ✕ entry when a configuration failed.
    names: Vec<&'a str>,
    /// (row, x) of each legend entry.
    legend: Vec<(i32, i32)>,
    /// Each group's label, wrapped.
    labels: Vec<Vec<String>>,
    title_h: i32,
    text_h: i32,
    /// Where the first group starts.
    top: i32,
    /// Pixels per unit of the bars' values.
    scale: f64,
    /// The decimals each median is written with.
    decimals: usize,
}

impl<'a> BarsLayout<'a> {
    /// The layout of `chart` at [`PHONE_WIDTH`].
    fn of(chart: &'a super::BarChart) -> Self {
        let text: &ChartText = &chart.text;
        let width = PHONE_WIDTH as i32;
        let title = wrap(&text.title, width - 2 * MARGIN, TITLE, None);
        let failed = chart
            .cells
            .iter()
            .flatten()
            .any(|c| matches!(c, Cell::Failed { .. }));
        let mut names: Vec<&str> = text.series.iter().map(String::as_str).collect();
        if failed {
            names.push(&text.failed_label);
        }
        let legend = legend_rows(&names);
        let legend_rows_n = legend.last().map_or(0, |(r, _)| r + 1);
        let (title_h, text_h) = (line_height(TITLE), line_height(super::TEXT_SIZE));
        let labels: Vec<Vec<String>> = chart
            .groups
            .iter()
            .map(|g| wrap(g, width - 2 * MARGIN, super::TEXT_SIZE, None))
            .collect();
        let top = MARGIN + title.len() as i32 * title_h + 4 + legend_rows_n * text_h + text_h + 8;
        let x_max = chart
            .cells
            .iter()
            .flatten()
            .filter_map(|c| match c {
                Cell::Value { stat, .. } => Some(stat.max),
                _ => None,
            })
            .fold(0.0f64, f64::max);
        let area = f64::from(width - 2 * MARGIN - VALUE_ROOM);
        Self {
            chart,
            title,
            names,
            legend,
            labels,
            title_h,
            text_h,
            top,
            scale: if x_max > 0.0 { area / x_max } else { 0.0 },
            decimals: if x_max < 10.0 { 2 } else { 0 },
        }
    }

    /// The height of group `g`: its label's lines and one bar per measured series.
    fn group_height(&self, g: usize) -> i32 {
        let bars = self.chart.cells[g]
            .iter()
            .filter(|c| !matches!(c, Cell::Missing))
            .count() as i32;
        self.labels[g].len() as i32 * self.text_h + bars * (BAR + BAR_GAP) + 10
    }

    /// The height of the whole chart.
    fn height(&self) -> i32 {
        self.top
            + (0..self.chart.groups.len())
                .map(|g| self.group_height(g))
                .sum::<i32>()
            + MARGIN
    }

    /// The x of value `v`.
    fn at(&self, v: f64) -> i32 {
        MARGIN + (v * self.scale).round() as i32
    }

    /// Writes the title, the legend and the y axis's name along the top.
    fn header(&self, svg: &mut String) {
        let text = &self.chart.text;
        let mut y = MARGIN;
        let title_size = format!(" font-size=\"{}\"", px(TITLE));
        for line in &self.title {
            put(svg, MARGIN, y, &title_size, line);
            y += self.title_h;
        }
        y += 4;
        for (i, (row, x)) in self.legend.iter().enumerate() {
            let ly = y + row * self.text_h;
            if i < text.series.len() {
                let _ = writeln!(
                    svg,
                    "<rect x=\"{x}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/>",
                    ly + 1,
                    hex(text.colour(i))
                );
            } else {
                put(svg, *x, ly - 1, &failed_mark(), "✕");
            }
            put(svg, x + 18, ly, "", self.names[i]);
        }
        let legend_rows_n = self.legend.last().map_or(0, |(r, _)| r + 1);
        y += legend_rows_n * self.text_h;
        put(svg, MARGIN, y + 2, " fill=\"#4D4D4D\"", &text.y_label);
    }

    /// Writes group `g` (its `row` of cells) from `y` down: its label, then one bar per
    /// series; returns where the next group starts.
    fn group(
        &self,
        svg: &mut String,
        tips: &mut Vec<Tip>,
        g: usize,
        row: &[Cell],
        mut y: i32,
    ) -> i32 {
        for line in &self.labels[g] {
            put(svg, MARGIN, y, "", line);
            y += self.text_h;
        }
        for (s, cell) in row.iter().enumerate() {
            match cell {
                Cell::Value { stat, tooltip } => {
                    let hi = self.bar(svg, s, stat, y);
                    tips.push((MARGIN, y, hi - MARGIN + 4, BAR, tooltip.clone()));
                }
                Cell::Failed { tooltip } => {
                    put(svg, MARGIN, y - 1, &failed_mark(), "✕");
                    tips.push((MARGIN, y, 16, BAR, tooltip.clone()));
                }
                Cell::Missing => continue,
            }
            y += BAR + BAR_GAP;
        }
        y + 10
    }

    /// Writes series `s`'s bar at `y`: the median, the min–max whisker and the median's
    /// value beside it; returns the whisker's right end.
    fn bar(&self, svg: &mut String, s: usize, stat: &Stat, y: i32) -> i32 {
        let (lo, mid, hi) = (self.at(stat.min), y + BAR / 2, self.at(stat.max));
        let _ = writeln!(
            svg,
            "<rect x=\"{MARGIN}\" y=\"{y}\" width=\"{}\" height=\"{BAR}\" fill=\"{}\"/>",
            (self.at(stat.median) - MARGIN).max(1),
            hex(self.chart.text.colour(s))
        );
        let _ = writeln!(
            svg,
            "<path d=\"M{lo} {mid}H{hi}M{lo} {}V{}M{hi} {}V{}\" stroke=\"#000000\" fill=\"none\"/>",
            mid - 4,
            mid + 4,
            mid - 4,
            mid + 4
        );
        put(
            svg,
            hi + 4,
            y + 1,
            "",
            &format::grouped(stat.median, self.decimals),
        );
        hi
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::aggregate::Stat;
    use crate::site::charts::BarChart;

    fn chart(groups: usize, series: usize) -> BarChart {
        let stat = |m: f64| Stat {
            median: m,
            min: m * 0.9,
            max: m * 1.1,
        };
        BarChart {
            text: ChartText {
                title: "epyc2-20261201-baseline · tokio · Throughput at 1,024 B, 16 clients, TCP window 16, UDP window 1".into(),
                description: "median bars".into(),
                y_label: "round trips/s".into(),
                series: (0..series).map(|s| format!("{s} runtimes / 1 thread each")).collect(),
                colours: (0..series).collect(),
                failed_label: "excluded (a run failed)".into(),
            },
            groups: (0..groups).map(|g| format!("Protocol {g}")).collect(),
            cells: (0..groups)
                .map(|g| {
                    (0..series)
                        .map(|s| match (g + s) % 7 {
                            0 => Cell::Failed {
                                tooltip: "failed".into(),
                            },
                            _ => Cell::Value {
                                stat: stat(1000.0 * (g + s + 1) as f64),
                                tooltip: format!("{g}/{s}"),
                            },
                        })
                        .collect()
                })
                .collect(),
        }
    }

    /// The x of every drawn element must lie within the chart's width.
    fn xs(svg: &str) -> Vec<f64> {
        let mut out = Vec::new();
        for attr in ["x=\"", "x1=\"", "x2=\""] {
            for part in svg.split(attr).skip(1) {
                if let Some(v) = part.split('"').next().and_then(|v| v.parse().ok()) {
                    out.push(v);
                }
            }
        }
        out
    }

    #[test]
    fn a_phone_chart_fits_its_width_with_the_legend_and_every_value() {
        let c = chart(7, 5);
        let svg = bars(&c);
        assert_eq!(svg, bars(&c), "byte-stable");
        assert!(
            svg.starts_with(&format!("<svg width=\"{PHONE_WIDTH}\"")),
            "{:.80}",
            svg
        );
        assert!(
            xs(&svg).iter().all(|x| *x <= f64::from(PHONE_WIDTH)),
            "inside the width"
        );
        // Every series is in the legend, the title is whole (wrapped, not cut), and every
        // median is written beside its bar.
        for s in &c.text.series {
            assert!(svg.contains(s.as_str()), "{s}");
        }
        assert!(svg.contains("excluded (a run failed)"));
        assert!(!svg.contains('…'), "the title wraps instead of being cut");
        assert!(svg.contains(">11,000</text>"), "values written");
        assert!(svg.contains("role=\"img\"") && svg.contains("<title>0/1</title>"));
    }
}
