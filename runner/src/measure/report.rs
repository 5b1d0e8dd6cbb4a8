//! The metrics object of one measurement: what it starts as, how the phase totals and
//! readings fill it, and the final verdict.

use std::time::{Duration, Instant};

use echomark_archive::{ErrorCounters, Metrics, OpenLoopMetrics, Protocol};
use hdrhistogram::Histogram;

use crate::case::Case;
use crate::instruments::resources::{self, UdpCounters};
use crate::instruments::{latency, timer};
use crate::traffic::phase::OpenReport;

/// Layout version of the metrics object (arknet's; echomark's additions are new keys).
const METRICS_SCHEMA_VERSION: u32 = 1;

/// Everything the metrics need from one phase, summed over the clients.
#[derive(Default)]
pub struct PhaseTotals {
    pub counters: ErrorCounters,
    /// `unexpected_messages` whose tag named the other phase (a late warmup echo).
    pub other_phase_unexpected: u64,
    pub sent: u64,
    pub received: u64,
    pub in_interval: u64,
    /// Echoes (among `received`) of messages already given up for lost.
    pub late: u64,
    pub last_finish: Option<Instant>,
    pub histogram: Option<Histogram<u64>>,
    /// Open loop: the clients' schedule figures, summed (histograms merged, the last echo
    /// the latest).
    pub open: Option<OpenReport>,
}

/// Timing and resource readings of the measured phase.
pub struct Timing {
    /// The measured phase's start signal.
    pub start: Instant,
    pub interval: Duration,
    pub cpu: Option<f64>,
    pub cpu_elapsed: Duration,
    pub drain: Duration,
    pub rss: (Option<u64>, Option<u64>),
    /// The kernel counters before and after the measured phase and drain.
    pub kernel: Option<(UdpCounters, UdpCounters)>,
}

/// UDP buffer sizes as the kernel read them back: the server socket, and the smallest and
/// largest over the client sockets.
#[derive(Debug, Clone, Copy)]
pub struct UdpBuffers {
    pub server_send: u64,
    pub server_recv: u64,
    pub client_send: (u64, u64),
    pub client_recv: (u64, u64),
}

impl Default for UdpBuffers {
    fn default() -> Self {
        Self {
            server_send: 0,
            server_recv: 0,
            client_send: (u64::MAX, 0),
            client_recv: (u64::MAX, 0),
        }
    }
}

impl UdpBuffers {
    /// Takes one client socket's sizes into the ranges.
    pub fn add_client(&mut self, send: u64, recv: u64) {
        self.client_send = (self.client_send.0.min(send), self.client_send.1.max(send));
        self.client_recv = (self.client_recv.0.min(recv), self.client_recv.1.max(recv));
    }
}

/// A metrics object for `case` with no traffic yet.
pub fn empty(case: &Case) -> Metrics {
    // A QUIC connection is a UDP socket: its buffer requests are recorded as for `udp`; the
    // per-message timeout only where messages are datagrams.
    let on_udp = |v: u64| case.protocol.rides_udp().then_some(v);
    let datagram_only = |v: u64| case.protocol.is_datagram().then_some(v);
    Metrics {
        schema_version: METRICS_SCHEMA_VERSION,
        backend: case.backend.clone(),
        kernel_io_uring_disabled: super::runtimes::io_uring_disabled_sysctl(),
        udp_batch: case.udp_batch.map(|n| n as u64),
        udp_gso: case.udp_gso,
        protocol: case.protocol,
        address_family: case.address_family,
        payload_bytes: case.payload as u64,
        clients: case.clients as u64,
        window: case.window as u64,
        io_model: case.io_model,
        handler_work: case.work,
        io_contexts: case.io_contexts() as u64,
        io_threads: case.io_threads as u64,
        // Independent serialised server tasks: one per connection, or one UDP socket per runtime.
        server_io_lanes: if case.protocol == Protocol::Udp {
            case.io_contexts() as u64
        } else {
            case.clients as u64
        },
        requested_seconds: case.seconds,
        warmup_seconds: case.warmup,
        warmup_ok: true,
        udp_send_buffer_requested_bytes: on_udp(case.udp_send_buffer),
        udp_receive_buffer_requested_bytes: on_udp(case.udp_recv_buffer),
        rtt_method: latency::METHOD.to_string(),
        latency_recording: case.record_latency,
        udp_timeout_ms: datagram_only(case.udp_timeout.as_millis() as u64),
        udp_server_receive_buffer_requested_bytes: on_udp(case.server_recv_buffer()),
        net_core_rmem_max: resources::sysctl_u64("net/core/rmem_max"),
        net_core_wmem_max: resources::sysctl_u64("net/core/wmem_max"),
        net_core_rmem_default: resources::sysctl_u64("net/core/rmem_default"),
        ..Metrics::default()
    }
}

