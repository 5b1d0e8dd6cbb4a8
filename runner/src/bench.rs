//! The orchestrator of one measurement: sockets, tasks, phases, and the metrics object.
//!
//! Timeline: set up every socket (untimed) → warmup phase → measured phase → stop. Each
//! phase opens with the start signal, runs until its deadline, then drains for at most
//! [`DRAIN_LIMIT`]; every client reports, and the next phase starts only when all have.
//! The CPU and kernel-counter samples are taken on this thread at the start signal and at
//! the deadline, so they cover exactly the measured interval.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use echomark_archive::Metrics;
use hdrhistogram::Histogram;
use tokio::sync::watch;

use crate::alarm::Alarm;
use crate::case::{Case, Protocol};
use crate::connect;
use crate::counters::{Counters, ServerStats};
use crate::latency;
use crate::phase::{self, ClientReport, Command, PhasePlan};
use crate::resources::{self, UdpCounters};
use crate::sockets;
use crate::tcp::{self, TcpClient};
use crate::topology::Topology;
use crate::udp::{self, UdpClient};
use crate::wire::{PHASE_MEASURED, PHASE_WARMUP};

/// How long after a deadline in-flight messages are waited for.
pub const DRAIN_LIMIT: Duration = Duration::from_secs(2);
/// How long past the drain limit a client may take to report before the run fails.
const BARRIER_LIMIT: Duration = Duration::from_secs(5);

/// Everything the metrics need from one phase.
#[derive(Default)]
struct PhaseTotals {
    counters: Counters,
    other_phase_unexpected: u64,
    sent: u64,
    received: u64,
    in_interval: u64,
    last_finish: Option<Instant>,
    histogram: Option<Histogram<u64>>,
}

impl PhaseTotals {
    fn add(&mut self, r: ClientReport) {
        self.counters += r.counters;
        self.other_phase_unexpected += r.other_phase_unexpected;
        self.sent += r.sent;
        self.received += r.received;
        self.in_interval += r.in_interval;
        self.last_finish = self.last_finish.max(Some(r.finished_at));
        if let Some(h) = r.histogram {
            match self.histogram.as_mut() {
                Some(total) => total.add(&h).expect("same bounds"),
                None => self.histogram = Some(h),
            }
        }
    }
}

/// UDP buffer sizes: requested and read back.
#[derive(Default)]
struct UdpBuffers {
    server_send: u64,
    server_recv: u64,
    client_send: (u64, u64),
    client_recv: (u64, u64),
}

/// The running measurement: runtimes, channels and server bookkeeping.
struct Rig {
    topology: Topology,
    commands: watch::Sender<Command>,
    reports: mpsc::Receiver<ClientReport>,
    server_stats: Vec<Arc<ServerStats>>,
    server_tasks: Vec<tokio::task::JoinHandle<()>>,
    client_tasks: Vec<tokio::task::JoinHandle<()>>,
    closing: Arc<AtomicBool>,
    /// Panics of server tasks (client panics arrive as reports).
    panics: Arc<AtomicU64>,
    /// One per client, rung every `tick` while a phase runs.
    alarms: Vec<Arc<Alarm>>,
    tick: Duration,
    /// TLS: the negotiated version and cipher suite.
    tls: Option<(String, String)>,
    udp: Option<UdpBuffers>,
}

/// Measures `case` and returns its metrics. Never panics on I/O trouble: setup failures
/// become `ok: false` with the reason in `error`.
pub fn measure(case: &Case) -> Metrics {
    let mut metrics = empty_metrics(case);
    match Rig::start(case) {
        Ok(rig) => rig.run(case, &mut metrics),
        Err(e) => metrics.error = Some(format!("setup failed: {e}")),
    }
    metrics.peak_rss_bytes = resources::peak_rss_bytes();
    finish_verdict(&mut metrics);
    metrics
}

