//! The metrics object that `echomark-runner once` prints: one measured configuration.
//!
//! Field names follow arknet's loopback metrics wherever the meaning is the same, in arknet's
//! order, so arknet-compatible readers work. Fields whose meaning differs are renamed or
//! added beside them (see the doc comment on each field). The two semantic differences that
//! matter when comparing with arknet:
//!
//! * `messages` counts verified round trips completed **inside** the measured interval
//!   `[start, deadline]` and `elapsed_seconds` is that interval, so `roundtrips_per_second`
//!   is not diluted by the drain (arknet-echo-core.md §15 item 3). Echoes of measured-phase
//!   messages that complete after the deadline are in `drain_messages`; all verified echoes
//!   are in `messages_received`, so `messages_sent − messages_received = udp_lost_messages +
//!   unfinished_messages`.
//! * latency comes from full HdrHistograms (every round trip recorded, nanosecond values,
//!   3 significant digits), not from an 8192-sample reservoir.

use serde::{Deserialize, Serialize};

use crate::echo::CaseParameters;
use crate::key::{AddressFamily, IoModel, Protocol};

/// One measurement, exactly as printed on stdout by `echomark-runner once`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metrics {
    /// Metrics layout version; 1 as in arknet (echomark's additions are new keys).
    pub schema_version: u32,
    /// The async runtime: `"tokio"` or `"monoio"` for echomark-runner.
    pub backend: crate::backend::Backend,
    pub protocol: Protocol,
    pub address_family: AddressFamily,
    pub payload_bytes: u64,
    pub clients: u64,
    pub window: u64,
    pub io_model: IoModel,
    pub handler_work: u64,
    /// Runtimes: 1 for `shared`, `io_threads` for `sharded`.
    pub io_contexts: u64,
    pub io_threads: u64,
    /// Independent serialised server tasks: one per TCP connection; for UDP one per server
    /// socket (one socket per runtime).
    pub server_io_lanes: u64,
    pub requested_seconds: f64,
    pub warmup_seconds: f64,
    /// The measured interval, from the start signal to the deadline (drain excluded).
    pub elapsed_seconds: f64,
    /// Messages sent by the clients in the measured phase.
    pub messages_sent: u64,
    /// Verified round trips completed inside the measured interval.
    pub messages: u64,
    /// `2 × payload_bytes × messages`: application payload both ways, framing excluded.
    pub payload_roundtrip_bytes: u64,
    /// `messages / elapsed_seconds`.
    pub roundtrips_per_second: f64,
    /// `payload_roundtrip_bytes / elapsed_seconds / 2^20`.
    pub payload_mib_per_second: f64,
    /// Round trips recorded in the latency histogram (0 with `--no-latency`).
    pub rtt_samples: u64,
    /// Verified round trips eligible for latency recording (= `messages_received`).
    pub rtt_observations: u64,
    pub rtt_p50_us: f64,
    pub rtt_p95_us: f64,
    pub rtt_p99_us: f64,
    pub client_send_rejections: u64,
    pub client_send_completion_errors: u64,
    /// Server-side counters: `null` when the server was not echomark's own (`once --target`),
    /// whose counters the client cannot see; never 0 for "unknown".
    pub server_send_rejections: Option<u64>,
    pub server_send_completion_errors: Option<u64>,
    pub content_errors: u64,
    pub order_errors: u64,
    pub unexpected_messages: u64,
    pub disconnect_errors: u64,
    pub udp_lost_messages: u64,
    pub unfinished_messages: u64,
    pub callback_exceptions: u64,
    pub drain_timeouts: u64,
    pub duplicate_completions: u64,
    pub pending_completions: u64,
    pub warmup_ok: bool,
    pub warmup_errors: u64,
    pub udp_send_buffer_requested_bytes: Option<u64>,
    pub udp_receive_buffer_requested_bytes: Option<u64>,
    pub udp_server_send_buffer_bytes: Option<u64>,
    pub udp_server_receive_buffer_bytes: Option<u64>,
    pub udp_client_send_buffer_min_bytes: Option<u64>,
    pub udp_client_send_buffer_max_bytes: Option<u64>,
    pub udp_client_receive_buffer_min_bytes: Option<u64>,
    pub udp_client_receive_buffer_max_bytes: Option<u64>,
    /// Process user + system CPU over exactly the measured interval (client and server).
    pub cpu_seconds: Option<f64>,
    pub cpu_elapsed_seconds: Option<f64>,
    /// `cpu_seconds / cpu_elapsed_seconds × 100`: 100 is one logical CPU fully busy.
    pub cpu_percent: Option<f64>,
    /// Whole-process lifetime peak RSS.
    pub peak_rss_bytes: Option<u64>,
    pub ok: bool,
    pub error: Option<String>,

    // ---- echomark additions -------------------------------------------------------------
    /// Verified echoes of measured-phase messages, inside the interval or during the drain.
    pub messages_received: u64,
    /// Verified echoes that completed after the deadline, during the drain.
    pub drain_messages: u64,
    /// Time from the deadline until every client had drained (or the drain limit hit).
    pub drain_seconds: f64,
    /// Verified round trips completed during warmup.
    pub warmup_messages: u64,
    /// Messages the server side received in the measured phase (all server tasks); `null`
    /// for an external server (`once --target`).
    pub server_messages_received: Option<u64>,
    /// How percentiles were computed.
    pub rtt_method: String,
    /// Whether round trips were recorded into the histogram (`--no-latency` turns it off).
    pub latency_recording: bool,
    pub rtt_min_us: f64,
    pub rtt_p90_us: f64,
    pub rtt_p999_us: f64,
    pub rtt_p9999_us: f64,
    pub rtt_max_us: f64,
    pub rtt_mean_us: f64,
    pub rtt_stddev_us: f64,
    /// The measured-phase histogram (nanoseconds), HdrHistogram V2 + DEFLATE, base64.
    pub rtt_histogram: Option<String>,
    /// Resident set size at the start and at the end of the measured phase.
    pub rss_start_bytes: Option<u64>,
    pub rss_end_bytes: Option<u64>,
    /// UDP: per-message timeout after which an unanswered datagram counts as lost.
    pub udp_timeout_ms: Option<u64>,
    /// UDP: the server socket's receive-buffer request (defaults to the client request).
    pub udp_server_receive_buffer_requested_bytes: Option<u64>,
    /// Linux sysctls that clamp socket buffer requests (`net.core.*`).
    pub net_core_rmem_max: Option<u64>,
    pub net_core_wmem_max: Option<u64>,
    pub net_core_rmem_default: Option<u64>,
    /// UDP: kernel counter deltas over the measured phase and drain; null when unreadable.
    pub kernel_udp_in_errors_delta: Option<u64>,
    pub kernel_udp_rcvbuf_errors_delta: Option<u64>,
    pub kernel_udp_sndbuf_errors_delta: Option<u64>,
    pub kernel_udp_mem_errors_delta: Option<u64>,
    pub kernel_udp_in_datagrams_delta: Option<u64>,
    /// UDP: the `RcvbufErrors` counter itself before and after (absent in older archives),
    /// so a reader can check the delta against the kernel's own numbers.
    #[serde(default)]
    pub kernel_udp_rcvbuf_errors_before: Option<u64>,
    #[serde(default)]
    pub kernel_udp_rcvbuf_errors_after: Option<u64>,
    /// UDP: IP fragmentation and reassembly deltas of the run's address family (absent in
    /// older archives): non-zero when datagrams exceeded the MTU.
    #[serde(default)]
    pub kernel_ip_frag_creates_delta: Option<u64>,
    #[serde(default)]
    pub kernel_ip_reasm_reqds_delta: Option<u64>,
    #[serde(default)]
    pub kernel_ip_reasm_oks_delta: Option<u64>,
    #[serde(default)]
    pub kernel_ip_reasm_fails_delta: Option<u64>,
    /// TLS protocols: the negotiated version and cipher suite (absent in older archives).
    #[serde(default)]
    pub tls_version: Option<String>,
    #[serde(default)]
    pub tls_cipher_suite: Option<String>,
    /// The IO driver the backend actually ran on: `"epoll"` (tokio) or `"io_uring"` (monoio,
    /// read inside its runtime; absent in older archives).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_driver: Option<String>,
    /// `--backend io-uring`: what the client's rings did over the whole run (setup and
    /// warmup included; in process, the rings the server shared). Absent for the other
    /// backends and in older archives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ring: Option<crate::target::RingCounters>,
    /// Linux `kernel.io_uring_disabled` (0 allowed, 1 privileged only, 2 off) when the run
    /// started; absent where unreadable and in older archives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_io_uring_disabled: Option<u64>,
    /// Open-loop runs (`--rate`): the schedule and its figures; absent for closed loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<crate::open_loop::OpenLoopMetrics>,
    /// `once --target`: the external server the client measured; absent when echomark's own
    /// server ran in the same process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<crate::target::TargetInfo>,
    /// Where the client's threads ran (absent in older archives).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    /// UDP, `--udp-batch`: the client's and the server's sockets moved up to this many
    /// datagrams per system call (`recvmmsg`/`sendmmsg`); absent for one per call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_batch: Option<u64>,
    /// UDP, `--udp-gso` (with `--udp-batch`): runs of one size to one peer left as one GSO
    /// send and the sockets received with GRO; every datagram was still checked alone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub udp_gso: bool,
    /// `--count-syscalls`: the system calls this process made over the measured interval
    /// (from the start signal to the deadline), counted by the kernel for every thread: the
    /// clients' and, in process, the server's. Absent when not asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscalls: Option<u64>,
    /// `quic`: what quinn counted on the clients' connections, from connect to the end of
    /// the measured phase, summed over clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic: Option<QuicCounters>,
    /// Datagram protocols: verified echoes that came back after `udp_timeout_ms` (within
    /// one more timeout), when their message had already been given up for lost. They are
    /// round trips like any other (in `messages_received`, their latency in the histogram),
    /// not losses: a busy machine delays echoes, the kernel's drop counters count losses.
    /// Absent in older archives, where such an echo counted as lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_late_messages: Option<u64>,
    /// A fleet run (`fleet coordinate`, `matrix --fleet-size`): how the generators were
    /// released and each one's own record; the figures above are their sums (histograms
    /// merged exactly). Absent for one client process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<Box<FleetRecord>>,
}

