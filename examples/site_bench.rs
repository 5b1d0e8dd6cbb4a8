//! How long `echomark build` takes for the four arknet fixture archives (both languages,
//! every chart and page), median of 5 runs, beside arknet's own report generator.
//!
//! Run with `scripts/bench-site` (it builds the release binary first). Needs
//! ../shared/fixtures/arknet.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// arknet's Python generator on the same four archives (one language's charts, no HTML),
/// median of 5 runs, as measured on this machine class and reported in the echomark issue.
const ARKNET_SECONDS: f64 = 1.02;

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
    println!("| generator | input | output | wall time (median of 5) |");
    println!("| --- | --- | --- | ---: |");
    println!("| echomark build | 4 arknet archives (720 runs) | {count} files: en + zh pages, HTML, SVG charts, summaries | {ours:.3} s |");
    println!("| arknet report.py (reference, not run here) | the same 4 archives | one language's charts, no HTML | {ARKNET_SECONDS:.2} s |");
    println!(
        "\nechomark is {:.1}× faster and writes both languages.",
        ARKNET_SECONDS / ours
    );
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
