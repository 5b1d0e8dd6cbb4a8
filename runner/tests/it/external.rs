//! Measuring servers echomark did not start: `serve` and `once --target` as separate
//! processes, `verify` against echomark's server, against small echo servers written with
//! Python's standard library (`fixtures/echo_servers.py`), and against deliberately broken
//! ones. Real binaries, real sockets; every server is killed when its test ends.
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::Value;

#[test]
fn serve_on_monoio_echoes_every_protocol_through_io_uring() {
    let dir = tempfile::tempdir().unwrap();
    let cases = PROTOCOLS
        .iter()
        .map(|&p| (p, vec!["--backend", "monoio"]))
        .chain(["tcp", "udp"].map(|p| (p, SHARDED_MONOIO.to_vec())))
        .chain([("tcp", vec!["--backend", "monoio", "--framing", "raw"])])
        .chain([("tcp", vec!["--backend", "monoio", "--framing", "line"])]);
    for (protocol, flags) in cases {
        let (server, client_tls) = serve_protocol_with(dir.path(), protocol, &flags);
        assert!(holds_io_uring(server.child.id()), "{protocol} {flags:?}");
        let mut extra = vec!["--protocol", protocol];
        extra.extend(client_tls.iter().map(String::as_str));
        let headless = flags.contains(&"raw") || flags.contains(&"line");
        if headless {
            extra.extend(["--framing", flags[flags.len() - 1]]);
            // And monoio's client, against a byte echo.
            extra.extend(["--backend", "monoio"]);
        }
        let (code, m, _) = once(&server.address, &extra);
        assert_eq!(code, 0, "{protocol} {flags:?}: {:?}", m.error);
        assert_eq!(m.error_counters().total(), 0, "{protocol} {flags:?}");
        let sent = m.messages_sent;
        let report = server.stop();
        assert_eq!(report["content_errors"], 0, "{protocol}: {report}");
        if headless {
            // A byte echo counts bytes, not messages.
            let bytes = report["raw_bytes_echoed"].as_u64().unwrap();
            assert!(bytes >= sent * 1024, "{report}");
        } else {
            assert_eq!(
                report["measured_messages_received"].as_u64(),
                Some(sent),
                "{protocol} {flags:?}: {report}"
            );
        }
    }
    // What monoio cannot run is a usage error, as for once.
    let out = runner(&[
        "serve",
        "--backend",
        "monoio",
        "--io-model",
        "shared",
        "--io-threads",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--backend monoio cannot run shared 2"));
}

#[test]
fn serve_and_once_target_measure_every_protocol_as_two_processes() {
    let dir = tempfile::tempdir().unwrap();
    for protocol in PROTOCOLS {
        let (server, client_tls) = serve_protocol(dir.path(), protocol);
        let mut extra = vec!["--protocol", protocol];
        extra.extend(client_tls.iter().map(String::as_str));
        let (code, m, raw) = once(&server.address, &extra);
        assert_eq!(code, 0, "{protocol}: {:?}", m.error);
        assert!(m.ok && m.messages > 0, "{protocol}");
        assert_eq!(m.error_counters().total(), 0, "{protocol}");
        // The server's counters are unknown to the client: null, never 0.
        for field in [
            "server_messages_received",
            "server_send_rejections",
            "server_send_completion_errors",
        ] {
            assert!(raw[field].is_null(), "{protocol}: {field} = {}", raw[field]);
        }
        let target = m.target.as_ref().expect("the target is named");
        assert_eq!(target.address, server.address, "{protocol}");
        let path = target.path.as_ref().expect("the path is described");
        assert_eq!(path.kind, echomark_archive::PathKind::Loopback, "{path:?}");
        assert_eq!(path.client_address, "127.0.0.1");
        if ["tcps", "wss", "https"].contains(&protocol) {
            assert_eq!(m.tls_version.as_deref(), Some("TLSv1_3"), "{protocol}");
            assert_eq!(
                target.tls_verification,
                Some(echomark_archive::TlsVerification::Ca)
            );
        }
        let sent = m.messages_sent;
        let report = server.stop();
        // What the client sent in the measured phase is what echomark's server counted.
        let counted = report["measured_messages_received"].as_u64().unwrap();
        assert_eq!(counted, sent, "{protocol}: {report}");
        assert_eq!(report["content_errors"], 0, "{protocol}: {report}");
        assert_eq!(report["foreign_messages"], 0, "{protocol}: {report}");
    }
}

#[test]
fn once_target_runs_on_monoio_too() {
    let dir = tempfile::tempdir().unwrap();
    for protocol in PROTOCOLS {
        let (server, client_tls) = serve_protocol(dir.path(), protocol);
        let mut extra = vec!["--protocol", protocol, "--backend", "monoio"];
        extra.extend(client_tls.iter().map(String::as_str));
        let (code, m, _) = once(&server.address, &extra);
        assert_eq!(code, 0, "{protocol}: {:?}", m.error);
        assert_eq!(m.io_driver.as_deref(), Some("io_uring"), "{protocol}");
        assert_eq!(m.backend, "monoio");
        assert_eq!(m.error_counters().total(), 0, "{protocol}");
        let sent = m.messages_sent;
        let report = server.stop();
        assert_eq!(
            report["measured_messages_received"].as_u64(),
            Some(sent),
            "{protocol}: {report}"
        );
    }
    // Servers that fragment and ping, or do not pipeline: the same handling as on tokio.
    for (mode, protocol, more) in [
        ("ws-fragments", "websocket", vec![]),
        ("http-no-pipelining", "http", vec!["--no-pipelining"]),
    ] {
        let server = Server::python(mode);
        let mut extra = vec!["--protocol", protocol, "--backend", "monoio"];
        extra.extend(more);
        let (code, m, _) = once(&server.address, &extra);
        assert_eq!(code, 0, "{mode}: {:?}", m.error);
        assert!(m.messages > 0, "{mode}");
        assert_eq!(m.error_counters().total(), 0, "{mode}");
    }
}

#[test]
fn once_target_over_ipv6_takes_the_family_of_the_address() {
    let server = Server::echomark(&["--protocol", "tcp", "--listen", "[::1]:0"]);
    assert!(server.address.starts_with("[::1]:"), "{}", server.address);
    let (code, m, _) = once(&server.address, &[]);
    assert_eq!(code, 0, "{:?}", m.error);
    assert_eq!(m.address_family, echomark_archive::AddressFamily::Ipv6);
}

#[test]
fn serve_echoes_foreign_messages_and_counts_them() {
    let server = Server::echomark(&["--protocol", "tcp", "--framing", "raw"]);
    let mut s = std::net::TcpStream::connect(&server.address).unwrap();
    use std::io::{Read, Write};
    s.write_all(b"hello, not echomark").unwrap();
    let mut back = [0u8; 19];
    s.read_exact(&mut back).unwrap();
    assert_eq!(&back, b"hello, not echomark");
    drop(s);
    let report = server.stop();
    assert_eq!(report["raw_bytes_echoed"], 19, "{report}");

    // HTTP: an ordinary POST without echomark's header is echoed and counted as foreign.
    let server = Server::echomark(&["--protocol", "http"]);
    let mut s = std::net::TcpStream::connect(&server.address).unwrap();
    s.write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
        .unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 256];
    while !answer.ends_with(b"hello") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed: {}", String::from_utf8_lossy(&answer));
        answer.extend_from_slice(&buf[..n]);
    }
    assert!(answer.starts_with(b"HTTP/1.1 200"));
    drop(s);
    let report = server.stop();
    assert_eq!(report["foreign_messages"], 1, "{report}");
}

