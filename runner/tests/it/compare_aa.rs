//! An A/A pair measured for real: one matrix of one build, its repetitions split into
//! alternate halves (base, new, base, new, … as the pull-request workflow interleaves them),
//! compared by the generator. Nothing changed, so nothing may be reported as changed.
//!
//! Its own test binary, so no other test of this crate loads the machine while it measures.

use std::path::Path;
use std::process::Command;

use echomark::analysis::compare::side::{load_dataset, Side};
use echomark::analysis::compare::{Comparison, Options, Verdict};
use serde_json::Value;

fn half(archive: &Value, parity: u64, dir: &Path, name: &str) -> std::path::PathBuf {
    let mut part = archive.clone();
    let results: Vec<Value> = archive["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter(|r| r["repetition"].as_u64().expect("repetition") % 2 == parity)
        .cloned()
        .collect();
    part["results"] = Value::Array(results);
    part["complete"] = Value::Bool(false);
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("archive.json"),
        serde_json::to_vec(&part).unwrap(),
    )
    .unwrap();
    folder
}

#[test]
fn an_interleaved_a_a_pair_of_real_runs_shows_no_change() {
    // Six against six, interleaved on one machine: the pair the rule is calibrated on.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("aa.json");
    let status = Command::new(env!("CARGO_BIN_EXE_echomark-runner"))
        .args([
            "matrix",
            "--protocols",
            "tcp,udp",
            "--payloads",
            "1024",
            "--clients",
            "1",
            "--windows",
            "1",
            "--io-models",
            "shared",
            "--io-threads",
            "1",
            "--repetitions",
            "12",
            "--seconds",
            "0.25",
            "--warmup",
            "0.1",
            "--out",
        ])
        .arg(&out)
        .status()
        .expect("runner starts");
    assert!(status.success());
    let archive: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let d1 = load_dataset(&half(&archive, 0, dir.path(), "a1")).expect("a1 loads");
    let d2 = load_dataset(&half(&archive, 1, dir.path(), "a2")).expect("a2 loads");
    let (a1, a2) = (Side::of(&d1).unwrap(), Side::of(&d2).unwrap());
    let c = Comparison::of(&a1, &a2, &Options::default());
    assert_eq!(c.configurations.len(), 2, "{c:#?}");
    for config in &c.configurations {
        assert_eq!(config.base_runs, 6);
        assert_eq!(config.new_runs, 6);
        for m in &config.metrics {
            eprintln!(
                "{} {:?}: {:+.3} p {} q {}: {:?}",
                config.label, m.metric, m.change, m.p_value, m.adjusted_p_value, m.verdict
            );
            // Nothing changed: the rule may find a metric equivalent, or be unable to tell
            // with six repetitions a side, but never improved or regressed.
            assert!(
                matches!(m.verdict, Verdict::Equivalent | Verdict::Undecided),
                "{}: {:?} {:?}: {}",
                config.label,
                m.metric,
                m.verdict,
                m.reason
            );
        }
    }
    assert!(!c.has_regression());
    assert!(c.host_differences.is_empty());
    assert!(!c.different_builds);
}
