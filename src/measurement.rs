//! The normalised metrics of one run, whatever program wrote them: the shape the validator
//! and the run table read. arknet's lenient metrics deserialize into it; echomark's typed
//! metrics (from `echomark-archive`) convert into it, field by field, in one place.

use echomark_archive::{AddressFamily, CaseParameters, IoModel, Metrics, Protocol};
use serde::{Deserialize, Deserializer};

/// Deserializes a present field as a non-negative integer; `null` is an error, a missing
/// field is `None` (via `#[serde(default)]`).
pub(crate) fn present_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    u64::deserialize(d).map(Some)
}

/// Deserializes a present field as a finite number; `null` stays `None`.
fn number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Option::<f64>::deserialize(d)
}

/// One run's metrics, whatever program wrote them: every field optional (a format may not
/// record it), counters strictly typed. arknet's metrics deserialize into this shape
/// directly; echomark's typed [`Metrics`] convert into it.
#[derive(Debug, Default, Deserialize)]
pub struct Measurement {
    #[serde(default)]
    pub schema_version: Option<u64>,
    #[serde(default)]
    pub backend: Option<String>,
    #[serde(default)]
    pub implementation: Option<String>,
    #[serde(default)]
    pub execution: Option<String>,
    #[serde(default)]
    pub protocol: Option<Protocol>,
    #[serde(default)]
    pub address_family: Option<AddressFamily>,
    #[serde(default, deserialize_with = "present_u64")]
    pub payload_bytes: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub clients: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub window: Option<u64>,
    #[serde(default)]
    pub io_model: Option<IoModel>,
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
    /// echomark's QUIC runs: the transport settings they ran with (arknet has no QUIC).
    #[serde(skip)]
    pub quic_transport: Option<echomark_archive::QuicTransport>,
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
    pub kernel_udp_rcvbuf_errors_before: Option<u64>,
    #[serde(default)]
    pub kernel_udp_rcvbuf_errors_after: Option<u64>,
    #[serde(default)]
    pub kernel_ip_frag_creates_delta: Option<u64>,
    #[serde(default)]
    pub kernel_ip_reasm_reqds_delta: Option<u64>,
    #[serde(default)]
    pub kernel_ip_reasm_oks_delta: Option<u64>,
    #[serde(default)]
    pub kernel_ip_reasm_fails_delta: Option<u64>,
    #[serde(default)]
    pub kernel_udp_in_errors_delta: Option<u64>,
    #[serde(default)]
    pub server_messages_received: Option<u64>,
    /// echomark's datagram runs: echoes that came back after their timeout (received, not
    /// lost); absent in older archives.
    #[serde(default)]
    pub udp_late_messages: Option<u64>,
    /// echomark's open-loop runs: the schedule's figures (the contract's own type).
    #[serde(default)]
    pub open_loop: Option<echomark_archive::OpenLoopMetrics>,
}

impl Measurement {
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

    /// The case parameters the metrics report, for [`echomark_archive::check_echo`].
    pub fn parameters(&self) -> CaseParameters {
        CaseParameters {
            protocol: self.protocol,
            payload_bytes: self.payload_bytes,
            clients: self.clients,
            window: self.window,
            io_model: self.io_model,
            io_threads: self.io_threads,
            handler_work: self.handler_work,
            backend: self
                .backend
                .as_deref()
                .map(echomark_archive::Backend::named),
            address_family: self.address_family,
            requested_seconds: self.requested_seconds,
            warmup_seconds: self.warmup_seconds,
            quic_transport: self.quic_transport,
        }
    }
}

