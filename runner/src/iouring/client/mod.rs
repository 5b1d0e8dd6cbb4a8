//! The client half of a shard (`once --backend io-uring`): the shard's clients, the phases
//! the orchestrator commands, and their IO on the shard's ring. In process it is the
//! [`Guest`] of the server half on the same ring; against `--target` it is alone on its
//! ring.
//!
//! Each client keeps one receive armed straight into its buffer and at most one send in
//! flight. The echoes a turn's completions free are framed into the client's output, and
//! at the end of the turn go out in one send, which the next turn enters together with its
//! wait: one `io_uring_enter` carries a round trip's send and the wait for its echo (in
//! process, the server's receive of it too). The client's checks and counters are the
//! other backends' ([`Session`](crate::traffic::stream::Session),
//! [`ClientCore`](crate::traffic::client::ClientCore)).

pub mod datagram;
pub mod stream;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::buffers::BufferRing;
use super::driver::{Completion, Driver, GUEST as GUEST_SENDS};
use super::{Guest, GUEST};
use crate::traffic::phase::{ClientReport, Command, PhasePlan};

/// How an open-loop sender on a ring waits, named in every open-loop metrics object.
pub const TIMER: &str = "the ring's own wait (io_uring_enter with a timeout) until spin_us \
     before the due instant, then looks for completions without waiting";

/// How often an idle shard looks for the orchestrator's next command.
const IDLE_LOOK: Duration = Duration::from_micros(200);
/// How long a turn waits at most while a phase runs.
const PHASE_TURN: Duration = Duration::from_millis(20);

/// The buffer group of the clients' provided-buffer ring (the server half's is 0).
const GROUP: u16 = 1;
/// Buffers in the clients' ring.
const RING_BUFFERS: u16 = 256;

/// What a client's operation was, in bits 48–55 of its `user_data`; the client's place on
/// its shard is in bits 0–23 and an operation's own index (a datagram send's buffer) in
/// bits 24–47.
const RECV: u64 = 1;
const SEND: u64 = 2;

/// The `user_data` of client `client`'s operation `kind` number `op`.
fn tag(kind: u64, op: usize, client: usize) -> u64 {
    GUEST | (kind << 48) | ((op as u64 & 0xff_ffff) << 24) | (client as u64 & 0xff_ffff)
}

/// The kind, operation and client of a guest completion.
fn untag(user_data: u64) -> (u64, usize, usize) {
    (
        (user_data >> 48) & 0xff,
        ((user_data >> 24) & 0xff_ffff) as usize,
        (user_data & 0xff_ffff) as usize,
    )
}

/// Arms client `me`'s receive on `target`: multishot from buffer group `group`, or
/// single-shot into `buf`, which with `now` does not wait for bytes.
///
/// # Safety
///
/// `buf` must be neither touched, moved nor freed until the receive completes (the ring is
/// dropped before the clients).
unsafe fn push_receive(
    driver: &mut Driver,
    (target, me): (super::driver::Target, usize),
    group: Option<u16>,
    buf: &mut [u8],
    now: bool,
) -> std::io::Result<()> {
    use super::driver::on_target;
    use io_uring::opcode;
    let entry = match group {
        Some(group) => on_target!(target, |file| opcode::RecvMulti::new(file, group).build()),
        None => {
            let flags = if now { libc::MSG_DONTWAIT } else { 0 };
            on_target!(target, |file| opcode::Recv::new(
                file,
                buf.as_mut_ptr(),
                buf.len() as u32
            )
            .flags(flags)
            .build())
        }
    };
    // SAFETY: as the caller promised.
    unsafe { driver.push(entry.user_data(tag(RECV, 0, me))) }?;
    driver.stats.receives_armed += 1;
    Ok(())
}

