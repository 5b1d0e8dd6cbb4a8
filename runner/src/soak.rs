//! `echomark-runner soak`: a sustained test across topologies, with restarts.
//!
//! The time is split over rounds × topologies (shared 1, shared 4, sharded 4; those the
//! backend cannot run are skipped). Every round
//! starts a fresh server and fresh connections (a restart) and runs the full echo core. It
//! checks, per round: exactly-once accounting (every message the clients sent reached the
//! server once and came back once), zero content, order and unexpected-message errors, no
//! loss, and a clean shutdown: once the round is over, the process has no more threads and
//! no more open file descriptors than before it (no task, runtime or socket left behind).

use std::time::{Duration, Instant};

use echomark_archive::{SoakReport, SoakRound};

use crate::case::{Case, IoModel};
use crate::measure;

fn count_dir(path: &str) -> Option<i64> {
    std::fs::read_dir(path).ok().map(|d| d.count() as i64)
}

/// Threads and open file descriptors of this process (Linux), for the shutdown check.
fn resources() -> (Option<i64>, Option<i64>) {
    (count_dir("/proc/self/task"), count_dir("/proc/self/fd"))
}

/// How long runtime threads and sockets get to go away after a round's shutdown.
const THREAD_EXIT_GRACE: Duration = Duration::from_secs(2);

/// The topologies a soak cycles through.
pub const TOPOLOGIES: [(IoModel, usize); 3] = [
    (IoModel::Shared, 1),
    (IoModel::Shared, 4),
    (IoModel::Sharded, 4),
];

/// Runs the soak described by `base` (its io model and threads are replaced per round) for
/// `seconds` in total, `rounds` restarts per topology.
pub fn run(base: &Case, seconds: f64, rounds: u64) -> SoakReport {
    let start = Instant::now();
    let topologies: Vec<(IoModel, usize)> = TOPOLOGIES
        .into_iter()
        .filter(|&(model, threads)| base.backend.refuse_model(model, threads as u64).is_none())
        .collect();
    let per_round = seconds / (topologies.len() as f64 * rounds as f64);
    let mut out = Vec::new();
    for round in 1..=rounds {
        for &(model, threads) in &topologies {
            let case = Case {
                io_model: model,
                io_threads: threads,
                seconds: per_round.max(0.05),
                warmup: 0.0,
                ..base.clone()
            };
            let (threads_before, fds_before) = resources();
            let m = measure::measure(&case);
            // Runtime threads exit asynchronously after shutdown; give them a moment.
            let deadline = Instant::now() + THREAD_EXIT_GRACE;
            let (mut threads_after, mut fds_after) = resources();
            while (threads_after > threads_before || fds_after > fds_before)
                && Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_millis(5));
                (threads_after, fds_after) = resources();
            }
            let diff = |after: Option<i64>, before: Option<i64>| {
                after.zip(before).map_or(0, |(a, b)| a - b)
            };
            let errors = m.error_counters().total() + m.warmup_errors;
            let mut failures = Vec::new();
            if let Some(e) = &m.error {
                failures.push(e.clone());
            }
            if m.messages_sent != m.messages_received {
                failures.push(format!(
                    "sent {} but {} came back",
                    m.messages_sent, m.messages_received
                ));
            }
            let server_received = m.server_messages_received.unwrap_or(0);
            if server_received != m.messages_sent {
                failures.push(format!(
                    "sent {} but the server received {server_received}",
                    m.messages_sent
                ));
            }
            if m.messages_received == 0 {
                failures.push("no echo completed".to_string());
            }
            let (threads_left, fds_left) = (
                diff(threads_after, threads_before),
                diff(fds_after, fds_before),
            );
            if threads_left > 0 {
                failures.push(format!("{threads_left} threads left after shutdown"));
            }
            if fds_left > 0 {
                failures.push(format!("{fds_left} file descriptors left after shutdown"));
            }
            out.push(SoakRound {
                io_model: model,
                io_threads: threads as u64,
                round,
                seconds: case.seconds,
                messages_sent: m.messages_sent,
                server_messages_received: server_received,
                messages_received: m.messages_received,
                verified_echoes: m.rtt_observations,
                errors,
                threads_left,
                fds_left,
                passed: failures.is_empty() && errors == 0 && m.ok,
                failures,
            });
        }
    }
    SoakReport {
        protocol: base.protocol,
        seconds,
        clients: base.clients as u64,
        window: base.window as u64,
        payload_bytes: base.payload as u64,
        rounds_per_topology: rounds,
        verified_echoes: out.iter().map(|r| r.verified_echoes).sum(),
        elapsed_seconds: start.elapsed().as_secs_f64(),
        passed: out.iter().all(|r| r.passed),
        rounds: out,
    }
}