impl From<&Metrics> for Measurement {
    fn from(m: &Metrics) -> Self {
        let c = m.error_counters();
        Self {
            schema_version: Some(u64::from(m.schema_version)),
            backend: Some(m.backend.to_string()),
            implementation: None,
            execution: None,
            protocol: Some(m.protocol),
            address_family: Some(m.address_family),
            payload_bytes: Some(m.payload_bytes),
            clients: Some(m.clients),
            window: Some(m.window),
            io_model: Some(m.io_model),
            handler_work: Some(m.handler_work),
            io_contexts: Some(m.io_contexts),
            io_threads: Some(m.io_threads),
            requested_seconds: Some(m.requested_seconds),
            warmup_seconds: Some(m.warmup_seconds),
            quic_transport: m.quic.as_ref().and_then(|q| q.transport),
            elapsed_seconds: Some(m.elapsed_seconds),
            messages_sent: Some(m.messages_sent),
            messages: Some(m.messages),
            messages_received: Some(m.messages_received),
            drain_messages: Some(m.drain_messages),
            payload_roundtrip_bytes: Some(m.payload_roundtrip_bytes),
            roundtrips_per_second: Some(m.roundtrips_per_second),
            payload_mib_per_second: Some(m.payload_mib_per_second),
            latency_mode: None,
            rtt_samples: Some(m.rtt_samples),
            rtt_observations: Some(m.rtt_observations),
            rtt_sample_limit: None,
            rtt_p50_us: Some(m.rtt_p50_us),
            rtt_p95_us: Some(m.rtt_p95_us),
            rtt_p99_us: Some(m.rtt_p99_us),
            rtt_p999_us: Some(m.rtt_p999_us),
            rtt_max_us: Some(m.rtt_max_us),
            rtt_mean_us: Some(m.rtt_mean_us),
            client_send_rejections: Some(c.client_send_rejections),
            client_send_completion_errors: Some(c.client_send_completion_errors),
            server_send_rejections: m.server_send_rejections,
            server_send_completion_errors: m.server_send_completion_errors,
            content_errors: Some(c.content_errors),
            content_or_io_errors: None,
            order_errors: Some(c.order_errors),
            unexpected_messages: Some(c.unexpected_messages),
            disconnect_errors: Some(c.disconnect_errors),
            udp_lost_messages: Some(c.udp_lost_messages),
            unfinished_messages: Some(c.unfinished_messages),
            callback_exceptions: Some(c.callback_exceptions),
            drain_timeouts: Some(c.drain_timeouts),
            duplicate_completions: Some(c.duplicate_completions),
            pending_completions: Some(m.pending_completions),
            warmup_errors: Some(m.warmup_errors),
            warmup_ok: Some(m.warmup_ok),
            warmup_messages: Some(m.warmup_messages),
            cpu_seconds: m.cpu_seconds,
            total_cpu_seconds: None,
            cpu_elapsed_seconds: m.cpu_elapsed_seconds,
            cpu_percent: m.cpu_percent,
            peak_rss_bytes: m.peak_rss_bytes,
            ok: Some(m.ok),
            error: m.error.clone(),
            udp_server_receive_buffer_bytes: m.udp_server_receive_buffer_bytes,
            udp_server_receive_buffer_requested_bytes: m.udp_server_receive_buffer_requested_bytes,
            udp_send_buffer_requested_bytes: m.udp_send_buffer_requested_bytes,
            kernel_udp_rcvbuf_errors_delta: m.kernel_udp_rcvbuf_errors_delta,
            kernel_udp_rcvbuf_errors_before: m.kernel_udp_rcvbuf_errors_before,
            kernel_udp_rcvbuf_errors_after: m.kernel_udp_rcvbuf_errors_after,
            kernel_ip_frag_creates_delta: m.kernel_ip_frag_creates_delta,
            kernel_ip_reasm_reqds_delta: m.kernel_ip_reasm_reqds_delta,
            kernel_ip_reasm_oks_delta: m.kernel_ip_reasm_oks_delta,
            kernel_ip_reasm_fails_delta: m.kernel_ip_reasm_fails_delta,
            kernel_udp_in_errors_delta: m.kernel_udp_in_errors_delta,
            server_messages_received: m.server_messages_received,
            udp_late_messages: m.udp_late_messages,
            open_loop: m.open_loop.clone(),
        }
    }
}
