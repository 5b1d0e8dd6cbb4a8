//! `matrix` against what a careless or hostile user can do to it: resuming an archive whose
//! settings or results were edited, and killing it with -9 while a measurement runs.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{exited, proc_stat};

fn runner() -> Command {
    Command::new(env!("CARGO_BIN_EXE_echomark-runner"))
}

/// A finished two-run TCP archive at `path`. Its runs may fail on a machine too busy to
/// complete a round trip in 0.05 s (`--keep-going` records them, exit 1): these tests are
/// about what `--resume` does with an edited archive, and a failed run is archive data too.
fn small_archive(path: &Path) -> Value {
    let o = runner()
        .args([
            "matrix",
            "--protocols",
            "tcp",
            "--payloads",
            "64",
            "--clients",
            "1",
            "--windows",
            "1",
            "--io-models",
            "shared",
            "--io-threads",
            "1",
            "--repetitions",
            "2",
            "--seconds",
            "0.05",
            "--warmup",
            "0",
            "--keep-going",
            "--out",
        ])
        .arg(path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{stderr}");
    let archive: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(archive["complete"], json!(true), "{stderr}");
    archive
}

/// One small archive for every property case (measuring it per case would dominate).
fn shared_archive() -> &'static Value {
    static ARCHIVE: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    ARCHIVE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        small_archive(&dir.path().join("shared.json"))
    })
}

fn resume(path: &Path) -> Output {
    runner()
        .arg("matrix")
        .arg("--resume")
        .arg(path)
        .output()
        .unwrap()
}

#[test]
fn resume_refuses_hostile_settings_and_results_with_their_json_path() {
    let dir = tempfile::tempdir().unwrap();
    let good = small_archive(&dir.path().join("good.json"));
    let edit = |f: &dyn Fn(&mut Value)| {
        let mut a = good.clone();
        a["complete"] = json!(false);
        f(&mut a);
        a
    };
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "negative timeout",
            edit(&|a| a["settings"]["case_timeout_seconds"] = json!(-1.0)),
            "settings.case_timeout_seconds",
        ),
        (
            "huge timeout",
            edit(&|a| a["settings"]["case_timeout_seconds"] = json!(1e300)),
            "settings.case_timeout_seconds",
        ),
        (
            "no repetitions",
            edit(&|a| a["settings"]["repetitions"] = json!(0)),
            "settings.repetitions",
        ),
        (
            "a result outside the plan",
            edit(&|a| a["results"][1]["repetition"] = json!(99)),
            "results[1]",
        ),
        (
            "zero UDP timeout",
            edit(&|a| a["settings"]["udp_timeout_ms"] = json!(0)),
            "settings.udp_timeout_ms",
        ),
        // Before: 3.7 GB, then an abort on a 5.4 GB allocation.
        (
            "a billion repetitions",
            edit(&|a| a["settings"]["repetitions"] = json!(1_000_000_000u64)),
            "settings.repetitions",
        ),
        (
            "more repetitions than the command line allows",
            edit(&|a| a["settings"]["repetitions"] = json!(1001)),
            "settings.repetitions",
        ),
        (
            "a payload no datagram carries",
            edit(&|a| a["settings"]["payloads"] = json!([64, 70_000])),
            "settings.payloads[1]",
        ),
        (
            "a million clients",
            edit(&|a| a["settings"]["profiles"][0]["clients"] = json!(1_000_000)),
            "settings.profiles[0].clients",
        ),
        (
            "a batch the command line refuses",
            edit(&|a| a["settings"]["udp_batch"] = json!(1_000_000_000u64)),
            "settings.udp_batch",
        ),
    ];
    for (what, archive, path) in cases {
        let file = dir.path().join("edited.json");
        std::fs::write(&file, archive.to_string()).unwrap();
        let o = resume(&file);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{what}: {stderr}");
        assert!(stderr.contains(path), "{what}: {path} not in {stderr}");
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
        assert_eq!(
            serde_json::from_str::<Value>(&std::fs::read_to_string(&file).unwrap()).unwrap(),
            archive,
            "{what}: the archive is left as it was"
        );
    }
}

/// The process ids whose parent is `pid`.
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| proc_stat(p).and_then(|f| f.get(1)?.parse::<u32>().ok()) == Some(pid))
        .collect()
}

#[test]
fn a_killed_matrix_takes_its_running_measurement_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("long.json");
    let mut matrix = runner()
        .args([
            "matrix",
            "--protocols",
            "tcp",
            "--payloads",
            "64",
            "--clients",
            "1",
            "--windows",
            "1",
            "--io-models",
            "shared",
            "--io-threads",
            "1",
            "--repetitions",
            "1",
            "--seconds",
            "20",
            "--warmup",
            "0",
            "--out",
        ])
        .arg(&out)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let child = loop {
        if let Some(c) = children(matrix.id()).first() {
            break *c;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no measurement started"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    matrix.kill().unwrap();
    matrix.wait().unwrap();
    let killed = Instant::now();
    while !exited(child) {
        assert!(
            killed.elapsed() < Duration::from_secs(1),
            "the measurement outlived its matrix"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]

    /// A damaged archive handed to `--resume`: a refusal or a finished matrix, never a
    /// panic (exit 101).
    #[test]
    fn damaged_archives_never_panic_resume(cut in 0usize..3_000, flips in proptest::collection::vec((0usize..20_000, proptest::prelude::any::<u8>()), 0..4)) {
        let dir = tempfile::tempdir().unwrap();
        let mut archive = shared_archive().clone();
        archive["complete"] = json!(false);
        let mut bytes = serde_json::to_vec_pretty(&archive).unwrap();
        for (at, value) in flips {
            let i = at % bytes.len();
            bytes[i] = value;
        }
        bytes.truncate(bytes.len().saturating_sub(cut));
        let file = dir.path().join("damaged.json");
        std::fs::write(&file, &bytes).unwrap();
        let o = resume(&file);
        let stderr = String::from_utf8_lossy(&o.stderr);
        proptest::prop_assert!(matches!(o.status.code(), Some(0..=2)), "{stderr}");
        proptest::prop_assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn a_udp_timeout_longer_than_the_drain_still_measures() {
    let o = runner()
        .args([
            "once",
            "--protocol",
            "udp",
            "--udp-timeout-ms",
            "60000",
            "--seconds",
            "0.3",
            "--warmup",
            "0",
        ])
        .output()
        .unwrap();
    let m: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(o.status.code(), Some(0), "{m}");
    assert!(m["messages"].as_u64().unwrap() > 0, "{m}");
}