impl Rig {
    fn start(case: &Case) -> std::io::Result<Self> {
        let topology = Topology::start(case.io_model, case.io_threads)?;
        let (commands, commands_rx) = watch::channel(Command::Idle);
        let (reports_tx, reports) = mpsc::channel();
        let closing = Arc::new(AtomicBool::new(false));
        let mut rig = Rig {
            topology,
            commands,
            reports,
            server_stats: Vec::new(),
            server_tasks: Vec::new(),
            client_tasks: Vec::new(),
            closing,
            panics: Arc::new(AtomicU64::new(0)),
            alarms: Vec::new(),
            tls: None,
            tick: match case.protocol {
                Protocol::Udp => (case.udp_timeout / 4).max(Duration::from_millis(1)),
                _ => Duration::from_millis(50),
            },
            udp: None,
        };
        let ip = case.address_family.loopback();
        match case.protocol {
            Protocol::Tcp
            | Protocol::Websocket
            | Protocol::Tcps
            | Protocol::Wss
            | Protocol::Http
            | Protocol::Https => {
                let tls = if case.protocol.uses_tls() {
                    Some(crate::tls::Tls::new(ip).map_err(std::io::Error::other)?)
                } else {
                    None
                };
                for (i, pair) in sockets::tcp_pairs(ip, case.clients)?
                    .into_iter()
                    .enumerate()
                {
                    let handle = rig.topology.handle_for(i);
                    let _in_runtime = handle.enter();
                    let client = tokio::net::TcpStream::from_std(pair.client)?;
                    let host = http_host(client.peer_addr()?);
                    let (framing, websocket_host) = match case.protocol {
                        Protocol::Http | Protocol::Https => (tcp::Framing::Http { host }, None),
                        Protocol::Websocket | Protocol::Wss => {
                            (tcp::Framing::WebSocket, Some(host))
                        }
                        _ => (tcp::Framing::Dgram, None),
                    };
                    let server = tokio::net::TcpStream::from_std(pair.server)?;
                    // The handshakes run on the connection's own runtime, before any phase,
                    // and are not timed.
                    let tls = tls.clone();
                    let (done, result) = mpsc::channel();
                    handle.spawn(async move {
                        let pair = connect::establish(
                            client,
                            server,
                            tls.as_ref(),
                            websocket_host.as_deref(),
                        )
                        .await;
                        let _ = done.send(pair);
                    });
                    let pair = result
                        .recv_timeout(Duration::from_secs(10))
                        .map_err(|_| std::io::Error::other("connection handshake timed out"))??;
                    if pair.tls.is_some() {
                        rig.tls = pair.tls;
                    }
                    let stats = Arc::new(ServerStats::default());
                    rig.server_stats.push(stats.clone());
                    let serve = tcp::serve_conn(
                        pair.server,
                        case.work,
                        stats,
                        case.fault,
                        rig.closing.clone(),
                        framing.clone(),
                    );
                    rig.server_tasks
                        .push(handle.spawn(guarded(rig.panics.clone(), serve)));
                    let client = TcpClient::new(
                        pair.client,
                        i,
                        case.payload,
                        case.window,
                        framing,
                        rig.alarm_for_new_client(),
                    )?;
                    rig.client_tasks.push(handle.spawn(phase::drive(
                        i,
                        client,
                        commands_rx.clone(),
                        reports_tx.clone(),
                    )));
                }
            }
            Protocol::Udp => {
                let shards = rig.topology.len();
                let mut buffers = UdpBuffers {
                    client_send: (u64::MAX, 0),
                    client_recv: (u64::MAX, 0),
                    ..Default::default()
                };
                let mut server_addrs = Vec::new();
                for k in 0..shards {
                    let ep =
                        sockets::udp_endpoint(ip, case.udp_send_buffer, case.server_recv_buffer())?;
                    buffers.server_send = ep.send_buffer;
                    buffers.server_recv = ep.recv_buffer;
                    server_addrs.push(ep.socket.local_addr()?);
                    let handle = rig.topology.handle_for(k);
                    let _in_runtime = handle.enter();
                    let socket = tokio::net::UdpSocket::from_std(ep.socket)?;
                    let stats = Arc::new(ServerStats::default());
                    rig.server_stats.push(stats.clone());
                    let serve = udp::serve(socket, case.work, stats, case.fault);
                    rig.server_tasks
                        .push(handle.spawn(guarded(rig.panics.clone(), serve)));
                }
                for i in 0..case.clients {
                    let ep = sockets::udp_endpoint(ip, case.udp_send_buffer, case.udp_recv_buffer)?;
                    ep.socket.connect(server_addrs[i % shards])?;
                    buffers.client_send = (
                        buffers.client_send.0.min(ep.send_buffer),
                        buffers.client_send.1.max(ep.send_buffer),
                    );
                    buffers.client_recv = (
                        buffers.client_recv.0.min(ep.recv_buffer),
                        buffers.client_recv.1.max(ep.recv_buffer),
                    );
                    let handle = rig.topology.handle_for(i);
                    let _in_runtime = handle.enter();
                    let socket = tokio::net::UdpSocket::from_std(ep.socket)?;
                    let client = UdpClient::new(
                        socket,
                        i,
                        case.payload,
                        case.window,
                        case.udp_timeout,
                        rig.alarm_for_new_client(),
                    );
                    rig.client_tasks.push(handle.spawn(phase::drive(
                        i,
                        client,
                        commands_rx.clone(),
                        reports_tx.clone(),
                    )));
                }
                rig.udp = Some(buffers);
            }
        }
        Ok(rig)
    }

