//! One measurement, from a validated [`Case`] to its [`Metrics`].
//!
//! Timeline: set up every socket (untimed, `setup`) → warmup phase → measured phase →
//! stop (`rig`). Each phase opens with the start signal, runs until its deadline, then
//! drains for at most [`DRAIN_LIMIT`]; every client reports ([`crate::traffic::phase`]), and the next phase
//! starts only when all have. The CPU and kernel-counter samples are taken on the
//! orchestrator thread at the start signal and at the deadline, so they cover exactly the
//! measured interval. [`report`] turns the totals into the metrics object; [`topology`]
//! builds tokio's runtimes, [`shards`] monoio's, and `setup_ring` the io_uring rings of
//! [`crate::iouring`].

pub mod report;
mod rig;
pub use rig::{AtOnce, Release, Window};
pub mod runtimes;
mod setup;
mod setup_ring;
mod setup_target;
mod setup_target_uring;
mod setup_uring;
pub mod shards;
pub mod topology;

use std::time::Duration;

use echomark_archive::Metrics;

use echomark_archive::Role;

use crate::case::{Backend, Case, Target};
use crate::instruments::resources;
use crate::instruments::syscalls::SyscallCounter;

/// How long after a deadline in-flight messages are waited for.
pub const DRAIN_LIMIT: Duration = Duration::from_secs(2);

/// How one runtime sets a measurement up: client and server in this process, or the
/// client alone against a target. Which backend plays which role is declared once, in its
/// capabilities ([`echomark_archive::Capabilities::roles`]); [`measure_on`] maps a backend
/// to its runtimes.
trait Engine: runtimes::Runtimes + Sized {
    fn in_process(case: &Case) -> std::io::Result<rig::Rig<Self>>;
    fn client(case: &Case, target: &Target) -> std::io::Result<rig::Rig<Self>>;
}

impl Engine for topology::TokioRuntimes {
    fn in_process(case: &Case) -> std::io::Result<rig::Rig<Self>> {
        rig::Rig::start(case)
    }
    fn client(case: &Case, target: &Target) -> std::io::Result<rig::Rig<Self>> {
        rig::Rig::start_target(case, target)
    }
}

impl Engine for shards::MonoioRuntimes {
    fn in_process(case: &Case) -> std::io::Result<rig::Rig<Self>> {
        rig::Rig::start_uring(case)
    }
    fn client(case: &Case, target: &Target) -> std::io::Result<rig::Rig<Self>> {
        rig::Rig::start_target_uring(case, target)
    }
}

impl Engine for setup_ring::RingRuntimes {
    fn in_process(case: &Case) -> std::io::Result<rig::Rig<Self>> {
        rig::Rig::start_ring(case)
    }
    fn client(case: &Case, _: &Target) -> std::io::Result<rig::Rig<Self>> {
        rig::Rig::start_ring(case)
    }
}

/// Sets `case` up on the runtimes `E` for its role and runs it into `m`.
fn measure_with<E: Engine>(
    case: &Case,
    m: &mut Metrics,
    syscalls: Option<&mut SyscallCounter>,
    release: &mut dyn Release,
) -> std::io::Result<()> {
    let rig = match &case.target {
        Some(target) => E::client(case, target)?,
        None => E::in_process(case)?,
    };
    rig.run(case, m, syscalls, release);
    Ok(())
}

/// Runs `case` on its backend's runtimes; an error for a backend that cannot play its
/// role (a validated case never has one).
fn measure_on(
    case: &Case,
    m: &mut Metrics,
    syscalls: Option<&mut SyscallCounter>,
    release: &mut dyn Release,
) -> std::io::Result<()> {
    let role = if case.target.is_some() {
        Role::Client
    } else {
        Role::InProcess
    };
    if let Some(why) = case.backend.refuse_role(role) {
        return Err(std::io::Error::other(why));
    }
    match case.backend {
        Backend::Tokio => measure_with::<topology::TokioRuntimes>(case, m, syscalls, release),
        Backend::Monoio => measure_with::<shards::MonoioRuntimes>(case, m, syscalls, release),
        Backend::IoUring => measure_with::<setup_ring::RingRuntimes>(case, m, syscalls, release),
        Backend::Named(_) => Err(std::io::Error::other(format!(
            "--backend {} does not measure in this process",
            case.backend
        ))),
    }
}

/// Measures `case` and returns its metrics. Never panics on I/O trouble: setup failures
/// become `ok: false` with the reason in `error`.
pub fn measure(case: &Case) -> Metrics {
    measure_released(case, &mut AtOnce)
}

/// [`measure`], with the measured phase started when `release` says (a fleet's barrier).
pub fn measure_released(case: &Case, release: &mut dyn Release) -> Metrics {
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
    let started = measure_on(case, &mut metrics, counter, release);
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