/// Writes the read-back UDP buffer sizes.
pub fn udp_buffers(m: &mut Metrics, b: &UdpBuffers) {
    m.udp_server_send_buffer_bytes = Some(b.server_send);
    m.udp_server_receive_buffer_bytes = Some(b.server_recv);
    m.udp_client_send_buffer_min_bytes = Some(b.client_send.0);
    m.udp_client_send_buffer_max_bytes = Some(b.client_send.1);
    m.udp_client_receive_buffer_min_bytes = Some(b.client_recv.0);
    m.udp_client_receive_buffer_max_bytes = Some(b.client_recv.1);
}

/// Writes the phase totals and readings into `m`. `server` holds the server's counters per
/// phase (warmup, measured).
pub fn fill(
    m: &mut Metrics,
    case: &Case,
    warm: &PhaseTotals,
    measured: &PhaseTotals,
    timing: &Timing,
    server: &[ErrorCounters; 2],
    server_received: u64,
) {
    let mut c = measured.counters;
    c += server[1];
    // A stale warmup echo in the measured phase counts as unexpected, as in arknet.
    c.unexpected_messages += warm.other_phase_unexpected;
    m.set_error_counters(&c);

    // ... and spoils the warmup.
    let mut w = warm.counters;
    w += server[0];
    m.warmup_errors = w.total() + measured.other_phase_unexpected;
    m.warmup_ok = m.warmup_errors == 0;
    m.warmup_messages = warm.received;

    let seconds = timing.interval.as_secs_f64();
    m.elapsed_seconds = seconds;
    m.messages_sent = measured.sent;
    m.messages = measured.in_interval;
    m.messages_received = measured.received;
    m.drain_messages = measured.received - measured.in_interval;
    m.udp_late_messages = case.protocol.is_datagram().then_some(measured.late);
    m.drain_seconds = timing.drain.as_secs_f64();
    m.server_messages_received = Some(server_received);
    m.payload_roundtrip_bytes = 2 * case.payload as u64 * m.messages;
    if seconds > 0.0 {
        m.roundtrips_per_second = m.messages as f64 / seconds;
        m.payload_mib_per_second = m.payload_roundtrip_bytes as f64 / seconds / 1_048_576.0;
    }

    m.rtt_observations = measured.received;
    if let Some(h) = &measured.histogram {
        set_latency(m, h);
    }

    if let (Some(open), Some(totals)) = (&case.open_loop, &measured.open) {
        let timer = match case.backend {
            crate::case::Backend::IoUring => crate::iouring::client::TIMER,
            _ => crate::traffic::pacing::TIMER,
        };
        m.open_loop = Some(open_loop_metrics(
            (open, case.spin, timer),
            measured,
            totals,
            timing,
        ));
    }

    m.cpu_seconds = timing.cpu;
    let cpu_elapsed = timing.cpu_elapsed.as_secs_f64();
    m.cpu_elapsed_seconds = Some(cpu_elapsed);
    m.cpu_percent = timing
        .cpu
        .filter(|_| cpu_elapsed > 0.0)
        .map(|c| c / cpu_elapsed * 100.0);
    (m.rss_start_bytes, m.rss_end_bytes) = timing.rss;

    if let Some((before, after)) = timing.kernel.filter(|_| case.protocol.rides_udp()) {
        let k = UdpCounters::delta(before, after);
        m.kernel_udp_rcvbuf_errors_before = Some(before.rcvbuf_errors);
        m.kernel_udp_rcvbuf_errors_after = Some(after.rcvbuf_errors);
        m.kernel_ip_frag_creates_delta = Some(k.frag_creates);
        m.kernel_ip_reasm_reqds_delta = Some(k.reasm_reqds);
        m.kernel_ip_reasm_oks_delta = Some(k.reasm_oks);
        m.kernel_ip_reasm_fails_delta = Some(k.reasm_fails);
        m.kernel_udp_in_errors_delta = Some(k.in_errors);
        m.kernel_udp_rcvbuf_errors_delta = Some(k.rcvbuf_errors);
        m.kernel_udp_sndbuf_errors_delta = Some(k.sndbuf_errors);
        m.kernel_udp_mem_errors_delta = Some(k.mem_errors);
        m.kernel_udp_in_datagrams_delta = Some(k.in_datagrams);
    }
}

