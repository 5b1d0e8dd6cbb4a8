//! The site: page models ([`pages`]) → Markdown (minijinja, escaped at one boundary:
//! [`markup`]) → HTML (pulldown-cmark in the layout, [`render`](mod@render)), SVG charts ([`charts`]),
//! summary JSON/CSV and the raw archives, all rendered in memory first. Writing swaps a
//! complete new tree in; checking compares the tree on disk byte for byte ([`write`](mod@write)).
//!
//! Layout (identical file names in both languages):
//!
//! ```text
//! index.html                 language choice
//! assets/style.css
//! {en,zh}/index.{md,html}    datasets
//! {en,zh}/methodology.{md,html}
//! {en,zh}/udp-report.{md,html}
//! {en,zh}/<dataset>/overview.{md,html}, <protocol>.{md,html}, charts/*.svg
//! data/<dataset>/summary.json, summary.csv, <archive>.json
//! ```

pub mod charts;
pub mod i18n;
pub mod labels;
pub mod links;
pub mod markdown;
pub mod markup;
pub mod pages;
pub mod render;
pub mod table;
pub mod write;

use std::collections::BTreeMap;
use std::fs;
use std::io;

use crate::analysis::Analysis;
use crate::model::Dataset;
use crate::output::safe_name;
use crate::summary::SummaryDocument;
use i18n::Catalog;
use pages::{DatasetView, PageSpec};
use render::SidebarEntry;

pub use write::{differences, write, WriteError, WriteOptions};

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
    /// Two names that would share one file of the site.
    #[error("{0:?} and {1:?} would share the site's file name {2:?}; rename one of them")]
    Collision(String, String, String),
    #[error("--base-url {0:?} must be an absolute http(s) URL ending in '/' without quotes, spaces or angle brackets")]
    BaseUrl(String),
}

/// A rendered site: relative path → file bytes.
#[derive(Debug, Default, PartialEq)]
pub struct Site {
    pub files: BTreeMap<String, Vec<u8>>,
}

/// The pages of one language and the sidebar that links them.
fn pages_of(cat: &Catalog, views: &[DatasetView]) -> (Vec<PageSpec>, Vec<SidebarEntry>) {
    let mut specs = vec![
        pages::index::page(cat, views),
        pages::methodology::page(cat),
    ];
    let top = |key: &str, stem: String| SidebarEntry {
        kind: "top",
        label: cat.raw(key).to_string(),
        stem,
    };
    let mut sidebar = vec![
        top("nav.index", format!("{}/index", cat.code)),
        top("nav.methodology", format!("{}/methodology", cat.code)),
    ];
    if let Some(report) = pages::udp_report::page(cat, views) {
        sidebar.push(top("udp.nav", report.stem.clone()));
        specs.push(report);
    }
    for view in views {
        let overview = pages::overview::page(cat, view);
        sidebar.push(SidebarEntry {
            kind: "dataset",
            label: view.dataset.name.clone(),
            stem: overview.stem.clone(),
        });
        specs.push(overview);
        for protocol in view.protocols() {
            let page = pages::protocol::page(cat, view, protocol);
            sidebar.push(SidebarEntry {
                kind: "page",
                label: labels::protocol(cat, protocol).to_string(),
                stem: page.stem.clone(),
            });
            specs.push(page);
            if pages::dimensions::applies(view, protocol) {
                let page = pages::dimensions::page(cat, view, protocol);
                sidebar.push(SidebarEntry {
                    kind: "page",
                    label: cat
                        .fill(
                            "dimensions.nav",
                            &[("protocol", &labels::protocol(cat, protocol))],
                        )
                        .to_string(),
                    stem: page.stem.clone(),
                });
                specs.push(page);
            }
        }
    }
    (specs, sidebar)
}

/// Refuses datasets (or archive files of one dataset) whose sanitised names coincide, so that
/// no page or data file silently replaces another.
fn unique_names(datasets: &[Dataset]) -> Result<(), SiteError> {
    let check = |names: &mut dyn Iterator<Item = &str>| {
        let mut seen: BTreeMap<String, &str> = BTreeMap::new();
        for name in names {
            if let Some(other) = seen.insert(safe_name(name), name) {
                return Err(SiteError::Collision(
                    other.to_string(),
                    name.to_string(),
                    safe_name(name),
                ));
            }
        }
        Ok(())
    };
    check(&mut datasets.iter().map(|d| d.name.as_str()))?;
    for d in datasets {
        check(&mut d.files.iter().map(|f| f.name.as_str()))?;
    }
    Ok(())
}

/// Renders the whole site from validated, analysed data.
pub fn render(
    datasets: &[Dataset],
    analysis: &Analysis,
    base_url: &str,
) -> Result<Site, SiteError> {
    let plain = !base_url
        .contains(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`'));
    let absolute = base_url.starts_with("https://") || base_url.starts_with("http://");
    if !(plain && absolute && base_url.ends_with('/')) {
        return Err(SiteError::BaseUrl(base_url.to_string()));
    }
    unique_names(datasets)?;
    let env = render::environment();
    let mut site = Site::default();
    let catalogs = i18n::catalogs();
    let views: Vec<DatasetView> = datasets
        .iter()
        .enumerate()
        .map(|(i, d)| DatasetView::new(d, analysis, i))
        .collect();
    for cat in &catalogs {
        let (specs, sidebar) = pages_of(cat, &views);
        for spec in specs {
            render::page(&env, cat, &catalogs, &spec, &sidebar, base_url, &mut site)?;
        }
    }
    for (d, own) in datasets.iter().zip(&analysis.datasets) {
        let slug = safe_name(&d.name);
        let doc = SummaryDocument::of(d, analysis, own);
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
    let listed: Vec<String> = site.files.keys().cloned().collect();
    site.files
        .insert(write::MARKER.into(), write::marker(listed));
    let broken = links::broken_links(&site);
    if !broken.is_empty() {
        return Err(SiteError::BrokenLinks(broken));
    }
    Ok(site)
}

/// The root page: a plain choice of language (no redirect, no script).
fn landing(catalogs: &[Catalog]) -> String {
    let mut links = String::new();
    for c in catalogs {
        links.push_str(&format!(
            "<li><a href=\"{0}/index.html\" hreflang=\"{1}\" lang=\"{1}\">{2}</a> — {3}</li>\n",
            c.code,
            c.raw("lang.html"),
            c.raw("lang.name"),
            c.raw("index.title")
        ));
    }
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>echomark</title>\n<link rel=\"stylesheet\" href=\"assets/style.css\">\n</head>\n<body>\n<main>\n<h1>echomark</h1>\n<ul>\n{links}</ul>\n</main>\n</body>\n</html>\n"
    )
}
