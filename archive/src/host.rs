//! The machine a dataset was measured on, as every archive (and an external server's
//! `--server-machine`) describes it.

use serde::{Deserialize, Serialize};

/// The machine a dataset was measured on. No host name is recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    /// `uname` system, e.g. `Linux`.
    pub system: String,
    /// Kernel release.
    pub release: String,
    /// Architecture, e.g. `x86_64`.
    pub machine: String,
    /// CPU model name.
    pub cpu: String,
    pub logical_cpus: u64,
    pub physical_cpus: Option<u64>,
    pub memory_bytes: Option<u64>,
    /// `NAME` from `/etc/os-release`.
    pub os_name: Option<String>,
    /// `VERSION_ID` (or `VERSION`) from `/etc/os-release`.
    pub os_version: Option<String>,
    /// The CPU's family, model and stepping (`/proc/cpuinfo`), which identify it where a
    /// virtual machine shortens the model name (absent in older archives).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_signature: Option<String>,
    /// Whether simultaneous multithreading is on (`/sys/devices/system/cpu/smt/active`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smt_active: Option<bool>,
    /// The CPU frequency governor of CPU 0, where Linux exposes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_governor: Option<String>,
    /// A short name the user gave the machine (`matrix --host-name`), which pages use in
    /// place of one derived from the facts above; never the system's host name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}
