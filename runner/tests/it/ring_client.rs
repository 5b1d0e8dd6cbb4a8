//! `once --backend io-uring`: echomark's client on io_uring directly, in process (each
//! ring carrying its clients and the server they measure) and against `serve` on every
//! backend. Every protocol it supports on one ring and on two, the checks of the other
//! clients (corruption, reordering, loss), open loop, and the rings' own counters as proof
//! that io_uring did the IO. io_uring is required here: a kernel or sandbox that refuses
//! rings fails these tests, it does not skip.
use crate::common::*;
use echomark_archive::Metrics;
use serde_json::Value;

/// The protocols the io_uring client speaks, with the flags both ends get (`--framing raw`:
/// the server is a byte echo and the client frames messages by their size, as against any
/// byte echo server).
const SUPPORTED: [(&str, &[&str]); 5] = [
    ("tcp", &[]),
    ("tcp", &["--framing", "raw"]),
    ("udp", &[]),
    ("http", &[]),
    ("websocket", &[]),
];

const MODELS: [[&str; 4]; 2] = [
    ["--io-model", "shared", "--io-threads", "1"],
    ["--io-model", "sharded", "--io-threads", "2"],
];

/// `once --backend io-uring` with short phases and `extra`: its exit code and metrics.
fn once_ring(extra: &[&str]) -> (i32, Metrics, Value) {
    let mut args = vec![
        "--seconds",
        "0.3",
        "--warmup",
        "0.1",
        "--clients",
        "4",
        "--window",
        "4",
    ];
    args.extend_from_slice(extra);
    once_ring_exactly(&args)
}

