//! Latency against load: a numeric x axis (achieved messages per second), a logarithmic y
//! axis (latency spans orders of magnitude between p50 and p99.9 near saturation), one line
//! per percentile with min–max whiskers, saturated points drawn apart as ✕, and the knee as
//! a dashed vertical line.

use plotters::prelude::*;

use super::{header, render_chart, ChartText, Frame, Root, Tip, FAILED, FONT_STACK};
use crate::analysis::aggregate::Stat;
use crate::format;

/// One point of one percentile's line.
#[derive(Debug, Clone, PartialEq)]
pub struct CurvePoint {
    /// Achieved rate (median over the runs).
    pub x: f64,
    pub y: Stat,
    /// Not a point of the curve: drawn as ✕ at its median, without a line through it.
    pub saturated: bool,
    pub tooltip: String,
}

/// A latency-against-load chart.
#[derive(Debug, Clone)]
pub struct CurveChart {
    pub text: ChartText,
    pub x_label: String,
    /// `lines[series]`, each in ascending x.
    pub lines: Vec<Vec<CurvePoint>>,
    /// The knee's achieved rate and its label.
    pub knee: Option<(f64, String)>,
    /// The legend entry of saturated points (shown when there is one).
    pub saturated_label: String,
}

/// Chart height.
const HEIGHT: u32 = 420;

/// Draws `chart` as an SVG document.
pub fn draw(chart: &CurveChart) -> String {
    draw_in(chart, Frame::wide(HEIGHT))
}

/// Draws `chart` for a phone's width: title and legend on top.
pub fn phone(chart: &CurveChart) -> String {
    let saturated = chart.lines.iter().flatten().any(|p| p.saturated);
    let text = ChartText {
        failed_label: chart.saturated_label.clone(),
        ..chart.text.clone()
    };
    draw_in(chart, super::phone::frame(&text, saturated, 300))
}

/// Draws `chart` in `frame`.
fn draw_in(chart: &CurveChart, frame: Frame) -> String {
    let text = &chart.text;
    let ranges = Ranges::of(chart);
    let legend_text = ChartText {
        failed_label: chart.saturated_label.clone(),
        ..text.clone()
    };
    render_chart(frame.size(), text, |root, tips| {
        let saturated = chart.lines.iter().flatten().any(|p| p.saturated);
        header(root, &frame, &legend_text, saturated);
        let mut ctx = plot(root, &frame, chart, &ranges);
        if let Some((x, label)) = &chart.knee {
            knee(root, &mut ctx, &frame, (*x, label), &ranges);
        }
        for (s, line) in chart.lines.iter().enumerate() {
            percentile_line(root, &mut ctx, tips, (text.colour(s), line), ranges.y_min);
        }
    })
}

/// A curve chart's plot: a linear x axis and a logarithmic y axis.
type Plot<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<
        plotters::coord::types::RangedCoordf64,
        plotters::coord::combinators::LogCoord<f64>,
    >,
>;

/// The axes' ranges: from 0 to past the largest rate, and whole decades around the latencies.
struct Ranges {
    x_max: f64,
    y_min: f64,
    y_max: f64,
}

impl Ranges {
    /// The ranges that hold every point of `chart`.
    fn of(chart: &CurveChart) -> Self {
        let all = || chart.lines.iter().flatten();
        let x_max = all().map(|p| p.x).fold(0.0f64, f64::max).max(1.0) * 1.08;
        let y_low = all().map(|p| p.y.min).fold(f64::INFINITY, f64::min);
        let y_high = all().map(|p| p.y.max).fold(0.0f64, f64::max);
        // Whole decades around the data, so the logarithmic axis labels are round numbers.
        let y_min = 10f64.powf(y_low.max(0.1).log10().floor());
        let y_max = 10f64.powf(y_high.max(y_min * 10.0).log10().ceil());
        Self {
            x_max,
            y_min,
            y_max,
        }
    }
}

/// The plot of `chart` in `frame`, its axes and light horizontal mesh drawn.
fn plot<'a, 'b>(
    root: &'a Root<'b>,
    frame: &Frame,
    chart: &CurveChart,
    ranges: &Ranges,
) -> Plot<'a, 'b> {
    let font = |size: u32| (FONT_STACK, size).into_font();
    let mut ctx = ChartBuilder::on(root)
        .margin(12)
        .margin_top(frame.top)
        .margin_right(frame.right)
        .x_label_area_size(44)
        .y_label_area_size(frame.y_labels)
        .build_cartesian_2d(0f64..ranges.x_max, (ranges.y_min..ranges.y_max).log_scale())
        .expect("valid ranges");
    let x_format = |v: &f64| format::grouped(*v, 0);
    let y_format = |v: &f64| format::grouped(*v, if *v < 1.0 { 1 } else { 0 });
    ctx.configure_mesh()
        .disable_x_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(BLACK.mix(0.12))
        .x_desc(&chart.x_label)
        .y_desc(&chart.text.y_label)
        .x_labels(if frame.phone { 3 } else { 6 })
        .x_label_formatter(&x_format)
        .y_label_formatter(&y_format)
        .label_style(font(super::TEXT_SIZE))
        .axis_desc_style(font(super::AXIS_SIZE))
        .draw()
        .expect("mesh");
    ctx
}

