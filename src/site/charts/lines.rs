//! Lines over a categorical x axis (windows): one line per series, whiskers at each point,
//! excluded configurations marked on the axis.

use plotters::prelude::*;

use super::{
    any_failed, axis_top, centered, header, plot_area, render_chart, Cell, ChartText, Frame, Plot,
    Root, Tip, FAILED, FONT_STACK,
};

/// A line chart.
#[derive(Debug, Clone)]
pub struct LineChart {
    pub text: ChartText,
    pub x_label: String,
    pub x_ticks: Vec<String>,
    /// `points[series][x]`.
    pub points: Vec<Vec<Cell>>,
    /// (series, x) points to flag with ▼ above their whisker (a regression on a history
    /// chart); empty elsewhere.
    pub marks: Vec<(usize, usize)>,
}

/// Draws `chart` as an SVG document.
pub fn draw(chart: &LineChart) -> String {
    draw_in(chart, Frame::wide(super::LINE_HEIGHT))
}

/// Draws `chart` for a phone's width: title and legend on top.
pub fn phone(chart: &LineChart) -> String {
    let failed = any_failed(chart.points.iter().flatten());
    draw_in(chart, super::phone::frame(&chart.text, failed, 300))
}

/// Draws `chart` in `frame`.
fn draw_in(chart: &LineChart, frame: Frame) -> String {
    let text = &chart.text;
    let y_max = axis_top(chart.points.iter().flatten());
    let n = chart.x_ticks.len().max(1);
    render_chart(frame.size(), text, |root, tips| {
        header(
            root,
            &frame,
            text,
            any_failed(chart.points.iter().flatten()),
        );
        let mut ctx = plot_area(
            root,
            &frame,
            text,
            (-0.5f64..(n as f64 - 0.5), y_max),
            58,
            false,
        );
        for (s, row) in chart.points.iter().enumerate() {
            series(root, &mut ctx, tips, (s, text.colour(s)), row);
        }
        marks(root, &ctx, chart);
        x_axis(root, &ctx, chart, n);
    })
}

/// Draws series `s`'s `row` in `color`: a whisker and tooltip at each value, a line through
/// each run of consecutive values, and a ✕ on the axis where the configuration failed.
fn series(
    root: &Root,
    ctx: &mut Plot,
    tips: &mut Vec<Tip>,
    (s, color): (usize, RGBColor),
    row: &[Cell],
) {
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
                failed_mark(root, ctx, tips, (s, x), tooltip);
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

/// Draws the ✕ of series `s`'s failed configuration at `x`, on the axis, with its tooltip.
fn failed_mark(
    root: &Root,
    ctx: &Plot,
    tips: &mut Vec<Tip>,
    (s, x): (usize, usize),
    tooltip: &str,
) {
    // Stacked one above the other when several series fail at one x, a glyph and a gap
    // apart.
    let at = ctx.backend_coord(&(x as f64, 0.0));
    let up = 22 + (super::MARK_SIZE as i32 + 4) * s as i32;
    root.draw(&Text::new(
        "✕",
        (at.0 - 5, at.1 - up),
        (FONT_STACK, super::MARK_SIZE).into_font().color(&FAILED),
    ))
    .expect("marker");
    tips.push((at.0 - 8, at.1 - up - 2, 16, 16, tooltip.to_string()));
}

/// Draws a ▼ above the whisker of each of the chart's marked points that has a value.
fn marks(root: &Root, ctx: &Plot, chart: &LineChart) {
    for &(s, x) in &chart.marks {
        if let Some(Cell::Value { stat, .. }) = chart.points.get(s).and_then(|row| row.get(x)) {
            let top = ctx.backend_coord(&(x as f64, stat.max));
            root.draw(&Text::new(
                "▼",
                (top.0 - 6, top.1 - 20),
                (FONT_STACK, super::MARK_SIZE).into_font().color(&FAILED),
            ))
            .expect("mark");
        }
    }
}

/// Draws the x axis's `n` ticks (wrapped to the space between them) and its name.
fn x_axis(root: &Root, ctx: &Plot, chart: &LineChart, n: usize) {
    let step = if n > 1 {
        ctx.backend_coord(&(1.0, 0.0)).0 - ctx.backend_coord(&(0.0, 0.0)).0
    } else {
        400
    };
    for (x, tick) in chart.x_ticks.iter().enumerate() {
        let at = ctx.backend_coord(&(x as f64, 0.0));
        for line in super::centered_lines(tick, (at.0, at.1 + 14), step, super::TEXT_SIZE) {
            root.draw(&line).expect("tick");
        }
    }
    let axis = ctx.backend_coord(&((n as f64 - 1.0) / 2.0, 0.0));
    root.draw(&centered(
        &chart.x_label,
        (axis.0, axis.1 + 44),
        super::AXIS_SIZE,
    ))
    .expect("x label");
}
