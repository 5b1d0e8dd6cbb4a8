//! The committed site as a reader sees it in headless Chromium: at 390 px (a phone) no page
//! scrolls sideways, and at 1280 px no table of the index or the baseline's protocol pages is
//! wider than its wrapper. One browser run measures every page: a harness page (served by the
//! test, not part of the site) loads each page once in an iframe and checks it at each width.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::harness::{harness, run, HARNESS};
use crate::common::site::chromium;
use crate::common::static_site::serve;

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

/// `perChar(font)`: the mean width of a character in `font`, measured once per font on the
/// harness page (one canvas, not one per paragraph and width).
const PER_CHAR: &str = r#"
const canvas = document.createElement('canvas').getContext('2d');
const widthPerChar = {};
function perChar(font) {
  if (!(font in widthPerChar)) {
    canvas.font = font;
    widthPerChar[font] = canvas.measureText('the quick brown fox jumps over a lazy dog').width / 41;
  }
  return widthPerChar[font];
}
"#;

/// What the layout check measures on each page at each width, reported as
/// `width<TAB>measure<TAB>page<TAB>detail`:
/// the page scrolling sideways, a table row wider than a phone, at 1280 px a table wider
/// than its wrapper on the pages in `MUST_FIT` (the prelude's), duplicate ids, and per
/// chart text under 11 CSS px, two text boxes that intersect, text outside the chart; and
/// each page's longest prose line in characters.
const LAYOUT_CHECK: &str = r#"
const W = f.contentWindow.innerWidth;
const note = (m, what) => notes.push(width + '\t' + m + '\t' + page + '\t' + what);
if (W !== width) note('viewport', 'the page saw ' + W + ' px');
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
if (W === 1280 && MUST_FIT.has(page)) {
  d.querySelectorAll('.table-wrap').forEach((w, i) => {
    const t = w.querySelector('table');
    if (t.scrollWidth > w.clientWidth + 1) note('table-wider-than-wrapper', 'table ' + i + ' is ' + t.scrollWidth + ' px in ' + w.clientWidth);
  });
}
const ids = {};
for (const e of d.querySelectorAll('[id]')) ids[e.id] = (ids[e.id] || 0) + 1;
const dup = Object.keys(ids).filter(k => ids[k] > 1);
if (dup.length) note('duplicate-ids', dup.slice(0, 3).join(' '));
if (W <= 400) {
  // Every chart is drawn for the phone: its figure never scrolls, and the drawing shown
  // ends inside the screen.
  d.querySelectorAll('figure.chart').forEach((fig, k) => {
    if (fig.scrollWidth > fig.clientWidth + 1) note('chart-scrolls', 'chart ' + k + ': ' + fig.scrollWidth + ' px in ' + fig.clientWidth);
    for (const svg of fig.querySelectorAll('svg')) {
      const b = svg.getBoundingClientRect();
      if (b.width && b.right > W) note('chart-off-screen', 'chart ' + k + ' ends at ' + Math.round(b.right) + ' px');
    }
  });
  note('page-height', String(d.documentElement.scrollHeight));
}
if (W === 1280) {
  d.querySelectorAll('.table-wrap').forEach((w, i) => {
    const t = w.querySelector('table');
    if (t.scrollWidth > w.clientWidth + 1) note('table-cut-off', 'table ' + i + ' is ' + t.scrollWidth + ' px in ' + w.clientWidth);
  });
}
d.querySelectorAll('main svg').forEach((svg, k) => {
  const box = svg.getBoundingClientRect();
  // A drawing the screen's width hides (the phone's on a desktop, the desktop's on a
  // phone) is not read.
  if (!box.width) return;
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
  const chars = Math.round(p.getBoundingClientRect().width / perChar(style.fontSize + ' ' + style.fontFamily));
  longest = Math.max(longest, chars);
}
note('longest-line-chars', String(longest));
"#;

/// Every page of the committed site, both languages, at a phone's (390 px), a laptop's
/// (1280 px) and a wide screen's (1920 px) width, in one Chromium that loads each page once:
/// every measure is counted, printed and asserted per width (the first offenders of each
/// are named on failure).
#[test]
fn every_page_is_legible_at_390_1280_and_1920_px() {
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
    // At a laptop's width the tables of the index and of the baseline's protocol pages fit
    // their wrappers without scrolling.
    let must_fit: Vec<&String> = all
        .iter()
        .filter(|p| {
            p.ends_with("/index.html")
                || (p.contains("epyc2-20261201-baseline/") && !p.ends_with("overview.html"))
        })
        .collect();
    assert!(must_fit.len() >= 16, "{must_fit:?}");
    let prelude = format!(
        "const MUST_FIT = new Set({});\n{PER_CHAR}",
        serde_json::to_string(&must_fit).unwrap()
    );
    const WIDTHS: [u32; 3] = [390, 1280, 1920];
    let page = harness(&all, &WIDTHS, &prelude, LAYOUT_CHECK);
    let port = serve(site, Some((HARNESS, page)));
    let harnessed = run(&browser, port, &[]);
    let (checked, notes) = (harnessed.checked, harnessed.notes);
    assert_eq!(checked as usize, all.len(), "{notes:?}");
    let mut found: BTreeMap<u32, Findings> = BTreeMap::new();
    for n in &notes {
        let mut parts = n.splitn(4, '\t');
        let width = parts.next().and_then(|w| w.parse().ok());
        let (Some(width), Some(m), Some(page), Some(what)) =
            (width, parts.next(), parts.next(), parts.next())
        else {
            panic!("the check failed on a page: {n}");
        };
        found
            .entry(width)
            .or_default()
            .entry(m)
            .or_default()
            .push((page, what));
    }
    let mut problems = Vec::new();
    for width in WIDTHS {
        let by_measure = found.remove(&width).unwrap_or_default();
        problems.extend(legibility_problems(width, checked, &by_measure));
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// One width's findings: measure → (page, detail).
type Findings<'a> = BTreeMap<&'a str, Vec<(&'a str, &'a str)>>;

/// What one width's measures say is wrong, after printing them all.
fn legibility_problems(width: u32, checked: u64, by_measure: &Findings) -> Vec<String> {
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
         tables wider than their wrapper {}; pages with duplicate ids {}; charts with text under 11 px {}; \
         charts with overlapping text {}; charts with clipped text {}; longest prose line {longest} characters",
        count("page-scroll"),
        count("row-wider-than-phone"),
        count("table-wider-than-wrapper"),
        count("duplicate-ids"),
        count("chart-text-under-11px"),
        count("chart-text-overlaps"),
        count("chart-text-clipped"),
    );
    eprintln!(
        "{width} px: charts scrolling inside their figure {}; charts ending off screen {}; tables cut off {}",
        count("chart-scrolls"),
        count("chart-off-screen"),
        count("table-cut-off"),
    );
    // Page heights on a phone: the tallest, and the budgets (25,000 px for any page, 12,000
    // for a dataset's overview).
    let mut heights: Vec<(u64, &str)> = by_measure
        .get("page-height")
        .into_iter()
        .flatten()
        .filter_map(|(page, h)| Some((h.parse().ok()?, *page)))
        .collect();
    heights.sort_unstable_by(|a, b| b.cmp(a));
    let mut problems = Vec::new();
    if !heights.is_empty() {
        let median = heights[heights.len() / 2].0;
        eprintln!(
            "{width} px: median page height {median} px; tallest: {:?}",
            &heights[..heights.len().min(5)]
        );
        for (h, page) in &heights {
            let budget = if page.ends_with("/overview.html") {
                12_000
            } else {
                25_000
            };
            if *h > budget {
                problems.push(format!(
                    "{width} px: {page} is {h} px tall (budget {budget})"
                ));
            }
        }
    }
    for m in [
        "chart-scrolls",
        "chart-off-screen",
        "table-cut-off",
        "viewport",
        "page-scroll",
        "row-wider-than-phone",
        "table-wider-than-wrapper",
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
    problems
}