#[test]
fn verify_passes_echomarks_own_server_on_every_protocol() {
    let dir = tempfile::tempdir().unwrap();
    // Each protocol against its own server, all at once: most of a verification is waiting
    // (the idle check alone sleeps its default 2 s, which this test keeps), so seven in
    // parallel take the time of one.
    std::thread::scope(|scope| {
        for protocol in PROTOCOLS {
            let dir = dir.path();
            scope.spawn(move || verify_own_server(dir, protocol));
        }
    });
}

/// `verify` passes echomark's own server of `protocol`, running exactly the checks that
/// apply to it.
fn verify_own_server(dir: &std::path::Path, protocol: &str) {
    let (server, client_tls) = serve_protocol(dir, protocol);
    let extra: Vec<&str> = client_tls.iter().map(String::as_str).collect();
    let (code, report) = verify(protocol, &server.address, &extra);
    assert_eq!(code, 0, "{protocol}: {report}");
    assert_eq!(report["passed"], true);
    let (sizes, detail) = outcome(&report, "echo-sizes");
    assert_eq!(sizes, "passed", "{protocol}: {detail}");
    let malformed = outcome(&report, "malformed-request").0;
    let expected = if ["http", "https", "websocket", "wss"].contains(&protocol) {
        "passed"
    } else {
        "skipped"
    };
    assert_eq!(malformed, expected, "{protocol}");
    let (fragments, detail) = outcome(&report, "fragments-and-ping");
    let expected = if ["websocket", "wss"].contains(&protocol) {
        "passed"
    } else {
        "skipped"
    };
    assert_eq!(fragments, expected, "{protocol}: {detail}");
    assert_eq!(
        outcome(&report, "idle-keep-alive"),
        ("passed", "the same connection echoes again after 2 s idle"),
        "{protocol}"
    );
}