    fn run(mut self, case: &Case, m: &mut Metrics) {
        if let Some((version, suite)) = self.tls.take() {
            m.tls_version = Some(version);
            m.tls_cipher_suite = Some(suite);
        }
        if let Some(b) = self.udp.take() {
            m.udp_server_send_buffer_bytes = Some(b.server_send);
            m.udp_server_receive_buffer_bytes = Some(b.server_recv);
            m.udp_client_send_buffer_min_bytes = Some(b.client_send.0);
            m.udp_client_send_buffer_max_bytes = Some(b.client_send.1);
            m.udp_client_receive_buffer_min_bytes = Some(b.client_recv.0);
            m.udp_client_receive_buffer_max_bytes = Some(b.client_recv.1);
        }
        let plan = |phase: u8, start: Instant, seconds: f64| {
            let deadline = start + Duration::from_secs_f64(seconds);
            PhasePlan {
                phase,
                deadline,
                drain_limit: deadline + DRAIN_LIMIT,
                record_latency: case.record_latency,
            }
        };
        let ipv6 = case.address_family == crate::case::AddressFamily::Ipv6;
        let outcome = (|| -> Result<(PhaseTotals, PhaseTotals, Timing), String> {
            let warm = if case.warmup > 0.0 {
                let warm_plan = plan(PHASE_WARMUP, Instant::now(), case.warmup);
                self.commands.send_replace(Command::Run(warm_plan));
                self.collect(warm_plan, case.clients)?
            } else {
                PhaseTotals::default()
            };
            let kernel_before = UdpCounters::read(ipv6);
            let rss_start = resources::current_rss_bytes();
            let cpu_start = resources::process_cpu_seconds();
            let start = Instant::now();
            let measured_plan = plan(PHASE_MEASURED, start, case.seconds);
            let deadline = measured_plan.deadline;
            // Sample CPU at the deadline on this thread while the clients run; the reports
            // are read afterwards (they arrive when each client's drain is over).
            self.commands.send_replace(Command::Run(measured_plan));
            self.sleep_ringing(deadline);
            let cpu_end = resources::process_cpu_seconds();
            let cpu_elapsed = start.elapsed();
            let measured = self.collect(measured_plan, case.clients)?;
            let timing = Timing {
                interval: deadline - start,
                cpu: cpu_start.zip(cpu_end).map(|(a, b)| (b - a).max(0.0)),
                cpu_elapsed,
                drain: measured
                    .last_finish
                    .map(|t| t.saturating_duration_since(deadline))
                    .unwrap_or_default(),
                rss: (rss_start, resources::current_rss_bytes()),
                kernel: kernel_before
                    .zip(UdpCounters::read(ipv6))
                    .map(|(a, b)| UdpCounters::delta(a, b)),
            };
            Ok((warm, measured, timing))
        })();
        self.closing.store(true, Ordering::Relaxed);
        self.commands.send_replace(Command::Stop);
        let (server_counters, server_received, task_panics) = self.stop();
        match outcome {
            Ok((warm, measured, timing)) => {
                fill(
                    m,
                    case,
                    &warm,
                    &measured,
                    &timing,
                    &server_counters,
                    server_received,
                );
                m.callback_exceptions += task_panics;
            }
            Err(e) => m.error = Some(e),
        }
    }

    /// A fresh alarm for the next client.
    fn alarm_for_new_client(&mut self) -> Arc<Alarm> {
        let alarm = Arc::new(Alarm::default());
        self.alarms.push(alarm.clone());
        alarm
    }

    fn ring_all(&self) {
        self.alarms.iter().for_each(|a| a.ring());
    }

