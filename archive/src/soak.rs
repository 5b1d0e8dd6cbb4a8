//! The report of `echomark-runner soak`, as printed and as recorded in an archive.

use serde::{Deserialize, Serialize};

use crate::key::{IoModel, Protocol};

/// One round (a fresh server and fresh connections) on one topology.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SoakRound {
    pub io_model: IoModel,
    pub io_threads: u64,
    pub round: u64,
    pub seconds: f64,
    pub messages_sent: u64,
    pub server_messages_received: u64,
    pub messages_received: u64,
    pub verified_echoes: u64,
    pub errors: u64,
    /// Threads the round left running after its shutdown (0 when clean).
    pub threads_left: i64,
    /// File descriptors the round left open after its shutdown (0 when clean).
    pub fds_left: i64,
    pub passed: bool,
    pub failures: Vec<String>,
}

/// The whole sustained test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SoakReport {
    pub protocol: Protocol,
    pub seconds: f64,
    pub clients: u64,
    pub window: u64,
    pub payload_bytes: u64,
    pub rounds_per_topology: u64,
    pub verified_echoes: u64,
    pub elapsed_seconds: f64,
    pub passed: bool,
    pub rounds: Vec<SoakRound>,
}

impl SoakReport {
    /// The first failure any round recorded.
    pub fn first_failure(&self) -> Option<&str> {
        self.rounds
            .iter()
            .flat_map(|r| r.failures.iter())
            .map(String::as_str)
            .next()
    }
}