/// A datagram echoed after its timeout was delayed, not lost: it counts as a late round
/// trip (received, timed from its send), and the run passes without a loss.
#[test]
fn a_datagram_echoed_after_its_timeout_is_late_not_lost() {
    let server = Server::python("udp-late");
    let out = runner(&[
        "once",
        "--target",
        &server.address,
        "--protocol",
        "udp",
        "--udp-timeout-ms",
        "500",
        "--seconds",
        "1.5",
        "--warmup",
        "0",
    ]);
    let m: echomark_archive::Metrics = serde_json::from_slice(&out.stdout).expect("metrics");
    assert_eq!(out.status.code(), Some(0), "{:?}", m.error);
    let late = m.udp_late_messages.expect("recorded for UDP");
    assert!(late >= 1, "{m:?}");
    assert_eq!(m.udp_lost_messages, 0, "late echoes are not losses");
    assert_eq!(m.messages_sent, m.messages_received);
    assert!(
        m.rtt_max_us >= 740_000.0,
        "a late echo's round trip is timed: max {} µs",
        m.rtt_max_us
    );
    assert_eq!(m.error_counters().total(), 0, "{:?}", m.error);
}

/// Runs `args` to its end: its exit code, its peak resident set, and what it printed
/// (stdout, then stderr). The peak is the kernel's high-water mark of the program's own
/// memory (`VmHWM`, reset at exec), read while it runs: `wait4`'s `ru_maxrss` would count
/// the test process's pages the child shared before its exec.
fn peak_rss(args: &[&str]) -> (i32, u64, String) {
    let out = tempfile::tempfile().unwrap();
    let mut child = Command::new(RUNNER)
        .args(args)
        .stdout(out.try_clone().unwrap())
        .stderr(out.try_clone().unwrap())
        .spawn()
        .unwrap();
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_file) {
            let hwm = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
            peak = peak.max(hwm.unwrap_or(0) * 1024);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut printed = String::new();
    use std::io::{Read, Seek};
    let mut out = out;
    out.rewind().unwrap();
    out.read_to_string(&mut printed).unwrap();
    (status.code().expect("exited"), peak, printed)
}

/// A server that answers with an endless body, head or trailer fields fails `verify` (the
/// same checks run before a matrix measures a server) without taking the measuring host's
/// memory: before, verify grew to 2 GB and aborted on a 4 GiB allocation.
#[test]
fn verify_reads_no_more_of_an_endless_answer_than_it_judges() {
    for part in ["body", "headers", "trailers"] {
        let server = Server::python(&format!("http-endless-{part}"));
        let (code, rss, printed) = peak_rss(&[
            "verify",
            "--protocol",
            "http",
            "--target",
            &server.address,
            "--io-timeout",
            "1",
        ]);
        assert_eq!(
            code, 1,
            "{part}: every endless answer fails a check: {printed}"
        );
        assert!(rss < 64 << 20, "{part}: peak RSS {} MiB", rss >> 20);
    }
}

#[test]
fn verify_and_measure_independent_python_servers() {
    for (mode, protocol, framing) in [
        ("tcp", "tcp", Some("raw")),
        // A newline-delimited echo: echoes only after a line's end, splits a body that
        // holds a newline into two lines.
        ("line", "tcp", Some("line")),
        ("udp", "udp", None),
        ("http-chunked", "http", None),
        // Pings before and inside every echo, each echo in three fragments: the client
        // joins them and answers every ping, or the server drops the connection.
        ("ws-fragments", "websocket", None),
    ] {
        let server = Server::python(mode);
        let mut extra: Vec<&str> = vec!["--idle", TEST_VERIFY_IDLE];
        if let Some(f) = framing {
            extra.extend(["--framing", f]);
        }
        let (code, report) = verify(protocol, &server.address, &extra);
        assert_eq!(code, 0, "{mode}: {report}");
        let mut flags = vec!["--protocol", protocol];
        flags.extend(framing.iter().flat_map(|f| ["--framing", *f]));
        let (code, m, _) = once(&server.address, &flags);
        assert_eq!(code, 0, "{mode}: {:?}", m.error);
        assert!(m.messages > 0 && m.ok, "{mode}");
        assert_eq!(
            (m.content_errors, m.disconnect_errors),
            (0, 0),
            "{mode}: {:?}",
            m.error
        );
        if let Some(f) = framing {
            assert_eq!(
                m.target
                    .as_ref()
                    .and_then(|t| t.framing)
                    .map(|f| f.as_str()),
                Some(f)
            );
        }
    }
}

