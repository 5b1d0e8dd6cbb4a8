//! `echomark build` and `check` end to end: the real binary, real archives, the real site
//! in headless Chromium when it is installed.
#![recursion_limit = "256"]

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use common::*;
use serde_json::json;

const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/site/demo");

fn build(raw: &[&Path], out: &Path) -> std::process::Output {
    let mut args: Vec<String> = vec!["build".into()];
    for r in raw {
        args.push("--raw".into());
        args.push(r.display().to_string());
    }
    args.push("--out".into());
    args.push(out.display().to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    echomark(&args)
}

fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(
                    p.strip_prefix(root).unwrap().to_string_lossy().into_owned(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn text(files: &BTreeMap<String, Vec<u8>>, path: &str) -> String {
    String::from_utf8(
        files
            .get(path)
            .unwrap_or_else(|| panic!("{path} not generated"))
            .clone(),
    )
    .unwrap()
}

#[test]
fn both_languages_have_the_same_pages_linked_to_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("site");
    let o = build(&[Path::new(DEMO)], &out);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let files = tree(&out);
    let en: Vec<&String> = files.keys().filter(|k| k.starts_with("en/")).collect();
    let zh: Vec<String> = files
        .keys()
        .filter(|k| k.starts_with("zh/"))
        .map(|k| k.replacen("zh/", "en/", 1))
        .collect();
    assert_eq!(
        en.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        zh.iter().map(|s| s.as_str()).collect::<Vec<_>>()
    );
    for page in [
        "index",
        "methodology",
        "demo/overview",
        "demo/tcp",
        "demo/udp",
    ] {
        for (lang, html_lang, other) in [("en", "en", "zh"), ("zh", "zh-CN", "en")] {
            let html = text(&files, &format!("{lang}/{page}.html"));
            assert!(
                html.contains(&format!("<html lang=\"{html_lang}\">")),
                "{lang}/{page}"
            );
            for hreflang in ["en", "zh-CN", "x-default"] {
                assert!(
                    html.contains(&format!("hreflang=\"{hreflang}\" href=\"https://")),
                    "{lang}/{page}: {hreflang}"
                );
            }
            // The switch leads to the same page in the other language.
            let depth = page.matches('/').count() + 1;
            let target = format!("{}{other}/{page}.html", "../".repeat(depth));
            assert!(
                html.contains(&format!("class=\"lang-switch\" href=\"{target}\"")),
                "{lang}/{page} → {target}"
            );
            assert!(files.contains_key(&format!("{other}/{page}.html")));
            assert!(
                files.contains_key(&format!("{lang}/{page}.md")),
                "Markdown beside HTML"
            );
        }
    }
    assert!(
        files.contains_key("data/demo/summary.json") && files.contains_key("data/demo/summary.csv")
    );
    assert!(files.contains_key("index.html") && files.contains_key("assets/style.css"));
}

#[test]
fn failed_configurations_are_excluded_explained_and_marked() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("site");
    assert!(build(&[Path::new(DEMO)], &out).status.success());
    let files = tree(&out);
    let overview = text(&files, "en/demo/overview.md");
    assert!(
        overview.contains(
            "| UDP / tokio / 16,384 B / 1 client / window 64 / 1 runtime / 1 thread | 0 / 2 |"
        ),
        "{overview}"
    );
    assert!(
        overview.contains("udp\\_lost\\_messages"),
        "reasons shown: {overview}"
    );
    let udp = text(&files, "en/demo/udp.md");
    assert!(
        udp.contains("| tokio / 1 runtime / 1 thread | excluded (failed: 0/2 runs passed) |"),
        "{udp}"
    );
    let chart = text(&files, "en/demo/charts/udp-tokio-work0-throughput.svg");
    assert!(
        chart.contains("✕") && chart.contains("excluded: a run failed"),
        "marked in the chart"
    );
    let zh = text(&files, "zh/demo/udp.md");
    assert!(zh.contains("已排除（失败：2 次中 0 次通过）"), "{zh}");
    // The summary keeps the failed configuration's rows, unranked.
    let summary: serde_json::Value =
        serde_json::from_slice(&files["data/demo/summary.json"]).unwrap();
    assert_eq!(summary["configurations"], 16);
    assert_eq!(summary["configurations_valid"], 13);
    assert!(
        summary["rankings"].as_array().unwrap().iter().all(|r| {
            !(r["protocol"] == "udp" && r["payload_bytes"] == 16384 && r["window"] == 64)
        }),
        "a group whose every topology failed is not ranked"
    );
}

#[test]
fn the_same_archives_give_byte_identical_sites_and_check_catches_drift() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    assert!(build(&[Path::new(DEMO)], &a).status.success());
    assert!(build(&[Path::new(DEMO)], &b).status.success());
    assert_eq!(tree(&a), tree(&b));
    let check = |out: &Path| echomark(&["check", "--raw", DEMO, "--out", out.to_str().unwrap()]);
    assert_eq!(check(&a).status.code(), Some(0));
    std::fs::write(a.join("en/demo/tcp.md"), "edited by hand").unwrap();
    std::fs::write(a.join("stray.txt"), "x").unwrap();
    std::fs::remove_file(a.join("zh/index.html")).unwrap();
    let o = check(&a);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1));
    for needle in [
        "changed: en/demo/tcp.md",
        "not generated: stray.txt",
        "missing: zh/index.html",
    ] {
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
}

