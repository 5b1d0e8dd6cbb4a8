//! Measuring servers echomark did not start: `serve` and `once --target` as separate
//! processes, `verify` against echomark's server, against small echo servers written with
//! Python's standard library (`fixtures/echo_servers.py`), and against deliberately broken
//! ones; and client and server in two network namespaces joined by a veth pair. Real
//! binaries, real sockets; every server is killed when its test ends.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

use echomark_archive::Metrics;
use serde_json::Value;

const RUNNER: &str = env!("CARGO_BIN_EXE_echomark-runner");
const PROTOCOLS: [&str; 7] = ["tcp", "udp", "websocket", "tcps", "wss", "http", "https"];

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/echo_servers.py")
}

/// A server process, killed (and reaped) when dropped.
struct Server {
    child: Child,
    stdout: BufReader<ChildStdout>,
    /// The address clients use.
    address: String,
}

impl Server {
    /// Starts `command` and waits for its first line, from which `address` takes the
    /// address.
    fn start(mut command: Command, address: impl FnOnce(&str) -> String) -> Server {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("server starts");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("first line");
        assert!(!line.is_empty(), "the server printed nothing");
        Server {
            address: address(line.trim()),
            child,
            stdout,
        }
    }

    /// `echomark-runner serve` with `args`, listening on `listen`.
    fn echomark(args: &[&str]) -> Server {
        let mut c = Command::new(RUNNER);
        c.arg("serve").args(args);
        Server::start(c, listening_address)
    }

    /// A Python echo server of `mode`.
    fn python(mode: &str) -> Server {
        let mut c = Command::new("python3");
        c.arg(fixture()).arg(mode);
        Server::start(c, |line| {
            let port = line.strip_prefix("PORT ").expect("PORT n");
            format!("127.0.0.1:{port}")
        })
    }

    /// SIGTERM, then the report `serve` prints last.
    fn stop(mut self) -> Value {
        let pid = self.child.id() as i32;
        // SAFETY: kill(2) on our own child's pid with a valid signal.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut last = String::new();
        let mut line = String::new();
        while self.stdout.read_line(&mut line).unwrap_or(0) > 0 {
            last = std::mem::take(&mut line);
            assert!(Instant::now() < deadline, "serve did not stop");
        }
        let status = self.child.wait().expect("serve exits");
        assert!(status.success(), "serve exit: {status}");
        serde_json::from_str(last.trim()).unwrap_or_else(|e| panic!("report ({e}): {last}"))
    }
}

/// The address in `serve`'s first line.
fn listening_address(line: &str) -> String {
    let v: Value = serde_json::from_str(line).expect("the listening line is JSON");
    v["listening"].as_str().expect("listening").to_string()
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn runner(args: &[&str]) -> Output {
    Command::new(RUNNER)
        .args(args)
        .output()
        .expect("runner starts")
}

/// `once --target` with short phases: the exit code and the metrics.
fn once(target: &str, extra: &[&str]) -> (i32, Metrics, Value) {
    let mut args = vec![
        "once",
        "--target",
        target,
        "--seconds",
        "0.3",
        "--warmup",
        "0.1",
        "--clients",
        "2",
        "--window",
        "4",
    ];
    args.extend_from_slice(extra);
    let out = runner(&args);
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    let metrics: Metrics =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("metrics ({e}): {stdout}"));
    let raw: Value = serde_json::from_str(&stdout).expect("JSON");
    (out.status.code().expect("exit code"), metrics, raw)
}

fn verify(protocol: &str, target: &str, extra: &[&str]) -> (i32, Value) {
    let mut args = vec![
        "verify",
        "--json",
        "--protocol",
        protocol,
        "--target",
        target,
    ];
    args.extend_from_slice(extra);
    let out = runner(&args);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "verify JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (out.status.code().expect("exit code"), report)
}

