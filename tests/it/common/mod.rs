//! Synthetic archives for the generator's tests: consistent arknet schema-2 files that a test
//! then breaks in one specific way.
#![allow(dead_code)]

pub mod devtools;
pub mod harness;
pub mod site;
pub mod static_site;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

/// The committed archives (`raw-results/`), read strictly once for every test that asks.
pub fn committed_datasets() -> &'static [echomark::model::Dataset] {
    static DATASETS: std::sync::OnceLock<Vec<echomark::model::Dataset>> =
        std::sync::OnceLock::new();
    DATASETS.get_or_init(|| {
        let raw = Path::new(env!("CARGO_MANIFEST_DIR")).join("raw-results");
        echomark::read::load(&[raw]).expect("the committed archives read")
    })
}

/// Runs the real `echomark` binary.
pub fn echomark(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_echomark"))
        .args(args)
        .output()
        .expect("echomark runs")
}

/// A passing loopback-program run whose numbers satisfy every invariant.
pub fn run(repetition: u64, payload: u64, window: u64, io_model: &str, threads: u64) -> Value {
    let messages: u64 = 50_000 + repetition * 1000 + threads * 10;
    let elapsed = 1.002_5;
    let run = json!({
        "repetition": repetition, "protocol": "udp", "payload_bytes": payload, "clients": 16,
        "window": window, "io_model": io_model, "io_threads": threads, "handler_work": 0,
        "backend": "standalone",
        "command": ["arknet_loopback_benchmark", "--protocol", "udp"],
        "returncode": 0, "stderr": "",
        "metrics": {
            "schema_version": 1, "backend": "standalone", "protocol": "udp",
            "payload_bytes": payload, "clients": 16, "window": window, "io_model": io_model,
            "handler_work": 0, "io_contexts": if io_model == "shared" { 1 } else { threads },
            "io_threads": threads, "server_io_lanes": 17, "requested_seconds": 1,
            "warmup_seconds": 0.25, "elapsed_seconds": elapsed, "messages_sent": messages,
            "messages": messages, "payload_roundtrip_bytes": 2 * payload * messages,
            "roundtrips_per_second": messages as f64 / elapsed,
            "payload_mib_per_second": 2.0 * payload as f64 * messages as f64 / elapsed / 1_048_576.0,
            "rtt_samples": 8192, "rtt_observations": messages, "rtt_sample_limit": 8192,
            "rtt_p50_us": 180.5, "rtt_p95_us": 210.25, "rtt_p99_us": 250.0 + repetition as f64,
            "cpu_seconds": 0.99, "peak_rss_bytes": 10_000_000 + repetition, "ok": true, "error": null
        }
    });
    let counters = json!({
        "client_send_rejections": 0, "client_send_completion_errors": 0,
        "server_send_rejections": 0, "server_send_completion_errors": 0,
        "content_errors": 0, "order_errors": 0, "unexpected_messages": 0,
        "disconnect_errors": 0, "udp_lost_messages": 0, "unfinished_messages": 0,
        "callback_exceptions": 0, "drain_timeouts": 0, "duplicate_completions": 0,
        "pending_completions": 0, "warmup_ok": true, "warmup_errors": 0,
    });
    let mut run = run;
    let metrics = run["metrics"].as_object_mut().expect("object");
    for (k, v) in counters.as_object().expect("object") {
        metrics.insert(k.clone(), v.clone());
    }
    run
}

/// A complete schema-2 archive holding `results`.
pub fn archive(results: Vec<Value>) -> Value {
    let failed = results.iter().filter(|r| r.get("error").is_some()).count();
    json!({
        "schema_version": 2, "backend": "standalone",
        "recorded_at_utc": "2026-10-10T08:04:46+00:00", "git_head": "abc", "git_status": "",
        "source_sha256": "fa69", "executable_sha256": "e1", "runner_sha256": "r1",
        "host": {"system": "Linux", "logical_cpus": 2},
        "settings": {"seconds": 1, "warmup": 0.25, "repetitions": 3, "payloads": [1024],
                     "profiles": [{"clients": 16, "window": 1}], "udp_throughput_window": null,
                     "io_profiles": [{"io_model": "shared", "io_threads": 1, "handler_work": 0}],
                     "protocols": ["udp"], "execution_modes": null},
        "results": results, "complete": true, "failed_measurements": failed
    })
}

/// Three repetitions of shared 1 and of shared 2 at 1024 B, window 1: six passing runs.
pub fn six_runs() -> Vec<Value> {
    let mut out = Vec::new();
    for rep in 1..=3 {
        out.push(run(rep, 1024, 1, "shared", 1));
        out.push(run(rep, 1024, 1, "shared", 2));
    }
    out
}

/// Writes `value` (or raw text) as `name` in a fresh dataset folder under `root`.
pub fn write(root: &Path, dataset: &str, name: &str, text: &str) -> PathBuf {
    let dir = root.join(dataset);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Marks a run failed the way arknet's runner does.
pub fn fail(run: &mut Value, error: &str) {
    run["returncode"] = json!(1);
    run["error"] = json!(error);
    run["metrics"]["ok"] = json!(false);
    run["metrics"]["error"] = json!("benchmark validation failed");
}

/// The committed baseline's single-client 1 KiB TCP, UDP and HTTP runs (15 configurations,
/// 3 repetitions each, with their histograms), as a partial archive.
pub fn baseline_slice() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("raw-results/epyc2-20261201-baseline/archive.json");
    let text = std::fs::read_to_string(path).expect("the committed baseline");
    let mut archive: Value = serde_json::from_str(&text).expect("JSON");
    let results = archive["results"].as_array_mut().expect("results");
    results.retain(|r| {
        ["tcp", "udp", "http"].contains(&r["protocol"].as_str().unwrap())
            && r["payload_bytes"] == 1024
            && r["clients"] == 1
    });
    assert_eq!(results.len(), 45);
    archive["complete"] = Value::Bool(false);
    archive
}

/// Throughput × `factor`, consistently: the elapsed time stretches, so the validator's
/// invariants (rate = messages / elapsed) still hold.
pub fn scale_throughput(run: &mut Value, factor: f64) {
    let m = &mut run["metrics"];
    let elapsed = m["elapsed_seconds"].as_f64().unwrap() / factor;
    let messages = m["messages"].as_f64().unwrap();
    let payload = m["payload_bytes"].as_f64().unwrap();
    m["elapsed_seconds"] = elapsed.into();
    m["roundtrips_per_second"] = (messages / elapsed).into();
    m["payload_mib_per_second"] = (2.0 * payload * messages / elapsed / 1_048_576.0).into();
}