#[test]
fn a_failed_build_leaves_the_old_site_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("site");
    assert!(build(&[Path::new(DEMO)], &out).status.success());
    let before = tree(&out);
    let bad = write(
        dir.path(),
        "broken",
        "a.json",
        "{\"schema_version\": 2, \"results\": [",
    );
    let o = build(&[&bad], &out);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(tree(&out), before);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        leftovers.len(),
        2,
        "no staging tree left behind: {leftovers:?}"
    );
}

#[test]
fn strings_from_archives_are_escaped_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = archive(six_runs());
    a["host"]["cpu"] = json!("<script>alert(1)</script> [x](javascript:alert(2))");
    a["host"]["os_name"] = json!("<img src=x onerror=alert(3)>");
    a["host"]["machine"] = json!("\"><img onerror=alert(4)>");
    a["results"][0]["command"] = json!([
        "/x/echomark-runner",
        "once",
        "--protocol",
        "</code><script>alert(5)</script>"
    ]);
    a["git_head"] = json!("<b>head</b>");
    let raw = write(dir.path(), "evil<i>", "a.json", &a.to_string());
    let out = dir.path().join("site");
    let o = build(&[raw.parent().unwrap()], &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let files = tree(&out);
    assert!(
        files.keys().all(|k| !k.contains('<') && !k.contains('>')),
        "sanitised file names: {:?}",
        files.keys()
    );
    for (path, bytes) in &files {
        if path.ends_with(".html") || path.ends_with(".svg") {
            let text = String::from_utf8_lossy(bytes);
            // Escaped text may still *read* "onerror=alert"; what must never appear is markup.
            for bad in [
                "<script",
                "<img",
                "alert(3)>",
                "alert(4)>",
                "</code><script",
                "href=\"javascript:",
                "<b>head",
                "<i>",
            ] {
                assert!(!text.contains(bad), "{path} contains {bad}");
            }
        }
    }
    let slug = echomark::output::safe_name("evil<i>");
    let html = text(&files, &format!("en/{slug}/overview.html"));
    assert!(html.contains("&lt;script&gt;"), "shown as text");
}

/// Every `href` and `src` in `html` that is relative.
fn relative_targets(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    for attr in ["href=\"", "src=\""] {
        for (i, _) in html.match_indices(attr) {
            let rest = &html[i + attr.len()..];
            let target = &rest[..rest.find('"').unwrap_or(0)];
            if !target.contains("://") && !target.starts_with("mailto:") && !target.starts_with('#')
            {
                out.push(target.split('#').next().unwrap_or("").to_string());
            }
        }
    }
    out
}

