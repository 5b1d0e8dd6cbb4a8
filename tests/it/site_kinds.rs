//! Each kind of dataset gets the pages its question needs: a series its changes and history,
//! an open-loop dataset its latency under load, backends and hosts their comparisons, other
//! servers and other paths their own wording.

use std::path::Path;

use serde_json::json;

use crate::common::site::*;
use crate::common::*;

#[test]
fn a_series_gets_a_changes_page_and_a_history() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw");
    let before = crate::common::baseline_slice();
    let mut after = before.clone();
    after["recorded_at_utc"] = "2026-12-02T09:00:00+00:00".into();
    for r in after["results"].as_array_mut().unwrap() {
        if r["protocol"] == "tcp" {
            crate::common::scale_throughput(r, 0.8);
        }
    }
    // Named against their order in time: the series must follow the recording time.
    for (name, archive) in [("b-before", &before), ("a-after", &after)] {
        std::fs::create_dir_all(raw.join(name)).unwrap();
        std::fs::write(
            raw.join(name).join("archive.json"),
            serde_json::to_vec(archive).unwrap(),
        )
        .unwrap();
    }
    let out = dir.path().join("site");
    let o = build(&[raw.as_path()], &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let files = tree(&out);
    assert!(
        !files.contains_key("en/b-before/changes.md"),
        "the first has no predecessor"
    );
    let changes = text(&files, "en/a-after/changes.md");
    assert!(changes.contains("../b-before/overview.md"), "{changes}");
    let findings = section(&changes, "Regressions and improvements");
    // The table of the largest changes, before the disclosure of every finding.
    let findings = findings.split("<details>").next().unwrap_or(findings);
    let rows: Vec<&str> = findings
        .lines()
        .filter(|l| l.starts_with("| TCP"))
        .collect();
    assert_eq!(rows.len(), 5, "exactly the five slowed: {findings}");
    let others = findings
        .lines()
        .filter(|l| l.starts_with("| UDP") || l.starts_with("| HTTP"));
    assert_eq!(others.count(), 0, "{findings}");
    assert!(
        rows.iter()
            .all(|r| r.contains("regressed") && r.contains("-20.0%")),
        "{rows:?}"
    );
    let zh = text(&files, "zh/a-after/changes.md");
    assert!(zh.contains("退步") && !zh.contains("regressed"), "{zh}");
    let history = text(&files, "en/a-after/history.md");
    assert!(history.contains("../a-after/changes.md") && history.contains("first of the series"));
    let b = history.find("b-before").unwrap();
    assert!(b < history.find("[a-after]").unwrap(), "oldest first");
    assert!(text(&files, "en/a-after/changes.html").contains("<table>"));
    // One trend chart per protocol; ▼ on TCP's, which slowed, and on no other.
    let charts: Vec<&String> = files
        .keys()
        .filter(|p| p.starts_with("en/a-after/charts/history-"))
        .collect();
    assert_eq!(charts.len(), 3, "{charts:?}");
    for chart in charts {
        let svg = text(&files, chart);
        assert_eq!(svg.contains('▼'), chart.contains("history-tcp-"), "{chart}");
    }
}

