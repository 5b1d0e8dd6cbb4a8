//! A page table as data: columns with a label and an alignment, rows of cells. One template
//! partial (`templates/pages/partials.md`) renders every table, so the header, the
//! alignment row and the cells cannot disagree.

use serde::Serialize;

use super::markup::Markup;

/// How a column's cells are aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// The renderer's default (`---`).
    Default,
    /// `:---`
    Left,
    /// `---:` (numbers).
    Right,
}

impl Serialize for Align {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(match self {
            Align::Default => "---",
            Align::Left => ":---",
            Align::Right => "---:",
        })
    }
}

/// One column.
#[derive(Debug, Clone, Serialize)]
pub struct Column {
    pub label: Markup,
    pub align: Align,
}

/// A table: every row has one cell per column (an empty cell shows nothing).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Table {
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Markup>>,
}

impl Table {
    /// A table with these column labels and alignments and no rows yet.
    pub fn new(labels: Vec<Markup>, aligns: &[Align]) -> Self {
        let columns = labels
            .into_iter()
            .enumerate()
            .map(|(i, label)| Column {
                label,
                align: aligns.get(i).copied().unwrap_or(Align::Default),
            })
            .collect();
        Self {
            columns,
            rows: Vec::new(),
        }
    }

    /// Adds a row; missing cells are empty, extra cells are a bug. A pipe a cell holds
    /// unescaped (inside a code span, where text escaping does not reach) is escaped here,
    /// so no cell can end early.
    pub fn push(&mut self, cells: Vec<Markup>) {
        debug_assert!(cells.len() <= self.columns.len(), "more cells than columns");
        let mut cells: Vec<Markup> = cells.iter().map(Markup::in_table_cell).collect();
        cells.resize(self.columns.len(), Markup::default());
        self.rows.push(cells);
    }

    /// Whether the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::site::render::environment;

    fn render(table: &Table) -> String {
        let env = environment();
        let tmpl = env
            .template_from_str("{% from \"partials.md\" import table %}{{ table(t) }}")
            .unwrap();
        tmpl.render(minijinja::context! { t => table }).unwrap()
    }

    #[test]
    fn header_alignment_and_cells_come_from_one_column_list() {
        let mut t = Table::new(
            vec![Markup::text("Name"), Markup::text("Rate")],
            &[Align::Left, Align::Right],
        );
        t.push(vec![Markup::text("a"), Markup::trusted("1,024")]);
        t.push(vec![Markup::text("b")]);
        assert_eq!(
            render(&t),
            "| Name | Rate |\n| :--- | ---: |\n| a | 1,024 |\n| b | |\n"
        );
    }

    #[test]
    fn cells_escape_pipes_backticks_angle_brackets_and_newlines() {
        let mut t = Table::new(vec![Markup::text("x")], &[Align::Default]);
        t.push(vec![Markup::text("a|b `c` <d>\ne")]);
        let out = render(&t);
        assert_eq!(out.lines().count(), 3, "one row: {out}");
        assert!(out.contains("a\\|b \\`c\\` &lt;d&gt; e"), "{out}");
        let html = crate::site::markdown::to_html(&out, &Default::default());
        assert!(
            html.contains("<td data-label=\"x\">a|b `c` &lt;d&gt; e</td>"),
            "{html}"
        );
    }

    #[test]
    fn a_pipe_inside_a_code_span_stays_in_its_cell() {
        let mut t = Table::new(
            vec![Markup::text("x"), Markup::text("y")],
            &[Align::Default, Align::Default],
        );
        t.push(vec![Markup::code("sh -c 'a | b'"), Markup::text("after")]);
        let html = crate::site::markdown::to_html(&render(&t), &Default::default());
        assert!(
            html.contains("<td data-label=\"x\"><code>sh -c 'a | b'</code></td>"),
            "{html}"
        );
        assert!(html.contains("<td data-label=\"y\">after</td>"), "{html}");
    }
}
