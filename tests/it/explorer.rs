//! The explorer in headless Chromium, over the committed site: its verdicts are the
//! generator's for every pair of datasets that share configurations (one rule, two
//! implementations that cannot drift), and a reader can filter, sort, compare two datasets
//! or two configurations, reload the address or switch the language and find the same view,
//! with every control labelled. A hostile archive's strings stay text.

use std::collections::BTreeMap;
use std::path::Path;

use echomark::analysis::aggregate::Status;
use echomark::analysis::Analysis;
use echomark::site::explore::{share_key, values, METRICS};
use echomark_decide::{compare, Verdict};

use crate::common::committed_datasets;
use crate::common::harness::{run, HARNESS};
use crate::common::site::{build, chromium, tree};
use crate::common::static_site::serve;
use crate::common::{archive, six_runs, write};

fn verdict_name(v: &Verdict) -> &'static str {
    match v {
        Verdict::Higher => "higher",
        Verdict::Lower => "lower",
        Verdict::Equivalent => "equivalent",
        Verdict::Undecided { .. } => "undecided",
        Verdict::NotComparable { .. } => "not_comparable",
    }
}

/// Every verdict the explorer would show for two datasets, computed here by the engine:
/// `(a, b, key, metric) → (verdict, ratio, runs needed)`, B against A, a before b.
/// (dataset A, dataset B, shared key, metric) → (verdict, ratio, repetitions that would decide).
type Verdicts = BTreeMap<(String, String, String, String), (String, f64, Option<u64>)>;

fn expected() -> Verdicts {
    let datasets = committed_datasets();
    let analysis = Analysis::of(datasets).expect("the committed datasets analyse");
    let rules = analysis.rules;
    let mut by_dataset: Vec<BTreeMap<String, &echomark::analysis::aggregate::Configuration>> =
        vec![BTreeMap::new(); datasets.len()];
    let index: BTreeMap<&str, usize> = datasets
        .iter()
        .enumerate()
        .map(|(i, d)| (d.name.as_str(), i))
        .collect();
    for c in &analysis.configurations {
        by_dataset[index[c.dataset.as_str()]].insert(share_key(c), c);
    }
    let mut out = BTreeMap::new();
    for a in 0..datasets.len() {
        for b in a + 1..datasets.len() {
            for (key, y) in &by_dataset[b] {
                let Some(x) = by_dataset[a].get(key) else {
                    continue;
                };
                if x.status != Status::Valid || y.status != Status::Valid {
                    continue;
                }
                for (metric, _) in METRICS {
                    let rule = if matches!(metric, "p50" | "p99") {
                        rules.latency
                    } else {
                        rules.throughput
                    };
                    let d = compare(&values(x, metric), &values(y, metric), &rule);
                    let runs = match d.verdict {
                        Verdict::Undecided { runs_needed } => runs_needed,
                        _ => None,
                    };
                    out.insert(
                        (
                            datasets[a].name.clone(),
                            datasets[b].name.clone(),
                            key.clone(),
                            metric.to_string(),
                        ),
                        (verdict_name(&d.verdict).to_string(), d.ratio, runs),
                    );
                }
            }
        }
    }
    out
}

