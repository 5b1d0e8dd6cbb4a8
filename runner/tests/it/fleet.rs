//! A fleet of generators, as a Kubernetes Indexed Job runs it, in network namespaces that
//! `scripts/fleet-in-namespaces` creates and removes: released at one barrier, clocks
//! measured, histograms merged exactly; a lost generator fails the run and leaves nothing
//! behind; a shifted clock is measured for what it is.
use std::path::Path;
use std::process::{Command, Output};

use crate::common::*;
use echomark_archive::{FleetRecord, Metrics};

/// The script at the workspace root.
fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/fleet-in-namespaces")
}

/// Runs the script with `args`, or `None` after saying why it cannot run here.
fn in_namespaces(args: &[&str]) -> Option<Output> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        echomark::skip::because("a fleet in network namespaces needs root");
        return None;
    }
    if Command::new("unshare").arg("--version").output().is_err() {
        echomark::skip::because("unshare (util-linux) is not installed");
        return None;
    }
    let mut all = vec![args[0], "--runner", RUNNER];
    all.extend(&args[1..]);
    Some(
        Command::new(script())
            .args(&all)
            .output()
            .expect("the script runs"),
    )
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The sum of a generator's histogram counts, read from its encoded histogram.
fn histogram_count(m: &Metrics) -> u64 {
    let h = echomark_archive::histogram::decode(m.rtt_histogram.as_ref().expect("a histogram"))
        .expect("the histogram decodes");
    h.len()
}

/// Checks a fleet run's record against its generators': one record each with its own host,
/// counts and histograms that add up to the merged ones, clocks and skews recorded.
fn check_merged(m: &Metrics, generators: usize) -> &FleetRecord {
    let fleet = m.fleet.as_deref().expect("a fleet record");
    assert_eq!(fleet.generator_count, generators as u64);
    assert_eq!(fleet.generators.len(), generators);
    for (i, g) in fleet.generators.iter().enumerate() {
        assert_eq!(g.index, i as u64);
        assert_eq!(
            g.host,
            format!("echomark-fleet-{i}"),
            "each pod its own host name"
        );
        assert!(g.metrics.ok, "generator {i}: {:?}", g.metrics.error);
        assert!(g.metrics.messages > 0);
        assert!(g.clock.exchanges >= 2);
        assert!(g.clock.uncertainty_us > 0.0 && g.clock.delay_us > 0.0);
        assert!(g.metrics.fleet.is_none());
    }
    let sum = |f: fn(&Metrics) -> u64| fleet.metrics().map(f).sum::<u64>();
    assert_eq!(m.messages, sum(|g| g.messages));
    assert_eq!(m.messages_sent, sum(|g| g.messages_sent));
    assert_eq!(m.rtt_samples, sum(|g| g.rtt_samples));
    let counts: u64 = fleet.metrics().map(histogram_count).sum();
    assert_eq!(
        histogram_count(m),
        counts,
        "the merged histogram holds every round trip"
    );
    assert_eq!(m.rtt_samples, counts);
    fleet
}

#[test]
fn four_generators_in_namespaces_start_together_and_merge_exactly() {
    // On a machine as busy as a test run's, a wakeup may come late now and then: the run
    // is measured again, at most three times, and every attempt's skews are said.
    let mut said = Vec::new();
    for _ in 0..3 {
        let Some(out) = in_namespaces(&["4"]) else {
            return;
        };
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(stderr.contains("no process left behind"), "{stderr}");
        let m: Metrics = serde_json::from_slice(&out.stdout).expect("the merged metrics");
        assert!(m.ok, "{:?}", m.error);
        let fleet = check_merged(&m, 4);
        // Every generator reached the server over its own veth, by the Service's name.
        let target = m.target.as_ref().expect("a target");
        assert_eq!(target.address, "10.77.0.2:7000");
        let skews: Vec<f64> = fleet.generators.iter().map(|g| g.start_skew_us).collect();
        let worst = fleet.start_skew_worst_us;
        assert!(skews.contains(&worst));
        if worst.abs() < 1_000.0 {
            return;
        }
        said.push(format!("{skews:?}"));
    }
    panic!("a start skew of 1 ms or more in every attempt: {said:?}");
}

