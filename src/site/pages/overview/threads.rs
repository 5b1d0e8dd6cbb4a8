//! Where a dataset's client and server threads ran, as the overview's test conditions
//! say it: pinned or not, on which CPUs, sharing any.

use std::collections::BTreeSet;

use echomark_archive::cpus::CpuList;

use crate::analysis::placement::{self, Placement};
use crate::model::Dataset;
use crate::site::i18n::Catalog;
use crate::site::markup::Markup;

/// Where client and server ran: pinned or not, on which CPUs, sharing any.
pub(super) fn placement_line(cat: &Catalog, d: &Dataset) -> Markup {
    let cpus = |list: &CpuList| {
        let key = if list.len() == 1 {
            "overview.placement_cpu"
        } else {
            "overview.placement_cpus"
        };
        cat.fill(key, &[("list", &Markup::text(&list.to_string()))])
    };
    let how = |pinned: bool| {
        cat.text(if pinned {
            "overview.placement_pinned"
        } else {
            "overview.placement_free"
        })
    };
    let mut line = where_threads_ran(cat, d, &cpus, &how);
    let batches: BTreeSet<u64> = d
        .runs
        .iter()
        .filter_map(|r| r.instruments.udp_batch)
        .collect();
    if let Some(largest) = batches.last() {
        line.push(&cat.text("site.sentence_sep"));
        line.push(&cat.fill(
            "overview.udp_batch",
            &[("n", &Markup::trusted(largest.to_string()))],
        ));
        if d.runs.iter().any(|r| r.instruments.udp_gso) {
            line.push(&cat.text("site.sentence_sep"));
            line.push(&cat.text("overview.udp_gso"));
        }
    }
    line
}

/// The placement sentence proper: pinned or not, on which CPUs, sharing any.
fn where_threads_ran(
    cat: &Catalog,
    d: &Dataset,
    cpus: &dyn Fn(&CpuList) -> Markup,
    how: &dyn Fn(bool) -> Markup,
) -> Markup {
    let summary = placement::of(d);
    match &summary {
        Placement::NotRecorded => cat.text("overview.placement_unknown"),
        Placement::Varied { placements } => cat.fill(
            "overview.placement_varied",
            &[("placements", &Markup::trusted(placements.to_string()))],
        ),
        Placement::Same(p) if p.server_own_runtimes => cat.fill(
            "overview.placement_in_process_apart",
            &[
                ("client", &cpus(&p.client)),
                ("client_how", &how(p.client_pinned)),
                (
                    "server",
                    &p.server.as_ref().map_or_else(Markup::default, cpus),
                ),
                ("overlap", &overlap(cat, &summary, cpus)),
            ],
        ),
        Placement::Same(p) if p.server_in_process => cat.fill(
            if p.client_pinned {
                "overview.placement_in_process_pinned"
            } else {
                "overview.placement_in_process_free"
            },
            &[("cpus", &Markup::text(&p.client.to_string()))],
        ),
        Placement::Same(p) => match &p.server {
            Some(server) => cat.fill(
                "overview.placement_apart",
                &[
                    ("client", &cpus(&p.client)),
                    ("client_how", &how(p.client_pinned)),
                    ("server", &cpus(server)),
                    ("server_how", &how(p.server_pinned)),
                    ("overlap", &overlap(cat, &summary, cpus)),
                ],
            ),
            None => cat.fill(
                "overview.placement_apart_unknown",
                &[
                    ("client", &cpus(&p.client)),
                    ("client_how", &how(p.client_pinned)),
                ],
            ),
        },
    }
}

/// Whether client and server, on threads of their own, shared CPUs.
fn overlap(cat: &Catalog, summary: &Placement, cpus: &dyn Fn(&CpuList) -> Markup) -> Markup {
    match summary.shared_cpus() {
        Some(shared) => cat.fill("overview.placement_shared", &[("cpus", &cpus(&shared))]),
        None => cat.text("overview.placement_disjoint"),
    }
}
