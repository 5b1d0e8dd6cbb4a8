//! End-to-end tests of `echomark-runner matrix`: real child processes, real archives.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use echomark_archive::Archive;

use crate::common::{load_valid, rendered_pages};

fn runner() -> Command {
    Command::new(env!("CARGO_BIN_EXE_echomark-runner"))
}

fn matrix(args: &[&str]) -> Output {
    runner()
        .arg("matrix")
        .args(args)
        .output()
        .expect("runner starts")
}

fn keys(a: &Archive) -> BTreeSet<echomark_archive::RunId> {
    a.results.iter().map(|e| e.run.clone()).collect()
}

/// 2 protocols × 64 B × windows 1, 2 × shared 1: four cases per repetition.
fn small(repetitions: &'static str) -> Vec<&'static str> {
    vec![
        "--protocols",
        "tcp,udp",
        "--payloads",
        "64",
        "--clients",
        "1",
        "--windows",
        "1,2",
        "--io-models",
        "shared",
        "--io-threads",
        "1",
        "--repetitions",
        repetitions,
        "--seconds",
        "0.1",
        "--warmup",
        "0.05",
    ]
}

#[test]
fn a_small_matrix_writes_a_complete_schema_valid_archive() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("small.json");
    let mut args = small("2");
    args.extend(["--out", out.to_str().unwrap()]);
    let o = matrix(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let a = load_valid(&out);
    // 2 protocols × 1 payload × 2 windows × 1 topology × 2 repetitions.
    assert_eq!(a.results.len(), 8);
    assert_eq!(keys(&a).len(), 8);
    assert!(a.complete);
    assert_eq!(a.failed_measurements, 0);
    assert_eq!(a.settings.profiles.len(), 2);
    assert!(a
        .results
        .iter()
        .all(|e| e.error.is_none() && e.metrics.as_ref().is_some_and(|m| m.ok)));
    assert!(a
        .results
        .iter()
        .all(|e| e.returncode == Some(0) && e.command[1] == "once"));
    assert_eq!(a.source_sha256.len(), 64);
    assert!(a.host.logical_cpus >= 1);
    // The build that measured is recorded with the crates that did the work.
    let t = a.toolchain.as_ref().expect("toolchain recorded");
    assert!(
        t.rustc.starts_with("rustc ") && !t.target.is_empty(),
        "{t:?}"
    );
    assert!(["tokio", "rustls", "socket2"]
        .iter()
        .all(|c| t.dependencies.contains_key(*c)));
    // Plain progress lines on a non-terminal stderr.
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("[8/8]") && stderr.contains("ETA"),
        "{stderr}"
    );
    // The recorded hash is the one `source-hash` reproduces.
    let h = runner().arg("source-hash").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&h.stdout).trim(), a.source_sha256);
}

