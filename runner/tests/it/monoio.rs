//! The second backend end to end: `--backend monoio` (io_uring) through the real binary, on
//! real loopback sockets, with the same checks as tokio; the proof that io_uring ran; the
//! refusal without it; and a two-backend matrix.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use echomark_archive::{Archive, IoModel, Metrics};

fn runner() -> Command {
    Command::new(env!("CARGO_BIN_EXE_echomark-runner"))
}

fn output(args: &[&str]) -> Output {
    runner().args(args).output().expect("runner starts")
}

/// `once --backend monoio` with short phases: exit code and metrics.
fn once(extra: &[&str]) -> (i32, Metrics) {
    let mut args = vec![
        "once",
        "--backend",
        "monoio",
        "--seconds",
        "0.3",
        "--warmup",
        "0.1",
    ];
    args.extend_from_slice(extra);
    let out = output(&args);
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    let metrics: Metrics =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("metrics parse ({e}): {stdout}"));
    (out.status.code().expect("exit code"), metrics)
}

const PROTOCOLS: [&str; 7] = ["tcp", "udp", "websocket", "tcps", "wss", "http", "https"];

fn assert_clean(m: &Metrics, what: &str) {
    assert!(m.ok, "{what}: {:?}", m.error);
    assert!(m.messages > 0, "{what}");
    assert_eq!(m.error_counters().total(), 0, "{what}");
    assert_eq!(m.backend, "monoio", "{what}");
    assert_eq!(m.io_driver.as_deref(), Some("io_uring"), "{what}");
    assert_eq!(
        m.messages_sent - m.messages_received,
        m.udp_lost_messages + m.unfinished_messages,
        "{what}: sent − received = lost + unfinished"
    );
    assert_eq!(m.messages_received, m.messages + m.drain_messages, "{what}");
    assert!(
        m.server_messages_received >= Some(m.messages),
        "{what}: the server saw every echoed message"
    );
    assert!(m.rtt_histogram.is_some() && m.rtt_p99_us > 0.0, "{what}");
    assert!(m.cpu_percent.is_some_and(|c| c > 0.0), "{what}");
}

#[test]
fn every_protocol_runs_clean_on_monoio_shared_and_sharded() {
    for protocol in PROTOCOLS {
        for (model, threads) in [("shared", "1"), ("sharded", "2")] {
            let what = format!("{protocol} {model} {threads}");
            let (code, m) = once(&[
                "--protocol",
                protocol,
                "--io-model",
                model,
                "--io-threads",
                threads,
                "--clients",
                "4",
                "--window",
                "4",
                "--payload",
                "512",
            ]);
            assert_eq!(code, 0, "{what}: {:?}", m.error);
            assert_clean(&m, &what);
            let runtimes = if model == "sharded" { 2 } else { 1 };
            assert_eq!(m.io_contexts, runtimes, "{what}");
            if ["tcps", "wss", "https"].contains(&protocol) {
                assert!(
                    m.tls_version.is_some(),
                    "{what}: TLS negotiated and recorded"
                );
            }
        }
    }
}

#[test]
fn monoio_catches_injected_corruption_and_reordering() {
    for protocol in PROTOCOLS {
        for fault in ["corrupt", "reorder"] {
            let (code, m) = once(&[
                "--protocol",
                protocol,
                "--clients",
                "2",
                "--window",
                "4",
                "--inject-fault",
                fault,
            ]);
            assert_eq!(code, 1, "{protocol} {fault}: the run fails");
            let caught = match fault {
                "corrupt" => m.content_errors,
                _ => m.order_errors,
            };
            assert!(caught > 0, "{protocol} {fault}: counted");
        }
    }
}

#[test]
fn monoio_runs_every_protocol_over_ipv6() {
    for protocol in PROTOCOLS {
        let (code, m) = once(&[
            "--protocol",
            protocol,
            "--address-family",
            "ipv6",
            "--clients",
            "2",
            "--window",
            "2",
        ]);
        assert_eq!(code, 0, "{protocol}: {:?}", m.error);
        assert_clean(&m, protocol);
        assert_eq!(m.address_family, echomark_archive::AddressFamily::Ipv6);
    }
}

/// What the kernel says the process's file descriptors are, read while it runs.
fn fd_kinds_while_running(backend: &str) -> Vec<String> {
    let mut child = runner()
        .args([
            "once",
            "--backend",
            backend,
            "--seconds",
            "1.5",
            "--warmup",
            "0.1",
        ])
        .stdout(Stdio::null())
        .spawn()
        .expect("runner starts");
    let fd_dir = format!("/proc/{}/fd", child.id());
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut kinds = Vec::new();
    // Sample until the measurement's sockets are up (a socket and an anonymous inode seen).
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(300));
        kinds = std::fs::read_dir(&fd_dir)
            .map(|dir| {
                dir.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                    .map(|target| target.display().to_string())
                    .collect()
            })
            .unwrap_or_default();
        if kinds.iter().filter(|k| k.starts_with("socket:")).count() >= 2 {
            break;
        }
    }
    assert!(child.wait().expect("runner ends").success());
    kinds
}

#[test]
fn the_kernel_shows_an_io_uring_instance_for_monoio_and_epoll_for_tokio() {
    let monoio = fd_kinds_while_running("monoio");
    assert!(
        monoio.iter().any(|k| k == "anon_inode:[io_uring]"),
        "monoio's process holds an io_uring instance: {monoio:?}"
    );
    let tokio = fd_kinds_while_running("tokio");
    assert!(
        tokio.iter().any(|k| k == "anon_inode:[eventpoll]"),
        "tokio's process holds an epoll instance: {tokio:?}"
    );
    assert!(
        !tokio.iter().any(|k| k == "anon_inode:[io_uring]"),
        "tokio does not use io_uring: {tokio:?}"
    );
}

