//! `echomark validate` and `summary` on synthetic archives: every failure kind is data with
//! its reason; every kind of bad input is an error that names the file and JSON path.

use crate::common::*;
use serde_json::{json, Value};

fn report(dir: &std::path::Path) -> Value {
    let out = echomark(&["validate", "--json", dir.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn every_failure_kind_is_classified_with_its_reason() {
    type Break = fn(&mut Value);
    let kinds: Vec<(&str, Break)> = vec![
        ("returncode 1", |r| r["returncode"] = json!(1)),
        ("ok is not true", |r| r["metrics"]["ok"] = json!(false)),
        ("error: boom", |r| r["metrics"]["error"] = json!("boom")),
        ("runner error: benchmark timed out after 46 seconds", |r| {
            r["error"] = json!("benchmark timed out after 46 seconds")
        }),
        ("order_errors 2", |r| {
            r["metrics"]["order_errors"] = json!(2)
        }),
        ("warmup_ok is false", |r| {
            r["metrics"]["warmup_ok"] = json!(false);
            r["metrics"]["warmup_errors"] = json!(1);
        }),
        ("L1: payload_roundtrip_bytes", |r| {
            r["metrics"]["payload_roundtrip_bytes"] = json!(7)
        }),
        ("L2: roundtrips_per_second", |r| {
            r["metrics"]["roundtrips_per_second"] = json!(1.5)
        }),
        ("L10: warmup_ok true with warmup_errors 3", |r| {
            r["metrics"]["warmup_errors"] = json!(3)
        }),
        ("L12: sent", |r| {
            r["metrics"]["messages_sent"] = json!(60_000_000)
        }),
        ("E1: metrics.window differs", |r| {
            r["metrics"]["window"] = json!(4)
        }),
        ("no metrics", |r| {
            r.as_object_mut().unwrap().remove("metrics");
            r["returncode"] = json!(124);
        }),
    ];
    for (expected, breaker) in kinds {
        let dir = tempfile::tempdir().unwrap();
        let mut runs = six_runs();
        breaker(&mut runs[2]); // shared 1, repetition 2
        let mut a = archive(runs);
        let failed = a["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r.get("error").is_some())
            .count();
        a["failed_measurements"] = json!(failed);
        write(dir.path(), "ds", "a.json", &a.to_string());
        let r = &report(dir.path())[0];
        assert_eq!(r["runs"], 6, "{expected}");
        assert_eq!(r["runs_passed"], 5, "{expected}");
        assert_eq!(
            (
                r["configurations"].as_u64(),
                r["configurations_valid"].as_u64()
            ),
            (Some(2), Some(1)),
            "{expected}"
        );
        let failed = &r["failed_configurations"][0];
        assert_eq!(
            (
                failed["io_threads"].as_u64(),
                failed["runs_passed"].as_u64()
            ),
            (Some(1), Some(2))
        );
        let reasons = failed["failures"][0]["reasons"].to_string();
        assert!(reasons.contains(expected), "{expected}: {reasons}");
    }
}

#[test]
fn an_archive_of_failed_runs_validates_and_summarises() {
    let dir = tempfile::tempdir().unwrap();
    let mut runs = six_runs();
    for r in &mut runs {
        fail(r, "benchmark failed with exit code 1");
        r["metrics"]["udp_lost_messages"] = json!(0);
    }
    write(dir.path(), "ds", "a.json", &archive(runs).to_string());
    let r = &report(dir.path())[0];
    assert_eq!(
        (
            r["runs_passed"].as_u64(),
            r["configurations_valid"].as_u64()
        ),
        (Some(0), Some(0))
    );
    let out_dir = dir.path().join("out");
    let out = echomark(&[
        "summary",
        dir.path().join("ds").to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("ds/summary.json")).unwrap())
            .unwrap();
    assert!(s["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["status"] == "failed"));
    assert_eq!(
        s["rankings"].as_array().unwrap().len(),
        0,
        "failed configurations are never ranked"
    );
}

/// (what, file text, expected text in the error)
fn malformed_cases() -> Vec<(&'static str, String, &'static str)> {
    let good = archive(six_runs());
    let with = |f: &dyn Fn(&mut Value)| {
        let mut a = good.clone();
        f(&mut a);
        a.to_string()
    };
    let text = good.to_string();
    vec![
        (
            "not JSON",
            "this is not json".to_string(),
            "at line 1 column 2",
        ),
        (
            "NaN",
            text.replacen("180.5", "NaN", 1),
            "results[0].metrics.rtt_p50_us",
        ),
        (
            "Infinity",
            text.replacen("180.5", "Infinity", 1),
            "results[0].metrics.rtt_p50_us",
        ),
        ("truncated", text[..text.len() / 2].to_string(), "truncated"),
        (
            "wrong type",
            with(&|a| a["results"][3]["payload_bytes"] = json!("1024")),
            "results[3].payload_bytes: invalid type",
        ),
        (
            "negative counter",
            with(&|a| a["results"][1]["metrics"]["udp_lost_messages"] = json!(-1)),
            "results[1].metrics.udp_lost_messages",
        ),
        (
            "null counter",
            with(&|a| a["results"][4]["metrics"]["order_errors"] = Value::Null),
            "results[4].metrics.order_errors",
        ),
        (
            "float counter",
            with(&|a| a["results"][4]["metrics"]["drain_timeouts"] = json!(0.5)),
            "results[4].metrics.drain_timeouts",
        ),
        (
            "unknown schema",
            with(&|a| a["schema_version"] = json!(3)),
            "schema_version: unknown schema_version 3",
        ),
        (
            "repetition out of range",
            with(&|a| a["results"][0]["repetition"] = json!(4)),
            "results[0].repetition: 4 is outside 1..=3",
        ),
        (
            "failed_measurements",
            with(&|a| a["failed_measurements"] = json!(2)),
            "failed_measurements: says 2 but 0",
        ),
        (
            "two backends",
            with(&|a| a["results"][5]["metrics"]["backend"] = json!("boost")),
            "one file holds one backend",
        ),
        (
            "duplicate run",
            with(&|a| {
                let dup = a["results"][0].clone();
                a["results"].as_array_mut().unwrap().push(dup);
            }),
            "results[6]: configuration and repetition 1 already in",
        ),
        ("trailing data", format!("{text} {{}}"), "trailing data"),
    ]
}

#[test]
fn malformed_input_names_the_file_and_json_path_and_writes_nothing() {
    for (what, text, expected) in malformed_cases() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "ds", "bad.json", &text);
        let out = echomark(&["validate", path.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
        assert!(stderr.contains("bad.json"), "{what}: {stderr}");
        assert!(
            stderr.contains(expected),
            "{what}: expected {expected:?} in {stderr}"
        );
        let out_dir = dir.path().join("out");
        let out = echomark(&[
            "summary",
            path.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(1), "{what}");
        assert!(
            !out_dir.exists(),
            "{what}: summary wrote output for bad input"
        );
    }
}

#[test]
fn mixed_datasets_are_rejected_and_every_problem_is_listed() {
    let dir = tempfile::tempdir().unwrap();
    let a = archive(six_runs());
    let mut b = archive(vec![run(1, 64, 1, "shared", 1)]);
    b["source_sha256"] = json!("another-build");
    b["host"]["logical_cpus"] = json!(14);
    write(dir.path(), "ds", "a.json", &a.to_string());
    write(dir.path(), "ds", "b.json", &b.to_string());
    write(dir.path(), "ds", "c.json", "{");
    let out = echomark(&["validate", dir.path().join("ds").to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    for needle in [
        "b.json: source_sha256: differs from",
        "b.json: host: differs from",
        "c.json",
        "3 problem(s)",
    ] {
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
}

#[test]
fn folders_hold_datasets_and_summary_writes_json_and_csv() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    write(&input, "first", "a.json", &archive(six_runs()).to_string());
    write(&input, "second", "b.json", &archive(six_runs()).to_string());
    // An output inside the input would become input of the next run: refused, nothing written.
    let inside = input.join("out");
    let refused = echomark(&[
        "summary",
        input.to_str().unwrap(),
        "--out",
        inside.to_str().unwrap(),
    ]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("overlaps the input"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(!inside.exists());
    let out_dir = dir.path().join("out");
    let out = echomark(&[
        "summary",
        input.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for ds in ["first", "second"] {
        let s: Value = serde_json::from_str(
            &std::fs::read_to_string(out_dir.join(ds).join("summary.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(s["dataset"], ds);
        let rows = s["profiles"].as_array().unwrap();
        assert_eq!(rows.len(), 2);
        // Median of three: the middle repetition's value, unrounded.
        let shared1 = rows.iter().find(|r| r["io_threads"] == 1).unwrap();
        assert_eq!(shared1["rtt_p99_us"]["median"], 252.0);
        assert_eq!(shared1["rtt_p99_us"]["min"], 251.0);
        assert_eq!(shared1["runs_passed"], 3);
        let csv = std::fs::read_to_string(out_dir.join(ds).join("summary.csv")).unwrap();
        assert_eq!(csv.lines().count(), 3);
        assert!(csv.starts_with("dataset,backend,implementation,protocol,payload_bytes"));
        // Rankings: shared 2 has more messages in every repetition.
        let ranking = &s["rankings"][0];
        assert_eq!(
            (
                ranking["best"]["io_threads"].as_u64(),
                ranking["baseline"]["io_threads"].as_u64()
            ),
            (Some(2), Some(1))
        );
        assert!(ranking["speedup"].as_f64().unwrap() > 1.0);
    }
    // Same input, byte-identical output.
    let again = dir.path().join("again");
    echomark(&[
        "summary",
        input.to_str().unwrap(),
        "--out",
        again.to_str().unwrap(),
    ]);
    assert_eq!(
        std::fs::read(out_dir.join("first/summary.json")).unwrap(),
        std::fs::read(again.join("first/summary.json")).unwrap()
    );
}

#[test]
fn summary_writes_nothing_when_a_later_dataset_is_bad() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw");
    write(&raw, "a-good", "a.json", &archive(six_runs()).to_string());
    write(&raw, "b-bad", "b.json", "{ not json");
    let out_dir = dir.path().join("out");
    std::fs::create_dir_all(out_dir.join("a-good")).unwrap();
    std::fs::write(out_dir.join("a-good/summary.json"), "old").unwrap();
    let out = echomark(&[
        "summary",
        raw.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("b.json"));
    // The good dataset, summarised first, was staged but never moved into place.
    assert_eq!(
        std::fs::read_to_string(out_dir.join("a-good/summary.json")).unwrap(),
        "old"
    );
    let left: Vec<_> = std::fs::read_dir(&out_dir).unwrap().collect();
    assert_eq!(left.len(), 1, "no staging folder is left behind");
}

/// O1–O3 on the committed open-loop dataset: a run whose open-loop figures contradict its
/// configuration, its own counts or Little's law fails with that invariant named.
#[test]
fn open_loop_invariants_catch_what_they_claim_to() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/raw-results/epyc2-20261201-latency-curve/archive.json"
    );
    let original: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let first_open = original["results"]
        .as_array()
        .unwrap()
        .iter()
        .position(|e| {
            e.get("load").is_some()
                && e["metrics"]["open_loop"]["saturated"] == json!(false)
                && e["metrics"]["ok"] == json!(true)
        })
        .expect("an unsaturated open-loop run");
    type Break = fn(&mut Value);
    let kinds: Vec<(&str, Break)> = vec![
        ("O1: metrics.open_loop is", |e| {
            let rate = &mut e["metrics"]["open_loop"]["offered_rate"];
            *rate = json!(rate.as_u64().unwrap() + 1)
        }),
        ("O1: asked for", |e| {
            e["metrics"].as_object_mut().unwrap().remove("open_loop");
        }),
        ("O2: sent", |e| {
            e["metrics"]["open_loop"]["unsent_messages"] = json!(5)
        }),
        ("O3: Little's law", |e| {
            let m = &mut e["metrics"]["open_loop"]["mean_in_system"];
            *m = json!(m.as_f64().unwrap() * 1.5 + 0.1)
        }),
    ];
    for (expected, breaker) in kinds {
        let dir = tempfile::tempdir().unwrap();
        let mut a = original.clone();
        breaker(&mut a["results"][first_open]);
        let text = a.to_string();
        write(dir.path(), "lc", "archive.json", &text);
        let out = echomark(&["validate", "--json", dir.path().to_str().unwrap()]);
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            all.contains(expected),
            "{expected}: {}",
            &all[..all.len().min(3000)]
        );
    }
}

/// An external server's archive must name it as its backend and hold runs only of protocols
/// it passed verification for; echomark's own archives carry no verification.
#[test]
fn external_server_archives_need_a_passed_verification_for_what_they_measured() {
    let committed = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("raw-results/epyc2-20261202-external/nginx.json");
    let good: Value = serde_json::from_str(&std::fs::read_to_string(committed).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "ok", "nginx.json", &good.to_string());
    let out = echomark(&["validate", path.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut failed = good.clone();
    failed["verification"][0]["passed"] = json!(false);
    let mut missing = good.clone();
    missing["verification"] = json!([]);
    let mut renamed = good.clone();
    renamed["settings"]["external_server"]["name"] = json!("apache");
    let mut own = baseline_slice();
    own["verification"] = good["verification"].clone();
    // Found not to pipeline, yet measured with pipelined requests.
    let mut pipelined = good.clone();
    for c in pipelined["verification"][0]["checks"]
        .as_array_mut()
        .unwrap()
    {
        if c["name"] == "pipelined-window" {
            c["outcome"] = json!("unsupported");
        }
    }
    for (what, archive, expected) in [
        (
            "pipelined",
            pipelined,
            "metrics.target.http_pipelined: is true, but the verification found that \"nginx\" does not answer pipelined http requests",
        ),
        ("failed", failed, "has no passed verification for http"),
        ("missing", missing, "has no passed verification for http"),
        (
            "renamed",
            renamed,
            "but the external server is named \"apache\"",
        ),
        (
            "own",
            own,
            "settings.external_server names no external server",
        ),
    ] {
        let path = write(dir.path(), what, "archive.json", &archive.to_string());
        let out = echomark(&["validate", path.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
        assert!(stderr.contains(expected), "{what}: {stderr}");
        assert!(stderr.contains("archive.json"), "{what}: {stderr}");
    }
}

/// An io-uring server's counters must add up: multishot completions each took a ring
/// buffer, and each buffer came with a completion; the error names the run's JSON path.
#[test]
fn io_uring_ring_counters_that_do_not_add_up_are_refused() {
    let committed = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("raw-results/xeon2-20261204-servers-io-uring/serve-io-uring.json");
    let good: Value = serde_json::from_str(&std::fs::read_to_string(committed).unwrap()).unwrap();
    assert!(good["results"][3]["server"]["ring"]["enters"].as_u64() > Some(0));
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "ok", "serve-io-uring.json", &good.to_string());
    let out = echomark(&["validate", path.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let ring = |a: &mut Value| a["results"][3]["server"]["ring"].take();
    let mut more_multishot = good.clone();
    let mut r = ring(&mut more_multishot);
    r["multishot_receives"] = json!(r["ring_buffers_used"].as_u64().unwrap() + 1);
    more_multishot["results"][3]["server"]["ring"] = r;
    let mut more_buffers = good.clone();
    let mut r = ring(&mut more_buffers);
    r["ring_buffers_used"] = json!(r["completions"].as_u64().unwrap() + 1);
    more_buffers["results"][3]["server"]["ring"] = r;
    for (what, archive, expected) in [
        (
            "multishot",
            more_multishot,
            "results[3].server.ring.multishot_receives: is",
        ),
        (
            "buffers",
            more_buffers,
            "results[3].server.ring.ring_buffers_used: is",
        ),
    ] {
        let path = write(
            dir.path(),
            what,
            "serve-io-uring.json",
            &archive.to_string(),
        );
        let out = echomark(&["validate", path.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
        assert!(stderr.contains(expected), "{what}: {stderr}");
        assert!(stderr.contains("serve-io-uring.json"), "{what}: {stderr}");
    }
}

/// One archive, one path: a matrix whose runs reached the server in different ways (the
/// setup changed under it) is refused, naming the run.
#[test]
fn runs_of_one_archive_that_took_different_paths_are_refused() {
    let committed = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("raw-results/epyc2-20261202-external/socat.json");
    let mut a: Value = serde_json::from_str(&std::fs::read_to_string(committed).unwrap()).unwrap();
    let path = |kind: &str, interface: &str| json!({"kind": kind, "interface": interface, "mtu": 1500, "client_address": "10.213.0.2"});
    a["results"][0]["metrics"]["target"]["path"] = path("veth", "emkc");
    a["results"][1]["metrics"]["target"]["path"] = path("veth", "emkc");
    let dir = tempfile::tempdir().unwrap();
    let same = write(dir.path(), "same", "socat.json", &a.to_string());
    let out = echomark(&["validate", same.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    a["results"][2]["metrics"]["target"]["path"] = path("loopback", "lo");
    let mixed = write(dir.path(), "mixed", "socat.json", &a.to_string());
    let out = echomark(&["validate", mixed.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("results[2].metrics.target.path: is loopback over lo, but an earlier run went veth over emkc"),
        "{stderr}"
    );
}

#[test]
fn a_histogram_that_is_not_its_runs_or_too_large_is_refused_by_validate() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = crate::common::baseline_slice();
    let results = a["results"].as_array_mut().unwrap();
    // Another run's histogram: its count is not this run's.
    let other = results[1]["metrics"]["rtt_histogram"].clone();
    results[0]["metrics"]["rtt_histogram"] = other;
    // A 10-byte histogram whose header declares more than any run could fill.
    results[2]["metrics"]["rtt_histogram"] = "HIST/////w==".into();
    write(dir.path(), "d", "archive.json", &a.to_string());
    let out = echomark(&["validate", dir.path().to_str().unwrap()]);
    assert_ne!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("results[0].metrics.rtt_histogram"),
        "{stderr}"
    );
    assert!(stderr.contains("round trips"), "{stderr}");
    assert!(
        stderr.contains("results[2].metrics.rtt_histogram"),
        "{stderr}"
    );
}

#[test]
fn a_gzip_archive_that_inflates_without_end_is_refused() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("d");
    std::fs::create_dir_all(&folder).unwrap();
    let file = std::fs::File::create(folder.join("archive.json.gz")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
    let zeros = vec![b' '; 1 << 20];
    for _ in 0..(echomark::read::MAX_ARCHIVE_BYTES >> 20) + 8 {
        gz.write_all(&zeros).unwrap();
    }
    gz.finish().unwrap();
    let out = echomark(&["validate", dir.path().to_str().unwrap()]);
    assert_ne!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("inflates past"), "{stderr}");
}

/// A committed archive of `raw-results/`, parsed.
fn committed(rel: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("raw-results")
        .join(rel);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Counters out of their range (the runner's flags' where it has one, what is physically
/// possible otherwise) or inconsistent with what the run asked for are malformed input:
/// refused by validate with the file and the run's JSON path, exit 1, so they never reach
/// `data/` or a summary. Each case breaks one committed archive in one way.
#[test]
fn out_of_range_and_inconsistent_counters_are_refused_at_their_json_path() {
    type Break = fn(&mut Value);
    let tokio = "xeon2-20261205-servers-busy-poll/serve-tokio.json";
    let uring = "xeon2-20261205-servers-busy-poll/serve-io-uring.json";
    let gso = "xeon2-20261205-udp-gso/archive.json";
    let syscalls = "xeon2-20261205-backends-syscalls/tokio.json";
    let quic = "epyc2-20261204-quic-buffers/archive.json";
    let cases: Vec<(&str, &str, Break, &str)> = vec![
        ("negative server CPU", tokio, |a| {
            a["results"][0]["server"]["cpu_seconds"] = json!(-1.0)
        }, "results[0].server.cpu_seconds: -1 "),
        ("RSS of 2^63 bytes", tokio, |a| {
            a["results"][0]["server"]["peak_rss_bytes"] = json!(1u64 << 63)
        }, "results[0].server.peak_rss_bytes: 9223372036854775808 bytes"),
        ("rings on a tokio server", tokio, |a| {
            a["results"][0]["server"]["ring"] = committed(
                "xeon2-20261205-servers-busy-poll/serve-io-uring.json",
            )["results"][0]["server"]["ring"]
                .clone()
        }, "results[0].server.ring: is present, but the server's command runs serve --backend tokio"),
        ("busy looks without --uring-busy-poll", uring, |a| {
            a["results"][0]["server"]["ring"]["busy_polls"] = json!(126_794)
        }, "results[0].server.ring.busy_polls: is 126794, but the server's command does not ask for --uring-busy-poll"),
        ("a billion registered files", uring, |a| {
            a["results"][0]["server"]["ring"]["registered_files"] = json!(1_000_000_000)
        }, "results[0].server.ring.registered_files: is 1000000000, more than the 8 other system calls"),
        ("a server that made no system call", tokio, |a| {
            a["results"][0]["server"]["syscalls"] = json!(0)
        }, "results[0].server.syscalls: is 0"),
        ("a batch of 10^9 datagrams", gso, |a| {
            a["results"][0]["metrics"]["udp_batch"] = json!(1_000_000_000)
        }, "results[0].metrics.udp_batch: is 1000000000, outside --udp-batch's 2 to 64"),
        ("no system call for 312,609 round trips", syscalls, |a| {
            a["results"][0]["metrics"]["syscalls"] = json!(0)
        }, "results[0].metrics.syscalls: is 0, but the run completed 312609 round trips"),
        ("a negative RTT", quic, |a| {
            a["results"][1]["metrics"]["quic"]["smoothed_rtt_us"] = json!(-1.0)
        }, "results[1].metrics.quic.smoothed_rtt_us: -1 is not a real run's figure"),
        ("an RTT of 1e308 µs", quic, |a| {
            a["results"][1]["metrics"]["quic"]["smoothed_rtt_us"] = json!(1e308)
        }, "results[1].metrics.quic.smoothed_rtt_us: 1e308 is not a real run's figure"),
        ("a window of 1e308 bytes", quic, |a| {
            a["results"][1]["metrics"]["quic"]["cwnd_bytes"] = json!(1e308)
        }, "results[1].metrics.quic.cwnd_bytes: 1e308 is not a real run's figure"),
        ("no MTU, datagrams of 10^9 bytes", quic, |a| {
            let q = &mut a["results"][1]["metrics"]["quic"];
            q["current_mtu"] = json!(0);
            q["datagram_size_limit"] = json!(1_000_000_000);
        }, "results[1].metrics.quic.current_mtu: is 0"),
        ("datagrams larger than the path", quic, |a| {
            a["results"][1]["metrics"]["quic"]["datagram_size_limit"] = json!(1_000_000_000)
        }, "results[1].metrics.quic.datagram_size_limit: is 1000000000, not below the path's MTU of 1452"),
        ("no connection", quic, |a| {
            a["results"][1]["metrics"]["quic"]["connections"] = json!(0)
        }, "results[1].metrics.quic.connections: is 0"),
        ("an empty stream window", quic, |a| {
            a["results"][1]["metrics"]["quic"]["transport"]["stream_window"] = json!(0)
        }, "results[1].metrics.quic.transport: QUIC flow-control windows must be at least 1 byte"),
        ("an empty connection window", quic, |a| {
            a["results"][1]["metrics"]["quic"]["transport"]["connection_window"] = json!(0)
        }, "results[1].metrics.quic.transport: QUIC flow-control windows must be at least 1 byte"),
        // The plan of 10^9 repetitions is never listed: said at once, by its path.
        ("a billion repetitions", tokio, |a| {
            a["settings"]["repetitions"] = json!(1_000_000_000u64)
        }, "settings.repetitions: must be 1 to 1000, got 1000000000"),
        ("a payload no datagram carries", gso, |a| {
            a["settings"]["payloads"] = json!([70_000])
        }, "settings.payloads[0]: must be 16 to 65507, got 70000"),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (i, (what, rel, breaker, expected)) in cases.into_iter().enumerate() {
        let mut archive = committed(rel);
        breaker(&mut archive);
        let name = rel.rsplit('/').next().unwrap();
        let path = write(dir.path(), &format!("case-{i}"), name, &archive.to_string());
        let out = echomark(&["validate", path.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
        assert!(
            stderr.contains(&format!("{name}: {expected}")),
            "{what}: expected {expected:?} in {stderr}"
        );
    }
}

/// A fleet run is its generators' sum: a record that does not add up, a generator count
/// other than the run's, a generator that measured another case or a nested fleet is
/// refused, naming the run's JSON path.
#[test]
fn a_fleet_record_that_is_not_its_generators_sum_is_refused() {
    let committed = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("raw-results/epyc2-20261207-fleet/echomark-serve.json");
    let good: Value = serde_json::from_str(&std::fs::read_to_string(committed).unwrap()).unwrap();
    let i = good["results"]
        .as_array()
        .unwrap()
        .iter()
        .position(|e| e["generators"] == json!(2))
        .expect("a run by 2 generators");
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "ok", "echomark-serve.json", &good.to_string());
    let out = echomark(&["validate", path.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let edit = |f: &dyn Fn(&mut Value)| {
        let mut a = good.clone();
        f(&mut a["results"][i]);
        a
    };
    let fleet = format!("results[{i}].metrics.fleet");
    for (what, archive, expected) in [
        (
            "sum",
            edit(&|e| {
                let m = &mut e["metrics"]["fleet"]["generators"][1]["metrics"]["messages"];
                *m = json!(m.as_u64().unwrap() + 1);
            }),
            format!("{fleet}.generators: messages"),
        ),
        (
            "count",
            edit(&|e| e["generators"] = json!(4)),
            format!("{fleet}.generator_count: is 2, with 2 generator records, for a run of 4 generators"),
        ),
        (
            "case",
            edit(&|e| e["metrics"]["fleet"]["generators"][0]["metrics"]["window"] = json!(2)),
            format!("{fleet}.generators[0].metrics: differ from the run's"),
        ),
        (
            "skew",
            edit(&|e| e["metrics"]["fleet"]["start_skew_worst_us"] = json!(0.5)),
            format!("{fleet}.start_skew_worst_us: is 0.5"),
        ),
    ] {
        let path = write(dir.path(), what, "echomark-serve.json", &archive.to_string());
        let out = echomark(&["validate", path.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
        assert!(stderr.contains(&expected), "{what}: {stderr}");
    }
}