fn outcome<'a>(report: &'a Value, check: &str) -> (&'a str, &'a str) {
    let c = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["name"] == check)
        .unwrap_or_else(|| panic!("no check {check} in {report}"));
    (
        c["outcome"].as_str().expect("outcome"),
        c["detail"].as_str().expect("detail"),
    )
}

/// echomark's server for `protocol` (TLS protocols write their certificate into `dir`) and
/// the flags a client needs to trust it.
fn serve_protocol(dir: &Path, protocol: &str) -> (Server, Vec<String>) {
    serve_protocol_with(dir, protocol, &[])
}

/// [`serve_protocol`] with more `serve` flags (a backend, an IO model).
fn serve_protocol_with(dir: &Path, protocol: &str, extra: &[&str]) -> (Server, Vec<String>) {
    let mut args = vec!["--protocol", protocol];
    args.extend_from_slice(extra);
    if !["tcps", "wss", "https"].contains(&protocol) {
        return (Server::echomark(&args), Vec::new());
    }
    let cert = dir.join(format!("{protocol}.pem")).display().to_string();
    args.extend(["--tls-certificate-out", &cert]);
    (Server::echomark(&args), vec!["--tls-ca".into(), cert])
}

/// Whether process `pid` holds an io_uring instance.
fn holds_io_uring(pid: u32) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .any(|l| l.to_string_lossy() == "anon_inode:[io_uring]")
        })
        .unwrap_or(false)
}

/// `serve` flags for monoio on two shards.
const SHARDED_MONOIO: [&str; 6] = [
    "--backend",
    "monoio",
    "--io-model",
    "sharded",
    "--io-threads",
    "2",
];

