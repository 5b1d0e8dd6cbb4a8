//! Lenient serde shapes that cover echomark archives and arknet's schema 1 and 2 (both the
//! loopback and the coroutine program). Fields that a format may omit are optional; types
//! are strict where a wrong type must be an error (counters are non-negative integers, and
//! a present `null` counter is rejected). The file is parsed straight into these structs,
//! never into a `serde_json::Value` tree, and fields nobody reads (`rtt_histogram`, raw
//! stdout) are skipped by serde without being stored.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};

/// Deserializes a present field as a non-negative integer; `null` is an error, a missing
/// field is `None` (via `#[serde(default)]`).
fn present_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    u64::deserialize(d).map(Some)
}

/// Deserializes a present field as a finite number; `null` stays `None`.
fn number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Option::<f64>::deserialize(d)
}

/// Deserializes an array of strings into one space-separated string.
fn joined<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    struct Join;
    impl<'de> serde::de::Visitor<'de> for Join {
        type Value = String;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an array of strings")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<String, A::Error> {
            let mut out = String::new();
            while let Some(part) = seq.next_element::<std::borrow::Cow<'de, str>>()? {
                if !out.is_empty() {
                    out.push(' ');
                }
                out.push_str(&part);
            }
            Ok(out)
        }
    }
    d.deserialize_seq(Join)
}

/// One archive file, any format.
#[derive(Debug, Deserialize)]
pub struct RawArchive {
    pub schema_version: u32,
    #[serde(default)]
    pub echomark: Option<RawEchomark>,
    #[serde(default)]
    pub recorded_at_utc: Option<String>,
    #[serde(default)]
    pub backend: Option<String>,
    #[serde(default)]
    pub git_head: Option<String>,
    #[serde(default)]
    pub git_status: Option<String>,
    #[serde(default)]
    pub source_sha256: Option<String>,
    #[serde(default)]
    pub executable_sha256: Option<String>,
    #[serde(default)]
    pub runner_sha256: Option<String>,
    #[serde(default)]
    pub host: Option<BTreeMap<String, serde_json::Value>>,
    pub settings: RawSettings,
    pub results: Vec<RawEntry>,
    #[serde(default)]
    pub complete: Option<bool>,
    #[serde(default, deserialize_with = "present_u64")]
    pub failed_measurements: Option<u64>,
    /// echomark: sustained tests run with the matrix.
    #[serde(default)]
    pub soak: Vec<RawSoak>,
}

/// A sustained test recorded in an echomark archive.
#[derive(Debug, Deserialize)]
pub struct RawSoak {
    pub protocol: String,
    pub seconds: f64,
    pub passed: bool,
    #[serde(default)]
    pub report: Option<serde_json::Value>,
}

/// echomark's tool and format marker.
#[derive(Debug, Deserialize)]
pub struct RawEchomark {
    pub tool: String,
    pub tool_version: String,
    pub format_version: u32,
}

/// The requested matrix.
#[derive(Debug, Deserialize)]
pub struct RawSettings {
    pub seconds: f64,
    pub warmup: f64,
    pub repetitions: u64,
    #[serde(default)]
    pub payloads: Vec<u64>,
    #[serde(default)]
    pub udp_throughput_window: Option<u64>,
    #[serde(default)]
    pub protocols: Option<Vec<String>>,
    #[serde(default)]
    pub address_family: Option<String>,
    #[serde(default)]
    pub shuffle_seed: Option<u64>,
    #[serde(default)]
    pub preset: Option<String>,
    #[serde(default)]
    pub udp_timeout_ms: Option<u64>,
    #[serde(default)]
    pub keep_going: Option<bool>,
    #[serde(default)]
    pub soak_seconds: Option<f64>,
}

/// One `results[i]` entry.
#[derive(Debug, Deserialize)]
pub struct RawEntry {
    pub repetition: u64,
    pub protocol: String,
    pub payload_bytes: u64,
    pub clients: u64,
    pub window: u64,
    pub io_model: String,
    pub io_threads: u64,
    pub handler_work: u64,
    #[serde(default)]
    pub udp_server_recv_buffer: Option<u64>,
    #[serde(default)]
    pub backend: Option<String>,
    #[serde(default)]
    pub execution: Option<String>,
    #[serde(default)]
    pub address_family: Option<String>,
    /// The argv, joined with spaces (one allocation instead of one per argument).
    #[serde(default, deserialize_with = "joined")]
    pub command: String,
    #[serde(default)]
    pub returncode: Option<i64>,
    #[serde(default)]
    pub stderr: Option<String>,
    #[serde(default)]
    pub metrics: Option<RawMetrics>,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub started_at_utc: Option<String>,
}