/// `once --backend io-uring` with `args` only.
fn once_ring_exactly(args: &[&str]) -> (i32, Metrics, Value) {
    let mut all = vec!["once", "--backend", "io-uring"];
    all.extend_from_slice(args);
    let out = runner(&all);
    // Shown with a failing test's output: what the runner said besides its metrics.
    eprintln!("{all:?}: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    let m: Metrics = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "metrics ({e}): {stdout} {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let raw: Value = serde_json::from_str(&stdout).expect("JSON");
    (out.status.code().expect("exit code"), m, raw)
}

/// A clean run on io_uring: passed with messages, no error counted, and the rings' counters
/// show io_uring carried it: entered, submitted, and every echo received through the ring
/// (in process by a receive issued per read, against another process by multishot
/// receives into provided buffers).
fn assert_clean_on_rings(what: &str, code: i32, m: &Metrics) {
    assert_eq!(code, 0, "{what}: {:?}", m.error);
    assert!(m.ok, "{what}");
    assert!(m.messages > 0, "{what}");
    assert_eq!(m.error_counters().total(), 0, "{what}: {m:?}");
    assert_eq!(m.io_driver.as_deref(), Some("io_uring"), "{what}");
    let ring = m
        .ring
        .as_ref()
        .unwrap_or_else(|| panic!("{what}: ring counters"));
    assert!(ring.enters > 0, "{what}: {ring:?}");
    assert!(ring.submissions > 0, "{what}: {ring:?}");
    assert!(ring.completions > 0, "{what}: {ring:?}");
    if m.placement.as_ref().is_some_and(|p| p.server_in_process) {
        // Paired on one ring: every receive is issued after the other half's sends.
        assert!(ring.receives_armed > 0, "{what}: {ring:?}");
        assert_eq!(ring.multishot_receives, 0, "{what}: {ring:?}");
    } else {
        assert!(ring.multishot_receives > 0, "{what}: {ring:?}");
        assert!(ring.ring_buffers_used > 0, "{what}: {ring:?}");
    }
}

#[test]
fn the_io_uring_client_measures_every_protocol_in_process_on_one_ring_and_on_two() {
    for protocol in ["tcp", "udp", "http", "websocket"] {
        for model in MODELS {
            let mut args = vec!["--protocol", protocol];
            args.extend_from_slice(&model);
            let (code, m, raw) = once_ring(&args);
            let what = format!("in process {protocol} {model:?}");
            assert_clean_on_rings(&what, code, &m);
            // The server half on the same rings counted every message it echoed.
            assert!(
                raw["server_messages_received"].as_u64().unwrap() >= m.messages,
                "{what}: {raw}"
            );
        }
    }
}

#[test]
fn the_io_uring_client_measures_serve_on_every_backend() {
    for backend in ["tokio", "monoio", "io-uring"] {
        for (protocol, framing) in SUPPORTED {
            for model in MODELS {
                let mut flags = vec!["--backend", backend, "--protocol", protocol];
                flags.extend_from_slice(framing);
                let server = Server::echomark(&flags);
                let mut args = vec!["--target", server.address.as_str(), "--protocol", protocol];
                args.extend_from_slice(framing);
                args.extend_from_slice(&model);
                let (code, m, raw) = once_ring(&args);
                let report = server.stop();
                let what = format!("{protocol} {framing:?} on {backend}, client {model:?}");
                assert_clean_on_rings(&what, code, &m);
                assert_eq!(raw["backend"], "io-uring", "{what}");
                let client_framing = if framing.is_empty() { "prefix" } else { "raw" };
                if protocol == "tcp" {
                    assert_eq!(raw["target"]["framing"], client_framing, "{what}");
                }
                assert_eq!(report["content_errors"], 0, "{what}: {report}");
                let received = report["measured_messages_received"].as_u64().unwrap()
                    + report["warmup_messages_received"].as_u64().unwrap();
                let echoed = if framing.is_empty() {
                    received
                } else {
                    report["raw_bytes_echoed"].as_u64().unwrap() / 1024
                };
                assert!(echoed >= m.messages, "{what}: {report}");
            }
        }
    }
}

#[test]
fn the_io_uring_client_catches_injected_corruption_reordering_and_loss() {
    for protocol in ["tcp", "udp", "http", "websocket"] {
        for (fault, counter) in [("corrupt", "content_errors"), ("reorder", "order_errors")] {
            // In process (the fault in the server half on the client's ring) and against
            // another process's server.
            let (code, m, raw) = once_ring(&["--protocol", protocol, "--inject-fault", fault]);
            let what = format!("in process {protocol} {fault}");
            assert_eq!(code, 1, "{what}: {raw}");
            assert!(raw[counter].as_u64().unwrap() > 0, "{what}: {raw}");
            assert!(m.ring.is_some(), "{what}");
            let server = Server::echomark(&["--protocol", protocol, "--inject-fault", fault]);
            let (code, _, raw) = once_ring(&["--target", &server.address, "--protocol", protocol]);
            server.stop();
            let what = format!("against tokio {protocol} {fault}");
            assert_eq!(code, 1, "{what}: {raw}");
            assert!(raw[counter].as_u64().unwrap() > 0, "{what}: {raw}");
        }
    }
    // A datagram the server drops is lost, declared so on the timeout, and accounted for.
    let (code, m, raw) = once_ring(&[
        "--protocol",
        "udp",
        "--inject-fault",
        "drop",
        "--udp-timeout-ms",
        "20",
    ]);
    assert_eq!(code, 1, "{raw}");
    assert!(m.udp_lost_messages > 0, "{raw}");
    assert_eq!(
        m.messages_sent - m.messages_received,
        m.udp_lost_messages,
        "{raw}"
    );
}

#[test]
fn the_io_uring_client_runs_an_open_loop_schedule() {
    for protocol in ["tcp", "udp"] {
        let (code, m, raw) = once_ring_exactly(&[
            "--protocol",
            protocol,
            "--rate",
            "4000",
            "--clients",
            "2",
            "--window",
            "8",
            "--seconds",
            "0.5",
            "--warmup",
            "0",
        ]);
        let what = format!("open loop {protocol}");
        assert_clean_on_rings(&what, code, &m);
        let open = &raw["open_loop"];
        // 4,000 messages/s over 0.5 s, uniform: 2,000 scheduled, each sent or counted
        // unsent; unless the run was saturated, at most 2 % unsent (a sender descheduled
        // for milliseconds at the deadline, on a busy machine, leaves a few).
        let scheduled = open["scheduled_messages"].as_u64().unwrap();
        assert_eq!(scheduled, 2000, "{what}: {open}");
        let unsent = open["unsent_messages"].as_u64().unwrap();
        assert_eq!(m.messages_sent + unsent, scheduled, "{what}: {open}");
        if open["saturated"] == false {
            assert!(unsent <= scheduled / 50, "{what}: {open}");
        }
        assert!(
            open["service_p50_us"].as_f64().unwrap() > 0.0,
            "{what}: {open}"
        );
    }
}

#[test]
fn what_the_io_uring_client_cannot_measure_is_refused() {
    for (args, says) in [
        (
            &["--protocol", "tcps"][..],
            "tcps is not supported by --backend io-uring",
        ),
        (
            &["--protocol", "quic"][..],
            "quic is not supported by --backend io-uring",
        ),
        (
            &["--io-model", "shared", "--io-threads", "2"][..],
            "io-uring runs one ring per thread",
        ),
    ] {
        let mut all = vec!["once", "--backend", "io-uring", "--seconds", "0.2"];
        all.extend_from_slice(args);
        let out = runner(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}
