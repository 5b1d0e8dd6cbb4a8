//! One client for every server: the same client (`once --target`, tokio, one runtime on one
//! thread, its own process) against `serve` on each backend, and against the io_uring
//! backend with each of its techniques switched off in turn (and the two that are off by
//! default, SQPOLL and busy polling, switched on), for 1 KiB messages at 1 × 1
//! (servers on one thread) and 16 × 16 (servers on two shards), TCP and UDP. The 1 × 1 rows
//! also run the blocking floor of two processes (`calibrate --serve` and `--target`).
//!
//! Every round runs every server on a load back to back, in reversed order every other
//! round; the table shows medians, min–max over the rounds, the ratio to the blocking floor
//! (1 × 1), the ratio to the tokio server
//! and a verdict from the ranges, the server's `io_uring_enter` calls per echo (from its own
//! report) and the CPU time per echo of the server (all its threads, an SQPOLL thread
//! included) and of the client.
//!
//! Run with `scripts/bench-echo-core` (which runs it after the in-process report) or alone
//! with `scripts/bench-echo-core servers`. Environment: `ROUNDS` (default 3), `SECONDS`
//! (default 1); `CLIENT_CPUS` and `SERVER_CPUS` pin the two sides (default: the scheduler
//! places them).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

mod common;
use common::{bin_dir, host, json, median};

struct Load {
    protocol: &'static str,
    clients: u32,
    window: u32,
    /// The servers' IO model flags.
    model: &'static [&'static str],
}

const LOADS: [Load; 4] = [
    Load {
        protocol: "tcp",
        clients: 1,
        window: 1,
        model: &["--io-model", "shared", "--io-threads", "1"],
    },
    Load {
        protocol: "udp",
        clients: 1,
        window: 1,
        model: &["--io-model", "shared", "--io-threads", "1"],
    },
    Load {
        protocol: "tcp",
        clients: 16,
        window: 16,
        model: &["--io-model", "sharded", "--io-threads", "2"],
    },
    Load {
        protocol: "udp",
        clients: 16,
        window: 16,
        model: &["--io-model", "sharded", "--io-threads", "2"],
    },
];

/// A server: its label and `serve` flags; `None` is the blocking floor.
const SERVERS: [(&str, Option<&[&str]>); 12] = [
    ("blocking floor (calibrate, 2 processes)", None),
    ("tokio", Some(&["--backend", "tokio"])),
    ("monoio", Some(&["--backend", "monoio"])),
    ("io-uring (all on)", Some(&["--backend", "io-uring"])),
    (
        "io-uring, multishot off",
        Some(&["--backend", "io-uring", "--uring-multishot", "off"]),
    ),
    (
        "io-uring, zero-copy echo off",
        Some(&["--backend", "io-uring", "--uring-zero-copy", "off"]),
    ),
    (
        "io-uring, fixed files off",
        Some(&["--backend", "io-uring", "--uring-fixed-files", "off"]),
    ),
    (
        "io-uring, batched submit off",
        Some(&["--backend", "io-uring", "--uring-batched-submit", "off"]),
    ),
    (
        "io-uring, defer taskrun off",
        Some(&["--backend", "io-uring", "--uring-defer-taskrun", "off"]),
    ),
    (
        "io-uring + SQPOLL",
        Some(&["--backend", "io-uring", "--uring-sqpoll"]),
    ),
    (
        "io-uring + busy poll",
        Some(&["--backend", "io-uring", "--uring-busy-poll"]),
    ),
    (
        "io-uring + busy poll + SQPOLL",
        Some(&[
            "--backend",
            "io-uring",
            "--uring-busy-poll",
            "--uring-sqpoll",
        ]),
    ),
];

/// What one measurement of one server gave.
#[derive(Default, Clone)]
struct Sample {
    rate: f64,
    enters_per_echo: Option<f64>,
    server_cpu_us: Option<f64>,
    client_cpu_us: Option<f64>,
}