/// The metrics of any program: every field optional, counters strictly typed.
#[derive(Debug, Default, Deserialize)]
pub struct RawMetrics {
    #[serde(default)]
    pub schema_version: Option<u64>,
    #[serde(default)]
    pub backend: Option<String>,
    #[serde(default)]
    pub implementation: Option<String>,
    #[serde(default)]
    pub execution: Option<String>,
    #[serde(default)]
    pub protocol: Option<String>,
    #[serde(default)]
    pub address_family: Option<String>,
    #[serde(default, deserialize_with = "present_u64")]
    pub payload_bytes: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub clients: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub window: Option<u64>,
    #[serde(default)]
    pub io_model: Option<String>,
    #[serde(default, deserialize_with = "present_u64")]
    pub handler_work: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub io_contexts: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub io_threads: Option<u64>,
    #[serde(default, deserialize_with = "number")]
    pub requested_seconds: Option<f64>,
    #[serde(default, deserialize_with = "number")]
    pub warmup_seconds: Option<f64>,
    #[serde(default, deserialize_with = "number")]
    pub elapsed_seconds: Option<f64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub messages_sent: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub messages: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub messages_received: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub drain_messages: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub payload_roundtrip_bytes: Option<u64>,
    #[serde(default, deserialize_with = "number")]
    pub roundtrips_per_second: Option<f64>,
    #[serde(default, deserialize_with = "number")]
    pub payload_mib_per_second: Option<f64>,
    #[serde(default)]
    pub latency_mode: Option<String>,
    #[serde(default, deserialize_with = "present_u64")]
    pub rtt_samples: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub rtt_observations: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub rtt_sample_limit: Option<u64>,
    #[serde(default, deserialize_with = "number")]
    pub rtt_p50_us: Option<f64>,
    #[serde(default, deserialize_with = "number")]
    pub rtt_p95_us: Option<f64>,
    #[serde(default, deserialize_with = "number")]
    pub rtt_p99_us: Option<f64>,
    #[serde(default, deserialize_with = "number")]
    pub rtt_p999_us: Option<f64>,
    #[serde(default, deserialize_with = "number")]
    pub rtt_max_us: Option<f64>,
    #[serde(default, deserialize_with = "number")]
    pub rtt_mean_us: Option<f64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub client_send_rejections: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub client_send_completion_errors: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub server_send_rejections: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub server_send_completion_errors: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub content_errors: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub content_or_io_errors: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub order_errors: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub unexpected_messages: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub disconnect_errors: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub udp_lost_messages: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub unfinished_messages: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub callback_exceptions: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub drain_timeouts: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub duplicate_completions: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub pending_completions: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub warmup_errors: Option<u64>,
    #[serde(default)]
    pub warmup_ok: Option<bool>,
    #[serde(default)]
    pub warmup_messages: Option<u64>,
    #[serde(default, deserialize_with = "number")]
    pub cpu_seconds: Option<f64>,
    #[serde(default, deserialize_with = "number")]
    pub total_cpu_seconds: Option<f64>,
    #[serde(default, deserialize_with = "number")]
    pub cpu_elapsed_seconds: Option<f64>,
    #[serde(default, deserialize_with = "number")]
    pub cpu_percent: Option<f64>,
    #[serde(default)]
    pub peak_rss_bytes: Option<u64>,
    #[serde(default)]
    pub ok: Option<bool>,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub udp_server_receive_buffer_bytes: Option<u64>,
    #[serde(default)]
    pub udp_server_receive_buffer_requested_bytes: Option<u64>,
    #[serde(default)]
    pub udp_send_buffer_requested_bytes: Option<u64>,
    #[serde(default)]
    pub kernel_udp_rcvbuf_errors_delta: Option<u64>,
    #[serde(default)]
    pub kernel_udp_in_errors_delta: Option<u64>,
    #[serde(default)]
    pub server_messages_received: Option<u64>,
}

impl RawMetrics {
    /// The 16 counters of arknet's dimensions rule (arknet-archives.md §10.4), in its order;
    /// `None` where the program did not write one.
    pub fn counters(&self) -> [(&'static str, Option<u64>); 16] {
        [
            ("client_send_rejections", self.client_send_rejections),
            (
                "client_send_completion_errors",
                self.client_send_completion_errors,
            ),
            ("server_send_rejections", self.server_send_rejections),
            (
                "server_send_completion_errors",
                self.server_send_completion_errors,
            ),
            ("content_errors", self.content_errors),
            ("content_or_io_errors", self.content_or_io_errors),
            ("order_errors", self.order_errors),
            ("unexpected_messages", self.unexpected_messages),
            ("disconnect_errors", self.disconnect_errors),
            ("udp_lost_messages", self.udp_lost_messages),
            ("unfinished_messages", self.unfinished_messages),
            ("callback_exceptions", self.callback_exceptions),
            ("drain_timeouts", self.drain_timeouts),
            ("duplicate_completions", self.duplicate_completions),
            ("pending_completions", self.pending_completions),
            ("warmup_errors", self.warmup_errors),
        ]
    }
}
