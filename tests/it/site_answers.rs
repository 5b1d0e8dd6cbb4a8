//! The answers the site gives: the seed's key results from arknet's archives, ratios to TCP
//! and the TLS overhead, no crowned ties, each dataset's own question, the index's answers.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::site::*;

#[test]
fn the_arknet_baseline_reproduces_the_seed_key_results() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/arknet");
    if !fixtures.is_dir() {
        echomark::skip::because(&format!("{} is not here", fixtures.display()));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("site");
    let o = build(&[&fixtures], &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let files = tree(&out);
    let zh = text(&files, "zh/arknet/overview.md");
    // Seed 002: TCP 1.98× one thread with its p99 and the single thread's (1,346 and
    // 1,491.79 µs there, shown here to the 3 significant digits the histograms keep),
    // coroutine TCP 1.84× and 3.54×; the rule decides the TCP winner and finds no single
    // choice at the 3.54× load. echomark names sharded 4 correctly as four io_contexts with
    // one thread each (arknet printed "4 个 io_context / 4 个线程").
    for needle in [
        "**TCP / Standalone Asio / 无额外业务计算**：4 个 io_context / 各 1 个线程最快：每秒 367,535 次往返，p99 1,350 µs。相对第二名 2 个 io_context / 各 1 个线程（每秒 279,356 次往返，p99 1,920 µs）：快 30% [14%, 48%]；规则判定它也快于其他所有模型。",
        "其吞吐量中位数是单线程的 1.98×（单线程每秒 185,779 次往返，p99 1,490 µs）",
        "其吞吐量中位数是单线程的 1.84×",
        "没有唯一的选择。4 个 io_context / 各 1 个线程的中位数最高，每秒 163,155 次往返（p99 1,750 µs）",
        "其吞吐量中位数是单线程的 3.54×",
        "本机完成 **1,620 次 IPv4 回环测量**",
    ] {
        assert!(zh.contains(needle), "{needle} not in:\n{zh}");
    }
    let en = text(&files, "en/arknet/overview.md");
    assert!(en.contains("4 io_contexts / 1 thread each is the fastest: 367,535 round trips/s, p99 1,350 µs. Against the runner-up, 2 io_contexts / 1 thread each (279,356 round trips/s, p99 1,920 µs): faster by 30% [14%, 48%]"), "{en}");
    assert!(
        en.contains("Its median is 1.98× one thread's (one thread: 185,779 round trips/s, p99 1,490 µs): faster by 92% [69%, 119%]."),
        "{en}"
    );
    assert!(
        en.contains("**TCP / Boost.Asio / No added computation**"),
        "every backend ranked"
    );
    // The native program is named in its bullets and has a page of its own with the
    // batch-RTT caveat; the TCP page holds only the callback program's rows.
    assert!(
        zh.contains("**协程 TCP / Standalone Asio / 无额外业务计算**")
            && zh.contains("**协程 TCP / Boost.Asio / 每次回显执行 10,000 次 CPU 计算**"),
        "{zh}"
    );
    assert!(zh.contains("- [协程 TCP](coroutine.md)"), "{zh}");
    let coroutine = text(&files, "en/arknet/coroutine.md");
    assert!(coroutine.starts_with("# Coroutine TCP"), "{coroutine}");
    assert!(coroutine.contains("**batch RTT**"), "{coroutine}");
    assert!(
        coroutine.contains("Asio coroutine / Standalone Asio"),
        "{coroutine}"
    );
    assert!(files.contains_key("zh/arknet/coroutine.html"));
    let tcp = text(&files, "en/arknet/tcp.md");
    assert!(!tcp.contains("Asio coroutine"), "{tcp}");
    // The TLS overhead is summarised per backend, never pooled across the two stacks.
    let tcps = text(&files, "en/arknet/tcps.md");
    let overhead = section(&tcps, "TLS overhead: TCP+TLS against TCP");
    for backend in ["Boost.Asio", "Standalone Asio"] {
        assert!(
            overhead.contains(&format!("**{backend}**: Over the 30 configurations")),
            "{overhead}"
        );
    }
}

#[test]
fn protocol_pages_show_ratios_to_tcp_and_the_tls_overhead() {
    let name = "epyc2-20261201-baseline";
    let raw = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("raw-results")
        .join(name);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("site");
    let o = build(&[&raw], &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let files = tree(&out);
    let summary: serde_json::Value =
        serde_json::from_str(&text(&files, &format!("data/{name}/summary.json"))).unwrap();
    // The medians of 1,024 B / 16 clients / window 16 on 1 runtime / 2 threads, from the
    // summary the same build wrote.
    let median = |protocol: &str, metric: &str| -> f64 {
        let profile = summary["profiles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| {
                p["protocol"] == protocol
                    && p["payload_bytes"] == 1024
                    && p["clients"] == 16
                    && p["window"] == 16
                    && p["io_model"] == "shared"
                    && p["io_threads"] == 2
            })
            .unwrap_or_else(|| panic!("{protocol} not in the summary"));
        assert_eq!(profile["status"], "valid", "{protocol}");
        profile[metric]["median"].as_f64().unwrap()
    };
    for (subject, base, en_heading, zh_heading) in [
        (
            "tcps",
            "tcp",
            "TLS overhead: TCP+TLS against TCP",
            "TLS 开销：TCP+TLS 对比 TCP",
        ),
        (
            "wss",
            "websocket",
            "TLS overhead: WSS against WebSocket",
            "TLS 开销：WSS 对比 WebSocket",
        ),
        (
            "https",
            "http",
            "TLS overhead: HTTPS against HTTP",
            "TLS 开销：HTTPS 对比 HTTP",
        ),
        ("wss", "tcp", "Compared with TCP", "与 TCP 对比"),
        ("https", "tcp", "Compared with TCP", "与 TCP 对比"),
        ("websocket", "tcp", "Compared with TCP", "与 TCP 对比"),
        ("http", "tcp", "Compared with TCP", "与 TCP 对比"),
    ] {
        let ratio = |metric| format!("{:.2}×", median(subject, metric) / median(base, metric));
        let (throughput, p99) = (ratio("roundtrips_per_second"), ratio("rtt_p99_us"));
        // summary.json lists the same ratio for consumers of the data.
        let listed = summary["protocol_ratios"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| {
                r["protocol"] == subject
                    && r["baseline"] == base
                    && r["payload_bytes"] == 1024
                    && r["clients"] == 16
                    && r["io_model"] == "shared"
                    && r["io_threads"] == 2
            })
            .unwrap_or_else(|| panic!("{subject}/{base} not in protocol_ratios"));
        let exact =
            median(subject, "roundtrips_per_second") / median(base, "roundtrips_per_second");
        assert!((listed["roundtrips_per_second_ratio"].as_f64().unwrap() - exact).abs() < 1e-12);
        for (lang, heading, row_start) in [
            (
                "en",
                en_heading,
                "| 1,024 B / 16 clients / window 16 | tokio / 1 runtime / 2 threads |",
            ),
            (
                "zh",
                zh_heading,
                "| 1,024 B / 16 个客户端 / 窗口 16 | tokio / 1 个运行时 / 2 个线程 |",
            ),
        ] {
            let page = text(&files, &format!("{lang}/{name}/{subject}.md"));
            let part = section(&page, heading);
            let row = part
                .lines()
                .find(|l| l.starts_with(row_start))
                .unwrap_or_else(|| panic!("{lang} {subject}/{base}: no row in\n{part}"));
            let cells: Vec<&str> = row.split(" | ").collect();
            assert_eq!(cells[4], throughput, "{lang} {subject}/{base}: {row}");
            assert_eq!(
                cells[7].trim_end_matches(" |"),
                p99,
                "{lang} {subject}/{base}: {row}"
            );
        }
    }
    // TCP is the reference and UDP is no layer over it: neither page has a ratio section.
    for protocol in ["tcp", "udp"] {
        let page = text(&files, &format!("en/{name}/{protocol}.md"));
        assert!(!page.contains("## Compared with") && !page.contains("## TLS overhead"));
    }
}

#[test]
fn no_key_result_crowns_a_model_the_choosing_table_calls_a_tie() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("site/en");
    let mut checked = 0;
    for entry in std::fs::read_dir(&root).unwrap() {
        let page = entry.unwrap().path().join("overview.md");
        let Ok(text) = std::fs::read_to_string(&page) else {
            continue;
        };
        let bullets = md_section(&text, "Key results");
        let choosing = md_section(&text, "Choosing an IO model");
        // The main load the key results are about: "(1,024 B, 16 clients)".
        let Some(load) = bullets.iter().find_map(|l| {
            let (_, rest) = l.split_once("applies only to its load (")?;
            let (load, _) = rest.split_once(')')?;
            let (payload, clients) = load.split_once(", ")?;
            Some(format!("{payload} / {clients}"))
        }) else {
            continue;
        };
        for bullet in bullets.iter().filter(|l| l.starts_with("- **")) {
            let group = bullet[4..].split("**").next().unwrap();
            // "TCP / tokio / No added computation" → the table's "TCP / tokio".
            let program = group
                .rsplit_once(" / ")
                .map_or(group, |(program, _)| program);
            let rows: Vec<&&str> = choosing
                .iter()
                .filter(|r| r.starts_with(&format!("| {program} | {load}")))
                .collect();
            if rows.is_empty() {
                continue;
            }
            let tie_in_table = rows.iter().any(|r| r.contains("no single choice"));
            let winner_in_table = rows.iter().any(|r| !r.contains("no single choice"));
            if bullet.contains("no single choice") {
                assert!(
                    tie_in_table,
                    "{}: {bullet} but the table: {rows:?}",
                    page.display()
                );
            } else {
                assert!(
                    winner_in_table,
                    "{}: {bullet} crowns a tie: {rows:?}",
                    page.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 30, "only {checked} key results checked");
}

#[test]
fn each_dataset_opens_with_the_answer_to_its_own_question() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("site/en");
    let page =
        |dataset: &str| std::fs::read_to_string(root.join(dataset).join("overview.md")).unwrap();
    let answer = |dataset: &str| {
        let text = page(dataset);
        // The answer comes right after what to use (or what was measured), before the
        // test conditions, key results and charts.
        let sections: Vec<&str> = text.split("\n## ").skip(1).collect();
        let opening = sections.first().copied().unwrap_or("");
        let at = usize::from(
            opening.starts_with("What to use") || opening.starts_with("What was measured"),
        );
        let answer = sections.get(at).copied().unwrap_or("").to_string();
        assert!(answer.starts_with("The answer"), "{dataset}: {answer:.80}");
        answer
    };
    let backends = answer("xeon2-20261202-backends");
    assert!(backends.contains("monoio (io_uring) is faster in") && backends.contains("tokio in"));
    for server in ["nginx", "socat"] {
        let servers = answer("epyc2-20261202-servers-interleaved");
        assert!(
            servers.contains(&format!("{server} is faster in")),
            "{servers}"
        );
        assert!(
            page("epyc2-20261202-servers-interleaved").contains("interleaved in time"),
            "{servers}"
        );
        let sequential = page("epyc2-20261202-external");
        assert!(
            sequential.contains("one after the other, not interleaved"),
            "{sequential}"
        );
    }
    let buffers = answer("epyc2-20261202-udp-buffers");
    assert!(
        buffers.contains("| Load | lost at 1 MiB | lost at 2 MiB | lost at 4 MiB |"),
        "{buffers}"
    );
    let path = answer("epyc2-20261202-veth");
    assert!(
        path.contains("two namespaces over veth against loopback"),
        "{path}"
    );
    let knees = answer("epyc2-20261201-latency-curve");
    assert_eq!(
        knees.matches("\n- ").count(),
        3,
        "one knee finding per protocol: {knees}"
    );
    // One backend, several IO models: the IO model is its question.
    let baseline = answer("epyc2-20261201-baseline");
    assert!(baseline.contains("IO models: "), "{baseline}");
    assert!(baseline.contains("no single choice"), "{baseline}");
}

#[test]
fn the_index_answers_each_question_from_one_named_dataset() {
    let index =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("site/en/index.md"))
            .unwrap();
    let lines = md_section(&index, "What the data says");
    for question in [
        "Runtime",
        "IO model",
        "Protocol overhead",
        "TLS cost",
        "UDP receive buffers",
        "Other servers",
        "Path",
        "Latency under load",
    ] {
        let line = lines
            .iter()
            .find(|l| l.starts_with(&format!("- **{question}**")))
            .unwrap_or_else(|| panic!("no answer to {question}: {lines:#?}"));
        // Its evidence: a link to one dataset's overview, and the host it ran on.
        assert!(
            line.contains("/overview.md)") && line.contains("logical CPUs"),
            "{line}"
        );
    }
}

#[test]
fn what_changed_opens_with_per_protocol_counts_that_equal_its_table() {
    let page = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("site/en/epyc2-20261201-baseline-rerun/changes.md"),
    )
    .unwrap();
    let cells = |row: &str| -> Vec<String> {
        row.trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_string())
            .collect()
    };
    let summary = md_section(&page, "By protocol");
    let all = md_section(&page, "Every configuration");
    let verdicts = [
        "regressed",
        "improved",
        "equivalent",
        "undecided",
        "not comparable",
    ];
    let mut protocols = 0;
    let mut changed = 0;
    for row in summary
        .iter()
        .filter(|r| r.starts_with("| ") && !r.starts_with("| Protocol") && !r.starts_with("| ---"))
    {
        let c = cells(row);
        let protocol = &c[0];
        for (column, verdict) in verdicts.iter().enumerate() {
            let in_table = all
                .iter()
                .filter(|r| r.starts_with(&format!("| {protocol} / ")))
                .filter(|r| cells(r).get(1).map(String::as_str) == Some(*verdict))
                .count();
            assert_eq!(c[column + 1], in_table.to_string(), "{protocol} {verdict}");
            if column < 2 {
                changed += in_table;
            }
        }
        protocols += 1;
    }
    assert_eq!(protocols, 7);
    // The long tables wait behind disclosures; the page shows the largest changes first.
    assert!(page.contains("<details><summary>Every configuration compared</summary>"));
    assert!(
        page.contains(&format!(
            "The 20 largest of {changed} changed configurations"
        )),
        "{page}"
    );
    // History opens with the same per-protocol counts for its newest step.
    let history = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("site/en/epyc2-20261201-baseline-rerun/history.md"),
    )
    .unwrap();
    assert_eq!(
        md_section(&history, "The newest step, by protocol"),
        summary,
        "the same table as What changed"
    );
}

