//! The normalised run model every format is read into: one [`Run`] per repetition.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

/// The nine fields that identify a configuration (arknet's group key).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ConfigKey {
    pub backend: String,
    pub implementation: String,
    pub protocol: String,
    pub payload_bytes: u64,
    pub clients: u64,
    pub window: u64,
    pub io_model: String,
    pub io_threads: u64,
    pub handler_work: u64,
    /// echomark's UDP isolation cases: the server socket's receive-buffer request. Not part
    /// of arknet's nine-field key (always `None` there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub udp_server_recv_buffer: Option<u64>,
}

impl ConfigKey {
    /// Position of the topology in the canonical order 1×1, 1×2, 1×4, 2×1, 4×1
    /// (contexts × threads per context): shared by threads, then sharded by threads.
    pub fn topology_rank(&self) -> (u8, u64) {
        (u8::from(self.io_model != "shared"), self.io_threads)
    }

    /// Whether this is the one-thread baseline of its group.
    pub fn is_baseline(&self) -> bool {
        self.io_model == "shared" && self.io_threads == 1
    }
}

/// Which program wrote a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Program {
    /// `echomark-runner once`.
    Echomark,
    /// arknet's `arknet_loopback_benchmark` (the callback program).
    ArknetLoopback,
    /// arknet's `arknet_coroutine_benchmark` (the native program).
    ArknetCoroutine,
}

/// The archive layout a file uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Echomark,
    ArknetSchema1,
    ArknetSchema2,
}

/// One repetition of one configuration, normalised.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    /// Index of the file in [`Dataset::files`].
    pub file: usize,
    /// Index in that file's `results`.
    pub index: usize,
    pub key: ConfigKey,
    pub repetition: u64,
    pub program: Program,
    pub address_family: String,
    /// echomark's strict verdict.
    pub passed: bool,
    /// Why the run failed; empty when it passed.
    pub reasons: Vec<String>,
    /// arknet's dimensions-rule verdict, for comparison.
    pub arknet_passed: bool,
    pub roundtrips_per_second: Option<f64>,
    pub payload_mib_per_second: Option<f64>,
    pub rtt_p50_us: Option<f64>,
    pub rtt_p95_us: Option<f64>,
    pub rtt_p99_us: Option<f64>,
    pub rtt_p999_us: Option<f64>,
    pub peak_rss_bytes: Option<f64>,
    /// CPU seconds as the program reported them (interval differs by program).
    pub cpu_seconds: Option<f64>,
    /// Percent of one logical CPU (arknet-reports.md §3.1).
    pub cpu_percent: Option<f64>,
    /// The CPU interval was not reported and had to be estimated.
    pub cpu_estimated: bool,
    pub messages: Option<u64>,
    pub messages_sent: Option<u64>,
    /// Verified echoes of measured-phase messages (echomark), else `messages`.
    pub messages_received: Option<u64>,
    pub server_messages_received: Option<u64>,
    pub content_errors: u64,
    pub order_errors: u64,
    pub udp_lost_messages: u64,
    pub kernel_udp_rcvbuf_errors_delta: Option<u64>,
    pub udp_server_receive_buffer_bytes: Option<u64>,
    pub udp_server_receive_buffer_requested_bytes: Option<u64>,
    pub udp_send_buffer_requested_bytes: Option<u64>,
    /// The child's argv joined with spaces.
    pub command: String,
}

/// What a file says about itself.
#[derive(Debug, Clone, Serialize)]
pub struct ArchiveFile {
    #[serde(skip)]
    pub path: PathBuf,
    /// File name, used on pages and in links.
    pub name: String,
    pub format: Format,
    pub backend: Option<String>,
    pub recorded_at_utc: Option<String>,
    pub git_head: Option<String>,
    pub dirty: bool,
    pub source_sha256: Option<String>,
    pub executable_sha256: Option<String>,
    pub runner_sha256: Option<String>,
    pub host: BTreeMap<String, serde_json::Value>,
    pub seconds: f64,
    pub warmup: f64,
    pub repetitions: u64,
    pub address_family: String,
    pub complete: bool,
    pub runs: usize,
    pub shuffle_seed: Option<u64>,
    pub preset: Option<String>,
    /// The protocols the matrix requested.
    pub protocols: Vec<String>,
    /// echomark: `--keep-going` and `--soak` of the matrix.
    pub keep_going: bool,
    pub soak_seconds: Option<f64>,
    /// echomark archives: the UDP loss timeout of the matrix.
    pub udp_timeout_ms: Option<u64>,
    /// Sustained tests recorded with the matrix.
    pub soak: Vec<SoakResult>,
}

/// The outcome of one sustained test.
#[derive(Debug, Clone, Serialize)]
pub struct SoakResult {
    pub protocol: String,
    pub seconds: f64,
    pub passed: bool,
    pub verified_echoes: u64,
    pub rounds: u64,
    /// The first failure, when it failed.
    pub failure: Option<String>,
}

/// A folder of archives measured together.
#[derive(Debug, Clone, Serialize)]
pub struct Dataset {
    /// The folder name.
    pub name: String,
    pub files: Vec<ArchiveFile>,
    pub runs: Vec<Run>,
    /// Things worth knowing that do not change any verdict.
    pub warnings: Vec<crate::error::Problem>,
}

impl Dataset {
    /// Repetitions per configuration, as the first archive's settings give them (0 without one).
    pub fn repetitions(&self) -> u64 {
        self.files.first().map_or(0, |f| f.repetitions)
    }
}
