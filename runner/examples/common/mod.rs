//! What the benchmark examples share: where the binaries are, running one for its JSON,
//! medians, and this machine in one line.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// `target/release`, from `target/release/examples/NAME`.
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("own path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target dir")
        .to_path_buf()
}

/// Runs `cmd` and parses its standard output as JSON.
pub fn json(cmd: &mut Command) -> Value {
    let out = cmd.output().expect("benchmark binary runs");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}

/// The median; NaN for no values.
/// The smallest and largest of `v` (`(MAX, MIN)` when empty).
pub fn min_max(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &r| (lo.min(r), hi.max(r)))
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// This machine as the run found it: its CPU model and the logical CPUs available.
pub fn host() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "an unknown CPU".to_string());
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpu}, {cpus} logical CPUs")
}
