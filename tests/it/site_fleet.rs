//! The committed fleet dataset (`raw-results/epyc2-20261207-fleet`): its generator counts
//! are configurations of their own everywhere (validate, summary, every load label), and its
//! overview shows The fleet in both languages: the generators, their start and clocks, the
//! merged rate by generator count with its scaling chart, the comparison rule's word under
//! it and that the generators shared one CPU. The figures are recomputed here from the raw
//! archive, not from the pages' own model.

use std::path::{Path, PathBuf};

use echomark::analysis::Analysis;
use echomark::format;
use echomark::site::{i18n, labels};
use echomark_archive::Metric;
use serde_json::Value;

use crate::common::{committed_datasets, echomark};

const DATASET: &str = "epyc2-20261207-fleet";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn committed(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The raw archive's results.
fn results() -> Vec<Value> {
    let archive: Value = serde_json::from_str(&committed(&format!(
        "raw-results/{DATASET}/echomark-serve.json"
    )))
    .expect("the archive is JSON");
    archive["results"].as_array().expect("results").clone()
}

/// The median of an odd number of values.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Each generator count's merged round trips/s, straight from the archive.
fn merged_rates(results: &[Value]) -> Vec<(u64, Vec<f64>)> {
    let mut out: Vec<(u64, Vec<f64>)> = Vec::new();
    for r in results {
        let n = r["generators"].as_u64().expect("a fleet run");
        let rate = r["metrics"]["roundtrips_per_second"].as_f64().unwrap();
        match out.iter_mut().find(|(k, _)| *k == n) {
            Some((_, rates)) => rates.push(rate),
            None => out.push((n, vec![rate])),
        }
    }
    out.sort_by_key(|(n, _)| *n);
    out
}

#[test]
fn each_generator_count_is_a_configuration_of_its_own() {
    let path = root().join("raw-results").join(DATASET);
    let o = echomark(&["validate", path.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("configurations 3 valid of 3"), "{out}");
    let dir = tempfile::tempdir().unwrap();
    let o = echomark(&[
        "summary",
        path.to_str().unwrap(),
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(dir.path().join(DATASET).join("summary.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = header.iter().position(|c| *c == "generators").unwrap();
    let counts: Vec<&str> = lines.map(|l| l.split(',').nth(column).unwrap()).collect();
    assert_eq!(counts, ["1", "2", "4"]);
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join(DATASET).join("summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["configurations"], 3);
    let rankings = summary["rankings"].as_array().unwrap();
    assert_eq!(
        rankings.len(),
        3,
        "one load per generator count, one model each"
    );
    assert!(rankings.iter().all(|r| r["candidates"] == 1));
}

#[test]
fn the_fleet_overview_states_the_generators_start_clocks_and_rates_in_both_languages() {
    let results = results();
    let en = committed(&format!("site/en/{DATASET}/overview.md"));
    let zh = committed(&format!("site/zh/{DATASET}/overview.md"));
    assert!(en.contains("\n## The fleet\n"), "{en}");
    // The server was already running: its CPU is not what the table's CPU column holds.
    assert!(en.contains("CPU per echo is the measuring clients' own CPU time"));
    assert!(!en.contains("the server process's own CPU time"));
    assert!(zh.contains("每次回显 CPU 是测量端客户端自身的 CPU 时间"));
    assert!(zh.contains("\n## 生成器集群\n"), "{zh}");
    // Three loads, not three rival IO models.
    assert!(!en.contains("## Choosing an IO model"));
    let size = results
        .iter()
        .map(|r| r["metrics"]["fleet"]["generator_count"].as_u64().unwrap())
        .max()
        .unwrap();
    assert!(en.contains(&format!("A fleet of {size} load generators")));
    assert!(zh.contains(&format!("由 {size} 台负载生成器组成的集群")));
    let largest = results
        .iter()
        .find(|r| r["metrics"]["fleet"]["generator_count"].as_u64() == Some(size))
        .unwrap();
    for (i, g) in largest["metrics"]["fleet"]["generators"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let cpus = g["logical_cpus"].as_u64().unwrap();
        assert!(
            en.contains(&format!("| {i} | echomark-fleet-{i} | {cpus} | 0 |")),
            "{i}"
        );
    }
    // The start skew farthest from zero, and the largest uncertainty, of every generator.
    let generators: Vec<&Value> = results
        .iter()
        .flat_map(|r| r["metrics"]["fleet"]["generators"].as_array().unwrap())
        .collect();
    let skews: Vec<f64> = generators
        .iter()
        .map(|g| g["start_skew_us"].as_f64().unwrap())
        .collect();
    let worst = skews
        .iter()
        .copied()
        .fold(0.0f64, |a, b| if b.abs() > a.abs() { b } else { a });
    let uncertainty = generators
        .iter()
        .map(|g| g["start_skew_uncertainty_us"].as_f64().unwrap())
        .fold(0.0, f64::max);
    let skew = format!(
        "{} starts): median {} µs, worst {} µs, each known within ±{} µs.",
        skews.len(),
        format::latency(median(skews.clone())),
        format::latency(worst),
        format::latency(uncertainty)
    );
    assert!(en.contains(&skew), "{skew}\n{en}");
    assert!(zh.contains(&format!("最大 {} µs", format::latency(worst))));
    // Merged, per generator and p99 by generator count.
    for (n, rates) in merged_rates(&results) {
        let m = median(rates.clone());
        let (lo, hi) = (
            rates.iter().copied().fold(f64::INFINITY, f64::min),
            rates.iter().copied().fold(0.0, f64::max),
        );
        let row = format!(
            "| {n} | {} | {} |",
            format::with_range(m, lo, hi, 0),
            format::with_range(m / n as f64, lo / n as f64, hi / n as f64, 0)
        );
        assert!(en.contains(&row), "{row}");
        assert!(zh.contains(&row), "{row}");
        let load = format!(
            "{n} {} × 16",
            if n == 1 { "generator" } else { "generators" }
        );
        assert!(
            en.contains(&format!("1,024 B, {load} clients, window 1")),
            "{load}"
        );
        assert!(zh.contains(&format!(
            "1,024 字节、{n} 台生成器 × 16 个客户端、在途上限 1"
        )));
    }
    // What the records say of the CPUs: every generator's client on CPU 0.
    assert!(generators
        .iter()
        .all(|g| g["metrics"]["placement"]["client_cpus"] == "0"));
    assert!(en
        .contains("The generators shared one CPU: each one's own record puts its client on CPU 0"));
    assert!(zh.contains("各台生成器共用同一个 CPU"));
}

#[test]
fn the_scaling_chart_and_the_rules_word_under_it_in_both_languages() {
    let datasets = committed_datasets();
    let index = datasets
        .iter()
        .position(|d| d.name == DATASET)
        .expect("the fleet dataset");
    let a = Analysis::of(datasets).expect("the committed datasets analyse");
    let fleet = a.datasets[index].fleet.as_ref().expect("a fleet dataset");
    assert_eq!(fleet.counts, [1, 2, 4]);
    let scaling = &fleet.scaling[0];
    let d = scaling.decision.expect("three counts: a decision");
    assert_eq!((d.base, d.subject), (1, 4));
    // The engine's own word on the runs, recomputed: 4 generators against 1.
    let of = |n: u64| {
        let rates = merged_rates(&results());
        rates.into_iter().find(|(k, _)| *k == n).unwrap().1
    };
    let rules = a.rules_of(DATASET);
    let recomputed = echomark_decide::compare(&of(1), &of(4), &rules.throughput);
    assert_eq!(recomputed.verdict, d.decision.verdict);
    assert!(
        !matches!(
            d.decision.verdict,
            echomark_decide::Verdict::Higher | echomark_decide::Verdict::Lower
        ),
        "the generators shared one CPU: {:?}",
        d.decision
    );
    for (cat, page) in i18n::catalogs().iter().map(|c| {
        let page = committed(&format!("site/{}/{DATASET}/overview.md", c.code));
        (c.clone(), page)
    }) {
        let said = labels::decision(&cat, &d.decision, Metric::RoundtripsPerSecond);
        let sentence = match cat.code {
            "en" => format!("the merged round trips/s with 4 generators against 1: {said}."),
            _ => format!("4 台生成器合并后的每秒往返次数相对 1 台：{said}。"),
        };
        assert!(page.contains(&sentence), "{}: {sentence}", cat.code);
        // The chart, then the sentence under it.
        let chart = page
            .find("](charts/fleet-")
            .unwrap_or_else(|| panic!("{}: no scaling chart", cat.code));
        assert!(chart < page.find(&sentence).unwrap());
        let rel = page[chart + 2..].split(')').next().unwrap();
        let svg = committed(&format!("site/{}/{DATASET}/{rel}", cat.code));
        let (merged, each) = match cat.code {
            "en" => ("Merged", "Per generator"),
            _ => ("合并", "每台生成器"),
        };
        assert!(svg.contains(merged) && svg.contains(each), "{rel}");
        // The HTML shows the phone's drawing beside the desktop's.
        let html = committed(&format!("site/{}/{DATASET}/overview.html", cat.code));
        let figure = html
            .split("<figure class=\"chart\">")
            .find(|f| {
                f.contains(if cat.code == "en" {
                    "number of generators"
                } else {
                    "随生成器数"
                })
            })
            .expect("the scaling chart's figure");
        let figure = &figure[..figure.find("</figure>").unwrap()];
        assert_eq!(
            figure.matches("<svg").count(),
            2,
            "{}: desktop and phone",
            cat.code
        );
    }
}
