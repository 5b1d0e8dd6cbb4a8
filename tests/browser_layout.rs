//! The committed site as a reader sees it in headless Chromium: at 390 px (a phone) no page
//! scrolls sideways, and at 1280 px no table of the index or the baseline's protocol pages is
//! wider than its wrapper. One browser run measures every page: a harness page (served by the
//! test, not part of the site) loads each page in an iframe of the given width.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};

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

/// The harness: loads `pages` one by one in an iframe `width` px wide, runs `check` on each
/// document, and writes the failures as JSON into `<pre id="out">`.
fn harness(pages: &[String], width: u32, check: &str) -> String {
    let list = serde_json::to_string(pages).unwrap();
    format!(
        r#"<!doctype html><html><body><pre id="out">running</pre>
<iframe id="f" style="width:{width}px;height:800px;border:0"></iframe>
<script>
const pages = {list};
const f = document.getElementById('f');
const failures = [];
let i = 0;
function next() {{
  if (i >= pages.length) {{ document.getElementById('out').textContent = JSON.stringify({{checked: i, failures}}); return; }}
  const page = pages[i++];
  f.onload = () => {{ try {{ const d = f.contentDocument; {check} }} catch (e) {{ failures.push(page + ': ' + e); }} next(); }};
  f.src = '/' + page;
}}
next();
</script></body></html>"#
    )
}

/// Serves `root` and the harness at `/__harness.html` until the process ends.
fn serve(root: PathBuf, harness: String) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 8192];
            let n = s.read(&mut buf).unwrap_or(0);
            let req = String::from_utf8_lossy(&buf[..n]);
            let path = req.split_whitespace().nth(1).unwrap_or("/").to_string();
            let path = percent_decode(path.trim_start_matches('/'));
            let (status, kind, body) = if path == "__harness.html" {
                (
                    "200 OK",
                    "text/html; charset=utf-8",
                    harness.clone().into_bytes(),
                )
            } else {
                let file = root.join(&path);
                let kind = match file.extension().and_then(|e| e.to_str()) {
                    Some("html") => "text/html; charset=utf-8",
                    Some("css") => "text/css",
                    Some("svg") => "image/svg+xml",
                    _ => "application/octet-stream",
                };
                match std::fs::read(&file) {
                    Ok(b) if !path.contains("..") => ("200 OK", kind, b),
                    _ => ("404 Not Found", "text/plain", b"not found".to_vec()),
                }
            };
            let _ = write!(
                s,
                "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(&body);
        }
    });
    port
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Runs the harness in Chromium and returns (pages checked, failures).
fn run(browser: &Path, port: u16) -> (u64, Vec<String>) {
    let profile = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1400,900",
            "--virtual-time-budget=300000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("http://127.0.0.1:{port}/__harness.html"))
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&out.stdout);
    let json = dom
        .split("<pre id=\"out\">")
        .nth(1)
        .and_then(|r| r.split("</pre>").next())
        .unwrap_or_default()
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">");
    let v: serde_json::Value = serde_json::from_str(&json)
        .unwrap_or_else(|e| panic!("harness did not finish ({e}): {json}"));
    let failures = v["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap_or_default().to_string())
        .collect();
    (v["checked"].as_u64().unwrap(), failures)
}

/// Every HTML page of the committed site, relative to it.
fn pages(site: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![site.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "html") {
                out.push(p.strip_prefix(site).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn no_page_scrolls_sideways_on_a_phone() {
    let Some(browser) = chromium() else {
        echomark::skip::because("no Chromium installed (.ci/run installs Debian's chromium)");
        return;
    };
    let site = Path::new(env!("CARGO_MANIFEST_DIR")).join("site");
    let all = pages(&site);
    let check = "const w = d.documentElement.scrollWidth; if (w > 390) failures.push(page + ': ' + w + ' px wide');";
    let port = serve(site, harness(&all, 390, check));
    let (checked, failures) = run(&browser, port);
    assert_eq!(checked as usize, all.len());
    assert!(
        failures.is_empty(),
        "{} of {checked} pages too wide at 390 px: {failures:#?}",
        failures.len()
    );
}

#[test]
fn tables_fit_their_wrappers_at_1280_px() {
    let Some(browser) = chromium() else {
        echomark::skip::because("no Chromium installed (.ci/run installs Debian's chromium)");
        return;
    };
    let site = Path::new(env!("CARGO_MANIFEST_DIR")).join("site");
    let chosen: Vec<String> = pages(&site)
        .into_iter()
        .filter(|p| {
            p.ends_with("/index.html")
                || (p.contains("epyc2-20261201-baseline/") && !p.ends_with("overview.html"))
        })
        .collect();
    assert!(chosen.len() >= 16, "{chosen:?}");
    let check = "d.querySelectorAll('.table-wrap').forEach((w, i) => { const t = w.querySelector('table'); if (t.scrollWidth > w.clientWidth + 1) failures.push(page + ': table ' + i + ' is ' + t.scrollWidth + ' px in ' + w.clientWidth); });";
    let port = serve(site, harness(&chosen, 1280, check));
    let (checked, failures) = run(&browser, port);
    assert_eq!(checked as usize, chosen.len());
    assert!(failures.is_empty(), "{failures:#?}");
}
