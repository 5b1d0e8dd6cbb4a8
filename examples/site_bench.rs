//! How long `echomark build` takes for the four arknet fixture archives (both languages,
//! every chart and page), median of 5 runs, beside arknet's own report generator.
//!
//! Run with `scripts/bench-site` (it builds the release binary first). Needs
//! ../shared/fixtures/arknet.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// arknet's Python generator on the same four archives (one language's charts, no HTML),
/// median of 5 runs: a figure quoted in an earlier echomark issue and recorded here on
/// 2026-12-01 (commit c073a3c). It is not measured by this program, so it is printed as a
/// reference and never divided by a measurement.
const ARKNET_REFERENCE: (&str, f64) = (
    "arknet report.py, median of 5, quoted in an echomark issue; recorded 2026-12-01",
    1.02,
);

/// How many runs the archives hold, as `echomark validate` counts them.
fn runs_in(bin: &Path, files: &[std::path::PathBuf]) -> u64 {
    let out = Command::new(bin)
        .arg("validate")
        .arg("--json")
        .args(files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reports: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    reports
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["runs"].as_u64().unwrap())
        .sum()
}

fn main() {
    let exe = std::env::current_exe().unwrap();
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("echomark");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/arknet");
    if !fixtures.is_dir() {
        println!("skipped: {} is not here", fixtures.display());
        return;
    }
    let files = [
        "standalone-tcp",
        "boost-tcp",
        "standalone-coroutine",
        "boost-coroutine",
    ]
    .map(|f| fixtures.join(format!("macmini-m4pro-20261010-{f}.json")));
    let tmp = tempfile::tempdir().unwrap();
    let mut times = Vec::new();
    let mut count = 0;
    for i in 0..5 {
        let out = tmp.path().join(format!("site-{i}"));
        let mut cmd = Command::new(&bin);
        cmd.arg("build");
        for f in &files {
            cmd.arg("--raw").arg(f);
        }
        cmd.arg("--out").arg(&out);
        let start = Instant::now();
        let o = cmd.output().unwrap();
        times.push(start.elapsed().as_secs_f64());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        count = walk(&out);
    }
    times.sort_by(f64::total_cmp);
    let ours = times[2];
    let runs = runs_in(&bin, &files);
    let (source, seconds) = ARKNET_REFERENCE;
    println!("| generator | input | output | wall time |");
    println!("| --- | --- | --- | ---: |");
    println!("| echomark build (measured now, median of 5) | {} arknet archives ({runs} runs) | {count} files: en + zh pages, HTML, SVG charts, summaries | {ours:.3} s |", files.len());
    println!("| arknet report.py (reference, not measured in this run) | the same archives | one language's charts, no HTML | {seconds:.2} s |");
    println!("\nreference source: {source}. No ratio is printed: the two figures were not measured side by side.");
}

fn walk(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p)
            } else {
                1
            }
        })
        .sum()
}
