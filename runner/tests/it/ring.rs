//! `serve --backend io-uring`: echomark's server on io_uring directly. Every protocol it
//! supports on one ring and on two, measured by `once --target` as another process; each
//! technique proved used by the ring's own counters, and each switch proved to turn its
//! technique off; injected faults still caught; what it cannot serve refused. io_uring is
//! required here: a kernel or sandbox that refuses rings fails these tests, it does not skip.
use crate::common::*;
use serde_json::Value;
use std::time::{Duration, Instant};

/// The protocols the backend serves, with the client's and the server's extra flags.
const SUPPORTED: [(&str, &[&str]); 5] = [
    ("tcp", &[]),
    ("tcp", &["--framing", "raw"]),
    ("udp", &[]),
    ("http", &[]),
    ("websocket", &[]),
];

const SHARED_1: [&str; 4] = ["--io-model", "shared", "--io-threads", "1"];
const SHARDED_2: [&str; 4] = ["--io-model", "sharded", "--io-threads", "2"];

/// Serves `protocol` on io-uring with `flags`, measures it once, and returns the client's
/// exit code, its metrics and the server's report.
fn measure(
    protocol: &str,
    flags: &[&str],
    client: &[&str],
) -> (i32, echomark_archive::Metrics, Value) {
    let mut args = vec!["--backend", "io-uring", "--protocol", protocol];
    args.extend_from_slice(flags);
    let server = Server::echomark(&args);
    assert!(holds_io_uring(server.child.id()), "{protocol} {flags:?}");
    let mut extra = vec!["--protocol", protocol];
    extra.extend_from_slice(client);
    let (code, m, _) = once(&server.address, &extra);
    (code, m, server.stop())
}

/// A clean run: the client passed with messages and no error counted, and the server
/// counted no content or disconnect error.
fn assert_clean(what: &str, code: i32, m: &echomark_archive::Metrics, report: &Value) {
    assert_eq!(code, 0, "{what}: {:?}", m.error);
    assert!(m.messages > 0, "{what}");
    assert_eq!(m.error_counters().total(), 0, "{what}");
    assert_eq!(report["content_errors"], 0, "{what}: {report}");
    assert_eq!(report["disconnect_errors"], 0, "{what}: {report}");
}

#[test]
fn io_uring_serves_every_supported_protocol_on_one_ring_and_on_two() {
    for (protocol, framing) in SUPPORTED {
        for model in [SHARED_1, SHARDED_2] {
            let flags: Vec<&str> = model.iter().chain(framing).copied().collect();
            let (code, m, report) = measure(protocol, &flags, framing);
            let what = format!("{protocol} {flags:?}");
            assert_clean(&what, code, &m, &report);
            if framing.is_empty() {
                assert_eq!(
                    report["measured_messages_received"].as_u64(),
                    Some(m.messages_sent),
                    "{what}: {report}"
                );
            } else {
                let bytes = report["raw_bytes_echoed"].as_u64().unwrap();
                assert!(bytes >= m.messages_sent * 1024, "{what}: {report}");
            }
            // The ring's own counters: multishot receives that stayed armed, their bytes in
            // buffers the kernel took from the provided ring, IO through registered files,
            // and fewer system calls than completions (one enter serves many).
            let ring = &report["ring"];
            let n = |k: &str| ring[k].as_u64().unwrap_or_else(|| panic!("{k}: {report}"));
            assert!(n("multishot_receives") > 0, "{what}: {ring}");
            assert!(
                n("ring_buffers_used") >= n("multishot_receives"),
                "{what}: {ring}"
            );
            assert!(n("registered_files") >= 1, "{what}: {ring}");
            assert!(
                n("enters") > 0 && n("enters") < n("completions"),
                "{what}: {ring}"
            );
        }
    }
}

