//! One measurement, from a validated [`Case`] to its [`Metrics`].
//!
//! Timeline: set up every socket (untimed, `setup`) → warmup phase → measured phase →
//! stop (`rig`). Each phase opens with the start signal, runs until its deadline, then
//! drains for at most [`DRAIN_LIMIT`]; every client reports ([`crate::traffic::phase`]), and the next phase
//! starts only when all have. The CPU and kernel-counter samples are taken on the
//! orchestrator thread at the start signal and at the deadline, so they cover exactly the
//! measured interval. [`report`] turns the totals into the metrics object; [`topology`]
//! builds tokio's runtimes and [`shards`] monoio's.

pub mod report;
mod rig;
pub mod runtimes;
mod setup;
mod setup_target;
mod setup_target_uring;
mod setup_uring;
pub mod shards;
pub mod topology;

use std::time::Duration;

use echomark_archive::Metrics;

use crate::case::{Backend, Case};
use crate::instruments::resources;
use crate::instruments::syscalls::SyscallCounter;

/// How long after a deadline in-flight messages are waited for.
pub const DRAIN_LIMIT: Duration = Duration::from_secs(2);

/// Measures `case` and returns its metrics. Never panics on I/O trouble: setup failures
/// become `ok: false` with the reason in `error`.
pub fn measure(case: &Case) -> Metrics {
    let mut metrics = report::empty(case);
    // Narrow this (the orchestrator) thread first: the runtime threads it starts inherit
    // the list and then take one CPU of it each.
    if let Some(cpus) = &case.client_cpus {
        if let Err(e) = crate::placement::pin_current_thread(cpus) {
            metrics.error = Some(format!("setup failed: {e}"));
            report::finish_verdict(&mut metrics);
            return metrics;
        }
    }
    // Opened before any runtime thread starts: they inherit it.
    let mut syscalls = match SyscallCounter::open_if(case.count_syscalls) {
        Ok(counter) => counter,
        Err(e) => {
            metrics.error = Some(format!("setup failed: {e}"));
            report::finish_verdict(&mut metrics);
            return metrics;
        }
    };
    let counter = syscalls.as_mut();
    let started = match (&case.target, case.backend) {
        (Some(target), Backend::Tokio) => {
            rig::Rig::start_target(case, target).map(|rig| rig.run(case, &mut metrics, counter))
        }
        (Some(target), Backend::Monoio) => rig::Rig::start_target_uring(case, target)
            .map(|rig| rig.run(case, &mut metrics, counter)),
        (None, Backend::Tokio) => {
            rig::Rig::start(case).map(|rig| rig.run(case, &mut metrics, counter))
        }
        (None, Backend::Monoio) => {
            rig::Rig::start_uring(case).map(|rig| rig.run(case, &mut metrics, counter))
        }
    };
    if let Err(e) = started {
        metrics.error = Some(format!("setup failed: {e}"));
    }
    if let Some(target) = &case.target {
        report::external_server(&mut metrics, case, target);
    }
    metrics.peak_rss_bytes = resources::peak_rss_bytes();
    report::finish_verdict(&mut metrics);
    metrics
}
