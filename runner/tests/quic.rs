//! `--protocol quic`: QUIC on quinn, in process on tokio. Every IO model echoes with every
//! check passing; a server that corrupts or reorders is caught; what QUIC does not do yet
//! (another backend, `--target`, `serve`, `verify`) is a usage error; a matrix writes
//! schema-valid archives the generator reads and sets against TCP+TLS.
mod common;

use common::*;
use echomark_archive::Metrics;

fn quic(extra: &[&str]) -> (i32, Metrics) {
    let mut args = vec![
        "once",
        "--protocol",
        "quic",
        "--clients",
        "4",
        "--window",
        "8",
        "--seconds",
        "0.4",
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

#[test]
fn quic_echoes_on_every_io_model_with_every_check_passing() {
    for model in [
        ["--io-model", "shared", "--io-threads", "1"],
        ["--io-model", "shared", "--io-threads", "2"],
        ["--io-model", "sharded", "--io-threads", "2"],
    ] {
        for payload in ["64", "16384"] {
            let mut args = model.to_vec();
            args.extend(["--payload", payload]);
            let (code, m) = quic(&args);
            assert_eq!(code, 0, "{args:?}: {:?}", m.error);
            assert!(m.ok && m.messages > 0, "{args:?}");
            assert_eq!(m.error_counters().total(), 0, "{args:?}");
            assert_eq!(m.protocol, echomark_archive::Protocol::Quic);
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
        }
    }
}

#[test]
fn a_quic_server_that_corrupts_or_reorders_is_caught() {
    for (fault, counter) in [("corrupt", "content_errors"), ("reorder", "order_errors")] {
        let (code, m) = quic(&["--inject-fault", fault]);
        let raw = serde_json::to_value(&m).unwrap();
        assert_eq!(code, 1, "{fault}: {raw}");
        assert!(raw[counter].as_u64().unwrap() > 0, "{fault}: {raw}");
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
            vec!["once", "--protocol", "quic", "--target", "127.0.0.1:9"],
            "measured in process only",
        ),
        (
            vec!["verify", "--protocol", "quic", "--target", "127.0.0.1:9"],
            "measured in process only",
        ),
        (
            vec!["serve", "--protocol", "quic"],
            "serve does not speak QUIC yet",
        ),
    ] {
        let out = runner(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

#[test]
fn a_matrix_of_quic_and_tcp_tls_validates_and_the_pages_set_them_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("quic-vs-tls");
    std::fs::create_dir(&out).unwrap();
    let o = runner(&[
        "matrix",
        "--protocols",
        "quic,tcps",
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
        out.join("archive.json").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let archive = load_valid(&out.join("archive.json"));
    let protocols: std::collections::BTreeSet<_> =
        archive.results.iter().map(|e| e.protocol).collect();
    assert_eq!(protocols.len(), 2);
    assert!(archive
        .results
        .iter()
        .all(|e| e.metrics.as_ref().unwrap().quic.is_some()
            == (e.protocol == echomark_archive::Protocol::Quic)));
    let datasets = echomark::read::load(std::slice::from_ref(&out)).expect("reads strictly");
    // Counters that cannot hold are refused, at their JSON path.
    let mut tampered: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("archive.json")).unwrap()).unwrap();
    let quic_run = tampered["results"]
        .as_array()
        .unwrap()
        .iter()
        .position(|r| r["protocol"] == "quic")
        .unwrap();
    let sent = tampered["results"][quic_run]["metrics"]["quic"]["sent_packets"].clone();
    tampered["results"][quic_run]["metrics"]["quic"]["lost_packets"] =
        serde_json::json!(sent.as_u64().unwrap() + 1);
    let bad = dir.path().join("tampered");
    std::fs::create_dir(&bad).unwrap();
    std::fs::write(bad.join("archive.json"), tampered.to_string()).unwrap();
    let err = echomark::read::load(std::slice::from_ref(&bad))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!("results[{quic_run}].metrics.quic.lost_packets")),
        "{err}"
    );
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
}