/// A harness page that opens `start` in an iframe, waits for the explorer, runs `steps`
/// (an async function body that sees `f`, `w` (its window), `d` (its document), `load`
/// (opens a URL in the iframe and waits) and `note`), and writes the notes out.
fn steps_page(start: &str, steps: &str) -> String {
    format!(
        r#"<!doctype html><html><body><pre id="out">running</pre>
<iframe id="f" style="width:1280px;height:900px;border:0"></iframe>
<script>
const f = document.getElementById('f');
const notes = [];
const note = (m) => notes.push(String(m));
let w, d;
// Opens `url` in the iframe as a fresh load (by way of a blank page: the same page with
// another fragment would only scroll) and waits for the explorer.
function load(url) {{
  return new Promise((resolve) => {{
    f.onload = () => {{
      f.onload = () => {{
        w = f.contentWindow; d = f.contentDocument;
        const wait = () => (w.EchomarkExplore && w.EchomarkExplore.ready) ? resolve() : setTimeout(wait, 10);
        wait();
      }};
      f.src = url;
    }};
    f.src = 'about:blank';
  }});
}}
const pause = () => new Promise((r) => setTimeout(r, 30));
function choose(name, value) {{
  const s = d.querySelector('#explorer select[name="' + name + '"]');
  s.value = value;
  s.dispatchEvent(new Event('change'));
}}
(async () => {{
  try {{
    await load({start:?});
    {steps}
  }} catch (e) {{ note('failed: ' + e + ' ' + (e.stack || '')); }}
  document.getElementById('out').textContent = JSON.stringify({{checked: 1, notes}});
}})();
</script></body></html>"#
    )
}

fn notes_of(page: String) -> Option<Vec<String>> {
    let browser = chromium()?;
    let site = Path::new(env!("CARGO_MANIFEST_DIR")).join("site");
    let port = serve(site, Some((HARNESS, page)));
    Some(run(&browser, port, &[]).notes)
}

#[test]
fn the_explorer_decides_every_pair_of_datasets_as_the_generator_does() {
    if chromium().is_none() {
        echomark::skip::because("no Chromium installed (.ci/run installs Debian's chromium)");
        return;
    }
    let expected = expected();
    assert!(expected.len() > 1000, "{} verdicts", expected.len());
    let steps = r#"
      const pairs = w.EchomarkExplore.allPairs();
      const names = w.EchomarkExplore.datasets.map((x) => x.name);
      note('count\t' + pairs.length);
      for (const p of pairs) note(['v', names[p[0]], names[p[1]], p[2], p[3], p[4], p[5], p[6]].join('\t'));
    "#;
    let notes = notes_of(steps_page("/en/explore.html", steps)).expect("chromium");
    assert!(
        !notes.iter().any(|n| n.starts_with("failed")),
        "{:?}",
        &notes[..notes.len().min(3)]
    );
    let mut seen = 0;
    let mut runs_apart = 0;
    let mut wrong = Vec::new();
    for n in notes.iter().filter(|n| n.starts_with("v\t")) {
        let f: Vec<&str> = n.split('\t').collect();
        let key = (
            f[1].to_string(),
            f[2].to_string(),
            f[3].to_string(),
            f[4].to_string(),
        );
        let Some((verdict, ratio, runs)) = expected.get(&key) else {
            wrong.push(format!(
                "the explorer compares what the generator does not: {n}"
            ));
            continue;
        };
        seen += 1;
        let js_ratio: f64 = f[6].parse().unwrap_or(f64::NAN);
        if f[5] != verdict || (js_ratio / ratio - 1.0).abs() > 1e-9 {
            wrong.push(format!(
                "{key:?}: explorer {} {js_ratio}, generator {verdict} {ratio}",
                f[5]
            ));
        }
        let js_runs: Option<u64> = f[7].parse().ok();
        if js_runs != *runs {
            runs_apart += 1;
            // The repetitions that would decide rest on a t quantile each side computes;
            // they may differ by one where the target falls between two of them.
            if js_runs.zip(*runs).is_none_or(|(a, b)| a.abs_diff(b) > 1) {
                wrong.push(format!(
                    "{key:?}: explorer runs {js_runs:?}, generator {runs:?}"
                ));
            }
        }
    }
    eprintln!(
        "the explorer and the generator: {seen} verdicts compared, {} differ; runs needed apart by one in {runs_apart}",
        wrong.len()
    );
    assert_eq!(
        seen,
        expected.len(),
        "every verdict the generator makes is shown"
    );
    assert!(wrong.is_empty(), "{:#?}", &wrong[..wrong.len().min(10)]);
}

