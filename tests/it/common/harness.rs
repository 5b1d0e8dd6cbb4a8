//! One headless Chromium run over many pages: a harness page (served by the test, not part
//! of the site) loads each page in an iframe and runs a check on its document, and the
//! notes come back as JSON in the dumped DOM.

use std::path::Path;

/// Where the harness page is served (it is not part of the site).
pub const HARNESS: &str = "__harness.html";

/// The harness: runs `prelude` once, loads `pages` one by one in an iframe, and on each
/// document runs `check` at every width of `widths` (the iframe resized in place: a resize
/// lays the loaded page out again without a second load, which in headless Chromium costs
/// two frames), then writes the notes as JSON into `<pre id="out">`. `check` sees `f` (the
/// iframe), `d` (its document), `page` and `width`, and pushes what it finds onto `notes`.
pub fn harness(pages: &[String], widths: &[u32], prelude: &str, check: &str) -> String {
    let list = serde_json::to_string(pages).unwrap();
    let widths = serde_json::to_string(widths).unwrap();
    format!(
        r#"<!doctype html><html><body><pre id="out">running</pre>
<iframe id="f" style="height:800px;border:0"></iframe>
<script>
{prelude}
const pages = {list};
const widths = {widths};
const f = document.getElementById('f');
const notes = [];
let i = 0;
function next() {{
  if (i >= pages.length) {{ document.getElementById('out').textContent = JSON.stringify({{checked: i, notes}}); return; }}
  const page = pages[i++];
  f.onload = () => {{
    const d = f.contentDocument;
    for (const width of widths) {{
      f.style.width = width + 'px';
      f.getBoundingClientRect();
      try {{ {check} }} catch (e) {{ notes.push(page + ' at ' + width + ' px: ' + e); }}
    }}
    next();
  }};
  f.src = '/' + page;
}}
next();
</script></body></html>"#
    )
}

/// A headless Chromium with the profile folder `profile`, quiet (no GPU, no background
/// networking, updates or sync): add the window size, what to do and the URL.
pub fn headless(browser: &Path, profile: &Path) -> std::process::Command {
    let mut command = std::process::Command::new(browser);
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()));
    command
}

/// What one harness run returned: how many pages it checked, the notes the checks pushed,
/// and Chromium's log (its console messages when run with `--enable-logging=stderr`).
pub struct Harnessed {
    pub checked: u64,
    pub notes: Vec<String>,
    pub log: String,
}

/// Runs the harness served on `port` in one headless Chromium, with `extra` flags.
pub fn run(browser: &Path, port: u16, extra: &[&str]) -> Harnessed {
    let profile = tempfile::tempdir().unwrap();
    // The pages are laid out in the iframe at the widths the harness sets, whatever the
    // window's size; a small window only has less of them to paint (2.5 of Chromium's 38
    // CPU-seconds over every page of the site at 1400 × 900).
    let out = headless(browser, profile.path())
        .args([
            "--window-size=400,300",
            "--virtual-time-budget=300000",
            "--dump-dom",
        ])
        .args(extra)
        .arg(format!("http://127.0.0.1:{port}/{HARNESS}"))
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&out.stdout);
    let json = dom
        .split("<pre id=\"out\">")
        .nth(1)
        .and_then(|r| r.split("</pre>").next())
        .unwrap_or_default()
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let v: serde_json::Value = serde_json::from_str(&json)
        .unwrap_or_else(|e| panic!("harness did not finish ({e}): {json}"));
    let notes = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap_or_default().to_string())
        .collect();
    Harnessed {
        checked: v["checked"].as_u64().unwrap(),
        notes,
        log: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
