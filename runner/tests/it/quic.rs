//! QUIC on quinn, in process on tokio, in its three protocols (`quic`: one long-lived stream
//! per client; `quic-streams`: a stream per message; `quic-datagram`: RFC 9221 datagrams).
//! Every IO model echoes with every check passing; a server that corrupts or reorders is
//! caught, and one that drops a datagram is counted as loss; what QUIC does not do yet
//! (another backend) or lacks trust is a usage error; a matrix writes
//! schema-valid archives the generator reads and sets against TCP+TLS.
use crate::common::*;
use echomark_archive::Metrics;

const PROTOCOLS: [&str; 3] = ["quic", "quic-streams", "quic-datagram"];

fn quic_protocol(protocol: &str, extra: &[&str]) -> (i32, Metrics) {
    quic_protocol_with(protocol, 4, extra)
}

/// [`quic_protocol`] with `clients` connections.
fn quic_protocol_with(protocol: &str, clients: u32, extra: &[&str]) -> (i32, Metrics) {
    // A handshake per message is slow in a debug build, slower still beside other tests:
    // those runs are longer and keep one handshake in flight per client (32 at once took
    // more than a second of a CPU shared with four busy processes), so they always
    // complete some.
    let per_message = ["quic-handshake", "quic-0rtt"].contains(&protocol);
    let (seconds, window) = if per_message {
        ("1", "1")
    } else {
        ("0.4", "8")
    };
    let clients = clients.to_string();
    let mut args = vec![
        "once",
        "--protocol",
        protocol,
        "--clients",
        &clients,
        "--window",
        window,
        "--seconds",
        seconds,
        "--warmup",
        "0.1",
    ];
    args.extend_from_slice(extra);
    let out = runner(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let m: Metrics =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("metrics ({e}): {stdout}"));
    (out.status.code().unwrap(), m)
}

