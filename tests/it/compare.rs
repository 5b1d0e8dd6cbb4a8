//! `echomark compare` end to end: datasets cut from the committed baseline, shifted by known
//! amounts, compared by the real binary.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use echomark_archive::histogram::{decode, encode};
use hdrhistogram::Histogram;
use serde_json::{json, Value};

use crate::common::{baseline_slice as slice, echomark, scale_throughput};

fn write(dir: &Path, name: &str, archive: &Value) -> PathBuf {
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("archive.json"),
        serde_json::to_vec(archive).unwrap(),
    )
    .unwrap();
    folder
}

/// A configuration as the report labels it.
fn label(r: &Value) -> String {
    format!(
        "{} 1,024 B, 1 × 1, {} {}, tokio",
        r["protocol"].as_str().unwrap(),
        r["io_model"].as_str().unwrap(),
        r["io_threads"]
    )
}

/// Each configuration's runs.
fn configurations(archive: &Value) -> Vec<(String, Vec<usize>)> {
    let mut out: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, r) in archive["results"].as_array().unwrap().iter().enumerate() {
        let l = label(r);
        match out.iter_mut().find(|(k, _)| *k == l) {
            Some((_, v)) => v.push(i),
            None => out.push((l, vec![i])),
        }
    }
    out
}

/// (max − min) / median of a metric over a configuration's runs.
fn spread(archive: &Value, runs: &[usize], metric: &str) -> f64 {
    let mut v: Vec<f64> = runs
        .iter()
        .map(|&i| archive["results"][i]["metrics"][metric].as_f64().unwrap())
        .collect();
    v.sort_by(f64::total_cmp);
    (v[v.len() - 1] - v[0]) / v[v.len() / 2]
}

/// Every round trip above the run's 98th percentile × `factor`: p99 and p99.9 move, p50
/// does not. The histogram and the percentiles derived from it stay consistent.
fn stretch_tail(run: &mut Value, factor: f64) {
    let m = &mut run["metrics"];
    let hist = decode(m["rtt_histogram"].as_str().unwrap()).unwrap();
    let cut = hist.value_at_quantile(0.98);
    let mut out = Histogram::<u64>::new_from(&hist);
    for v in hist.iter_recorded() {
        let value = v.value_iterated_to();
        let moved = if value > cut {
            (value as f64 * factor) as u64
        } else {
            value
        };
        out.record_n(moved, v.count_at_value()).unwrap();
    }
    let us = |q: f64| out.value_at_quantile(q) as f64 / 1_000.0;
    m["rtt_p99_us"] = us(0.99).into();
    m["rtt_p999_us"] = us(0.999).into();
    m["rtt_p9999_us"] = us(0.9999).into();
    m["rtt_max_us"] = (out.max() as f64 / 1_000.0).into();
    m["rtt_histogram"] = encode(&out).unwrap().into();
}

struct Shifted {
    new: Value,
    /// (configuration, metric) pairs that were shifted.
    expected: BTreeSet<(String, String)>,
}

/// How much the tail is stretched in [`shifted`]: well above what three repetitions with a
/// spread of up to 12% can leave undecided at the report's family level.
const TAIL_SHIFT: f64 = 1.5;

/// −10% throughput in two steady configurations and +50% on the tail in two others, chosen
/// where the repetitions' own spread is well below the shift.
fn shifted(base: &Value) -> Shifted {
    let mut new = base.clone();
    let mut expected = BTreeSet::new();
    let configs = configurations(base);
    let steady: Vec<_> = configs
        .iter()
        .filter(|(_, runs)| spread(base, runs, "roundtrips_per_second") < 0.04)
        .take(2)
        .collect();
    assert_eq!(steady.len(), 2, "two steady configurations to slow down");
    for (label, runs) in &steady {
        for &i in runs {
            scale_throughput(&mut new["results"][i], 0.9);
        }
        expected.insert((label.clone(), "round trips/s".to_string()));
    }
    let tails: Vec<_> = configs
        .iter()
        .filter(|(l, _)| !steady.iter().any(|(s, _)| s == l))
        .filter(|(_, runs)| {
            spread(base, runs, "rtt_p99_us") < 0.12 && spread(base, runs, "rtt_p999_us") < 0.12
        })
        .take(2)
        .collect();
    assert_eq!(tails.len(), 2, "two configurations with steady tails");
    for (label, runs) in tails {
        for &i in runs {
            stretch_tail(&mut new["results"][i], TAIL_SHIFT);
        }
        expected.insert((label.clone(), "p99".to_string()));
        expected.insert((label.clone(), "p99.9".to_string()));
    }
    Shifted { new, expected }
}

