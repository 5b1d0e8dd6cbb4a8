//! Markdown to HTML, safely: raw HTML in the source is shown as text (never passed through),
//! links keep only relative, http(s) and mailto targets, tables are wrapped so they scroll
//! on narrow screens, and relative SVG images are inlined so their `<title>` tooltips work.

use std::collections::BTreeMap;

use pulldown_cmark::{
    html, Alignment, CowStr, Event, HeadingLevel, LinkType, Options, Parser, Tag, TagEnd,
};

fn safe_link(dest: &str) -> bool {
    let lower = dest.trim().to_ascii_lowercase();
    match lower.split_once(':') {
        // A colon before any slash means a scheme.
        Some((scheme, _)) if !scheme.contains('/') => matches!(scheme, "http" | "https" | "mailto"),
        _ => true,
    }
}

/// Renders `markdown` to an HTML fragment. `svgs` maps relative image paths (as written in
/// the Markdown) to SVG documents to inline.
pub fn to_html(markdown: &str, svgs: &BTreeMap<String, (String, Option<String>)>) -> String {
    let mut options = Options::empty();
    options.insert(Options::ENABLE_TABLES);
    options.insert(Options::ENABLE_HEADING_ATTRIBUTES);
    let mut events = Vec::new();
    let mut skip_image_text = 0usize;
    let mut suppressed_links = 0usize;
    let mut charts = 0usize;
    for event in Parser::new_ext(markdown, options) {
        match event {
            Event::Html(raw) | Event::InlineHtml(raw) => match disclosure(&raw) {
                Some(html) => events.push(Event::Html(CowStr::Boxed(html.into_boxed_str()))),
                None => events.push(Event::Text(raw)),
            },
            Event::Start(Tag::Table(align)) => {
                events.push(Event::Html(CowStr::Borrowed("<div class=\"table-wrap\">")));
                events.push(Event::Start(Tag::Table(align)));
            }
            Event::End(TagEnd::Table) => {
                events.push(Event::End(TagEnd::Table));
                events.push(Event::Html(CowStr::Borrowed("</div>")));
            }
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }) => {
                if safe_link(&dest_url) {
                    let dest_url = rewrite_md_link(&dest_url);
                    events.push(Event::Start(Tag::Link {
                        link_type,
                        dest_url,
                        title,
                        id,
                    }));
                } else {
                    suppressed_links += 1;
                }
            }
            Event::End(TagEnd::Link) if suppressed_links > 0 => suppressed_links -= 1,
            Event::Start(Tag::Image {
                dest_url, title, ..
            }) if svgs.contains_key(dest_url.as_ref()) => {
                charts += 1;
                let (wide, phone) = &svgs[dest_url.as_ref()];
                let svg = with_own_ids(wide, &format!("chart{charts}"));
                let figure = match phone {
                    // Both drawings, one shown by the screen's width (the stylesheet).
                    Some(phone) => format!(
                        "<figure class=\"chart\"><div class=\"chart-wide\">{svg}</div><div class=\"chart-phone\">{}</div></figure>",
                        with_own_ids(phone, &format!("chart{charts}p"))
                    ),
                    None => format!("<figure class=\"chart\">{svg}</figure>"),
                };
                events.push(Event::Html(CowStr::Boxed(figure.into_boxed_str())));
                let _ = title;
                skip_image_text += 1;
            }
            Event::End(TagEnd::Image) if skip_image_text > 0 => skip_image_text -= 1,
            Event::Text(_) if skip_image_text > 0 => {}
            Event::Start(Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            }) if !safe_link(&dest_url) => {
                let _ = (link_type, title, id);
                skip_image_text += 1;
            }
            other => events.push(other),
        }
    }
    let _ = LinkType::Inline;
    let events = labelled_tables(with_heading_ids(events));
    let mut out = String::with_capacity(markdown.len() * 2);
    html::push_html(&mut out, events.into_iter());
    out
}