#[test]
fn a_reader_filters_sorts_compares_and_keeps_the_view_in_the_address() {
    if chromium().is_none() {
        echomark::skip::because("no Chromium installed (.ci/run installs Debian's chromium)");
        return;
    }
    let steps = r#"
      const rows = () => [...d.querySelectorAll('.x-rows tbody tr')];
      const cell = (r, k) => r.children[k].textContent;
      // Filters from the address: TCP at 1,024 B, 16 clients.
      if (!rows().length) note('no rows for TCP 1,024 B 16 clients');
      for (const r of rows()) {
        if (cell(r, 1) !== 'TCP') note('protocol filter: ' + cell(r, 1));
        if (!cell(r, 2).startsWith('1,024 B, 16 clients')) note('load filter: ' + cell(r, 2));
      }
      // A filter chosen on the page goes into the address.
      choose('ds', 'epyc2-20261201-baseline');
      await pause();
      if (!w.location.hash.includes('ds=epyc2-20261201-baseline')) note('address lacks ds: ' + w.location.hash);
      for (const r of rows()) if (cell(r, 0) !== 'epyc2-20261201-baseline') note('dataset filter: ' + cell(r, 0));
      const before = rows().length;
      if (before !== 5) note('the baseline has 5 IO models at TCP 1,024 B 16 clients, shown ' + before);
      // Sort by the median, ascending then descending.
      const sortBy = (k) => d.querySelectorAll('.x-rows thead button')[k].click();
      sortBy(4); await pause();
      const med = () => rows().map((r) => parseFloat(cell(r, 4).split(' ')[0].replace(/,/g, '')));
      const asc = med();
      if (asc.join() !== [...asc].sort((a, b) => b - a).join() && asc.join() !== [...asc].sort((a, b) => a - b).join()) note('not sorted: ' + asc);
      const th = d.querySelectorAll('.x-rows thead th')[4];
      if (!th.getAttribute('aria-sort')) note('no aria-sort on the sorted column');
      sortBy(4); await pause();
      const desc = med();
      if (desc.join() !== [...asc].reverse().join()) note('second click does not reverse: ' + asc + ' / ' + desc);
      // Compare two datasets: counts that add up, undecided rows hidden by default.
      choose('ds', '');
      choose('da', 'epyc2-20261201-baseline');
      choose('db', 'epyc2-20261201-baseline-rerun');
      await pause();
      const counts = d.querySelector('.x-counts');
      if (!counts) note('no counts for two datasets');
      else {
        const n = counts.textContent.match(/\d+/g).map(Number);
        if (n[0] + n[1] + n[2] + n[3] !== n[4]) note('counts do not add up: ' + counts.textContent);
      }
      const verdicts = () => [...d.querySelectorAll('.x-result tbody tr')].map((r) => r.dataset.verdict);
      if (verdicts().includes('undecided')) note('undecided rows shown while hidden');
      const shownHidden = verdicts().length;
      const hide = d.querySelector('#explorer input[name="hide"]');
      hide.click(); await pause();
      if (verdicts().length < shownHidden) note('showing undecided rows shows fewer rows');
      if (!w.location.hash.includes('hide=0')) note('address lacks hide=0: ' + w.location.hash);
      // Reload the address: the same view.
      const heading = d.querySelector('.x-result h2').textContent;
      const shown = verdicts().length;
      const address = w.location.href;
      await load(address);
      if (d.querySelector('#explorer select[name="da"]').value !== 'epyc2-20261201-baseline') note('reload lost side A');
      if (!d.querySelector('.x-result h2') || d.querySelector('.x-result h2').textContent !== heading) note('reload lost the comparison');
      if (verdicts().length !== shown) note('reload shows ' + verdicts().length + ' rows, not ' + shown);
      // The language switch keeps the view.
      const other = d.querySelector('a.lang-switch');
      if (!other.href.endsWith(w.location.hash)) note('language link lacks the view: ' + other.href);
      await load(other.href);
      if (d.documentElement.lang !== 'zh-CN') note('not the Chinese page: ' + d.documentElement.lang);
      if (d.querySelector('#explorer select[name="db"]').value !== 'epyc2-20261201-baseline-rerun') note('language switch lost side B');
      if (verdicts().length !== shown) note('the Chinese page shows ' + verdicts().length + ' rows, not ' + shown);
      // Two configurations: one row per metric.
      choose('da', ''); choose('db', '');
      choose('p', 'udp'); await pause();
      const picks = d.querySelectorAll('.x-rows tbody tr');
      picks[0].querySelectorAll('button')[0].click(); await pause();
      d.querySelectorAll('.x-rows tbody tr')[1].querySelectorAll('button')[1].click(); await pause();
      if (verdicts().length !== 4) note('two configurations give ' + verdicts().length + ' rows, not 4');
      if (!/ca=[0-9a-f]{8}/.test(w.location.hash) || !/cb=[0-9a-f]{8}/.test(w.location.hash)) note('address lacks the two configurations: ' + w.location.hash);
      // Every control is labelled and reachable by the keyboard.
      for (const c of d.querySelectorAll('#explorer select, #explorer input, #explorer button')) {
        const named = (c.id && d.querySelector('label[for="' + c.id + '"]')) || c.getAttribute('aria-label') || c.textContent.trim();
        if (!named) note('a control without a label: ' + c.outerHTML.slice(0, 80));
        if (c.tabIndex < 0) note('a control out of the tab order: ' + c.outerHTML.slice(0, 80));
      }
      note('done');
    "#;
    let notes =
        notes_of(steps_page("/en/explore.html#p=tcp&pl=1024&c=16", steps)).expect("chromium");
    assert_eq!(notes, ["done"], "{notes:#?}");
}