/// A fleet run's record, its generators' metrics included.
pub type FleetRecord = crate::fleet::Fleet<Metrics>;
/// One generator's record in a [`FleetRecord`].
pub type GeneratorRecord = crate::fleet::Generator<Metrics>;

/// The counters QUIC has and TCP hides, from quinn's connection statistics, summed over a
/// run's client connections (the handshake and the warmup included).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuicCounters {
    /// Client connections the figures are summed over.
    pub connections: u64,
    /// Packets the clients sent, and of them those declared lost (then retransmitted).
    pub sent_packets: u64,
    pub lost_packets: u64,
    pub lost_bytes: u64,
    /// Congestion events (a loss or ECN mark that shrank the window).
    pub congestion_events: u64,
    /// UDP datagrams the clients sent and the system calls that sent them: more datagrams
    /// than calls means segmentation offload (GSO) batched them.
    pub udp_tx_datagrams: u64,
    pub udp_tx_ios: u64,
    /// UDP datagrams the clients received.
    pub udp_rx_datagrams: u64,
    /// The smoothed round-trip time quinn estimated, averaged over connections, in µs.
    pub smoothed_rtt_us: f64,
    /// The congestion window at the end, averaged over connections, in bytes.
    pub cwnd_bytes: f64,
    /// The smallest path MTU the connections ended with, in bytes.
    pub current_mtu: u64,
    /// The largest datagram payload (RFC 9221) the connections would take at the end, the
    /// smallest over connections, in bytes (what bounds a `quic-datagram` message); absent
    /// where the peer accepts no datagrams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datagram_size_limit: Option<u64>,
    /// `quic-datagram`: the datagrams the clients handed to quinn (each a message, echoed or
    /// not), and the DATAGRAM frames quinn sent (RFC 9221 §4; never retransmitted). What was
    /// handed and never sent quinn dropped on the send side: queued behind congestion
    /// control until it made room for newer ones, or too large for a shrunken path MTU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datagrams_handed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datagram_frames_sent: Option<u64>,
    /// `quic-handshake`, `quic-0rtt`: connections the clients completed over the whole run
    /// (warmup, measured phase and drain), one per message; the figures above are then
    /// absent (0), since each connection's statistics go with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handshakes: Option<u64>,
    /// `quic-0rtt`: of those, the connections whose 0-RTT data the server accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zero_rtt_accepted: Option<u64>,
    /// In process: the connections echomark's server accepted over the run (to check
    /// against `handshakes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_connections: Option<u64>,
    /// The transport settings the client's and the server's endpoints ran with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<crate::quic::QuicTransport>,
}