#[test]
fn datasets_measured_another_way_do_not_join_a_series() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw");
    let base = crate::common::baseline_slice();
    let later = |archive: &serde_json::Value, hour: u32| {
        let mut a = archive.clone();
        a["recorded_at_utc"] = format!("2026-12-02T{hour:02}:00:00+00:00").into();
        a
    };
    // The same matrix again: a later step of the series.
    let again = later(&base, 9);
    // Its UDP datagrams moved in batches segmented by the kernel.
    let mut offloaded = later(&base, 10);
    for r in offloaded["results"].as_array_mut().unwrap() {
        if r["protocol"] == "udp" {
            r["metrics"]["udp_batch"] = 16.into();
            r["metrics"]["udp_gso"] = true.into();
        }
    }
    // Its in-process server on runtimes of its own, on another CPU.
    let mut apart = later(&base, 8);
    for r in apart["results"].as_array_mut().unwrap() {
        r["metrics"]["placement"] = json!({
            "client_cpus": "0",
            "client_pinned": true,
            "server_in_process": true,
            "server_cpus": "1",
        });
    }
    // Another host, measured apart: not set against the base host's datasets, which
    // shared their clients' threads; measured as they were, it is.
    let elsewhere = |archive: &serde_json::Value| {
        let mut a = archive.clone();
        a["host"]["logical_cpus"] = 64.into();
        a
    };
    let (elsewhere_apart, elsewhere_alike) = (elsewhere(&apart), elsewhere(&again));
    for (name, archive) in [
        ("base", &base),
        ("again", &again),
        ("offloaded", &offloaded),
        ("apart", &apart),
        ("elsewhere-apart", &elsewhere_apart),
    ] {
        std::fs::create_dir_all(raw.join(name)).unwrap();
        std::fs::write(
            raw.join(name).join("archive.json"),
            serde_json::to_vec(archive).unwrap(),
        )
        .unwrap();
    }
    let out = dir.path().join("site");
    let o = build(&[raw.as_path()], &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let files = tree(&out);
    assert!(text(&files, "en/again/changes.md").contains("../base/overview.md"));
    for other in ["offloaded", "apart"] {
        assert!(
            !files.contains_key(&format!("en/{other}/changes.md")),
            "{other} was measured another way: not a step of the base's series"
        );
    }
    // A server apart is set against the base host's dataset measured apart, never against
    // one whose server shared its clients' threads.
    let hosts = text(&files, "en/hosts.md");
    assert!(
        hosts.contains("Compared: [elsewhere-apart](elsewhere-apart/overview.md) (recorded 2026-12-02) against [apart](apart/overview.md)"),
        "{hosts}"
    );
    // The control: the other host measured as the base host was is set against it.
    std::fs::remove_dir_all(raw.join("elsewhere-apart")).unwrap();
    std::fs::create_dir_all(raw.join("elsewhere-alike")).unwrap();
    std::fs::write(
        raw.join("elsewhere-alike").join("archive.json"),
        serde_json::to_vec(&elsewhere_alike).unwrap(),
    )
    .unwrap();
    let out = dir.path().join("site-alike");
    let o = build(&[raw.as_path()], &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let hosts = text(&tree(&out), "en/hosts.md");
    let compared = hosts
        .lines()
        .find(|l| l.starts_with("Compared: [elsewhere-alike]"))
        .unwrap_or_else(|| panic!("{hosts}"));
    // The newest of the base host's datasets measured alike, not the newer offloaded one.
    assert!(
        compared.contains("against [again](again/overview.md)"),
        "{compared}"
    );
}

/// The open-loop dataset gets a "latency under load" page in both languages: a knee table, a
/// chart and a table per curve, saturated points marked, and its closed-loop reference runs
/// on the ordinary pages only.
#[test]
fn an_open_loop_dataset_gets_a_latency_under_load_page() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("site");
    let o = build(&[Path::new(LATENCY_CURVE)], &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let files = tree(&out);
    let stem = "epyc2-20261201-latency-curve";
    let en = text(&files, &format!("en/{stem}/load.md"));
    let zh = text(&files, &format!("zh/{stem}/load.md"));
    assert!(en.contains("## Knees") && zh.contains("## 拐点"));
    // 3 protocols × 3 IO models: one chart per curve, in each language.
    for lang in ["en", "zh"] {
        let charts: Vec<&String> = files
            .keys()
            .filter(|k| k.starts_with(&format!("{lang}/{stem}/charts/load-")))
            .collect();
        assert_eq!(charts.len(), 9, "{lang}: {charts:?}");
    }
    assert_eq!(en.matches("![").count(), 9);
    for needle in ["p99.9 / µs", "Sender lag p99 / µs", "Late sends", "kept"] {
        assert!(en.contains(needle), "en lacks {needle}");
    }
    for needle in ["发送滞后 p99 / µs", "迟发数", "按时"] {
        assert!(zh.contains(needle), "zh lacks {needle}");
    }
    // The sidebar of every page links it, and the ordinary pages show only closed loop.
    let overview = text(&files, &format!("en/{stem}/overview.html"));
    assert!(
        overview.contains("load.html"),
        "the sidebar links the load page"
    );
    let tcp = text(&files, &format!("en/{stem}/tcp.md"));
    assert!(
        !tcp.contains("msg/s"),
        "open-loop points stay off the protocol page"
    );
    // The summary lists every curve with its points.
    let summary: serde_json::Value =
        serde_json::from_str(&text(&files, &format!("data/{stem}/summary.json"))).unwrap();
    let curves = summary["load_curves"].as_array().expect("load_curves");
    assert_eq!(curves.len(), 9);
    assert!(curves
        .iter()
        .all(|c| c["points"].as_array().unwrap().len() == 8));
}

/// A dataset of two backends compares them on every protocol page and in the overview: a
/// verdict only where the ranges are apart, models one backend cannot run as "not
/// supported", and the same verdicts in summary.json.
#[test]
fn a_two_backend_dataset_compares_the_backends_on_every_page() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("site");
    let o = build(&[Path::new(BACKENDS)], &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let files = tree(&out);
    let stem = "xeon2-20261202-backends";
    for protocol in ["tcp", "udp", "websocket", "tcps", "wss", "http", "https"] {
        let en = text(&files, &format!("en/{stem}/{protocol}.md"));
        let zh = text(&files, &format!("zh/{stem}/{protocol}.md"));
        let part = section(&en, "Backends: monoio (io_uring) against tokio");
        // tokio's shared 2 and shared 4 have no monoio counterpart at any of the six loads
        // (3 payloads × 2 client profiles), each load with a table of its own.
        assert_eq!(
            part.matches("| not supported |").count(),
            2 * 6,
            "{protocol}"
        );
        // Each load folded under its own summary, so a phone reader opens only the load
        // they want.
        assert_eq!(part.matches("<details><summary>").count(), 6, "{protocol}");
        assert!(
            zh.contains("## 后端对比：monoio (io_uring) 与 tokio"),
            "{protocol}"
        );
        assert!(zh.contains("| 不支持 |"), "{protocol}");
    }
    let overview = text(&files, &format!("en/{stem}/overview.md"));
    assert!(overview.contains("## Which backend for which load"));
    let zh = text(&files, &format!("zh/{stem}/overview.md"));
    assert!(zh.contains("## 不同负载下选哪个后端"));
    // summary.json: every backend pair's decision is the rule's on every run of both sides,
    // and its verdict follows from its interval and margin.
    let summary: serde_json::Value =
        serde_json::from_str(&text(&files, &format!("data/{stem}/summary.json"))).unwrap();
    let profiles = summary["profiles"].as_array().unwrap();
    let range = |backend: &str, row: &serde_json::Value| -> (f64, f64) {
        let same = |p: &&serde_json::Value| {
            [
                "protocol",
                "payload_bytes",
                "clients",
                "window",
                "io_model",
                "io_threads",
            ]
            .iter()
            .all(|k| p[k] == row[k])
                && p["backend"] == backend
        };
        let p = profiles.iter().find(same).expect("the configuration");
        let s = &p["roundtrips_per_second"];
        (s["min"].as_f64().unwrap(), s["max"].as_f64().unwrap())
    };
    let pairs = summary["backend_ratios"]
        .as_array()
        .expect("backend_ratios");
    assert!(pairs.len() >= 100, "{}", pairs.len());
    for row in pairs {
        assert_eq!(row["backend"], "monoio");
        assert_eq!(row["base_backend"], "tokio");
        let (s, b) = (range("monoio", row), range("tokio", row));
        let d = &row["throughput"];
        assert_eq!(
            (&d["base_runs"], &d["subject_runs"]),
            (&json!(3), &json!(3))
        );
        let (low, high, margin) = (
            d["low"].as_f64().unwrap(),
            d["high"].as_f64().unwrap(),
            d["margin"].as_f64().unwrap(),
        );
        let expected = if low >= 1.0 - margin && high <= 1.0 + margin {
            "equivalent"
        } else if low > 1.0 {
            "higher"
        } else if high < 1.0 {
            "lower"
        } else {
            "undecided"
        };
        assert_eq!(d["verdict"]["verdict"], expected, "{row}");
        // The geometric-mean ratio lies between the ratios of the two sides' extremes.
        let ratio = d["ratio"].as_f64().unwrap();
        assert!(s.0 / b.1 <= ratio && ratio <= s.1 / b.0, "{row}");
    }
}

#[test]
fn datasets_of_two_hosts_get_a_hosts_page_with_verdicts_from_the_rule() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw");
    let base = baseline_slice();
    // Host A twice: the whole slice, and an older dataset with its TCP runs only (the pair
    // with the most configurations in common must be chosen, not the newer or the first).
    let mut tcp_only = base.clone();
    tcp_only["results"]
        .as_array_mut()
        .unwrap()
        .retain(|r| r["protocol"] == "tcp");
    tcp_only["recorded_at_utc"] = json!("2026-11-30T00:00:00+00:00");
    // Host B: another CPU, TCP 1.5× faster, UDP and HTTP the same runs.
    let mut other = base.clone();
    other["host"]["cpu"] = json!("Other CPU");
    other["recorded_at_utc"] = json!("2026-12-03T00:00:00+00:00");
    for r in other["results"].as_array_mut().unwrap() {
        if r["protocol"] == "tcp" {
            scale_throughput(r, 1.5);
        }
    }
    for (name, archive) in [("a-full", &base), ("a-tcp", &tcp_only), ("b", &other)] {
        write(&raw, name, "archive.json", &archive.to_string());
    }
    let out = dir.path().join("site");
    let o = build(&[raw.as_path()], &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let files = tree(&out);
    let en = text(&files, "en/hosts.md");
    // Hosts are named from what they recorded: the CPU's family word, its logical CPUs
    // and four hex digits of the host's facts.
    assert!(host_heading(&en), "{en}");
    assert!(
        en.contains("[b](b/overview.md)") && en.contains("against [a-full](a-full/overview.md)")
    );
    let part_of = |heading: &str| -> String {
        let start = en.find(&format!("\n### {heading}\n")).expect(heading);
        let rest = &en[start + 1..];
        let end = rest[4..].find("\n### ").map_or(rest.len(), |e| e + 4);
        rest[..end].to_string()
    };
    let tcp = part_of("TCP");
    assert!(
        tcp.contains("is faster in 5, host epyc2-")
            && tcp.contains(" in 0, the two are equivalent within ±5% in 0, and 0 are undecided"),
        "{tcp}"
    );
    assert!(tcp.contains("| 1.50× | faster by 50% ["), "{tcp}");
    for protocol in ["UDP", "HTTP"] {
        // The same runs on both hosts: never faster or slower, equivalent where they are
        // steady enough for the margin.
        let part = part_of(protocol);
        assert!(
            part.contains("is faster in 0, host epyc2-")
                && part.starts_with("### ")
                && part.contains("host other2-"),
            "{protocol}: {part}"
        );
        assert!(!part.contains("| faster by") && !part.contains("| slower by"));
        assert!(
            part.contains("| equivalent within ±5% |"),
            "{protocol}: {part}"
        );
    }
    let zh = text(&files, "zh/hosts.md");
    assert!(
        zh.lines().any(|l| l.starts_with("## 主机 other2-")
            && l.contains("（Other CPU）与主机 epyc2-")
            && l.ends_with("（AMD EPYC）")),
        "{zh}"
    );
    assert!(zh.contains("| 1.50× | 快 50% ["), "{zh}");
    // Both languages link it; one host alone gets no such page.
    assert!(text(&files, "en/index.html").contains("hosts.html"));
    let single = dir.path().join("single");
    let o = build(&[&raw.join("a-full")], &single);
    assert!(o.status.success());
    assert!(!tree(&single).contains_key("en/hosts.md"));
}

/// A dataset of another host that crossed a veth pair is not set against a loopback one:
/// the hosts page compares hosts over one path only.
#[test]
fn hosts_are_compared_over_one_path_only() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw");
    let committed = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("raw-results/epyc2-20261202-external/socat.json");
    let loopback: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(committed).unwrap()).unwrap();
    let mut veth = across_veth("emkc0");
    veth["host"]["cpu"] = json!("Other CPU");
    write(&raw, "a-loopback", "socat.json", &loopback.to_string());
    write(&raw, "b-veth", "socat.json", &veth.to_string());
    let out = dir.path().join("site");
    let o = build(&[raw.as_path()], &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let files = tree(&out);
    if let Some(page) = files.get("en/hosts.md") {
        let page = String::from_utf8_lossy(page);
        assert!(!page.contains("## Host B"), "{page}");
    }
    // The same archive over loopback on the other host is compared.
    let mut same_path = loopback.clone();
    same_path["host"]["cpu"] = json!("Other CPU");
    write(&raw, "b-veth", "socat.json", &same_path.to_string());
    let out = dir.path().join("site2");
    let o = build(&[raw.as_path()], &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let hosts = text(&tree(&out), "en/hosts.md");
    assert!(host_heading(&hosts), "{hosts}");
}

/// The committed external-servers dataset says what was measured: servers in their own
/// processes, echomark's client, the client's IO model; no Asio vocabulary for them.
#[test]
fn the_committed_external_servers_dataset_says_what_was_measured() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("site");
    let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
    let tcp = read("en/epyc2-20261202-external/tcp.md");
    assert!(tcp.contains("## Backends: socat against echomark-serve"));
    assert!(tcp.contains("Here a backend is a server: each ran as its own process"));
    assert!(!tcp.contains("Both backends run the same client, server"));
    let http = read("en/epyc2-20261202-external/http.md");
    assert!(http.contains("## Backends: nginx against echomark-serve"));
    let overview = read("en/epyc2-20261202-external/overview.md");
    assert!(overview.contains("the IO model in the tables is the client's"));
    assert!(!overview.contains("share one process"));
    // The CPU column is the client's alone; the servers' CPU is in the archive.
    assert!(tcp.contains("Process CPU here is echomark's client process alone"));
    assert!(overview.contains("`server.cpu_seconds`"));
    // Measured one matrix after another; the interleaved dataset says it was interleaved.
    for page in [&tcp, &http] {
        assert!(page.contains("They were measured one after the other, not interleaved"));
    }
    for protocol in ["tcp", "http"] {
        let page = read(&format!(
            "en/epyc2-20261202-servers-interleaved/{protocol}.md"
        ));
        assert!(
            page.contains("Their runs were interleaved in one matrix"),
            "{protocol}"
        );
        assert!(!page.contains("not interleaved"), "{protocol}");
        let zh = read(&format!(
            "zh/epyc2-20261202-servers-interleaved/{protocol}.md"
        ));
        assert!(zh.contains("交错进行、打乱了顺序"), "{protocol}");
    }
    let zh = read("zh/epyc2-20261202-external/tcp.md");
    assert!(zh.contains("没有交错进行"));
    assert!(zh.contains("这里的后端指服务端"));
    assert!(zh.contains("只是 echomark 客户端进程的"));
    for page in [&tcp, &http, &overview] {
        assert!(
            !page.contains("io_context"),
            "an external server's client runs on tokio"
        );
    }
}

