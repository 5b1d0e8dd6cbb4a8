//! The pages that list datasets, so that no other page has to: every host and every kind
//! (`datasets/index`), one page per host (`datasets/host-*`) and one per kind
//! (`datasets/kind-*`), each a table of its datasets. The index and the sidebar name only the
//! newest few and link here.

use serde::Serialize;

use super::{DatasetView, PageSpec};
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::Markup;
use crate::site::table::{Align, Table};

/// The folder of the list pages, beside the datasets' folders (a dataset of this name is
/// renamed: [`crate::output::dataset_folder`]).
pub const FOLDER: &str = "datasets";

/// The datasets of one host or one kind.
#[derive(Debug, Clone)]
pub struct Group {
    /// The list page's file name (`host-1a2b3c4d`, `kind-baseline`), the same in every
    /// language.
    pub slug: String,
    /// Its datasets, in the site's order.
    pub datasets: Vec<usize>,
    /// The same, newest first.
    pub newest: Vec<usize>,
}

impl Group {
    fn new(slug: String, datasets: Vec<usize>, views: &[DatasetView]) -> Self {
        let newest = newest_first(views, &datasets);
        Self {
            slug,
            datasets,
            newest,
        }
    }

    /// The list page's stem in the language `code`.
    pub fn stem(&self, code: &str) -> String {
        format!("{code}/{FOLDER}/{}", self.slug)
    }
}

/// The datasets grouped by host (in the order of each host's first dataset) and by kind.
#[derive(Debug, Clone, Default)]
pub struct Groups {
    pub hosts: Vec<Group>,
    pub kinds: Vec<Group>,
}

/// `members` newest first: by recording time, later index first among equals.
pub fn newest_first(views: &[DatasetView], members: &[usize]) -> Vec<usize> {
    let mut out = members.to_vec();
    out.sort_by(|&a, &b| {
        let at = |i: usize| views[i].dataset.recorded_at().unwrap_or("");
        at(b).cmp(at(a)).then(b.cmp(&a))
    });
    out
}

/// The `n` newest of all datasets, in the site's order: what the index and the landing page
/// name.
pub fn newest(views: &[DatasetView], n: usize) -> Vec<usize> {
    let all: Vec<usize> = (0..views.len()).collect();
    let mut shown: Vec<usize> = newest_first(views, &all).into_iter().take(n).collect();
    shown.sort_unstable();
    shown
}

impl Groups {
    /// Groups `views` by host and by kind.
    pub fn of(views: &[DatasetView]) -> Self {
        let datasets = views.iter().map(|v| v.dataset);
        let mut hosts: Vec<Group> = Vec::new();
        let mut slugs = std::collections::BTreeSet::new();
        for members in crate::analysis::hosts::hosts(datasets) {
            let key =
                crate::analysis::hosts::host_key(views[members[0]].dataset).unwrap_or_default();
            let mut slug = format!("host-{:08x}", crate::output::fingerprint(&key));
            // Two hosts whose keys share a fingerprint still get a file each.
            while !slugs.insert(slug.clone()) {
                slug.push('x');
            }
            hosts.push(Group::new(slug, members, views));
        }
        let grouped: std::collections::BTreeSet<usize> = hosts
            .iter()
            .flat_map(|h| h.datasets.iter().copied())
            .collect();
        let unrecorded: Vec<usize> = (0..views.len()).filter(|i| !grouped.contains(i)).collect();
        if !unrecorded.is_empty() {
            hosts.push(Group::new("host-unrecorded".into(), unrecorded, views));
        }
        let mut kinds: std::collections::BTreeMap<String, Vec<usize>> = Default::default();
        for (i, v) in views.iter().enumerate() {
            kinds
                .entry(labels::dataset_kind_id(v.dataset))
                .or_default()
                .push(i);
        }
        Self {
            hosts,
            kinds: kinds
                .into_iter()
                .map(|(id, members)| Group::new(format!("kind-{id}"), members, views))
                .collect(),
        }
    }
}

/// What tells two hosts of one CPU apart: the kernel they ran.
pub fn kernel(view: &DatasetView) -> String {
    view.dataset
        .files
        .first()
        .and_then(|f| {
            let release = f.host.release.as_deref()?;
            Some(match f.host.system.as_deref() {
                Some(system) => format!("{system} {release}"),
                None => release.to_string(),
            })
        })
        .unwrap_or_default()
}

