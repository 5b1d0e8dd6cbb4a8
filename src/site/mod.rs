//! The site: page models → Markdown (minijinja) → HTML (pulldown-cmark in a minijinja
//! layout), SVG charts, summary JSON/CSV and the raw archives, all rendered in memory first.
//! Writing swaps a complete new tree in; checking compares the tree on disk byte for byte.
//!
//! Layout (identical file names in both languages):
//!
//! ```text
//! index.html                 language choice
//! assets/style.css
//! {en,zh}/index.{md,html}    datasets
//! {en,zh}/methodology.{md,html}
//! {en,zh}/<dataset>/overview.{md,html}, <protocol>.{md,html}, charts/*.svg
//! data/<dataset>/summary.json, summary.csv, <archive>.json
//! ```

pub mod charts;
pub mod i18n;
pub mod markdown;
pub mod pages;

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use minijinja::{Environment, UndefinedBehavior};
use serde_json::json;

use crate::aggregate::Configuration;
use crate::model::Dataset;
use crate::output::safe_name;
use crate::rank::Ranking;
use crate::summary::SummaryDocument;
use i18n::Catalog;
use pages::{DatasetView, PageSpec};

/// Where the published site lives, for absolute `hreflang` links.
pub const DEFAULT_BASE_URL: &str = "https://echomark.github.io/echomark/";

/// Why a site could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum SiteError {
    #[error("template {0}: {1}")]
    Template(String, String),
    #[error("broken links:\n{}", .0.join("\n"))]
    BrokenLinks(Vec<String>),
    #[error("reading {0}: {1}")]
    Io(String, io::Error),
    #[error("--base-url {0:?} must be an absolute http(s) URL ending in '/' without quotes, spaces or angle brackets")]
    BaseUrl(String),
}

/// A rendered site: relative path → file bytes.
#[derive(Debug, Default, PartialEq)]
pub struct Site {
    pub files: BTreeMap<String, Vec<u8>>,
}

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_keep_trailing_newline(true);
    for (name, source) in [
        ("index.md", include_str!("../../templates/pages/index.md")),
        (
            "overview.md",
            include_str!("../../templates/pages/overview.md"),
        ),
        (
            "protocol.md",
            include_str!("../../templates/pages/protocol.md"),
        ),
        (
            "methodology.md",
            include_str!("../../templates/pages/methodology.md"),
        ),
        (
            "dimensions.md",
            include_str!("../../templates/pages/dimensions.md"),
        ),
        ("udp.md", include_str!("../../templates/pages/udp.md")),
        ("layout.html", include_str!("../../templates/layout.html")),
    ] {
        env.add_template(name, source)
            .expect("the embedded templates parse (tested)");
    }
    env
}

fn depth_prefix(stem: &str) -> String {
    "../".repeat(stem.matches('/').count())
}

/// A link from the page at `from` (a stem) to the site-relative path `to`.
fn relative(from: &str, to: &str) -> String {
    format!("{}{to}", depth_prefix(from))
}

struct SidebarEntry {
    kind: &'static str,
    label: String,
    stem: String,
}