#[test]
fn a_generator_killed_before_the_barrier_fails_the_run_and_leaves_nothing_behind() {
    // Pod 2 is killed 1 s into a 4 s warmup, so while it warms up.
    let Some(out) = in_namespaces(&[
        "3",
        "--kill",
        "2@1",
        "--",
        "fleet",
        "coordinate",
        "--generators",
        "3",
        "--listen",
        "0.0.0.0:7700",
        "--",
        "--target",
        "echomark-server:7000",
        "--clients",
        "2",
        "--seconds",
        "1",
        "--warmup",
        "4",
    ]) else {
        return;
    };
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing merged from a partial fleet");
    assert!(
        stderr.contains("generator 2 (echomark-fleet-2) closed the connection before the barrier"),
        "{stderr}"
    );
    assert!(stderr.contains("no process left behind"), "{stderr}");
}

#[test]
fn a_matrix_measures_each_case_by_each_generator_count() {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("fleet.json");
    let out_arg = out_path.display().to_string();
    let Some(out) = in_namespaces(&[
        "2",
        "--",
        "matrix",
        "--fleet-listen",
        "0.0.0.0:7700",
        "--fleet-size",
        "2",
        "--fleet-generators",
        "1,2",
        "--server-address",
        "echomark-server:7000",
        "--server-name",
        "echomark-serve",
        "--protocols",
        "tcp",
        "--payloads",
        "256",
        "--clients",
        "2",
        "--windows",
        "1",
        "--io-models",
        "shared",
        "--io-threads",
        "1",
        "--repetitions",
        "2",
        "--seconds",
        "0.3",
        "--warmup",
        "0.1",
        "--shuffle",
        "7",
        "--out",
        &out_arg,
    ]) else {
        return;
    };
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let archive = load_valid(&out_path);
    assert!(archive.complete);
    let fleet = archive.settings.fleet.as_ref().expect("settings.fleet");
    assert_eq!((fleet.size, fleet.generators.clone()), (2, vec![1, 2]));
    let server = archive.settings.external_server.as_ref().unwrap();
    assert_eq!(server.address.as_deref(), Some("echomark-server:7000"));
    assert!(archive.verification.iter().all(|v| v.passed));
    let mut counts: Vec<u64> = archive
        .results
        .iter()
        .map(|e| e.run.case.generators.expect("a generator count"))
        .collect();
    counts.sort();
    assert_eq!(counts, [1, 1, 2, 2]);
    for e in &archive.results {
        let m = e.metrics.as_ref().expect("metrics");
        assert!(m.ok, "{:?}", e.error);
        check_merged(m, e.run.case.generators.unwrap() as usize);
        assert_eq!(
            e.command[1..3],
            ["fleet".to_string(), "coordinate".to_string()]
        );
    }
}

