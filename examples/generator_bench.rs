//! How the generator scales: synthetic archives of 10³, 10⁴ and 10⁵ runs, timed through
//! `echomark summary` (read, validate, aggregate, rank, write), with the child's peak RSS.
//!
//! Run with `scripts/bench-generator` (it builds the release binary first).

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use serde_json::{json, Value};

/// One passing arknet-style run; `i` makes its configuration unique.
fn run(i: u64, repetitions: u64) -> Value {
    let rep = i % repetitions + 1;
    let config = i / repetitions;
    let messages = 80_000 + (i % 997);
    let elapsed = 1.001;
    let payload = 1024;
    let mut metrics = json!({
        "schema_version": 1, "backend": "standalone", "protocol": "udp", "payload_bytes": payload,
        "clients": 16, "window": 1, "io_model": "shared", "handler_work": config, "io_contexts": 1,
        "io_threads": 1, "server_io_lanes": 17, "requested_seconds": 1, "warmup_seconds": 0.25,
        "elapsed_seconds": elapsed, "messages_sent": messages, "messages": messages,
        "payload_roundtrip_bytes": 2 * payload * messages,
        "roundtrips_per_second": messages as f64 / elapsed,
        "payload_mib_per_second": 2.0 * payload as f64 * messages as f64 / elapsed / 1_048_576.0,
        "rtt_samples": 8192, "rtt_observations": messages, "rtt_sample_limit": 8192,
        "rtt_p50_us": 180.5, "rtt_p95_us": 210.25, "rtt_p99_us": 250.0,
    });
    let extra = json!({
        "client_send_rejections": 0, "client_send_completion_errors": 0, "server_send_rejections": 0,
        "server_send_completion_errors": 0, "content_errors": 0, "order_errors": 0,
        "unexpected_messages": 0, "disconnect_errors": 0, "udp_lost_messages": 0,
        "unfinished_messages": 0, "callback_exceptions": 0, "drain_timeouts": 0,
        "duplicate_completions": 0, "pending_completions": 0, "warmup_ok": true, "warmup_errors": 0,
        "udp_send_buffer_requested_bytes": 65536, "udp_receive_buffer_requested_bytes": 4194304,
        "udp_server_send_buffer_bytes": 65536, "udp_server_receive_buffer_bytes": 4194304,
        "cpu_seconds": 0.995, "peak_rss_bytes": 10_649_600, "ok": true, "error": null,
    });
    for (k, v) in extra.as_object().unwrap() {
        metrics[k] = v.clone();
    }
    json!({
        "repetition": rep, "protocol": "udp", "payload_bytes": payload, "clients": 16, "window": 1,
        "io_model": "shared", "io_threads": 1, "handler_work": config, "backend": "standalone",
        "command": ["/opt/arknet/benchmarks/arknet_loopback_benchmark", "--protocol", "udp",
                    "--payload", "1024", "--clients", "16", "--window", "1", "--seconds", "1",
                    "--warmup", "0.25", "--io-model", "shared", "--io-threads", "1",
                    "--work", config.to_string()],
        "returncode": 0, "stderr": "", "metrics": metrics
    })
}

fn write_dataset(dir: &Path, runs: u64, files: u64) -> u64 {
    std::fs::create_dir_all(dir).unwrap();
    let per_file = runs / files;
    let mut bytes = 0;
    for f in 0..files {
        let results: Vec<Value> = (f * per_file..(f + 1) * per_file)
            .map(|i| run(i, 3))
            .collect();
        let archive = json!({
            "schema_version": 2, "backend": "standalone", "recorded_at_utc": "2026-10-10T08:04:46+00:00",
            "git_head": "0", "git_status": "", "source_sha256": "s", "executable_sha256": "e",
            "runner_sha256": "r", "host": {"system": "Linux", "logical_cpus": 2},
            "settings": {"seconds": 1, "warmup": 0.25, "repetitions": 3, "payloads": [1024],
                         "profiles": [{"clients": 16, "window": 1}], "udp_throughput_window": null,
                         "io_profiles": [], "protocols": ["udp"], "execution_modes": null},
            "results": results, "complete": true, "failed_measurements": 0
        });
        let text = serde_json::to_vec_pretty(&archive).unwrap();
        bytes += text.len() as u64;
        std::fs::write(dir.join(format!("part-{f:03}.json")), text).unwrap();
    }
    bytes
}

