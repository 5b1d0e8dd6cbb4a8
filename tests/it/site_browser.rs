//! The built site in headless Chromium, served over local HTTP: pages load with their
//! tables and inline charts and no console error, and the language switch lands on the same
//! page in the other language.

use std::path::Path;

use crate::common::site::*;
use crate::common::static_site::serve;

#[test]
fn the_site_works_in_headless_chromium() {
    let Some(browser) = chromium() else {
        echomark::skip::because("no Chromium installed (.ci/run installs Debian's chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("site");
    assert!(build(&[Path::new(DEMO)], &out).status.success());
    let port = serve(out.clone(), None);
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
    // The committed site's pages (`site::the_committed_site_is_up_to_date` proves they are
    // what the committed archives build).
    let committed_port = serve(Path::new(env!("CARGO_MANIFEST_DIR")).join("site"), None);
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
            &format!("http://127.0.0.1:{committed_port}/{page}"),
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
    for (page, heading) in [
        ("en/epyc2-20261201-latency-curve/load.html", ">Knees</h2>"),
        ("zh/epyc2-20261201-latency-curve/load.html", ">拐点</h2>"),
    ] {
        let out = run(
            &format!("http://127.0.0.1:{committed_port}/{page}"),
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