/// Every table rendered with each body cell labelled by its column's header
/// (`data-label`), so that on a phone the stylesheet can show a row as a card of label and
/// value pairs instead of a row wider than the screen.
fn labelled_tables(events: Vec<Event<'_>>) -> Vec<Event<'_>> {
    let mut out = Vec::with_capacity(events.len());
    let mut iter = events.into_iter();
    while let Some(event) = iter.next() {
        let Event::Start(Tag::Table(align)) = event else {
            out.push(event);
            continue;
        };
        let mut inner = Vec::new();
        for e in iter.by_ref() {
            if matches!(e, Event::End(TagEnd::Table)) {
                break;
            }
            inner.push(e);
        }
        out.push(Event::Html(CowStr::Boxed(
            table_html(&align, inner).into_boxed_str(),
        )));
    }
    out
}

/// One table's HTML from its inner events (head and rows).
fn table_html(align: &[Alignment], events: Vec<Event<'_>>) -> String {
    let style = |column: usize| match align.get(column) {
        Some(Alignment::Left) => " style=\"text-align: left\"",
        Some(Alignment::Center) => " style=\"text-align: center\"",
        Some(Alignment::Right) => " style=\"text-align: right\"",
        _ => "",
    };
    let mut headers: Vec<String> = Vec::new();
    let mut html_out = String::from("<table>\n");
    let mut in_head = false;
    let mut column = 0;
    let mut cell: Option<Vec<Event<'_>>> = None;
    for e in events {
        match e {
            Event::Start(Tag::TableHead) => {
                in_head = true;
                html_out.push_str("<thead><tr>");
            }
            Event::End(TagEnd::TableHead) => {
                in_head = false;
                html_out.push_str("</tr></thead>\n<tbody>\n");
            }
            Event::Start(Tag::TableRow) => {
                column = 0;
                html_out.push_str("<tr>");
            }
            Event::End(TagEnd::TableRow) => html_out.push_str("</tr>\n"),
            Event::Start(Tag::TableCell) => cell = Some(Vec::new()),
            Event::End(TagEnd::TableCell) => {
                let content = cell.take().unwrap_or_default();
                let mut body = String::new();
                html::push_html(&mut body, content.iter().cloned());
                if in_head {
                    headers.push(plain_text(&content));
                    html_out.push_str(&format!("<th{}>{body}</th>", style(column)));
                } else {
                    let label = headers.get(column).map(String::as_str).unwrap_or("");
                    html_out.push_str(&format!(
                        "<td data-label=\"{}\"{}>{body}</td>",
                        escape_html(label),
                        style(column)
                    ));
                }
                column += 1;
            }
            other => {
                if let Some(c) = cell.as_mut() {
                    c.push(other);
                }
            }
        }
    }
    if !headers.is_empty() {
        html_out.push_str("</tbody>\n");
    }
    html_out.push_str("</table>\n");
    html_out
}

/// The text of a cell's events, without markup.
fn plain_text(events: &[Event<'_>]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Text(t) | Event::Code(t) => Some(t.as_ref()),
            Event::SoftBreak | Event::HardBreak => Some(" "),
            _ => None,
        })
        .collect()
}

/// `svg` with its title and description ids made unique on the page (every chart file uses
/// `t` and `d`; inlined side by side they would all be announced by the first chart's title).
fn with_own_ids(svg: &str, chart: &str) -> String {
    svg.replacen(
        "aria-labelledby=\"t d\"",
        &format!("aria-labelledby=\"{chart}-t {chart}-d\""),
        1,
    )
    .replacen("<title id=\"t\">", &format!("<title id=\"{chart}-t\">"), 1)
    .replacen("<desc id=\"d\">", &format!("<desc id=\"{chart}-d\">"), 1)
}

/// The one piece of raw HTML the templates may write: a disclosure, `<details><summary>TEXT
/// </summary>` (TEXT plain, escaped here) and `</details>`. Anything else is shown as text.
fn disclosure(raw: &str) -> Option<String> {
    let raw = raw.trim();
    if raw == "</details>" {
        return Some("</details>\n".to_string());
    }
    let text = raw
        .strip_prefix("<details><summary>")?
        .strip_suffix("</summary>")?;
    if text.contains(['<', '>']) {
        return None;
    }
    // The summary is plain text, written by a template that escapes Markdown: its
    // backslash escapes ("\\(42\\)") are undone here, where no Markdown is parsed.
    let mut plain = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match chars.peek() {
            Some(next) if c == '\\' && next.is_ascii_punctuation() => {}
            _ => plain.push(c),
        }
    }
    Some(format!(
        "<details><summary>{}</summary>\n",
        escape_html(&plain)
    ))
}

/// Text for HTML.
pub(crate) fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A heading's anchor: its text, lower case, runs of anything but letters and digits (of any
/// script) as one `-`.
fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() {
        "section".to_string()
    } else {
        out
    }
}