#[test]
fn verify_names_the_check_a_broken_server_fails() {
    let cases = [
        ("tcp-drop-byte", "tcp", "echo-sizes", ""),
        ("udp-reorder", "udp", "pipelined-window", "out of order"),
        ("tcp-close-after", "tcp", "echo-sizes", "closed"),
        ("http-no-body", "http", "echo-sizes", "has 0 bytes"),
        (
            "ws-no-pong",
            "websocket",
            "fragments-and-ping",
            "the ping: pong",
        ),
    ];
    // Each verification mostly waits (its idle pause, a missing echo's deadline, shortened
    // here to 1 s from the default 3 s): the five servers are verified at once.
    std::thread::scope(|s| {
        let checks: Vec<_> = cases
            .into_iter()
            .map(|(mode, protocol, check, says)| {
                s.spawn(move || {
                    let server = Server::python(mode);
                    let mut extra = vec!["--io-timeout", "1", "--idle", TEST_VERIFY_IDLE];
                    if protocol == "tcp" {
                        extra.extend(["--framing", "raw"]);
                    }
                    let (code, report) = verify(protocol, &server.address, &extra);
                    assert_eq!(code, 1, "{mode}: {report}");
                    assert_eq!(report["passed"], false);
                    let (result, detail) = outcome(&report, check);
                    assert_eq!(result, "failed", "{mode}: {report}");
                    assert!(detail.contains(says), "{mode}: {detail}");
                })
            })
            .collect();
        for check in checks {
            if let Err(panic) = check.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
}

#[test]
fn bad_targets_are_usage_errors_or_clear_failures() {
    for (args, says) in [
        (
            vec!["--protocol", "http", "--framing", "raw"],
            "--framing raw is for tcp and tcps",
        ),
        (
            vec!["--protocol", "tcps"],
            "needs --tls-ca FILE or --tls-insecure",
        ),
        (
            vec!["--protocol", "tcp", "--tls-insecure"],
            "are for tcps, wss, https and the QUIC protocols",
        ),
        (vec!["--work", "10"], "--work runs in echomark's own server"),
        (
            vec!["--backend", "monoio", "--rate", "1000"],
            "--rate (open loop) is measured on tokio only",
        ),
    ] {
        let mut all = vec!["once", "--target", "127.0.0.1:9"];
        all.extend(args);
        let out = runner(&all);
        assert_eq!(out.status.code(), Some(2), "{all:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{all:?}: {stderr}");
    }
    // Nothing listens on a port of a freshly closed listener: a failed run that says why.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let target = format!("127.0.0.1:{port}");
    let (code, m, _) = once(&target, &[]);
    assert_eq!(code, 1);
    let error = m.error.expect("an error");
    assert!(
        error.contains(&format!("connecting to {target}")),
        "{error}"
    );
    let (code, report) = verify("tcp", &target, &[]);
    assert_eq!(code, 1);
    assert_eq!(outcome(&report, "connect").0, "failed");
}

#[test]
fn calibrate_apart_is_a_blocking_echo_server_and_client_that_once_target_measures_too() {
    for protocol in ["tcp", "udp"] {
        let mut c = Command::new(RUNNER);
        c.args([
            "calibrate",
            "--serve",
            "127.0.0.1:0",
            "--protocol",
            protocol,
        ]);
        let server = Server::start(c, listening_address);
        let out = runner(&[
            "calibrate",
            "--target",
            &server.address,
            "--protocol",
            protocol,
            "--seconds",
            "0.3",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let floor: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(floor["roundtrips_per_second"].as_f64().unwrap() > 0.0);
        let framing: &[&str] = if protocol == "tcp" {
            &["--protocol", "tcp", "--framing", "raw"]
        } else {
            &["--protocol", "udp"]
        };
        let (code, m, _) = once(&server.address, framing);
        assert_eq!(code, 0, "{protocol}: {:?}", m.error);
    }
}

#[test]
fn verify_gives_up_on_a_server_that_drips_its_websocket_upgrade() {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    // Answers every read in time (a byte each 300 ms, under the 3 s read limit) and never
    // finishes the upgrade's head.
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            std::thread::spawn(move || {
                let mut request = [0u8; 4096];
                let _ = s.read(&mut request);
                for byte in b"HTTP/1.1 101 Switching Protocols\r\nX-Slow: "
                    .iter()
                    .cycle()
                {
                    if s.write_all(&[*byte]).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(300));
                }
            });
        }
    });
    // The whole upgrade's deadline (10 s unless --handshake-timeout says otherwise) stops
    // it: every check that connects fails with it, and none waits longer.
    let started = Instant::now();
    let (code, report) = verify("websocket", &address, &["--handshake-timeout", "1.5"]);
    assert_ne!(code, 0);
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "verify took {:?}",
        started.elapsed()
    );
    assert_eq!(
        outcome(&report, "connect"),
        ("failed", "WebSocket upgrade not answered within 1.5 s"),
        "{report:#}"
    );
}