/// One client on a ring: its socket, its checks, its operations.
pub trait RingClient {
    /// Opens a phase: queues the first messages (its report at once, if its connection
    /// broke earlier).
    fn start(&mut self, plan: PhasePlan, now: Instant) -> Option<ClientReport>;
    /// One of its operations completed; a multishot receive's bytes are in `data` (taken
    /// from the provided-buffer ring, which gets the buffer back after this call).
    fn complete(&mut self, kind: u64, op: usize, c: Completion, data: Option<&[u8]>, now: Instant);
    /// After the turn's completions: submits what is queued (counted in the driver's
    /// [`Driver::sends_out`]); `me` is the client's place on its shard.
    fn send(&mut self, driver: &mut Driver, me: usize) -> std::io::Result<()>;
    /// Arms a receive unless one is armed: multishot from buffer group `group`, or
    /// single-shot into its own buffer, which with `now` does not wait for bytes.
    fn receive(
        &mut self,
        driver: &mut Driver,
        me: usize,
        group: Option<u16>,
        now: bool,
    ) -> std::io::Result<()>;
    /// Paired: whether a receive is due now, `peer_sending` being whether the server half
    /// has sends not yet completed (it is not when none is and the last receive took all
    /// there was).
    fn wants_receive(&self, peer_sending: bool) -> bool;
    /// The size of the provided buffers its receives need.
    fn buffer_size(&self) -> usize;
    /// Between turns of a running phase: loss checks and open-loop sends due by `now`.
    fn tick(&mut self, now: Instant);
    /// Whether the phase is over for this client at `now` (nothing left in flight or to
    /// send, or its connection broke).
    fn done(&self, now: Instant) -> bool;
    /// Ends the phase: counts what is left and reports; `drain_timeout` when the drain limit
    /// ended it.
    fn finish(&mut self, drain_timeout: bool) -> ClientReport;
    /// When the client must act next without a completion (an open-loop message due, a
    /// loss check), if ever.
    fn wake(&self, now: Instant) -> Option<Instant>;
    /// Open loop: when its next message is due, if it waits for one.
    fn due(&self, now: Instant) -> Option<Instant>;
    /// Whether it acts on the clock as well as on completions ([`Self::tick`], [`Self::wake`]):
    /// open loop, or losses to declare.
    fn timed(&self) -> bool;
}

/// A shard's clients and their phases.
pub struct Clients<C> {
    clients: Vec<C>,
    /// Clients handed over by the setup, started on the ring at the next turn.
    incoming: mpsc::Receiver<C>,
    commands: watch::Receiver<Command>,
    reports: mpsc::Sender<ClientReport>,
    /// The running phase, and which clients still run it.
    phase: Option<PhasePlan>,
    running: Vec<bool>,
    /// Multishot receives into `buffers`, registered on the ring with the first client.
    multishot: bool,
    buffers: Option<BufferRing>,
    /// Paired with the server half on the ring ([`super::ShardContext::paired`]).
    paired: bool,
    /// Open loop: how long before a due instant the ring stops sleeping.
    spin: Duration,
    /// The clients a turn's completions (or a phase's start) touched: only they have
    /// something to send, a receive to arm or a phase that may have ended.
    touched: Vec<usize>,
    is_touched: Vec<bool>,
    /// Whether any client acts on the clock: then every turn ticks them all.
    timed: bool,
    /// Clients still running the phase.
    unfinished: usize,
}

impl<C: RingClient> Clients<C> {
    /// A shard's clients: those `incoming` hands over, commanded by `commands`, reporting
    /// to `reports`.
    pub fn new(
        incoming: mpsc::Receiver<C>,
        (commands, reports): (watch::Receiver<Command>, mpsc::Sender<ClientReport>),
        (multishot, paired): (bool, bool),
        spin: Duration,
    ) -> Self {
        Self {
            clients: Vec::new(),
            incoming,
            commands,
            reports,
            phase: None,
            running: Vec::new(),
            multishot: multishot && !paired,
            buffers: None,
            paired,
            spin,
            touched: Vec::new(),
            is_touched: Vec::new(),
            timed: false,
            unfinished: 0,
        }
    }

    /// Starts `plan` on every client; those that cannot take part report at once.
    fn start_phase(&mut self, plan: PhasePlan) {
        let now = Instant::now();
        self.phase = Some(plan);
        self.running = vec![true; self.clients.len()];
        self.unfinished = self.clients.len();
        for (i, client) in self.clients.iter_mut().enumerate() {
            if let Some(report) = client.start(plan, now) {
                self.running[i] = false;
                self.unfinished -= 1;
                let _ = self.reports.send(report);
            }
        }
        if self.unfinished == 0 {
            self.phase = None;
        }
        for i in 0..self.clients.len() {
            self.touch(i);
        }
    }

    /// Lists client `i` for the end of the turn.
    fn touch(&mut self, i: usize) {
        if let Some(flag) = self.is_touched.get_mut(i) {
            if !*flag {
                *flag = true;
                self.touched.push(i);
            }
        }
    }

    /// Reports every client whose phase is over (all of them at the drain limit). Only the
    /// touched clients can have finished, unless clients act on the clock or the drain
    /// limit passed: then every running client is looked at.
    fn finish_done(&mut self, now: Instant) {
        let Some(plan) = self.phase else {
            return;
        };
        let drained = now >= plan.drain_limit;
        if drained || self.timed {
            for i in 0..self.clients.len() {
                self.touch(i);
            }
        }
        for k in 0..self.touched.len() {
            let i = self.touched[k];
            if !self.running[i] {
                continue;
            }
            let client = &mut self.clients[i];
            client.tick(now);
            let done = client.done(now);
            if drained || done {
                self.running[i] = false;
                let report = client.finish(!done);
                let _ = self.reports.send(report);
                self.unfinished -= 1;
            }
        }
        if self.unfinished == 0 {
            self.phase = None;
        }
    }
}