fn compare(args: &[&Path], extra: &[&str]) -> (i32, Value) {
    let mut all: Vec<String> = vec!["compare".into()];
    all.extend(args.iter().map(|p| p.display().to_string()));
    all.extend(extra.iter().map(|s| s.to_string()));
    all.push("--json".into());
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    let out = echomark(&refs);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("JSON on stdout ({e}); stderr: {stderr}"));
    (out.status.code().unwrap(), json)
}

fn findings(report: &Value, verdict: &str) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for c in report["configurations"].as_array().unwrap() {
        for m in c["metrics"].as_array().unwrap() {
            if m["verdict"] == verdict {
                let metric = match m["metric"].as_str().unwrap() {
                    "roundtrips_per_second" => "round trips/s",
                    "rtt_p50_us" => "p50",
                    "rtt_p99_us" => "p99",
                    "rtt_p999_us" => "p99.9",
                    other => panic!("unexpected metric {other}"),
                };
                out.insert((c["label"].as_str().unwrap().to_string(), metric.to_string()));
            }
        }
    }
    out
}

#[test]
fn known_shifts_are_found_exactly_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let base = slice();
    let Shifted { new, expected } = shifted(&base);
    let base_dir = write(dir.path(), "base", &base);
    let new_dir = write(dir.path(), "new", &new);
    let md = dir.path().join("report.md");
    let (code, report) = compare(
        &[&base_dir, &new_dir],
        &[
            "--fail-on",
            "regression",
            "--markdown",
            md.to_str().unwrap(),
        ],
    );
    assert_eq!(findings(&report, "regressed"), expected, "{report:#}");
    assert!(findings(&report, "improved").is_empty());
    assert_eq!(code, 1, "a regression with --fail-on regression exits 1");
    assert_eq!(report["counts"]["regressed"], 4);
    let unchanged = |r: &Value| {
        r["counts"]["equivalent"].as_u64().unwrap() + r["counts"]["undecided"].as_u64().unwrap()
    };
    assert_eq!(unchanged(&report), 11);
    // The tail shift left the median alone.
    let markdown = std::fs::read_to_string(&md).unwrap();
    assert!(markdown.starts_with("## echomark compare\n"));
    let regressions = markdown
        .find("### Regressions")
        .expect("a regressions section");
    let details = markdown.find("<details>").expect("a collapsed table");
    assert!(
        regressions < details,
        "regressions come before the full table"
    );
    for (label, _) in &expected {
        assert!(markdown.contains(label.as_str()), "{label} in the Markdown");
    }
    // Without --fail-on the same finding exits 0.
    let (code, _) = compare(&[&base_dir, &new_dir], &[]);
    assert_eq!(code, 0);
}

#[test]
fn a_dataset_against_itself_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &slice());
    let (code, report) = compare(&[&base, &base], &["--fail-on", "regression"]);
    assert_eq!(code, 0);
    let counts = &report["counts"];
    assert_eq!(
        (&counts["regressed"], &counts["improved"]),
        (&json!(0), &json!(0))
    );
    // A configuration against its own runs is equivalent where they are steady, undecided
    // where they are too noisy for the margin: never a change.
    assert_eq!(
        counts["equivalent"].as_u64().unwrap() + counts["undecided"].as_u64().unwrap(),
        15
    );
    let equivalent = findings(&report, "equivalent");
    assert!(
        equivalent.iter().any(|(_, m)| m == "round trips/s"),
        "steady throughput is equivalent to itself: {equivalent:?}"
    );
    assert!(report["host_differences"].as_array().unwrap().is_empty());
    assert_eq!(report["different_builds"], false);
}