#[test]
fn serve_on_monoio_echoes_every_protocol_through_io_uring() {
    let dir = tempfile::tempdir().unwrap();
    let cases = PROTOCOLS
        .iter()
        .map(|&p| (p, vec!["--backend", "monoio"]))
        .chain(["tcp", "udp"].map(|p| (p, SHARDED_MONOIO.to_vec())))
        .chain([("tcp", vec!["--backend", "monoio", "--framing", "raw"])]);
    for (protocol, flags) in cases {
        let (server, client_tls) = serve_protocol_with(dir.path(), protocol, &flags);
        assert!(holds_io_uring(server.child.id()), "{protocol} {flags:?}");
        let mut extra = vec!["--protocol", protocol];
        extra.extend(client_tls.iter().map(String::as_str));
        if flags.contains(&"raw") {
            extra.extend(["--framing", "raw"]);
        }
        let (code, m, _) = once(&server.address, &extra);
        assert_eq!(code, 0, "{protocol} {flags:?}: {:?}", m.error);
        assert_eq!(m.error_counters().total(), 0, "{protocol} {flags:?}");
        let sent = m.messages_sent;
        let report = server.stop();
        assert_eq!(report["content_errors"], 0, "{protocol}: {report}");
        if flags.contains(&"raw") {
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
    for protocol in PROTOCOLS {
        let (server, client_tls) = serve_protocol(dir.path(), protocol);
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
    }
}

#[test]
fn verify_and_measure_independent_python_servers() {
    for (mode, protocol, framing) in [
        ("tcp", "tcp", Some("raw")),
        ("udp", "udp", None),
        ("http-chunked", "http", None),
        // Pings before and inside every echo, each echo in three fragments: the client
        // joins them and answers every ping, or the server drops the connection.
        ("ws-fragments", "websocket", None),
    ] {
        let server = Server::python(mode);
        let mut extra: Vec<&str> = Vec::new();
        if let Some(f) = framing {
            extra.extend(["--framing", f]);
        }
        let (code, report) = verify(protocol, &server.address, &extra);
        assert_eq!(code, 0, "{mode}: {report}");
        let mut flags = vec!["--protocol", protocol];
        flags.extend(&extra);
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
    for (mode, protocol, check, says) in [
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
    ] {
        let server = Server::python(mode);
        let extra: &[&str] = if protocol == "tcp" {
            &["--framing", "raw"]
        } else {
            &[]
        };
        let (code, report) = verify(protocol, &server.address, extra);
        assert_eq!(code, 1, "{mode}: {report}");
        assert_eq!(report["passed"], false);
        let (result, detail) = outcome(&report, check);
        assert_eq!(result, "failed", "{mode}: {report}");
        assert!(detail.contains(says), "{mode}: {detail}");
    }
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
            "are for tcps, wss and https",
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

/// Two network namespaces joined by a veth pair, removed when dropped.
struct Namespaces {
    server: String,
    client: String,
    /// The client's end of the veth pair.
    client_veth: String,
}

impl Namespaces {
    /// The pair, or why it cannot be made here (no root, no `ip`, no netns support);
    /// `test` tells apart the pairs of tests that run at the same time.
    fn create(test: char) -> Result<Namespaces, String> {
        let tag = format!("{}{test}", std::process::id());
        let (veth_s, veth_c) = (format!("emks{tag}"), format!("emkc{tag}"));
        let ns = Namespaces {
            server: format!("emk-srv-{tag}"),
            client: format!("emk-cli-{tag}"),
            client_veth: veth_c.clone(),
        };
        let steps: Vec<Vec<String>> = vec![
            vec!["netns".into(), "add".into(), ns.server.clone()],
            vec!["netns".into(), "add".into(), ns.client.clone()],
            vec![
                "link".into(),
                "add".into(),
                veth_s.clone(),
                "netns".into(),
                ns.server.clone(),
                "type".into(),
                "veth".into(),
                "peer".into(),
                "name".into(),
                veth_c.clone(),
                "netns".into(),
                ns.client.clone(),
            ],
        ];
        for step in steps {
            ip(&step)?;
        }
        for (name, dev, v4, v6) in [
            (&ns.server, &veth_s, "10.213.0.1/30", "fd00:e3a::1/64"),
            (&ns.client, &veth_c, "10.213.0.2/30", "fd00:e3a::2/64"),
        ] {
            for args in [
                vec!["addr", "add", v4, "dev", dev],
                vec!["-6", "addr", "add", v6, "dev", dev, "nodad"],
                vec!["link", "set", dev, "up"],
                vec!["link", "set", "lo", "up"],
            ] {
                let mut all = vec!["-n", name.as_str()];
                all.extend(args.iter().map(|s| &**s));
                ip(&all.iter().map(|s| s.to_string()).collect::<Vec<_>>())?;
            }
        }
        Ok(ns)
    }

    fn exec(&self, namespace: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", namespace, RUNNER]);
        c
    }

    /// The pair for `test`, or `None` after saying why the test is skipped.
    fn or_skip(test: char) -> Option<Namespaces> {
        match Namespaces::create(test) {
            Ok(ns) => Some(ns),
            Err(why) => {
                echomark::skip::because(&format!(
                    "network namespaces cannot be created here ({why})"
                ));
                None
            }
        }
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for ns in [&self.server, &self.client] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

fn ip(args: &[String]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

#[test]
fn serve_and_once_target_across_two_network_namespaces() {
    let Some(ns) = Namespaces::or_skip('a') else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for (protocol, listen) in [
        ("tcp", "10.213.0.1:0"),
        ("udp", "10.213.0.1:0"),
        ("tcp", "[fd00:e3a::1]:0"),
    ] {
        let mut serve = ns.exec(&ns.server);
        serve.args(["serve", "--protocol", protocol, "--listen", listen]);
        // The listening line, saved, describes the server's machine for the client.
        let machine = dir.path().join("server-machine.json");
        let server = Server::start(serve, |line| {
            std::fs::write(&machine, line).unwrap();
            listening_address(line)
        });
        let machine = machine.display().to_string();
        let out = ns
            .exec(&ns.client)
            .args([
                "once",
                "--protocol",
                protocol,
                "--target",
                &server.address,
                "--seconds",
                "0.3",
                "--warmup",
                "0.1",
                "--clients",
                "2",
                "--window",
                "2",
                "--server-machine",
                &machine,
            ])
            .output()
            .expect("once starts");
        let m: Metrics = serde_json::from_slice(&out.stdout).expect("metrics");
        assert!(m.ok, "{protocol} {listen}: {:?}", m.error);
        let target = m.target.as_ref().unwrap();
        assert_eq!(target.address, server.address);
        // The path is the client's end of the veth pair, not loopback.
        let path = target.path.as_ref().expect("the path is described");
        assert_eq!(path.kind, echomark_archive::PathKind::Veth, "{path:?}");
        assert_eq!(path.interface, ns.client_veth);
        assert_eq!(path.mtu, Some(1500));
        let client_ip = if listen.starts_with('[') {
            "fd00:e3a::2"
        } else {
            "10.213.0.2"
        };
        assert_eq!(path.client_address, client_ip);
        let described = target
            .server_machine
            .as_ref()
            .expect("the server's machine");
        assert!(described.logical_cpus > 0 && !described.cpu.is_empty());
        // The client's own namespace cannot reach the server through loopback: the echo
        // crossed the veth pair.
        let sent = m.messages_sent;
        let report = server.stop();
        assert_eq!(report["measured_messages_received"].as_u64(), Some(sent));
    }
}

#[test]
fn a_matrix_in_one_namespace_measures_a_server_in_another() {
    let Some(ns) = Namespaces::or_skip('b') else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("veth.json");
    let command = format!(
        "ip netns exec {} {RUNNER} serve --protocol {{protocol}} --listen 10.213.0.1:{{port}}",
        ns.server
    );
    let args = matrix_args(
        &out,
        &command,
        &[
            "--protocols",
            "tcp,udp",
            "--windows",
            "2",
            "--repetitions",
            "1",
            "--server-name",
            "echomark-serve",
            "--server-host",
            "10.213.0.1",
        ],
    );
    let o = ns
        .exec(&ns.client)
        .args(&args)
        .output()
        .expect("matrix starts");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let a: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert!(a["settings"]["external_server"]["machine"]["cpu"].is_string());
    let results = a["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for r in results {
        assert_eq!(r["metrics"]["ok"], true, "{r}");
        assert_eq!(r["server"]["separate_network_namespace"], true, "{r}");
        let path = &r["metrics"]["target"]["path"];
        assert_eq!(path["kind"], "veth", "{path}");
        assert_eq!(path["interface"], ns.client_veth.as_str());
    }
}

/// `matrix --server-cmd` with the Python fixture in `mode`: the exit code, the archive (if
/// written) and the matrix's stderr.
fn matrix_against(
    dir: &Path,
    mode: &str,
    tag: &str,
    extra: &[&str],
) -> (i32, Option<Value>, String) {
    let command = format!(
        "python3 {} {mode} 127.0.0.1 {{port}} {tag}",
        fixture().display()
    );
    let mut args = vec![
        "--protocols",
        "tcp",
        "--windows",
        "4",
        "--repetitions",
        "2",
        "--framing",
        "raw",
        "--server-name",
        "python-echo",
    ];
    args.extend_from_slice(extra);
    matrix_with_server(&dir.join(format!("{mode}.json")), &command, &args)
}

/// The arguments of `matrix --server-cmd command --out out` with `args` (protocols,
/// windows, repetitions, names) on 1,024 B, 4 clients, one shared thread, 0.5 s runs.
fn matrix_args(out: &Path, command: &str, args: &[&str]) -> Vec<String> {
    let mut all: Vec<String> = vec!["matrix".into()];
    all.extend(args.iter().map(|a| a.to_string()));
    for a in [
        "--payloads",
        "1024",
        "--clients",
        "4",
        "--io-models",
        "shared",
        "--io-threads",
        "1",
        "--seconds",
        "0.5",
        "--warmup",
        "0.1",
        "--server-cmd",
        command,
        "--out",
    ] {
        all.push(a.to_string());
    }
    all.push(out.display().to_string());
    all
}

/// `matrix --server-cmd command` with `args` (protocols, windows, repetitions, names) on
/// 1,024 B, 4 clients, one shared thread, 0.5 s runs: the exit code, the archive (if
/// written) and the matrix's stderr.
fn matrix_with_server(out: &Path, command: &str, args: &[&str]) -> (i32, Option<Value>, String) {
    let args = matrix_args(out, command, args);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = runner(&args);
    let archive = std::fs::read_to_string(out)
        .ok()
        .map(|t| serde_json::from_str(&t).expect("the archive is JSON"));
    (
        o.status.code().expect("exit code"),
        archive,
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Processes whose command line carries `tag`.
fn processes_tagged(tag: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .filter(|c| String::from_utf8_lossy(c).contains(tag))
        .count()
}

#[test]
fn a_matrix_measures_an_external_server_verified_first_fresh_per_run() {
    let dir = tempfile::tempdir().unwrap();
    let tag = format!("emk-good-{}", std::process::id());
    let (code, archive, stderr) = matrix_against(dir.path(), "tcp", &tag, &[]);
    assert_eq!(code, 0, "{stderr}");
    let a = archive.unwrap();
    assert_eq!(a["backend"], "python-echo");
    assert_eq!(a["settings"]["external_server"]["framing"], "raw");
    // What the server is: python3, which answered `--version`, its hash, and (on Debian)
    // the package that installed it.
    let identity = &a["settings"]["external_server"]["identity"];
    assert!(
        identity["version"]
            .as_str()
            .is_some_and(|v| v.starts_with("Python 3")),
        "{identity}"
    );
    assert!(
        identity["executable"]
            .as_str()
            .is_some_and(|e| e.contains("python3")),
        "{identity}"
    );
    assert_eq!(
        identity["executable_sha256"].as_str().map(str::len),
        Some(64)
    );
    // A Debian python3 names its package; a pyenv shim, say, is no package's file.
    let packaged = identity["executable"]
        .as_str()
        .is_some_and(|e| e.starts_with("/usr/"));
    if packaged && std::path::Path::new("/usr/bin/dpkg").exists() {
        assert!(
            identity["package"]
                .as_str()
                .is_some_and(|p| p.contains("python3")),
            "{identity}"
        );
    }
    assert_eq!(a["verification"][0]["protocol"], "tcp");
    assert_eq!(a["verification"][0]["passed"], true);
    let results = a["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    let mut ports = std::collections::BTreeSet::new();
    for r in results {
        assert!(r.get("error").is_none(), "{r}");
        assert_eq!(r["backend"], "python-echo");
        assert_eq!(r["metrics"]["backend"], "python-echo");
        assert!(r["metrics"]["server_messages_received"].is_null());
        let s = &r["server"];
        assert!(
            s["exit_code"].as_i64().or(s["signal"].as_i64()).is_some(),
            "{s}"
        );
        assert_eq!(s["killed"], false);
        assert!(s["cpu_seconds"].as_f64().unwrap() > 0.0, "{s}");
        assert!(s["peak_rss_bytes"].as_u64().unwrap() > 1 << 20, "{s}");
        ports.insert(
            r["metrics"]["target"]["address"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    assert_eq!(ports.len(), 2, "a fresh server, on a fresh port, per run");
    assert_eq!(processes_tagged(&tag), 0, "no server left behind");
}

#[test]
fn an_http_server_that_does_not_pipeline_gets_a_connection_per_request_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let command = format!(
        "python3 {} http-no-pipelining 127.0.0.1 {{port}}",
        fixture().display()
    );
    let (code, archive, stderr) = matrix_with_server(
        &dir.path().join("http.json"),
        &command,
        &[
            "--protocols",
            "http",
            "--windows",
            "1,4",
            "--repetitions",
            "1",
            "--server-name",
            "python-http",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let a = archive.unwrap();
    let v = &a["verification"][0];
    assert_eq!(v["passed"], true, "{v}");
    assert_eq!(outcome(v, "pipelined-window").0, "unsupported", "{v}");
    let results = a["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for r in results {
        assert!(r.get("error").is_none(), "{r}");
        let m = &r["metrics"];
        assert_eq!(m["ok"], true, "{m}");
        assert_eq!(m["disconnect_errors"], 0);
        let window = m["window"].as_u64().unwrap();
        // The load is the case's, 4 clients × window; the connections carry it one
        // request at a time.
        assert_eq!(m["target"]["http_pipelined"], false, "{m}");
        assert_eq!(m["target"]["connections"], 4 * window, "{m}");
    }
}

#[test]
fn a_matrix_checks_a_tls_servers_certificate_against_its_ca() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    let command = format!(
        "{RUNNER} serve --protocol {{protocol}} --listen 127.0.0.1:{{port}} --tls-certificate-out {}",
        ca.display()
    );
    let ca_arg = ca.display().to_string();
    let base = [
        "--protocols",
        "tcps",
        "--windows",
        "4",
        "--repetitions",
        "1",
        "--server-name",
        "echomark-serve",
    ];
    let mut args = base.to_vec();
    args.extend(["--tls-ca", &ca_arg]);
    let (code, archive, stderr) = matrix_with_server(&dir.path().join("ca.json"), &command, &args);
    assert_eq!(code, 0, "{stderr}");
    let a = archive.unwrap();
    assert_eq!(a["settings"]["external_server"]["tls_verification"], "ca");
    assert_eq!(a["verification"][0]["passed"], true);
    let m = &a["results"][0]["metrics"];
    assert_eq!(m["ok"], true, "{m}");
    assert_eq!(m["target"]["tls_verification"], "ca");

    // Neither --tls-ca nor --tls-insecure: a usage error before anything starts.
    let (code, _, stderr) = matrix_with_server(&dir.path().join("none.json"), &command, &base);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--tls-ca FILE or --tls-insecure"),
        "{stderr}"
    );
}

#[test]
fn several_servers_are_measured_interleaved_one_archive_each() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("two");
    let command = |tag: &str| {
        format!(
            "python3 {} tcp 127.0.0.1 {{port}} {tag}",
            fixture().display()
        )
    };
    let (a, b) = (command("emk-a"), command("emk-b"));
    let args = [
        "--protocols",
        "tcp",
        "--framing",
        "raw",
        "--windows",
        "1,4",
        "--repetitions",
        "2",
        "--shuffle",
        "7",
        "--server-name",
        "py-a",
        "--server-cmd",
        &a,
        "--server-name",
        "py-b",
    ];
    let (code, _, stderr) = matrix_with_server(&out, &b, &args);
    assert_eq!(code, 0, "{stderr}");
    let mut runs: Vec<(String, String)> = Vec::new();
    for name in ["py-a", "py-b"] {
        let text = std::fs::read_to_string(out.join(format!("{name}.json"))).unwrap();
        let archive: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(archive["backend"], name);
        assert_eq!(archive["settings"]["external_server"]["name"], name);
        assert_eq!(archive["verification"][0]["passed"], true);
        let results = archive["results"].as_array().unwrap();
        assert_eq!(results.len(), 4, "{name}");
        for r in results {
            assert!(r.get("error").is_none(), "{r}");
            let command = r["server"]["command"].as_str().unwrap();
            assert!(
                command.contains(&format!("emk-{}", &name[3..])),
                "{command}"
            );
            runs.push((
                r["started_at_utc"].as_str().unwrap().to_string(),
                name.to_string(),
            ));
        }
    }
    // In the order they ran, the servers alternate at least once each way: not all of one
    // server's runs before the other's.
    runs.sort();
    let order: Vec<&str> = runs.iter().map(|(_, n)| n.as_str()).collect();
    let switches = order.windows(2).filter(|w| w[0] != w[1]).count();
    assert!(switches >= 2, "{order:?}");

    // One name per command, each used once.
    for (extra, says) in [
        (
            vec!["--server-name", "x", "--server-cmd", "true {port}"],
            "2 --server-cmd but 1 --server-name",
        ),
        (
            vec![
                "--server-name",
                "x",
                "--server-name",
                "x",
                "--server-cmd",
                "true {port}",
            ],
            "names two servers",
        ),
        (vec!["--server-name", "../x"], "use letters, digits"),
    ] {
        let mut all = vec![
            "matrix",
            "--protocols",
            "tcp",
            "--server-cmd",
            "true {port}",
        ];
        all.extend(extra);
        all.extend(["--out", "/nonexistent/x"]);
        let o = runner(&all);
        assert_eq!(o.status.code(), Some(2), "{all:?}");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.contains(says), "{stderr}");
    }
}

#[test]
fn a_server_that_exits_at_once_is_reported_with_its_exit_code_and_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (code, archive, stderr) = matrix_with_server(
        &dir.path().join("broken.json"),
        "sh -c 'echo no such config file >&2; exit 7' -- {port}",
        &[
            "--protocols",
            "tcp",
            "--framing",
            "raw",
            "--server-name",
            "broken",
        ],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "not a 10 s wait for readiness"
    );
    let a = archive.unwrap();
    let detail = a["verification"][0]["checks"][0]["detail"]
        .as_str()
        .unwrap();
    assert!(
        detail.contains("exited with code 7 before it was ready"),
        "{detail}"
    );
    assert!(
        detail.contains("no such config file"),
        "its stderr is kept: {detail}"
    );
}

#[test]
fn servers_that_never_listen_crash_or_ignore_sigterm_are_recorded_failures() {
    let dir = tempfile::tempdir().unwrap();
    let pid = std::process::id();
    // Never listens: the verification records why, and nothing is measured (exit 2).
    let tag = format!("emk-never-{pid}");
    let started = Instant::now();
    let (code, archive, stderr) = matrix_against(dir.path(), "never-listen", &tag, &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(30), "no hang");
    assert!(stderr.contains("fails the echo contract"), "{stderr}");
    let a = archive.unwrap();
    assert_eq!(a["verification"][0]["passed"], false);
    let detail = a["verification"][0]["checks"][0]["detail"]
        .as_str()
        .unwrap();
    assert!(detail.contains("not ready within 10 s"), "{detail}");
    assert!(a["results"].as_array().unwrap().is_empty());
    assert_eq!(processes_tagged(&tag), 0);

    // Crashes mid-run: passes verification, then each run is a failure naming the exit.
    let tag = format!("emk-crash-{pid}");
    let (code, archive, stderr) =
        matrix_against(dir.path(), "tcp-crash-after", &tag, &["--keep-going"]);
    assert_eq!(code, 1, "{stderr}");
    for r in archive.unwrap()["results"].as_array().unwrap() {
        assert_eq!(
            r["error"], "the server exited with code 3 during the run",
            "{r}"
        );
        assert_eq!(r["server"]["exit_code"], 3);
    }
    assert_eq!(processes_tagged(&tag), 0);

    // Ignores SIGTERM: killed after the grace, and the run says so.
    let tag = format!("emk-term-{pid}");
    let (code, archive, stderr) =
        matrix_against(dir.path(), "tcp-ignore-term", &tag, &["--keep-going"]);
    assert_eq!(code, 1, "{stderr}");
    for r in archive.unwrap()["results"].as_array().unwrap() {
        assert!(
            r["error"]
                .as_str()
                .unwrap()
                .contains("ignored SIGTERM for 3 s and was killed"),
            "{r}"
        );
        assert_eq!(r["server"]["killed"], true);
        assert_eq!(r["server"]["signal"], 9);
    }
    assert_eq!(processes_tagged(&tag), 0);
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
    let started = Instant::now();
    let (code, report) = verify("websocket", &address, &[]);
    assert_ne!(code, 0);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "verify took {:?}",
        started.elapsed()
    );
    assert!(
        report
            .to_string()
            .contains("WebSocket upgrade not answered within 10 s"),
        "{report:#}"
    );
}

/// User + system CPU seconds of process `pid` so far (from /proc/PID/stat).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = stat.rsplit_once(") ").unwrap().1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of stat (utime, stime), counted after the command's ")".
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    // SAFETY: sysconf has no preconditions.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

#[test]
fn serve_out_of_file_descriptors_waits_instead_of_spinning() {
    for backend in ["tokio", "monoio"] {
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
}

/// Whether the peer closes `stream` within `limit` (a read returns 0 or the connection
/// resets), as opposed to the read timing out with the connection still open.
fn closed_within(stream: &mut std::net::TcpStream, limit: Duration) -> bool {
    use std::io::Read;
    stream.set_read_timeout(Some(limit)).unwrap();
    let mut byte = [0u8; 1];
    match stream.read(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

/// One exchange on a `serve` connection: a byte echo (`raw`) or an HTTP POST.
fn exchange(stream: &mut std::net::TcpStream, protocol: &str) {
    use std::io::{Read, Write};
    let (request, answer_ends): (&[u8], &[u8]) = match protocol {
        "http" => (
            b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
            b"hello",
        ),
        _ => (b"hello", b"hello"),
    };
    stream.write_all(request).unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 256];
    while !answer.ends_with(answer_ends) {
        let n = stream.read(&mut buf).unwrap();
        assert!(
            n > 0,
            "closed while busy: {}",
            String::from_utf8_lossy(&answer)
        );
        answer.extend_from_slice(&buf[..n]);
    }
}

#[test]
fn serve_closes_silent_connections_after_its_idle_timeout_and_keeps_busy_ones() {
    for backend in ["tokio", "monoio"] {
        // A byte echo (the raw loop) and HTTP (the framed loop every framing shares).
        for (protocol, framing) in [("tcp", "raw"), ("http", "prefix")] {
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
    }
    // 0 keeps silent connections open, and the listening line says which limit applies.
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

#[test]
fn a_daemon_forked_by_the_server_does_not_outlive_the_matrix() {
    let dir = tempfile::tempdir().unwrap();
    let tag = format!("emk-daemon-{}", std::process::id());
    // The server starts a daemon in a session of its own (outside its process group), as a
    // `setsid` service would, then becomes the Python echo server.
    let command = format!(
        "sh -c 'setsid sh -c \"sleep 311; : {tag}\" >/dev/null 2>&1 & exec python3 {} tcp 127.0.0.1 {{port}} {tag}'",
        fixture().display()
    );
    let (code, archive, stderr) = matrix_with_server(
        &dir.path().join("daemon.json"),
        &command,
        &[
            "--protocols",
            "tcp",
            "--framing",
            "raw",
            "--server-name",
            "daemon",
            "--repetitions",
            "1",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("process(es) behind; they were killed"),
        "{stderr}"
    );
    let a = archive.unwrap();
    for r in a["results"].as_array().unwrap() {
        assert!(
            r["server"]["left_behind"].as_u64() >= Some(1),
            "{}",
            r["server"]
        );
    }
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(processes_tagged(&tag), 0, "no daemon outlives the matrix");
    assert_eq!(
        processes_tagged("sleep\u{0}311"),
        0,
        "nor the daemon's own child"
    );
}
