//! A fleet: several load generators, each an ordinary echomark client process on a host of
//! its own, measuring one target together.
//!
//! The coordinator ([`coordinator`]) gathers the generators ([`generator`]), sends each the
//! case (`once`'s arguments), and waits until every one has connected, verified the target
//! and warmed up. Then it releases them at one instant of its own clock, sent ahead, with
//! one common end; every generator maps both to its own clock by the offset it measured
//! with four-timestamp exchanges ([`clock`]), and reports its start skew, its clock before
//! and after the run, and its metrics. The coordinator merges them exactly ([`merge`]):
//! counters summed, histograms added bucket by bucket. A generator that fails or misses
//! the barrier fails the run with its reason; nothing is merged from a partial fleet.
//! [`wire`] is what they say to each other; [`job`] picks a process's role from its index
//! in a Kubernetes Indexed Job.

pub mod clock;
pub mod coordinator;
pub mod generator;
pub mod job;
pub mod merge;
pub mod wire;

pub use coordinator::{Fleet, FleetTiming};
pub use generator::GeneratorOptions;

/// Why a fleet could not measure.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("cannot encode a message: {0}")]
    Encode(serde_json::Error),
    #[error("the other side closed the connection")]
    Closed,
    #[error("the other side said nothing in time")]
    Silent,
    #[error("a message could not be read: {0}")]
    Malformed(String),
    #[error("a generator speaks fleet protocol {theirs}, this coordinator {ours}")]
    Version { theirs: u32, ours: u32 },
    #[error("no coordinator answered at {address} within {waited_seconds} s ({last})")]
    Unreachable {
        address: String,
        waited_seconds: u64,
        last: String,
    },
    #[error("{have} of {want} generators connected within {waited_seconds} s")]
    Incomplete {
        have: usize,
        want: usize,
        waited_seconds: u64,
    },
    #[error("two generators say they are index {0}")]
    DuplicateIndex(u64),
    #[error("the fleet has {have} generators, the case asks for {want}")]
    TooFew { have: usize, want: usize },
    #[error("generator {index} ({host}) {reason}")]
    Generator {
        index: u64,
        host: String,
        reason: String,
    },
    #[error("{missing} of {want} generators were not ready within {waited_seconds} s")]
    NotReady {
        missing: usize,
        want: usize,
        waited_seconds: u64,
    },
    #[error("the case is not one a fleet runs: {0}")]
    Refused(String),
    #[error(transparent)]
    Merge(#[from] merge::MergeError),
}

/// This host's name, as the kernel holds it (a pod's name in Kubernetes).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

/// This host's logical CPUs (the machine's, as its description says them; where the
/// generator's clients ran is in their metrics' `placement`).
pub fn logical_cpus() -> u64 {
    crate::placement::online_cpus()
}
