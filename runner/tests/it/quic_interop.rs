//! QUIC between processes, and with an implementation echomark did not write: `serve
//! --protocol quic*` passing `verify` and measured by `once --target`; an echo server on
//! aioquic (Python, from PyPI, installed by `scripts/install-aioquic`) verified and measured
//! the same way, and failing `verify` (and caught by `once`) when it corrupts a byte; an
//! aioquic client answered by `serve`. Trust is checked as for TLS.
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

const PROTOCOLS: [&str; 3] = ["quic", "quic-streams", "quic-datagram"];
/// With a connection per message too: against aioquic, which takes no early data here,
/// `quic-0rtt` falls back to sending each message after the handshake.
const ALL: [&str; 5] = [
    "quic",
    "quic-streams",
    "quic-datagram",
    "quic-handshake",
    "quic-0rtt",
];

/// The Python of the aioquic environment, or `None` after saying why the test is skipped.
fn aioquic_python() -> Option<PathBuf> {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/aioquic/bin/python");
    let usable = Command::new(&python)
        .args(["-c", "import aioquic"])
        .output()
        .is_ok_and(|o| o.status.success());
    if usable {
        return Some(python);
    }
    echomark::skip::because("aioquic is not installed (scripts/install-aioquic)");
    None
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The aioquic echo server, its certificate written to `cert`.
fn aioquic_server(python: &Path, cert: &Path, mode: &str) -> Server {
    aioquic_server_offering(python, cert, mode, "echomark")
}

fn aioquic_server_offering(python: &Path, cert: &Path, mode: &str, alpn: &str) -> Server {
    let mut c = Command::new(python);
    c.arg(fixture("aioquic_echo.py"))
        .arg(cert)
        .arg(mode)
        .arg(alpn);
    Server::start(c, |line| {
        let port = line.strip_prefix("PORT ").expect("PORT n");
        format!("127.0.0.1:{port}")
    })
}

fn quic_once(protocol: &str, target: &str, extra: &[&str]) -> (i32, echomark_archive::Metrics) {
    // A handshake per message is slow, against aioquic's Python handshakes slower still, and
    // beside other work slowest: those runs are longer and keep one handshake in flight per
    // client (8 at once against aioquic completed none in 0.3 s on a busy machine), so they
    // always complete some. What they test is the protocol, not concurrency.
    if ["quic-handshake", "quic-0rtt"].contains(&protocol) {
        let mut args = vec![
            "once",
            "--target",
            target,
            "--seconds",
            "1",
            "--warmup",
            "0.2",
            "--clients",
            "2",
            "--window",
            "1",
            "--protocol",
            protocol,
            "--payload",
            "1024",
        ];
        args.extend_from_slice(extra);
        let out = runner(&args);
        let stdout = String::from_utf8(out.stdout).expect("utf-8");
        let m = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("metrics ({e}): {stdout}"));
        return (out.status.code().expect("exit code"), m);
    }
    let mut args = vec!["--protocol", protocol, "--payload", "1024"];
    args.extend_from_slice(extra);
    let (code, m, _) = once(target, &args);
    (code, m)
}

#[test]
fn echomark_serve_is_measured_by_once_target_over_every_quic_protocol() {
    let dir = tempfile::tempdir().unwrap();
    for protocol in ALL {
        for model in [
            ["--io-model", "shared", "--io-threads", "1"],
            ["--io-model", "sharded", "--io-threads", "2"],
        ] {
            // verify first, on a server of its own, so the measured server's counts are
            // the run's alone.
            let (checked, trust) = serve_protocol_with(dir.path(), protocol, &model);
            let trust: Vec<&str> = trust.iter().map(String::as_str).collect();
            let (code, report) = verify(protocol, &checked.address, &trust);
            assert_eq!(code, 0, "{protocol}: {report}");
            assert_eq!(outcome(&report, "echo-sizes").0, "passed", "{report}");
            drop(checked);
            let (server, trust) = serve_protocol_with(dir.path(), protocol, &model);
            let trust: Vec<&str> = trust.iter().map(String::as_str).collect();
            let (code, m) = quic_once(protocol, &server.address, &trust);
            assert_eq!(code, 0, "{protocol} {model:?}: {:?}", m.error);
            assert!(m.ok && m.messages > 0, "{protocol}");
            assert_eq!(m.error_counters().total(), 0, "{protocol}: {m:?}");
            let q = m.quic.as_ref().expect("quinn's counters");
            let per_message = protocol.ends_with("handshake") || protocol.ends_with("0rtt");
            assert_eq!(q.connections, if per_message { 0 } else { 2 }, "{protocol}");
            let target = m.target.as_ref().expect("target recorded");
            assert_eq!(
                target.tls_verification,
                Some(echomark_archive::TlsVerification::Ca)
            );
            let report = server.stop();
            let connections = q.handshakes.map_or(2, |made| made + 2);
            assert_eq!(report["connections"], connections, "{protocol}: {report}");
            assert!(
                report["measured_messages_received"].as_u64().unwrap() >= m.messages,
                "{protocol}: {report}"
            );
            assert_eq!(report["content_errors"], 0, "{protocol}: {report}");
        }
    }
}

