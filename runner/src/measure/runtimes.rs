//! What every measurement topology shares: how long stopping runtimes may take, the
//! [`Runtimes`] a setup leaves running, how threads are named, and whether the kernel
//! allows io_uring. The lowest room of `measure`: it imports none of its siblings.

use std::time::Duration;

/// How long stopped clients get to end, and then server tasks, before they are aborted.
pub const CLIENT_STOP_GRACE: Duration = Duration::from_secs(2);
pub const SERVER_STOP_GRACE: Duration = Duration::from_millis(200);
pub const RUNTIME_STOP_GRACE: Duration = Duration::from_millis(500);

/// A backend's runtimes with the tasks a setup spawned on them.
pub trait Runtimes {
    /// Gives clients (which end on [`crate::traffic::phase::Command::Stop`]) [`CLIENT_STOP_GRACE`] and then server
    /// tasks [`SERVER_STOP_GRACE`] to end, cancels what is left and joins every thread;
    /// returns what their io_uring rings counted, when the backend runs on rings of its own.
    fn stop(self) -> Option<echomark_archive::RingCounters>;
}

/// The kernel's `kernel.io_uring_disabled` sysctl (0 allowed, 1 privileged only, 2 off);
/// `None` on kernels that do not have it.
pub fn io_uring_disabled_sysctl() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The names of an in-process server's own runtime threads (`echomark-server-0`, …; the
/// kernel keeps 15 bytes, `echomark-server`), by which the placement record tells them
/// from the client's.
pub const SERVER_THREADS: ThreadNames = ThreadNames {
    shard: "echomark-server",
    pool: "echomark-server",
};

/// How a topology names its threads: `{shard}-{i}` for a dedicated runtime's thread,
/// `pool` for a multi-thread runtime's workers.
#[derive(Debug, Clone, Copy)]
pub struct ThreadNames {
    pub shard: &'static str,
    pub pool: &'static str,
}