/// Where one run's client threads ran, read back from the kernel at the end of the measured
/// phase, and whether the server shared them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Placement {
    /// The CPUs the client process's threads were allowed on (the union of every thread's
    /// `Cpus_allowed_list`), written as `taskset -c` writes a list: `0`, `0-1`, `0,2-3`.
    pub client_cpus: String,
    /// Whether `--client-cpus` pinned them (each runtime thread to one CPU of the list);
    /// false when the scheduler placed them.
    pub client_pinned: bool,
    /// In-process runs: echomark's own server ran in the client's process. Without
    /// [`Self::server_cpus`] every runtime thread ran clients and the server side of their
    /// connections, on the same threads and CPUs. False against a server in another process
    /// (`once --target`), whose placement its [`crate::target::ServerProcess`] records when the
    /// matrix started it.
    pub server_in_process: bool,
    /// In-process runs placed apart (`--server-cpus`): the server side of every connection
    /// ran on runtimes of its own, pinned to these CPUs (the union of their threads'
    /// `Cpus_allowed_list`), and [`Self::client_cpus`] covers the process's other threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpus: Option<String>,
}

impl Metrics {
    /// arknet's `ok` rule, applied to the values in this object.
    pub fn ok_rule_holds(&self) -> bool {
        self.error.is_none()
            && self.warmup_errors == 0
            && self.error_counters().total() == 0
            && self.messages > 0
            && self.pending_completions == 0
    }