fn main() {
    let rounds: usize = env_or("ROUNDS", 3);
    let seconds: String = env_or("SECONDS", "1".to_string());
    let runner = bin_dir().join("echomark-runner");
    let client_cpus = std::env::var("CLIENT_CPUS").ok();
    let server_cpus = std::env::var("SERVER_CPUS").ok();
    let mut samples = vec![vec![Vec::<Sample>::new(); SERVERS.len()]; LOADS.len()];
    for round in 1..=rounds {
        eprintln!("servers: round {round}/{rounds}");
        for (l, load) in LOADS.iter().enumerate() {
            let mut order: Vec<usize> = (0..SERVERS.len())
                .filter(|&s| SERVERS[s].1.is_some() || load.clients == 1)
                .collect();
            if round % 2 == 0 {
                order.reverse();
            }
            for s in order {
                let sample = match SERVERS[s].1 {
                    None => floor(&runner, load, &seconds),
                    Some(flags) => served(
                        &runner,
                        load,
                        flags,
                        &seconds,
                        client_cpus.as_deref(),
                        server_cpus.as_deref(),
                    ),
                };
                samples[l][s].push(sample);
            }
        }
    }
    println!(
        "one client for every server, 1 KiB, {rounds} rounds × {seconds} s, medians, on {}; \
         client: once --target, tokio, shared 1 ({}), servers: serve ({})\n",
        host(),
        client_cpus.map_or("placed by the scheduler".into(), |c| format!("CPUs {c}")),
        server_cpus.map_or("placed by the scheduler".into(), |c| format!("CPUs {c}")),
    );
    for (l, load) in LOADS.iter().enumerate() {
        print_load(load, &samples[l]);
    }
    println!(
        "\n\"of the floor\" divides each median by the blocking floor's (1 × 1 only); \
         \"vs tokio\" divides each median by the tokio server's; the verdict compares min–max \
         ranges (apart: faster or slower; overlapping: no distinguishable difference). \
         Enters per echo: the io_uring server's io_uring_enter calls over the messages it \
         echoed. CPU per echo: user + system time over echoes (the server's from /proc, all \
         its threads; the client's from its report)."
    );
}

fn print_load(load: &Load, samples: &[Vec<Sample>]) {
    println!(
        "\n{} {} × {}, servers {}\n",
        load.protocol,
        load.clients,
        load.window,
        load.model[1..].join(" ").replace("--io-threads ", "")
    );
    println!(
        "| server | rt/s (min–max) | of the floor | vs tokio | verdict vs tokio | enters per echo | server CPU µs per echo | client CPU µs per echo |"
    );
    println!("| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |");
    let floor = (!samples[0].is_empty()).then(|| median(rates(&samples[0])));
    let tokio = &samples[1];
    let (tokio_rate, tokio_range) = (median(rates(tokio)), range(tokio));
    for (s, (label, _)) in SERVERS.iter().enumerate() {
        let runs = &samples[s];
        if runs.is_empty() {
            continue;
        }
        let rate = median(rates(runs));
        let (lo, hi) = range(runs);
        let verdict = if s == 1 {
            String::new()
        } else if lo > tokio_range.1 {
            "faster".into()
        } else if hi < tokio_range.0 {
            "slower".into()
        } else {
            "no distinguishable difference".into()
        };
        let of = |f: fn(&Sample) -> Option<f64>, digits: usize| {
            let v: Vec<f64> = runs.iter().filter_map(f).collect();
            if v.is_empty() {
                String::new()
            } else {
                format!("{:.*}", digits, median(v))
            }
        };
        let of_floor = floor.map_or(String::new(), |f| format!("{:.2}", rate / f));
        println!(
            "| {label} | {rate:.0} ({lo:.0}–{hi:.0}) | {of_floor} | {:.2} | {verdict} | {} | {} | {} |",
            rate / tokio_rate,
            of(|x| x.enters_per_echo, 3),
            of(|x| x.server_cpu_us, 2),
            of(|x| x.client_cpu_us, 2),
        );
    }
}