fn wait_for_results(path: &Path, at_least: usize, child: &mut Child) {
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if let Ok(a) = serde_json::from_str::<Archive>(&text) {
                if a.results.len() >= at_least {
                    return;
                }
            }
        }
        assert!(child.try_wait().unwrap().is_none(), "matrix ended early");
        assert!(start.elapsed() < Duration::from_secs(60), "no progress");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn kill_9_then_resume_loses_and_repeats_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("resume.json");
    let mut args = vec!["matrix"];
    args.extend(small("3"));
    args.extend(["--shuffle", "42", "--out", out.to_str().unwrap()]);
    let mut child = runner().args(&args).stderr(Stdio::null()).spawn().unwrap();
    wait_for_results(&out, 3, &mut child);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let partial = load_valid(&out);
    assert!(!partial.complete);
    assert!(partial.results.len() >= 3 && partial.results.len() < 12);

    let o = matrix(&["--resume", out.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let done = load_valid(&out);
    assert!(done.complete);
    assert_eq!(done.results.len(), 12);
    assert_eq!(keys(&done).len(), 12, "no duplicate (case, repetition)");
    assert_eq!(
        &done.results[..partial.results.len()],
        &partial.results[..],
        "finished runs kept as they were"
    );
    assert_eq!(done.settings.shuffle_seed, Some(42));
    let orders: BTreeSet<u64> = done.results.iter().map(|e| e.order).collect();
    assert_eq!(orders, (0..12).collect());

    let again = matrix(&["--resume", out.to_str().unwrap()]);
    assert_eq!(
        again.status.code(),
        Some(2),
        "a complete archive is not resumed"
    );
}

/// UDP at 16 KiB: window 1 passes; window 64 overflows a tiny server receive buffer (the
/// kernel drops, whatever the timeout; a busy machine only delays the window-1 echoes, which
/// the default 250 ms timeout and its late horizon wait for).
fn one_failing(windows: &'static str) -> Vec<&'static str> {
    vec![
        "--protocols",
        "udp",
        "--payloads",
        "16384",
        "--clients",
        "1",
        "--windows",
        windows,
        "--io-models",
        "shared",
        "--io-threads",
        "1",
        "--repetitions",
        "1",
        "--seconds",
        "0.2",
        "--warmup",
        "0",
        "--udp-server-recv-buffer",
        "32768",
        "--udp-timeout-ms",
        "250",
    ]
}

#[test]
fn a_failing_case_is_recorded_and_keep_going_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fail.json");
    let mut args = one_failing("1,64");
    args.extend(["--keep-going", "--out", out.to_str().unwrap()]);
    let o = matrix(&args);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let a = load_valid(&out);
    assert!(a.complete, "--keep-going still completes the archive");
    assert_eq!(a.results.len(), 2);
    assert_eq!(a.failed_measurements, 1);
    let failed = a.results.iter().find(|e| e.error.is_some()).unwrap();
    assert_eq!(failed.run.case.window, 64);
    assert_eq!(
        failed.error.as_deref(),
        Some("benchmark failed with exit code 1")
    );
    assert_eq!(failed.returncode, Some(1));
    assert!(failed.metrics.as_ref().unwrap().udp_lost_messages > 0);
}

#[test]
fn without_keep_going_the_first_failure_stops_the_matrix() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("stop.json");
    let mut args = one_failing("64,1");
    args.extend(["--out", out.to_str().unwrap()]);
    let o = matrix(&args);
    assert_eq!(o.status.code(), Some(1));
    let a = load_valid(&out);
    assert!(!a.complete);
    assert_eq!(a.results.len(), 1);
    assert_eq!(a.failed_measurements, 1);
}

#[test]
fn ctrl_c_saves_the_archive_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("int.json");
    let mut args = vec!["matrix"];
    args.extend(small("5"));
    args.extend(["--out", out.to_str().unwrap()]);
    let mut child = runner().args(&args).stderr(Stdio::null()).spawn().unwrap();
    wait_for_results(&out, 2, &mut child);
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let a = load_valid(&out);
    assert!(!a.complete && a.results.len() >= 2);
    assert_eq!(keys(&a).len(), a.results.len());
}

#[test]
fn bad_flags_exit_2_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let existing = dir.path().join("exists.json");
    std::fs::write(&existing, "{}").unwrap();
    let exists = existing.to_str().unwrap();
    let fresh = dir.path().join("new.json");
    let fresh = fresh.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["--preset", "nope", "--out", fresh],
        vec!["--payloads", "8", "--out", fresh],
        vec!["--windows", "0", "--out", fresh],
        vec!["--preset", "quick"],
        vec!["--out", exists],
        vec!["--resume", exists, "--payloads", "64"],
        vec!["--resume", exists],
        vec![
            "--clients",
            "1024",
            "--windows",
            "1024",
            "--payloads",
            "1024",
            "--out",
            fresh,
        ],
    ];
    for args in cases {
        let o = matrix(&args);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!o.stderr.is_empty(), "{args:?}");
        assert!(!Path::new(fresh).exists(), "{args:?} wrote an archive");
    }
    assert_eq!(
        std::fs::read_to_string(&existing).unwrap(),
        "{}",
        "nothing overwritten"
    );
}

