//! The site: page models ([`pages`]) → Markdown (minijinja, escaped at one boundary:
//! [`markup`]) → HTML (pulldown-cmark in the layout, [`render`](mod@render)), SVG charts ([`charts`]),
//! summary JSON/CSV and the raw archives. Each file goes to a [`Sink`] as soon as it is
//! rendered: a staging tree that is swapped in once complete, or a byte-for-byte comparison
//! with the tree on disk ([`write`](mod@write)); no page lists every dataset ([`menu`],
//! [`pages::lists`]), so the cost of a build is linear in the datasets.
//!
//! Layout (identical file names in both languages):
//!
//! ```text
//! index.html                 language choice
//! assets/style.css
//! {en,zh}/index.{md,html}    datasets
//! {en,zh}/methodology.{md,html}
//! {en,zh}/udp-report.{md,html}
//! {en,zh}/hosts.{md,html}        the same configurations on different hosts
//! {en,zh}/datasets/index, host-*, kind-*   every dataset, by host and by kind
//! {en,zh}/<dataset>/overview.{md,html}, <protocol>.{md,html}, charts/*.svg
//! data/<dataset>/summary.json, summary.csv, <archive>.json
//! ```

pub mod charts;
pub mod comparison;
pub mod explore;
pub mod i18n;
pub mod labels;
pub mod links;
pub mod markdown;
pub mod markup;
pub mod menu;
pub mod pages;
pub mod render;
pub mod subject;
pub mod table;
pub mod typography;
pub mod write;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;

use crate::analysis::Analysis;
use crate::model::Dataset;
use crate::summary::SummaryDocument;
use i18n::Catalog;
use menu::{HostMenu, Menu, SidebarEntry};
use pages::{DatasetView, PageSpec};

pub use write::{write, WriteError, WriteOptions};

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
    /// A rendered file could not be passed on (written, or read back to compare).
    #[error("{0}: {1}")]
    Write(String, #[source] io::Error),
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
/// The file name a raw archive is published under in `data/<dataset>/`: its own name,
/// sanitised, with `.gz`.
pub fn published_archive_name(name: &str) -> String {
    format!("{}.gz", crate::output::bounded_name(name))
}

/// `bytes` gzip-compressed, the same bytes for the same input (no file name, time 0), at
/// gzip's default level: the committed archives come out 1.7% larger than at the best level
/// in 0.57 of the time (zlib on the 52 committed archives, 61.8 MB: 20.2 MB in 0.80 s against
/// 19.8 MB in 1.39 s), and compressing was a fifth of a debug `echomark check`.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut encoder = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::default());
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(bytes);
    encoder.finish().unwrap_or_default()
}

/// Built pages as specs to render and the sidebar entries of those that have one.
fn with_entries(built: Vec<pages::registry::Built>) -> (Vec<PageSpec>, Vec<SidebarEntry>) {
    let entries = built
        .iter()
        .filter_map(|b| {
            Some(SidebarEntry {
                label: b.nav.clone()?,
                note: String::new(),
                stem: b.spec.stem.clone(),
            })
        })
        .collect();
    (built.into_iter().map(|b| b.spec).collect(), entries)
}

/// The sidebar's material for one language: the site-wide entries, the hosts with their
/// datasets, each dataset's overview.
fn menu_of(
    cat: &Catalog,
    views: &[DatasetView],
    groups: &pages::lists::Groups,
    top: Vec<SidebarEntry>,
) -> Menu {
    Menu::new(
        top,
        groups
            .hosts
            .iter()
            .map(|h| HostMenu {
                entry: SidebarEntry {
                    label: pages::lists::host_label(cat, views, h).plain(),
                    note: pages::lists::kernel(&views[h.datasets[0]]),
                    stem: h.stem(cat.code),
                },
                datasets: h.datasets.clone(),
                newest: h.newest.clone(),
                all_label: cat
                    .fill(
                        "lists.all_of_host",
                        &[(
                            "n",
                            &labels::number(crate::format::count(h.datasets.len() as u64)),
                        )],
                    )
                    .plain(),
            })
            .collect(),
        views
            .iter()
            .map(|v| SidebarEntry {
                // Control characters (ESC, BEL) from a folder name never reach a page.
                label: v
                    .dataset
                    .name
                    .chars()
                    .map(|c| if c.is_control() { '\u{fffd}' } else { c })
                    .collect(),
                note: labels::dataset_kind(cat, v.dataset).plain(),
                stem: pages::overview::stem(cat, v),
            })
            .collect(),
    )
}

