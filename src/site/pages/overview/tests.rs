//! Unit tests of the module above.
use echomark_archive::{IoModel, Protocol};

use super::*;
use crate::site::pages::fixtures::{dataset, english, runs, Analysed};

/// The cells of a table's rows, as plain Markdown.
fn cells(table: &Table) -> Vec<Vec<&str>> {
    table
        .rows
        .iter()
        .map(|r| r.iter().map(Markup::as_str).collect())
        .collect()
}

#[test]
fn a_choice_decided_faster_is_recommended_by_name() {
    let mut measured = Vec::new();
    for protocol in [Protocol::Tcp, Protocol::Udp] {
        measured.extend(runs(protocol, IoModel::Shared, 1, 100_000.0));
        measured.extend(runs(protocol, IoModel::Sharded, 2, 130_000.0));
    }
    let site = Analysed::of(vec![dataset("two-models", "epyc", measured)]);
    let cat = english();
    let page = model(&cat, &site.views()[0], Vec::new());
    let recommend = page.recommend.expect("two choices: a recommendation");
    let rows = cells(&recommend.table);
    assert_eq!(rows.len(), 1, "one load class: {rows:?}");
    assert_eq!(rows[0][1], "**2 runtimes / 1 thread each**");
    assert_eq!(rows[0][2], "1 runtime / 1 thread", "the runner-up");
    assert!(page.measured.is_none());
    // The key results: one finding per protocol at the main load, naming the winner.
    assert_eq!(page.key_results.len(), 2, "{:?}", page.key_results);
    for k in &page.key_results {
        assert!(k.as_str().contains("2 runtimes / 1 thread each"), "{k:?}");
    }
    assert!(page.one_model.is_none());
    let choosing = page.choosing.expect("several models: the choosing table");
    assert_eq!(choosing.rows.len(), 2, "one row per protocol and load");
    // The recommendation states the rule; the choosing table does not repeat it.
    assert!(page.rule_in_choosing.is_none() && page.rule_in_answer.is_none());
}

#[test]
fn one_choice_is_measured_not_recommended() {
    let mut measured = runs(Protocol::Tcp, IoModel::Shared, 1, 100_000.0);
    measured.extend(runs(Protocol::Udp, IoModel::Shared, 1, 90_000.0));
    let site = Analysed::of(vec![dataset("one-model", "epyc", measured)]);
    let cat = english();
    let page = model(&cat, &site.views()[0], Vec::new());
    assert!(page.recommend.is_none(), "{:?}", page.recommend);
    let measured = page.measured.expect("one choice: what it measured");
    assert_eq!(measured.table.rows.len(), 2, "a row per protocol");
    assert!(page.choosing.is_none(), "nothing to choose");
    assert_eq!(
        page.one_model.as_ref().map(Markup::as_str),
        Some(cat.raw("recommend.key_measured"))
    );
    let links: Vec<&str> = page.protocols.iter().map(|p| p.link.as_str()).collect();
    assert_eq!(links, ["tcp.md", "udp.md"]);
    // The main charts: throughput and p99 of the one backend, each with its file.
    assert_eq!(
        (page.throughput_charts.len(), page.p99_charts.len()),
        (1, 1)
    );
    assert_eq!(page.charts.len(), 2);
    assert_eq!(page.throughput_charts[0].src.as_str(), page.charts[0].rel);
}