#[test]
fn a_quic_target_needs_trust_and_a_certificate_it_does_not_trust_fails_the_handshake() {
    let dir = tempfile::tempdir().unwrap();
    let (server, _) = serve_protocol(dir.path(), "quic");
    let out = runner(&["once", "--protocol", "quic", "--target", &server.address]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("needs --tls-ca FILE or --tls-insecure"),
        "{stderr}"
    );
    // Another server's certificate is not this one's.
    let (_other, other_trust) = serve_protocol(dir.path(), "quic-streams");
    let other: Vec<&str> = other_trust.iter().map(String::as_str).collect();
    let (code, m) = quic_once("quic", &server.address, &other);
    assert_ne!(code, 0);
    let error = m.error.unwrap_or_default();
    assert!(
        error.contains("certificate") || error.contains("handshake"),
        "{error}"
    );
    // --tls-insecure skips the trust, and the archive says so.
    let (code, m) = quic_once("quic", &server.address, &["--tls-insecure"]);
    assert_eq!(code, 0, "{:?}", m.error);
    assert_eq!(
        m.target.unwrap().tls_verification,
        Some(echomark_archive::TlsVerification::Insecure)
    );
}

#[test]
fn an_aioquic_echo_server_is_measured_over_every_quic_protocol_and_caught_when_it_corrupts() {
    let Some(python) = aioquic_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("aioquic.pem");
    let ca = cert.display().to_string();
    let server = aioquic_server(&python, &cert, "echo");
    for protocol in ALL {
        let (code, report) = verify(protocol, &server.address, &["--tls-ca", &ca]);
        assert_eq!(code, 0, "{protocol}: {report}");
        let (code, m) = quic_once(protocol, &server.address, &["--tls-ca", &ca]);
        assert_eq!(code, 0, "{protocol}: {:?}", m.error);
        assert!(m.ok && m.messages > 0, "{protocol}");
        assert_eq!(m.error_counters().total(), 0, "{protocol}: {m:?}");
        if protocol == "quic-datagram" {
            let limit = m.quic.as_ref().and_then(|q| q.datagram_size_limit);
            assert!(limit.is_some_and(|l| l >= 1024), "{limit:?}");
        }
    }
    drop(server);
    let server = aioquic_server(&python, &cert, "corrupt");
    for protocol in ALL {
        let (code, report) = verify(protocol, &server.address, &["--tls-ca", &ca]);
        assert_eq!(code, 1, "{protocol}: {report}");
        let (result, detail) = outcome(&report, "echo-sizes");
        assert_eq!(result, "failed", "{protocol}: {report}");
        assert!(detail.contains("differ"), "{protocol}: {detail}");
        let (code, m) = quic_once(protocol, &server.address, &["--tls-ca", &ca]);
        assert_eq!(code, 1, "{protocol}: {:?}", m.error);
        assert!(m.content_errors > 0, "{protocol}: {m:?}");
    }
}

#[test]
fn echomark_serve_answers_an_aioquic_client_over_every_quic_protocol() {
    let Some(python) = aioquic_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for protocol in PROTOCOLS {
        let (server, trust) = serve_protocol(dir.path(), protocol);
        let out = Command::new(&python)
            .arg(fixture("aioquic_client.py"))
            .args([server.address.as_str(), trust[1].as_str(), protocol, "50"])
            .output()
            .expect("python starts");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.trim() == "OK 50",
            "{protocol}: {stdout} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report = server.stop();
        assert_eq!(
            report["warmup_messages_received"], 50,
            "{protocol}: {report}"
        );
    }
}

#[test]
fn a_server_of_another_alpn_is_measured_with_alpn_and_refuses_echomarks() {
    let Some(python) = aioquic_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("aioquic.pem");
    let ca = cert.display().to_string();
    let server = aioquic_server_offering(&python, &cert, "echo", "echo/1");
    // Offering echomark's ALPN, the handshake fails: no application protocol in common.
    let (code, report) = verify("quic", &server.address, &["--tls-ca", &ca]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(outcome(&report, "connect").0, "failed", "{report}");
    let (code, m) = quic_once("quic", &server.address, &["--tls-ca", &ca]);
    assert_ne!(code, 0, "{:?}", m.error);
    // With its ALPN, it passes every check and is measured, and the run records the ALPN.
    let alpn = ["--tls-ca", ca.as_str(), "--alpn", "echo/1"];
    let (code, report) = verify("quic", &server.address, &alpn);
    assert_eq!(code, 0, "{report}");
    let (code, m) = quic_once("quic", &server.address, &alpn);
    assert_eq!(code, 0, "{:?}", m.error);
    assert!(m.ok && m.messages > 0);
    assert_eq!(m.target.unwrap().alpn.as_deref(), Some("echo/1"));
    // --alpn is for QUIC, and an ALPN must be one.
    for (args, says) in [
        (
            vec![
                "once",
                "--protocol",
                "tcps",
                "--target",
                &server.address,
                "--tls-insecure",
                "--alpn",
                "h2",
            ],
            "--alpn is for the QUIC protocols",
        ),
        (
            vec![
                "once",
                "--protocol",
                "quic",
                "--target",
                &server.address,
                "--tls-insecure",
                "--alpn",
                "",
            ],
            "is not an ALPN name",
        ),
    ] {
        let out = runner(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}