/// Draws the knee at rate `x`: a dashed vertical line, and `label` beside its top.
fn knee(root: &Root, ctx: &mut Plot, frame: &Frame, (x, label): (f64, &str), ranges: &Ranges) {
    ctx.draw_series(DashedLineSeries::new(
        vec![(x, ranges.y_min), (x, ranges.y_max)],
        6,
        4,
        BLACK.mix(0.55).stroke_width(1),
    ))
    .expect("knee");
    let top = ctx.backend_coord(&(x, ranges.y_max));
    // Right of the line, or left of it where the label would leave the plot.
    let width =
        (label.chars().count() as f64 * f64::from(super::TEXT_SIZE) / 1.24 * 0.62).ceil() as i32;
    let right_edge = (frame.width - frame.right) as i32;
    let at = if top.0 + 4 + width > right_edge {
        top.0 - 4 - width
    } else {
        top.0 + 4
    };
    root.draw(&Text::new(
        label,
        (at, top.1 + 4),
        (FONT_STACK, super::TEXT_SIZE).into_font(),
    ))
    .expect("knee label");
}

/// Draws one percentile's `line` in `color`: the curve through its unsaturated points, every
/// point's whisker (cut at the axis's bottom `y_min`) and tooltip, and a ✕ at each saturated
/// point's median.
fn percentile_line(
    root: &Root,
    ctx: &mut Plot,
    tips: &mut Vec<Tip>,
    (color, line): (RGBColor, &[CurvePoint]),
    y_min: f64,
) {
    let curve: Vec<(f64, f64)> = line
        .iter()
        .filter(|p| !p.saturated)
        .map(|p| (p.x, p.y.median))
        .collect();
    ctx.draw_series(LineSeries::new(curve.clone(), color.stroke_width(2)))
        .expect("line");
    ctx.draw_series(curve.into_iter().map(|p| Circle::new(p, 3, color.filled())))
        .expect("points");
    for p in line {
        ctx.draw_series(std::iter::once(PathElement::new(
            vec![(p.x, p.y.min.max(y_min)), (p.x, p.y.max)],
            color.stroke_width(1),
        )))
        .expect("whisker");
        let top = ctx.backend_coord(&(p.x, p.y.max));
        let bottom = ctx.backend_coord(&(p.x, p.y.min.max(y_min)));
        tips.push((
            top.0 - 6,
            top.1 - 6,
            12,
            (bottom.1 - top.1) + 12,
            p.tooltip.clone(),
        ));
        if p.saturated {
            saturated_mark(root, ctx.backend_coord(&(p.x, p.y.median)));
        }
    }
}

/// Draws the ✕ of a saturated point centred on `(x, y)`: a drawn cross, not a glyph, since
/// a saturated point's percentiles can lie closer together than a glyph is tall, and their
/// marks may then meet as points do, without any text overlapping.
fn saturated_mark(root: &Root, (x, y): (i32, i32)) {
    let arm = super::MARK_SIZE as i32 / 3;
    for (from, to) in [
        ((x - arm, y - arm), (x + arm, y + arm)),
        ((x - arm, y + arm), (x + arm, y - arm)),
    ] {
        root.draw(&PathElement::new(vec![from, to], FAILED.stroke_width(2)))
            .expect("saturated mark");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(x: f64, y: f64, saturated: bool) -> CurvePoint {
        CurvePoint {
            x,
            y: Stat {
                median: y,
                min: y * 0.9,
                max: y * 1.2,
            },
            saturated,
            tooltip: format!("{x} msg/s: {y} µs"),
        }
    }

    #[test]
    fn draws_lines_whiskers_the_knee_and_saturated_marks() {
        let chart = CurveChart {
            text: ChartText {
                title: "tcp".into(),
                description: "latency against load".into(),
                y_label: "µs".into(),
                series: vec!["p50".into(), "p99".into()],
                colours: vec![0, 3],
                failed_label: String::new(),
            },
            x_label: "msg/s".into(),
            lines: vec![
                vec![point(1000.0, 20.0, false), point(5000.0, 25.0, false)],
                vec![
                    point(1000.0, 80.0, false),
                    point(5000.0, 150.0, false),
                    point(9000.0, 40_000.0, true),
                ],
            ],
            knee: Some((5000.0, "knee".into())),
            saturated_label: "saturated".into(),
        };
        let svg = draw(&chart);
        assert!(svg.contains("<title id=\"t\">tcp</title>"));
        assert!(
            svg.contains("9000 msg/s: 40000 µs"),
            "tooltips for every point"
        );
        assert!(svg.contains("✕") && svg.contains("saturated"));
        assert!(svg.contains("knee"));
    }
}
