//! An imported archive: what another load generator (oha, autocannon, wrk, Locust, iperf3)
//! measured, as `echomark import` reads it from the tool's own output.
//!
//! It is a document of its own, not an [`crate::archive::Archive`]: echomark's metrics hold counters
//! (verified echoes, content and order errors, the server's own counts) that no other tool
//! keeps, and an unknown counter is never written as 0. Every figure here is one the tool
//! printed, or arithmetic on figures it printed (named where so); what the tool did not
//! measure is absent. The file says who measured, whether its latency is lossless or a
//! summary, and whether the load was closed or open loop.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::host::Host;
use crate::key::Protocol;

/// Version of the imported-archive layout; bumped on any incompatible change.
pub const IMPORT_FORMAT_VERSION: u32 = 1;

/// The load generators `echomark import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tool {
    /// oha (Rust): `--output-format json`.
    Oha,
    /// autocannon (Node): `--json`.
    Autocannon,
    /// wrk (C): its text report, with or without the JSON line of `scripts/wrk-json.lua`.
    Wrk,
    /// Locust (Python): `--json` statistics.
    Locust,
    /// iperf3: `-J`.
    Iperf3,
}

impl Tool {
    /// Every tool, in the order pages list them.
    pub const ALL: [Tool; 5] = [
        Tool::Wrk,
        Tool::Oha,
        Tool::Autocannon,
        Tool::Locust,
        Tool::Iperf3,
    ];

    /// The tool's name, as its users write it on a command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Tool::Oha => "oha",
            Tool::Autocannon => "autocannon",
            Tool::Wrk => "wrk",
            Tool::Locust => "locust",
            Tool::Iperf3 => "iperf3",
        }
    }

    /// The tool a name stands for.
    pub fn named(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|t| t.as_str() == name)
    }
}

impl std::fmt::Display for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A whole imported archive: one tool, one host, the runs read from its output files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportedArchive {
    /// Marks the file as imported and names the layout's version.
    pub echomark_import: ImportInfo,
    /// The tool that measured, and its version as it reported it (`None` when neither its
    /// output nor the import's flags said).
    pub tool: Tool,
    pub tool_version: Option<String>,
    /// The machine the tool ran on, from `echomark-runner describe-host` (`--host FILE`);
    /// `None`: not recorded.
    pub host: Option<Host>,
    /// One run per imported output file, in the order given.
    pub runs: Vec<ImportedRun>,
}

/// What wrote the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportInfo {
    pub format_version: u32,
    /// `echomark import` and its version.
    pub importer: String,
}

/// Whether the load waited for answers (closed loop) or was sent on a schedule (open loop).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Loop {
    Closed,
    Open,
}

/// How much of the latency distribution the tool kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LatencyFidelity {
    /// Every request's latency, in a histogram at the tool's resolution: any percentile can
    /// be read back from it.
    Lossless,
    /// Only the percentiles (and extremes) the tool chose to print.
    SummaryOnly,
}

/// The load one run offered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportedLoad {
    /// Connections (Locust: users, each with one connection).
    pub connections: u64,
    /// The tool's client threads or workers, where it has them.
    pub threads: Option<u64>,
    /// Requests in flight per connection (autocannon's pipelining; 1 for the others).
    pub pipelining: u64,
    /// The run's length as the tool measured it, seconds.
    pub duration_seconds: f64,
    /// The request body's length, where known.
    pub payload_bytes: Option<u64>,
    pub loop_kind: Loop,
    /// Open loop: requests per second the tool was asked to offer.
    pub rate: Option<f64>,
    /// Whether the tool corrected its latencies for coordinated omission (oha's
    /// `--latency-correction`, wrk2's default).
    pub latency_correction: bool,
}

/// One percentile of the latency distribution.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Percentile {
    /// The percentile, 0–100 (`99.9`).
    pub at: f64,
    pub us: f64,
}

/// One bucket of a tool's latency histogram: the requests at or below `upper_us` (and
/// above the previous bucket's bound).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bucket {
    pub upper_us: f64,
    pub count: u64,
}

/// The latency a run recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportedLatency {
    pub fidelity: LatencyFidelity,
    /// The unit the tool recorded in, microseconds (1,000 for autocannon and Locust, which
    /// keep whole milliseconds): a value `v` stands for somewhere in `[v, v + resolution)`.
    pub resolution_us: f64,
    /// What the tool counts as latency, in its own words.
    pub measures: String,
    pub min_us: Option<f64>,
    pub mean_us: Option<f64>,
    pub max_us: Option<f64>,
    pub stddev_us: Option<f64>,
    /// In increasing order of `at`.
    pub percentiles: Vec<Percentile>,
    /// The tool's histogram, whole, where it printed one (oha's coarse buckets, Locust's
    /// per-millisecond counts), in increasing order of `upper_us`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub histogram: Vec<Bucket>,
}

impl ImportedLatency {
    /// The value of percentile `at`, when the tool printed it.
    pub fn percentile(&self, at: f64) -> Option<f64> {
        self.percentiles
            .iter()
            .find(|p| (p.at - at).abs() < 1e-9)
            .map(|p| p.us)
    }
}

