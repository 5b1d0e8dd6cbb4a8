//! Markdown to HTML, safely: raw HTML in the source is shown as text (never passed through),
//! links keep only relative, http(s) and mailto targets, tables are wrapped so they scroll
//! on narrow screens, and relative SVG images are inlined so their `<title>` tooltips work.

use std::collections::BTreeMap;

use pulldown_cmark::{html, CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};

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
pub fn to_html(markdown: &str, svgs: &BTreeMap<String, String>) -> String {
    let mut options = Options::empty();
    options.insert(Options::ENABLE_TABLES);
    options.insert(Options::ENABLE_HEADING_ATTRIBUTES);
    let mut events = Vec::new();
    let mut skip_image_text = 0usize;
    let mut suppressed_links = 0usize;
    for event in Parser::new_ext(markdown, options) {
        match event {
            Event::Html(raw) | Event::InlineHtml(raw) => events.push(Event::Text(raw)),
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
                let svg = &svgs[dest_url.as_ref()];
                let figure = format!("<figure class=\"chart\">{svg}</figure>");
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
    let mut out = String::with_capacity(markdown.len() * 2);
    html::push_html(&mut out, events.into_iter());
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
            "<svg><title>T</title></svg>".to_string(),
        );
        let html = to_html(
            "| a | b |\n| --- | --- |\n| 1 | 2 |\n\n![alt](charts/a.svg)",
            &svgs,
        );
        assert!(html.contains("<div class=\"table-wrap\"><table>"), "{html}");
        assert!(
            html.contains("<figure class=\"chart\"><svg><title>T</title></svg></figure>"),
            "{html}"
        );
        assert!(!html.contains("alt"), "{html}");
    }
}