    /// Sleeps until `until`, ringing every client's alarm each tick.
    fn sleep_ringing(&self, until: Instant) {
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            std::thread::sleep(left.min(self.tick));
            self.ring_all();
        }
    }

    /// Collects the reports of a phase whose start command was already sent, ringing the
    /// alarms each tick until every client has reported or the barrier limit passed.
    fn collect(&self, plan: PhasePlan, clients: usize) -> Result<PhaseTotals, String> {
        let barrier = plan.drain_limit + BARRIER_LIMIT;
        let mut totals = PhaseTotals::default();
        let mut reported = 0;
        while reported < clients {
            let left = barrier.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err("client IO barrier timed out".to_string());
            }
            match self.reports.recv_timeout(left.min(self.tick)) {
                Ok(report) => {
                    totals.add(report);
                    reported += 1;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => self.ring_all(),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err("client tasks ended without reporting".to_string())
                }
            }
        }
        Ok(totals)
    }

    /// Stops every task and runtime; returns the server counters per phase, the server's
    /// measured-phase message count, and the number of tasks that panicked.
    fn stop(self) -> ([Counters; 2], u64, u64) {
        let all_done =
            |tasks: &[tokio::task::JoinHandle<()>]| tasks.iter().all(|t| t.is_finished());
        let deadline = Instant::now() + Duration::from_secs(2);
        while !all_done(&self.client_tasks) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        // TCP servers end on their client's close; give them a moment, then abort the rest.
        let deadline = Instant::now() + Duration::from_millis(200);
        while !all_done(&self.server_tasks) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        for task in &self.server_tasks {
            task.abort();
        }
        let counters = [
            sum_counters(&self.server_stats, PHASE_WARMUP),
            sum_counters(&self.server_stats, PHASE_MEASURED),
        ];
        let received = self
            .server_stats
            .iter()
            .map(|s| s.received(PHASE_MEASURED))
            .sum();
        let panics = self.panics.load(Ordering::Relaxed);
        self.topology.shutdown(Duration::from_millis(500));
        (counters, received, panics)
    }
}

/// Timing and resource readings of the measured phase.
struct Timing {
    interval: Duration,
    cpu: Option<f64>,
    cpu_elapsed: Duration,
    drain: Duration,
    rss: (Option<u64>, Option<u64>),
    kernel: Option<UdpCounters>,
}

fn sum_counters(stats: &[Arc<ServerStats>], phase: u8) -> Counters {
    let mut total = Counters::default();
    for s in stats {
        total += s.counters(phase);
    }
    total
}

/// Counts a panic of the task it lives in (tokio catches the panic; this makes it visible).
struct PanicCounter(Arc<AtomicU64>);

