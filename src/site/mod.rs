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
//! {en,zh}/hosts.{md,html}        the same configurations on different hosts
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
pub mod subject;
pub mod table;
pub mod write;

use std::collections::BTreeMap;
use std::fs;
use std::io;

use crate::analysis::across::Question;
use crate::analysis::Analysis;
use crate::model::Dataset;
use crate::summary::SummaryDocument;
use i18n::Catalog;
use markup::Markup;
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
/// The file name a raw archive is published under in `data/<dataset>/`: its own name,
/// sanitised, with `.gz`.
pub fn published_archive_name(name: &str) -> String {
    format!("{}.gz", crate::output::bounded_name(name))
}

/// `bytes` gzip-compressed, the same bytes for the same input (no file name, time 0).
fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut encoder = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::best());
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(bytes);
    encoder.finish().unwrap_or_default()
}

fn pages_of(
    cat: &Catalog,
    views: &[DatasetView],
    analysis: &Analysis,
) -> (Vec<PageSpec>, Vec<SidebarEntry>) {
    let history = &analysis.history;
    let mut specs = vec![
        pages::index::page(cat, views, &analysis.answers),
        pages::methodology::page(cat),
    ];
    let top = |key: &str, stem: String| SidebarEntry {
        kind: "top",
        label: cat.raw(key).to_string(),
        note: String::new(),
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
    if let Some(hosts) = pages::hosts::page(cat, views, &analysis.hosts) {
        sidebar.push(top("hosts.nav", hosts.stem.clone()));
        specs.push(hosts);
    }
    // The menu lists datasets by host (in the order of each host's first dataset).
    let groups = crate::analysis::hosts::hosts(views.iter().map(|v| v.dataset));
    let mut order: Vec<usize> = groups.iter().flatten().copied().collect();
    let ungrouped: Vec<usize> = (0..views.len()).filter(|i| !order.contains(i)).collect();
    order.extend(ungrouped);
    let mut host_of_previous: Option<usize> = None;
    for index in order {
        let view = &views[index];
        let group = groups.iter().position(|g| g.contains(&index));
        if group != host_of_previous || group.is_none() {
            sidebar.push(SidebarEntry {
                kind: "host",
                label: labels::host(cat, view.dataset, &cat.text("overview.not_recorded")).plain(),
                // What tells two hosts of one CPU apart: the kernel they ran.
                note: view
                    .dataset
                    .files
                    .first()
                    .and_then(|f| {
                        let release = f.host.release.as_deref()?;
                        Some(match f.host.system.as_deref() {
                            Some(system) => format!("{system} {release}"),
                            None => release.to_string(),
                        })
                    })
                    .unwrap_or_default(),
                stem: String::new(),
            });
            host_of_previous = group;
        }
        // The cross-dataset answers this dataset is the witness of (its path, say).
        let own: Vec<Markup> = analysis
            .answers
            .iter()
            .filter(|a| a.dataset == index && a.question == Question::Path)
            .filter_map(|a| pages::index::answer_line(cat, views, a, "../"))
            .collect();
        let overview = pages::overview::page(cat, view, own);
        sidebar.push(SidebarEntry {
            kind: "dataset",
            // Control characters (ESC, BEL) from a folder name never reach a page.
            label: view
                .dataset
                .name
                .chars()
                .map(|c| if c.is_control() { '\u{fffd}' } else { c })
                .collect(),
            note: labels::dataset_kind(cat, view.dataset).plain(),
            stem: overview.stem.clone(),
        });
        specs.push(overview);
        for series in history {
            if let Some((previous, step)) = series.step_into(index) {
                let page = pages::changes::page(cat, &views[previous], view, step);
                sidebar.push(SidebarEntry {
                    kind: "page",
                    note: String::new(),
                    label: cat.raw("changes.nav").to_string(),
                    stem: page.stem.clone(),
                });
                specs.push(page);
            }
            if series.datasets.last() == Some(&index) {
                if let Some(page) = pages::changes::history(cat, views, series) {
                    sidebar.push(SidebarEntry {
                        kind: "page",
                        note: String::new(),
                        label: cat.raw("history.nav").to_string(),
                        stem: page.stem.clone(),
                    });
                    specs.push(page);
                }
            }
        }
        if let Some(page) = pages::load::page(cat, view) {
            sidebar.push(SidebarEntry {
                kind: "page",
                note: String::new(),
                label: cat.raw("load.nav").to_string(),
                stem: page.stem.clone(),
            });
            specs.push(page);
        }
        for subject in view.subjects() {
            let page = pages::protocol::page(cat, view, subject);
            sidebar.push(SidebarEntry {
                kind: "page",
                note: String::new(),
                label: labels::subject(cat, subject).to_string(),
                stem: page.stem.clone(),
            });
            specs.push(page);
            let pages::Subject::Protocol(protocol) = subject else {
                continue;
            };
            if pages::dimensions::applies(view, protocol) {
                let page = pages::dimensions::page(cat, view, protocol);
                sidebar.push(SidebarEntry {
                    kind: "page",
                    note: String::new(),
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
        let (specs, sidebar) = pages_of(cat, &views, analysis);
        for spec in specs {
            render::page(&env, cat, &catalogs, &spec, &sidebar, base_url, &mut site)?;
        }
    }
    for (d, own) in datasets.iter().zip(&analysis.datasets) {
        let slug = crate::output::dataset_folder(&d.name);
        let doc = SummaryDocument::of(d, analysis, own);
        site.files
            .insert(format!("data/{slug}/summary.json"), doc.json());
        site.files
            .insert(format!("data/{slug}/summary.csv"), doc.csv().into_bytes());
        for f in &d.files {
            let bytes =
                fs::read(&f.path).map_err(|e| SiteError::Io(f.path.display().to_string(), e))?;
            site.files.insert(
                format!("data/{slug}/{}", published_archive_name(&f.name)),
                gzip(&bytes),
            );
        }
    }
    site.files.insert(
        "assets/style.css".into(),
        include_bytes!("../../templates/style.css").to_vec(),
    );
    site.files.insert(
        "assets/favicon.svg".into(),
        include_bytes!("../../assets/favicon.svg").to_vec(),
    );
    site.files.insert(".nojekyll".into(), Vec::new());
    site.files.insert(
        "index.html".into(),
        landing(&env, &catalogs, &views)?.into_bytes(),
    );
    let listed: Vec<String> = site.files.keys().cloned().collect();
    site.files
        .insert(write::MARKER.into(), write::marker(listed));
    let broken = links::broken_links(&site);
    if !broken.is_empty() {
        return Err(SiteError::BrokenLinks(broken));
    }
    Ok(site)
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

#[derive(serde::Serialize)]
struct Landing {
    languages: Vec<LandingLanguage>,
    columns: Vec<String>,
    datasets: Vec<LandingDataset>,
}

/// The root page: what echomark is, in both languages, and every dataset with its host and
/// date, linked to its overview in each language (plain links: no redirect, no script).
fn landing(
    env: &minijinja::Environment,
    catalogs: &[Catalog],
    views: &[DatasetView],
) -> Result<String, SiteError> {
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
        datasets: views
            .iter()
            .map(|v| {
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