#[test]
fn every_internal_link_and_image_resolves() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("site");
    assert!(build(
        &[
            Path::new(DEMO),
            Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/raw-results"))
        ],
        &out
    )
    .status
    .success());
    let files = tree(&out);
    let mut checked = 0;
    for (path, bytes) in &files {
        let text = String::from_utf8_lossy(bytes);
        let dir = Path::new(path).parent().unwrap();
        let targets: Vec<String> = if path.ends_with(".html") {
            relative_targets(&text)
        } else if path.ends_with(".md") {
            text.match_indices("](")
                .filter_map(|(i, _)| {
                    let rest = &text[i + 2..];
                    rest.find(')')
                        .map(|end| rest[..end].split('#').next().unwrap_or("").to_string())
                })
                .filter(|t| !t.contains("://"))
                .collect()
        } else {
            continue;
        };
        for target in targets.iter().filter(|t| !t.is_empty()) {
            let mut parts: Vec<&str> = Vec::new();
            let joined = dir.join(target);
            for c in joined.components() {
                match c {
                    std::path::Component::ParentDir => assert!(
                        parts.pop().is_some(),
                        "{path}: {target} climbs out of the site"
                    ),
                    std::path::Component::Normal(p) => parts.push(p.to_str().unwrap()),
                    _ => {}
                }
            }
            let resolved = parts.join("/");
            assert!(
                files.contains_key(&resolved),
                "{path}: {target} → {resolved} is not in the site"
            );
            checked += 1;
        }
    }
    assert!(checked > 200, "only {checked} links checked");
}

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
    // Seed 002: TCP 1.98×, coroutine TCP 1.84× and 3.54× one thread (p99 shown to the 3
    // significant digits the histograms keep); the 3.54× load has no distinguishable winner. echomark names sharded 4 correctly as
    // four io_contexts with one thread each (arknet printed "4 个 io_context / 4 个线程").
    for needle in [
        "**TCP / Standalone Asio / 无额外业务计算**：4 个 io_context / 各 1 个线程 的吞吐量中位数最高，每秒 367,535 次往返（p99 1,350 µs），其范围整体高于第二名 2 个 io_context / 各 1 个线程",
        "最快的中位数是单线程的 1.84×。",
        "没有可区分的最快模型，4 个 io_context / 各 1 个线程（每秒 163,155 次往返，p99 1,750 µs）",
        "最快的中位数是单线程的 3.54×。",
        "本机完成 **1,620 次 IPv4 回环测量**",
    ] {
        assert!(zh.contains(needle), "{needle} not in:\n{zh}");
    }
    let en = text(&files, "en/arknet/overview.md");
    assert!(en.contains("4 io_contexts / 1 thread each has the highest throughput median, 367,535 round trips/s (p99 1,350 µs), and its range lies above the runner-up's"), "{en}");
    assert!(
        en.contains("The fastest median is 1.98× one thread's."),
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

/// The part of a Markdown page from `## {heading}` to the next second-level heading.
fn section<'a>(page: &'a str, heading: &str) -> &'a str {
    let start = page
        .find(&format!("\n## {heading}\n"))
        .unwrap_or_else(|| panic!("no section {heading:?} in:\n{page}"));
    let rest = &page[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |e| e + 3);
    &rest[..end]
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
fn the_committed_site_is_up_to_date() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_echomark"))
        .current_dir(root)
        .arg("check")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "site/ is stale: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn snapshot_of_the_demo_site() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("site");
    assert!(build(&[Path::new(DEMO)], &out).status.success());
    let files = tree(&out);
    for page in [
        "en/index.md",
        "zh/index.md",
        "en/demo/overview.md",
        "zh/demo/overview.md",
        "en/demo/udp.md",
        "zh/demo/udp.md",
    ] {
        let name = page.replace('/', "__");
        // Hashes and times come from the fixture file, so they are stable.
        insta::assert_snapshot!(name, text(&files, page));
    }
    insta::assert_snapshot!(
        "zh__demo__charts__udp_throughput_svg",
        text(&files, "zh/demo/charts/udp-tokio-work0-throughput.svg")
    );
}

/// Serves `root` on 127.0.0.1 for `requests` requests.
fn serve(root: PathBuf, requests: usize) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(requests) {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 4096];
            let n = s.read(&mut buf).unwrap_or(0);
            let req = String::from_utf8_lossy(&buf[..n]);
            let path = req
                .split_whitespace()
                .nth(1)
                .unwrap_or("/")
                .trim_start_matches('/')
                .to_string();
            let file = root.join(if path.is_empty() { "index.html" } else { &path });
            let (status, body) = match std::fs::read(&file) {
                Ok(b) if file.starts_with(&root) => ("200 OK", b),
                _ => ("404 Not Found", b"not found".to_vec()),
            };
            let kind = match file.extension().and_then(|e| e.to_str()) {
                Some("html") => "text/html; charset=utf-8",
                Some("css") => "text/css",
                Some("svg") => "image/svg+xml",
                _ => "application/octet-stream",
            };
            let _ = write!(s, "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
            let _ = s.write_all(&body);
        }
    });
    port
}

