//! The committed site as a reader sees it in headless Chromium: at 390 px (a phone) no page
//! scrolls sideways, and at 1280 px no table of the index or the baseline's protocol pages is
//! wider than its wrapper. One browser run per width measures every page: a harness page
//! (served by the test, not part of the site) loads each page in an iframe of that width.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use crate::common::site::chromium;

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

/// What the layout check measures on each page, reported as `measure<TAB>page<TAB>detail`:
/// the page scrolling sideways, a table row wider than a phone, duplicate ids, and per
/// chart text under 11 CSS px, two text boxes that intersect, text outside the chart; and
/// each page's longest prose line in characters.
const LAYOUT_CHECK: &str = r#"
const W = f.contentWindow.innerWidth;
const note = (m, what) => failures.push(m + '\t' + page + '\t' + what);
const wide = d.documentElement.scrollWidth;
if (wide > W) note('page-scroll', wide + ' px in ' + W);
if (W <= 400) {
  let rows = 0;
  for (const tr of d.querySelectorAll('main tr')) { if (tr.getBoundingClientRect().width > W + 1) rows++; }
  if (rows) note('row-wider-than-phone', rows + ' rows');
}
if (W <= 400 && page.endsWith('/changes.html')) {
  const tall = d.documentElement.scrollHeight;
  note('changes-page-height', String(tall));
}
const ids = {};
for (const e of d.querySelectorAll('[id]')) ids[e.id] = (ids[e.id] || 0) + 1;
const dup = Object.keys(ids).filter(k => ids[k] > 1);
if (dup.length) note('duplicate-ids', dup.slice(0, 3).join(' '));
d.querySelectorAll('main svg').forEach((svg, k) => {
  const box = svg.getBoundingClientRect();
  const vb = svg.viewBox && svg.viewBox.baseVal;
  const scale = vb && vb.width ? box.width / vb.width : 1;
  const texts = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim());
  let small = 0, outside = 0, overlaps = 0, pair = '';
  const rects = texts.map(t => t.getBoundingClientRect());
  texts.forEach((t, n) => {
    const size = parseFloat(t.getAttribute('font-size') || f.contentWindow.getComputedStyle(t).fontSize) * scale;
    if (size < 11) small++;
    const r = rects[n];
    if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1) outside++;
    for (let m = n + 1; m < rects.length; m++) {
      const o = rects[m];
      const x = Math.min(r.right, o.right) - Math.max(r.left, o.left);
      const y = Math.min(r.bottom, o.bottom) - Math.max(r.top, o.top);
      if (x > 1 && y > 1) {
        overlaps++;
        if (!pair) pair = ' ("' + t.textContent.trim().slice(0, 30) + '" and "' + texts[m].textContent.trim().slice(0, 30) + '")';
      }
    }
  });
  if (small) note('chart-text-under-11px', 'chart ' + k + ': ' + small + ' texts');
  if (overlaps) note('chart-text-overlaps', 'chart ' + k + ': ' + overlaps + ' pairs' + pair);
  if (outside) note('chart-text-clipped', 'chart ' + k + ': ' + outside + ' texts');
});
let longest = 0;
for (const p of d.querySelectorAll('main > p, main > ul > li')) {
  const style = f.contentWindow.getComputedStyle(p);
  const c = d.createElement('canvas').getContext('2d');
  c.font = style.fontSize + ' ' + style.fontFamily;
  const perChar = c.measureText('the quick brown fox jumps over a lazy dog').width / 41;
  const chars = Math.round(p.getBoundingClientRect().width / perChar);
  longest = Math.max(longest, chars);
}
note('longest-line-chars', String(longest));
"#;

/// Every page of the committed site, both languages, at a phone's width.
#[test]
fn every_page_is_legible_on_a_phone_at_390_px() {
    every_page_is_legible_at(390);
}

/// Every page of the committed site, both languages, at a laptop's width.
#[test]
fn every_page_is_legible_at_1280_px() {
    every_page_is_legible_at(1280);
}

/// Every page of the committed site, both languages, at a wide screen's width.
#[test]
fn every_page_is_legible_at_1920_px() {
    every_page_is_legible_at(1920);
}

/// Every page of the committed site at `width` px in its own Chromium (the three widths run
/// as three tests, side by side with the others): every measure is counted, printed and
/// asserted (the first offenders of each are named on failure).
fn every_page_is_legible_at(width: u32) {
    let Some(browser) = chromium() else {
        echomark::skip::because("no Chromium installed (.ci/run installs Debian's chromium)");
        return;
    };
    let site = Path::new(env!("CARGO_MANIFEST_DIR")).join("site");
    let all = pages(&site);
    assert!(
        all.iter().any(|p| p.starts_with("zh/")) && all.len() > 150,
        "{}",
        all.len()
    );
    let mut problems = Vec::new();
    {
        let port = serve(site.clone(), harness(&all, width, LAYOUT_CHECK));
        let (checked, notes) = run(&browser, port);
        assert_eq!(checked as usize, all.len(), "{notes:?}");
        let mut by_measure: std::collections::BTreeMap<&str, Vec<(&str, &str)>> =
            Default::default();
        for n in &notes {
            let mut parts = n.splitn(3, '\t');
            let (m, page, what) = (
                parts.next().unwrap_or(""),
                parts.next().unwrap_or(""),
                parts.next().unwrap_or(n),
            );
            by_measure.entry(m).or_default().push((page, what));
        }
        let count = |m: &str| by_measure.get(m).map_or(0, Vec::len);
        let longest = by_measure
            .get("longest-line-chars")
            .into_iter()
            .flatten()
            .filter_map(|(_, chars)| chars.parse::<u64>().ok())
            .max()
            .unwrap_or(0);
        eprintln!(
            "{width} px, {checked} pages: pages scrolling sideways {}; pages with a table row wider than the screen {}; \
             pages with duplicate ids {}; charts with text under 11 px {}; charts with overlapping text {}; \
             charts with clipped text {}; longest prose line {longest} characters",
            count("page-scroll"),
            count("row-wider-than-phone"),
            count("duplicate-ids"),
            count("chart-text-under-11px"),
            count("chart-text-overlaps"),
            count("chart-text-clipped"),
        );
        for m in [
            "page-scroll",
            "row-wider-than-phone",
            "duplicate-ids",
            "chart-text-under-11px",
            "chart-text-overlaps",
            "chart-text-clipped",
        ] {
            for (page, what) in by_measure.get(m).into_iter().flatten().take(5) {
                problems.push(format!("{width} px, {m}: {page}: {what}"));
            }
        }
        for (page, height) in by_measure.get("changes-page-height").into_iter().flatten() {
            eprintln!("{width} px: {page} is {height} px tall");
            if height.parse::<u64>().unwrap_or(u64::MAX) >= 20_000 {
                problems.push(format!("{width} px: {page} is {height} px tall"));
            }
        }
        if width == 1920 && longest > 90 {
            problems.push(format!("1920 px: a prose line of {longest} characters"));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
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
