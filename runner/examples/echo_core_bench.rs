//! The echo core's performance report: every figure side by side, from one run.
//!
//! Prints, for 1 KiB messages: the blocking loopback floor (`calibrate`), a bare tokio
//! ping-pong, the echo core at 1 client / window 1, and 16 clients / window 16 on shared 2
//! and sharded 2, each with latency recording on and off, then the protocols (the seven and QUIC) side by
//! side at 16 clients / window 16 on shared 2 with their ratio to TCP, and QUIC against what
//! it stands among (TCP+TLS, UDP, a stream per message, the full handshake). Every case runs
//! `ROUNDS` times, interleaved so that machine noise spreads over all of them, each beside
//! its twin with the other latency setting; the table shows medians, and the spread
//! (min–max over the rounds) of the seven-protocol rows. Then the two backends side by side
//! (tokio on epoll, monoio on io_uring) on the models both can run: 1 × 1 on one runtime
//! against the floor, 16 × 16 on two shards for TCP and UDP, and the seven protocols at
//! 16 × 16 on two shards, beside echomark's own io_uring event loop (`--backend io-uring`,
//! each ring carrying the clients and the server they measure) where it runs them. Then each switch against the same case without it: batched UDP
//! (`--udp-batch 16`, and with the kernel's segmentation offload, `--udp-gso`), every
//! runtime thread pinned to one CPU (`--client-cpus`), and the server on runtimes of its own
//! on another CPU (`--client-cpus FIRST --server-cpus LAST`). Last, a
//! fairness line: 1,024 TCP clients × window 1 on one thread, whose p99 / p50 shows whether
//! any client starves.
//!
//! Run with `scripts/bench-echo-core` (it builds the binaries first).
//! Environment: `ROUNDS` (default 3), `SECONDS` (default 1).

use std::path::Path;
use std::process::Command;

use echomark_archive::Metrics;

mod common;
use common::{bin_dir, host, json, median, min_max};

struct Case {
    label: String,
    backend: &'static str,
    args: Vec<String>,
    protocol: &'static str,
    /// clients × window × payload, for the RSS bound.
    outstanding: f64,
    rates: Vec<f64>,
    p99: Vec<f64>,
    rss: Vec<f64>,
}