/// iperf3's stream figures: bulk transfer one way, not requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamFigures {
    /// Parallel streams (`-P`).
    pub streams: u64,
    /// Bits per second the sender sent and the receiver received.
    pub sent_bits_per_second: f64,
    pub received_bits_per_second: f64,
    pub sent_bytes: u64,
    pub received_bytes: u64,
    /// TCP: segments the sender retransmitted.
    pub retransmits: Option<u64>,
    /// UDP: datagrams sent, lost, and the loss in percent, as the receiver counted them.
    pub datagrams: Option<u64>,
    pub lost_datagrams: Option<u64>,
    pub lost_percent: Option<f64>,
    pub jitter_ms: Option<f64>,
    /// UDP: the datagram size (`-l`).
    pub datagram_bytes: Option<u64>,
    /// CPU use of the sending host, percent of one CPU times its CPUs (iperf3's
    /// `host_total`), and of the receiving side (`remote_total`).
    pub sender_cpu_percent: Option<f64>,
    pub receiver_cpu_percent: Option<f64>,
}

/// One imported output file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportedRun {
    /// The output file's name and the SHA-256 of its bytes, so a reader can check the
    /// import against the tool's own output.
    pub source_file: String,
    pub source_sha256: String,
    /// The command that produced the output, when the file or `--command` gave it.
    pub command: Option<String>,
    /// When the tool says the run started (UTC, RFC 3339), where it says.
    pub started_at_utc: Option<String>,
    /// `http` for the request tools, `tcp` or `udp` for iperf3.
    pub protocol: Protocol,
    /// The URL or address measured, where the output names it.
    pub target: Option<String>,
    pub load: ImportedLoad,
    /// Requests answered (any status); iperf3: none.
    pub responses: Option<u64>,
    /// `responses / duration_seconds`.
    pub responses_per_second: Option<f64>,
    /// The rate the tool printed, as it computed it (oha and wrk count requests that ended
    /// in an error too), kept to check the import against its output.
    pub reported_rate: Option<f64>,
    /// Bytes per second the tool reported reading, where it did.
    pub bytes_per_second: Option<f64>,
    pub latency: Option<ImportedLatency>,
    /// Requests still in flight when the run's time ended, which the tool cut off (oha's
    /// "aborted due to deadline"): not errors, as echomark's unfinished messages are not.
    pub unfinished: Option<u64>,
    /// Requests that ended in an error, by the tool's name for the error.
    pub errors: BTreeMap<String, u64>,
    /// Answers by HTTP status code.
    pub status_codes: BTreeMap<String, u64>,
    /// iperf3's transfer.
    pub stream: Option<StreamFigures>,
    /// Whether the tool's run failed: an error it reported, any request that ended in an
    /// error, or an answer outside 2xx. A failed run is kept, as echomark keeps its own.
    pub failed: bool,
    /// Why, in words; empty when it did not fail.
    pub failure: Vec<String>,
}

impl ImportedRun {
    /// Requests that ended in an error, over every kind.
    pub fn error_count(&self) -> u64 {
        crate::limits::saturating_sum(self.errors.values().copied())
    }

    /// Every measured figure of the run, by its JSON path in the run (`load.rate`,
    /// `latency.percentiles[2].us`): what must be finite and not negative, checked where an
    /// archive is written and where one is read.
    pub fn figures(&self) -> Vec<(String, f64)> {
        let mut figures = vec![
            (
                "load.duration_seconds".to_string(),
                Some(self.load.duration_seconds),
            ),
            ("load.rate".to_string(), self.load.rate),
            (
                "responses_per_second".to_string(),
                self.responses_per_second,
            ),
            ("reported_rate".to_string(), self.reported_rate),
            ("bytes_per_second".to_string(), self.bytes_per_second),
        ];
        if let Some(l) = &self.latency {
            figures.push(("latency.resolution_us".into(), Some(l.resolution_us)));
            figures.push(("latency.min_us".into(), l.min_us));
            figures.push(("latency.mean_us".into(), l.mean_us));
            figures.push(("latency.max_us".into(), l.max_us));
            figures.push(("latency.stddev_us".into(), l.stddev_us));
            for (i, p) in l.percentiles.iter().enumerate() {
                figures.push((format!("latency.percentiles[{i}].us"), Some(p.us)));
            }
        }
        if let Some(s) = &self.stream {
            figures.push((
                "stream.sent_bits_per_second".into(),
                Some(s.sent_bits_per_second),
            ));
            figures.push((
                "stream.received_bits_per_second".into(),
                Some(s.received_bits_per_second),
            ));
            figures.push(("stream.lost_percent".into(), s.lost_percent));
            figures.push(("stream.jitter_ms".into(), s.jitter_ms));
        }
        figures
            .into_iter()
            .filter_map(|(path, v)| Some((path, v?)))
            .collect()
    }

    /// Answers whose status is outside 2xx.
    pub fn non_2xx(&self) -> u64 {
        crate::limits::saturating_sum(
            self.status_codes
                .iter()
                .filter(|(code, _)| !code.starts_with('2'))
                .map(|(_, n)| *n),
        )
    }
}