impl Drop for PanicCounter {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Runs a server task, counting a panic if it has one. Server tasks are not told to stop:
/// TCP ones end when their client closes, and the rest are aborted once every client is
/// done, so the hot loop carries no stop check.
async fn guarded(panics: Arc<AtomicU64>, serve: impl std::future::Future<Output = ()>) {
    let _guard = PanicCounter(panics);
    serve.await;
}

/// The `Host` header (HTTP requests and the WebSocket upgrade) for a loopback server address: `127.0.0.1:port` or `[::1]:port`.
fn http_host(addr: std::net::SocketAddr) -> String {
    addr.to_string()
}

/// A metrics object for `case` with no traffic yet.
fn empty_metrics(case: &Case) -> Metrics {
    let udp = case.protocol == Protocol::Udp;
    let udp_only = |v: u64| udp.then_some(v);
    Metrics {
        schema_version: 1,
        backend: "tokio".to_string(),
        protocol: case.protocol.as_str().to_string(),
        address_family: case.address_family.as_str().to_string(),
        payload_bytes: case.payload as u64,
        clients: case.clients as u64,
        window: case.window as u64,
        io_model: case.io_model.as_str().to_string(),
        handler_work: case.work,
        io_contexts: case.io_contexts() as u64,
        io_threads: case.io_threads as u64,
        server_io_lanes: if udp {
            case.io_contexts() as u64
        } else {
            case.clients as u64
        },
        requested_seconds: case.seconds,
        warmup_seconds: case.warmup,
        elapsed_seconds: 0.0,
        messages_sent: 0,
        messages: 0,
        payload_roundtrip_bytes: 0,
        roundtrips_per_second: 0.0,
        payload_mib_per_second: 0.0,
        rtt_samples: 0,
        rtt_observations: 0,
        rtt_p50_us: 0.0,
        rtt_p95_us: 0.0,
        rtt_p99_us: 0.0,
        client_send_rejections: 0,
        client_send_completion_errors: 0,
        server_send_rejections: 0,
        server_send_completion_errors: 0,
        content_errors: 0,
        order_errors: 0,
        unexpected_messages: 0,
        disconnect_errors: 0,
        udp_lost_messages: 0,
        unfinished_messages: 0,
        callback_exceptions: 0,
        drain_timeouts: 0,
        duplicate_completions: 0,
        pending_completions: 0,
        warmup_ok: true,
        warmup_errors: 0,
        udp_send_buffer_requested_bytes: udp_only(case.udp_send_buffer),
        udp_receive_buffer_requested_bytes: udp_only(case.udp_recv_buffer),
        udp_server_send_buffer_bytes: None,
        udp_server_receive_buffer_bytes: None,
        udp_client_send_buffer_min_bytes: None,
        udp_client_send_buffer_max_bytes: None,
        udp_client_receive_buffer_min_bytes: None,
        udp_client_receive_buffer_max_bytes: None,
        cpu_seconds: None,
        cpu_elapsed_seconds: None,
        cpu_percent: None,
        peak_rss_bytes: None,
        ok: false,
        error: None,
        messages_received: 0,
        drain_messages: 0,
        drain_seconds: 0.0,
        warmup_messages: 0,
        server_messages_received: 0,
        rtt_method: latency::METHOD.to_string(),
        latency_recording: case.record_latency,
        rtt_min_us: 0.0,
        rtt_p90_us: 0.0,
        rtt_p999_us: 0.0,
        rtt_p9999_us: 0.0,
        rtt_max_us: 0.0,
        rtt_mean_us: 0.0,
        rtt_stddev_us: 0.0,
        rtt_histogram: None,
        rss_start_bytes: None,
        rss_end_bytes: None,
        udp_timeout_ms: udp_only(case.udp_timeout.as_millis() as u64),
        udp_server_receive_buffer_requested_bytes: udp_only(case.server_recv_buffer()),
        net_core_rmem_max: resources::sysctl_u64("net/core/rmem_max"),
        net_core_wmem_max: resources::sysctl_u64("net/core/wmem_max"),
        net_core_rmem_default: resources::sysctl_u64("net/core/rmem_default"),
        kernel_udp_in_errors_delta: None,
        kernel_udp_rcvbuf_errors_delta: None,
        kernel_udp_sndbuf_errors_delta: None,
        kernel_udp_mem_errors_delta: None,
        kernel_udp_in_datagrams_delta: None,
        tls_version: None,
        tls_cipher_suite: None,
    }
}

/// Writes the phase totals and readings into `m`.
fn fill(
    m: &mut Metrics,
    case: &Case,
    warm: &PhaseTotals,
    measured: &PhaseTotals,
    timing: &Timing,
    server: &[Counters; 2],
    server_received: u64,
) {
    let mut c = measured.counters;
    c += server[1];
    m.client_send_rejections = c.client_send_rejections;
    m.client_send_completion_errors = c.client_send_completion_errors;
    m.server_send_rejections = c.server_send_rejections;
    m.server_send_completion_errors = c.server_send_completion_errors;
    m.content_errors = c.content_errors;
    m.order_errors = c.order_errors;
    m.unexpected_messages = c.unexpected_messages + warm.other_phase_unexpected;
    m.disconnect_errors = c.disconnect_errors;
    m.udp_lost_messages = c.udp_lost_messages;
    m.unfinished_messages = c.unfinished_messages;
    m.callback_exceptions = c.callback_exceptions;
    m.drain_timeouts = c.drain_timeouts;
    m.duplicate_completions = c.duplicate_completions;

    // A late warmup echo seen in the measured phase spoils the warmup, as in arknet.
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
    m.drain_seconds = timing.drain.as_secs_f64();
    m.server_messages_received = server_received;
    m.payload_roundtrip_bytes = 2 * case.payload as u64 * m.messages;
    if seconds > 0.0 {
        m.roundtrips_per_second = m.messages as f64 / seconds;
        m.payload_mib_per_second = m.payload_roundtrip_bytes as f64 / seconds / 1_048_576.0;
    }

    m.rtt_observations = measured.received;
    if let Some(h) = &measured.histogram {
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

    m.cpu_seconds = timing.cpu;
    let cpu_elapsed = timing.cpu_elapsed.as_secs_f64();
    m.cpu_elapsed_seconds = Some(cpu_elapsed);
    m.cpu_percent = timing
        .cpu
        .filter(|_| cpu_elapsed > 0.0)
        .map(|c| c / cpu_elapsed * 100.0);
    (m.rss_start_bytes, m.rss_end_bytes) = timing.rss;

    if let Some(k) = timing.kernel.filter(|_| case.protocol == Protocol::Udp) {
        m.kernel_udp_in_errors_delta = Some(k.in_errors);
        m.kernel_udp_rcvbuf_errors_delta = Some(k.rcvbuf_errors);
        m.kernel_udp_sndbuf_errors_delta = Some(k.sndbuf_errors);
        m.kernel_udp_mem_errors_delta = Some(k.mem_errors);
        m.kernel_udp_in_datagrams_delta = Some(k.in_datagrams);
    }
}

/// Sets `ok` and, when it is false, an `error` text that names what failed.
fn finish_verdict(m: &mut Metrics) {
    m.ok = m.ok_rule_holds();
    if m.ok || m.error.is_some() {
        return;
    }
    let mut reasons: Vec<String> = m
        .error_counters()
        .iter()
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