/// The table of `members` (in that order): each dataset with its protocols, host, pass
/// counts and recording time. `up` leads from the page to the language's folder.
pub fn dataset_table(cat: &Catalog, views: &[DatasetView], members: &[usize], up: &str) -> Table {
    use Align::{Default as L, Right as R};
    let mut table = Table::new(cat.list("index.columns", &[]), &[L, L, L, R, R, L]);
    for &i in members {
        let v = &views[i];
        let d = v.dataset;
        let r = &v.analysis.report;
        let protocols: Vec<Markup> = v
            .subjects()
            .into_iter()
            .map(|s| labels::subject(cat, s))
            .collect();
        let recorded = d.recorded_at().unwrap_or("");
        let count = |n: usize| labels::count(n as u64);
        let of = |a: usize, b: usize| Markup::trusted(format!("{} / {}", count(a), count(b)));
        table.push(vec![
            labels::dataset_link(&d.name, &v.slug(), up),
            Markup::join(&protocols, &cat.text("list.sep")),
            labels::host(cat, d, &Markup::default()),
            of(r.runs_passed, r.runs),
            of(r.configurations_valid, r.configurations),
            Markup::text(recorded.get(..19).unwrap_or(recorded)),
        ]);
    }
    table
}

/// The page that lists every dataset by host and by kind.
#[derive(Serialize)]
pub struct ListsPage {
    pub hosts: Table,
    pub kinds: Table,
}

/// One host's or one kind's datasets.
#[derive(Serialize)]
pub struct GroupPage {
    pub title: Markup,
    pub datasets: Table,
    pub back: Markup,
}

/// The host's name in the page's language, as the index names it.
pub fn host_label(cat: &Catalog, views: &[DatasetView], host: &Group) -> Markup {
    labels::host(
        cat,
        views[host.datasets[0]].dataset,
        &cat.text("overview.not_recorded"),
    )
}

/// Every list page of one language: the page of all hosts and kinds, then one per host and
/// one per kind.
pub fn pages(cat: &Catalog, views: &[DatasetView], groups: &Groups) -> Vec<PageSpec> {
    let code = cat.code;
    let newest = |g: &Group| {
        let v = &views[g.newest[0]];
        labels::dataset_link(&v.dataset.name, &v.slug(), "../")
    };
    let link = |label: Markup, g: &Group| Markup::trusted(format!("[{label}]({}.md)", g.slug));
    let count = |g: &Group| labels::count(g.datasets.len() as u64);
    let mut hosts = Table::new(
        cat.list("lists.host_columns", &[]),
        &[Align::Default, Align::Default, Align::Right, Align::Default],
    );
    for h in &groups.hosts {
        hosts.push(vec![
            link(host_label(cat, views, h), h),
            Markup::text(&kernel(&views[h.datasets[0]])),
            count(h),
            newest(h),
        ]);
    }
    let mut kinds = Table::new(
        cat.list("lists.kind_columns", &[]),
        &[Align::Default, Align::Right, Align::Default],
    );
    for k in &groups.kinds {
        kinds.push(vec![
            link(labels::dataset_kind(cat, views[k.datasets[0]].dataset), k),
            count(k),
            newest(k),
        ]);
    }
    let mut out = vec![PageSpec::new(
        format!("{code}/{FOLDER}/index"),
        "lists.md",
        cat.text("lists.title"),
        &ListsPage { hosts, kinds },
        Vec::new(),
    )];
    let back = cat.fill("lists.back", &[("link", &Markup::trusted("index.md"))]);
    for h in &groups.hosts {
        let title = cat.fill("lists.host_title", &[("host", &host_label(cat, views, h))]);
        out.push(PageSpec::new(
            h.stem(code),
            "list.md",
            title.clone(),
            &GroupPage {
                title,
                datasets: dataset_table(cat, views, &h.datasets, "../"),
                back: back.clone(),
            },
            Vec::new(),
        ));
    }
    for k in &groups.kinds {
        let title = cat.fill(
            "lists.kind_title",
            &[(
                "kind",
                &labels::dataset_kind(cat, views[k.datasets[0]].dataset),
            )],
        );
        out.push(PageSpec::new(
            k.stem(code),
            "list.md",
            title.clone(),
            &GroupPage {
                title,
                datasets: dataset_table(cat, views, &k.datasets, "../"),
                back: back.clone(),
            },
            Vec::new(),
        ));
    }
    out
}
