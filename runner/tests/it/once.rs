//! End-to-end tests of `echomark-runner once` and `calibrate`: the real binary, real
//! loopback sockets, short runs.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use echomark_archive::Metrics;

fn runner(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_echomark-runner"))
        .args(args)
        .output()
        .expect("runner starts")
}

/// Runs `once` with short phases and returns the exit code and the parsed metrics.
fn once(extra: &[&str]) -> (i32, Metrics) {
    let mut args = vec!["once", "--seconds", "0.3", "--warmup", "0.1"];
    args.extend_from_slice(extra);
    let out = runner(&args);
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    assert_eq!(stdout.lines().count(), 1, "exactly one JSON line: {stdout}");
    let metrics: Metrics =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("metrics parse ({e}): {stdout}"));
    (out.status.code().expect("exit code"), metrics)
}

fn assert_accounting(m: &Metrics) {
    assert_eq!(m.payload_roundtrip_bytes, 2 * m.payload_bytes * m.messages);
    assert_eq!(
        m.messages_sent - m.messages_received,
        m.udp_lost_messages + m.unfinished_messages,
        "sent − received = lost + unfinished"
    );
    assert_eq!(m.messages_received, m.messages + m.drain_messages);
    let rate = m.messages as f64 / m.elapsed_seconds;
    assert!((m.roundtrips_per_second - rate).abs() <= 1e-9 * rate.max(1.0));
}

/// Every protocol the runner speaks, in arknet's order.
const PROTOCOLS: [&str; 7] = ["tcp", "udp", "websocket", "tcps", "wss", "http", "https"];

#[test]
fn every_protocol_and_io_model_completes_a_clean_run() {
    for protocol in PROTOCOLS {
        for (model, threads) in [("shared", "1"), ("shared", "2"), ("sharded", "2")] {
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
            let what = format!("{protocol} {model} {threads}");
            assert_eq!(code, 0, "{what}: {:?}", m.error);
            assert!(m.ok, "{what}");
            assert!(m.messages > 0, "{what}");
            assert_eq!(m.error_counters().total(), 0, "{what}");
            assert!(m.warmup_ok && m.warmup_messages > 0, "{what}");
            assert_eq!(
                (m.protocol.as_str(), m.io_model.as_str()),
                (protocol, model)
            );
            assert_eq!(m.backend, "tokio");
            // TLS: negotiated in process with a generated certificate, no files involved.
            let tls = protocol.ends_with('s');
            assert_eq!(m.tls_version.is_some(), tls, "{what}");
            if tls {
                assert_eq!(m.tls_version.as_deref(), Some("TLSv1_3"));
                assert!(m.tls_cipher_suite.as_deref().unwrap().starts_with("TLS13_"));
            }
            assert!(
                m.rtt_p50_us > 0.0 && m.rtt_p50_us <= m.rtt_p99_us && m.rtt_p99_us <= m.rtt_max_us
            );
            assert_eq!(m.rtt_samples, m.rtt_observations);
            assert!(m.cpu_seconds.unwrap() > 0.0 && m.cpu_percent.unwrap() > 0.0);
            assert!(m.peak_rss_bytes.unwrap() > 0);
            // The server saw exactly what the clients got back.
            assert_eq!(
                m.server_messages_received,
                Some(m.messages_received),
                "{what}"
            );
            assert_accounting(&m);
        }
    }
}

