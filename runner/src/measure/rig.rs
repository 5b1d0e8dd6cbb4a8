//! The running measurement: its runtimes, the command channel to the clients, their reports,
//! the server tasks' bookkeeping, and the phases driven from the orchestrator thread. All of
//! it is the same for every backend; only the [`Runtimes`] (where tasks run and how they are
//! stopped) and the setup differ.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use echomark_archive::{ErrorCounters, Metrics};
use tokio::sync::watch;

use super::report::{self, PhaseTotals, Timing, UdpBuffers};
use super::runtimes::Runtimes;
use super::DRAIN_LIMIT;
use crate::case::{AddressFamily, Case};
use crate::instruments::alarm::Alarm;
use crate::instruments::counters::ServerStats;
use crate::instruments::latency;
use crate::instruments::resources::{self, UdpCounters};
use crate::instruments::syscalls::{SyscallCountError, SyscallCounter};
use crate::message::{PHASE_MEASURED, PHASE_WARMUP};
use crate::traffic::phase::{ClientReport, Command, PhasePlan};
use crate::traffic::stream::ServerDuty;

/// How long past the drain limit a client may take to report before the run fails.
const BARRIER_LIMIT: Duration = Duration::from_secs(5);
/// How often the orchestrator rings stream clients (they only need the drain limit).
const STREAM_TICK: Duration = Duration::from_millis(50);
/// The UDP tick is a quarter of the loss timeout, within these bounds: the upper one keeps
/// the drain limit noticed in time when the timeout is longer than the drain.
const MIN_UDP_TICK: Duration = Duration::from_millis(1);
const MAX_UDP_TICK: Duration = Duration::from_millis(250);
/// Why a phase could not be completed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PhaseError {
    #[error("client IO barrier timed out")]
    BarrierTimeout,
    #[error("client tasks ended without reporting")]
    ClientsGone,
    #[error("the measured phase was not released: {0}")]
    NotReleased(String),
}

/// When the measured phase starts and ends.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// The start signal: the clients start sending at this instant.
    pub start: Instant,
    /// The deadline, when it is not `start + seconds` (a fleet's common end).
    pub deadline: Option<Instant>,
}

/// Decides when the measured phase starts, once warmup is over: at once for one process,
/// at a fleet's barrier for a fleet generator ([`crate::fleet`]).
pub trait Release {
    /// Returns when the measured phase may start (having waited for it), or why it may not.
    fn release(&mut self, case: &Case) -> Result<Window, Box<dyn std::error::Error>>;
}

/// The measured phase starts as soon as warmup is over.
pub struct AtOnce;

impl Release for AtOnce {
    fn release(&mut self, _: &Case) -> Result<Window, Box<dyn std::error::Error>> {
        Ok(Window {
            start: Instant::now(),
            deadline: None,
        })
    }
}

/// The running measurement on runtimes `R`.
pub(super) struct Rig<R> {
    pub(super) runtimes: R,
    pub(super) commands: watch::Sender<Command>,
    pub(super) commands_rx: watch::Receiver<Command>,
    pub(super) reports_tx: mpsc::Sender<ClientReport>,
    reports: mpsc::Receiver<ClientReport>,
    pub(super) server_stats: Vec<Arc<ServerStats>>,
    pub(super) closing: Arc<AtomicBool>,
    /// Panics of server tasks (client panics arrive as reports).
    pub(super) panics: Arc<AtomicU64>,
    /// One per client, rung every `tick` while a phase runs.
    alarms: Vec<Arc<Alarm>>,
    pub(super) tick: Duration,
    /// TLS: the negotiated version and cipher suite.
    pub(super) tls: Option<(String, String)>,
    pub(super) udp: Option<UdpBuffers>,
    /// The IO driver the runtimes run on, as the backend reports it.
    pub(super) io_driver: Option<String>,
    /// `quic`: the clients' connections, whose statistics the run reports.
    pub(super) quic: Vec<crate::traffic::quic::Tap>,
    /// `quic-handshake`, `quic-0rtt`: the connections made and accepted over the run.
    pub(super) handshakes: Option<Arc<crate::traffic::quic::per_message::HandshakeCounts>>,
}

impl<R: Runtimes> Rig<R> {
    /// `runtimes` and the channels for `case`, with no sockets yet.
    pub(super) fn empty(case: &Case, runtimes: R) -> Self {
        let (commands, commands_rx) = watch::channel(Command::Idle);
        let (reports_tx, reports) = mpsc::channel();
        Rig {
            runtimes,
            commands,
            commands_rx,
            reports_tx,
            reports,
            server_stats: Vec::new(),
            closing: Arc::new(AtomicBool::new(false)),
            panics: Arc::new(AtomicU64::new(0)),
            alarms: Vec::new(),
            tls: None,
            tick: match case.protocol {
                p if p.is_datagram() => (case.udp_timeout / 4).clamp(MIN_UDP_TICK, MAX_UDP_TICK),
                _ => STREAM_TICK,
            },
            udp: None,
            io_driver: None,
            quic: Vec::new(),
            handshakes: None,
        }
    }

