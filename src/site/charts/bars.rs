//! Grouped bar charts: per group, one bar per series (a median with a min/max whisker), an
//! excluded configuration marked with ✕.

use plotters::prelude::*;

use super::{
    any_failed, axis_top, header, plot_area, render_chart, Cell, ChartText, Frame, FAILED,
    FONT_STACK,
};

/// A grouped bar chart: for every group (x position), one bar per series.
#[derive(Debug, Clone)]
pub struct BarChart {
    pub text: ChartText,
    pub groups: Vec<String>,
    /// `cells[group][series]`.
    pub cells: Vec<Vec<Cell>>,
}

/// Draws `chart` as an SVG document.
pub fn draw(chart: &BarChart) -> String {
    let text = &chart.text;
    // The legend sits in a column right of the plot, so it never covers a bar.
    let frame = Frame::wide(super::BAR_HEIGHT);
    let y_max = axis_top(chart.cells.iter().flatten());
    let groups = chart.groups.len().max(1);
    let series = text.series.len().max(1);
    render_chart(frame.size(), text, |root, tips| {
        let font = |size: u32| (FONT_STACK, size).into_font();
        header(root, &frame, text, any_failed(chart.cells.iter().flatten()));
        let mut ctx = plot_area(root, &frame, text, (0f64..groups as f64, y_max), 58, true);
        let slot = 0.8 / series as f64;
        for s in 0..text.series.len() {
            let color = text.colour(s);
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
                            font(super::MARK_SIZE).color(&FAILED).pos(
                                plotters::style::text_anchor::Pos::new(
                                    plotters::style::text_anchor::HPos::Center,
                                    plotters::style::text_anchor::VPos::Center,
                                ),
                            ),
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
        let column = ctx.backend_coord(&(1.0, 0.0)).0 - ctx.backend_coord(&(0.0, 0.0)).0;
        for (g, label) in chart.groups.iter().enumerate() {
            let at = ctx.backend_coord(&(g as f64 + 0.5, 0.0));
            for line in super::centered_lines(label, (at.0, at.1 + 14), column, super::TEXT_SIZE) {
                root.draw(&line).expect("group label");
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::aggregate::Stat;

    fn sample() -> BarChart {
        let stat = |m: f64| Stat {
            median: m,
            min: m * 0.9,
            max: m * 1.1,
        };
        BarChart {
            text: ChartText {
                title: "TCP 吞吐量 <test>".into(),
                description: "median bars".into(),
                y_label: "往返 / s".into(),
                series: vec!["1 / 1".into(), "2 / 1".into()],
                colours: vec![0, 3],
                failed_label: "excluded".into(),
            },
            groups: vec!["64 B".into(), "1024 B".into()],
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
        }
    }

    #[test]
    fn chart_is_accessible_byte_stable_and_has_tooltips() {
        let a = draw(&sample());
        let b = draw(&sample());
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