#[test]
fn each_switch_turns_its_technique_off_and_the_counters_show_it() {
    let ring_of = |flags: &[&str]| {
        let all: Vec<&str> = SHARED_1.iter().chain(flags).copied().collect();
        let (code, m, report) = measure("tcp", &all, &[]);
        assert_eq!(code, 0, "{flags:?}: {:?}", m.error);
        assert_eq!(m.error_counters().total(), 0, "{flags:?}");
        (report["ring"].clone(), m.messages_sent)
    };
    let (ring, _) = ring_of(&["--uring-multishot", "off"]);
    assert_eq!(ring["multishot_receives"], 0, "{ring}");
    assert_eq!(ring["ring_buffers_used"], 0, "{ring}");
    assert!(
        ring["receives_armed"].as_u64().unwrap() > 2,
        "re-armed per read: {ring}"
    );

    let (ring, _) = ring_of(&["--uring-fixed-files", "off"]);
    assert_eq!(ring["registered_files"], 0, "{ring}");
    assert!(ring["multishot_receives"].as_u64().unwrap() > 0, "{ring}");

    // Without batching, every submission is entered on its own, besides the waits.
    let (ring, _) = ring_of(&["--uring-batched-submit", "off"]);
    assert!(
        ring["enters"].as_u64() >= ring["submissions"].as_u64(),
        "{ring}"
    );

    // The listening line records the tuning as it ran.
    let server = Server::echomark(&["--backend", "io-uring", "--uring-sqpoll"]);
    // The kernel thread takes its name (`iou-sqp-PID`) once it first runs; until then it
    // carries its ring thread's.
    let sqpoll = |names: &[(String, String)]| names.iter().any(|(n, _)| n.starts_with("iou-sqp-"));
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut names = threads(server.child.id());
    while !sqpoll(&names) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        names = threads(server.child.id());
    }
    assert!(
        sqpoll(&names),
        "an SQPOLL kernel thread in the process: {names:?}"
    );
    let (code, m, _) = once(&server.address, &["--protocol", "tcp"]);
    assert_eq!(code, 0, "{:?}", m.error);
    server.stop();
    let line = runner_listening(&["--backend", "io-uring", "--uring-sqpoll"]);
    assert_eq!(line["uring"]["sqpoll"], true, "{line}");
    assert_eq!(
        line["uring"]["defer_taskrun"], false,
        "not with SQPOLL: {line}"
    );
    assert_eq!(line["uring"]["multishot"], true, "{line}");
    let line = runner_listening(&["--backend", "tokio"]);
    assert!(line.get("uring").is_none(), "{line}");
}

