//! Running `once` with a schedule and reading its result: shared by the open-loop tests
//! that run beside the rest of the suite (`it/open_loop.rs`) and those that need the CPUs
//! to themselves (the `open_loop` binary).

use echomark_archive::{Metrics, OpenLoopMetrics};

/// Runs `once` with `args` against its own server and returns the parsed metrics (any exit
/// code).
pub fn once_with(args: &[&str]) -> Metrics {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_echomark-runner"))
        .arg("once")
        .args(args)
        .output()
        .expect("runner starts");
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "metrics parse ({e}): {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The open-loop part of a run's metrics.
pub fn schedule(m: &Metrics) -> &OpenLoopMetrics {
    m.open_loop
        .as_ref()
        .expect("an open-loop run reports its schedule")
}