#[test]
fn a_matrix_can_record_a_soak() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("soak.json");
    let o = matrix(&[
        "--protocols",
        "udp",
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
        "0.1",
        "--warmup",
        "0",
        "--soak",
        "0.6",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let a = load_valid(&out);
    assert!(a.complete);
    assert_eq!(a.soak.len(), 1);
    assert!(a.soak[0].passed);
    assert_eq!(a.soak[0].report.as_ref().unwrap().protocol.as_str(), "udp");
}

#[test]
fn the_udp_buffers_preset_gives_each_case_its_server_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("iso.json");
    // The preset's cases with short phases and one repetition (explicit flags override).
    let o = matrix(&[
        "--preset",
        "udp-buffers",
        "--repetitions",
        "1",
        "--seconds",
        "0.1",
        "--keep-going",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let a = load_valid(&out);
    assert_eq!(a.results.len(), 11);
    for e in &a.results {
        let requested = e
            .run
            .case
            .udp_server_recv_buffer
            .expect("each case names its buffer");
        let m = e.metrics.as_ref().unwrap();
        assert_eq!(m.udp_server_receive_buffer_requested_bytes, Some(requested));
        assert!(e
            .command
            .windows(2)
            .any(|w| w[0] == "--udp-server-recv-buffer" && w[1] == requested.to_string()));
    }
}

/// Each configuration of a dataset with its number of runs and passes.
fn configuration_counts(folder: &Path) -> std::collections::BTreeMap<String, (usize, usize)> {
    let datasets = echomark::read::load(&[folder.to_path_buf()]).expect("the dataset loads");
    assert_eq!(datasets.len(), 1);
    let mut out = std::collections::BTreeMap::new();
    for run in &datasets[0].runs {
        let entry = out.entry(format!("{:?}", run.key)).or_insert((0, 0));
        entry.0 += 1;
        entry.1 += usize::from(run.passed);
    }
    out
}

#[test]
fn three_shards_merge_into_the_dataset_the_whole_matrix_makes() {
    let dir = tempfile::tempdir().unwrap();
    let (whole, sharded) = (dir.path().join("whole"), dir.path().join("sharded"));
    std::fs::create_dir_all(&whole).unwrap();
    std::fs::create_dir_all(&sharded).unwrap();
    let mut args = small("2");
    let out = whole.join("archive.json");
    args.extend(["--out", out.to_str().unwrap()]);
    assert!(matrix(&args).status.success());
    let mut shard_runs = 0;
    for i in 1..=3 {
        let out = sharded.join(format!("shard-{i}.json"));
        let mut args = small("2");
        let shard = format!("{i}/3");
        args.extend(["--shard", &shard, "--out", out.to_str().unwrap()]);
        let o = matrix(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let archive = load_valid(&out);
        assert!(archive.complete);
        assert_eq!(
            archive.settings.shard,
            Some(echomark_archive::Shard { index: i, count: 3 })
        );
        shard_runs += archive.results.len();
    }
    // 4 configurations × 2 repetitions, split 2 + 1 + 1 configurations.
    assert_eq!(shard_runs, 8);
    let merged = configuration_counts(&sharded);
    assert_eq!(merged, configuration_counts(&whole));
    assert_eq!(merged.len(), 4);

    // A shard measured twice, or by another build, is refused with the file named.
    let copy = sharded.join("shard-1-again.json");
    std::fs::copy(sharded.join("shard-1.json"), &copy).unwrap();
    let err = echomark::read::load(std::slice::from_ref(&sharded))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("shard-1-again.json") && err.contains("settings.shard"),
        "{err}"
    );
    std::fs::remove_file(&copy).unwrap();
    let path = sharded.join("shard-2.json");
    let mut other: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    other["runner_sha256"] = "0".repeat(64).into();
    std::fs::write(&path, serde_json::to_vec(&other).unwrap()).unwrap();
    let err = echomark::read::load(&[sharded]).unwrap_err().to_string();
    assert!(
        err.contains("shard-2.json") && err.contains("runner_sha256"),
        "{err}"
    );
}

#[test]
fn a_bad_shard_flag_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("a.json");
    for bad in ["0/3", "4/3", "x"] {
        let mut args = small("1");
        args.extend(["--shard", bad, "--out", out.to_str().unwrap()]);
        let o = matrix(&args);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(!out.exists());
    }
}

/// `--rate-sweep`: the closed-loop run first, then open-loop runs at shares of its median
/// throughput; the archive passes the generator's strict reader (O1–O3 included) and a
/// resumed archive derives the same rates.
#[test]
fn a_rate_sweep_measures_closed_loop_then_open_loop_at_shares_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = dir.path().join("sweep");
    std::fs::create_dir(&dataset).unwrap();
    let out = dataset.join("sweep.json");
    let o = matrix(&[
        "--protocols",
        "tcp",
        "--payloads",
        "64",
        "--clients",
        "2",
        "--windows",
        "2",
        "--io-models",
        "shared",
        "--io-threads",
        "1",
        "--repetitions",
        "1",
        "--seconds",
        "0.3",
        "--warmup",
        "0.05",
        "--rate-sweep",
        "10,30",
        "--shuffle",
        "5",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let a = load_valid(&out);
    assert!(a.complete);
    assert_eq!(a.results.len(), 3, "one closed-loop run and two rates");
    assert!(
        a.results[0].run.case.load.is_none(),
        "the closed-loop run comes first"
    );
    let closed = a.results[0].metrics.as_ref().unwrap().roundtrips_per_second;
    for (entry, share) in a.results[1..].iter().zip([0.1, 0.3]) {
        let load = entry.run.case.load.expect("an open-loop run");
        assert_eq!(load.rate, (closed * share).round() as u64);
        let m = entry.metrics.as_ref().unwrap();
        let open = m.open_loop.as_ref().expect("open-loop figures");
        assert_eq!(open.offered_rate, load.rate);
        assert!(entry.command.iter().any(|a| a == "--rate"));
    }
    let datasets = echomark::read::load(&[dir.path().to_path_buf()]).expect("reads strictly");
    assert!(
        datasets[0].runs.iter().all(|r| r.passed),
        "{:?}",
        datasets[0].runs
    );
    let analysis = echomark::analysis::Analysis::of(&datasets).unwrap();
    assert_eq!(analysis.curves.len(), 1);
    assert_eq!(analysis.curves[0].points.len(), 2);
    assert!(analysis.configurations.iter().all(|c| c.key.load.is_none()));
}

/// `--rates`: every case open-loop at each fixed rate, no closed-loop run; the rates and the
/// arrival are in the archive's settings and each run's command.
#[test]
fn fixed_rates_measure_every_case_open_loop_at_each_rate() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rates.json");
    let o = matrix(&[
        "--protocols",
        "udp",
        "--payloads",
        "64",
        "--clients",
        "2",
        "--windows",
        "4",
        "--io-models",
        "shared",
        "--io-threads",
        "1",
        "--repetitions",
        "1",
        "--seconds",
        "0.2",
        "--warmup",
        "0",
        "--rates",
        "500,2000",
        "--arrival",
        "poisson",
        "--arrival-seed",
        "9",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let a = load_valid(&out);
    let plan = a.settings.open_loop.as_ref().expect("settings.open_loop");
    assert_eq!((plan.rates.as_slice(), plan.seed), (&[500, 2000][..], 9));
    let mut rates: Vec<u64> = a
        .results
        .iter()
        .map(|e| e.run.case.load.unwrap().rate)
        .collect();
    rates.sort_unstable();
    assert_eq!(rates, [500, 2000]);
    for e in &a.results {
        let open = e.metrics.as_ref().unwrap().open_loop.as_ref().unwrap();
        assert_eq!(open.arrival, echomark_archive::Arrival::Poisson);
        assert_eq!(open.seed, 9);
        let seed_at = e.command.iter().position(|a| a == "--seed").unwrap();
        assert_eq!(e.command[seed_at + 1], "9");
    }
}

/// The published schema describes every archive the repository holds: echomark's own
/// runtimes and external servers alike.
#[test]
fn every_committed_archive_is_valid_under_the_published_schema() {
    let raw = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../raw-results");
    let mut checked = 0;
    for dataset in std::fs::read_dir(&raw).unwrap() {
        let dataset = dataset.unwrap().path();
        if !dataset.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&dataset).unwrap() {
            let path = file.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            if text.contains("\"echomark_import\"") {
                // Other tools' results: their own document and schema.
                let value =
                    crate::common::valid_under(&path, echomark_archive::IMPORTED_JSON_SCHEMA);
                serde_json::from_value::<echomark_archive::ImportedArchive>(value).unwrap();
            } else {
                load_valid(&path);
            }
            checked += 1;
        }
    }
    assert!(checked >= 20, "{checked} archives");
}

#[test]
fn a_matrix_that_counts_system_calls_records_them_in_every_run_and_the_pages_compare_them() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("counted");
    std::fs::create_dir(&folder).unwrap();
    let mut args = small("1");
    args.extend([
        "--backends",
        "tokio,monoio",
        "--count-syscalls",
        "--out",
        folder.to_str().unwrap(),
    ]);
    let o = matrix(&args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    if !o.status.success() && stderr.contains("cannot count system calls") {
        return echomark::skip::because("counting system calls needs root or CAP_PERFMON");
    }
    assert!(o.status.success(), "{stderr}");
    for backend in ["tokio", "monoio"] {
        let archive = load_valid(&folder.join(format!("{backend}.json")));
        assert!(archive.settings.count_syscalls);
        assert_eq!(archive.results.len(), 4);
        for e in &archive.results {
            let m = e.metrics.as_ref().unwrap();
            assert!(
                m.syscalls.is_some_and(|n| n >= m.messages),
                "{:?}",
                m.syscalls
            );
            assert!(
                e.command.iter().any(|a| a == "--count-syscalls"),
                "{:?}",
                e.command
            );
        }
    }
    // The published command asks for the count again, and the overview sets the two
    // backends' system calls per echo side by side.
    let datasets = echomark::read::load(std::slice::from_ref(&folder)).expect("reads strictly");
    let commands = echomark::reproduce::commands(&datasets[0]);
    assert!(
        commands.iter().any(|c| c.contains(" --count-syscalls")),
        "{commands:?}"
    );
    assert!(datasets[0]
        .runs
        .iter()
        .all(|r| r.instruments.syscalls_per_echo.is_some()));
    let page = rendered_pages(&datasets);
    for (lang, says) in [
        ("en", "System calls per echo"),
        ("zh", "每次回显的系统调用次数"),
    ] {
        let page = page(&format!("{lang}/counted/overview.md"));
        assert!(page.contains(says), "{lang}: {page}");
    }
    // A run without its count, in a matrix that asked for one, is refused at its path.
    let out = folder.join("tokio.json");
    let mut tampered: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    tampered["results"][2]["metrics"]
        .as_object_mut()
        .unwrap()
        .remove("syscalls");
    std::fs::write(&out, tampered.to_string()).unwrap();
    let err = echomark::read::load(std::slice::from_ref(&folder))
        .unwrap_err()
        .to_string();
    assert!(err.contains("results[2].metrics.syscalls"), "{err}");
}

#[test]
fn pause_after_measures_a_slice_and_resume_takes_the_next_until_the_archive_is_complete() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("slices.json");
    let mut args = small("1");
    args.extend(["--out", out.to_str().unwrap(), "--pause-after", "3"]);
    let o = matrix(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("paused after 3 runs"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let first = load_valid(&out);
    assert!(!first.complete, "a paused archive is not complete");
    assert_eq!(first.results.len(), 3);

    let o = matrix(&["--resume", out.to_str().unwrap(), "--pause-after", "3"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let done = load_valid(&out);
    assert!(done.complete, "the last slice completes the archive");
    assert_eq!(done.results.len(), 4);
    assert_eq!(
        &done.results[..3],
        &first.results[..],
        "earlier slices kept"
    );
    assert_eq!(keys(&done).len(), 4);

    let zero = matrix(&["--resume", out.to_str().unwrap(), "--pause-after", "0"]);
    assert_eq!(
        zero.status.code(),
        Some(2),
        "a slice of no runs is a usage error"
    );
}

#[test]
fn a_host_name_is_checked_recorded_and_named_on_the_pages() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("named");
    std::fs::create_dir(&folder).unwrap();
    let out = folder.join("tokio.json");
    // A name that could break a page or a file name is refused before anything runs.
    for bad in ["two words", "-lead", "<b>", &"x".repeat(33)] {
        let mut args: Vec<String> = small("1").iter().map(|a| a.to_string()).collect();
        args.extend([
            format!("--host-name={bad}"),
            "--out".into(),
            out.display().to_string(),
        ]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = matrix(&args);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("is not a host name"),
            "{bad}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!out.exists(), "{bad}: nothing written");
    }
    let mut args = small("1");
    args.extend([
        "--host-name",
        "lab-1.rack_2",
        "--out",
        out.to_str().unwrap(),
    ]);
    let o = matrix(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let a = load_valid(&out);
    assert_eq!(a.host.name.as_deref(), Some("lab-1.rack_2"));
    let datasets = echomark::read::load(std::slice::from_ref(&folder)).expect("reads strictly");
    let page = rendered_pages(&datasets);
    for lang in ["en", "zh"] {
        let list = page(&format!("{lang}/datasets/index.md"));
        assert!(list.contains("lab-1.rack\\_2"), "{lang}: {list}");
    }
    // An archive edited to carry a name no page should show is refused at its path.
    let mut tampered: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    tampered["host"]["name"] = serde_json::json!("<script>");
    std::fs::write(&out, tampered.to_string()).unwrap();
    let err = echomark::read::load(std::slice::from_ref(&folder))
        .expect_err("a bad host name is refused")
        .to_string();
    assert!(
        err.contains("host.name") && err.contains("tokio.json"),
        "{err}"
    );
}
