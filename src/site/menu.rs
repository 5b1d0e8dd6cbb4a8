//! The sidebar, bounded however many datasets there are: the site-wide pages (among them the
//! list of all datasets); the hosts (at most [`MENU_HOSTS`], and always the current page's), each
//! with its newest [`MENU_DATASETS`] datasets (and always the current one) and a link to the
//! page that lists all of them; under the current dataset, its pages. A page's size does not
//! grow with the number of other datasets, and building the menu of a page costs the same
//! for the thousandth dataset as for the first.

use serde::Serialize;

/// The most hosts the sidebar names.
pub const MENU_HOSTS: usize = 8;
/// The most datasets the sidebar names under one host.
pub const MENU_DATASETS: usize = 12;

/// One sidebar link.
#[derive(Debug, Clone, Serialize)]
pub struct SidebarEntry {
    /// Plain text (the layout escapes it).
    pub label: String,
    /// A second line: a host's kernel, a dataset's kind; plain text.
    pub note: String,
    /// The page linked (site-relative, no extension); empty for none.
    pub stem: String,
}

/// One host of the menu.
#[derive(Debug, Clone)]
pub struct HostMenu {
    /// The host's name; its `stem` is the page listing all of its datasets.
    pub entry: SidebarEntry,
    /// Its datasets (indexes into the site's datasets), in the site's order.
    pub datasets: Vec<usize>,
    /// The same, newest first: the menu names the first [`MENU_DATASETS`].
    pub newest: Vec<usize>,
    /// "All 14 datasets" in the page's language.
    pub all_label: String,
}

/// Everything the sidebar of any page is made from.
#[derive(Debug, Clone, Default)]
pub struct Menu {
    /// The site-wide pages.
    top: Vec<SidebarEntry>,
    /// The hosts, in the site's order.
    hosts: Vec<HostMenu>,
    /// Each dataset's overview link, by dataset index.
    datasets: Vec<SidebarEntry>,
    /// Each dataset's host (an index into `hosts`), found once for every page.
    host_of: Vec<Option<usize>>,
}

/// One item as the layout nests it.
#[derive(Debug, Serialize)]
pub struct SidebarItem<'a> {
    /// `top` (a site-wide page), `host` (a group of datasets), `dataset` (its overview),
    /// `page` (a page of the current dataset) or `more` (a list of all of a group).
    pub kind: &'static str,
    pub label: &'a str,
    pub note: &'a str,
    pub href: String,
    pub current: bool,
    /// A host's datasets, the current dataset's pages.
    pub children: Vec<SidebarItem<'a>>,
    /// Unfolded: it is, or holds, the current page.
    pub open: bool,
}

impl Menu {
    /// The menu of these site-wide pages, hosts and dataset entries (by dataset index).
    pub fn new(top: Vec<SidebarEntry>, hosts: Vec<HostMenu>, datasets: Vec<SidebarEntry>) -> Self {
        let mut host_of = vec![None; datasets.len()];
        for (h, host) in hosts.iter().enumerate() {
            for &d in &host.datasets {
                if let Some(slot) = host_of.get_mut(d) {
                    *slot = Some(h);
                }
            }
        }
        Self {
            top,
            hosts,
            datasets,
            host_of,
        }
    }

    /// The sidebar of the page at `stem`, which belongs to dataset `dataset` (whose own pages
    /// are `pages`), or to none.
    pub fn items<'a>(
        &'a self,
        stem: &str,
        dataset: Option<usize>,
        pages: &'a [SidebarEntry],
    ) -> Vec<SidebarItem<'a>> {
        let item = |kind: &'static str, e: &'a SidebarEntry| SidebarItem {
            kind,
            label: &e.label,
            note: &e.note,
            href: if e.stem.is_empty() {
                String::new()
            } else {
                relative(stem, &format!("{}.html", e.stem))
            },
            current: e.stem == stem,
            children: Vec::new(),
            open: e.stem == stem,
        };
        let mut out: Vec<SidebarItem<'a>> = self.top.iter().map(|e| item("top", e)).collect();
        let current_host = dataset.and_then(|d| self.host_of.get(d).copied().flatten());
        let shown_hosts =
            (0..self.hosts.len()).filter(|&h| h < MENU_HOSTS || Some(h) == current_host);
        for h in shown_hosts {
            let host = &self.hosts[h];
            let mut group = item("host", &host.entry);
            group.href = String::new();
            let mut shown: Vec<usize> = host.newest.iter().take(MENU_DATASETS).copied().collect();
            if let Some(d) = dataset.filter(|d| current_host == Some(h) && !shown.contains(d)) {
                shown.push(d);
            }
            // In the site's order, as the pages list them.
            shown.sort_unstable();
            for d in shown {
                let Some(entry) = self.datasets.get(d) else {
                    continue;
                };
                let mut node = item("dataset", entry);
                if Some(d) == dataset {
                    node.children = pages.iter().map(|p| item("page", p)).collect();
                    node.open = true;
                    group.open = true;
                }
                group.children.push(node);
            }
            if host.datasets.len() > MENU_DATASETS || stem == host.entry.stem {
                let mut more = item("more", &host.entry);
                more.label = &host.all_label;
                more.note = "";
                group.open |= more.current;
                group.children.push(more);
            }
            out.push(group);
        }
        out
    }
}

/// `../` once per folder below the site root.
pub fn depth_prefix(stem: &str) -> String {
    "../".repeat(stem.matches('/').count())
}

/// A link from the page at `from` (a stem) to the site-relative path `to`.
pub fn relative(from: &str, to: &str) -> String {
    format!("{}{to}", depth_prefix(from))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(label: &str, stem: &str) -> SidebarEntry {
        SidebarEntry {
            label: label.into(),
            note: String::new(),
            stem: stem.into(),
        }
    }

    fn menu(datasets: usize) -> Menu {
        let all: Vec<usize> = (0..datasets).collect();
        Menu::new(
            vec![entry("Index", "en/index")],
            vec![HostMenu {
                entry: entry("Host", "en/datasets/host-1"),
                datasets: all.clone(),
                newest: all.iter().rev().copied().collect(),
                all_label: "All".into(),
            }],
            all.iter()
                .map(|i| entry(&format!("d{i}"), &format!("en/d{i}/overview")))
                .collect(),
        )
    }

    #[test]
    fn the_sidebar_names_the_newest_datasets_and_the_current_one_and_no_more() {
        let m = menu(1000);
        let pages = [entry("TCP", "en/d3/tcp")];
        let items = m.items("en/d3/tcp", Some(3), &pages);
        let host = &items[1];
        assert_eq!(
            host.children.len(),
            MENU_DATASETS + 2,
            "newest, current, more"
        );
        assert_eq!(
            host.children[0].label, "d3",
            "the current dataset, in site order"
        );
        assert_eq!(host.children[0].children.len(), 1);
        assert!(host.children[0].children[0].current);
        assert!(host.open);
        assert_eq!(host.children.last().unwrap().kind, "more");
        assert_eq!(
            host.children.last().unwrap().href,
            "../../en/datasets/host-1.html"
        );
        // Another dataset's page: the same size, whichever it is.
        let other = m.items("en/d500/overview", Some(500), &[]);
        assert_eq!(other[1].children.len(), host.children.len());
    }

    #[test]
    fn a_small_site_lists_every_dataset_without_a_more_link() {
        let m = menu(3);
        let items = m.items("en/index", None, &[]);
        assert_eq!(items[1].children.len(), 3);
        assert!(items[1].children.iter().all(|c| c.kind == "dataset"));
        assert!(!items[1].open);
    }
}