/// Refuses datasets (or archive files of one dataset) whose sanitised names coincide, so that
/// no page or data file silently replaces another.
fn unique_names(datasets: &[Dataset]) -> Result<(), SiteError> {
    let check = |names: &mut dyn Iterator<Item = &str>, named: fn(&str) -> String| {
        let mut seen: BTreeMap<String, &str> = BTreeMap::new();
        for name in names {
            if let Some(other) = seen.insert(named(name), name) {
                return Err(SiteError::Collision(
                    other.to_string(),
                    name.to_string(),
                    named(name),
                ));
            }
        }
        Ok(())
    };
    check(
        &mut datasets.iter().map(|d| d.name.as_str()),
        crate::output::dataset_folder,
    )?;
    for d in datasets {
        check(
            &mut d.files.iter().map(|f| f.name.as_str()),
            crate::output::bounded_name,
        )?;
    }
    Ok(())
}

/// Where a build's files go as they are rendered: memory ([`Site`]), a staging folder, or a
/// comparison with the folder on disk ([`write`](mod@write)).
pub trait Sink {
    /// Takes the file at the site-relative path `rel`.
    fn put(&mut self, rel: &str, bytes: &[u8]) -> io::Result<()>;
}

impl Sink for Site {
    fn put(&mut self, rel: &str, bytes: &[u8]) -> io::Result<()> {
        self.files.insert(rel.to_string(), bytes.to_vec());
        Ok(())
    }
}

/// A sink with what the build must know of every file it passed on: the names (for the
/// marker and the link check) and the links of its pages.
pub struct Out<'a> {
    sink: &'a mut dyn Sink,
    files: BTreeSet<String>,
    links: links::Pending,
}

impl<'a> Out<'a> {
    fn new(sink: &'a mut dyn Sink) -> Self {
        Self {
            sink,
            files: BTreeSet::new(),
            links: links::Pending::default(),
        }
    }

    /// Passes the file `rel` on to the sink; a page's links are noted for the check.
    pub fn put(&mut self, rel: String, bytes: &[u8]) -> Result<(), SiteError> {
        if rel.ends_with(".md") {
            self.links.scan(&rel, &String::from_utf8_lossy(bytes));
        }
        self.sink
            .put(&rel, bytes)
            .map_err(|e| SiteError::Write(rel.clone(), e))?;
        self.files.insert(rel);
        Ok(())
    }
}

/// Renders the whole site from validated, analysed data into memory.
pub fn render(
    datasets: &[Dataset],
    analysis: &Analysis,
    base_url: &str,
) -> Result<Site, SiteError> {
    let mut site = Site::default();
    render_into(datasets, analysis, base_url, &mut site)?;
    Ok(site)
}