/// The zero-copy echo (a message sent back from the provided buffer it arrived in) and the
/// copying one send the same bytes: a byte stream of every length through a raw echo, and
/// framed messages a client verifies, with the switch on and off. The ring's counter shows
/// which path ran.
#[test]
fn the_zero_copy_echo_sends_the_same_bytes_as_the_copying_one() {
    use std::io::{Read, Write};
    let stream: Vec<u8> = (0..200_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let mut echoed = Vec::new();
    for switch in ["on", "off"] {
        let server = Server::echomark(&[
            "--backend",
            "io-uring",
            "--protocol",
            "tcp",
            "--framing",
            "raw",
            "--uring-zero-copy",
            switch,
        ]);
        let mut socket = std::net::TcpStream::connect(&server.address).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut back = vec![0; stream.len()];
        // Writes of every size from 1 byte up, each read back before the next.
        let (mut at, mut size) = (0, 1);
        while at < stream.len() {
            let end = (at + size).min(stream.len());
            socket.write_all(&stream[at..end]).unwrap();
            socket.read_exact(&mut back[at..end]).unwrap();
            at = end;
            size = size * 3 / 2 + 1;
        }
        drop(socket);
        let (code, m, _) = once(&server.address, &["--protocol", "tcp"]);
        let report = server.stop();
        assert_eq!(code, 0, "{switch}: {:?}", m.error);
        assert_eq!(m.error_counters().total(), 0, "{switch}");
        let zero_copy = report["ring"]["zero_copy_sends"].as_u64().unwrap_or(0);
        if switch == "on" {
            assert!(zero_copy > 0, "zero-copy sends counted: {report}");
        } else {
            assert_eq!(zero_copy, 0, "none with the switch off: {report}");
        }
        assert_eq!(back, stream, "the raw echo with --uring-zero-copy {switch}");
        echoed.push(back);
        // Framed: every echo verified by the client, sent from the buffer where it can be.
        let (code, m, report) = measure("tcp", &["--uring-zero-copy", switch], &[]);
        assert_clean(&format!("framed, zero-copy {switch}"), code, &m, &report);
        let zero_copy = report["ring"]["zero_copy_sends"].as_u64().unwrap_or(0);
        assert_eq!(zero_copy > 0, switch == "on", "framed: {report}");
    }
    assert_eq!(echoed[0], echoed[1]);
}

/// Busy polling: each shard's loop looks for completions without waiting for them, on every
/// protocol the backend serves (and with SQPOLL on TCP and UDP, where the loop reads the
/// completion queue itself and enters only to wake the kernel thread). The ring's own
/// counter shows the looks; without the switch there are none.
#[test]
fn a_busy_polling_ring_looks_instead_of_waiting_and_still_echoes_every_protocol() {
    let busy: &[&str] = &["--uring-busy-poll"];
    let busy_sqpoll: &[&str] = &["--uring-busy-poll", "--uring-sqpoll"];
    for (protocol, framing) in SUPPORTED {
        let tunings: &[&[&str]] = if matches!(protocol, "tcp" | "udp") {
            &[busy, busy_sqpoll]
        } else {
            &[busy]
        };
        for tuning in tunings {
            let flags: Vec<&str> = SHARED_1
                .iter()
                .chain(framing)
                .chain(*tuning)
                .copied()
                .collect();
            let (code, m, report) = measure(protocol, &flags, framing);
            let what = format!("{protocol} {flags:?}");
            assert_clean(&what, code, &m, &report);
            let ring = &report["ring"];
            let looks = ring["busy_polls"].as_u64().unwrap_or(0);
            let enters = ring["enters"].as_u64().unwrap();
            assert!(looks > 0, "{what}: {ring}");
            if tuning.contains(&"--uring-sqpoll") {
                // The loop enters only to wake the kernel thread for what it queued since the
                // last wake, however long the thread takes to be scheduled: at most once per
                // submission, and hardly ever beside its looks.
                let submissions = ring["submissions"].as_u64().unwrap();
                assert!(enters <= submissions, "{what}: {ring}");
                assert!(enters * 100 < looks, "{what}: {ring}");
            } else {
                assert!(enters >= looks, "every look is an enter: {what}: {ring}");
            }
        }
    }
    // Idle, a busy loop keeps looking (thousands of times in 200 ms, however little CPU it
    // gets), and a waiting loop sleeps through (a few enters, no looks).
    let idle = |tuning: &[&str]| {
        let mut args = vec!["--backend", "io-uring"];
        args.extend_from_slice(tuning);
        let server = Server::echomark(&args);
        std::thread::sleep(Duration::from_millis(200));
        server.stop()["ring"].clone()
    };
    let ring = idle(busy);
    assert!(ring["busy_polls"].as_u64().unwrap() > 1000, "{ring}");
    let ring = idle(&[]);
    assert!(ring.get("busy_polls").is_none(), "{ring}");
    assert!(ring["enters"].as_u64().unwrap() < 100, "{ring}");
    let line = runner_listening(&["--backend", "io-uring", "--uring-busy-poll"]);
    assert_eq!(line["uring"]["busy_poll"], true, "{line}");
}

#[test]
fn injected_corruption_and_reordering_are_caught_by_the_client() {
    for protocol in ["tcp", "udp", "http", "websocket"] {
        for (fault, counter) in [("corrupt", "content_errors"), ("reorder", "order_errors")] {
            let flags = ["--inject-fault", fault];
            let (code, m, _) = measure(protocol, &flags, &[]);
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
fn pinned_shards_run_on_their_cpus() {
    let server = Server::echomark(&[
        "--backend",
        "io-uring",
        "--io-model",
        "sharded",
        "--io-threads",
        "2",
        "--server-cpus",
        "0",
    ]);
    let rings: Vec<(String, String)> = threads(server.child.id())
        .into_iter()
        .filter(|(name, _)| name.starts_with("echomark-ring"))
        .collect();
    assert_eq!(rings.len(), 2, "one thread per ring: {rings:?}");
    for (name, allowed) in rings {
        assert_eq!(allowed, "0", "{name}");
    }
}

#[test]
fn what_io_uring_cannot_serve_is_a_usage_error() {
    for (args, says) in [
        (
            vec!["--protocol", "tcps"],
            "tcps is not supported by --backend io-uring",
        ),
        (
            vec!["--protocol", "wss"],
            "wss is not supported by --backend io-uring",
        ),
        (
            vec!["--protocol", "https"],
            "https is not supported by --backend io-uring",
        ),
        (vec!["--io-threads", "2"], "one ring per thread"),
        (
            vec!["--protocol", "udp", "--udp-batch", "16"],
            "--udp-batch is not supported by --backend io-uring",
        ),
        (vec!["--inject-fault", "stall"], "stall is not supported"),
    ] {
        let mut all = vec!["serve", "--backend", "io-uring"];
        all.extend_from_slice(&args);
        let out = runner(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    // What each command's --backend accepts comes from the backends' declared roles.
    let out = runner(&["once", "--backend", "nginx"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("[possible values: tokio, monoio, io-uring]"),
        "{stderr}"
    );
    let out = runner(&["serve", "--backend", "nginx"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("[possible values: tokio, monoio, io-uring]"),
        "{stderr}"
    );
    let out = runner(&["serve", "--backend", "tokio", "--uring-multishot", "off"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("for --backend io-uring"));
}

/// The listening line of a `serve` with `args`, which is then stopped.
fn runner_listening(args: &[&str]) -> Value {
    let mut c = std::process::Command::new(RUNNER);
    c.arg("serve").args(args);
    let server = Server::start(c, |line| line.to_string());
    let line: Value = serde_json::from_str(&server.address).unwrap();
    server.stop();
    line
}

/// One client for the io_uring server (as it comes, and busy polling) and the tokio one,
/// interleaved by one matrix: every io-uring run records its rings' counters from the report
/// `serve` printed, and the dataset reads strictly; the tokio server's runs have none. The
/// overview says which server busy-polled, in both languages, and of no other.
#[test]
fn a_matrix_records_each_io_uring_runs_ring_counters() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("servers");
    let serve = |backend: &str| {
        format!("{RUNNER} serve --protocol {{protocol}} --listen 127.0.0.1:{{port}} --backend {backend}")
    };
    let tokio = serve("tokio");
    let args = [
        "--protocols",
        "tcp,udp",
        "--windows",
        "4",
        "--repetitions",
        "1",
        "--shuffle",
        "3",
        "--server-name",
        "serve-io-uring",
        "--server-cmd",
        &serve("io-uring"),
        "--server-name",
        "serve-busy",
        "--server-cmd",
        &serve("io-uring --uring-busy-poll"),
        "--server-name",
        "serve-tokio",
    ];
    let (code, _, stderr) = matrix_with_server(&out, &tokio, &args);
    assert_eq!(code, 0, "{stderr}");
    // The generator reads the dataset strictly: the counters are part of the contract.
    let datasets = echomark::read::load(std::slice::from_ref(&out)).expect("the dataset loads");
    assert!(
        datasets[0].runs.iter().all(|r| r.passed),
        "every run passed"
    );
    for (name, has_ring) in [
        ("serve-io-uring", true),
        ("serve-busy", true),
        ("serve-tokio", false),
    ] {
        let path = out.join(format!("{name}.json"));
        let archive: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for r in archive["results"].as_array().unwrap() {
            let ring = &r["server"]["ring"];
            assert_eq!(ring.is_object(), has_ring, "{name}: {}", r["server"]);
            if has_ring {
                let echoed = r["metrics"]["messages"].as_u64().unwrap();
                assert!(ring["multishot_receives"].as_u64().unwrap() > 0, "{ring}");
                let enters = ring["enters"].as_u64().unwrap();
                if name == "serve-busy" {
                    // Every look for completions is an enter when the loop busy-polls.
                    let looks = ring["busy_polls"].as_u64().unwrap();
                    assert!(looks > 0 && enters >= looks, "{ring}");
                } else {
                    assert!(
                        enters > 0 && enters < 2 * echoed,
                        "{ring} for {echoed} echoes"
                    );
                    assert!(ring.get("busy_polls").is_none(), "{ring}");
                }
            }
        }
    }
    let page = rendered_pages(&datasets);
    for (lang, busy) in [
        ("en", "event loops never slept (`--uring-busy-poll`)"),
        ("zh", "的事件循环从不休眠（`--uring-busy-poll`）"),
    ] {
        let page = page(&format!("{lang}/servers/overview.md"));
        // Said in the busy server's paragraphs (the answer and the backends section), and in
        // no other server's.
        let said: Vec<&str> = page.lines().filter(|l| l.contains(busy)).collect();
        assert!(!said.is_empty(), "{lang}: {page}");
        for line in said {
            assert!(
                line.contains("serve-busy") && !line.contains("serve-io-uring"),
                "{lang}: {line}"
            );
        }
    }
}

#[test]
fn servers_that_count_their_system_calls_are_compared_per_echo_on_the_overview() {
    if let Err(e) = echomark_runner::instruments::syscalls::SyscallCounter::open() {
        return echomark::skip::because(&e.to_string());
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("counted-servers");
    let serve = |backend: &str| {
        format!(
            "{RUNNER} serve --protocol {{protocol}} --listen 127.0.0.1:{{port}} --backend {backend} --count-syscalls"
        )
    };
    let tokio = serve("tokio");
    let args = [
        "--protocols",
        "tcp",
        "--windows",
        "1,16",
        "--repetitions",
        "1",
        "--server-name",
        "serve-io-uring",
        "--server-cmd",
        &serve("io-uring"),
        "--server-name",
        "serve-tokio",
    ];
    let (code, _, stderr) = matrix_with_server(&out, &tokio, &args);
    assert_eq!(code, 0, "{stderr}");
    for name in ["serve-io-uring", "serve-tokio"] {
        let path = out.join(format!("{name}.json"));
        let archive: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for r in archive["results"].as_array().unwrap() {
            let echoes = r["metrics"]["messages_sent"].as_u64().unwrap()
                + r["metrics"]["warmup_messages"].as_u64().unwrap();
            let calls = r["server"]["syscalls"].as_u64().expect("counted");
            // On epoll every message in flight alone costs the server a read and a write;
            // the io-uring server's own count of its enters is among its calls.
            if name == "serve-tokio" && r["metrics"]["window"] == 1 {
                assert!(calls >= 2 * echoes, "{name}: {calls} for {echoes} echoes");
            }
            if let Some(enters) = r["server"]["ring"]["enters"].as_u64() {
                assert!(calls >= enters, "{name}: {calls} < {enters} enters");
            }
        }
    }
    let datasets = echomark::read::load(std::slice::from_ref(&out)).expect("the dataset loads");
    assert!(datasets[0]
        .runs
        .iter()
        .all(|r| r.instruments.server_syscalls_per_echo.is_some()));
    let page = rendered_pages(&datasets);
    for (lang, says) in [
        ("en", "for each server's process over its whole run"),
        ("zh", "由内核统计每个服务端进程整个运行期间的调用"),
    ] {
        let page = page(&format!("{lang}/counted-servers/overview.md"));
        assert!(page.contains(says), "{lang}: {page}");
    }
}
