//! Unit tests of the module above.
use super::*;
use crate::model::tests::fleet_run;
use crate::site::i18n::catalogs;
use crate::site::pages::fixtures::{dataset, english, runs, Analysed};

/// Three repetitions at 1, 2 and 4 generators, flat at about 97,000 merged round trips/s;
/// generator 1 of one run on a host named with markup.
fn flat() -> Analysed {
    let mut all = Vec::new();
    for generators in [1, 2, 4] {
        for (i, rate) in [97_000.0, 97_100.0, 96_900.0].into_iter().enumerate() {
            all.push(fleet_run(generators, i as u64 + 1, rate));
        }
    }
    if let Some(fleet) = all[3].instruments.fleet.as_mut() {
        fleet.generators[1].host = "gen-1<b>".into();
    }
    Analysed::of(vec![dataset("fleet", "epyc", all)])
}

fn cells(table: &Table) -> Vec<Vec<&str>> {
    table
        .rows
        .iter()
        .map(|r| r.iter().map(Markup::as_str).collect())
        .collect()
}

#[test]
fn the_section_names_the_generators_their_start_clocks_and_shared_cpu() {
    let site = flat();
    let cat = english();
    let f = section(&cat, &site.views()[0]).expect("a fleet dataset");
    assert!(
        f.intro.as_str().starts_with("A fleet of 4 load generators"),
        "{:?}",
        f.intro
    );
    assert!(f.intro.as_str().contains("coordinator on gen-0"));
    assert!(f.intro.as_str().contains("with 1, 2 and 4 of them"));
    let rows = cells(&f.generators);
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[0], ["0", "gen-0", "1", "0"]);
    assert_eq!(
        rows[1][1], "gen-1, gen-1&lt;b&gt;",
        "archive text is escaped"
    );
    // 21 starts: 100 + 10 i + repetition µs, the farthest gen-3's third (133 µs).
    assert_eq!(
        f.skew.as_str(),
        "Start skew (a generator's start minus the release, in the coordinator's clock; 21 \
         starts): median 111 µs, worst 133 µs, each known within ±10.0 µs."
    );
    assert!(
        f.clocks.as_str().contains("offsets at most 3.00 µs (±10.0 µs), drift at most 3.00 ppm (±5.00 ppm); every offset and drift lies within its uncertainty of zero"),
        "{:?}",
        f.clocks
    );
    assert!(
        f.cpus
            .as_str()
            .starts_with("The generators shared one CPU: ")
            && f.cpus.as_str().contains("on CPU 0 of this one machine"),
        "{:?}",
        f.cpus
    );
}

#[test]
fn each_load_gets_its_rates_by_generator_count_a_chart_and_the_rules_word() {
    let site = flat();
    let cat = english();
    let f = section(&cat, &site.views()[0]).expect("a fleet dataset");
    assert_eq!(f.loads.len(), 1);
    let load = &f.loads[0];
    assert!(load.heading.is_none(), "one load needs no heading");
    assert_eq!(
        cells(&load.table),
        [
            [
                "1",
                "97,000 [96,900, 97,100]",
                "97,000 [96,900, 97,100]",
                "12.0"
            ],
            [
                "2",
                "97,000 [96,900, 97,100]",
                "48,500 [48,450, 48,550]",
                "12.0"
            ],
            [
                "4",
                "97,000 [96,900, 97,100]",
                "24,250 [24,225, 24,275]",
                "12.0"
            ],
        ]
    );
    // The sentence is the rule's: flat within ±0.1 % is equivalent within the margin.
    let verdict = load.verdict.as_ref().expect("three counts: a verdict");
    assert!(
        verdict
            .as_str()
            .starts_with("By the comparison rule at 95%")
            && verdict.as_str().ends_with(
                "the merged round trips/s with 4 generators against 1: equivalent within ±5%."
            ),
        "{verdict:?}"
    );
    assert_eq!(f.charts.len(), 1);
    let chart = &f.charts[0];
    assert_eq!(chart.rel, load.chart.src.as_str());
    assert!(chart
        .rel
        .starts_with("charts/fleet-tokio-echomark-tcp-1024-16x1"));
    assert!(chart.phone.is_some(), "a phone's drawing too");
    for text in [
        "Merged",
        "Per generator",
        "Generators",
        "4 generators: median 24,250",
    ] {
        assert!(chart.svg.contains(text), "{text} not in the chart");
    }
}

#[test]
fn chinese_says_it_the_chinese_way() {
    let site = flat();
    let zh = catalogs().swap_remove(1);
    let f = section(&zh, &site.views()[0]).expect("a fleet dataset");
    let text = [&f.intro, &f.skew, &f.clocks, &f.cpus]
        .map(|m| m.as_str().to_string())
        .join("\n");
    assert!(!text.contains('{'), "every placeholder filled: {text}");
    assert!(text.contains("由 4 台负载生成器组成的集群"), "{text}");
    assert!(text.contains("分别用其中 1、2 和 4 台测量"), "{text}");
    assert!(text.contains("各台生成器共用同一个 CPU"), "{text}");
    let verdict = f.loads[0].verdict.as_ref().expect("a verdict").as_str();
    assert!(
        verdict.contains("4 台生成器合并后的每秒往返次数相对 1 台：相当"),
        "{verdict}"
    );
    assert!(f.charts[0].svg.contains("每台生成器"));
}

#[test]
fn the_overview_carries_the_section_and_its_chart_only_for_a_fleet() {
    let site = flat();
    let cat = english();
    let page = crate::site::pages::overview::model(&cat, &site.views()[0], Vec::new());
    assert!(page.fleet.is_some());
    assert!(page
        .charts
        .iter()
        .any(|c| c.rel.starts_with("charts/fleet-")));
    // Three generator counts are three loads, never three rival IO models.
    assert!(page.choosing.is_none() && page.io_model_answer.is_none());
    let plain = Analysed::of(vec![dataset(
        "plain",
        "epyc",
        runs(
            echomark_archive::Protocol::Tcp,
            echomark_archive::IoModel::Shared,
            1,
            1e5,
        ),
    )]);
    let page = crate::site::pages::overview::model(&cat, &plain.views()[0], Vec::new());
    assert!(page.fleet.is_none());
    assert!(!page
        .charts
        .iter()
        .any(|c| c.rel.starts_with("charts/fleet-")));
}

#[test]
fn one_generator_count_is_shown_without_a_verdict() {
    let all = (1..=3).map(|i| fleet_run(2, i, 90_000.0)).collect();
    let site = Analysed::of(vec![dataset("pair", "epyc", all)]);
    let f = section(&english(), &site.views()[0]).expect("a fleet dataset");
    assert_eq!(f.loads[0].table.rows.len(), 1);
    assert!(f.loads[0].verdict.is_none(), "nothing to set against");
}