/// A server comparison says what each server cost per echo, and the io_uring backend how
/// often it entered the kernel: figures recomputed here from the committed archives (the
/// median of each load's passed runs; for CPU the ratio load by load) must be on the page.
#[test]
fn a_server_comparison_states_cpu_and_system_calls_per_echo_from_the_archives() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dataset = "xeon2-20261204-servers-io-uring";
    let per_load = |name: &str, figure: &dyn Fn(&serde_json::Value) -> Option<f64>| {
        let path = root.join(format!("raw-results/{dataset}/{name}.json"));
        let archive: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let mut loads: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for r in archive["results"].as_array().unwrap() {
            let m = &r["metrics"];
            let echoes =
                m["messages_sent"].as_f64().unwrap() + m["warmup_messages"].as_f64().unwrap();
            let load = format!(
                "{} {} {} {}",
                r["protocol"], r["payload_bytes"], r["clients"], r["window"]
            );
            if let Some(v) = figure(&r["server"]) {
                loads.entry(load).or_default().push(v / echoes);
            }
        }
        loads
            .into_iter()
            .map(|(k, v)| (k, median(v)))
            .collect::<BTreeMap<String, f64>>()
    };
    let enters = per_load("serve-io-uring", &|s| s["ring"]["enters"].as_f64());
    let (lo, hi) = (
        enters.values().copied().fold(f64::MAX, f64::min),
        enters.values().copied().fold(f64::MIN, f64::max),
    );
    let cpu = |name: &str| per_load(name, &|s| s["cpu_seconds"].as_f64());
    let (uring, tokio) = (cpu("serve-io-uring"), cpu("serve-tokio"));
    let ratio = median(uring.iter().map(|(k, v)| v / tokio[k]).collect());
    let page =
        std::fs::read_to_string(root.join(format!("site/en/{dataset}/overview.md"))).unwrap();
    for needle in [
        format!("serve-io-uring entered the kernel (`io_uring_enter`) {lo:.3} to {hi:.3} times per echo"),
        format!("Per echo, serve-io-uring's process used {ratio:.2}× the CPU time of serve-tokio's"),
    ] {
        assert!(page.contains(&needle), "{needle} not in:\n{page}");
    }
    // The monoio server has no rings of its own to count.
    assert!(!page.contains("serve-monoio entered the kernel"));
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}
