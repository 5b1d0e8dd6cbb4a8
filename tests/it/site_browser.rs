//! The built site in headless Chromium, served over local HTTP: pages load with their
//! tables and inline charts and no console error, and the language switch lands on the same
//! page in the other language.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::common::harness::{harness, headless, run, HARNESS};
use crate::common::site::*;
use crate::common::static_site::serve_mounted;

/// What the harness notes of each page: its DOM as the browser built it, and where its
/// language switch points and lands.
const PAGE_FACTS: &str = r#"
const link = d.querySelector('a.lang-switch');
notes.push(JSON.stringify({
  page,
  dom: d.documentElement.outerHTML,
  switch: link && {
    href: link.getAttribute('href'),
    lands: new URL(link.getAttribute('href'), f.contentWindow.location.href).pathname,
  },
}));
"#;

#[test]
fn the_site_works_in_headless_chromium() {
    let Some(browser) = chromium() else {
        echomark::skip::because("no Chromium installed (.ci/run installs Debian's chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("site");
    assert!(build(&[Path::new(DEMO)], &out).status.success());
    // The demo site, and under /committed/ the committed site's pages
    // (`site::the_committed_site_is_up_to_date` proves they are what the committed archives
    // build), from one origin: one Chromium reads them all.
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("site");
    let pages: Vec<String> = [
        "zh/demo/overview.html",
        "en/demo/overview.html",
        "committed/en/epyc2-20261201-baseline/wss.html",
        "committed/zh/epyc2-20261201-baseline/wss.html",
        "committed/en/epyc2-20261201-latency-curve/load.html",
        "committed/zh/epyc2-20261201-latency-curve/load.html",
    ]
    .map(String::from)
    .to_vec();
    let harness_page = harness(&pages, &[1400], "", PAGE_FACTS);
    let port = serve_mounted(
        out.clone(),
        vec![("committed", committed)],
        Some((HARNESS, harness_page)),
    );
    let seen = run(&browser, port, &["--enable-logging=stderr", "--v=0"]);
    assert_eq!(seen.checked as usize, pages.len(), "{:?}", seen.notes);
    let facts: BTreeMap<String, Value> = seen
        .notes
        .iter()
        .map(|n| {
            let v: Value = serde_json::from_str(n).unwrap_or_else(|e| panic!("{e}: {n}"));
            (v["page"].as_str().unwrap().to_string(), v)
        })
        .collect();
    // No page logged a console error, an uncaught exception or a resource it could not load.
    let console: Vec<&str> = seen
        .log
        .lines()
        .filter(|l| {
            l.contains("CONSOLE") || l.contains("Uncaught") || l.contains("Failed to load resource")
        })
        .collect();
    assert!(console.is_empty(), "console errors {console:?}");

    for (page, heading, other, other_heading) in [
        (
            "zh/demo/overview.html",
            "核心结果",
            "en/demo/overview.html",
            "Key results",
        ),
        (
            "en/demo/overview.html",
            "Key results",
            "zh/demo/overview.html",
            "核心结果",
        ),
    ] {
        let dom = dom_of(&facts, page);
        assert!(dom.contains(heading), "{page}: {dom}");
        assert!(
            dom.contains("<div class=\"table-wrap\"><table>"),
            "tables wrapped for scrolling"
        );
        assert!(
            dom.contains("<figure class=\"chart\"><div class=\"chart-wide\"><svg")
                && dom.contains("<div class=\"chart-phone\"><svg"),
            "charts inline (a wide and a phone drawing), tooltips live"
        );
        let switch = &facts[page]["switch"];
        assert_eq!(switch["href"], format!("../../{other}"), "{page}");
        assert_eq!(switch["lands"], format!("/{other}"), "{page}");
        assert!(
            dom_of(&facts, other).contains(other_heading),
            "the switch reaches the same page in the other language"
        );
    }
    for (page, headings) in [
        (
            "committed/en/epyc2-20261201-baseline/wss.html",
            ["TLS overhead: WSS against WebSocket", "Compared with TCP"],
        ),
        (
            "committed/zh/epyc2-20261201-baseline/wss.html",
            ["TLS 开销：WSS 对比 WebSocket", "与 TCP 对比"],
        ),
    ] {
        let dom = dom_of(&facts, page);
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
    }
    for (page, heading) in [
        (
            "committed/en/epyc2-20261201-latency-curve/load.html",
            ">Knees</h2>",
        ),
        (
            "committed/zh/epyc2-20261201-latency-curve/load.html",
            ">拐点</h2>",
        ),
    ] {
        let dom = dom_of(&facts, page);
        assert!(dom.contains(heading), "{page}: {dom}");
        assert_eq!(
            dom.matches("<figure class=\"chart\"><div class=\"chart-wide\"><svg")
                .count(),
            9,
            "{page}: one inline chart per curve"
        );
        assert_eq!(
            dom.matches("<div class=\"chart-phone\"><svg").count(),
            9,
            "{page}: each with its phone drawing"
        );
    }

    // A screenshot of a narrow viewport is not blank: it is far larger than one of an empty page.
    let base = format!("http://127.0.0.1:{port}");
    let profile = dir.path().join("profile");
    let shoot = |url: &str, png: &Path| {
        headless(&browser, &profile)
            .args(["--window-size=420,900", "--virtual-time-budget=3000"])
            .arg(format!("--screenshot={}", png.display()))
            .arg(url)
            .output()
            .expect("chromium runs");
        std::fs::read(png).expect("screenshot written")
    };
    let png = shoot(
        &format!("{base}/en/demo/udp.html"),
        &dir.path().join("narrow.png"),
    );
    let empty = shoot("about:blank", &dir.path().join("blank.png"));
    assert!(png.starts_with(b"\x89PNG"));
    assert!(
        png.len() > 5 * empty.len(),
        "{} bytes vs {} for a blank page",
        png.len(),
        empty.len()
    );
}

/// The DOM the harness noted for `page`.
fn dom_of(facts: &BTreeMap<String, Value>, page: &str) -> String {
    facts[page]["dom"].as_str().unwrap().to_string()
}