/// The latency figures of `m`, all read from `h`, and `h` itself.
pub fn set_latency(m: &mut Metrics, h: &Histogram<u64>) {
    let s = latency::summarize(h);
    m.rtt_samples = s.samples;
    m.rtt_min_us = s.min_us;
    m.rtt_p50_us = s.p50_us;
    m.rtt_p90_us = s.p90_us;
    m.rtt_p95_us = s.p95_us;
    m.rtt_p99_us = s.p99_us;
    m.rtt_p999_us = s.p999_us;
    m.rtt_p9999_us = s.p9999_us;
    m.rtt_max_us = s.max_us;
    m.rtt_mean_us = s.mean_us;
    m.rtt_stddev_us = s.stddev_us;
    m.rtt_histogram = latency::encode(h);
}

/// The open-loop figures of the measured phase.
fn open_loop_metrics(
    (open, spin, timer): (&crate::case::OpenLoop, Duration, &str),
    measured: &PhaseTotals,
    totals: &OpenReport,
    timing: &Timing,
) -> OpenLoopMetrics {
    let seconds = timing.interval.as_secs_f64();
    let scheduled = measured.sent + totals.unsent;
    let lag = totals
        .lag
        .as_ref()
        .map(latency::summarize)
        .unwrap_or_default();
    let service = totals
        .service
        .as_ref()
        .map(latency::summarize)
        .unwrap_or_default();
    let window = totals
        .last_echo
        .map(|t| t.saturating_duration_since(timing.start).as_secs_f64())
        .unwrap_or(0.0);
    let in_system_ns = totals.in_flight_area_ns + totals.lag_sum_ns;
    OpenLoopMetrics {
        offered_rate: open.rate,
        arrival: open.arrival,
        seed: open.seed,
        scheduled_messages: scheduled,
        achieved_rate: if seconds > 0.0 {
            measured.sent as f64 / seconds
        } else {
            0.0
        },
        saturated: OpenLoopMetrics::is_saturated(measured.sent, scheduled),
        late_sends: totals.late_sends,
        unsent_messages: totals.unsent,
        schedule_lag_p50_us: lag.p50_us,
        schedule_lag_p99_us: lag.p99_us,
        schedule_lag_p999_us: lag.p999_us,
        schedule_lag_max_us: lag.max_us,
        schedule_lag_histogram: totals.lag.as_ref().and_then(latency::encode),
        service_p50_us: service.p50_us,
        service_p99_us: service.p99_us,
        service_p999_us: service.p999_us,
        service_max_us: service.max_us,
        service_mean_us: service.mean_us,
        service_histogram: totals.service.as_ref().and_then(latency::encode),
        mean_in_system: if window > 0.0 {
            in_system_ns / (window * 1e9)
        } else {
            0.0
        },
        little_window_seconds: window,
        clock: timer::CLOCK.to_string(),
        timer: timer.to_string(),
        spin_us: spin.as_micros() as u64,
    }
}

/// An external server: what the client cannot see of it is absent, never 0, and the target
/// is named. `server_io_lanes` is 0: echomark ran no server task.
pub fn external_server(m: &mut Metrics, case: &Case, target: &crate::case::Target) {
    m.clear_server_counters();
    m.server_io_lanes = 0;
    m.udp_server_send_buffer_bytes = None;
    m.udp_server_receive_buffer_bytes = None;
    m.udp_server_receive_buffer_requested_bytes = None;
    let mut info = target.info(case);
    info.path = crate::instruments::path::describe(target.addr);
    m.target = Some(info);
    if let Some(name) = &target.server_name {
        m.backend = echomark_archive::Backend::named(name);
    }
}

/// Sets `ok` and, when it is false, an `error` text that names what failed.
pub fn finish_verdict(m: &mut Metrics) {
    m.ok = m.ok_rule_holds();
    if m.ok || m.error.is_some() {
        return;
    }
    let mut reasons: Vec<String> = m
        .error_counters()
        .named()
        .filter(|(_, v)| *v > 0)
        .map(|(name, v)| format!("{name} {v}"))
        .collect();
    if m.warmup_errors > 0 {
        reasons.push(format!("warmup_errors {}", m.warmup_errors));
    }
    if m.messages == 0 {
        reasons.push("no completed round trips".to_string());
    }
    m.error = Some(format!(
        "benchmark validation failed: {}",
        reasons.join(", ")
    ));
}