/// Renders the whole site into `sink`, page by page: no more of it is held than one
/// dataset's pages. Returns how many files it wrote.
pub fn render_into(
    datasets: &[Dataset],
    analysis: &Analysis,
    base_url: &str,
    sink: &mut dyn Sink,
) -> Result<usize, SiteError> {
    let plain = !base_url
        .contains(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`'));
    let absolute = base_url.starts_with("https://") || base_url.starts_with("http://");
    if !(plain && absolute && base_url.ends_with('/')) {
        return Err(SiteError::BaseUrl(base_url.to_string()));
    }
    unique_names(datasets)?;
    let env = render::environment();
    let mut out = Out::new(sink);
    let catalogs = i18n::catalogs();
    let views: Vec<DatasetView> = datasets
        .iter()
        .enumerate()
        .map(|(i, d)| DatasetView::new(d, analysis, i))
        .collect();
    let groups = pages::lists::Groups::of(&views);
    let inputs = pages::registry::Inputs {
        views: &views,
        analysis,
        groups: &groups,
    };
    for cat in &catalogs {
        let (specs, top) = with_entries(pages::registry::site_pages(cat, &inputs));
        let menu = menu_of(cat, &views, &groups, top);
        for spec in &specs {
            let sidebar = menu.items(&spec.stem, None, &[]);
            render::page(&env, cat, &catalogs, spec, sidebar, base_url, &mut out)?;
        }
        for index in 0..views.len() {
            let (specs, entries) =
                with_entries(pages::registry::dataset_pages(cat, &inputs, index));
            for spec in &specs {
                let sidebar = menu.items(&spec.stem, Some(index), &entries);
                render::page(&env, cat, &catalogs, spec, sidebar, base_url, &mut out)?;
            }
        }
    }
    for (d, own) in datasets.iter().zip(&analysis.datasets) {
        let slug = crate::output::dataset_folder(&d.name);
        let doc = SummaryDocument::of(d, analysis, own);
        out.put(format!("data/{slug}/summary.json"), &doc.json())?;
        out.put(format!("data/{slug}/summary.csv"), doc.csv().as_bytes())?;
        for f in &d.files {
            let bytes =
                fs::read(&f.path).map_err(|e| SiteError::Io(f.path.display().to_string(), e))?;
            out.put(
                format!("data/{slug}/{}", published_archive_name(&f.name)),
                &gzip(&bytes),
            )?;
        }
    }
    let kinds: Vec<(String, String)> = datasets
        .iter()
        .map(|d| {
            let kind = |cat: &Catalog| labels::dataset_kind(cat, d).plain();
            (kind(&catalogs[0]), kind(&catalogs[1]))
        })
        .collect();
    out.put(
        "data/explore.js".into(),
        explore::data_js(datasets, analysis, &kinds).as_bytes(),
    )?;
    out.put(
        "assets/explore.js".into(),
        include_bytes!("../../assets/explore.js"),
    )?;
    out.put(
        "assets/style.css".into(),
        include_bytes!("../../templates/style.css"),
    )?;
    out.put(
        "assets/favicon.svg".into(),
        include_bytes!("../../assets/favicon.svg"),
    )?;
    out.put(".nojekyll".into(), &[])?;
    out.put(
        "index.html".into(),
        landing(&env, &catalogs, &views)?.as_bytes(),
    )?;
    let broken = out.links.broken(&out.files);
    if !broken.is_empty() {
        return Err(SiteError::BrokenLinks(broken));
    }
    let marker = write::marker(out.files.iter().cloned());
    out.put(write::MARKER.into(), &marker)?;
    Ok(out.files.len())
}

#[derive(serde::Serialize)]
struct LandingLanguage {
    code: &'static str,
    lang: String,
    about: String,
    enter: String,
}

#[derive(serde::Serialize)]
struct LandingLink {
    href: String,
    lang: String,
    label: String,
}

#[derive(serde::Serialize)]
struct LandingDataset {
    name: String,
    host: String,
    recorded: String,
    links: Vec<LandingLink>,
}

/// A sentence of the landing page in one language.
#[derive(serde::Serialize)]
struct LandingNote {
    lang: String,
    text: String,
}

#[derive(serde::Serialize)]
struct Landing {
    languages: Vec<LandingLanguage>,
    columns: Vec<String>,
    datasets: Vec<LandingDataset>,
    /// "The 20 newest of 1,000 datasets." in each language, when some are left out.
    more: Vec<LandingNote>,
}

/// The root page: what echomark is, in both languages, and the newest datasets with their
/// host and date, linked to their overview in each language (plain links: no redirect, no
/// script); each language's index links the rest.
fn landing(
    env: &minijinja::Environment,
    catalogs: &[Catalog],
    views: &[DatasetView],
) -> Result<String, SiteError> {
    let shown = pages::lists::newest(views, pages::index::INDEX_DATASETS);
    let model = Landing {
        languages: catalogs
            .iter()
            .map(|c| LandingLanguage {
                code: c.code,
                lang: c.raw("lang.html").to_string(),
                about: c.raw("landing.about").to_string(),
                enter: c.raw("landing.enter").to_string(),
            })
            .collect(),
        columns: catalogs
            .iter()
            .map(|c| c.list("landing.columns", &[]))
            .fold(Vec::new(), |acc: Vec<String>, cols| {
                if acc.is_empty() {
                    cols.iter().map(ToString::to_string).collect()
                } else {
                    acc.iter()
                        .zip(&cols)
                        .map(|(a, b)| format!("{a} / {b}"))
                        .collect()
                }
            }),
        more: if shown.len() < views.len() {
            catalogs
                .iter()
                .map(|c| {
                    let n = |v: usize| labels::number(crate::format::count(v as u64));
                    LandingNote {
                        lang: c.raw("lang.html").to_string(),
                        text: c
                            .fill(
                                "landing.more",
                                &[("shown", &n(shown.len())), ("n", &n(views.len()))],
                            )
                            .plain(),
                    }
                })
                .collect()
        } else {
            Vec::new()
        },
        datasets: shown
            .iter()
            .map(|&i| {
                let v = &views[i];
                let d = v.dataset;
                let h = d.host().cloned().unwrap_or_default();
                let recorded = d.recorded_at().unwrap_or("");
                LandingDataset {
                    name: d.name.clone(),
                    host: format!(
                        "{}, {} CPUs",
                        h.cpu.as_deref().unwrap_or("?"),
                        h.logical_cpus.map_or("?".to_string(), |n| n.to_string())
                    ),
                    recorded: recorded.get(..19).unwrap_or(recorded).to_string(),
                    links: catalogs
                        .iter()
                        .map(|c| LandingLink {
                            href: format!("{}/{}/overview.html", c.code, v.slug()),
                            lang: c.raw("lang.html").to_string(),
                            label: c.raw("lang.name").to_string(),
                        })
                        .collect(),
                }
            })
            .collect(),
    };
    env.get_template("landing.html")
        .and_then(|t| t.render(&model))
        .map_err(|e| SiteError::Template("landing.html".into(), format!("{e:#}")))
}