/// How many second-level sections and tables earn a page its table of contents.
const TOC_SECTIONS: usize = 4;
const TOC_TABLES: usize = 3;

/// Gives every heading an id (unique in the page), and a page with many sections and tables
/// a short table of contents of its second-level headings after its title.
fn with_heading_ids(events: Vec<Event<'_>>) -> Vec<Event<'_>> {
    let mut used: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = Vec::with_capacity(events.len());
    let mut toc: Vec<(String, String)> = Vec::new();
    let mut tables = 0;
    let mut i = 0;
    while i < events.len() {
        if let Event::Start(Tag::Table(_)) = &events[i] {
            tables += 1;
        }
        let Event::Start(Tag::Heading {
            level,
            id: None,
            classes,
            attrs,
        }) = &events[i]
        else {
            out.push(events[i].clone());
            i += 1;
            continue;
        };
        let end = events[i..]
            .iter()
            .position(|e| matches!(e, Event::End(TagEnd::Heading(_))))
            .map_or(events.len(), |p| i + p);
        let text: String = events[i + 1..end]
            .iter()
            .filter_map(|e| match e {
                Event::Text(t) | Event::Code(t) => Some(t.as_ref()),
                _ => None,
            })
            .collect();
        let base = slug(&text);
        let n = used.entry(base.clone()).or_insert(0);
        *n += 1;
        let id = if *n == 1 { base } else { format!("{base}-{n}") };
        if *level == HeadingLevel::H2 {
            toc.push((id.clone(), text));
        }
        out.push(Event::Start(Tag::Heading {
            level: *level,
            id: Some(CowStr::Boxed(id.into_boxed_str())),
            classes: classes.clone(),
            attrs: attrs.clone(),
        }));
        i += 1;
    }
    if toc.len() < TOC_SECTIONS || tables < TOC_TABLES {
        return out;
    }
    let Some(after_title) = out
        .iter()
        .position(|e| matches!(e, Event::End(TagEnd::Heading(HeadingLevel::H1))))
    else {
        return out;
    };
    let mut nav = String::from("<nav class=\"toc\"><ul>\n");
    for (id, text) in &toc {
        nav.push_str(&format!(
            "<li><a href=\"#{id}\">{}</a></li>\n",
            escape_html(text)
        ));
    }
    nav.push_str("</ul></nav>\n");
    out.insert(
        after_title + 1,
        Event::Html(CowStr::Boxed(nav.into_boxed_str())),
    );
    out
}

/// Links between pages are written to the `.md` siblings (so the Markdown works on its own);
/// the HTML pages link to the `.html` siblings.
fn rewrite_md_link(dest: &str) -> CowStr<'static> {
    let (path, anchor) = match dest.split_once('#') {
        Some((p, a)) => (p, Some(a)),
        None => (dest, None),
    };
    let is_relative = !dest.contains("://") && !dest.starts_with("mailto:");
    let path = match path.strip_suffix(".md") {
        Some(stem) if is_relative => format!("{stem}.html"),
        _ => path.to_string(),
    };
    let full = match anchor {
        Some(a) => format!("{path}#{a}"),
        None => path,
    };
    CowStr::Boxed(full.into_boxed_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::site::markup::escape;

    #[test]
    fn raw_html_and_script_are_text() {
        let html = to_html(
            "hello <script>alert(1)</script> <b>x</b>\n\n<div onclick=x>y</div>",
            &BTreeMap::new(),
        );
        assert!(
            !html.contains("<script>") && !html.contains("<b>") && !html.contains("<div onclick"),
            "{html}"
        );
        assert!(html.contains("&lt;script&gt;"));
    }

    #[test]
    fn escaped_archive_text_cannot_open_links_or_markup() {
        let evil = "[click](javascript:alert(1)) <img src=x onerror=alert(1)> | *bold* `code`";
        let html = to_html(&format!("cpu: {}", escape(evil)), &BTreeMap::new());
        assert!(
            !html.contains("<a ")
                && !html.contains("<img")
                && !html.contains("<em>")
                && !html.contains("<code>"),
            "{html}"
        );
        assert!(
            html.contains("javascript:alert(1)"),
            "shown as text: {html}"
        );
    }

    #[test]
    fn dangerous_link_schemes_are_dropped_even_in_templates() {
        let html = to_html(
            "[a](javascript:x) [b](data:text/html,x) [c](other.md#top) [d](https://example.org/)",
            &BTreeMap::new(),
        );
        assert!(
            !html.contains("javascript:") && !html.contains("data:text"),
            "{html}"
        );
        assert!(
            html.contains("href=\"other.html#top\"")
                && html.contains("href=\"https://example.org/\""),
            "{html}"
        );
    }

    #[test]
    fn tables_scroll_and_svgs_inline() {
        let mut svgs = BTreeMap::new();
        svgs.insert(
            "charts/a.svg".to_string(),
            ("<svg><title>T</title></svg>".to_string(), None),
        );
        svgs.insert(
            "charts/b.svg".to_string(),
            (
                "<svg><title>W</title></svg>".to_string(),
                Some("<svg><title>P</title></svg>".to_string()),
            ),
        );
        let html = to_html(
            "| a | b |\n| --- | --- |\n| 1 | 2 |\n\n![alt](charts/a.svg)\n\n![alt](charts/b.svg)",
            &svgs,
        );
        assert!(html.contains("<div class=\"table-wrap\"><table>"), "{html}");
        assert!(html.contains("<th>a</th><th>b</th>"), "{html}");
        assert!(
            html.contains("<td data-label=\"a\">1</td><td data-label=\"b\">2</td>"),
            "{html}"
        );
        assert!(
            html.contains("<figure class=\"chart\"><svg><title>T</title></svg></figure>"),
            "{html}"
        );
        // A chart with a phone drawing carries both; the stylesheet shows one.
        assert!(
            html.contains("<figure class=\"chart\"><div class=\"chart-wide\"><svg><title>W</title></svg></div><div class=\"chart-phone\"><svg><title>P</title></svg></div></figure>"),
            "{html}"
        );
        assert!(!html.contains("alt"), "{html}");
    }

    #[test]
    fn every_inlined_chart_is_named_by_its_own_title() {
        let chart = |title: &str| {
            format!("<svg role=\"img\" aria-labelledby=\"t d\"><title id=\"t\">{title}</title><desc id=\"d\">x</desc></svg>")
        };
        let svgs = BTreeMap::from([
            ("a.svg".to_string(), (chart("A"), None)),
            ("b.svg".to_string(), (chart("B"), Some(chart("B phone")))),
        ]);
        let html = to_html("![a](a.svg)\n\n![b](b.svg)\n\n![a](a.svg)", &svgs);
        for n in 1..=3 {
            assert_eq!(
                html.matches(&format!("id=\"chart{n}-t\"")).count(),
                1,
                "{html}"
            );
            assert!(html.contains(&format!("aria-labelledby=\"chart{n}-t chart{n}-d\"")));
        }
        assert!(!html.contains("id=\"t\""), "{html}");
        // The phone drawing is named by its own title too.
        assert_eq!(html.matches("id=\"chart2p-t\"").count(), 1, "{html}");
    }

    #[test]
    fn headings_get_unique_ids_and_long_pages_a_contents_list() {
        let mut md = String::from("# Title\n\n");
        for h in [
            "Key results",
            "Key results",
            "Choosing an IO model",
            "核心结果",
            "Scope",
        ] {
            md.push_str(&format!("## {h}\n\n| a |\n| - |\n| 1 |\n\n"));
        }
        let html = to_html(&md, &BTreeMap::new());
        for id in [
            "key-results",
            "key-results-2",
            "choosing-an-io-model",
            "核心结果",
            "scope",
        ] {
            assert!(html.contains(&format!("id=\"{id}\"")), "{id}: {html}");
        }
        assert!(html.contains("<nav class=\"toc\">") && html.contains("href=\"#key-results-2\""));
        let short = to_html("# T\n\n## Only\n", &BTreeMap::new());
        assert!(!short.contains("toc") && short.contains("id=\"only\""));
    }

    #[test]
    fn only_a_plain_disclosure_passes_as_html() {
        let html = to_html(
            "<details><summary>Raw & reasons</summary>\n\nx\n\n</details>\n\n<details><summary><b>no</b></summary>\n",
            &BTreeMap::new(),
        );
        assert!(
            html.contains("<details><summary>Raw &amp; reasons</summary>"),
            "{html}"
        );
        assert!(
            html.contains("</details>") && !html.contains("<b>"),
            "{html}"
        );
    }
}