#[test]
fn a_shift_inside_the_noise_band_is_no_change() {
    let dir = tempfile::tempdir().unwrap();
    let base = slice();
    let Shifted { new, .. } = shifted(&base);
    // An A/A pair of the same build that differed by 12% in throughput everywhere and by
    // 80% on the tail: a noisy machine.
    let mut noisy = base.clone();
    for r in noisy["results"].as_array_mut().unwrap() {
        scale_throughput(r, 0.88);
        stretch_tail(r, 1.8);
    }
    let (b, n) = (
        write(dir.path(), "base", &base),
        write(dir.path(), "new", &new),
    );
    let (a1, a2) = (
        write(dir.path(), "a1", &base),
        write(dir.path(), "a2", &noisy),
    );
    let (code, report) = compare(
        &[&b, &n],
        &[
            "--fail-on",
            "regression",
            "--noise",
            a1.to_str().unwrap(),
            a2.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{report:#}");
    assert!(findings(&report, "regressed").is_empty());
    let band = report["noise"]["largest"]["roundtrips_per_second"]
        .as_f64()
        .unwrap();
    assert!((band - 0.12).abs() < 1e-6, "{band}");
    let reasons: Vec<&str> = report["configurations"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["metrics"].as_array().unwrap())
        .filter_map(|m| m["reason"].as_str())
        .collect();
    // The band is the margin: a 10% slowdown inside a 12% band is equivalent, and a tail
    // stretched 50% where the A/A pair stretched it 80% is no larger than the band.
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("equivalent within ±12.0%")),
        "{reasons:#?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("no larger than the A/A noise band of 80.0%")),
        "{reasons:#?}"
    );
}

#[test]
fn failures_missing_configurations_and_other_hosts_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let base = slice();
    let mut new = base.clone();
    let configs = configurations(&base);
    let (broken, broken_runs) = &configs[0];
    let (dropped, dropped_runs) = &configs[1];
    // One failed run: the configuration is not comparable.
    let run = &mut new["results"][broken_runs[0]];
    run["returncode"] = 1.into();
    run["metrics"]["ok"] = false.into();
    run["metrics"]["error"] = "injected failure".into();
    run["error"] = "injected failure".into();
    new["failed_measurements"] = 1.into();
    // One configuration measured only in base.
    let dropped_set: BTreeSet<usize> = dropped_runs.iter().copied().collect();
    let kept: Vec<Value> = new["results"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(i, _)| !dropped_set.contains(i))
        .map(|(_, r)| r.clone())
        .collect();
    new["results"] = Value::Array(kept);
    new["host"]["cpu"] = "Another CPU".into();
    let (b, n) = (
        write(dir.path(), "base", &base),
        write(dir.path(), "new", &new),
    );
    let (code, report) = compare(&[&b, &n], &["--fail-on", "regression"]);
    assert_eq!(code, 0, "{report:#}");
    let not_comparable: Vec<&Value> = report["configurations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["verdict"] == "not-comparable")
        .collect();
    assert_eq!(not_comparable.len(), 1);
    assert_eq!(not_comparable[0]["label"], broken.as_str());
    let reason = not_comparable[0]["reason"].as_str().unwrap();
    assert!(reason.starts_with("new: 2 of 3 runs passed"), "{reason}");
    assert_eq!(report["only_in_base"], serde_json::json!([dropped]));
    let differences = report["host_differences"].as_array().unwrap();
    assert!(differences
        .iter()
        .any(|d| d.as_str().unwrap().starts_with("cpu: ")));
    // The text report says so at the top.
    let out = echomark(&["compare", b.to_str().unwrap(), n.to_str().unwrap()]);
    let text = String::from_utf8(out.stdout).unwrap();
    let warning = text.find("different hosts").expect("a host warning");
    assert!(warning < text.find("regressions:").unwrap());
}

#[test]
fn bad_input_exits_2_naming_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &slice());
    let missing = dir.path().join("missing");
    let out = echomark(&["compare", base.to_str().unwrap(), missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing"));
    // Two datasets on one side.
    write(dir.path(), "other", &slice());
    let out = echomark(&[
        "compare",
        dir.path().to_str().unwrap(),
        base.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds 2 datasets"));
    // A histogram that is not one: named by file and JSON path.
    let mut bad = slice();
    bad["results"][4]["metrics"]["rtt_histogram"] = "!!!".into();
    let bad_dir = write(dir.path(), "bad", &bad);
    let out = echomark(&["compare", base.to_str().unwrap(), bad_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("results[4].metrics.rtt_histogram"),
        "{stderr}"
    );
    let out = echomark(&[
        "compare",
        base.to_str().unwrap(),
        base.to_str().unwrap(),
        "--min-effect",
        "-1",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_markdown_report_never_replaces_an_input_and_says_when_it_replaces_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &slice());
    let archive = base.join("archive.json");
    let before = std::fs::read(&archive).unwrap();
    let run = |markdown: &Path| {
        echomark(&[
            "compare",
            base.to_str().unwrap(),
            base.to_str().unwrap(),
            "--markdown",
            markdown.to_str().unwrap(),
        ])
    };
    // Over an input archive, or anywhere inside an input folder: refused before reading.
    for inside in [archive.clone(), base.join("report.md")] {
        let out = run(&inside);
        assert_eq!(out.status.code(), Some(2), "{}", inside.display());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("would overwrite the input"), "{stderr}");
    }
    assert_eq!(std::fs::read(&archive).unwrap(), before);
    assert!(!base.join("report.md").exists());
    // A folder that does not exist is not created.
    let out = run(&dir.path().join("no/such/report.md"));
    assert_eq!(out.status.code(), Some(2));
    assert!(!dir.path().join("no").exists());
    // A symlink is not followed or replaced.
    let target = dir.path().join("elsewhere.md");
    std::fs::write(&target, "mine").unwrap();
    let link = dir.path().join("link.md");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert_eq!(run(&link).status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine");
    // A new report is written; replacing it says so.
    let report = dir.path().join("report.md");
    assert_eq!(run(&report).status.code(), Some(0));
    assert!(std::fs::read_to_string(&report)
        .unwrap()
        .starts_with("## echomark compare"));
    let again = run(&report);
    assert_eq!(again.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&again.stderr).contains("replacing"));
}

#[test]
fn a_noise_pair_that_shares_no_configuration_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &slice());
    // UDP buffer cases only: not one configuration of the TCP slice.
    let udp = Path::new(env!("CARGO_MANIFEST_DIR")).join("raw-results/epyc2-20261202-udp-buffers");
    let out = echomark(&[
        "compare",
        base.to_str().unwrap(),
        base.to_str().unwrap(),
        "--noise",
        base.to_str().unwrap(),
        udp.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("share no configuration"));
}

/// Two sides that share no configuration compared nothing: a gate that passed them would
/// pass any pull request pointed at the wrong folders. With --fail-on it fails with its own
/// exit code, naming both sides; without, it says so on stderr.
#[test]
fn sides_that_share_no_configuration_fail_the_gate_and_are_warned_of() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base", &slice());
    // UDP buffer cases only: not one configuration of the TCP slice.
    let udp = Path::new(env!("CARGO_MANIFEST_DIR")).join("raw-results/epyc2-20261202-udp-buffers");
    let run = |extra: &[&str]| {
        let mut args = vec!["compare", base.to_str().unwrap(), udp.to_str().unwrap()];
        args.extend(extra);
        let out = echomark(&args);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let expected =
        "base and epyc2-20261202-udp-buffers share no configuration: nothing was compared";
    let (code, stderr) = run(&["--fail-on", "regression"]);
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stderr.contains(expected), "{stderr}");
    let (code, stderr) = run(&["--json"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains(&format!("warning: {expected}")), "{stderr}");
    // Sides that share configurations are not warned of.
    let (code, stderr) = {
        let out = echomark(&[
            "compare",
            base.to_str().unwrap(),
            base.to_str().unwrap(),
            "--fail-on",
            "regression",
        ]);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("share no configuration"), "{stderr}");
}
