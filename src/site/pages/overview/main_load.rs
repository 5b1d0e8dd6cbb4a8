//! The overview's main load: what it is (payload, clients, windows, where the servers
//! ran), its key results and its throughput and p99 charts for each backend.

use std::collections::{BTreeMap, BTreeSet};

use echomark_archive::{Metric, Protocol};

use super::super::charts as chart_model;
use super::super::key_results::{key_result, KeyContext};
use super::super::{ChartFile, DatasetView, Image};
use crate::analysis::aggregate::Configuration;
use crate::analysis::findings::io_model::IoModelFinding;
use crate::analysis::placement::{self, Placement};
use crate::output::safe_name;
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::Markup;

/// The windows of the main charts: "UDP window 1, other protocols window 16". Protocols with
/// the same windows share one phrase; the largest such group is "other protocols".
fn windows_note(cat: &Catalog, view: &DatasetView, payload: u64, clients: u64) -> Markup {
    let mut by_protocol: BTreeMap<(usize, Protocol), BTreeSet<u64>> = BTreeMap::new();
    for c in view
        .configs
        .iter()
        .filter(|c| c.key.payload_bytes == payload && c.key.clients == clients)
    {
        by_protocol
            .entry((labels::protocol_rank(c.key.protocol), c.key.protocol))
            .or_default()
            .insert(c.key.window);
    }
    let mut groups: Vec<(String, Vec<Markup>)> = Vec::new();
    for ((_, protocol), windows) in &by_protocol {
        let windows = windows
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join("/");
        let label = labels::protocol(cat, *protocol);
        match groups.iter_mut().find(|(w, _)| *w == windows) {
            Some((_, labels)) => labels.push(label),
            None => groups.push((windows, vec![label])),
        }
    }
    let largest = groups
        .iter()
        .enumerate()
        .max_by_key(|(i, (_, labels))| (labels.len(), std::cmp::Reverse(*i)))
        .map(|(i, _)| i);
    let mut phrases = Vec::new();
    let mut others = None;
    for (i, (windows, names)) in groups.iter().enumerate() {
        let windows = Markup::trusted(windows.clone());
        if groups.len() > 1 && Some(i) == largest && names.len() > 1 {
            others = Some(cat.fill("overview.others_window", &[("windows", &windows)]));
        } else {
            let who = labels::join_list(cat, names);
            phrases.push(cat.fill(
                "overview.window_of",
                &[("protocols", &who), ("windows", &windows)],
            ));
        }
    }
    phrases.extend(others);
    Markup::join(&phrases, &cat.text("overview.phrase_sep"))
}

/// Key results and the main charts at the dataset's main load.
#[derive(Default)]
pub(super) struct MainLoad {
    pub(super) text: Markup,
    pub(super) caveat: Markup,
    pub(super) key_results: Vec<Markup>,
    pub(super) throughput: Vec<Image>,
    pub(super) p99: Vec<Image>,
    pub(super) charts: Vec<ChartFile>,
}

/// The overview's main load: what it is, its key results and its throughput and p99 charts
/// for each backend; `None` when the dataset has no main load.
pub(super) fn main_load_section(cat: &Catalog, view: &DatasetView) -> Option<MainLoad> {
    let (payload, clients) = crate::analysis::loads::main_load(&view.configs)?;
    let load = Load {
        payload,
        clients,
        p: labels::count(payload),
        c: labels::clients(cat, clients),
    };
    let (throughput, p99, charts) = main_charts(cat, view, &load);
    Some(MainLoad {
        text: main_load_text(cat, view, &load),
        caveat: cat.fill(
            "overview.key_caveat",
            &[("payload", &load.p), ("clients", &load.c)],
        ),
        key_results: key_results(cat, view, &load),
        throughput,
        p99,
        charts,
    })
}

/// The main load, and its payload and clients as the page writes them.
struct Load {
    payload: u64,
    clients: u64,
    p: Markup,
    c: Markup,
}

/// What the main load is: its payload, clients and windows, and where the servers ran.
fn main_load_text(cat: &Catalog, view: &DatasetView, load: &Load) -> Markup {
    let key = if view.dataset.measures_external_servers() {
        labels::for_path("overview.main_load_external", view.dataset)
    } else if matches!(placement::of(view.dataset), Placement::Same(p) if p.server_own_runtimes) {
        "overview.main_load_apart".to_string()
    } else {
        "overview.main_load".to_string()
    };
    cat.fill(
        &key,
        &[
            ("payload", &load.p),
            ("clients", &load.c),
            (
                "windows",
                &windows_note(cat, view, load.payload, load.clients),
            ),
        ],
    )
}