#[test]
fn tls_needs_no_certificate_files_and_writes_none() {
    // An empty working directory and an empty HOME: nothing to find, and afterwards
    // nothing may have been written there.
    let cwd = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    for protocol in ["tcps", "wss", "https"] {
        let out = Command::new(env!("CARGO_BIN_EXE_echomark-runner"))
            .args([
                "once",
                "--protocol",
                protocol,
                "--seconds",
                "0.2",
                "--warmup",
                "0",
            ])
            .current_dir(cwd.path())
            .env_clear()
            .env("HOME", home.path())
            .output()
            .expect("runner starts");
        let m: Metrics = serde_json::from_slice(&out.stdout).expect("metrics");
        assert!(m.ok && m.messages > 0, "{protocol}: {:?}", m.error);
        assert_eq!(m.tls_version.as_deref(), Some("TLSv1_3"), "{protocol}");
    }
    for dir in [cwd.path(), home.path()] {
        assert_eq!(
            std::fs::read_dir(dir).unwrap().count(),
            0,
            "{dir:?} was written to"
        );
    }
    // And there is no flag to give one.
    let out = runner(&["once", "--protocol", "tcps", "--certs", "."]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn udp_buffers_are_requested_and_read_back() {
    let (code, m) = once(&[
        "--protocol",
        "udp",
        "--udp-send-buffer",
        "65536",
        "--udp-recv-buffer",
        "262144",
        "--udp-server-recv-buffer",
        "131072",
    ]);
    assert_eq!(code, 0, "{:?}", m.error);
    assert_eq!(m.udp_send_buffer_requested_bytes, Some(65_536));
    assert_eq!(m.udp_receive_buffer_requested_bytes, Some(262_144));
    assert_eq!(m.udp_server_receive_buffer_requested_bytes, Some(131_072));
    let server = m.udp_server_receive_buffer_bytes.unwrap();
    let client = m.udp_client_receive_buffer_max_bytes.unwrap();
    if cfg!(target_os = "linux") {
        // Linux doubles each request (below net.core.rmem_max).
        assert_eq!((server, client), (262_144, 524_288));
        assert!(m.kernel_udp_rcvbuf_errors_delta.is_some());
    } else {
        assert!(server >= 131_072 && client >= 262_144);
    }
}

#[test]
fn injected_corruption_is_caught() {
    for protocol in PROTOCOLS {
        let (code, m) = once(&[
            "--protocol",
            protocol,
            "--window",
            "4",
            "--inject-fault",
            "corrupt",
        ]);
        assert_eq!(code, 1, "{protocol}");
        assert!(!m.ok && m.content_errors > 0, "{protocol}: {m:?}");
        assert!(m.error.as_deref().unwrap().contains("content_errors"));
    }
}

#[test]
fn injected_reordering_is_caught() {
    for protocol in PROTOCOLS {
        let (code, m) = once(&[
            "--protocol",
            protocol,
            "--window",
            "8",
            "--inject-fault",
            "reorder",
        ]);
        assert_eq!(code, 1, "{protocol}");
        assert!(m.order_errors > 0, "{protocol}: {m:?}");
    }
}

#[test]
fn a_silent_tcp_server_is_a_bounded_drain_timeout() {
    let start = Instant::now();
    let (code, m) = once(&[
        "--protocol",
        "tcp",
        "--window",
        "2",
        "--inject-fault",
        "drop",
    ]);
    assert_eq!(code, 1);
    assert_eq!(m.drain_timeouts, 1, "{m:?}");
    assert!(m.unfinished_messages > 0);
    assert_accounting(&m);
    assert!(start.elapsed() < Duration::from_secs(15));
}

#[test]
fn udp_loss_is_counted_bounded_and_matches_the_kernel() {
    let start = Instant::now();
    let (code, m) = once(&[
        "--protocol",
        "udp",
        "--payload",
        "16384",
        "--clients",
        "16",
        "--window",
        "64",
        "--udp-server-recv-buffer",
        "65536",
        "--udp-timeout-ms",
        "100",
    ]);
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "a lossy run never hangs"
    );
    assert_eq!(code, 1);
    assert!(!m.ok && m.udp_lost_messages > 0, "{m:?}");
    assert_accounting(&m);
    match m.kernel_udp_rcvbuf_errors_delta {
        Some(drops) => assert!(
            drops >= m.udp_lost_messages,
            "kernel {drops} < lost {}",
            m.udp_lost_messages
        ),
        None => echomark::skip::because("no /proc/net/snmp on this platform"),
    }
}

#[test]
fn ipv6_loopback_works_when_available() {
    if std::net::UdpSocket::bind("[::1]:0").is_err() {
        echomark::skip::because("::1 is not available here");
        return;
    }
    for protocol in PROTOCOLS {
        let (code, m) = once(&["--protocol", protocol, "--address-family", "ipv6"]);
        assert_eq!(code, 0, "{protocol}: {:?}", m.error);
        assert_eq!(m.address_family.as_str(), "ipv6");
        assert!(m.messages > 0);
    }
}

#[test]
fn latency_recording_can_be_switched_off() {
    let (code, m) = once(&["--no-latency"]);
    assert_eq!(code, 0);
    assert!(!m.latency_recording && m.rtt_samples == 0 && m.rtt_histogram.is_none());
    assert!(m.rtt_observations > 0);
}

#[test]
fn usage_errors_exit_2_with_a_message_and_no_metrics() {
    let cases: &[&[&str]] = &[
        &["once", "--payload", "15"],
        &["once", "--payload", "70000"],
        &["once", "--clients", "0"],
        &["once", "--window", "1025"],
        &["once", "--seconds", "NaN"],
        &["once", "--seconds", "0"],
        &["once", "--warmup", "-1"],
        &["once", "--protocol", "sctp"],
        &["once", "--io-model", "owned"],
        &[
            "once",
            "--clients",
            "1024",
            "--window",
            "1024",
            "--payload",
            "1024",
        ],
        &["once", "--bogus"],
        &["frobnicate"],
    ];
    for args in cases {
        let out = runner(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?} printed metrics");
        assert!(!out.stderr.is_empty(), "{args:?} gave no message");
    }
}

#[test]
fn calibrate_reports_both_floors() {
    let out = runner(&["calibrate", "--seconds", "0.2", "--payload", "64"]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for p in ["tcp", "udp"] {
        assert!(
            v[p]["roundtrips_per_second"].as_f64().unwrap() > 1000.0,
            "{v}"
        );
        assert!(v[p]["rtt_p50_us"].as_f64().unwrap() <= v[p]["rtt_p99_us"].as_f64().unwrap());
    }
    assert_eq!(v["payload_bytes"], 64);
}

/// `--udp-batch`: several datagrams per system call on both sides, the same per-datagram
/// verification: a clean run loses nothing, and corruption, duplication and loss injected by
/// the server are each still caught and counted.
#[test]
fn batched_udp_keeps_every_datagrams_checks() {
    // Batched alone, and segmented and coalesced by the kernel too (--udp-gso): the same
    // datagrams, each checked alone.
    for (clients, window, model, threads, gso) in [
        ("16", "1", "shared", "1", false),
        ("16", "16", "sharded", "2", false),
        ("16", "1", "shared", "1", true),
        ("16", "16", "sharded", "2", true),
    ] {
        let mut shape = vec![
            "--protocol",
            "udp",
            "--clients",
            clients,
            "--window",
            window,
            "--io-model",
            model,
            "--io-threads",
            threads,
            "--udp-batch",
            "16",
        ];
        if gso {
            shape.push("--udp-gso");
        }
        let (code, m) = once(&shape);
        assert_eq!(code, 0, "{m:?}");
        assert!(m.ok && m.messages > 0 && m.udp_lost_messages == 0, "{m:?}");
        assert_eq!(m.udp_batch, Some(16));
        assert_eq!(m.udp_gso, gso);
        assert_accounting(&m);
        for (fault, caught) in [
            ("corrupt", "content_errors"),
            ("reorder", "unexpected_messages"),
            ("drop", "udp_lost_messages"),
        ] {
            let mut args = shape.to_vec();
            args.extend(["--inject-fault", fault]);
            let (code, m) = once(&args);
            assert_eq!(code, 1, "{fault}: {m:?}");
            let counted = match caught {
                "content_errors" => m.content_errors,
                // A held-back echo arrives late, as a duplicate, or (window 1: the client
                // waits for it) after its loss timeout.
                "unexpected_messages" => {
                    m.unexpected_messages
                        + m.order_errors
                        + m.duplicate_completions
                        + m.udp_lost_messages
                        + m.warmup_errors
                }
                _ => m.udp_lost_messages,
            };
            assert!(
                counted > 0,
                "{fault} at {clients} × {window}, GSO {gso}: {m:?}"
            );
            if fault == "drop" {
                // A lost datagram is one sent and never received, whatever the batching.
                assert_accounting(&m);
            }
        }
    }
}

#[test]
fn udp_batch_is_refused_where_it_cannot_run() {
    for (args, says) in [
        (&["--protocol", "tcp", "--udp-batch", "8"][..], "is for udp"),
        (
            &[
                "--protocol",
                "udp",
                "--backend",
                "monoio",
                "--udp-batch",
                "8",
            ][..],
            "not supported by --backend monoio",
        ),
        (
            &["--protocol", "udp", "--udp-batch", "1"][..],
            "must be 2 to 64",
        ),
        (&["--protocol", "udp", "--udp-gso"][..], "--udp-batch"),
        (
            &["--protocol", "tcp", "--udp-batch", "8", "--udp-gso"][..],
            "is for udp",
        ),
    ] {
        let mut all = vec!["once"];
        all.extend_from_slice(args);
        let out = runner(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Runs `once --count-syscalls` in a mount namespace of its own whose tracefs (and debugfs,
/// which reaches tracefs too) is unmounted, as on a newly started machine; `as_user` runs
/// it as that user id instead of root. The host's mounts are not touched.
fn once_without_tracefs(as_user: Option<u32>) -> Option<(i32, Metrics, String)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        echomark::skip::because("a mount namespace needs root");
        return None;
    }
    let script = r#"
        for m in /sys/kernel/debug /sys/kernel/tracing; do
          while umount "$m" 2>/dev/null; do :; done
        done
        if [ -e /sys/kernel/tracing/events/raw_syscalls ]; then echo "tracefs still mounted" >&2; exit 97; fi
        exec "$@"
    "#;
    let mut command = Command::new("unshare");
    command.args([
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        script,
        "sh",
    ]);
    if let Some(uid) = as_user {
        let id = uid.to_string();
        command.args(["setpriv", "--reuid", &id, "--regid", &id, "--clear-groups"]);
    }
    let out = command
        .arg(env!("CARGO_BIN_EXE_echomark-runner"))
        .args(["once", "--protocol", "tcp", "--count-syscalls"])
        .args(["--seconds", "0.2", "--warmup", "0"])
        .output()
        .expect("unshare starts");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_ne!(out.status.code(), Some(97), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let metrics = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("metrics ({e}): {stdout}\n{stderr}"));
    Some((out.status.code().expect("exit code"), metrics, stderr))
}

#[test]
fn count_syscalls_mounts_tracefs_where_it_is_missing() {
    let Some((code, m, stderr)) = once_without_tracefs(None) else {
        return;
    };
    assert_eq!(code, 0, "{:?} {stderr}", m.error);
    assert!(m.syscalls.is_some_and(|n| n > 0), "{m:?}");
    assert!(
        stderr.contains("mounted tracefs"),
        "says what it did: {stderr}"
    );
}

#[test]
fn count_syscalls_that_may_not_mount_tracefs_names_the_command_that_fixes_it() {
    let Some((code, m, _)) = once_without_tracefs(Some(65534)) else {
        return;
    };
    assert_eq!(code, 1);
    let error = m.error.unwrap_or_default();
    assert!(
        error.contains("sudo mount -t tracefs nodev /sys/kernel/tracing"),
        "{error}"
    );
}

#[test]
fn counted_system_calls_show_what_each_backend_asks_of_the_kernel_per_echo() {
    let per_echo = |extra: &[&str]| {
        let mut args = vec!["--protocol", "tcp", "--count-syscalls"];
        args.extend_from_slice(extra);
        let (code, m) = once(&args);
        assert_eq!(code, 0, "{extra:?}: {:?}", m.error);
        assert!(m.messages > 0, "{extra:?}");
        m.syscalls.expect("counted") as f64 / m.messages as f64
    };
    // Counting needs root or CAP_PERFMON, which CI has.
    let (code, m) = once(&["--protocol", "tcp", "--count-syscalls"]);
    if code != 0 {
        let error = m.error.unwrap_or_default();
        assert!(error.contains("cannot count system calls"), "{error}");
        return echomark::skip::because(&error);
    }
    // One message in flight, client and server in this process on tokio: every echo costs
    // at least the client's send and receive and the server's.
    let tokio_1x1 = per_echo(&[]);
    assert!((4.0..20.0).contains(&tokio_1x1), "{tokio_1x1}");
    // 16 clients × 16 in flight: a wakeup reads and writes many messages at once.
    let tokio_16x16 = per_echo(&["--clients", "16", "--window", "16"]);
    assert!(tokio_16x16 < 1.0, "{tokio_16x16}");
    // io_uring submits the reads and writes of a turn in one io_uring_enter.
    let monoio_1x1 = per_echo(&["--backend", "monoio"]);
    assert!((1.0..4.0).contains(&monoio_1x1), "{monoio_1x1}");
    // Not asked for: not counted.
    let (_, plain) = once(&["--protocol", "tcp"]);
    assert_eq!(plain.syscalls, None);
}