impl<C: RingClient> Guest for Clients<C> {
    fn before_turn(&mut self, driver: &mut Driver) -> std::io::Result<()> {
        // The command first, then the clients: every client was handed over before the
        // command that starts their phase was sent, so once it is seen, draining the
        // channel finds them all (the other order could start a phase without a client
        // handed over in between, which would then never report).
        let command = if self.phase.is_none() && self.commands.has_changed().unwrap_or(false) {
            Some(*self.commands.borrow_and_update())
        } else {
            None
        };
        while let Ok(client) = self.incoming.try_recv() {
            if self.multishot && self.buffers.is_none() {
                let size = client.buffer_size();
                let ring = BufferRing::register(driver.ring(), GROUP, RING_BUFFERS, size)?;
                self.buffers = Some(ring);
            }
            self.timed |= client.timed();
            self.clients.push(client);
            self.running.push(false);
            self.is_touched.push(false);
            self.touch(self.clients.len() - 1);
        }
        if let Some(Command::Run(plan)) = command {
            self.start_phase(plan);
        }
        self.finish_done(Instant::now());
        self.submit_all(driver)
    }

    fn complete(&mut self, driver: &mut Driver, c: Completion) -> std::io::Result<()> {
        let (kind, op, me) = untag(c.user_data);
        if kind == SEND {
            driver.sent(GUEST_SENDS);
        }
        self.touch(me);
        let Some(client) = self.clients.get_mut(me) else {
            return Ok(());
        };
        match (c.buffer(), self.buffers.as_mut()) {
            (Some(id), Some(ring)) => {
                driver.stats.ring_buffers_used += 1;
                driver.stats.multishot_receives += u64::from(c.more());
                let len = usize::try_from(c.result).unwrap_or(0);
                client.complete(kind, op, c, Some(ring.filled(id, len)), Instant::now());
                ring.give_back(id);
            }
            _ => {
                if c.result == -libc::ENOBUFS {
                    driver.stats.ring_buffers_exhausted += 1;
                }
                client.complete(kind, op, c, None, Instant::now());
            }
        }
        Ok(())
    }

    fn after_turn(&mut self, driver: &mut Driver) -> std::io::Result<()> {
        self.finish_done(Instant::now());
        self.submit_all(driver)
    }

    fn arm_receives(&mut self, driver: &mut Driver, peer_sending: bool) -> std::io::Result<()> {
        if !self.paired {
            return Ok(());
        }
        for (i, client) in self.clients.iter_mut().enumerate() {
            if client.wants_receive(peer_sending) {
                client.receive(driver, i, None, true)?;
            }
        }
        Ok(())
    }

    fn arm_blocking(&mut self, driver: &mut Driver) -> std::io::Result<()> {
        for (i, client) in self.clients.iter_mut().enumerate() {
            if client.wants_receive(true) {
                client.receive(driver, i, None, false)?;
            }
        }
        Ok(())
    }

    fn wait(&self) -> Duration {
        let Some(plan) = self.phase else {
            return IDLE_LOOK;
        };
        let now = Instant::now();
        let mut until = plan.drain_limit.min(now + PHASE_TURN);
        let mut due = None;
        for (i, client) in self.clients.iter().enumerate() {
            if self.timed && self.running[i] {
                if let Some(wake) = client.wake(now) {
                    until = until.min(wake);
                }
                if let Some(next) = client.due(now) {
                    due = Some(due.map_or(next, |d: Instant| d.min(next)));
                }
            }
        }
        // Within `spin` of a due message, look without sleeping: a sleeping thread wakes
        // tens of microseconds late.
        if due.is_some_and(|d| d.saturating_duration_since(now) <= self.spin) {
            return Duration::ZERO;
        }
        until.saturating_duration_since(now)
    }
}

impl<C: RingClient> Clients<C> {
    /// Sends what the touched clients queued and (not paired) re-arms their receives; the
    /// list is emptied.
    fn submit_all(&mut self, driver: &mut Driver) -> std::io::Result<()> {
        let group = self.buffers.as_ref().map(|ring| {
            ring.publish();
            ring.group()
        });
        let mut touched = std::mem::take(&mut self.touched);
        for &i in &touched {
            self.is_touched[i] = false;
            let client = &mut self.clients[i];
            client.send(driver, i)?;
            if !self.paired {
                client.receive(driver, i, group, false)?;
            }
        }
        touched.clear();
        self.touched = touched;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_names_its_kind_operation_and_client_and_is_a_guests() {
        let t = tag(SEND, 70_000, 1_234);
        assert_ne!(t & GUEST, 0);
        assert_eq!(untag(t), (SEND, 70_000, 1_234));
        assert_eq!(untag(tag(RECV, 0, 0)), (RECV, 0, 0));
    }
}