    /// Runs warmup and the measured phase, then stops everything and writes `m`; with
    /// `syscalls`, the system calls counted over the measured interval too.
    pub(super) fn run(
        mut self,
        case: &Case,
        m: &mut Metrics,
        syscalls: Option<&mut SyscallCounter>,
        release: &mut dyn Release,
    ) {
        self.record_setup(m);
        let outcome = self.phases(case, m, syscalls, release);
        self.closing.store(true, Ordering::Relaxed);
        self.commands.send_replace(Command::Stop);
        let stopped = self.stop();
        match outcome {
            Ok((warm, measured, timing)) => {
                report::fill(
                    m,
                    case,
                    &warm,
                    &measured,
                    &timing,
                    &stopped.server,
                    stopped.server_received,
                );
                m.callback_exceptions += stopped.task_panics;
                m.ring = stopped.ring;
            }
            Err(e) => m.error = Some(e.to_string()),
        }
    }

    /// What the setup learnt, into `m`: the negotiated TLS, the UDP buffers, the IO driver.
    fn record_setup(&mut self, m: &mut Metrics) {
        if let Some((version, suite)) = self.tls.take() {
            m.tls_version = Some(version);
            m.tls_cipher_suite = Some(suite);
        }
        if let Some(b) = self.udp.take() {
            report::udp_buffers(m, &b);
        }
        m.io_driver = self.io_driver.take();
    }

    /// Warmup, then the measured phase: the totals of both and the measured interval's
    /// timing.
    fn phases(
        &self,
        case: &Case,
        m: &mut Metrics,
        syscalls: Option<&mut SyscallCounter>,
        release: &mut dyn Release,
    ) -> Result<(PhaseTotals, PhaseTotals, Timing), PhaseError> {
        let warm = self.warmup(case)?;
        let window = release
            .release(case)
            .map_err(|e| PhaseError::NotReleased(e.to_string()))?;
        let (measured, timing) = self.measured(case, m, syscalls, window)?;
        Ok((warm, measured, timing))
    }

    /// The warmup phase, when the case has one.
    fn warmup(&self, case: &Case) -> Result<PhaseTotals, PhaseError> {
        if case.warmup > 0.0 {
            let warm_plan = phase_plan(case, PHASE_WARMUP, Instant::now(), case.warmup);
            self.commands.send_replace(Command::Run(warm_plan));
            self.collect(warm_plan, case.connections().0)
        } else {
            Ok(PhaseTotals::default())
        }
    }

    /// The measured phase: its totals and timing; the system calls, the threads' placement
    /// and the QUIC counters go into `m`.
    fn measured(
        &self,
        case: &Case,
        m: &mut Metrics,
        mut syscalls: Option<&mut SyscallCounter>,
        window: Window,
    ) -> Result<(PhaseTotals, Timing), PhaseError> {
        let ipv6 = case.address_family == AddressFamily::Ipv6;
        let kernel_before = UdpCounters::read(ipv6);
        let rss_start = resources::current_rss_bytes();
        let cpu_start = resources::process_cpu_seconds();
        let syscalls_start = syscalls.as_mut().map(|c| c.read());
        let start = window.start;
        let mut measured_plan = phase_plan(case, PHASE_MEASURED, start, case.seconds);
        if let Some(deadline) = window.deadline {
            measured_plan.deadline = deadline;
            measured_plan.drain_limit = deadline + DRAIN_LIMIT;
        }
        let deadline = measured_plan.deadline;
        // Sample CPU at the deadline on this thread while the clients run; the reports
        // are read afterwards (they arrive when each client's drain is over).
        self.commands.send_replace(Command::Run(measured_plan));
        self.sleep_ringing(deadline);
        let cpu_end = resources::process_cpu_seconds();
        let syscalls_end = syscalls.as_mut().map(|c| c.read());
        let cpu_elapsed = start.elapsed();
        m.syscalls = syscalls_between(m, syscalls_start, syscalls_end);
        // Every runtime thread is still alive here: where they may run, as the kernel
        // holds it.
        m.placement = placement_now(case);
        let measured = self.collect(measured_plan, case.connections().0)?;
        m.quic = self.quic_counters(case);
        let timing = Timing {
            start,
            interval: deadline - start,
            cpu: cpu_start.zip(cpu_end).map(|(a, b)| (b - a).max(0.0)),
            cpu_elapsed,
            drain: measured
                .last_finish
                .map(|t| t.saturating_duration_since(deadline))
                .unwrap_or_default(),
            rss: (rss_start, resources::current_rss_bytes()),
            kernel: kernel_before.zip(UdpCounters::read(ipv6)),
        };
        Ok((measured, timing))
    }

    /// QUIC: what the clients' connections (and, in process, the handshakes) counted.
    fn quic_counters(&self, case: &Case) -> Option<echomark_archive::QuicCounters> {
        let handshakes = self
            .handshakes
            .as_deref()
            .map(|h| (h, case.target.is_none()));
        crate::traffic::quic::counters(&self.quic, handshakes).map(|q| {
            echomark_archive::QuicCounters {
                transport: Some(case.quic),
                ..q
            }
        })
    }