fn main() {
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let seconds = std::env::var("SECONDS").unwrap_or_else(|_| "1".into());
    let dir = bin_dir();
    let runner = dir.join("echomark-runner");
    let bare = dir.join("examples").join("bare_pingpong");

    let mut cases = Vec::new();
    for latency in [true, false] {
        for (protocol, clients, window, model, threads) in [
            ("tcp", 1, 1, "shared", 1),
            ("udp", 1, 1, "shared", 1),
            ("tcp", 16, 16, "shared", 2),
            ("tcp", 16, 16, "sharded", 2),
            ("udp", 16, 16, "shared", 2),
            ("udp", 16, 16, "sharded", 2),
            ("http", 1, 1, "shared", 1),
            ("websocket", 1, 1, "shared", 1),
            ("websocket", 16, 16, "shared", 2),
            ("tcps", 16, 16, "shared", 2),
            ("wss", 16, 16, "shared", 2),
            ("http", 16, 16, "shared", 2),
            ("https", 16, 16, "shared", 2),
            ("quic", 1, 1, "shared", 1),
            ("quic", 16, 16, "shared", 2),
            ("tcps", 1, 1, "shared", 1),
            ("quic-datagram", 1, 1, "shared", 1),
            ("quic-datagram", 16, 16, "shared", 2),
            ("quic-streams", 1, 1, "shared", 1),
            ("quic-handshake", 1, 1, "shared", 1),
            ("quic-0rtt", 1, 1, "shared", 1),
        ] {
            let mut args: Vec<String> = format!(
                "once --protocol {protocol} --payload 1024 --clients {clients} --window {window} \
                 --io-model {model} --io-threads {threads} --seconds {seconds} --warmup 0.25"
            )
            .split_whitespace()
            .map(String::from)
            .collect();
            if !latency {
                args.push("--no-latency".into());
            }
            cases.push(Case {
                backend: "tokio",
                label: format!(
                    "{protocol} {clients}×{window} {model} {threads}{}",
                    if latency { "" } else { " (no latency)" }
                ),
                args,
                protocol,
                outstanding: (clients * window * 1024) as f64,
                rates: vec![],
                p99: vec![],
                rss: vec![],
            });
        }
    }
    // Both backends on the models both can run, latency recorded.
    let mut backend_cases = Vec::new();
    for (protocol, clients, window, model, threads) in [
        ("tcp", 1, 1, "shared", 1),
        ("udp", 1, 1, "shared", 1),
        ("tcp", 16, 16, "sharded", 2),
        ("udp", 16, 16, "sharded", 2),
        ("websocket", 16, 16, "sharded", 2),
        ("tcps", 16, 16, "sharded", 2),
        ("wss", 16, 16, "sharded", 2),
        ("http", 16, 16, "sharded", 2),
        ("https", 16, 16, "sharded", 2),
    ] {
        for backend in ["tokio", "monoio"] {
            backend_cases.push(Case {
                label: format!("{protocol} {clients}×{window} {model} {threads}"),
                backend,
                args: format!(
                    "once --backend {backend} --protocol {protocol} --payload 1024 \
                     --clients {clients} --window {window} --io-model {model} \
                     --io-threads {threads} --seconds {seconds} --warmup 0.25"
                )
                .split_whitespace()
                .map(String::from)
                .collect(),
                protocol,
                outstanding: (clients * window * 1024) as f64,
                rates: vec![],
                p99: vec![],
                rss: vec![],
            });
        }
    }
    // echomark's own io_uring event loop (client and server on each ring), on the same
    // loads, for the backends table.
    let mut ring_cases: Vec<Case> = backend_cases
        .iter()
        .filter(|c| c.backend == "tokio" && !matches!(c.protocol, "tcps" | "wss" | "https"))
        .map(|c| Case {
            label: c.label.clone(),
            backend: "io-uring",
            args: c
                .args
                .iter()
                .map(|a| {
                    if a == "tokio" {
                        "io-uring".into()
                    } else {
                        a.clone()
                    }
                })
                .collect(),
            protocol: c.protocol,
            outstanding: c.outstanding,
            rates: vec![],
            p99: vec![],
            rss: vec![],
        })
        .collect();
    // Each switch against the same case without it, back to back: batched UDP
    // (`--udp-batch 16`, with and without `--udp-gso`) and placement (every runtime thread
    // pinned to the last CPU, or the server apart on it).
    let allowed = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .and_then(|l| l.trim().parse::<echomark_archive::cpus::CpuList>().ok())
        });
    let cpu = |pick: fn(&[usize]) -> Option<&usize>| {
        allowed
            .as_ref()
            .and_then(|l| pick(l.cpus()).copied())
            .unwrap_or(0)
            .to_string()
    };
    let (first_cpu, last_cpu) = (cpu(<[usize]>::first), cpu(<[usize]>::last));
    let mut switch_cases = Vec::new();
    for (protocol, clients, window, model, threads, switch) in [
        ("udp", 16, 16, "sharded", 2, "--udp-batch 16"),
        ("udp", 16, 16, "sharded", 2, "--udp-batch 16 --udp-gso"),
        ("udp", 16, 1, "shared", 1, "--udp-batch 16"),
        ("udp", 16, 1, "shared", 1, "--udp-batch 16 --udp-gso"),
        ("tcp", 1, 1, "shared", 1, "--client-cpus LAST"),
        ("udp", 1, 1, "shared", 1, "--client-cpus LAST"),
        (
            "tcp",
            1,
            1,
            "shared",
            1,
            "--client-cpus FIRST --server-cpus LAST",
        ),
        (
            "tcp",
            16,
            16,
            "sharded",
            2,
            "--client-cpus FIRST --server-cpus LAST",
        ),
        ("quic", 16, 16, "shared", 2, "--quic-gso off"),
        ("quic-datagram", 16, 16, "shared", 2, "--quic-gso off"),
        (
            "quic-datagram",
            16,
            16,
            "shared",
            2,
            "--quic-congestion bbr",
        ),
    ] {
        for on in [false, true] {
            let mut args: Vec<String> = format!(
                "once --protocol {protocol} --payload 1024 --clients {clients} --window {window} \
                 --io-model {model} --io-threads {threads} --seconds {seconds} --warmup 0.25"
            )
            .split_whitespace()
            .map(String::from)
            .collect();
            if on {
                args.extend(
                    switch
                        .replace("FIRST", &first_cpu)
                        .replace("LAST", &last_cpu)
                        .split_whitespace()
                        .map(String::from),
                );
            }
            switch_cases.push(Case {
                label: format!("{protocol} {clients}×{window} {model} {threads}: {switch}"),
                backend: "tokio",
                args,
                protocol,
                outstanding: (clients * window * 1024) as f64,
                rates: vec![],
                p99: vec![],
                rss: vec![],
            });
        }
    }
    let (mut floor, mut bare_rates) = ([vec![], vec![]], [vec![], vec![]]);
    // Fairness at scale: 1,024 TCP clients × window 1 on one thread; a starved client shows
    // as a p99 far above the p50 (rt/s, p50, p99, p99.9 per round).
    let mut crowd: [Vec<f64>; 4] = Default::default();
    for round in 1..=rounds {
        eprintln!("round {round}/{rounds}");
        let m: Metrics = serde_json::from_value(json(Command::new(&runner).args([
            "once",
            "--protocol",
            "tcp",
            "--clients",
            "1024",
            "--window",
            "1",
            "--io-model",
            "sharded",
            "--io-threads",
            "1",
            "--seconds",
            &seconds,
        ])))
        .expect("metrics");
        assert!(m.ok, "1,024 clients: {:?}", m.error);
        for (v, x) in crowd.iter_mut().zip([
            m.roundtrips_per_second,
            m.rtt_p50_us,
            m.rtt_p99_us,
            m.rtt_p999_us,
        ]) {
            v.push(x);
        }
        let c = json(Command::new(&runner).args([
            "calibrate",
            "--payload",
            "1024",
            "--seconds",
            &seconds,
        ]));
        let b = json(Command::new(&bare).args(["1024", &seconds]));
        for (i, p) in ["tcp", "udp"].iter().enumerate() {
            floor[i].push(c[p]["roundtrips_per_second"].as_f64().unwrap());
            bare_rates[i].push(b[p]["roundtrips_per_second"].as_f64().unwrap());
        }
        // Each case runs right beside its twin with the other latency setting, first or
        // second in alternate rounds, so that slow drift of the machine does not pass for
        // the cost of recording.
        let half = cases.len() / 2;
        let order: Vec<usize> = (0..half)
            .flat_map(|k| {
                if round % 2 == 1 {
                    [k, k + half]
                } else {
                    [k + half, k]
                }
            })
            .collect();
        for i in order {
            measure(&runner, &mut cases[i]);
        }
        // The io_uring cases first or last in alternate rounds, right beside the floor.
        if round % 2 == 1 {
            ring_cases.iter_mut().for_each(|c| measure(&runner, c));
        }
        // The two backends of a case (a switch off and on) run back to back, in alternate
        // order each round.
        for pair in backend_cases
            .chunks_mut(2)
            .chain(switch_cases.chunks_mut(2))
        {
            if round % 2 == 0 {
                pair.reverse();
            }
            for case in pair.iter_mut() {
                measure(&runner, case);
            }
            if round % 2 == 0 {
                pair.reverse();
            }
        }
        if round % 2 == 0 {
            ring_cases.iter_mut().for_each(|c| measure(&runner, c));
        }
    }
    let floor = [median(floor[0].clone()), median(floor[1].clone())];
    let bare = [median(bare_rates[0].clone()), median(bare_rates[1].clone())];
    // HTTP, WebSocket and TLS ride on TCP, so their floor and bare reference are TCP's; QUIC, a
    // reliable stream too, is set against the same.
    let idx = |p: &str| usize::from(p == "udp");
    println!(
        "echo core, 1 KiB payload, {rounds} rounds × {seconds} s, medians, on {}\n",
        host()
    );
    println!("| case | round trips/s | p99 µs | vs floor | vs bare tokio | latency on vs off | peak RSS MiB (measured) | RSS bound MiB (computed) |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (i, p) in ["tcp", "udp"].iter().enumerate() {
        println!(
            "| {p} calibrate floor (blocking, 1 thread) | {:.0} | | 100.0% | | | | |",
            floor[i]
        );
        println!(
            "| {p} bare tokio ping-pong 1×1 | {:.0} | | {:.1}% | 100.0% | | | |",
            bare[i],
            100.0 * bare[i] / floor[i]
        );
    }
    let half = cases.len() / 2;
    for (k, case) in cases.iter().enumerate() {
        let rate = median(case.rates.clone());
        let single = case.label.contains(" 1×1 ");
        let vs = |base: f64| {
            if single {
                format!("{:.1}%", 100.0 * rate / base)
            } else {
                String::new()
            }
        };
        let cost = if k < half {
            let off = median(cases[k + half].rates.clone());
            format!("{:+.1}%", 100.0 * (rate - off) / off)
        } else {
            String::new()
        };
        let p99 = if k < half {
            format!("{:.1}", median(case.p99.clone()))
        } else {
            String::new()
        };
        println!(
            "| {} | {:.0} | {} | {} | {} | {} | {:.1} | {:.1} |",
            case.label,
            rate,
            p99,
            vs(floor[idx(case.protocol)]),
            vs(bare[idx(case.protocol)]),
            cost,
            median(case.rss.clone()) / 1_048_576.0,
            (2.0 * case.outstanding + 64.0 * 1_048_576.0) / 1_048_576.0,
        );
    }
    print_protocols(&cases[..half]);
    print_quic(&cases[..half]);
    print_backends(&backend_cases, &ring_cases, floor);
    print_switches(&switch_cases);
    let [rate, p50, p99, p999] = crowd.map(median);
    println!(
        "\n1,024 TCP clients × window 1, 1 KiB, sharded 1: {rate:.0} rt/s, p50 {p50:.0} µs, \
         p99 {p99:.0} µs, p99.9 {p999:.0} µs (p99 / p50 = {:.1})",
        p99 / p50
    );
    // The noise of this run, measured: the widest min–max spread of a case over its rounds.
    let spread = cases
        .iter()
        .filter(|c| c.rates.len() > 1)
        .map(|c| {
            let (lo, hi) = min_max(&c.rates);
            (hi - lo) / median(c.rates.clone()) * 100.0
        })
        .fold(0.0, f64::max);
    println!(
        "\n\"latency on vs off\" is the throughput with every round trip recorded relative to none \
         recorded (negative = recording costs). The RSS bound is computed (2 × clients × window × \
         payload + 64 MiB), not measured. In this run a case's rounds spread by up to {spread:.1}% \
         (max − min over median); read gaps smaller than that as noise, or raise ROUNDS."
    );
}