#[test]
fn serve_out_of_file_descriptors_waits_instead_of_spinning() {
    // The two backends at once: each check is mostly a 2 s watch of an idle server.
    std::thread::scope(|scope| {
        for backend in ["tokio", "monoio"] {
            scope.spawn(move || starved_server_waits(backend));
        }
    });
}

/// `serve` on `backend`, out of file descriptors with connections still arriving, uses
/// (almost) no CPU.
fn starved_server_waits(backend: &str) {
    // 32 descriptors: a handful of connections exhaust them.
    let mut c = Command::new("sh");
    c.args([
        "-c",
        &format!("ulimit -n 32 && exec {RUNNER} serve --protocol tcp --backend {backend}"),
    ]);
    let server = Server::start(c, listening_address);
    let held: Vec<std::net::TcpStream> = (0..64)
        .filter_map(|_| std::net::TcpStream::connect(&server.address).ok())
        .collect();
    assert!(held.len() > 32, "{backend}: {} connections", held.len());
    std::thread::sleep(Duration::from_millis(300));
    let pid = server.child.id();
    let before = cpu_seconds(pid);
    std::thread::sleep(Duration::from_secs(2));
    let used = cpu_seconds(pid) - before;
    assert!(
        used < 0.5,
        "{backend}: {used:.2} s of CPU in 2 s with no descriptor left (a spinning accept loop)"
    );
    drop(held);
    server.stop();
}

#[test]
fn serve_closes_silent_connections_after_its_idle_timeout_and_keeps_busy_ones() {
    // Each server is watched for 1.5 s of mostly waiting: the four (and the server without
    // a limit) at once.
    std::thread::scope(|scope| {
        for backend in ["tokio", "monoio"] {
            // A byte echo (the raw loop) and HTTP (the framed loop every framing shares).
            for (protocol, framing) in [("tcp", "raw"), ("http", "prefix")] {
                scope.spawn(move || idle_timeout_closes_only_silent(backend, protocol, framing));
            }
        }
        scope.spawn(no_idle_timeout_keeps_silent_connections);
    });
}

/// `serve --idle-timeout 0.5` on `backend` closes a silent connection and keeps one that
/// exchanges a message every 100 ms.
fn idle_timeout_closes_only_silent(backend: &str, protocol: &str, framing: &str) {
    let server = Server::echomark(&[
        "--protocol",
        protocol,
        "--framing",
        framing,
        "--backend",
        backend,
        "--idle-timeout",
        "0.5",
    ]);
    let mut silent = std::net::TcpStream::connect(&server.address).unwrap();
    let mut busy = std::net::TcpStream::connect(&server.address).unwrap();
    busy.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    // An exchange every 100 ms for 1.5 s: three idle timeouts long, never idle.
    for _ in 0..15 {
        exchange(&mut busy, protocol);
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        closed_within(&mut silent, Duration::from_secs(3)),
        "{backend} {protocol}: a silent connection outlived the idle timeout"
    );
    drop(busy);
    let report = server.stop();
    assert_eq!(report["idle_closed"], 1, "{backend} {protocol}: {report}");
    assert_eq!(report["disconnect_errors"], 0, "{report}");
}

/// `--idle-timeout 0` keeps silent connections open, and the listening line says which
/// limit applies.
fn no_idle_timeout_keeps_silent_connections() {
    let mut c = Command::new(RUNNER);
    c.args(["serve", "--protocol", "tcp", "--idle-timeout", "0"]);
    let mut line = String::new();
    let server = Server::start(c, |l| {
        line = l.to_string();
        listening_address(l)
    });
    let listening: Value = serde_json::from_str(&line).unwrap();
    assert!(listening.get("idle_timeout_seconds").is_none(), "{line}");
    let mut silent = std::net::TcpStream::connect(&server.address).unwrap();
    assert!(!closed_within(&mut silent, Duration::from_millis(800)));
    assert_eq!(server.stop()["idle_closed"], 0);
}