/// A matrix of `protocols` at 1,024 B, 4 clients × window 4, one runtime on one thread, two
/// repetitions of 0.3 s, into `archive`.
fn small_matrix(
    protocols: &str,
    archive: &std::path::Path,
    extra: &[&str],
) -> std::process::Output {
    let mut args = vec![
        "matrix",
        "--protocols",
        protocols,
        "--payloads",
        "1024",
        "--clients",
        "4",
        "--windows",
        "4",
        "--io-models",
        "shared",
        "--io-threads",
        "1",
        "--repetitions",
        "2",
        "--seconds",
        "0.3",
        "--warmup",
        "0.1",
        "--out",
        archive.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    runner(&args)
}

#[test]
fn every_quic_protocol_echoes_on_every_io_model_with_every_check_passing() {
    for (protocol, model) in PROTOCOLS.into_iter().flat_map(|p| {
        [
            ["--io-model", "shared", "--io-threads", "1"],
            ["--io-model", "shared", "--io-threads", "2"],
            ["--io-model", "sharded", "--io-threads", "2"],
        ]
        .map(|m| (p, m))
    }) {
        // Datagrams carry what fits in one packet.
        let payloads: &[&str] = if protocol == "quic-datagram" {
            &["64", "1024"]
        } else {
            &["64", "16384"]
        };
        for payload in payloads {
            let mut args = model.to_vec();
            args.extend(["--payload", payload]);
            let (code, m) = quic_protocol(protocol, &args);
            assert_eq!(code, 0, "{protocol} {args:?}: {:?}", m.error);
            assert!(m.ok && m.messages > 0, "{protocol} {args:?}");
            assert_eq!(m.error_counters().total(), 0, "{protocol} {args:?}");
            assert_eq!(m.protocol.to_string(), protocol);
            // Every message the clients sent in the measured phase reached the server.
            assert_eq!(
                m.server_messages_received,
                Some(m.messages_sent),
                "{args:?}"
            );
            // quinn's own counters, one connection per client.
            let q = m.quic.as_ref().expect("quic counters");
            assert_eq!(q.connections, 4, "{args:?}");
            assert!(
                q.sent_packets > 0 && q.lost_packets <= q.sent_packets,
                "{q:?}"
            );
            assert!(
                q.udp_tx_ios > 0 && q.udp_tx_ios <= q.udp_tx_datagrams,
                "{q:?}"
            );
            assert!(q.smoothed_rtt_us > 0.0 && q.current_mtu >= 1200, "{q:?}");
            // A QUIC connection is a UDP socket: its buffers and the kernel's UDP counters
            // are read as for `udp`; only datagrams have a per-message timeout.
            assert!(m.udp_server_receive_buffer_bytes.is_some(), "{protocol}");
            assert!(m.kernel_udp_rcvbuf_errors_delta.is_some(), "{protocol}");
            assert_eq!(m.udp_timeout_ms.is_some(), protocol == "quic-datagram");
            // The datagram size limit the connections negotiated (RFC 9221).
            let limit = q.datagram_size_limit.expect("datagram size limit");
            assert!((1024..1500).contains(&limit), "{q:?}");
            // Datagrams handed to quinn against the DATAGRAM frames it sent: a run that lost
            // no message had none dropped on the send side.
            if protocol == "quic-datagram" {
                let handed = q.datagrams_handed.expect("datagrams handed counted");
                assert!(handed >= m.messages_sent, "{q:?}");
                assert_eq!(q.datagram_frames_sent, Some(handed), "{q:?}");
            } else {
                assert_eq!((q.datagrams_handed, q.datagram_frames_sent), (None, None));
            }
        }
    }
}

#[test]
fn a_connection_per_message_counts_every_handshake_and_0_rtt_resumes_most() {
    for (protocol, model) in ["quic-handshake", "quic-0rtt"].into_iter().flat_map(|p| {
        [
            ["--io-model", "shared", "--io-threads", "1"],
            ["--io-model", "sharded", "--io-threads", "2"],
        ]
        .map(|m| (p, m))
    }) {
        let mut args = model.to_vec();
        args.extend(["--payload", "1024"]);
        let (code, m) = quic_protocol(protocol, &args);
        assert_eq!(code, 0, "{protocol} {model:?}: {:?}", m.error);
        assert!(m.ok && m.messages > 0, "{protocol}");
        assert_eq!(m.error_counters().total(), 0, "{protocol}: {m:?}");
        let q = m.quic.as_ref().expect("quic counters");
        let made = q.handshakes.expect("handshakes counted");
        // One handshake per message sent, warmup and measured; the server saw those and
        // each client's setup connection.
        assert_eq!(
            made,
            m.messages_sent + m.warmup_messages,
            "{protocol}: {q:?}"
        );
        assert_eq!(q.server_connections, Some(made + 4), "{protocol}: {q:?}");
        let accepted = q.zero_rtt_accepted.expect("0-RTT counted");
        if protocol == "quic-0rtt" {
            assert!(accepted > 0 && accepted <= made, "{q:?}");
        } else {
            assert_eq!(accepted, 0, "{q:?}");
        }
    }
    // A fault acts on a connection's later messages; these have one each.
    let out = runner(&[
        "once",
        "--protocol",
        "quic-0rtt",
        "--inject-fault",
        "corrupt",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("every message has a connection of its own")
    );
}

#[test]
fn a_quic_datagram_larger_than_the_negotiated_limit_is_refused_with_the_limit() {
    let (code, m) = quic_protocol("quic-datagram", &["--payload", "16384"]);
    let error = m.error.unwrap_or_default();
    assert_ne!(code, 0);
    assert!(
        error.contains("does not fit in one QUIC datagram") && error.contains("at most"),
        "{error}"
    );
}

#[test]
fn a_server_that_drops_a_quic_datagram_is_counted_as_loss_and_fails_the_run() {
    let (code, m) = quic_protocol("quic-datagram", &["--inject-fault", "drop"]);
    assert_eq!(code, 1, "{:?}", m.error);
    assert!(m.udp_lost_messages > 0, "{m:?}");
    assert_eq!(m.content_errors + m.order_errors, 0);
}

#[test]
fn a_quic_server_that_corrupts_or_reorders_is_caught() {
    // A fault strikes every 97th message of a connection: one client puts every message on
    // one connection, so a machine too busy for 97 messages per connection in the run
    // cannot hide it.
    for protocol in PROTOCOLS {
        for (fault, counter) in [("corrupt", "content_errors"), ("reorder", "order_errors")] {
            let (code, m) = quic_protocol_with(protocol, 1, &["--inject-fault", fault]);
            let raw = serde_json::to_value(&m).unwrap();
            assert_eq!(code, 1, "{protocol} {fault}: {raw}");
            assert!(
                raw[counter].as_u64().unwrap() > 0,
                "{protocol} {fault}: {raw}"
            );
        }
    }
}

#[test]
fn what_quic_does_not_do_yet_is_a_usage_error() {
    for (args, says) in [
        (
            vec!["once", "--protocol", "quic", "--backend", "monoio"],
            "not supported by --backend monoio",
        ),
        (
            vec!["verify", "--protocol", "quic", "--target", "127.0.0.1:9"],
            "needs --tls-ca FILE or --tls-insecure",
        ),
        (
            vec!["serve", "--protocol", "quic", "--backend", "monoio"],
            "not supported by --backend monoio",
        ),
        (
            vec!["once", "--protocol", "quic-datagram", "--backend", "monoio"],
            "not supported by --backend monoio",
        ),
        (
            vec![
                "serve",
                "--protocol",
                "quic-streams",
                "--backend",
                "io-uring",
            ],
            "not supported by --backend io-uring",
        ),
        (
            vec![
                "once",
                "--protocol",
                "tcp",
                "--target",
                "127.0.0.1:9",
                "--tls-insecure",
            ],
            "are for tcps, wss, https and the QUIC protocols",
        ),
        (
            vec!["once", "--protocol", "tcp", "--quic-congestion", "bbr"],
            "the --quic-* transport flags are for the QUIC protocols",
        ),
        (
            vec!["serve", "--protocol", "udp", "--quic-gso", "off"],
            "the --quic-* transport flags are for the QUIC protocols",
        ),
        (
            vec!["once", "--protocol", "quic", "--quic-initial-mtu", "1000"],
            "1000 is not in 1200..=65527",
        ),
        (
            vec!["once", "--protocol", "quic", "--quic-congestion", "reno"],
            "unknown congestion controller 'reno' (cubic, bbr, newreno)",
        ),
    ] {
        let out = runner(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

#[test]
fn a_matrix_of_quic_tcp_tls_and_udp_validates_and_the_pages_set_them_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("quic-vs-tls");
    std::fs::create_dir(&out).unwrap();
    let o = small_matrix(
        "quic,quic-streams,quic-datagram,tcps,udp",
        &out.join("archive.json"),
        &[],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let archive = load_valid(&out.join("archive.json"));
    let protocols: std::collections::BTreeSet<_> = archive
        .results
        .iter()
        .map(|e| e.run.case.protocol)
        .collect();
    assert_eq!(protocols.len(), 5);
    assert!(archive
        .results
        .iter()
        .all(|e| e.metrics.as_ref().unwrap().quic.is_some() == e.run.case.protocol.is_quic()));
    let datasets = echomark::read::load(std::slice::from_ref(&out)).expect("reads strictly");
    // Counters that cannot hold are refused, at their JSON path: more packets lost than
    // sent, more DATAGRAM frames sent than datagrams handed to quinn.
    let bad = dir.path().join("tampered");
    std::fs::create_dir(&bad).unwrap();
    let refusal = |protocol: &str, field: &str, exceeded: &str| {
        let mut tampered: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("archive.json")).unwrap())
                .unwrap();
        let run = tampered["results"]
            .as_array()
            .unwrap()
            .iter()
            .position(|r| r["protocol"] == protocol)
            .unwrap();
        let counters = &mut tampered["results"][run]["metrics"]["quic"];
        let bound = counters[exceeded].as_u64().expect("counted");
        counters[field] = serde_json::json!(bound + 1);
        std::fs::write(bad.join("archive.json"), tampered.to_string()).unwrap();
        let err = echomark::read::load(std::slice::from_ref(&bad))
            .unwrap_err()
            .to_string();
        let path = format!("results[{run}].metrics.quic.{field}");
        assert!(err.contains(&path), "{path}: {err}");
    };
    refusal("quic", "lost_packets", "sent_packets");
    refusal("quic-datagram", "datagram_frames_sent", "datagrams_handed");
    assert!(datasets[0].runs.iter().all(|r| r.passed));
    // The QUIC page compares each load with TCP+TLS first.
    let analysis = echomark::analysis::Analysis::of(&datasets).expect("analysed");
    let site =
        echomark::site::render(&datasets, &analysis, "https://example.test/").expect("rendered");
    let page = String::from_utf8(site.files["en/quic-vs-tls/quic.md"].clone()).unwrap();
    assert!(page.contains("QUIC"), "{page}");
    assert!(
        page.contains("TCP+TLS"),
        "the QUIC page names its TLS baseline: {page}"
    );
    let page = String::from_utf8(site.files["en/quic-vs-tls/quic-streams.md"].clone()).unwrap();
    assert!(page.contains("TCP+TLS"), "{page}");
    // Datagrams over QUIC are set against bare UDP datagrams.
    let page = String::from_utf8(site.files["en/quic-vs-tls/quic-datagram.md"].clone()).unwrap();
    assert!(
        page.contains("QUIC datagram") && page.contains("UDP"),
        "{page}"
    );
    // The QUIC report sets each QUIC protocol against its baselines, in both languages, and
    // the UDP report points to it where the seed points to its RUDP report.
    let report = String::from_utf8(site.files["en/quic-report.md"].clone()).unwrap();
    for row in [
        "| QUIC | TCP+TLS | 1 |",
        "| QUIC, stream per message | QUIC | 1 |",
        "| QUIC datagram | UDP | 1 |",
        "| QUIC datagram | QUIC | 1 |",
    ] {
        assert!(report.contains(row), "{row}: {report}");
    }
    assert!(report.contains("## quinn's counters"), "{report}");
    let zh = String::from_utf8(site.files["zh/quic-report.md"].clone()).unwrap();
    assert!(
        zh.starts_with("# QUIC 报告") && zh.contains("| QUIC 数据报 | UDP | 1 |"),
        "{zh}"
    );
    let udp = String::from_utf8(site.files["en/udp-report.md"].clone()).unwrap();
    assert!(udp.contains("[QUIC report](quic-report.md)"), "{udp}");
}

#[test]
fn each_transport_setting_reaches_both_endpoints_and_is_recorded_with_the_run() {
    use echomark_archive::{Congestion, QuicTransport};
    for (flags, expected) in [
        (
            vec!["--quic-congestion", "bbr", "--quic-gso", "off"],
            QuicTransport {
                congestion: Congestion::Bbr,
                gso: false,
                ..QuicTransport::default()
            },
        ),
        (
            vec![
                "--quic-congestion",
                "newreno",
                "--quic-initial-mtu",
                "1400",
                "--quic-stream-window",
                "65536",
                "--quic-connection-window",
                "262144",
            ],
            QuicTransport {
                congestion: Congestion::NewReno,
                initial_mtu: 1400,
                stream_window: 65_536,
                connection_window: 262_144,
                ..QuicTransport::default()
            },
        ),
        (Vec::new(), QuicTransport::default()),
    ] {
        for protocol in ["quic", "quic-datagram"] {
            let mut args = flags.clone();
            args.extend(["--payload", "1024"]);
            let (code, m) = quic_protocol(protocol, &args);
            assert_eq!(code, 0, "{protocol} {flags:?}: {:?}", m.error);
            assert!(m.ok && m.messages > 0, "{protocol} {flags:?}");
            let quic = m.quic.expect("QUIC counters");
            assert_eq!(quic.transport, Some(expected), "{protocol} {flags:?}");
            // A connection that starts at a larger MTU never runs below it.
            assert!(
                quic.current_mtu >= u64::from(expected.initial_mtu),
                "{protocol} {flags:?}: MTU {}",
                quic.current_mtu
            );
        }
    }
    // A stream window smaller than a message still carries it, a window at a time.
    let (code, m) = quic_protocol(
        "quic",
        &["--payload", "16384", "--quic-stream-window", "4096"],
    );
    assert_eq!(code, 0, "{:?}", m.error);
    assert!(m.ok && m.messages > 0);
}

#[test]
fn transport_axes_measure_each_quic_case_at_each_setting_and_the_pages_keep_them_apart() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("quic-transports");
    std::fs::create_dir(&out).unwrap();
    let archive_path = out.join("archive.json");
    let o = small_matrix(
        "quic,tcp",
        &archive_path,
        &["--quic-congestion", "cubic,bbr", "--quic-gso", "on,off"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let archive = load_valid(&archive_path);
    let quic: Vec<_> = archive
        .results
        .iter()
        .filter(|e| e.run.case.protocol.is_quic())
        .collect();
    assert_eq!(quic.len(), 2 * 4, "two repetitions of four transports");
    assert_eq!(
        archive.results.len() - quic.len(),
        2,
        "TCP is measured once per repetition"
    );
    for e in &quic {
        let recorded = e.metrics.as_ref().unwrap().quic.as_ref().unwrap().transport;
        assert_eq!(
            recorded,
            Some(e.run.case.quic_transport.unwrap_or_default())
        );
        // The child was asked for what the key says.
        let asked_bbr = e.command.iter().any(|a| a == "bbr");
        assert_eq!(
            asked_bbr,
            recorded.unwrap().congestion == echomark_archive::Congestion::Bbr
        );
    }
    // Each transport is a configuration of its own, named on the QUIC page.
    let datasets = echomark::read::load(std::slice::from_ref(&out)).expect("reads strictly");
    let analysis = echomark::analysis::Analysis::of(&datasets).expect("analysed");
    let quic_configurations = analysis
        .configurations
        .iter()
        .filter(|c| c.key.protocol.is_quic())
        .count();
    assert_eq!(quic_configurations, 4);
    let site =
        echomark::site::render(&datasets, &analysis, "https://example.test/").expect("rendered");
    let report = String::from_utf8(site.files["en/quic-report.md"].clone()).unwrap();
    assert!(report.contains("bbr, GSO off"), "{report}");
    // A run whose metrics name another transport than its key fails invariant E1.
    let mut tampered: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&archive_path).unwrap()).unwrap();
    let run = tampered["results"]
        .as_array()
        .unwrap()
        .iter()
        .position(|r| r["protocol"] == "quic" && r.get("quic_transport").is_none())
        .unwrap();
    tampered["results"][run]["metrics"]["quic"]["transport"]["congestion"] =
        serde_json::json!("newreno");
    let bad = dir.path().join("tampered");
    std::fs::create_dir(&bad).unwrap();
    std::fs::write(bad.join("archive.json"), tampered.to_string()).unwrap();
    let read = echomark::read::load(std::slice::from_ref(&bad)).expect("reads");
    let failed = &read[0].runs[run];
    assert!(!failed.passed);
    assert_eq!(
        failed.reasons,
        ["E1: metrics.quic_transport differs from the request"]
    );
}

#[test]
fn quic_runs_open_loop_on_a_schedule_like_every_other_protocol() {
    for protocol in ["quic", "quic-streams", "quic-datagram"] {
        let (code, m) = quic_protocol(protocol, &["--rate", "2000"]);
        assert_eq!(code, 0, "{protocol}: {:?}", m.error);
        assert!(m.ok && m.messages > 0, "{protocol}");
        let open = m.open_loop.expect("open-loop figures");
        assert_eq!(open.offered_rate, 2000, "{protocol}");
        assert!(
            open.scheduled_messages > 0 && open.achieved_rate > 0.0,
            "{protocol}"
        );
        assert!(
            m.quic.is_some(),
            "{protocol}: quinn's counters with the schedule"
        );
    }
}

#[test]
fn a_matrix_starts_verifies_and_measures_an_external_quic_server() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("serve-quic.json");
    let command = format!(
        "{} serve --protocol quic --listen 127.0.0.1:{{port}}",
        env!("CARGO_BIN_EXE_echomark-runner")
    );
    let (code, archive, stderr) = matrix_with_server(
        &out,
        &command,
        &[
            "--protocols",
            "quic",
            "--windows",
            "4",
            "--repetitions",
            "2",
            "--server-name",
            "echomark-serve",
            "--tls-insecure",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let archive = archive.expect("an archive");
    let verification = archive["verification"].as_array().expect("verification");
    assert!(
        verification
            .iter()
            .any(|v| v["protocol"] == "quic" && v["passed"] == true),
        "{verification:?}"
    );
    let results = archive["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for r in results {
        assert!(r.get("error").is_none(), "{r}");
        let target = &r["metrics"]["target"];
        assert_eq!(target["alpn"], "echomark");
        assert_eq!(target["tls_verification"], "insecure");
        assert!(r["metrics"]["quic"]["sent_packets"].as_u64().unwrap() > 0);
    }
    // The archive reads strictly.
    load_valid(&out);
}
