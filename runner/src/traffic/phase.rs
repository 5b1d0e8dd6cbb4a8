//! Phase control: the orchestrator's commands to the clients and their per-phase reports.
//!
//! Commands go out on a `watch` channel (works across runtimes); each client finishes a phase
//! (its drain included) before it reports, and the orchestrator sends the next command only
//! after every client reported, so no command is ever skipped.

use std::future::Future;
use std::sync::mpsc;
use std::time::Instant;

use hdrhistogram::Histogram;
use tokio::sync::watch;

use echomark_archive::ErrorCounters;

/// One phase as the clients see it.
#[derive(Debug, Clone, Copy)]
pub struct PhasePlan {
    /// The start signal's instant (open-loop schedules begin here).
    pub start: Instant,
    /// 0 warmup, 1 measured.
    pub phase: u8,
    /// No new message is sent at or after this instant.
    pub deadline: Instant,
    /// Whatever is still in flight at this instant is abandoned (`drain_timeouts` += 1).
    pub drain_limit: Instant,
    /// Whether round trips go into the client's histogram.
    pub record_latency: bool,
}

/// What the orchestrator tells every client.
#[derive(Debug, Clone, Copy)]
pub enum Command {
    Idle,
    Run(PhasePlan),
    Stop,
}

/// One client's account of one phase.
#[derive(Debug)]
pub struct ClientReport {
    pub client: usize,
    pub phase: u8,
    pub counters: ErrorCounters,
    /// `unexpected_messages` whose tag named the other phase (a late warmup echo).
    pub other_phase_unexpected: u64,
    pub sent: u64,
    /// Verified echoes of this phase's messages.
    pub received: u64,
    /// Verified echoes completed at or before the deadline.
    pub in_interval: u64,
    /// Verified echoes (among `received`) of messages already given up for lost.
    pub late: u64,
    pub finished_at: Instant,
    pub histogram: Option<Histogram<u64>>,
    /// Open loop: the schedule's figures.
    pub open: Option<OpenReport>,
}

/// One open-loop client's account of one phase.
#[derive(Debug, Default)]
pub struct OpenReport {
    /// Messages due while the window was full (sent once a slot freed).
    pub late_sends: u64,
    /// Messages due before the deadline that were never sent.
    pub unsent: u64,
    /// Send time − due time of every message that had a free slot when it was due
    /// (measured phase): the sender's own timing. Late sends are left out.
    pub lag: Option<Histogram<u64>>,
    /// Echo time − send time per message (measured phase, latency on).
    pub service: Option<Histogram<u64>>,
    /// Σ (send − due) over sent messages, ns: the time messages waited to be sent.
    pub lag_sum_ns: f64,
    /// ∫ in-flight count dt from the phase start, ns.
    pub in_flight_area_ns: f64,
    /// The last verified echo.
    pub last_echo: Option<Instant>,
}

impl OpenReport {
    /// Adds another client's account: counts and areas summed, histograms merged, the last
    /// echo the later of the two.
    pub fn add(&mut self, o: OpenReport) {
        self.late_sends += o.late_sends;
        self.unsent += o.unsent;
        self.lag_sum_ns += o.lag_sum_ns;
        self.in_flight_area_ns += o.in_flight_area_ns;
        self.last_echo = self.last_echo.max(o.last_echo);
        if let Some(h) = o.lag {
            crate::instruments::latency::merge_into(&mut self.lag, h);
        }
        if let Some(h) = o.service {
            crate::instruments::latency::merge_into(&mut self.service, h);
        }
    }
}

impl ClientReport {
    /// An empty report for `client` in `phase`.
    pub fn new(client: usize, phase: u8) -> Self {
        Self {
            client,
            phase,
            counters: ErrorCounters::default(),
            other_phase_unexpected: 0,
            sent: 0,
            received: 0,
            in_interval: 0,
            late: 0,
            finished_at: Instant::now(),
            histogram: None,
            open: None,
        }
    }
}

/// A client that can run one phase at a time on its connection.
pub trait PhaseClient: Send + 'static {
    /// Runs `plan` to its end (drain included) and reports.
    fn run_phase(&mut self, plan: PhasePlan) -> impl Future<Output = ClientReport> + Send;
}

/// Sends a "panicked" report if the client task unwinds mid-phase, so the orchestrator
/// counts a `callback_exceptions` instead of waiting for the barrier to time out.
struct PanicGuard<'a> {
    reports: &'a mpsc::Sender<ClientReport>,
    client: usize,
    phase: Option<u8>,
}

impl Drop for PanicGuard<'_> {
    fn drop(&mut self) {
        if let (true, Some(phase)) = (std::thread::panicking(), self.phase) {
            let mut report = ClientReport::new(self.client, phase);
            report.counters.callback_exceptions = 1;
            let _ = self.reports.send(report);
        }
    }
}

/// A client of a thread-per-core runtime (monoio): the same contract as [`PhaseClient`],
/// but neither the client nor its phase future leaves its thread.
pub trait LocalPhaseClient: 'static {
    /// Runs `plan` to its end (drain included) and reports.
    fn run_phase(&mut self, plan: PhasePlan) -> impl Future<Output = ClientReport>;
}

/// The next phase to run; `None` once told to stop (or the orchestrator is gone).
async fn next_phase(commands: &mut watch::Receiver<Command>) -> Option<PhasePlan> {
    loop {
        commands.changed().await.ok()?;
        let command = *commands.borrow_and_update();
        match command {
            Command::Idle => {}
            Command::Stop => return None,
            Command::Run(plan) => return Some(plan),
        }
    }
}

/// Runs one phase future and sends its report (a "panicked" one if it unwinds); false when
/// the orchestrator is gone.
async fn report_phase(
    client: usize,
    plan: PhasePlan,
    reports: &mpsc::Sender<ClientReport>,
    phase: impl Future<Output = ClientReport>,
) -> bool {
    let mut guard = PanicGuard {
        reports,
        client,
        phase: Some(plan.phase),
    };
    let report = phase.await;
    guard.phase = None;
    reports.send(report).is_ok()
}

/// Runs a client through every command until `Stop`, then drops it (closing its socket).
pub async fn drive<C: PhaseClient>(
    index: usize,
    mut client: C,
    mut commands: watch::Receiver<Command>,
    reports: mpsc::Sender<ClientReport>,
) {
    while let Some(plan) = next_phase(&mut commands).await {
        if !report_phase(index, plan, &reports, client.run_phase(plan)).await {
            break;
        }
    }
}

/// [`drive`] for a [`LocalPhaseClient`].
pub async fn drive_local<C: LocalPhaseClient>(
    index: usize,
    mut client: C,
    mut commands: watch::Receiver<Command>,
    reports: mpsc::Sender<ClientReport>,
) {
    while let Some(plan) = next_phase(&mut commands).await {
        if !report_phase(index, plan, &reports, client.run_phase(plan)).await {
            break;
        }
    }
}