fn chromium() -> Option<PathBuf> {
    [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}

#[test]
fn the_site_works_in_headless_chromium() {
    let Some(browser) = chromium() else {
        echomark::skip::because("no Chromium installed (.ci/run installs Debian's chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("site");
    assert!(build(&[Path::new(DEMO)], &out).status.success());
    let port = serve(out.clone(), 64);
    let profile = dir.path().join("profile");
    let run = |url: &str, extra: &[&str]| {
        let mut cmd = std::process::Command::new(&browser);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=3000",
        ]);
        cmd.arg(format!("--user-data-dir={}", profile.display()));
        cmd.args(extra).arg(url);
        cmd.output().expect("chromium runs")
    };
    let base = format!("http://127.0.0.1:{port}");
    for (page, heading) in [
        ("zh/demo/overview.html", "核心结果"),
        ("en/demo/overview.html", "Key results"),
    ] {
        let out = run(
            &format!("{base}/{page}"),
            &["--dump-dom", "--enable-logging=stderr", "--v=0"],
        );
        let dom = String::from_utf8_lossy(&out.stdout);
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(dom.contains(heading), "{page}: {dom}");
        assert!(
            dom.contains("<div class=\"table-wrap\"><table>"),
            "tables wrapped for scrolling"
        );
        assert!(
            dom.contains("<figure class=\"chart\"><svg"),
            "charts inline, tooltips live"
        );
        let console: Vec<&str> = log
            .lines()
            .filter(|l| {
                l.contains("CONSOLE")
                    || l.contains("Uncaught")
                    || l.contains("Failed to load resource")
            })
            .collect();
        assert!(console.is_empty(), "{page}: console errors {console:?}");
        // Follow the language switch the way a reader would: it lands on the same page.
        let href = dom
            .split("class=\"lang-switch\" href=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .expect("switch link");
        let other = if page.starts_with("zh") {
            "en/demo/overview.html"
        } else {
            "zh/demo/overview.html"
        };
        assert_eq!(href, format!("../../{other}"));
        let page_dir = page.rsplit_once('/').map_or("", |(d, _)| d);
        let switched = run(&format!("{base}/{page_dir}/{href}"), &["--dump-dom"]);
        let switched = String::from_utf8_lossy(&switched.stdout);
        let other_heading = if page.starts_with("zh") {
            "Key results"
        } else {
            "核心结果"
        };
        assert!(
            switched.contains(other_heading),
            "the switch reaches the same page in the other language"
        );
    }
    // A protocol page of the committed seven-protocol baseline: the TLS-overhead and TCP
    // sections render as headings with their tables, in both languages, without errors.
    let baseline = dir.path().join("baseline");
    let raw = Path::new(env!("CARGO_MANIFEST_DIR")).join("raw-results/epyc2-20261201-baseline");
    assert!(build(&[&raw], &baseline).status.success());
    let baseline_port = serve(baseline, 8);
    for (page, headings) in [
        (
            "en/epyc2-20261201-baseline/wss.html",
            ["TLS overhead: WSS against WebSocket", "Compared with TCP"],
        ),
        (
            "zh/epyc2-20261201-baseline/wss.html",
            ["TLS 开销：WSS 对比 WebSocket", "与 TCP 对比"],
        ),
    ] {
        let out = run(
            &format!("http://127.0.0.1:{baseline_port}/{page}"),
            &["--dump-dom", "--enable-logging=stderr", "--v=0"],
        );
        let dom = String::from_utf8_lossy(&out.stdout);
        for heading in headings {
            let at = dom
                .find(&format!(">{heading}</h2>"))
                .unwrap_or_else(|| panic!("{page}: no heading {heading}"));
            let next_table = dom[at..].find("<table>").expect("a table follows");
            let next_heading = dom[at + 4..].find("<h2>").map_or(usize::MAX, |h| h + 4);
            assert!(
                next_table < next_heading,
                "{page}: {heading} has its own table"
            );
        }
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(
            !log.lines()
                .any(|l| l.contains("CONSOLE") || l.contains("Uncaught")),
            "{page}: {log}"
        );
    }
    // The latency-under-load page: its charts are inline SVG with live tooltips, in both
    // languages, without console errors.
    let curves = dir.path().join("curves");
    assert!(build(&[Path::new(LATENCY_CURVE)], &curves).status.success());
    let curves_port = serve(curves, 16);
    for (page, heading) in [
        ("en/epyc2-20261201-latency-curve/load.html", ">Knees</h2>"),
        ("zh/epyc2-20261201-latency-curve/load.html", ">拐点</h2>"),
    ] {
        let out = run(
            &format!("http://127.0.0.1:{curves_port}/{page}"),
            &["--dump-dom", "--enable-logging=stderr", "--v=0"],
        );
        let dom = String::from_utf8_lossy(&out.stdout);
        assert!(dom.contains(heading), "{page}: {dom}");
        assert_eq!(
            dom.matches("<figure class=\"chart\"><svg").count(),
            9,
            "{page}: one inline chart per curve"
        );
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(
            !log.lines()
                .any(|l| l.contains("CONSOLE") || l.contains("Uncaught")),
            "{page}: {log}"
        );
    }
    // A screenshot of a narrow viewport is not blank: it is far larger than one of an empty page.
    let shot = dir.path().join("narrow.png");
    let blank = dir.path().join("blank.png");
    run(
        &format!("{base}/en/demo/udp.html"),
        &[
            "--window-size=420,900",
            &format!("--screenshot={}", shot.display()),
        ],
    );
    run(
        "about:blank",
        &[
            "--window-size=420,900",
            &format!("--screenshot={}", blank.display()),
        ],
    );
    let (png, empty) = (
        std::fs::read(&shot).expect("screenshot written"),
        std::fs::read(&blank).expect("blank screenshot"),
    );
    assert!(png.starts_with(b"\x89PNG"));
    assert!(
        png.len() > 5 * empty.len(),
        "{} bytes vs {} for a blank page",
        png.len(),
        empty.len()
    );
}

/// The legend entries of an SVG chart: (label, swatch colour). A swatch is a 12 × 12 rect in
/// the legend column (x = 672: the chart's 860 px less its 200 px legend, plus 12) directly
/// followed by its label's text element.
fn legend_entries(svg: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (i, _) in svg.match_indices("<rect x=\"672\" ") {
        if !svg[i..]
            .split('>')
            .next()
            .unwrap_or("")
            .contains("width=\"12\" height=\"12\"")
        {
            continue;
        }
        let rest = &svg[i..];
        let Some(fill) = rest
            .split("fill=\"")
            .nth(1)
            .and_then(|f| f.split('"').next())
        else {
            continue;
        };
        let Some(text) = rest.split("<text").nth(1) else {
            continue;
        };
        let label = text
            .split_once('>')
            .and_then(|(_, t)| t.split("</text>").next())
            .unwrap_or("")
            .trim()
            .to_string();
        out.push((label, fill.to_string()));
    }
    out
}

#[test]
fn one_io_model_has_one_colour_on_every_chart() {
    let site = Path::new(env!("CARGO_MANIFEST_DIR")).join("site");
    let files = tree(&site);
    let mut colours: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut charts = 0;
    for (path, bytes) in files.iter().filter(|(p, _)| p.ends_with(".svg")) {
        let lang = path.split('/').next().unwrap_or_default().to_string();
        for (label, fill) in legend_entries(&String::from_utf8_lossy(bytes)) {
            let seen = colours.entry(lang.clone()).or_default();
            let first = seen.entry(label.clone()).or_insert_with(|| fill.clone());
            assert_eq!(*first, fill, "{path}: {label} is {fill}, elsewhere {first}");
        }
        charts += 1;
    }
    assert!(charts > 50, "{charts}");
    let en = &colours["en"];
    assert!(en.len() >= 5, "{en:?}");
    let distinct: std::collections::BTreeSet<&String> = en.values().collect();
    assert_eq!(
        distinct.len(),
        en.len(),
        "different models, different colours: {en:?}"
    );
}

#[test]
fn the_udp_scope_names_exactly_the_families_measured() {
    let site = Path::new(env!("CARGO_MANIFEST_DIR")).join("site");
    let page = std::fs::read_to_string(site.join("en/udp-report.md")).unwrap();
    let scope = section(&page, "Scope");
    // The families and paths of the committed archives that measured UDP (a path is
    // loopback unless the runs recorded another).
    let raw = Path::new(env!("CARGO_MANIFEST_DIR")).join("raw-results");
    let mut families = std::collections::BTreeSet::new();
    let mut paths = std::collections::BTreeSet::new();
    for dataset in std::fs::read_dir(&raw).unwrap().flatten() {
        let Ok(files) = std::fs::read_dir(dataset.path()) else {
            continue;
        };
        for file in files.flatten() {
            let Ok(text) = std::fs::read_to_string(file.path()) else {
                continue;
            };
            let Ok(archive) = serde_json::from_str::<serde_json::Value>(&text) else {
                continue;
            };
            let Some(protocols) = archive["settings"]["protocols"].as_array() else {
                continue;
            };
            if !protocols.contains(&json!("udp")) {
                continue;
            }
            families.insert(
                archive["settings"]["address_family"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            );
            let kind = archive["results"][0]["metrics"]["target"]["path"]["kind"]
                .as_str()
                .unwrap_or("loopback");
            // In the order the pages list them.
            paths.insert(match kind {
                "loopback" => (0, "loopback"),
                "veth" => (1, "cross-namespace veth"),
                _ => (2, "network"),
            });
        }
    }
    let families_text = match (families.contains("ipv4"), families.contains("ipv6")) {
        (true, true) => "IPv4 and IPv6",
        (true, false) => "IPv4",
        (false, true) => "IPv6",
        (false, false) => panic!("no committed UDP archive"),
    };
    let expected = if paths.len() == 1 && paths.contains(&(0, "loopback")) {
        format!("short {families_text} loopback runs")
    } else {
        let names: Vec<&str> = paths.iter().map(|(_, n)| *n).collect();
        format!(
            "short {families_text} runs on the hosts named above, over {}",
            names.join(" and ")
        )
    };
    assert!(scope.contains(&expected), "{families:?} {paths:?}: {scope}");
    if !families.contains("ipv6") {
        assert!(!scope.contains("IPv6"), "{scope}");
    }
}

#[test]
fn the_overview_names_the_build_and_the_cpu_details_or_says_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let demo = std::fs::read_to_string(Path::new(DEMO).join("archive.json")).unwrap();
    let mut a: serde_json::Value = serde_json::from_str(&demo).unwrap();
    a["host"]["cpu_signature"] = json!("family 25, model 17, stepping 0");
    a["host"]["smt_active"] = json!(false);
    a["host"]["cpu_governor"] = json!("performance");
    a["toolchain"] = json!({
        "rustc": "rustc 1.95.0 (59807616e 2026-04-14)",
        "target": "x86_64-unknown-linux-gnu",
        "profile": "release",
        "opt_level": "3",
        "debug_info": "false",
        "dependencies": {"tokio": "1.48.0", "rustls": "0.23.35"}
    });
    write(dir.path(), "built", "a.json", &a.to_string());
    write(dir.path(), "older", "a.json", &demo);
    let out = dir.path().join("site");
    let o = build(
        &[&dir.path().join("built"), &dir.path().join("older")],
        &out,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let files = tree(&out);
    let built = text(&files, "en/built/overview.md");
    for shown in [
        // Archive text is escaped for Markdown.
        r"rustc 1.95.0 \(59807616e 2026-04-14\), x86\_64-unknown-linux-gnu, release (opt-level 3)",
        "rustls 0.23.35, tokio 1.48.0",
        "| CPU signature | family 25, model 17, stepping 0 |",
        "| Simultaneous multithreading | off |",
        "| Frequency governor | performance |",
    ] {
        assert!(built.contains(shown), "{shown} in\n{built}");
    }
    let zh = text(&files, "zh/built/overview.md");
    assert!(zh.contains("| 超线程（SMT） | 关闭 |"), "{zh}");
    // An archive from before the toolchain was recorded says so instead of guessing.
    let older = text(&files, "en/older/overview.md");
    assert!(
        older.contains("| CPU signature | not recorded |")
            && older.contains("| Frequency governor | not recorded |"),
        "{older}"
    );
    assert!(!older.contains("rustc 1.95"), "{older}");
}

#[test]
fn the_udp_report_explains_a_loss_and_shows_the_buffer_that_fixes_it() {
    let raw = Path::new(env!("CARGO_MANIFEST_DIR")).join("raw-results");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("site");
    let o = build(&[&raw], &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let files = tree(&out);
    let en = text(&files, "en/udp-report.md");
    let repro = section(&en, "Reproduction and raw evidence");
    // The lossy run comes from the isolation dataset, with its buffer flag, and is followed
    // by the run of the same load that passes with a larger buffer.
    let commands: Vec<&str> = repro
        .lines()
        .filter(|l| l.starts_with("echomark-runner once"))
        .collect();
    assert_eq!(commands.len(), 2, "{repro}");
    let flag = |c: &str| {
        c.split_once("--udp-server-recv-buffer ")
            .map(|(_, b)| b.split_whitespace().next().unwrap().parse::<u64>().unwrap())
    };
    let (lossy, passing) = (flag(commands[0]).unwrap(), flag(commands[1]).unwrap());
    assert!(passing > lossy, "{repro}");
    let without_buffer = |c: &str| {
        c.split(" --udp-server-recv-buffer")
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(without_buffer(commands[0]), without_buffer(commands[1]));
    assert!(
        repro
            .contains("The same load passes when only the requested server receive buffer changes"),
        "{repro}"
    );
    // The callout's two numbers are the run's loss and the kernel's counter, which agree.
    let callout = repro
        .lines()
        .find(|l| l.starts_with("> **What the loss means.**"))
        .unwrap();
    assert!(callout.contains("rose by exactly"), "{callout}");
    assert!(
        repro.contains("(epyc2-20261201-dimensions/dimensions-udp.md)"),
        "{repro}"
    );
    // One row per dataset with UDP runs in the conditions, with its date and hashes.
    let conditions = section(&en, "Test conditions");
    let has_udp = |dir: &Path| {
        std::fs::read_dir(dir).unwrap().any(|f| {
            std::fs::read_to_string(f.unwrap().path())
                .is_ok_and(|t| t.contains("\"protocol\": \"udp\""))
        })
    };
    let datasets = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("raw-results"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && has_udp(p))
        .count();
    assert_eq!(
        conditions
            .lines()
            .filter(|l| l.starts_with("| [") && l.contains(" | 2026-12-0"))
            .count(),
        datasets,
        "{conditions}"
    );
    // The read-back sentences became one table.
    let linux = section(&en, "Socket buffers on Linux");
    assert!(
        linux.contains("| Dataset | Server receive buffer requested | Read back |"),
        "{linux}"
    );
    let zh = text(&files, "zh/udp-report.md");
    assert!(zh.contains("> **丢包说明**："), "{zh}");
}

#[test]
fn the_udp_callout_shows_the_kernel_counter_before_after_and_fragmentation() {
    let dir = tempfile::tempdir().unwrap();
    let demo = std::fs::read_to_string(Path::new(DEMO).join("archive.json")).unwrap();
    let mut a: serde_json::Value = serde_json::from_str(&demo).unwrap();
    for entry in a["results"].as_array_mut().unwrap() {
        let m = &mut entry["metrics"];
        let lost = m["udp_lost_messages"].as_u64().unwrap_or(0);
        if m.is_object() && m["protocol"] == "udp" {
            m["kernel_udp_rcvbuf_errors_delta"] = json!(lost);
            m["kernel_udp_rcvbuf_errors_before"] = json!(152_304);
            m["kernel_udp_rcvbuf_errors_after"] = json!(152_304 + lost);
            m["kernel_ip_frag_creates_delta"] = json!(0);
            m["kernel_ip_reasm_reqds_delta"] = json!(0);
            m["kernel_ip_reasm_oks_delta"] = json!(0);
            m["kernel_ip_reasm_fails_delta"] = json!(0);
        }
    }
    write(dir.path(), "counted", "a.json", &a.to_string());
    let out = dir.path().join("site");
    let o = build(&[&dir.path().join("counted")], &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let files = tree(&out);
    let en = text(&files, "en/udp-report.md");
    let callout = en
        .lines()
        .find(|l| l.starts_with("> **What the loss means.**"))
        .unwrap_or_else(|| panic!("{en}"));
    let lost: String = callout
        .split("The client sent ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap()
        .to_string();
    let after = 152_304 + lost.replace(',', "").parse::<u64>().unwrap();
    let expected = format!(
        "read 152,304 before the run and {} after it, a delta of {lost}",
        echomark::format::count(after)
    );
    assert!(callout.contains(&expected), "{expected} in {callout}");
    assert!(callout.contains("created 0 IP fragments"), "{callout}");
    let zh = text(&files, "zh/udp-report.md");
    assert!(zh.contains("运行前为 152,304"), "{zh}");
}

#[test]
fn each_archive_is_published_once_compressed_and_reads_back_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("site");
    assert!(build(&[Path::new(DEMO)], &out).status.success());
    let files = tree(&out);
    let raw = std::fs::read(Path::new(DEMO).join("archive.json")).unwrap();
    let published: Vec<&String> = files.keys().filter(|p| p.starts_with("data/")).collect();
    assert!(
        published.iter().all(|p| !p.ends_with("archive.json")),
        "no verbatim copy: {published:?}"
    );
    let gz = published
        .iter()
        .find(|p| p.ends_with("archive.json.gz"))
        .expect("the archive, compressed");
    let mut back = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(files[*gz].as_slice()),
        &mut back,
    )
    .unwrap();
    assert_eq!(back, raw, "the published archive is the raw archive");
    assert!(files[*gz].len() * 2 < raw.len(), "compressed at least 2×");
    // echomark reads the published file as it reads the raw one.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_echomark"))
        .arg("validate")
        .arg(out.join(gz.as_str()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("passed"));
}

#[test]
fn a_series_gets_a_changes_page_and_a_history() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw");
    let before = common::baseline_slice();
    let mut after = before.clone();
    after["recorded_at_utc"] = "2026-12-02T09:00:00+00:00".into();
    for r in after["results"].as_array_mut().unwrap() {
        if r["protocol"] == "tcp" {
            common::scale_throughput(r, 0.8);
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

const LATENCY_CURVE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/raw-results/epyc2-20261201-latency-curve"
);

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

#[test]
fn snapshot_of_the_latency_under_load_page() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("site");
    assert!(build(&[Path::new(LATENCY_CURVE)], &out).status.success());
    let files = tree(&out);
    for lang in ["en", "zh"] {
        let page = format!("{lang}/epyc2-20261201-latency-curve/load.md");
        insta::assert_snapshot!(page.replace('/', "__"), text(&files, &page));
    }
    // The curve chart's layout: title above a gap, log axis, whiskers, knee, saturated ✕.
    let chart = "en/epyc2-20261201-latency-curve/charts/load-tokio-echomark-http-1024-16x1-sharded2-work0-uniform.svg";
    insta::assert_snapshot!(
        "en__latency_curve__load_http_sharded2_svg",
        text(&files, chart)
    );
}

const BACKENDS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/raw-results/xeon2-20261202-backends"
);

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
        assert_eq!(part.matches("\n### ").count(), 6, "{protocol}");
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
    // summary.json: every backend pair's verdict follows from the two configurations' ranges.
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
        let expected = if s.0 <= b.1 && b.0 <= s.1 {
            "not_distinguishable"
        } else if s.0 > b.1 {
            "subject_higher"
        } else {
            "subject_lower"
        };
        assert_eq!(row["throughput"], expected, "{row}");
    }
}

#[test]
fn snapshot_of_a_two_backend_protocol_page() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("site");
    assert!(build(&[Path::new(BACKENDS)], &out).status.success());
    let files = tree(&out);
    for lang in ["en", "zh"] {
        let page = format!("{lang}/xeon2-20261202-backends/tcp.md");
        insta::assert_snapshot!(page.replace('/', "__"), text(&files, &page));
    }
}

#[test]
fn datasets_of_two_hosts_get_a_hosts_page_with_verdicts_from_the_ranges() {
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
    assert!(
        en.contains("## Host B (Other CPU) against host A (AMD EPYC)"),
        "{en}"
    );
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
        tcp.contains(
            "host B has the higher throughput in 5, host A in 0, and 0 are not distinguishable"
        ),
        "{tcp}"
    );
    assert!(tcp.contains("1.50×"), "{tcp}");
    for protocol in ["UDP", "HTTP"] {
        let part = part_of(protocol);
        assert!(
            part.contains("higher throughput in 0, host A in 0, and 5 are not distinguishable"),
            "{protocol}: {part}"
        );
        assert!(!part.contains("| B higher |") && !part.contains("| A higher |"));
    }
    let zh = text(&files, "zh/hosts.md");
    assert!(
        zh.contains("## 主机 B（Other CPU）与主机 A（AMD EPYC）"),
        "{zh}"
    );
    assert!(zh.contains("| B 更高 |"));
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
    assert!(
        hosts.contains("## Host B (Other CPU) against host A (AMD EPYC)"),
        "{hosts}"
    );
}

/// The committed UDP report shows the seed's concrete counter line from a dataset that
/// recorded the counter, and its numbers agree: after − before = the delta = the loss.
#[test]
fn the_committed_udp_report_shows_the_counter_before_and_after_a_lossy_run() {
    let page = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("site/en/udp-report.md"),
    )
    .unwrap();
    let number = |after: &str| -> u64 {
        let at = page.find(after).unwrap_or_else(|| panic!("no {after:?}"));
        let digits: String = page[at + after.len()..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ',')
            .filter(char::is_ascii_digit)
            .collect();
        digits.parse().unwrap()
    };
    let lost = number("The client sent ");
    let before = number("`UdpRcvbufErrors` read ");
    let after = number("before the run and ");
    let delta = number("after it, a delta of ");
    assert_eq!((after - before, delta), (lost, lost), "{before} → {after}");
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

/// An archive whose runs crossed a veth pair into another network namespace: the veth
/// path in `interface`, on every run of the committed socat archive.
fn across_veth(interface: &str) -> serde_json::Value {
    let committed = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("raw-results/epyc2-20261202-external/socat.json");
    let mut a: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(committed).unwrap()).unwrap();
    a["settings"]["external_server"]["machine"] = a["host"].clone();
    for r in a["results"].as_array_mut().unwrap() {
        r["server"]["separate_network_namespace"] = json!(true);
        r["metrics"]["target"]["path"] = json!({
            "kind": "veth",
            "interface": interface,
            "mtu": 1500,
            "client_address": "10.213.0.2"
        });
    }
    a
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

/// The lines of the section `## heading` of a Markdown page (up to the next `## `).
fn md_section<'a>(page: &'a str, heading: &str) -> Vec<&'a str> {
    let start = format!("## {heading}");
    page.lines()
        .skip_while(|l| *l != start)
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .collect()
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
            let tie_in_table = rows.iter().any(|r| r.contains("no distinguishable winner"));
            let winner_in_table = rows
                .iter()
                .any(|r| !r.contains("no distinguishable winner"));
            if bullet.contains("no distinguishable winner") {
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
    let answer = |dataset: &str| {
        let text = std::fs::read_to_string(root.join(dataset).join("overview.md")).unwrap();
        // The answer comes right after the lead, before any table or chart.
        let first = text.split("\n## ").nth(1).unwrap_or("").to_string();
        assert!(first.starts_with("The answer"), "{dataset}: {first:.80}");
        first
    };
    let backends = answer("xeon2-20261202-backends");
    assert!(backends.contains("monoio (io_uring) is faster in") && backends.contains("tokio in"));
    for server in ["nginx", "socat"] {
        let servers = answer("epyc2-20261202-servers-interleaved");
        assert!(
            servers.contains(&format!("{server} is faster in")),
            "{servers}"
        );
        assert!(servers.contains("interleaved in time"), "{servers}");
        let sequential = answer("epyc2-20261202-external");
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
    assert!(baseline.contains("no distinguishable winner"), "{baseline}");
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
    let verdicts = ["regressed", "improved", "no change", "not comparable"];
    let mut protocols = 0;
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
        }
        protocols += 1;
    }
    assert_eq!(protocols, 7);
    // The long tables wait behind disclosures; the page shows the largest changes first.
    assert!(page.contains("<details><summary>Every configuration compared</summary>"));
    assert!(page.contains("The 20 largest of 210 changed configurations"));
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
