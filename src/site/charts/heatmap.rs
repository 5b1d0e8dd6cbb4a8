//! Heat maps: a grid of cells over payload × window, green where every run passed, shading
//! to red with the share of failed runs.

use plotters::prelude::*;

use super::{centered, render_svg, Root, Tip};

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
pub fn draw(map: &Heatmap) -> String {
    draw_in(map, false)
}

/// Draws `map` for a phone's width: narrower cells, the title wrapped above them.
pub fn phone(map: &Heatmap) -> String {
    draw_in(map, true)
}

/// Draws `map` as a desktop or a phone chart.
fn draw_in(map: &Heatmap, phone: bool) -> String {
    let grid = Grid::of(map, phone);
    render_svg(
        (grid.width, grid.height),
        &map.title,
        &map.description,
        |root, tips| {
            grid.title(root);
            for (y, row) in map.cells.iter().enumerate() {
                for (x, cell) in row.iter().enumerate() {
                    grid.cell(root, tips, (x, y), cell);
                }
            }
            grid.axes(root, map);
        },
    )
}

/// Where a heat map's parts go: its title lines, and the grid of cells with the y axis's
/// labels left of it and the x axis's below.
struct Grid {
    phone: bool,
    /// The title: one line cut to fit on a desktop, wrapped on a phone.
    title_lines: Vec<String>,
    /// A phone title line's height.
    title_h: i32,
    cols: i32,
    rows: i32,
    /// The grid's left and top edges.
    left: i32,
    top: i32,
    cell_w: i32,
    cell_h: i32,
    width: u32,
    height: u32,
}

impl Grid {
    /// The layout of `map`, at a phone's width when `phone`.
    fn of(map: &Heatmap, phone: bool) -> Self {
        let (cols, rows) = (
            map.x_ticks.len().max(1) as i32,
            map.y_ticks.len().max(1) as i32,
        );
        let title_lines = if phone {
            super::wrap(
                &map.title,
                super::phone::PHONE_WIDTH as i32 - 20,
                super::phone::TITLE,
                None,
            )
        } else {
            vec![super::drawn_title(&map.title)]
        };
        let title_h = (f64::from(super::phone::TITLE) / 1.24 * 1.3).round() as i32;
        let (left, top, cell_w, cell_h) = if phone {
            let left = 72i32;
            let cell_w = ((super::phone::PHONE_WIDTH as i32 - left - 10) / cols).min(130);
            (
                left,
                10 + title_lines.len() as i32 * title_h + 30,
                cell_w,
                40i32,
            )
        } else {
            (120i32, 56i32, 130i32, 40i32)
        };
        let width = if phone {
            super::phone::PHONE_WIDTH
        } else {
            (left + cols * cell_w + 24) as u32
        };
        Self {
            phone,
            title_lines,
            title_h,
            cols,
            rows,
            left,
            top,
            cell_w,
            cell_h,
            width,
            height: (top + rows * cell_h + 64) as u32,
        }
    }

    /// Draws the title: wrapped from the left on a phone, centred on a desktop.
    fn title(&self, root: &Root) {
        if self.phone {
            for (i, line) in self.title_lines.iter().enumerate() {
                root.draw(&Text::new(
                    line.clone(),
                    (10, 10 + i as i32 * self.title_h),
                    (super::FONT_STACK, super::phone::TITLE).into_font(),
                ))
                .expect("title");
            }
        } else {
            root.draw(&centered(
                &self.title_lines[0],
                (self.width as i32 / 2, 20),
                super::TITLE_SIZE,
            ))
            .expect("title");
        }
    }

    /// Draws the cell at column `x` of row `y`: its shade, its label and its tooltip.
    fn cell(&self, root: &Root, tips: &mut Vec<Tip>, (x, y): (usize, usize), cell: &HeatCell) {
        let (cell_w, cell_h) = (self.cell_w, self.cell_h);
        let x0 = self.left + x as i32 * cell_w;
        let y0 = self.top + y as i32 * cell_h;
        root.draw(&Rectangle::new(
            [(x0, y0), (x0 + cell_w - 2, y0 + cell_h - 2)],
            fill(cell.failed_share).filled(),
        ))
        .expect("cell");
        root.draw(&centered(
            &cell.label,
            (x0 + cell_w / 2, y0 + cell_h / 2),
            super::TEXT_SIZE,
        ))
        .expect("cell text");
        tips.push((x0, y0, cell_w - 2, cell_h - 2, cell.tooltip.clone()));
    }

    /// Draws both axes' ticks and names.
    fn axes(&self, root: &Root, map: &Heatmap) {
        let (left, top, cell_w, cell_h) = (self.left, self.top, self.cell_w, self.cell_h);
        let bottom = top + self.rows * cell_h;
        for (x, tick) in map.x_ticks.iter().enumerate() {
            root.draw(&centered(
                tick,
                (left + x as i32 * cell_w + cell_w / 2, bottom + 14),
                super::TEXT_SIZE,
            ))
            .expect("x tick");
        }
        for (y, tick) in map.y_ticks.iter().enumerate() {
            root.draw(&centered(
                tick,
                (left / 2, top + y as i32 * cell_h + cell_h / 2),
                super::TEXT_SIZE,
            ))
            .expect("y tick");
        }
        root.draw(&centered(
            &map.x_label,
            (left + self.cols * cell_w / 2, bottom + 40),
            super::AXIS_SIZE,
        ))
        .expect("x label");
        root.draw(&centered(
            &map.y_label,
            (left / 2, top - 14),
            super::AXIS_SIZE,
        ))
        .expect("y label");
    }
}

/// A cell's colour: grey when not measured, green when every run passed, shading from
/// orange to red with the share of failed runs.
fn fill(failed_share: Option<f64>) -> RGBColor {
    match failed_share {
        None => RGBColor(0xee, 0xee, 0xee),
        Some(f) if f <= 0.0 => RGBColor(0xcd, 0xe8, 0xd0),
        Some(f) => {
            let t = f.clamp(0.0, 1.0);
            let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * t).round() as u8;
            RGBColor(mix(0xf6, 0xd7), mix(0xd3, 0x5a), mix(0xa4, 0x5a))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::aggregate::Stat;
    use crate::site::charts::{lines, Cell, ChartText, LineChart};

    #[test]
    fn line_chart_and_heatmap_are_accessible_and_mark_failures() {
        let stat = |m: f64| Stat {
            median: m,
            min: m * 0.9,
            max: m * 1.1,
        };
        let chart = LineChart {
            text: ChartText {
                title: "UDP over windows".into(),
                description: "d".into(),
                y_label: "rt/s".into(),
                series: vec!["1 / 1".into()],
                colours: vec![0],
                failed_label: "excluded".into(),
            },
            marks: vec![(0, 1)],
            x_label: "window".into(),
            x_ticks: vec!["1".into(), "4".into(), "16".into()],
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
        };
        let svg = lines::draw(&chart);
        assert_eq!(svg, lines::draw(&chart));
        assert!(
            svg.contains("<title>w4: 30</title>")
                && svg.contains("<title>w16 excluded</title>")
                && svg.contains("✕")
        );
        assert!(svg.contains("<polyline"), "a line is drawn");
        assert_eq!(
            svg.matches('▼').count(),
            1,
            "the one mark, on a point with a value"
        );
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
        let svg = draw(&map);
        assert!(
            svg.contains("<title>lost 767</title>")
                && svg.contains("0/3 · 767")
                && svg.contains("role=\"img\"")
        );
    }
}