/// The IO-model findings at the main load, one per program and protocol (at the largest
/// window measured), in backend, protocol, program, work order.
fn main_findings<'a>(view: &DatasetView<'a>, load: &Load) -> Vec<&'a IoModelFinding> {
    let mut main: Vec<&IoModelFinding> = view
        .analysis
        .io_models
        .iter()
        .filter(|f| f.group.payload_bytes == load.payload && f.group.clients == load.clients)
        .collect();
    main.sort_by_key(|f| {
        (
            f.group.backend.clone(),
            labels::protocol_rank(f.group.protocol),
            f.group.implementation.clone(),
            f.group.generators,
            f.group.handler_work,
            f.group.window,
        )
    });
    // A load measured at several windows needs the window in its bullet to be told apart.
    let mut windows_of: BTreeMap<(&str, &str, Protocol, u64), BTreeSet<u64>> = BTreeMap::new();
    for f in &main {
        let g = &f.group;
        windows_of
            .entry((&g.backend, &g.implementation, g.protocol, g.handler_work))
            .or_default()
            .insert(g.window);
    }
    // One bullet per program and protocol, as the seed has: at the largest window measured
    // (the main charts' own); the choosing table has every other.
    main.retain(|f| {
        let g = &f.group;
        windows_of
            .get(&(
                g.backend.as_str(),
                g.implementation.as_str(),
                g.protocol,
                g.handler_work,
            ))
            .and_then(|w| w.last())
            == Some(&g.window)
    });
    main
}

/// The key results at the main load: the IO-model findings, or, where the dataset compares
/// backends or servers on one IO model, each protocol choice against choice.
fn key_results(cat: &Catalog, view: &DatasetView, load: &Load) -> Vec<Markup> {
    let ctx = KeyContext {
        several_windows: false,
    };
    let key_results: Vec<Markup> = main_findings(view, load)
        .iter()
        .map(|f| key_result(cat, f, &ctx))
        .collect();
    if !key_results.is_empty() {
        return key_results;
    }
    let naming = super::super::recommend::Naming::of(view);
    let short = |generators: Option<u64>| {
        cat.fill(
            "recommend.measured_load_short",
            &[
                ("payload", &load.p),
                (
                    "clients",
                    &labels::fleet_clients(cat, generators, load.clients),
                ),
            ],
        )
    };
    let mut choices: Vec<_> = view.analysis.main_load_choices.iter().collect();
    choices.sort_by_key(|s| labels::protocol_rank(s.stratum.protocol));
    choices
        .into_iter()
        .map(|s| super::super::recommend::key_result(cat, &naming, &short, s))
        .collect()
}

/// The throughput and p99 charts at the main load, one of each per backend, and their files.
fn main_charts(
    cat: &Catalog,
    view: &DatasetView,
    load: &Load,
) -> (Vec<Image>, Vec<Image>, Vec<ChartFile>) {
    let (mut throughput, mut p99, mut charts) = (Vec::new(), Vec::new(), Vec::new());
    let backends: BTreeSet<&str> = view
        .configs
        .iter()
        .map(|c| c.key.backend.as_str())
        .collect();
    for backend in backends {
        let selected = crate::analysis::loads::main_load_configs(
            &view.configs,
            backend,
            load.payload,
            load.clients,
        );
        // A fleet's generator counts are loads of their own: a group each.
        let group_of = |c: &Configuration| {
            labels::program_protocol_at(
                cat,
                c.key.protocol,
                &c.key.implementation,
                c.key.generators,
            )
            .to_string()
        };
        let b = safe_name(backend);
        for (metric, title_key, out) in [
            (
                Metric::RoundtripsPerSecond,
                "chart.overview_throughput",
                &mut throughput,
            ),
            (Metric::RttP99Us, "chart.overview_p99", &mut p99),
        ] {
            let mut title = Markup::text(&view.dataset.name);
            title.push(&Markup::trusted(" · "));
            title.push(&labels::backend(cat, backend));
            title.push(&Markup::trusted(" · "));
            title.push(&cat.fill(title_key, &[("payload", &load.p), ("clients", &load.c)]));
            title.push(&Markup::trusted(", "));
            title.push(&windows_note(cat, view, load.payload, load.clients));
            let chart = chart_model::bars(cat, &title, metric, &selected, &group_of);
            let rel = format!("charts/overview-{b}-{}.svg", chart_model::suffix(metric));
            out.push(Image::new(title, &rel));
            charts.push(chart_model::bar_file(rel, &chart));
        }
    }
    (throughput, p99, charts)
}
