//! The one escaping boundary between data and pages.
//!
//! A page is Markdown. Text that echomark itself writes (catalog strings, numbers it
//! formatted, sentences composed from them) is [`Markup`]; anything else is plain text and
//! is escaped on its way in: [`Markup::text`] for running text and table cells,
//! [`Markup::code`] for an inline code span, [`Markup::code_block`] for a fenced block. The
//! templates escape any plain string a page model hands them (see [`super::render`](mod@super::render)), so a
//! string from an archive cannot reach a page unescaped by forgetting a call. The HTML is
//! rendered from this Markdown by [`super::markdown`], which turns any raw HTML into text.

use std::fmt;

use serde::Serialize;

/// Trusted Markdown: produced by echomark, with all data inside it escaped.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Markup(String);

/// Escapes text for use inside Markdown (and so HTML): markup characters become entities,
/// Markdown punctuation is backslash-escaped so data can never open a link, an emphasis or a
/// table cell, and line breaks become spaces so data cannot end a table row or a list item.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '(' | ')' | '#' | '|' | '!' | '~' | '{' | '}' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The longest run of `c` in `text`.
fn longest_run(text: &str, c: char) -> usize {
    let mut longest = 0;
    let mut run = 0;
    for ch in text.chars() {
        run = if ch == c { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

impl Markup {
    /// The plain text back (for HTML attributes and titles, which the layout escapes): the
    /// escapes undone, emphasis dropped.
    pub fn plain(&self) -> String {
        let mut out = String::with_capacity(self.0.len());
        let mut chars = self.0.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => out.extend(chars.next()),
                '*' => {}
                c => out.push(c),
            }
        }
        out.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&")
    }

    /// Plain text, escaped.
    pub fn text(raw: &str) -> Self {
        Markup(escape(raw))
    }

    /// Markdown that echomark wrote itself: catalog strings, formatted numbers, and
    /// compositions of other [`Markup`].
    pub fn trusted(markdown: impl Into<String>) -> Self {
        Markup(markdown.into())
    }

    /// An inline code span holding `raw` literally: delimited by more backticks than any run
    /// inside it, with line breaks turned into spaces.
    pub fn code(raw: &str) -> Self {
        let flat: String = raw
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let fence = "`".repeat(longest_run(&flat, '`') + 1);
        let pad = if flat.starts_with('`') || flat.ends_with('`') {
            " "
        } else {
            ""
        };
        Markup(format!("{fence}{pad}{flat}{pad}{fence}"))
    }

    /// A fenced code block of `lines` in `language`: the fence is longer than any backtick
    /// run in the content, so no line can close it early.
    pub fn code_block(language: &str, lines: &[String]) -> Self {
        let body: Vec<String> = lines
            .iter()
            .map(|l| {
                l.chars()
                    .map(|c| if c.is_control() { ' ' } else { c })
                    .collect()
            })
            .collect();
        let longest = body.iter().map(|l| longest_run(l, '`')).max().unwrap_or(0);
        let fence = "`".repeat(longest.max(2) + 1);
        let mut out = format!("{fence}{}\n", escape_info(language));
        for line in &body {
            out.push_str(line);
            out.push('\n');
        }
        out.push_str(&fence);
        Markup(out)
    }

    /// This Markup as a table cell holds it: every pipe escaped, also inside code spans,
    /// where a table still splits cells at a bare pipe (GFM tables, "escaping pipes").
    pub fn in_table_cell(&self) -> Markup {
        let mut out = String::with_capacity(self.0.len());
        let mut backslashes = 0;
        for c in self.0.chars() {
            if c == '|' && backslashes % 2 == 0 {
                out.push('\\');
            }
            backslashes = if c == '\\' { backslashes + 1 } else { 0 };
            out.push(c);
        }
        Markup(out)
    }

    /// The Markdown text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether there is nothing to show.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Appends more Markup.
    pub fn push(&mut self, more: &Markup) {
        self.0.push_str(&more.0);
    }

    /// `parts` joined by `separator`.
    pub fn join(parts: &[Markup], separator: &Markup) -> Markup {
        let texts: Vec<&str> = parts.iter().map(Markup::as_str).collect();
        Markup(texts.join(separator.as_str()))
    }
}

/// A fenced block's info string holds only a language name.
fn escape_info(language: &str) -> String {
    language
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect()
}

impl fmt::Display for Markup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Serialised for the templates as a string they must not escape again.
impl Serialize for Markup {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        minijinja::Value::from_safe_string(self.0.clone()).serialize(s)
    }
}

/// What a catalog placeholder can be filled with: [`Markup`] as it is, plain text escaped.
pub trait Fill {
    fn markup(&self) -> Markup;
}

impl Fill for Markup {
    fn markup(&self) -> Markup {
        self.clone()
    }
}

impl Fill for str {
    fn markup(&self) -> Markup {
        Markup::text(self)
    }
}

impl Fill for String {
    fn markup(&self) -> Markup {
        Markup::text(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_cannot_open_markup_or_end_a_row() {
        assert_eq!(
            Markup::text("a|b *c* [d](e) <f> `g`\nh").as_str(),
            "a\\|b \\*c\\* \\[d\\]\\(e\\) &lt;f&gt; \\`g\\` h"
        );
    }

    #[test]
    fn a_code_span_is_longer_than_any_backtick_run_inside() {
        assert_eq!(Markup::code("abc").as_str(), "`abc`");
        assert_eq!(Markup::code("a``b").as_str(), "```a``b```");
        assert_eq!(Markup::code("`x").as_str(), "`` `x ``");
    }

    #[test]
    fn a_code_block_fence_outlasts_its_content() {
        let lines = vec!["echo ```".to_string(), "[x](https://e.org)".to_string()];
        let block = Markup::code_block("sh", &lines);
        assert!(block.as_str().starts_with("````sh\n"), "{block}");
        assert!(block.as_str().ends_with("\n````"), "{block}");
        assert_eq!(
            Markup::code_block("sh", &["ls".into()]).as_str(),
            "```sh\nls\n```"
        );
    }
}