#[test]
fn a_shifted_clock_is_measured_within_its_uncertainty_and_its_start_corrected() {
    // Two generators on loopback, one reading a clock 250 ms ahead (a test-only flag).
    let dir = tempfile::tempdir().unwrap();
    let server = Server::echomark(&["--protocol", "tcp"]);
    let log = dir.path().join("coordinator.log");
    let coordinator = Command::new(RUNNER)
        .args([
            "fleet",
            "coordinate",
            "--generators",
            "2",
            "--listen",
            "127.0.0.1:0",
            "--",
            "--target",
            &server.address,
            "--clients",
            "2",
            "--seconds",
            "0.5",
            "--warmup",
            "0.2",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let address = (0..200)
        .find_map(|_| {
            std::thread::sleep(std::time::Duration::from_millis(25));
            let said = std::fs::read_to_string(&log).unwrap_or_default();
            said.split("listening on ")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next().map(str::to_string))
        })
        .expect("the coordinator says where it listens");
    let shift_us: i64 = 250_000;
    let generators: Vec<_> = [0, shift_us]
        .iter()
        .enumerate()
        .map(|(i, shift)| {
            Command::new(RUNNER)
                .args(["fleet", "generate", "--coordinator", &address, "--index"])
                .arg(i.to_string())
                .arg(format!("--test-clock-shift-us={shift}"))
                .spawn()
                .unwrap()
        })
        .collect();
    let out = coordinator.wait_with_output().unwrap();
    for mut g in generators {
        assert!(g.wait().unwrap().success(), "a dismissed generator exits 0");
    }
    let m: Metrics = serde_json::from_slice(&out.stdout).expect("the merged metrics");
    assert!(m.ok, "{:?}", m.error);
    let fleet = m.fleet.as_deref().unwrap();
    let (plain, shifted) = (&fleet.generators[0], &fleet.generators[1]);
    // Coordinator minus generator: the shifted clock reads 250 ms ahead, so −250,000 µs;
    // the true offset is within the stated uncertainty of the estimate, before and after.
    let off = |c: &echomark_archive::ClockRecord| (c.offset_us, c.uncertainty_us);
    for (offset, uncertainty) in [
        off(&shifted.clock),
        (
            shifted.clock.offset_end_us,
            shifted.clock.uncertainty_end_us,
        ),
    ] {
        assert!(
            (offset + shift_us as f64).abs() <= uncertainty,
            "offset {offset} µs ± {uncertainty} against −{shift_us}"
        );
    }
    assert!(plain.clock.offset_us.abs() <= plain.clock.uncertainty_us);
    // Its start, corrected by its offset, is the others': far less than the shift.
    assert!(
        (shifted.start_skew_us - plain.start_skew_us).abs() < 50_000.0,
        "{} against {}",
        shifted.start_skew_us,
        plain.start_skew_us
    );
}

/// Two generators on loopback for a coordinator at `address`: started, then awaited.
fn generators(address: &str) -> Vec<std::process::Child> {
    (0..2)
        .map(|_| {
            Command::new(RUNNER)
                .args([
                    "fleet",
                    "generate",
                    "--coordinator",
                    address,
                    "--wait",
                    "60",
                ])
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect()
}

#[test]
fn a_paused_fleet_matrix_resumes_with_its_fleet_gathered_again() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::echomark(&["--protocol", "tcp"]);
    let out = dir.path().join("fleet.json");
    let listen = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let address = listen.to_string();
    let mut args: Vec<String> = [
        "matrix",
        "--server-address",
        &server.address,
        "--server-name",
        "s",
        "--fleet-size",
        "2",
        "--fleet-listen",
        &address,
        "--fleet-generators",
        "1,2",
        "--protocols",
        "tcp",
        "--payloads",
        "256",
        "--clients",
        "2",
        "--windows",
        "1",
        "--io-models",
        "shared",
        "--io-threads",
        "1",
        "--repetitions",
        "2",
        "--seconds",
        "0.2",
        "--warmup",
        "0.1",
        "--pause-after",
        "3",
        "--out",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(out.display().to_string());
    for round in [
        &args[..],
        &[
            "matrix".into(),
            "--resume".into(),
            out.display().to_string(),
        ][..],
    ] {
        let fleet = generators(&address);
        let ran = Command::new(RUNNER).args(round).output().unwrap();
        assert!(
            ran.status.success(),
            "{}",
            String::from_utf8_lossy(&ran.stderr)
        );
        for mut g in fleet {
            assert!(g.wait().unwrap().success(), "a dismissed generator exits 0");
        }
    }
    let archive = load_valid(&out);
    assert!(archive.complete);
    let mut runs: Vec<(u64, u64)> = archive
        .results
        .iter()
        .map(|e| (e.run.case.generators.unwrap(), e.run.repetition))
        .collect();
    runs.sort();
    assert_eq!(runs, [(1, 1), (1, 2), (2, 1), (2, 2)], "every run once");
}