#[test]
fn hostile_archive_strings_stay_text_in_the_explorer() {
    let dir = tempfile::tempdir().unwrap();
    // One run of shared 2 fails: that configuration is failed, never a figure.
    let mut runs = six_runs();
    crate::common::fail(&mut runs[1], "benchmark validation failed");
    let mut a = archive(runs);
    a["host"]["cpu"] = serde_json::json!("<img src=x onerror=window.__pwned=1>");
    let raw = write(dir.path(), "evil<script><b>", "a.json", &a.to_string());
    let out = dir.path().join("site");
    let o = build(&[raw.parent().unwrap()], &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let files = tree(&out);
    let data = String::from_utf8_lossy(&files["data/explore.js"]);
    assert!(!data.contains('<'), "no markup in the data file");
    assert!(data.starts_with("window.ECHOMARK_EXPLORE="));
    let Some(browser) = chromium() else {
        echomark::skip::because("no Chromium installed (.ci/run installs Debian's chromium)");
        return;
    };
    let steps = r#"
      const text = d.getElementById('explorer').textContent;
      if (w.__pwned) note('the data ran as markup');
      if (d.querySelector('#explorer img, #explorer b')) note('markup from the data in the page');
      if (!text.includes('evil<script><b>')) note('the dataset name is not shown as text');
      const failed = [...d.querySelectorAll('#explorer tbody tr.x-failed')];
      if (failed.length !== 1) note(failed.length + ' failed rows, not 1');
      for (const row of failed) {
        const figure = row.querySelectorAll('td')[4].textContent;
        if (figure !== 'failed') note('a failed configuration shows ' + figure);
      }
      const fine = [...d.querySelectorAll('#explorer tbody tr:not(.x-failed) td:nth-child(5)')];
      if (fine.length !== 1 || !/^[0-9]/.test(fine[0].textContent) || fine[0].textContent.startsWith('0 '))
        note('the passing configuration shows ' + fine.map(t => t.textContent));
      note('done');
    "#;
    let port = serve(out, Some((HARNESS, steps_page("/en/explore.html", steps))));
    let notes = run(&browser, port, &[]).notes;
    assert_eq!(notes, ["done"], "{notes:#?}");
}

/// A reader with a keyboard and no mouse: Tab reaches the filters, a typed letter picks a
/// protocol, Enter sorts (twice: the other way), Space and Enter pick two rows to compare,
/// and after every redraw the focus is where it was (the table is drawn anew each time).
#[test]
fn the_explorer_works_from_the_keyboard_alone() {
    use crate::common::devtools::Browser;
    let Some(chromium) = chromium() else {
        echomark::skip::because("no Chromium installed (.ci/run installs Debian's chromium)");
        return;
    };
    let site = Path::new(env!("CARGO_MANIFEST_DIR")).join("site");
    let port = serve(site, None);
    let mut b = Browser::start(&chromium, 1280, 900);
    b.open(
        &format!("http://127.0.0.1:{port}/en/explore.html"),
        "window.EchomarkExplore && window.EchomarkExplore.ready",
    );
    let state = |b: &mut Browser, key: &str| {
        b.eval(&format!(
            "String(window.EchomarkExplore.state().{key} || '')"
        ))
    };
    let focused = |b: &mut Browser| b.eval("document.activeElement.getAttribute('data-focus')");

    // Tab from the top of the page reaches the protocol filter.
    let presses = b.tab_to("a.matches('#explorer select[name=\"p\"]')", 120);
    assert!(presses.is_some(), "Tab never reached the protocol filter");
    // A typed letter picks a protocol, and the table and the address follow.
    b.press("u", false);
    assert_eq!(state(&mut b, "p"), "udp", "typing u on the protocol filter");
    assert!(b.eval("location.hash").as_str().unwrap().contains("p=udp"));
    let protocols = b.eval(
        "[...new Set([...document.querySelectorAll('#explorer tbody tr td:nth-child(2)')].map(t => t.textContent))]",
    );
    assert_eq!(protocols, serde_json::json!(["UDP"]), "only UDP rows");

    // Enter on a sort button sorts by its column and keeps the focus; again, the other way.
    assert!(b.tab_to("a.classList.contains('x-sort')", 40).is_some());
    let button = focused(&mut b);
    let column = button
        .as_str()
        .unwrap()
        .trim_start_matches("sort ")
        .to_string();
    b.press("Enter", false);
    assert_eq!(state(&mut b, "sort"), column.as_str());
    let first = state(&mut b, "dir");
    assert_eq!(
        focused(&mut b),
        button,
        "the focus stays on the sort button"
    );
    b.press("Enter", false);
    assert_ne!(
        state(&mut b, "dir"),
        first,
        "Enter again sorts the other way"
    );
    assert_eq!(focused(&mut b), button);

    // Space picks a row as side A, Enter another row as side B: the comparison appears.
    assert!(b
        .tab_to("(a.getAttribute('data-focus') || '').startsWith('a ')", 40)
        .is_some());
    let a_button = focused(&mut b);
    b.press(" ", false);
    let a = state(&mut b, "ca");
    assert_eq!(
        format!("a {}", a.as_str().unwrap()),
        a_button.as_str().unwrap()
    );
    assert_eq!(
        focused(&mut b),
        a_button,
        "the focus stays on the picked row"
    );
    let other_row = format!(
        "(a.getAttribute('data-focus') || '').startsWith('b ') && a.getAttribute('data-focus') !== 'b {}'",
        a.as_str().unwrap()
    );
    assert!(b.tab_to(&other_row, 40).is_some());
    b.press("Enter", false);
    assert_ne!(state(&mut b, "cb"), "");
    assert!(
        b.eval("!!document.querySelector('#explorer .x-result h2')") == serde_json::json!(true),
        "two rows picked by keyboard are compared"
    );
    let hash = b.eval("location.hash");
    assert!(
        hash.as_str().unwrap().contains("ca=") && hash.as_str().unwrap().contains("cb="),
        "{hash}"
    );
}
