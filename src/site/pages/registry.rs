//! Every kind of page the site has, in one table ([`PAGES`]): its templates and how its
//! pages are built. The site builds its pages from this table ([`site_pages`],
//! [`dataset_pages`]) and the template environment loads the templates from it
//! ([`templates`]), so a new page is its module, its template and one entry here.

use super::{DatasetView, PageSpec, Subject};
use crate::analysis::across::Question;
use crate::analysis::Analysis;
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::Markup;

/// A template of `templates/pages/`: its name and its source, embedded.
macro_rules! template {
    ($name:literal) => {
        (
            $name,
            include_str!(concat!("../../../templates/pages/", $name)),
        )
    };
}

/// One kind of page.
pub struct PageKind {
    /// The templates its pages are rendered with: name and source.
    pub templates: &'static [(&'static str, &'static str)],
    /// Which pages it has, and how they are built.
    pub pages: Pages,
}

/// Where a kind's pages belong, and the function that builds them in one language. A
/// function builds none where the kind does not apply (no UDP run: no UDP report).
pub enum Pages {
    /// Site-wide pages, at the top of every sidebar.
    Site(fn(&Catalog, &Inputs) -> Vec<Built>),
    /// Pages of one dataset (its index), under the dataset in the sidebar.
    Dataset(fn(&Catalog, &Inputs, usize) -> Vec<Built>),
    /// Pages of one protocol (or program) of a dataset measured by echomark, after the
    /// dataset's own pages, protocol by protocol.
    Subject(fn(&Catalog, &DatasetView, Subject) -> Vec<Built>),
}

/// Every kind of page, in sidebar order: the site-wide pages, then a dataset's pages (its
/// overview, or its imported runs' page, first), then its pages per protocol.
pub const PAGES: &[PageKind] = &[
    PageKind {
        templates: &[template!("index.md")],
        pages: Pages::Site(index),
    },
    PageKind {
        templates: &[template!("methodology.md")],
        pages: Pages::Site(methodology),
    },
    PageKind {
        templates: &[template!("udp.md")],
        pages: Pages::Site(udp_report),
    },
    PageKind {
        templates: &[template!("quic.md")],
        pages: Pages::Site(quic_report),
    },
    PageKind {
        templates: &[template!("hosts.md")],
        pages: Pages::Site(hosts),
    },
    PageKind {
        templates: &[template!("explore.md")],
        pages: Pages::Site(explore),
    },
    PageKind {
        templates: &[template!("lists.md"), template!("list.md")],
        pages: Pages::Site(lists),
    },
    PageKind {
        templates: &[template!("overview.md")],
        pages: Pages::Dataset(overview),
    },
    PageKind {
        templates: &[template!("imported.md")],
        pages: Pages::Dataset(imported),
    },
    PageKind {
        templates: &[template!("changes.md"), template!("history.md")],
        pages: Pages::Dataset(changes),
    },
    PageKind {
        templates: &[template!("load.md")],
        pages: Pages::Dataset(load),
    },
    PageKind {
        templates: &[template!("protocol.md")],
        pages: Pages::Subject(protocol),
    },
    PageKind {
        templates: &[template!("dimensions.md")],
        pages: Pages::Subject(dimensions),
    },
];

/// Every page's template: name and source.
pub fn templates() -> impl Iterator<Item = (&'static str, &'static str)> {
    PAGES.iter().flat_map(|k| k.templates.iter().copied())
}

/// What a page is built from: every dataset's view, the analysis, the dataset lists.
pub struct Inputs<'a> {
    pub views: &'a [DatasetView<'a>],
    pub analysis: &'a Analysis,
    pub groups: &'a super::lists::Groups,
}

/// A page and the label of its sidebar entry; `None` for a page the sidebar reaches
/// otherwise (a dataset's overview, which the dataset's own entry links; a list of
/// datasets, which the list of all links).
pub struct Built {
    pub spec: PageSpec,
    pub nav: Option<String>,
}

impl Built {
    /// A page with a sidebar entry labelled `label`.
    fn listed(spec: PageSpec, label: impl Into<String>) -> Self {
        Self {
            spec,
            nav: Some(label.into()),
        }
    }

    /// A page without a sidebar entry of its own.
    fn unlisted(spec: PageSpec) -> Self {
        Self { spec, nav: None }
    }
}

/// The site-wide pages of one language, in sidebar order.
pub fn site_pages(cat: &Catalog, inputs: &Inputs) -> Vec<Built> {
    PAGES
        .iter()
        .flat_map(|kind| match kind.pages {
            Pages::Site(build) => build(cat, inputs),
            _ => Vec::new(),
        })
        .collect()
}

/// The pages of dataset `index` in one language, in sidebar order (its overview first).
pub fn dataset_pages(cat: &Catalog, inputs: &Inputs, index: usize) -> Vec<Built> {
    let mut out: Vec<Built> = PAGES
        .iter()
        .flat_map(|kind| match kind.pages {
            Pages::Dataset(build) => build(cat, inputs, index),
            _ => Vec::new(),
        })
        .collect();
    let view = &inputs.views[index];
    // Other tools' runs have one page, which says who measured what: no protocol pages.
    if view.dataset.has_imported() {
        return out;
    }
    for subject in view.subjects() {
        for kind in PAGES {
            if let Pages::Subject(build) = kind.pages {
                out.extend(build(cat, view, subject));
            }
        }
    }
    out
}

