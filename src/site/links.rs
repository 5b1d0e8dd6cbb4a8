//! The link check of a rendered site: every relative link and image in the Markdown pages
//! must point at a generated file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use pulldown_cmark::{Event, Options, Parser, Tag};

use super::Site;

/// Whether a link target names a scheme (`https:`, `mailto:`, `javascript:`): not a file of
/// the site. Unsafe schemes are neutralised when the HTML is rendered.
fn has_scheme(target: &str) -> bool {
    target
        .split_once(':')
        .is_some_and(|(scheme, _)| !scheme.is_empty() && !scheme.contains(['/', '.', '#']))
}

/// The links of the pages rendered so far, checked once every file is known: each target
/// the site must hold, with the first page that links it. Its size grows with the number of
/// distinct targets, not with the number of links.
#[derive(Debug, Default)]
pub struct Pending {
    wanted: BTreeMap<String, (String, String)>,
}

impl Pending {
    /// Notes every relative link and image of the Markdown page `path`. Links are found by
    /// parsing the Markdown, as a renderer does, so text that only looks like a link
    /// (escaped, or inside code) is not one.
    pub fn scan(&mut self, path: &str, markdown: &str) {
        let dir = Path::new(path).parent().unwrap_or(Path::new(""));
        for event in Parser::new_ext(markdown, Options::ENABLE_TABLES) {
            let (Event::Start(Tag::Link { dest_url, .. })
            | Event::Start(Tag::Image { dest_url, .. })) = event
            else {
                continue;
            };
            let target = dest_url.split('#').next().unwrap_or("");
            if target.is_empty() || has_scheme(target) {
                continue;
            }
            self.wanted
                .entry(normalise(&dir.join(target)))
                .or_insert_with(|| (path.to_string(), target.to_string()));
        }
    }

    /// The links whose target is not among `files`, as "page: target".
    pub fn broken(&self, files: &BTreeSet<String>) -> Vec<String> {
        self.wanted
            .iter()
            .filter(|(target, _)| !files.contains(*target))
            .map(|(_, (page, link))| format!("{page}: {link}"))
            .collect()
    }
}

/// Every relative link and image in the Markdown pages of `site` must point at one of its
/// files: the links that do not.
pub fn broken_links(site: &Site) -> Vec<String> {
    let mut pending = Pending::default();
    for (path, bytes) in site.files.iter().filter(|(p, _)| p.ends_with(".md")) {
        pending.scan(path, &String::from_utf8_lossy(bytes));
    }
    pending.broken(&site.files.keys().cloned().collect())
}

fn normalise(path: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                parts.pop();
            }
            std::path::Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            _ => {}
        }
    }
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(pages: &[(&str, &str)]) -> Site {
        Site {
            files: pages
                .iter()
                .map(|(p, t)| (p.to_string(), t.as_bytes().to_vec()))
                .collect(),
        }
    }

    #[test]
    fn only_real_relative_links_are_checked() {
        let s = site(&[
            ("en/a.md", "[b](b.md) [x](missing.md) [j](javascript:alert(1)) \\[t\\](u.md) `[c](d.md)`\n\n```\n[e](f.md)\n```\n"),
            ("en/b.md", "[a](a.md#top) [w](https://example.org/) [m](mailto:x@example.org)"),
        ]);
        assert_eq!(broken_links(&s), ["en/a.md: missing.md"]);
    }
}