/// The blocking floor of two processes: `calibrate --serve` and `calibrate --target`.
fn floor(runner: &Path, load: &Load, seconds: &str) -> Sample {
    let mut server = start(Command::new(runner).args([
        "calibrate",
        "--protocol",
        load.protocol,
        "--serve",
        "127.0.0.1:0",
    ]));
    let address = listening(&mut server);
    let v = json(Command::new(runner).args([
        "calibrate",
        "--protocol",
        load.protocol,
        "--payload",
        "1024",
        "--seconds",
        seconds,
        "--target",
        &address,
    ]));
    stop(server);
    Sample {
        rate: v["roundtrips_per_second"].as_f64().expect("floor rate"),
        ..Sample::default()
    }
}

/// `once --target` against one `serve` with `flags`.
fn served(
    runner: &Path,
    load: &Load,
    flags: &[&str],
    seconds: &str,
    client_cpus: Option<&str>,
    server_cpus: Option<&str>,
) -> Sample {
    let mut serve = Command::new(runner);
    serve
        .args([
            "serve",
            "--protocol",
            load.protocol,
            "--listen",
            "127.0.0.1:0",
        ])
        .args(load.model)
        .args(flags);
    if let Some(cpus) = server_cpus {
        serve.args(["--server-cpus", cpus]);
    }
    let mut server = start(&mut serve);
    let address = listening(&mut server);
    let pid = server.id();
    let (clients, window) = (load.clients.to_string(), load.window.to_string());
    let mut once = Command::new(runner);
    once.args([
        "once",
        "--protocol",
        load.protocol,
        "--payload",
        "1024",
        "--clients",
        &clients,
        "--window",
        &window,
        "--io-model",
        "shared",
        "--io-threads",
        "1",
        "--seconds",
        seconds,
        "--warmup",
        "0.25",
        "--target",
        &address,
    ]);
    if let Some(cpus) = client_cpus {
        once.args(["--client-cpus", cpus]);
    }
    let m = json(&mut once);
    let server_cpu = cpu_seconds(pid);
    let report = stop(server);
    assert!(
        m["ok"].as_bool() == Some(true),
        "{flags:?} {}: {}",
        load.protocol,
        m["error"]
    );
    let echoes = report["warmup_messages_received"].as_f64().unwrap_or(0.0)
        + report["measured_messages_received"].as_f64().unwrap_or(0.0);
    let client_echoes =
        m["messages"].as_f64().unwrap_or(0.0) + m["warmup_messages"].as_f64().unwrap_or(0.0);
    Sample {
        rate: m["roundtrips_per_second"].as_f64().expect("rate"),
        enters_per_echo: report["ring"]["enters"]
            .as_f64()
            .map(|e| e / echoes.max(1.0)),
        server_cpu_us: server_cpu.map(|c| c * 1e6 / echoes.max(1.0)),
        client_cpu_us: m["cpu_seconds"]
            .as_f64()
            .map(|c| c * 1e6 / client_echoes.max(1.0)),
    }
}

fn start(command: &mut Command) -> Child {
    command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("server starts")
}

/// The address in the server's first line.
fn listening(server: &mut Child) -> String {
    let mut line = String::new();
    let stdout = server.stdout.as_mut().expect("stdout");
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("first line");
    let v: Value = serde_json::from_str(&line).expect("listening line");
    v["listening"].as_str().expect("listening").to_string()
}

/// SIGTERM, then the last line the server printed (its report, for `serve`).
fn stop(mut server: Child) -> Value {
    // SAFETY: kill(2) on our own child's pid with a valid signal.
    unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
    let mut out = String::new();
    if let Some(mut stdout) = server.stdout.take() {
        let _ = std::io::Read::read_to_string(&mut stdout, &mut out);
    }
    let _ = server.wait();
    out.lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or(Value::Null)
}

/// User + system CPU seconds of process `pid` so far, all its threads (`/proc/PID/stat`).
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Some(ticks / hz)
}

fn rates(runs: &[Sample]) -> Vec<f64> {
    runs.iter().map(|s| s.rate).collect()
}

fn range(runs: &[Sample]) -> (f64, f64) {
    runs.iter().fold((f64::MAX, f64::MIN), |(lo, hi), s| {
        (lo.min(s.rate), hi.max(s.rate))
    })
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
