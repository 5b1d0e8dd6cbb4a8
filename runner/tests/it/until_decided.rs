//! `matrix --until-decided` against real servers: two servers that differ (one does added
//! work per echo) are decided after their planned repetitions, an A/A pair is not found to
//! differ and ends equivalent or at its maximum, every added run is an ordinary run of the
//! archive, interleaved between the sides, and each archive says why each comparison
//! stopped.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::common::*;

/// `matrix` of two `serve` servers (`second` adds its flags to the second one) at TCP 1 × 1,
/// 0.2 s runs, measured until decided at `level` and `margin` up to 8 repetitions a side:
/// the two archives, by name.
fn until_decided(
    dir: &std::path::Path,
    second: &str,
    (level, margin): (&str, &str),
) -> BTreeMap<String, Value> {
    until_decided_within(dir, second, (level, margin), "5m")
}

/// [`until_decided`] with `budget` for the added runs.
fn until_decided_within(
    dir: &std::path::Path,
    second: &str,
    (level, margin): (&str, &str),
    budget: &str,
) -> BTreeMap<String, Value> {
    let serve =
        |extra: &str| format!("{RUNNER} serve --protocol tcp --listen 127.0.0.1:{{port}} {extra}");
    let out = dir.join("sides");
    let (a, b) = (serve(""), serve(second));
    let args = [
        "matrix",
        "--protocols",
        "tcp",
        "--payloads",
        "1024",
        "--clients",
        "1",
        "--windows",
        "1",
        "--io-models",
        "shared",
        "--io-threads",
        "1",
        "--repetitions",
        "3",
        "--seconds",
        "0.2",
        "--warmup",
        "0.05",
        "--verify-idle",
        TEST_VERIFY_IDLE,
        "--until-decided",
        "--max-repetitions",
        "8",
        "--level",
        level,
        "--margin",
        margin,
        "--budget",
        budget,
        "--server-name",
        "first",
        "--server-cmd",
        &a,
        "--server-name",
        "second",
        "--server-cmd",
        &b,
        "--out",
        out.to_str().unwrap(),
    ];
    let o = runner(&args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    // The generator reads them strictly: added repetitions are runs the settings plan.
    let files = ["first", "second"].map(|n| out.join(format!("{n}.json")));
    echomark::read::load_one("sides", &files).expect("the archives validate");
    ["first", "second"]
        .into_iter()
        .map(|name| {
            let text = std::fs::read_to_string(out.join(format!("{name}.json"))).unwrap();
            (name.to_string(), serde_json::from_str(&text).unwrap())
        })
        .collect()
}

/// Each run's throughput, in repetition order.
fn rates(archive: &Value) -> Vec<f64> {
    let mut runs: Vec<(u64, f64)> = archive["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["repetition"].as_u64().unwrap(),
                e["metrics"]["roundtrips_per_second"].as_f64().unwrap(),
            )
        })
        .collect();
    runs.sort_by_key(|r| r.0);
    runs.into_iter().map(|r| r.1).collect()
}

#[test]
fn a_server_with_added_work_is_decided_slower_and_the_archive_says_why_it_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let archives = until_decided(dir.path(), "--work 40000", ("95", "5"));
    let (first, second) = (&archives["first"], &archives["second"]);
    for a in [first, second] {
        assert_eq!(a["complete"], true);
        assert_eq!(
            a["settings"]["until_decided"]["looks"],
            serde_json::json!([3, 5, 8])
        );
        let stopped = &a["until_decided"]["comparisons"][0];
        assert_eq!(stopped["stop"], "decided", "{stopped}");
        assert_eq!(stopped["sides"], serde_json::json!(["first", "second"]));
    }
    // The rule, on every run of both archives at the dataset's per-look level: slower.
    let rule = echomark_decide::Rule {
        looks: 3,
        ..echomark_decide::THROUGHPUT
    };
    let d = echomark_decide::compare(&rates(first), &rates(second), &rule);
    assert_eq!(d.verdict, echomark_decide::Verdict::Lower, "{d:?}");
}

#[test]
fn an_a_a_pair_is_never_found_to_differ_and_its_added_runs_alternate() {
    let dir = tempfile::tempdir().unwrap();
    // At 99.9 % a false difference is a one-in-a-thousand event, not a flaky test; a
    // margin of 0.5 % is narrower than three runs can show, so repetitions are added.
    let archives = until_decided(dir.path(), "", ("99.9", "0.5"));
    let (first, second) = (&archives["first"], &archives["second"]);
    let stopped = &first["until_decided"]["comparisons"][0];
    let repetitions = stopped["repetitions"].as_u64().unwrap();
    assert!([5, 8].contains(&repetitions), "{stopped}");
    assert!(
        ["decided", "maximum"].contains(&stopped["stop"].as_str().unwrap()),
        "{stopped}"
    );
    let rule = echomark_decide::Rule {
        level: 0.999,
        margin: 0.005,
        looks: 3,
    };
    let (a, b) = (rates(first), rates(second));
    assert_eq!(
        a.len() as u64,
        repetitions,
        "every added run is in the archive"
    );
    assert_eq!(b.len(), a.len());
    let d = echomark_decide::compare(&a, &b, &rule);
    assert!(!d.verdict.is_difference(), "an A/A pair differs: {d:?}");
    if stopped["stop"] == "decided" {
        assert_eq!(d.verdict, echomark_decide::Verdict::Equivalent, "{d:?}");
    }
    // The added repetitions ran side after side: first, second, first, second, …
    let mut added: Vec<(String, &str)> = [("first", first), ("second", second)]
        .iter()
        .flat_map(|(name, a)| {
            a["results"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["repetition"].as_u64().unwrap() > 3)
                .map(move |e| (e["started_at_utc"].as_str().unwrap().to_string(), *name))
        })
        .collect();
    added.sort();
    assert_eq!(added.len() as u64, 2 * (repetitions - 3));
    for pair in added.chunks(2) {
        assert_eq!(
            pair.iter().map(|p| p.1).collect::<Vec<_>>(),
            ["first", "second"],
            "{added:?}"
        );
    }
}

#[test]
fn a_spent_budget_stops_adding_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    // A margin no three runs can meet, and a budget spent by the first added run.
    let archives = until_decided_within(dir.path(), "", ("99.9", "0.5"), "0.1s");
    for a in archives.values() {
        let record = &a["until_decided"];
        assert_eq!(record["budget_spent"], true, "{record}");
        assert!(record["spent_seconds"].as_f64().unwrap() >= 0.1, "{record}");
        assert_eq!(record["comparisons"][0]["stop"], "budget", "{record}");
        assert_eq!(a["complete"], true);
        // At most the one added run that spent it, and the budget recorded in the settings.
        assert!(rates(a).len() <= 4, "{}", rates(a).len());
        assert_eq!(a["settings"]["until_decided"]["budget_seconds"], 0.1);
    }
}