/// Pages of a dataset measured across a veth pair say so in their titles, leads and host
/// table, in both languages, and never call it loopback.
#[test]
fn a_dataset_across_namespaces_names_its_path_instead_of_loopback() {
    let raw = tempfile::tempdir().unwrap();
    write(
        raw.path(),
        "veth",
        "socat.json",
        &across_veth("emkc-<b>").to_string(),
    );
    let out = tempfile::tempdir().unwrap();
    let o = build(&[raw.path()], out.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let files = tree(out.path());
    let overview = text(&files, "en/veth/overview.md");
    assert!(
        overview.starts_with("# veth: cross-namespace veth performance"),
        "{}",
        &overview[..200]
    );
    assert!(overview.contains("runs between two network namespaces joined by a veth pair"));
    assert!(
        overview.contains("from another network namespace of the same machine over a veth pair")
    );
    assert!(overview.contains("| Path | cross-namespace veth: interface emkc-&lt;b&gt;, MTU 1,500, client address 10.213.0.2; the server in another network namespace |"), "{overview}");
    assert!(overview.contains("| Server's machine | the client's machine |"));
    assert!(overview.contains("but over no wire and through no network card"));
    assert!(!overview.to_lowercase().contains("loopback"), "{overview}");
    let tcp = text(&files, "en/veth/tcp.md");
    assert!(tcp.starts_with("# TCP: cross-namespace veth performance"));
    assert!(tcp.contains("client and server in two network namespaces joined by a veth pair"));
    assert!(!tcp.to_lowercase().contains("loopback"), "{tcp}");
    let zh = text(&files, "zh/veth/overview.md");
    assert!(
        zh.starts_with("# veth：跨命名空间 veth 性能"),
        "{}",
        &zh[..100]
    );
    assert!(zh.contains("| 路径 | 跨命名空间 veth：接口 emkc-&lt;b&gt;，MTU 1,500，客户端地址 10.213.0.2；服务端位于另一个网络命名空间 |"));
    assert!(!zh.contains("回环"), "{zh}");
}

/// The committed cross-namespace dataset names its path on every page, and its loopback
/// companion stays loopback.
#[test]
fn the_committed_veth_dataset_names_its_path() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("site");
    let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
    let overview = read("en/epyc2-20261202-veth/overview.md");
    assert!(overview.starts_with("# epyc2-20261202-veth: cross-namespace veth performance"));
    assert!(overview.contains("| Path | cross-namespace veth: interface em-cli0, MTU 1,500, client address 10.213.0.2; the server in another network namespace |"));
    for protocol in ["tcp", "udp", "http", "websocket"] {
        let page = read(&format!("en/epyc2-20261202-veth/{protocol}.md"));
        assert!(
            page.contains(": cross-namespace veth performance"),
            "{protocol}"
        );
        assert!(!page.to_lowercase().contains("loopback"), "{protocol}");
        let zh = read(&format!("zh/epyc2-20261202-veth/{protocol}.md"));
        assert!(zh.contains("跨命名空间 veth 性能"), "{protocol}");
        assert!(!zh.contains("回环"), "{protocol}");
    }
    // Measured on one host with one matrix, but over two paths: not a series, so no page
    // calls the loopback dataset a change from the veth one.
    for dataset in ["epyc2-20261202-veth", "epyc2-20261202-loopback-serve"] {
        assert!(
            !root.join(format!("en/{dataset}/changes.md")).exists(),
            "{dataset}"
        );
    }
    let companion = read("en/epyc2-20261202-loopback-serve/overview.md");
    assert!(companion.starts_with("# epyc2-20261202-loopback-serve: loopback performance"));
    assert!(companion.contains("| Path | loopback: interface lo, MTU 65,536, client address 127.0.0.1; the server in the client's network namespace |"));
}

/// Whether `page` sets the "Other CPU" host against the AMD EPYC one under their derived
/// names ("## Host other2-1a2b (Other CPU) against host epyc2-3c4d (AMD EPYC)").
fn host_heading(page: &str) -> bool {
    page.lines().any(|l| {
        let Some(rest) = l.strip_prefix("## Host other") else {
            return false;
        };
        let (name, rest) = rest
            .split_once(" (Other CPU) against host epyc")
            .unwrap_or(("", ""));
        name.len() == 6
            && name.starts_with(|c: char| c.is_ascii_digit())
            && rest.ends_with(" (AMD EPYC)")
    })
}
