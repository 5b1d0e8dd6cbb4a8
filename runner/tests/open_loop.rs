//! End-to-end tests of open-loop runs (`once --rate`): the real binary, real loopback
//! sockets. Timing assertions have generous margins: these machines are shared and noisy,
//! and the figures that matter here are orders of magnitude apart.
//!
//! A binary of their own, one test at a time: an open-loop schedule is kept to the
//! microsecond, and its assertions (no saturation, the achieved rate, the service time under
//! a stall) hold only on CPUs the run does not share with other tests. Cargo runs test
//! binaries one after another, so nothing else of the suite runs beside these.

use std::process::Command;
use std::sync::{Mutex, MutexGuard};

use echomark_archive::{little_law, Metrics, OpenLoopMetrics};

/// Held for the whole of each test: the tests of this binary run one at a time.
fn alone() -> MutexGuard<'static, ()> {
    static ALONE: Mutex<()> = Mutex::new(());
    // A failed test poisons the lock; the next one still runs alone.
    ALONE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs `once` with `args` and returns the parsed metrics (any exit code).
fn once(args: &[&str]) -> Metrics {
    let out = Command::new(env!("CARGO_BIN_EXE_echomark-runner"))
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

fn open(m: &Metrics) -> &OpenLoopMetrics {
    m.open_loop
        .as_ref()
        .expect("an open-loop run reports its schedule")
}

const PROTOCOLS: [&str; 7] = ["tcp", "udp", "websocket", "tcps", "wss", "http", "https"];

#[test]
fn every_protocol_runs_open_loop_with_every_check_and_littles_law() {
    let _alone = alone();
    for protocol in PROTOCOLS {
        for (model, threads) in [("shared", "1"), ("sharded", "2")] {
            let m = once(&[
                "--protocol",
                protocol,
                "--rate",
                "2000",
                "--clients",
                "4",
                "--window",
                "4",
                "--seconds",
                "0.5",
                "--warmup",
                "0.1",
                "--io-model",
                model,
                "--io-threads",
                threads,
            ]);
            let what = format!("{protocol} {model} {threads}");
            assert!(m.ok, "{what}: {:?}", m.error);
            assert_eq!(m.error_counters().total(), 0, "{what}");
            let o = open(&m);
            assert_eq!(o.offered_rate, 2000, "{what}");
            assert!(!o.saturated, "{what}: {o:?}");
            assert_eq!(m.messages_sent, m.messages_received, "{what}");
            let little = little_law(&m).expect("checked on a clean open-loop run");
            assert!(little.holds(), "{what}: {little:?}");
            // The corrected latency is never below the service time.
            assert!(m.rtt_p50_us >= o.service_p50_us * 0.999, "{what}");
        }
    }
}

#[test]
fn a_closed_loop_run_reports_no_schedule() {
    let _alone = alone();
    let m = once(&["--seconds", "0.2", "--warmup", "0"]);
    assert!(m.ok && m.open_loop.is_none());
}

#[test]
fn achieved_rate_matches_the_offered_rate_below_saturation() {
    let _alone = alone();
    for protocol in ["tcp", "udp"] {
        let m = once(&[
            "--protocol",
            protocol,
            "--rate",
            "3000",
            "--clients",
            "3",
            "--window",
            "8",
            "--seconds",
            "2",
            "--warmup",
            "0.2",
        ]);
        assert!(m.ok, "{protocol}: {:?}", m.error);
        let o = open(&m);
        assert_eq!(
            o.scheduled_messages, 6000,
            "{protocol}: a uniform schedule is exact"
        );
        let share = o.achieved_rate / o.offered_rate as f64;
        assert!(
            (share - 1.0).abs() <= 0.01,
            "{protocol}: achieved {share:.4} of offered"
        );
        // A sender that wakes a fraction of a millisecond late at the deadline (this VM's
        // host stalls) leaves its last due message unsent: at most one per client.
        assert!(
            o.unsent_messages <= 3,
            "{protocol}: {} unsent",
            o.unsent_messages
        );
        assert!(!o.saturated, "{protocol}");
    }
}

#[test]
fn a_rate_far_above_capacity_is_saturated_not_failed() {
    let _alone = alone();
    let m = once(&[
        "--rate",
        "20000000",
        "--clients",
        "1",
        "--window",
        "1",
        "--seconds",
        "0.5",
        "--warmup",
        "0",
    ]);
    assert!(
        m.ok,
        "saturation is not a correctness failure: {:?}",
        m.error
    );
    let o = open(&m);
    assert!(o.saturated, "{o:?}");
    assert!(o.late_sends > 0 && o.unsent_messages > 0, "{o:?}");
    assert_eq!(o.scheduled_messages, m.messages_sent + o.unsent_messages);
    assert!(
        little_law(&m).is_none(),
        "Little's law is not checked on saturated runs"
    );
}

#[test]
fn poisson_schedules_are_reproducible_from_their_seed() {
    let _alone = alone();
    let run = |seed: &str| {
        let m = once(&[
            "--rate",
            "4000",
            "--arrival",
            "poisson",
            "--seed",
            seed,
            "--clients",
            "2",
            "--window",
            "8",
            "--seconds",
            "0.5",
            "--warmup",
            "0",
        ]);
        assert!(m.ok, "{:?}", m.error);
        open(&m).scheduled_messages
    };
    let (a, b, c) = (run("7"), run("7"), run("8"));
    assert_eq!(a, b, "the same seed schedules the same messages");
    assert_ne!(a, c, "another seed schedules others");
    // 2,000 expected; a Poisson count is within 5 standard deviations (±224).
    assert!(a.abs_diff(2000) < 224, "{a}");
}

#[test]
fn injected_faults_are_still_caught_in_open_loop() {
    let _alone = alone();
    for protocol in ["tcp", "udp", "http"] {
        let m = once(&[
            "--protocol",
            protocol,
            "--rate",
            "4000",
            "--clients",
            "2",
            "--window",
            "4",
            "--seconds",
            "0.5",
            "--warmup",
            "0",
            "--inject-fault",
            "corrupt",
        ]);
        assert!(!m.ok && m.content_errors > 0, "{protocol}: {:?}", m.error);
    }
}

/// The coordinated-omission demonstration: the server stops for 50 ms once a second. Open
/// loop, the messages due during a stall wait for it and the corrected p99.9 shows it,
/// while the service time (measured from the late send) does not; closed loop, the client
/// simply stops sending during the stall, so only the one message caught in it (the max)
/// shows the stall.
#[test]
fn a_server_stall_shows_in_corrected_latency_but_hides_in_closed_loop() {
    let _alone = alone();
    const STALL_US: f64 = 50_000.0;
    let tolerance = 0.2 * STALL_US;
    let base = [
        "--clients",
        "1",
        "--window",
        "1",
        "--seconds",
        "3",
        "--warmup",
        "0.1",
    ];
    let mut args = base.to_vec();
    args.extend(["--inject-fault", "stall", "--rate", "2000"]);
    let m = once(&args);
    let o = open(&m);
    assert!(m.ok, "{:?}", m.error);
    assert!(
        m.rtt_p999_us >= STALL_US - tolerance,
        "corrected p99.9 {}",
        m.rtt_p999_us
    );
    assert!(
        o.service_p999_us < STALL_US / 2.0,
        "service p99.9 {}",
        o.service_p999_us
    );
    assert!(
        o.late_sends >= 50,
        "messages waited for the stall: {}",
        o.late_sends
    );

    let mut args = base.to_vec();
    args.extend(["--inject-fault", "stall"]);
    let closed = once(&args);
    assert!(closed.ok, "{:?}", closed.error);
    assert!(
        closed.rtt_max_us >= STALL_US - tolerance,
        "max {}",
        closed.rtt_max_us
    );
    assert!(
        closed.rtt_p999_us < STALL_US / 2.0,
        "closed p99.9 {}",
        closed.rtt_p999_us
    );
}
