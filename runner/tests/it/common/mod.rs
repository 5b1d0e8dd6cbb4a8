//! What the tests of servers echomark did not start share: running the real binaries, a
//! server process killed when its test ends, two network namespaces joined by a veth pair.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

use echomark_archive::Metrics;
use serde_json::Value;

pub mod open_loop;

pub const RUNNER: &str = env!("CARGO_BIN_EXE_echomark-runner");

pub const PROTOCOLS: [&str; 7] = ["tcp", "udp", "websocket", "tcps", "wss", "http", "https"];

pub fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/echo_servers.py")
}

/// A server process, killed (and reaped) when dropped.
pub struct Server {
    pub child: Child,
    pub stdout: BufReader<ChildStdout>,
    /// The address clients use.
    pub address: String,
}

impl Server {
    /// Starts `command` and waits for its first line, from which `address` takes the
    /// address.
    pub fn start(mut command: Command, address: impl FnOnce(&str) -> String) -> Server {
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
    pub fn echomark(args: &[&str]) -> Server {
        let mut c = Command::new(RUNNER);
        c.arg("serve").args(args);
        Server::start(c, listening_address)
    }

    /// A Python echo server of `mode`.
    pub fn python(mode: &str) -> Server {
        let mut c = Command::new("python3");
        c.arg(fixture()).arg(mode);
        Server::start(c, |line| {
            let port = line.strip_prefix("PORT ").expect("PORT n");
            format!("127.0.0.1:{port}")
        })
    }

    /// SIGTERM, then the report `serve` prints last.
    pub fn stop(mut self) -> Value {
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
pub fn listening_address(line: &str) -> String {
    let v: Value = serde_json::from_str(line).expect("the listening line is JSON");
    v["listening"].as_str().expect("listening").to_string()
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn runner(args: &[&str]) -> Output {
    Command::new(RUNNER)
        .args(args)
        .output()
        .expect("runner starts")
}

/// `once --target` with short phases: the exit code and the metrics.
pub fn once(target: &str, extra: &[&str]) -> (i32, Metrics, Value) {
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

/// The idle pause of the tests' verifications, in seconds: a verification waits for it
/// once per server and protocol, and the 2 s default (which
/// `external::verify_passes_echomarks_own_server_on_every_protocol` keeps) would be most of
/// the tests' waiting.
pub const TEST_VERIFY_IDLE: &str = "0.2";

pub fn verify(protocol: &str, target: &str, extra: &[&str]) -> (i32, Value) {
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

pub fn outcome<'a>(report: &'a Value, check: &str) -> (&'a str, &'a str) {
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
pub fn serve_protocol(dir: &Path, protocol: &str) -> (Server, Vec<String>) {
    serve_protocol_with(dir, protocol, &[])
}

/// [`serve_protocol`] with more `serve` flags (a backend, an IO model).
pub fn serve_protocol_with(dir: &Path, protocol: &str, extra: &[&str]) -> (Server, Vec<String>) {
    let mut args = vec!["--protocol", protocol];
    args.extend_from_slice(extra);
    let trusted = [
        "tcps",
        "wss",
        "https",
        "quic",
        "quic-streams",
        "quic-datagram",
        "quic-handshake",
        "quic-0rtt",
    ];
    if !trusted.contains(&protocol) {
        return (Server::echomark(&args), Vec::new());
    }
    let cert = dir.join(format!("{protocol}.pem")).display().to_string();
    args.extend(["--tls-certificate-out", &cert]);
    (Server::echomark(&args), vec!["--tls-ca".into(), cert])
}

/// Whether process `pid` holds an io_uring instance.
pub fn holds_io_uring(pid: u32) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .any(|l| l.to_string_lossy() == "anon_inode:[io_uring]")
        })
        .unwrap_or(false)
}

/// `serve` flags for monoio on two shards.
pub const SHARDED_MONOIO: [&str; 6] = [
    "--backend",
    "monoio",
    "--io-model",
    "sharded",
    "--io-threads",
    "2",
];

/// Two network namespaces joined by a veth pair, removed when dropped.
pub struct Namespaces {
    pub server: String,
    pub client: String,
    /// The client's end of the veth pair.
    pub client_veth: String,
}

impl Namespaces {
    /// The pair, or why it cannot be made here (no root, no `ip`, no netns support);
    /// `test` tells apart the pairs of tests that run at the same time.
    pub fn create(test: char) -> Result<Namespaces, String> {
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

    pub fn exec(&self, namespace: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", namespace, RUNNER]);
        c
    }

    /// The pair for `test`, or `None` after saying why the test is skipped.
    pub fn or_skip(test: char) -> Option<Namespaces> {
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

pub fn ip(args: &[String]) -> Result<(), String> {
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

/// `matrix --server-cmd` with the Python fixture in `mode` (TCP, window 4, raw framing, and
/// `extra`, the repetitions among them): the exit code, the archive (if written) and the
/// matrix's stderr.
pub fn matrix_against(
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
        "--framing",
        "raw",
        "--server-name",
        "python-echo",
    ];
    args.extend_from_slice(extra);
    matrix_with_server(&dir.join(format!("{mode}.json")), &command, &args)
}

/// The arguments of `matrix --server-cmd command --out out` with `args` (protocols,
/// windows, repetitions, names) on 1,024 B, 4 clients, one shared thread, 0.25 s runs, the
/// servers verified with a 0.2 s idle pause ([`TEST_VERIFY_IDLE`]).
pub fn matrix_args(out: &Path, command: &str, args: &[&str]) -> Vec<String> {
    let mut all: Vec<String> = vec!["matrix".into()];
    all.extend(args.iter().map(|a| a.to_string()));
    for a in [
        "--verify-idle",
        TEST_VERIFY_IDLE,
        "--payloads",
        "1024",
        "--clients",
        "4",
        "--io-models",
        "shared",
        "--io-threads",
        "1",
        "--seconds",
        "0.25",
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
/// 1,024 B, 4 clients, one shared thread, 0.25 s runs: the exit code, the archive (if
/// written) and the matrix's stderr.
pub fn matrix_with_server(
    out: &Path,
    command: &str,
    args: &[&str],
) -> (i32, Option<Value>, String) {
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
pub fn processes_tagged(tag: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .filter(|c| String::from_utf8_lossy(c).contains(tag))
        .count()
}

/// The fields of `/proc/PID/stat` after the command (which may hold spaces and
/// parentheses): `[0]` the state, `[1]` the parent's pid, `[11]` and `[12]` the user and
/// system clock ticks. `None` once the process is gone.
pub fn proc_stat(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(") ")?.1;
    Some(after.split_whitespace().map(str::to_string).collect())
}

/// Whether `pid` (a child not yet waited for) has exited: a zombie, or gone.
pub fn exited(pid: u32) -> bool {
    proc_stat(pid)
        .and_then(|fields| fields.into_iter().next())
        .is_none_or(|state| state.starts_with(['Z', 'X']))
}

/// User + system CPU seconds of process `pid` so far (from /proc/PID/stat).
pub fn cpu_seconds(pid: u32) -> f64 {
    let fields = proc_stat(pid).expect("the process is running");
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    // SAFETY: sysconf has no preconditions.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

/// Whether the peer closes `stream` within `limit` (a read returns 0 or the connection
/// resets), as opposed to the read timing out with the connection still open.
pub fn closed_within(stream: &mut std::net::TcpStream, limit: Duration) -> bool {
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
pub fn exchange(stream: &mut std::net::TcpStream, protocol: &str) {
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

/// Each thread of `pid` with its name and `Cpus_allowed_list`.
pub fn threads(pid: u32) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let Ok(status) = std::fs::read_to_string(task.path().join("status")) else {
            continue;
        };
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .unwrap_or("")
                .trim()
                .to_string()
        };
        out.push((field("Name:"), field("Cpus_allowed_list:")));
    }
    out
}

/// Parses the archive and validates it against the published JSON Schema.
pub fn load_valid(path: &Path) -> echomark_archive::Archive {
    let value = valid_under(path, echomark_archive::ARCHIVE_JSON_SCHEMA);
    serde_json::from_value(value).expect("archive has the typed shape")
}

/// The compiled validator of `schema` (its text), compiled once per schema for the whole
/// binary: compiling one (its patterns included) cost as much as validating an archive.
fn validator(schema: &'static str) -> &'static jsonschema::Validator {
    type Compiled = std::collections::HashMap<&'static str, &'static jsonschema::Validator>;
    static COMPILED: std::sync::OnceLock<std::sync::Mutex<Compiled>> = std::sync::OnceLock::new();
    let mut compiled = COMPILED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    compiled.entry(schema).or_insert_with(|| {
        let schema: serde_json::Value = serde_json::from_str(schema).expect("schema is JSON");
        Box::leak(Box::new(
            jsonschema::validator_for(&schema).expect("schema compiles"),
        ))
    })
}

/// The file's JSON, asserted valid under `schema` (its text).
pub fn valid_under(path: &Path, schema: &'static str) -> serde_json::Value {
    let text = std::fs::read_to_string(path).expect("archive exists");
    let value: serde_json::Value = serde_json::from_str(&text).expect("archive is JSON");
    let errors: Vec<String> = validator(schema)
        .iter_errors(&value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{}: schema violations: {errors:#?}",
        path.display()
    );
    value
}

/// The site the generator renders from `datasets` (analysed as `echomark build` does): a
/// function from a page's path (`en/NAME/overview.md`) to its text.
pub fn rendered_pages(datasets: &[echomark::model::Dataset]) -> impl Fn(&str) -> String {
    let analysis = echomark::analysis::Analysis::of(datasets).expect("analysed");
    let site =
        echomark::site::render(datasets, &analysis, "https://example.test/").expect("rendered");
    move |path: &str| {
        let bytes = site
            .files
            .get(path)
            .unwrap_or_else(|| panic!("no page {path}"));
        String::from_utf8(bytes.clone()).expect("UTF-8")
    }
}