/// Renders the whole site from validated, aggregated data.
pub fn render(
    datasets: &[Dataset],
    configs: &[Configuration],
    rankings: &[Ranking],
    base_url: &str,
) -> Result<Site, SiteError> {
    let plain = !base_url
        .contains(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`'));
    let absolute = base_url.starts_with("https://") || base_url.starts_with("http://");
    if !(plain && absolute && base_url.ends_with('/')) {
        return Err(SiteError::BaseUrl(base_url.to_string()));
    }
    let env = environment();
    let mut site = Site::default();
    let catalogs = i18n::catalogs();
    let views: Vec<DatasetView> = datasets
        .iter()
        .map(|d| DatasetView::new(d, configs, rankings))
        .collect();
    for cat in &catalogs {
        let mut specs: Vec<PageSpec> =
            vec![pages::index_page(cat, &views), pages::methodology_page(cat)];
        let mut sidebar = vec![
            SidebarEntry {
                kind: "top",
                label: cat.text("nav.index").to_string(),
                stem: format!("{}/index", cat.code),
            },
            SidebarEntry {
                kind: "top",
                label: cat.text("nav.methodology").to_string(),
                stem: format!("{}/methodology", cat.code),
            },
        ];
        if let Some(report) = pages::udp_report(cat, &views) {
            sidebar.push(SidebarEntry {
                kind: "top",
                label: cat.text("udp.nav").to_string(),
                stem: report.path.stem.clone(),
            });
            specs.push(report);
        }
        for view in &views {
            let slug = pages::dataset_slug(view.dataset);
            let overview = pages::overview_page(cat, view);
            sidebar.push(SidebarEntry {
                kind: "dataset",
                label: markdown_plain(&view.dataset.name),
                stem: overview.path.stem.clone(),
            });
            specs.push(overview);
            for protocol in view.protocols() {
                sidebar.push(SidebarEntry {
                    kind: "page",
                    label: pages::protocol_label(cat, &protocol),
                    stem: format!("{}/{slug}/{}", cat.code, safe_name(&protocol)),
                });
                specs.push(pages::protocol_page(cat, view, &protocol));
                if pages::has_dimensions(view, &protocol) {
                    let page = pages::dimensions_page(cat, view, &protocol);
                    sidebar.push(SidebarEntry {
                        kind: "page",
                        label: cat.fill(
                            "dimensions.nav",
                            &[("protocol", &pages::protocol_label(cat, &protocol))],
                        ),
                        stem: page.path.stem.clone(),
                    });
                    specs.push(page);
                }
            }
        }
        for spec in specs {
            render_page(&env, cat, &catalogs, &spec, &sidebar, base_url, &mut site)?;
        }
    }
    for d in datasets {
        let slug = safe_name(&d.name);
        let doc = SummaryDocument::of(d, configs, rankings);
        site.files
            .insert(format!("data/{slug}/summary.json"), doc.json());
        site.files
            .insert(format!("data/{slug}/summary.csv"), doc.csv().into_bytes());
        for f in &d.files {
            let bytes =
                fs::read(&f.path).map_err(|e| SiteError::Io(f.path.display().to_string(), e))?;
            site.files
                .insert(format!("data/{slug}/{}", safe_name(&f.name)), bytes);
        }
    }
    site.files.insert(
        "assets/style.css".into(),
        include_bytes!("../../templates/style.css").to_vec(),
    );
    site.files.insert(".nojekyll".into(), Vec::new());
    site.files
        .insert("index.html".into(), landing(&catalogs).into_bytes());
    let broken = broken_links(&site);
    if !broken.is_empty() {
        return Err(SiteError::BrokenLinks(broken));
    }
    Ok(site)
}

/// Sidebar labels are plain text inside HTML (escaped by the layout).
fn markdown_plain(text: &str) -> String {
    text.to_string()
}

fn render_page(
    env: &Environment,
    cat: &Catalog,
    catalogs: &[Catalog],
    spec: &PageSpec,
    sidebar: &[SidebarEntry],
    base_url: &str,
    site: &mut Site,
) -> Result<(), SiteError> {
    let stem = &spec.path.stem;
    let mut ctx = spec.context.clone();
    ctx["t"] = cat.tree().clone();
    let md = env
        .get_template(spec.template)
        .and_then(|t| t.render(&ctx))
        .map_err(|e| {
            SiteError::Template(format!("{}/{}", cat.code, spec.template), format!("{e:#}"))
        })?;
    let dir = stem.rsplit_once('/').map_or("", |(d, _)| d);
    let mut svgs = BTreeMap::new();
    for chart in &spec.charts {
        site.files.insert(
            format!("{dir}/{}", chart.rel),
            chart.svg.clone().into_bytes(),
        );
        svgs.insert(chart.rel.clone(), chart.svg.clone());
    }
    let body = markdown::to_html(&md, &svgs);
    site.files.insert(format!("{stem}.md"), md.into_bytes());

    // The same page in the other language(s): identical path after the language folder.
    let rest = stem.split_once('/').map_or(stem.as_str(), |(_, r)| r);
    let alternates: Vec<_> = catalogs
        .iter()
        .map(|c| json!({"hreflang": c.text("lang.html"), "href": format!("{base_url}{}/{rest}.html", c.code)}))
        .chain(std::iter::once(json!({"hreflang": "x-default", "href": format!("{base_url}{}/{rest}.html", catalogs[0].code)})))
        .collect();
    let other = catalogs.iter().find(|c| c.code != cat.code).unwrap_or(cat);
    let sidebar_items: Vec<_> = sidebar
        .iter()
        .map(|e| json!({"kind": e.kind, "label": e.label, "href": relative(stem, &format!("{}.html", e.stem)), "current": &e.stem == stem}))
        .collect();
    let layout_ctx = json!({
        "t": cat.tree(),
        "title": strip_markdown(&spec.title),
        "root": depth_prefix(stem),
        "alternates": alternates,
        "other_href": relative(stem, &format!("{}/{rest}.html", other.code)),
        "other_hreflang": other.text("lang.html"),
        "sidebar": sidebar_items,
        "body": body,
    });
    let html = env
        .get_template("layout.html")
        .and_then(|t| t.render(&layout_ctx))
        .map_err(|e| SiteError::Template("layout.html".into(), format!("{e:#}")))?;
    site.files.insert(format!("{stem}.html"), html.into_bytes());
    Ok(())
}

/// Titles are built as Markdown (escaped); the HTML `<title>` wants the plain text.
fn strip_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
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

/// The root page: a plain choice of language (no redirect, no script).
fn landing(catalogs: &[Catalog]) -> String {
    let mut links = String::new();
    for c in catalogs {
        links.push_str(&format!(
            "<li><a href=\"{0}/index.html\" hreflang=\"{1}\" lang=\"{1}\">{2}</a> — {3}</li>\n",
            c.code,
            c.text("lang.html"),
            c.text("lang.name"),
            c.text("index.title")
        ));
    }
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>echomark</title>\n<link rel=\"stylesheet\" href=\"assets/style.css\">\n</head>\n<body>\n<main>\n<h1>echomark</h1>\n<ul>\n{links}</ul>\n</main>\n</body>\n</html>\n"
    )
}

/// Every relative link and image in the Markdown pages must point at a generated file.
fn broken_links(site: &Site) -> Vec<String> {
    let mut broken = Vec::new();
    for (path, bytes) in site.files.iter().filter(|(p, _)| p.ends_with(".md")) {
        let text = String::from_utf8_lossy(bytes);
        let dir = Path::new(path).parent().unwrap_or(Path::new(""));
        for (i, _) in text.match_indices("](") {
            let rest = &text[i + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = rest[..end].split('#').next().unwrap_or("");
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let joined = normalise(&dir.join(target));
            if !site.files.contains_key(&joined) {
                broken.push(format!("{path}: {target}"));
            }
        }
    }
    broken
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

/// Writes `site` to `out` by building a complete sibling tree and swapping it in, so a
/// failure never leaves a half-written site (the old one stays until the swap).
pub fn write(site: &Site, out: &Path) -> io::Result<()> {
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(parent)?;
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "site".into());
    let staging = tempfile::Builder::new()
        .prefix(&format!(".{name}.new-"))
        .tempdir_in(parent)?;
    for (rel, bytes) in &site.files {
        let path = staging.path().join(rel);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir)?;
        }
        fs::write(&path, bytes)?;
    }
    let staged = staging.keep();
    if out.exists() {
        let old = parent.join(format!(".{name}.old-{}", std::process::id()));
        fs::rename(out, &old)?;
        if let Err(e) = fs::rename(&staged, out) {
            let _ = fs::rename(&old, out);
            return Err(e);
        }
        fs::remove_dir_all(&old)?;
    } else {
        fs::rename(&staged, out)?;
    }
    Ok(())
}

/// Differences between `site` and the tree at `out`: missing, extra and changed files.
pub fn differences(site: &Site, out: &Path) -> io::Result<Vec<String>> {
    let mut on_disk = BTreeMap::new();
    collect(out, out, &mut on_disk)?;
    let mut diffs = Vec::new();
    for (rel, bytes) in &site.files {
        match on_disk.get(rel) {
            None => diffs.push(format!("missing: {rel}")),
            Some(path) if &fs::read(path)? != bytes => diffs.push(format!("changed: {rel}")),
            _ => {}
        }
    }
    for rel in on_disk.keys().filter(|r| !site.files.contains_key(*r)) {
        diffs.push(format!("not generated: {rel}"));
    }
    Ok(diffs)
}

fn collect(root: &Path, dir: &Path, out: &mut BTreeMap<String, PathBuf>) -> io::Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect(root, &path, out)?;
        } else {
            let rel = path
                .strip_prefix(root)
                .expect("under root")
                .to_string_lossy()
                .replace('\\', "/");
            out.insert(rel, path);
        }
    }
    Ok(())
}