#[test]
fn without_io_uring_monoio_refuses_to_measure_instead_of_falling_back_to_epoll() {
    // monoio's own probe answers "no io_uring" when this is set: a kernel without it.
    let out = runner()
        .args(["once", "--backend", "monoio", "--seconds", "0.2"])
        .env("MONOIO_FORCE_LEGACY_DRIVER", "1")
        .output()
        .expect("runner starts");
    assert_eq!(out.status.code(), Some(1));
    let m: Metrics = serde_json::from_slice(&out.stdout).expect("metrics");
    let error = m.error.expect("an error");
    assert!(
        error.contains("needs io_uring") && error.contains("nothing was measured"),
        "{error}"
    );
    assert_eq!(m.messages, 0);
    assert_eq!(m.io_driver, None, "no driver ran");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("needs io_uring"),
        "the reason on stderr too: {stderr}"
    );
}

#[test]
fn models_monoio_cannot_run_and_open_loop_are_usage_errors() {
    let out = output(&["once", "--backend", "monoio", "--io-threads", "2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("thread-per-core"));
    let out = output(&["once", "--backend", "monoio", "--rate", "1000"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("tokio only"));
}

fn load(path: &Path) -> Archive {
    serde_json::from_slice(&std::fs::read(path).expect("archive exists")).expect("archive")
}

#[test]
fn a_two_backend_matrix_writes_one_archive_each_and_drops_what_monoio_cannot_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("both");
    let o = output(&[
        "matrix",
        "--backends",
        "tokio,monoio",
        "--protocols",
        "tcp",
        "--payloads",
        "64",
        "--clients",
        "1",
        "--windows",
        "1",
        "--io-models",
        "shared,sharded",
        "--io-threads",
        "1,2",
        "--repetitions",
        "2",
        "--seconds",
        "0.1",
        "--warmup",
        "0.05",
        "--shuffle",
        "7",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let tokio = load(&out.join("tokio.json"));
    let monoio = load(&out.join("monoio.json"));
    assert_eq!(tokio.backend, "tokio");
    assert_eq!(monoio.backend, "monoio");
    assert!(tokio.complete && monoio.complete);
    // The build names monoio's measured stack, as it does tokio's.
    let stack = &monoio.toolchain.as_ref().expect("toolchain").dependencies;
    for krate in ["monoio", "io-uring", "monoio-rustls", "tokio", "rustls"] {
        assert!(
            stack.get(krate).is_some_and(|v| !v.is_empty()),
            "{krate} in {stack:?}"
        );
    }
    // tokio: shared 1, shared 2, sharded 2 (sharded 1 is shared 1, arknet's rule); monoio:
    // all but shared 2. Two repetitions each.
    assert_eq!(tokio.results.len(), 6);
    assert_eq!(monoio.results.len(), 4);
    assert!(tokio.settings.unsupported_io_profiles.is_empty());
    let dropped = &monoio.settings.unsupported_io_profiles;
    assert_eq!(dropped.len(), 1);
    assert_eq!(
        (dropped[0].io_model, dropped[0].io_threads),
        (IoModel::Shared, 2)
    );
    assert!(dropped[0].reason.contains("thread-per-core"));
    assert!(!monoio
        .results
        .iter()
        .any(|e| e.run.case.io_model == IoModel::Shared && e.run.case.io_threads == 2));
    for e in tokio.results.iter().chain(&monoio.results) {
        assert!(e.error.is_none(), "{:?}", e.error);
        let m = e.metrics.as_ref().expect("metrics");
        assert_eq!(m.backend, e.run.case.backend);
        let expected = if e.run.case.backend == "monoio" {
            "io_uring"
        } else {
            "epoll"
        };
        assert_eq!(m.io_driver.as_deref(), Some(expected));
    }
    // Shuffled together: each backend has runs both before and after the other's first.
    let mut all: Vec<(&str, &str)> = tokio
        .results
        .iter()
        .chain(&monoio.results)
        .map(|e| (e.started_at_utc.as_str(), e.run.case.backend.as_str()))
        .collect();
    all.sort();
    let order: Vec<&str> = all.iter().map(|(_, b)| *b).collect();
    assert!(
        order.windows(2).filter(|w| w[0] != w[1]).count() >= 2,
        "runs interleave: {order:?}"
    );
    // The folder is one dataset the generator reads without problems.
    let datasets = echomark::read::load(std::slice::from_ref(&out)).expect("the dataset loads");
    assert_eq!(datasets.len(), 1);
    assert_eq!(datasets[0].runs.len(), 10);
}

#[test]
fn a_monoio_soak_passes_and_leaves_no_socket_thread_or_ring_behind() {
    for protocol in ["udp", "tcp", "wss"] {
        let out = output(&[
            "soak",
            "--backend",
            "monoio",
            "--protocol",
            protocol,
            "--seconds",
            "2",
        ]);
        let report: echomark_archive::SoakReport =
            serde_json::from_slice(&out.stdout).expect("soak report");
        assert!(report.passed, "{protocol}: {:?}", report.first_failure());
        assert_eq!(out.status.code(), Some(0));
        // shared 1 and sharded 4, twice each; shared 4 does not exist on monoio.
        assert_eq!(report.rounds.len(), 4, "{protocol}");
        for round in &report.rounds {
            assert_eq!((round.fds_left, round.threads_left), (0, 0), "{protocol}");
            assert!(round.verified_echoes > 0);
        }
    }
}