/// Runs `cmd` and returns its wall time and its own peak RSS (from wait4, so neither this
/// process nor earlier children are counted).
fn measure(cmd: &mut Command) -> (f64, u64) {
    let start = Instant::now();
    // Reaped by wait4 below, which also reports the child's own rusage.
    #[allow(clippy::zombie_processes)]
    let child = cmd.stdout(std::process::Stdio::null()).spawn().unwrap();
    // SAFETY: wait4 on our own child's pid, writing into zeroed out-parameters.
    let (status, usage) = unsafe {
        let mut status = 0;
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::wait4(child.id() as i32, &mut status, 0, &mut usage);
        (status, usage)
    };
    let secs = start.elapsed().as_secs_f64();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "echomark summary failed"
    );
    (secs, usage.ru_maxrss as u64 * 1024)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // The datasets are written by a child so that this process stays small: a spawned child
    // starts out with its parent's peak-RSS figure.
    if args.len() == 5 && args[1] == "generate" {
        let (runs, files) = (args[3].parse().unwrap(), args[4].parse().unwrap());
        println!("{}", write_dataset(Path::new(&args[2]), runs, files));
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("echomark");
    let tmp = tempfile::tempdir().unwrap();
    println!("| runs | JSON MB | seconds | µs per run | peak RSS MiB |");
    println!("| ---: | ---: | ---: | ---: | ---: |");
    let mut per_run = Vec::new();
    for (runs, files) in [(1_000u64, 1u64), (10_000, 4), (100_000, 10)] {
        let dir = tmp.path().join(format!("runs-{runs}")).join("synthetic");
        let generated = Command::new(&exe)
            .args([
                "generate",
                dir.to_str().unwrap(),
                &runs.to_string(),
                &files.to_string(),
            ])
            .output()
            .unwrap();
        let bytes: u64 = String::from_utf8_lossy(&generated.stdout)
            .trim()
            .parse()
            .unwrap();
        let _ = Command::new("sync").status();
        let out = tmp.path().join(format!("out-{runs}"));
        let (secs, rss) = measure(Command::new(&bin).args([
            "summary",
            dir.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]));
        per_run.push(secs / runs as f64);
        println!(
            "| {runs} | {:.1} | {secs:.3} | {:.2} | {:.1} |",
            bytes as f64 / 1e6,
            secs / runs as f64 * 1e6,
            rss as f64 / 1_048_576.0
        );
    }
    println!(
        "\ntime per run, 10⁵ vs 10⁴: {:.2}× (1.00× = linear; 10³ is dominated by start-up)",
        per_run[2] / per_run[1]
    );
    many_datasets(&exe, &bin, tmp.path(), per_run[2]);
}

/// 100 datasets of 10⁴ runs each (10⁶ runs in all), beside the single 10⁵-run dataset
/// measured just before: the history case, where memory must stay bounded.
fn many_datasets(exe: &Path, bin: &Path, tmp: &Path, single_per_run: f64) {
    const DATASETS: u64 = 100;
    const RUNS: u64 = 10_000;
    let root = tmp.join("many");
    let first = root.join("d000");
    let generated = Command::new(exe)
        .args(["generate", first.to_str().unwrap(), &RUNS.to_string(), "1"])
        .output()
        .unwrap();
    let bytes: u64 = String::from_utf8_lossy(&generated.stdout)
        .trim()
        .parse()
        .unwrap();
    // The other datasets are copies: distinct folders, so distinct datasets.
    for d in 1..DATASETS {
        let dir = root.join(format!("d{d:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(first.join("part-000.json"), dir.join("part-000.json")).unwrap();
    }
    let _ = Command::new("sync").status();
    let out = tmp.join("out-many");
    let (secs, rss) = measure(Command::new(bin).args([
        "summary",
        root.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    let runs = DATASETS * RUNS;
    println!("\n| datasets × runs | JSON MB | seconds | µs per run | peak RSS MiB |");
    println!("| ---: | ---: | ---: | ---: | ---: |");
    println!(
        "| {DATASETS} × {RUNS} | {:.1} | {secs:.3} | {:.2} | {:.1} |",
        (bytes * DATASETS) as f64 / 1e6,
        secs / runs as f64 * 1e6,
        rss as f64 / 1_048_576.0
    );
    println!(
        "\ntime per run, 100 datasets × 10⁴ vs one dataset of 10⁵ (same run): {:.2}×",
        secs / runs as f64 / single_per_run
    );
}