    /// The case parameters this measurement reports, for [`crate::echo::check_echo`].
    pub fn parameters(&self) -> CaseParameters {
        CaseParameters {
            protocol: Some(self.protocol),
            payload_bytes: Some(self.payload_bytes),
            clients: Some(self.clients),
            window: Some(self.window),
            io_model: Some(self.io_model),
            io_threads: Some(self.io_threads),
            handler_work: Some(self.handler_work),
            backend: Some(self.backend.clone()),
            address_family: Some(self.address_family),
            requested_seconds: Some(self.requested_seconds),
            warmup_seconds: Some(self.warmup_seconds),
            quic_transport: self.quic.as_ref().and_then(|q| q.transport),
        }
    }
}

/// Defines the error counters once: their names in output order, [`ErrorCounters`], its
/// arithmetic, and how [`Metrics`] reads and writes them (the metrics object keeps the same
/// names as fields of its own, in the same order).
macro_rules! error_counters {
    ($($(#[$doc:meta])* $name:ident),+ $(,)?) => {
        /// Names of the error counters that must all be zero for a run to be ok, in output
        /// order: arknet's 13 measured-phase counters (arknet-archives.md §7).
        pub const ERROR_COUNTER_NAMES: [&str; 13] = [$(stringify!($name)),+];

        /// The 13 error counters of one phase, with arknet's names and meanings: all must
        /// be zero for a run to be ok. The runner's tasks each own one and merge them at
        /// the end.
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct ErrorCounters {
            $($(#[$doc])* pub $name: u64),+
        }

        impl ErrorCounters {
            /// The values in [`ERROR_COUNTER_NAMES`] order.
            pub fn values(&self) -> [u64; 13] {
                [$(self.$name),+]
            }
        }

        impl std::ops::AddAssign for ErrorCounters {
            fn add_assign(&mut self, o: Self) {
                $(self.$name += o.$name;)+
            }
        }

        impl Metrics {
            /// The 13 error counters; a server counter that is absent (an external server)
            /// counts as 0 here, since nothing was seen to go wrong.
            pub fn error_counters(&self) -> ErrorCounters {
                ErrorCounters { $($name: CounterField::read(&self.$name)),+ }
            }

            /// Writes the 13 error counters.
            pub fn set_error_counters(&mut self, c: &ErrorCounters) {
                $(CounterField::write(&mut self.$name, c.$name);)+
            }
        }
    };
}

/// A counter field of [`Metrics`]: a number, or a server-side number that may be unknown.
trait CounterField {
    fn read(&self) -> u64;
    fn write(&mut self, value: u64);
}

impl CounterField for u64 {
    fn read(&self) -> u64 {
        *self
    }
    fn write(&mut self, value: u64) {
        *self = value;
    }
}

impl CounterField for Option<u64> {
    fn read(&self) -> u64 {
        self.unwrap_or(0)
    }
    fn write(&mut self, value: u64) {
        *self = Some(value);
    }
}

impl Metrics {
    /// Marks the server-side counters unknown: the server is not echomark's own.
    pub fn clear_server_counters(&mut self) {
        self.server_send_rejections = None;
        self.server_send_completion_errors = None;
        self.server_messages_received = None;
    }
}

error_counters!(
    /// The OS refused a client send outright (an error other than "would block").
    client_send_rejections,
    /// A client datagram went out short.
    client_send_completion_errors,
    /// The OS refused a server echo.
    server_send_rejections,
    /// A server echo datagram went out short.
    server_send_completion_errors,
    content_errors,
    order_errors,
    unexpected_messages,
    disconnect_errors,
    udp_lost_messages,
    unfinished_messages,
    /// A client or server task panicked.
    callback_exceptions,
    drain_timeouts,
    /// Cannot happen in echomark's design (no completion callbacks); kept for arknet parity.
    duplicate_completions,
);

impl ErrorCounters {
    /// Each counter with its name, in output order.
    pub fn named(&self) -> impl Iterator<Item = (&'static str, u64)> {
        ERROR_COUNTER_NAMES.into_iter().zip(self.values())
    }

    /// Sum of all counters.
    pub fn total(&self) -> u64 {
        self.values().iter().sum()
    }
}

/// The per-run metrics a summary aggregates (median, min and max per configuration), in
/// output order. `cpu_percent` is derived by the reader where a format lacks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    RoundtripsPerSecond,
    PayloadMibPerSecond,
    RttP50Us,
    RttP95Us,
    RttP99Us,
    RttP999Us,
    PeakRssBytes,
    CpuPercent,
}

impl Metric {
    /// Every metric, in output order.
    pub const ALL: [Metric; 8] = [
        Metric::RoundtripsPerSecond,
        Metric::PayloadMibPerSecond,
        Metric::RttP50Us,
        Metric::RttP95Us,
        Metric::RttP99Us,
        Metric::RttP999Us,
        Metric::PeakRssBytes,
        Metric::CpuPercent,
    ];

    /// The field name in archives and summaries.
    pub fn name(self) -> &'static str {
        match self {
            Metric::RoundtripsPerSecond => "roundtrips_per_second",
            Metric::PayloadMibPerSecond => "payload_mib_per_second",
            Metric::RttP50Us => "rtt_p50_us",
            Metric::RttP95Us => "rtt_p95_us",
            Metric::RttP99Us => "rtt_p99_us",
            Metric::RttP999Us => "rtt_p999_us",
            Metric::PeakRssBytes => "peak_rss_bytes",
            Metric::CpuPercent => "cpu_percent",
        }
    }
}

/// Little's law on one open-loop run: the mean number in the system against the completion
/// rate × the mean corrected latency. `None` for closed-loop runs, runs without latency,
/// saturated runs and runs that lost messages (a lost message is in the system for a while
/// but has no latency) or had late echoes (a message given up for lost leaves the in-flight
/// count at its timeout, yet its latency runs to its late echo).
pub fn little_law(m: &Metrics) -> Option<crate::open_loop::LittleCheck> {
    let open = m.open_loop.as_ref()?;
    if !m.latency_recording {
        return None;
    }
    let lost = m.udp_lost_messages + m.unfinished_messages + m.udp_late_messages.unwrap_or(0);
    crate::open_loop::little_check(open, m.messages_received, m.rtt_mean_us, lost)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_round_trip_through_metrics_in_name_order() {
        let mut m = Metrics::default();
        let c = ErrorCounters {
            order_errors: 2,
            duplicate_completions: 1,
            ..ErrorCounters::default()
        };
        m.set_error_counters(&c);
        assert_eq!(m.order_errors, 2);
        assert_eq!(m.error_counters(), c);
        let named: Vec<_> = c.named().filter(|(_, v)| *v > 0).collect();
        assert_eq!(named, [("order_errors", 2), ("duplicate_completions", 1)]);
        let mut sum = c;
        sum += c;
        assert_eq!(sum.total(), 6);
    }
}