    /// The duty of a new server task: the case's work and fault, fresh counters.
    pub(super) fn duty(&mut self, case: &Case) -> ServerDuty {
        let stats = Arc::new(ServerStats::default());
        self.server_stats.push(stats.clone());
        ServerDuty {
            work_rounds: case.work,
            stats,
            fault: case.fault,
            closing: self.closing.clone(),
            echo_foreign: false,
            idle: None,
        }
    }

    /// A fresh alarm for the next client.
    pub(super) fn alarm_for_new_client(&mut self) -> Arc<Alarm> {
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
    fn collect(&self, plan: PhasePlan, clients: usize) -> Result<PhaseTotals, PhaseError> {
        let barrier = plan.drain_limit + BARRIER_LIMIT;
        let mut totals = PhaseTotals::default();
        let mut reported = 0;
        while reported < clients {
            let left = barrier.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(PhaseError::BarrierTimeout);
            }
            match self.reports.recv_timeout(left.min(self.tick)) {
                Ok(report) => {
                    totals.add(report);
                    reported += 1;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => self.ring_all(),
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err(PhaseError::ClientsGone),
            }
        }
        Ok(totals)
    }

    /// Stops every task and runtime, then sums what the server side counted.
    fn stop(self) -> Stopped {
        let ring = self.runtimes.stop();
        let sum = |phase: u8| {
            let mut total = ErrorCounters::default();
            for s in &self.server_stats {
                total += s.counters(phase);
            }
            total
        };
        Stopped {
            server: [sum(PHASE_WARMUP), sum(PHASE_MEASURED)],
            server_received: self
                .server_stats
                .iter()
                .map(|s| s.received(PHASE_MEASURED))
                .sum(),
            task_panics: self.panics.load(Ordering::Relaxed),
            ring,
        }
    }
}

/// What the server side reported once everything stopped.
struct Stopped {
    /// Server error counters per phase (warmup, measured).
    server: [ErrorCounters; 2],
    /// Messages the server received in the measured phase.
    server_received: u64,
    /// Server tasks that panicked.
    task_panics: u64,
    /// What the runtimes' own io_uring rings counted (`--backend io-uring`).
    ring: Option<echomark_archive::RingCounters>,
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
pub(super) async fn guarded(panics: Arc<AtomicU64>, serve: impl std::future::Future<Output = ()>) {
    let _guard = PanicCounter(panics);
    serve.await;
}

impl PhaseTotals {
    /// Adds one client's report.
    fn add(&mut self, r: ClientReport) {
        self.counters += r.counters;
        self.other_phase_unexpected += r.other_phase_unexpected;
        self.sent += r.sent;
        self.received += r.received;
        self.in_interval += r.in_interval;
        self.late += r.late;
        self.last_finish = self.last_finish.max(Some(r.finished_at));
        if let Some(h) = r.histogram {
            latency::merge_into(&mut self.histogram, h);
        }
        if let Some(o) = r.open {
            self.open.get_or_insert_with(Default::default).add(o);
        }
    }
}

/// The plan of `phase` of `case`: from `start` for `seconds`, then the drain.
fn phase_plan(case: &Case, phase: u8, start: Instant, seconds: f64) -> PhasePlan {
    let deadline = start + Duration::from_secs_f64(seconds);
    PhasePlan {
        start,
        phase,
        deadline,
        drain_limit: deadline + DRAIN_LIMIT,
        record_latency: case.record_latency,
    }
}

/// The system calls counted between two readings of the counter; a failed reading is the
/// run's error (unless it has one already) and leaves the count out.
fn syscalls_between(
    m: &mut Metrics,
    start: Option<Result<u64, SyscallCountError>>,
    end: Option<Result<u64, SyscallCountError>>,
) -> Option<u64> {
    match (start, end) {
        (Some(Ok(a)), Some(Ok(b))) => Some(b.saturating_sub(a)),
        (Some(Err(e)), _) | (_, Some(Err(e))) => {
            m.error.get_or_insert_with(|| e.to_string());
            None
        }
        _ => None,
    }
}

/// Where this process's threads may run, as the kernel holds it: an in-process server's
/// own runtime threads (`--server-cpus`) apart from every other thread.
fn placement_now(case: &Case) -> Option<echomark_archive::Placement> {
    let server_thread = |name: &str| name.starts_with(super::runtimes::SERVER_THREADS.shard);
    let (client, server) = crate::placement::threads_allowed_split("self", server_thread)?;
    let server_cpus = match case.server_cpus {
        Some(_) => Some(server?.to_string()),
        None => None,
    };
    Some(echomark_archive::Placement {
        client_cpus: client?.to_string(),
        client_pinned: case.client_cpus.is_some(),
        server_in_process: case.target.is_none(),
        server_cpus,
    })
}
