//! `echomark build` and `check` end to end: the real binary, real archives, the real site
//! in headless Chromium when it is installed.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::site::*;
use crate::common::*;
use serde_json::json;

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
            let mut text = String::from_utf8_lossy(bytes).into_owned();
            // The explorer's own scripts are echomark's, not data.
            for own in [
                "<script type=\"application/json\" id=\"explore-text\">",
                "<script src=\"../data/explore.js\">",
                "<script src=\"../assets/explore.js\">",
            ] {
                text = text.replace(own, "");
            }
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
    // The committed site (what the committed archives build, as
    // `the_committed_site_is_up_to_date` proves) and the demo's, built here.
    let committed = tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("site"));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("site");
    assert!(build(&[Path::new(DEMO)], &out).status.success());
    let demo = tree(&out);
    let checked = links_resolve(&committed) + links_resolve(&demo);
    assert!(checked > 200, "only {checked} links checked");
}

/// Asserts that every relative link and image of the pages in `files` names a file of
/// `files` without climbing out of it; how many were checked.
fn links_resolve(files: &std::collections::BTreeMap<String, Vec<u8>>) -> usize {
    let mut checked = 0;
    for (path, bytes) in files {
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
    checked
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

/// Chinese typography over every committed zh page: no space between two Chinese
/// characters or beside full-width punctuation (outside code and table pipes), and no
/// heading repeated by the one right after it.
#[test]
fn chinese_pages_have_no_stray_spaces_no_repeated_headings_and_numbers_bound_to_units() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("site/zh");
    let files = tree(&root);
    let ideograph = |c: char| ('\u{4E00}'..='\u{9FFF}').contains(&c);
    let full_width = |c: char| {
        matches!(c, '\u{3000}'..='\u{303F}' | '\u{FF01}'..='\u{FF0F}' | '\u{FF1A}'..='\u{FF20}'
            | '\u{FF3B}'..='\u{FF40}' | '\u{FF5B}'..='\u{FF65}' | '“' | '”' | '‘' | '’')
    };
    let mut pages = 0;
    let mut stray = Vec::new();
    let mut unbound = Vec::new();
    for (path, bytes) in files.iter().filter(|(p, _)| p.ends_with(".md")) {
        pages += 1;
        let text = String::from_utf8_lossy(bytes);
        let mut fenced = false;
        let mut previous_heading: Option<String> = None;
        for line in text.lines() {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                continue;
            }
            if fenced {
                continue;
            }
            if line.starts_with('#') {
                let heading = line.trim_start_matches('#').trim().to_string();
                assert_ne!(
                    previous_heading.as_deref(),
                    Some(heading.as_str()),
                    "{path}: a heading repeated: {line}"
                );
                previous_heading = Some(heading);
            } else if !line.trim().is_empty() {
                previous_heading = None;
            }
            // Code spans are Latin: they stand for a word.
            let mut plain = String::new();
            for (i, part) in line.split('`').enumerate() {
                plain.push_str(if i % 2 == 0 { part } else { "x" });
            }
            let chars: Vec<char> = plain.chars().collect();
            for (i, c) in chars.iter().enumerate() {
                if *c != ' ' || i == 0 || chars[i - 1] == ' ' {
                    continue;
                }
                let Some(&after) = chars[i..].iter().find(|c| **c != ' ') else {
                    continue;
                };
                let before = chars[i - 1];
                if before == '|' || after == '|' {
                    continue;
                }
                if (ideograph(before) && ideograph(after))
                    || full_width(before)
                    || full_width(after)
                {
                    stray.push(format!("{path}: {line}"));
                }
            }
        }
    }
    // In the HTML a number and its unit are one: never a breakable space between them.
    for (path, bytes) in files.iter().filter(|(p, _)| p.ends_with(".html")) {
        let text = String::from_utf8_lossy(bytes);
        // Chart text never wraps, and a script is not text: only the page's own text counts.
        let mut prose = String::new();
        let mut rest: &str = &text;
        loop {
            let next = [("<svg", "</svg>"), ("<script", "</script>")]
                .iter()
                .filter_map(|(open, close)| rest.find(open).map(|i| (i, *close)))
                .min();
            let Some((start, close)) = next else { break };
            prose.push_str(&rest[..start]);
            rest = rest[start..]
                .split_once(close)
                .map_or("", |(_, after)| after);
        }
        prose.push_str(rest);
        let chars: Vec<char> = prose.chars().collect();
        for unit in ["µs", "字节", "次", "KiB", "MiB"] {
            let pattern: Vec<char> = format!(" {unit}").chars().collect();
            if let Some(w) = chars
                .windows(pattern.len() + 1)
                .find(|w| w[0].is_ascii_digit() && w[1..] == pattern[..])
            {
                unbound.push(format!("{path}: {}", w.iter().collect::<String>()));
            }
        }
    }
    assert!(pages > 100, "only {pages} zh pages");
    assert!(
        unbound.is_empty(),
        "{} numbers apart from their units: {:#?}",
        unbound.len(),
        &unbound[..unbound.len().min(10)]
    );
    assert!(
        stray.is_empty(),
        "{} stray spaces: {:#?}",
        stray.len(),
        &stray[..stray.len().min(10)]
    );
}