fn index(cat: &Catalog, inputs: &Inputs) -> Vec<Built> {
    let page = super::index::page(cat, inputs.views, &inputs.analysis.answers);
    vec![Built::listed(page, cat.raw("nav.index"))]
}

fn methodology(cat: &Catalog, _: &Inputs) -> Vec<Built> {
    let page = super::methodology::page(cat);
    vec![Built::listed(page, cat.raw("nav.methodology"))]
}

fn udp_report(cat: &Catalog, inputs: &Inputs) -> Vec<Built> {
    super::udp_report::page(cat, inputs.views)
        .map(|page| Built::listed(page, cat.raw("udp.nav")))
        .into_iter()
        .collect()
}

fn quic_report(cat: &Catalog, inputs: &Inputs) -> Vec<Built> {
    super::quic_report::page(cat, inputs.views)
        .map(|page| Built::listed(page, cat.raw("quic.nav")))
        .into_iter()
        .collect()
}

fn hosts(cat: &Catalog, inputs: &Inputs) -> Vec<Built> {
    super::hosts::page(cat, inputs.views, &inputs.analysis.hosts)
        .map(|page| Built::listed(page, cat.raw("hosts.nav")))
        .into_iter()
        .collect()
}

fn explore(cat: &Catalog, _: &Inputs) -> Vec<Built> {
    let page = super::explore::page(cat);
    vec![Built::listed(page, cat.raw("explore.nav"))]
}

/// The list of all datasets (in the sidebar), then one per host and per kind.
fn lists(cat: &Catalog, inputs: &Inputs) -> Vec<Built> {
    super::lists::pages(cat, inputs.views, inputs.groups)
        .into_iter()
        .enumerate()
        .map(|(i, page)| match i {
            0 => Built::listed(page, cat.raw("lists.nav")),
            _ => Built::unlisted(page),
        })
        .collect()
}

/// A dataset's overview, with the cross-dataset answers it is the witness of (its path,
/// say); other tools' runs have the imported page instead.
fn overview(cat: &Catalog, inputs: &Inputs, index: usize) -> Vec<Built> {
    let view = &inputs.views[index];
    if view.dataset.has_imported() {
        return Vec::new();
    }
    let own: Vec<Markup> = inputs
        .analysis
        .answers
        .iter()
        .filter(|a| a.dataset == index && a.question == Question::Path)
        .filter_map(|a| super::index::answer_line(cat, inputs.views, a, "../"))
        .collect();
    vec![Built::unlisted(super::overview::page(cat, view, own))]
}

/// Other tools' runs: one page says who measured what, and where echomark agrees.
fn imported(cat: &Catalog, inputs: &Inputs, index: usize) -> Vec<Built> {
    let view = &inputs.views[index];
    if !view.dataset.has_imported() {
        return Vec::new();
    }
    vec![Built::unlisted(super::imported::page(cat, view))]
}

/// For each series of datasets the dataset is a step of, what changed since the step
/// before; and the whole series' history on its newest dataset.
fn changes(cat: &Catalog, inputs: &Inputs, index: usize) -> Vec<Built> {
    let views = inputs.views;
    let mut out = Vec::new();
    for series in &inputs.analysis.history {
        if let Some((previous, step)) = series.step_into(index) {
            let page = super::changes::page(cat, &views[previous], &views[index], step);
            out.push(Built::listed(page, cat.raw("changes.nav")));
        }
        if series.datasets.last() == Some(&index) {
            if let Some(page) = super::changes::history(cat, views, series) {
                out.push(Built::listed(page, cat.raw("history.nav")));
            }
        }
    }
    out
}

fn load(cat: &Catalog, inputs: &Inputs, index: usize) -> Vec<Built> {
    let view = &inputs.views[index];
    if view.dataset.has_imported() {
        return Vec::new();
    }
    super::load::page(cat, view)
        .map(|page| Built::listed(page, cat.raw("load.nav")))
        .into_iter()
        .collect()
}

fn protocol(cat: &Catalog, view: &DatasetView, subject: Subject) -> Vec<Built> {
    let page = super::protocol::page(cat, view, subject);
    vec![Built::listed(
        page,
        labels::subject(cat, subject).to_string(),
    )]
}

/// A protocol's heat maps, where its dataset varied two dimensions of it.
fn dimensions(cat: &Catalog, view: &DatasetView, subject: Subject) -> Vec<Built> {
    let Subject::Protocol(protocol) = subject else {
        return Vec::new();
    };
    if !super::dimensions::applies(view, protocol) {
        return Vec::new();
    }
    let label = cat.fill(
        "dimensions.nav",
        &[("protocol", &labels::protocol(cat, protocol))],
    );
    vec![Built::listed(
        super::dimensions::page(cat, view, protocol),
        label.to_string(),
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_template_is_registered_once() {
        let names: Vec<&str> = templates().map(|(name, _)| name).collect();
        let unique: std::collections::BTreeSet<&str> = names.iter().copied().collect();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        // Every page template of templates/pages/ is registered, except the partials and
        // the compare command's page (not pages of the site).
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/templates/pages");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .expect("templates/pages")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n != "partials.md" && n != "compare.md")
            .collect();
        on_disk.sort();
        let mut registered: Vec<&str> = names.clone();
        registered.sort_unstable();
        assert_eq!(on_disk, registered);
    }
}