fn measure(runner: &Path, case: &mut Case) {
    let v = json(Command::new(runner).args(&case.args));
    let m: Metrics = serde_json::from_value(v).expect("metrics");
    assert!(m.ok, "{} {}: {:?}", case.backend, case.label, m.error);
    case.rates.push(m.roundtrips_per_second);
    case.p99.push(m.rtt_p99_us);
    case.rss.push(m.peak_rss_bytes.unwrap_or(0) as f64);
}

/// tokio, monoio and echomark's io_uring event loop side by side: medians, the ratios to
/// tokio, and the 1 × 1 rows against the blocking floor of their transport.
fn print_backends(cases: &[Case], rings: &[Case], floor: [f64; 2]) {
    println!(
        "\nbackends side by side, 1 KiB, latency recorded (tokio: epoll, monoio: io_uring \
         through its runtime, io-uring: echomark's own event loop, client and server on each \
         ring)\n"
    );
    println!(
        "| case | tokio rt/s | monoio rt/s | io-uring rt/s | monoio / tokio | io-uring / tokio | \
         tokio vs floor | monoio vs floor | io-uring vs floor | tokio p99 µs | monoio p99 µs | \
         io-uring p99 µs |"
    );
    println!(
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for pair in cases.chunks(2) {
        let [tokio, monoio] = pair else { continue };
        let ring = rings.iter().find(|r| r.label == tokio.label);
        let (t, m) = (median(tokio.rates.clone()), median(monoio.rates.clone()));
        let r = ring.map(|r| median(r.rates.clone()));
        let single = tokio.label.contains(" 1×1 ");
        let floor = floor[usize::from(tokio.protocol == "udp")];
        let vs = |rate: Option<f64>| match rate {
            Some(rate) if single => format!("{:.2}", rate / floor),
            _ => String::new(),
        };
        let show =
            |v: Option<f64>, digits: usize| v.map_or("refused".into(), |v| format!("{v:.digits$}"));
        println!(
            "| {} | {t:.0} | {m:.0} | {} | {:.2} | {} | {} | {} | {} | {:.1} | {:.1} | {} |",
            tokio.label,
            show(r, 0),
            m / t,
            show(r.map(|r| r / t), 2),
            vs(Some(t)),
            vs(Some(m)),
            vs(r),
            median(tokio.p99.clone()),
            median(monoio.p99.clone()),
            show(ring.map(|r| median(r.p99.clone())), 1),
        );
    }
    println!(
        "\n\"vs floor\" divides a 1 × 1 median by the blocking floor's (calibrate: one thread, \
         four system calls per echo) measured in the same rounds; io-uring is \"refused\" on \
         the TLS protocols, which it does not speak."
    );
}

/// Each switch against the same case without it: medians, ranges, and whether the ranges
/// are apart (otherwise the switch made no distinguishable difference in this run).
fn print_switches(cases: &[Case]) {
    println!("\nswitches, 1 KiB, tokio, latency recorded: each case without and with the switch, back to back\n");
    println!("| case | off rt/s (min–max) | on rt/s (min–max) | on / off | verdict |");
    println!("| --- | ---: | ---: | ---: | --- |");
    let range = |c: &Case| min_max(&c.rates);
    for pair in cases.chunks(2) {
        let [off, on] = pair else { continue };
        let (a, b) = (median(off.rates.clone()), median(on.rates.clone()));
        let ((alo, ahi), (blo, bhi)) = (range(off), range(on));
        let verdict = if blo > ahi {
            "faster"
        } else if bhi < alo {
            "slower"
        } else {
            "no distinguishable difference"
        };
        println!(
            "| {} | {a:.0} ({alo:.0}–{ahi:.0}) | {b:.0} ({blo:.0}–{bhi:.0}) | {:.2} | {verdict} |",
            off.label,
            b / a
        );
    }
}

/// QUIC against what it stands among, latency recorded, medians with min–max over the
/// rounds: `quic` against TCP+TLS and `quic-datagram` against UDP at 1 × 1 on one thread
/// and 16 × 16 on shared 2; a connection per message against a stream per message, and
/// 0-RTT against the full handshake, at 1 × 1.
fn print_quic(cases: &[Case]) {
    let row = |p: &str, load: &str| {
        cases
            .iter()
            .find(|c| c.protocol == p && c.label.ends_with(load))
    };
    let spread = |c: &Case| {
        let (lo, hi) = min_max(&c.rates);
        (median(c.rates.clone()), lo, hi)
    };
    println!("\nQUIC against what it stands among, 1 KiB (latency recorded)\n");
    println!("| QUIC protocol | against | load | round trips/s (min–max) | theirs (min–max) | ratio | ranges |");
    println!("| --- | --- | --- | ---: | ---: | ---: | --- |");
    for (subject, base, load) in [
        ("quic", "tcps", " 1×1 shared 1"),
        ("quic", "tcps", " 16×16 shared 2"),
        ("quic-datagram", "udp", " 1×1 shared 1"),
        ("quic-datagram", "udp", " 16×16 shared 2"),
        ("quic-handshake", "quic-streams", " 1×1 shared 1"),
        ("quic-0rtt", "quic-handshake", " 1×1 shared 1"),
    ] {
        let (Some(s), Some(b)) = (row(subject, load), row(base, load)) else {
            continue;
        };
        let ((a, alo, ahi), (c, clo, chi)) = (spread(s), spread(b));
        let verdict = if ahi < clo || chi < alo {
            "apart"
        } else {
            "overlap: no distinguishable winner"
        };
        println!(
            "| {subject} | {base} | {} | {a:.0} ({alo:.0}–{ahi:.0}) | {c:.0} ({clo:.0}–{chi:.0}) | {:.2} | {verdict} |",
            load.trim(),
            a / c
        );
    }
    println!("\nQUIC's transport switches (GSO off, BBR) are in the switches table.");
    println!(
        "References, not measured in this run (other machines, other workloads: bulk transfer, \
         not echoes): quinn-udp moving 10 MiB over localhost at 396 MiB/s without GSO and \
         8.69 GiB/s with it (quinn pull request #1915, 2024-07-05, i9-12900HK); quinn's bulk \
         benchmark at about 614 MiB/s for one client and one stream (iroh pull request #1572, \
         2023-10-04, Intel 8250U)."
    );
}

/// The protocols (the seven and QUIC) at 16 clients × window 16 on shared 2, latency recorded, with the
/// ratio of each median to TCP's.
fn print_protocols(cases: &[Case]) {
    let row = |p: &str| {
        cases
            .iter()
            .find(|c| c.protocol == p && c.label.contains(" 16×16 shared 2"))
    };
    let Some(tcp) = row("tcp").map(|c| median(c.rates.clone())) else {
        return;
    };
    println!("\nthe protocols, 1 KiB, 16 clients × window 16, shared 2 (latency recorded)\n");
    println!("| protocol | round trips/s | min–max over rounds | p99 µs | ratio to TCP |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    for p in [
        "tcp",
        "udp",
        "websocket",
        "tcps",
        "wss",
        "http",
        "https",
        "quic",
    ] {
        if let Some(c) = row(p) {
            let rate = median(c.rates.clone());
            let (lo, hi) = min_max(&c.rates);
            println!(
                "| {p} | {rate:.0} | {lo:.0}–{hi:.0} | {:.1} | {:.2} |",
                median(c.p99.clone()),
                rate / tcp
            );
        }
    }
}
