//! The hosts page: the same configurations measured on different hosts, each other host set
//! against the base host through the pair of datasets [`crate::analysis::hosts`] chose, per
//! protocol a summary and one table per load, named "higher" or "lower" only where the
//! ranges do not overlap.

use serde::Serialize;

use super::pairs::{self, LoadTable, Sides, Texts};
use super::{DatasetView, PageSpec};
use crate::analysis::backends;
use crate::analysis::hosts::{self, HostPair};
use crate::format;
use crate::model::Dataset;
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::Markup;
use crate::site::table::{Align, Table};

/// The model of the hosts page: every host, then each other host against the base host.
#[derive(Debug, Serialize)]
pub struct HostsPage {
    pub title: Markup,
    pub lead: Markup,
    pub caution: Markup,
    /// The comparison rule behind every host table.
    pub rule: Markup,
    /// One row per host: its machine and its datasets.
    pub hosts: Table,
    /// Each other host against the base host.
    pub comparisons: Vec<HostComparison>,
}

/// One host against the base host.
#[derive(Debug, Serialize)]
pub struct HostComparison {
    /// The two hosts and their CPUs.
    pub heading: Markup,
    /// The pair of datasets compared, and why these.
    pub datasets: Markup,
    /// The two datasets side by side in the explorer.
    pub explore: Markup,
    /// One section per protocol both datasets measured.
    pub protocols: Vec<ProtocolSection>,
}

/// One protocol of a host comparison: the pairs of its configurations.
#[derive(Debug, Serialize)]
pub struct ProtocolSection {
    pub heading: Markup,
    pub summary: Markup,
    pub loads: Vec<LoadTable>,
}

const HOST_TEXTS: Texts = Texts {
    summary: "hosts.summary",
    none: "hosts.none",
    unsupported: "hosts.failed",
    failed: "hosts.failed",
};

/// The page, when the datasets come from at least two hosts that measured a configuration
/// in common.
pub fn page(cat: &Catalog, views: &[DatasetView], host_pairs: &[HostPair]) -> Option<PageSpec> {
    let model = model(cat, views, host_pairs)?;
    Some(PageSpec::new(
        format!("{}/hosts", cat.code),
        "hosts.md",
        cat.text("hosts.title"),
        &model,
        Vec::new(),
    ))
}

/// The model of the hosts page, when the datasets come from at least two hosts that
/// measured a configuration in common.
pub fn model(cat: &Catalog, views: &[DatasetView], host_pairs: &[HostPair]) -> Option<HostsPage> {
    if host_pairs.is_empty() {
        return None;
    }
    let datasets: Vec<&Dataset> = views.iter().map(|v| v.dataset).collect();
    let groups = hosts::hosts(datasets.iter().copied());
    // Each host by the name of its newest dataset's host (the user's, else derived).
    let name_of_group = |g: &Vec<usize>| {
        let newest = g
            .iter()
            .copied()
            .max_by(|&a, &b| {
                let at = |i: usize| datasets[i].recorded_at().unwrap_or("");
                at(a).cmp(at(b)).then(a.cmp(&b))
            })
            .unwrap_or(g[0]);
        Markup::text(&hosts::host_name(datasets[newest]).unwrap_or_default())
    };
    let host_of = |dataset: usize| {
        groups
            .iter()
            .find(|g| g.contains(&dataset))
            .map_or_else(Markup::default, name_of_group)
    };
    let mut table = Table::new(
        cat.list("hosts.columns", &[]),
        &[
            Align::Left,
            Align::Left,
            Align::Left,
            Align::Right,
            Align::Right,
            Align::Left,
            Align::Left,
        ],
    );
    let missing = cat.text("overview.not_recorded");
    for members in &groups {
        let first = datasets[members[0]];
        let h = first.host().cloned().unwrap_or_default();
        let names: Vec<Markup> = members
            .iter()
            .map(|&i| {
                Markup::trusted(format!(
                    "[{}]({}/overview.md)",
                    Markup::text(&datasets[i].name),
                    views[i].slug()
                ))
            })
            .collect();
        table.push(vec![
            name_of_group(members),
            h.cpu.as_deref().map_or(missing.clone(), Markup::text),
            h.cpu_signature
                .as_deref()
                .map_or(missing.clone(), Markup::text),
            h.logical_cpus
                .map_or(missing.clone(), |n| Markup::trusted(n.to_string())),
            h.memory_bytes
                .map_or(missing.clone(), |b| Markup::trusted(format::gib(b))),
            h.release.as_deref().map_or(missing.clone(), Markup::text),
            Markup::join(&names, &cat.text("list.sep")),
        ]);
    }
    let comparisons = host_pairs
        .iter()
        .map(|pair| {
            let rules = views.first().map(|v| v.rules).unwrap_or_default();
            let sides = Sides {
                subject: host_of(pair.subject),
                base: host_of(pair.base),
                margin: labels::margin(rules.throughput),
                rules,
            };
            comparison(cat, views, sides, pair)
        })
        .collect();
    Some(HostsPage {
        title: cat.text("hosts.title"),
        lead: cat.text("hosts.lead"),
        caution: cat.text("hosts.caution"),
        rule: labels::rule(cat, &views.first().map(|v| v.rules).unwrap_or_default(), ""),
        hosts: table,
        comparisons,
    })
}

