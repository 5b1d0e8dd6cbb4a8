//! Open-loop runs (`once --rate`) whose assertions hold however busy the machine is: a
//! closed-loop run has no schedule, a rate far above capacity is saturated rather than
//! failed, a seeded Poisson schedule is the same every time, and injected faults are caught.
//! (What needs the CPUs to itself is in the `open_loop` binary.)

use echomark_archive::little_law;

use crate::common::open_loop::{once_with, schedule};

#[test]
fn a_closed_loop_run_reports_no_schedule() {
    let m = once_with(&["--seconds", "0.2", "--warmup", "0"]);
    assert!(m.ok && m.open_loop.is_none());
}

#[test]
fn a_rate_far_above_capacity_is_saturated_not_failed() {
    let m = once_with(&[
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
    let o = schedule(&m);
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
    let run = |seed: &str| {
        let m = once_with(&[
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
        schedule(&m).scheduled_messages
    };
    let (a, b, c) = (run("7"), run("7"), run("8"));
    assert_eq!(a, b, "the same seed schedules the same messages");
    assert_ne!(a, c, "another seed schedules others");
    // 2,000 expected; a Poisson count is within 5 standard deviations (±224).
    assert!(a.abs_diff(2000) < 224, "{a}");
}

#[test]
fn injected_faults_are_still_caught_in_open_loop() {
    for protocol in ["tcp", "udp", "http"] {
        let m = once_with(&[
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
