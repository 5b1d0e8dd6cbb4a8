//! `matrix --server-cmd`: an external server verified first and started fresh for every
//! run, several servers interleaved, TLS trust, servers that fail in every way, and the
//! processes a server leaves behind.
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::Value;

#[test]
fn a_matrix_measures_an_external_server_verified_first_fresh_per_run() {
    let tmp = tempfile::tempdir().unwrap();
    // --out into folders that do not exist yet: the matrix makes them, as `mkdir -p`.
    let dir = tmp.path().join("made/by/the/matrix");
    let tag = format!("emk-good-{}", std::process::id());
    let (code, archive, stderr) = matrix_against(&dir, "tcp", &tag, &["--repetitions", "2"]);
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
    // --verify-idle: recorded, waited, said in the check, and asked for again by the
    // published reproduction command.
    assert_eq!(a["settings"]["external_server"]["verify_idle_ms"], 200);
    let idle = a["verification"][0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "idle-keep-alive")
        .expect("an idle check");
    assert_eq!(
        idle["detail"], "the same connection echoes again after 0.2 s idle",
        "{idle}"
    );
    let path = dir.join("tcp.json");
    let dataset =
        echomark::read::load_one("good", std::slice::from_ref(&path)).expect("reads strictly");
    let commands = echomark::reproduce::commands(&dataset).join("\n");
    assert!(commands.contains(" --verify-idle 0.2 "), "{commands}");
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

    // A resumed archive starts the server its file names: it says which, before it runs.
    let mut unfinished = a.clone();
    unfinished["complete"] = Value::Bool(false);
    unfinished["results"].as_array_mut().unwrap().pop();
    std::fs::write(&path, unfinished.to_string()).unwrap();
    let out = runner(&["matrix", "--resume", path.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let command = a["settings"]["external_server"]["command"]
        .as_str()
        .unwrap();
    assert!(
        stderr.contains(&format!("settings.external_server.command: {command}")),
        "{stderr}"
    );
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
    // The three servers are independent and their matrices mostly wait (the ready limit,
    // the SIGTERM grace): they run at once.
    std::thread::scope(|scope| {
        let dir = dir.path();
        scope.spawn(move || {
            // Never listens: the verification records why, and nothing is measured (exit 2),
            // after the ready limit --server-ready-timeout set (10 s without it).
            let tag = format!("emk-never-{pid}");
            let started = Instant::now();
            let (code, archive, stderr) = matrix_against(
                dir,
                "never-listen",
                &tag,
                &["--server-ready-timeout", "1.5", "--repetitions", "1"],
            );
            assert_eq!(code, 2, "{stderr}");
            assert!(
                started.elapsed() < Duration::from_secs(8),
                "waited the 1.5 s given"
            );
            assert!(stderr.contains("fails the echo contract"), "{stderr}");
            let a = archive.unwrap();
            assert_eq!(a["verification"][0]["passed"], false);
            assert_eq!(a["settings"]["external_server"]["ready_timeout_ms"], 1500);
            let detail = a["verification"][0]["checks"][0]["detail"]
                .as_str()
                .unwrap();
            assert!(detail.contains("not ready within 1.5 s"), "{detail}");
            assert!(a["results"].as_array().unwrap().is_empty());
            assert_eq!(processes_tagged(&tag), 0);
        });
        scope.spawn(move || {
            // Crashes mid-run: passes verification, then each run is a failure naming the
            // exit.
            let tag = format!("emk-crash-{pid}");
            let (code, archive, stderr) = matrix_against(
                dir,
                "tcp-crash-after",
                &tag,
                &["--keep-going", "--repetitions", "2"],
            );
            assert_eq!(code, 1, "{stderr}");
            for r in archive.unwrap()["results"].as_array().unwrap() {
                assert_eq!(
                    r["error"], "the server exited with code 3 during the run",
                    "{r}"
                );
                assert_eq!(r["server"]["exit_code"], 3);
            }
            assert_eq!(processes_tagged(&tag), 0);
        });
        scope.spawn(move || {
            // Ignores SIGTERM: killed after the grace, and the run says so (one run: each
            // stop, the verification's too, waits the 3 s grace).
            let tag = format!("emk-term-{pid}");
            let (code, archive, stderr) = matrix_against(
                dir,
                "tcp-ignore-term",
                &tag,
                &["--keep-going", "--repetitions", "1"],
            );
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
        });
    });
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