fn comparison(
    cat: &Catalog,
    views: &[DatasetView],
    sides: Sides,
    pair: &HostPair,
) -> HostComparison {
    let (base, subject) = (&views[pair.base], &views[pair.subject]);
    let cpu = |v: &DatasetView| {
        let cpu = v.dataset.host().and_then(|h| h.cpu.as_deref());
        Markup::text(cpu.unwrap_or("?"))
    };
    let link = |v: &DatasetView| {
        let recorded = v.dataset.recorded_at().unwrap_or("");
        cat.fill(
            "hosts.dataset",
            &[
                (
                    "name",
                    &labels::dataset_link(&v.dataset.name, &v.slug(), ""),
                ),
                (
                    "recorded",
                    &Markup::text(recorded.get(..10).unwrap_or(recorded)),
                ),
            ],
        )
    };
    let protocols = base
        .protocols()
        .into_iter()
        .filter_map(|protocol| {
            let rows = backends::rows_between(
                &subject.configs_of_protocol(protocol),
                &base.configs_of_protocol(protocol),
                &sides.rules,
            );
            if rows.is_empty() {
                return None;
            }
            let section = pairs::section(cat, &rows, &sides, &HOST_TEXTS);
            Some(ProtocolSection {
                heading: labels::protocol(cat, protocol),
                summary: section.summary,
                loads: section.loads,
            })
        })
        .collect();
    HostComparison {
        explore: labels::explore_link(
            cat,
            "explore.these_two",
            "",
            &[("da", &base.dataset.name), ("db", &subject.dataset.name)],
        ),
        heading: cat.fill(
            "hosts.heading",
            &[
                ("subject", &sides.subject),
                ("base", &sides.base),
                ("subject_cpu", &cpu(subject)),
                ("base_cpu", &cpu(base)),
            ],
        ),
        datasets: cat.fill(
            "hosts.datasets",
            &[
                ("subject", &link(subject)),
                ("base", &link(base)),
                ("common", &labels::count(pair.common as u64)),
                (
                    "why",
                    &cat.text(if pair.sound {
                        "hosts.why_sound"
                    } else {
                        "hosts.why_unsound"
                    }),
                ),
            ],
        ),
        protocols,
    }
}

#[cfg(test)]
mod tests {
    use echomark_archive::{IoModel, Protocol};

    use super::*;
    use crate::site::pages::fixtures::{dataset, english, runs, Analysed};

    #[test]
    fn the_page_pairs_a_host_with_the_base_host() {
        let on = |name: &str, host: &str, rate: f64| {
            dataset(name, host, runs(Protocol::Tcp, IoModel::Shared, 1, rate))
        };
        let site = Analysed::of(vec![
            on("base-run", "epyc", 100_000.0),
            on("other-run", "xeon", 130_000.0),
        ]);
        let cat = english();
        let views = site.views();
        let page = model(&cat, &views, &site.analysis.hosts).expect("two hosts");
        assert_eq!(page.hosts.rows.len(), 2, "a row per host");
        assert_eq!(page.comparisons.len(), 1, "the other host against the base");
        let c = &page.comparisons[0];
        assert!(
            c.heading
                .as_str()
                .starts_with("Host xeon (xeon CPU) against host epyc"),
            "{:?}",
            c.heading
        );
        assert!(
            c.datasets.as_str().contains("other-run"),
            "{:?}",
            c.datasets
        );
        assert!(c.datasets.as_str().contains("base-run"), "{:?}", c.datasets);
        assert_eq!(c.protocols.len(), 1, "TCP");
        let summary = c.protocols[0].summary.as_str();
        assert!(summary.contains("host xeon is faster in 1"), "{summary}");
        assert_eq!(c.protocols[0].loads[0].table.rows.len(), 1);

        // One host: nothing to pair.
        let one = Analysed::of(vec![on("alone", "epyc", 100_000.0)]);
        assert!(model(&cat, &one.views(), &one.analysis.hosts).is_none());
    }
}
