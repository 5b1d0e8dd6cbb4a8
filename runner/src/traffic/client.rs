//! The protocol-independent half of a client: its window of in-flight slots, sequence
//! numbers, echo verification, order rule, latency recording and per-phase accounting.
//! The stream (TCP, WebSocket, HTTP, with or without TLS) and UDP clients own the socket and
//! call into this.
//!
//! Closed loop, a freed slot is refilled at once ([`Next::Send`]). Open loop, messages are
//! due on a [`Schedule`]: the IO loop runs a *send pass* after every batch of echoes and
//! whenever its timer fires, sending each due message that has a free slot ([`ClientCore::due`],
//! [`ClientCore::end_pass`]). Latency is measured from the due time (for closed loop the
//! due time is the send time), and the service time from the send time beside it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use echomark_archive::ErrorCounters;

use crate::instruments::latency;
use crate::message::{self, EchoVerdict, Expectation, Header};
use crate::traffic::phase::{ClientReport, OpenReport, PhasePlan};
use crate::traffic::schedule::{OpenLoop, Schedule};

/// How echoes must be ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderRule {
    /// Every echo has the next expected sequence (streams).
    Strict,
    /// Each echo's sequence is above every earlier one in the phase (datagrams).
    Increasing,
    /// No order across messages (`quic-streams`: each message has its own stream, and
    /// the client checks that the echo on a stream is that stream's message).
    Any,
}

/// What the caller should do after an echo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// A slot was freed before the deadline: send a new message.
    Send,
    /// Nothing to send.
    Wait,
}

/// What every client of a case shares: payload, window, open-loop load and client count.
#[derive(Debug, Clone, Copy)]
pub struct ClientShape {
    pub payload: usize,
    pub window: usize,
    pub open_loop: Option<OpenLoop>,
    pub clients: usize,
}

impl ClientShape {
    /// The shape of `case`'s clients.
    pub fn of(case: &crate::case::Case) -> Self {
        Self {
            payload: case.payload,
            window: case.window,
            open_loop: case.open_loop,
            clients: case.clients,
        }
    }

    /// The shape of each connection of `case`: one per client with the case's shape, or,
    /// against an HTTP server that does not pipeline, clients × window connections of
    /// window 1 ([`crate::case::Case::connections`]).
    pub fn per_connection(case: &crate::case::Case) -> Self {
        let (clients, window) = case.connections();
        Self {
            clients,
            window,
            ..Self::of(case)
        }
    }

    /// The client core of client `index` with this shape.
    pub fn core(&self, index: usize, order: OrderRule) -> ClientCore {
        ClientCore::new(index, self.payload, self.window, order)
            .with_open_loop(self.open_loop, self.clients)
    }
}

/// Slot state of one in-flight message.
#[derive(Debug, Clone, Copy)]
struct Slot {
    sequence: u64,
    /// When the schedule said the message was due (closed loop: when it was sent).
    due_at: Instant,
    sent_at: Instant,
}

/// A message given up for lost, kept for one more timeout in case its echo comes late.
#[derive(Debug, Clone, Copy)]
struct GivenUp {
    slot: Slot,
    at: Instant,
}

/// A client's open-loop state within one phase.
struct OpenState {
    load: OpenLoop,
    clients: usize,
    schedule: Option<Schedule>,
    /// Whether the previous send pass ended with every slot taken: then every message sent
    /// in the next pass was due while the window was full.
    full_at_pass_end: bool,
    report: OpenReport,
    /// When the in-flight count last changed (for the time integral of in-flight).
    last_change: Instant,
}

/// One client's state across phases (sequence numbers never reset).
pub struct ClientCore {
    pub id: u32,
    index: usize,
    payload: usize,
    order: OrderRule,
    slots: Vec<Option<Slot>>,
    in_flight: usize,
    /// Messages declared lost in this phase within the last timeout, by sequence. At most
    /// a window's worth is added per expiry pass, and each leaves after one timeout.
    given_up: BTreeMap<u64, GivenUp>,
    next_sequence: u64,
    /// Strict: the next sequence expected. Increasing: one above the highest seen.
    expected: u64,
    plan: Option<PhasePlan>,
    report: ClientReport,
    histogram: Option<Histogram<u64>>,
    open: Option<OpenState>,
}

impl ClientCore {
    /// A closed-loop client.
    pub fn new(index: usize, payload: usize, window: usize, order: OrderRule) -> Self {
        Self {
            id: index as u32,
            index,
            payload,
            order,
            slots: vec![None; window],
            in_flight: 0,
            given_up: BTreeMap::new(),
            next_sequence: 0,
            expected: 0,
            plan: None,
            report: ClientReport::new(index, 0),
            histogram: None,
            open: None,
        }
    }

    /// Makes this client open-loop: client `index` of `clients` under `load`.
    pub fn with_open_loop(mut self, load: Option<OpenLoop>, clients: usize) -> Self {
        self.open = load.map(|load| OpenState {
            load,
            clients,
            schedule: None,
            full_at_pass_end: false,
            report: OpenReport::default(),
            last_change: Instant::now(),
        });
        self
    }

    /// Whether messages go out on a schedule rather than when slots free.
    pub fn is_open_loop(&self) -> bool {
        self.open.is_some()
    }

    /// Messages in flight.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// The window size.
    pub fn window(&self) -> usize {
        self.slots.len()
    }

    /// Starts a phase: fresh counters; a histogram when the phase records latency.
    pub fn begin(&mut self, plan: PhasePlan) {
        self.plan = Some(plan);
        self.report = ClientReport::new(self.index, plan.phase);
        self.expected = self.next_sequence;
        // An earlier phase's losses stay its own.
        self.given_up.clear();
        let recording = plan.phase == message::PHASE_MEASURED && plan.record_latency;
        self.histogram = recording.then(latency::new_histogram);
        let index = self.index;
        if let Some(open) = self.open.as_mut() {
            open.schedule = Some(Schedule::new(&open.load, index, open.clients, plan.start));
            open.full_at_pass_end = false;
            open.last_change = plan.start;
            open.report = OpenReport {
                lag: (plan.phase == message::PHASE_MEASURED).then(latency::new_histogram),
                service: recording.then(latency::new_histogram),
                ..OpenReport::default()
            };
        }
    }

    /// Starts a phase for a client whose connection may have failed in an earlier one
    /// (`broken`): such a client sits the phase out and reports it at once, with one
    /// disconnect and anything in flight counted as `finish` counts it.
    pub fn begin_unless_broken(
        &mut self,
        plan: PhasePlan,
        broken: bool,
        lost_as_udp: bool,
    ) -> Option<ClientReport> {
        self.begin(plan);
        if !broken {
            return None;
        }
        self.counters().disconnect_errors += 1;
        Some(self.finish(lost_as_udp))
    }

    fn plan(&self) -> PhasePlan {
        self.plan.expect("begin() precedes traffic")
    }

    /// Whether new messages may still be sent at `now`.
    pub fn may_send(&self, now: Instant) -> bool {
        now < self.plan().deadline
    }

    /// Takes a free slot and appends the message for it to `out`.
    ///
    /// A message lives in slot `sequence mod window`, so an echo finds its slot without a
    /// search. When datagrams complete out of order (or are lost), the next sequence's slot
    /// may still be busy; the sequence then skips ahead to the next free slot. Sequences stay
    /// increasing, which is all the datagram order rule needs; streams never skip.
    pub fn write_next(&mut self, out: &mut Vec<u8>, now: Instant) {
        debug_assert!(self.in_flight < self.slots.len(), "a free slot exists");
        let width = self.slots.len() as u64;
        let mut sequence = self.next_sequence;
        while self.slots[(sequence % width) as usize].is_some() {
            sequence += 1;
        }
        self.next_sequence = sequence + 1;
        let due_at = match self.open.as_mut() {
            None => now,
            Some(open) => {
                open.account(self.in_flight, now);
                let due = open.schedule.as_mut().map_or(now, Schedule::advance);
                let lag = now.saturating_duration_since(due);
                open.report.lag_sum_ns += lag.as_nanos() as f64;
                if open.full_at_pass_end {
                    // It waited for a slot: queueing behind the server, which the corrected
                    // latency charges; the lag histogram is the sender's own timing.
                    open.report.late_sends += 1;
                } else if let Some(h) = open.report.lag.as_mut() {
                    latency::record(h, lag);
                }
                due
            }
        };
        self.slots[(sequence % width) as usize] = Some(Slot {
            sequence,
            due_at,
            sent_at: now,
        });
        self.in_flight += 1;
        self.report.sent += 1;
        let header = Header {
            phase: self.plan().phase,
            client_id: self.id,
            sequence,
        };
        message::write_message(out, header, self.payload);
    }

    /// Judges one echo received at `now`.
    pub fn on_echo(&mut self, message: &[u8], now: Instant) -> Next {
        let plan = self.plan();
        let (slots, given_up) = (&self.slots, &self.given_up);
        let width = slots.len() as u64;
        let expect = Expectation {
            client_id: self.id,
            phase: plan.phase,
            payload: self.payload,
            in_flight: |seq: u64| {
                matches!(slots[(seq % width) as usize], Some(s) if s.sequence == seq)
                    || given_up.contains_key(&seq)
            },
        };
        let verdict = message::verify_echo(&expect, message);
        let c = &mut self.report.counters;
        match verdict {
            EchoVerdict::Malformed => c.content_errors += 1,
            EchoVerdict::WrongPhase { .. } => self.report.other_phase_unexpected += 1,
            EchoVerdict::NoSlot => c.unexpected_messages += 1,
            EchoVerdict::Corrupted { sequence } => {
                c.content_errors += 1;
                // A late echo that came back corrupted stays lost; its slot is long reused.
                if self.given_up.remove(&sequence).is_none() {
                    self.free(sequence, now);
                    return self.refill(now);
                }
            }
            EchoVerdict::Intact { sequence } => {
                if let Some(late) = self.given_up.remove(&sequence) {
                    // Counted lost at its timeout: it was not. Its slot was refilled then,
                    // and it is out of order by nature, so neither is touched now.
                    let c = &mut self.report.counters;
                    c.udp_lost_messages -= 1;
                    self.report.late += 1;
                    self.received(late.slot, now);
                    return Next::Wait;
                }
                let slot = self.free(sequence, now);
                self.check_order(sequence);
                self.received(slot, now);
                return self.refill(now);
            }
        }
        Next::Wait
    }

    /// Counts a verified echo of `slot`'s message and records its latency.
    fn received(&mut self, slot: Slot, now: Instant) {
        self.report.received += 1;
        if now <= self.plan().deadline {
            self.report.in_interval += 1;
        }
        if let Some(h) = self.histogram.as_mut() {
            latency::record(h, now.saturating_duration_since(slot.due_at));
        }
        if let Some(open) = self.open.as_mut() {
            open.report.last_echo = Some(now);
            if let Some(h) = open.report.service.as_mut() {
                latency::record(h, now.saturating_duration_since(slot.sent_at));
            }
        }
    }

    /// Closed loop refills a freed slot before the deadline; open loop leaves sending to
    /// the next send pass.
    fn refill(&self, now: Instant) -> Next {
        if self.open.is_none() && self.may_send(now) {
            Next::Send
        } else {
            Next::Wait
        }
    }

    fn free(&mut self, sequence: u64, now: Instant) -> Slot {
        if let Some(open) = self.open.as_mut() {
            open.account(self.in_flight, now);
        }
        let index = (sequence % self.slots.len() as u64) as usize;
        self.in_flight -= 1;
        self.slots[index].take().expect("verified as in flight")
    }

    /// Open loop: whether a message is due at `now` with a free slot, before the deadline
    /// (nothing is sent at or after it, however far behind the schedule is). Always false for
    /// closed loop.
    pub fn due(&self, now: Instant) -> bool {
        self.in_flight < self.slots.len()
            && self.may_send(now)
            && self.scheduled_next().is_some_and(|due| due <= now)
    }

    /// Open loop: ends a send pass (call it after sending every due message).
    pub fn end_pass(&mut self) {
        let full = self.in_flight == self.slots.len();
        if let Some(open) = self.open.as_mut() {
            open.full_at_pass_end = full;
        }
    }

    /// Open loop: when the sender must wake for its next message. `None` when the window is
    /// full (an echo wakes it), the deadline has passed at `now`, the schedule's next message
    /// is past it, or for closed loop.
    pub fn next_wake(&self, now: Instant) -> Option<Instant> {
        let due = self.scheduled_next()?;
        (self.in_flight < self.slots.len() && self.schedule_pending(now)).then_some(due)
    }

    /// Open loop: whether more messages may still be sent: the deadline has not passed at
    /// `now` and the schedule has a message due before it.
    pub fn schedule_pending(&self, now: Instant) -> bool {
        self.may_send(now)
            && self
                .scheduled_next()
                .is_some_and(|due| due < self.plan().deadline)
    }

    /// Whether the phase still has traffic at `now`: messages in flight, messages given up
    /// for lost within the last timeout (their echoes may still come), or (open loop)
    /// messages the schedule has yet to send.
    pub fn has_traffic(&self, now: Instant) -> bool {
        self.in_flight > 0 || self.schedule_pending(now) || !self.given_up.is_empty()
    }

    fn scheduled_next(&self) -> Option<Instant> {
        self.open
            .as_ref()
            .and_then(|o| o.schedule.as_ref())
            .map(Schedule::next_due)
    }

    fn check_order(&mut self, sequence: u64) {
        let in_order = match self.order {
            OrderRule::Strict => sequence == self.expected,
            OrderRule::Increasing => sequence >= self.expected,
            OrderRule::Any => true,
        };
        if !in_order {
            self.report.counters.order_errors += 1;
        }
        self.expected = self.expected.max(sequence + 1);
    }

    /// Declares every message older than `timeout` lost (UDP), remembering each for one
    /// more timeout in case its echo comes late, and forgets those given up a timeout ago
    /// (lost for good). Returns how many slots were freed.
    pub fn expire(&mut self, now: Instant, timeout: Duration) -> usize {
        if let Some(open) = self.open.as_mut() {
            open.account(self.in_flight, now);
        }
        self.given_up
            .retain(|_, g| now.saturating_duration_since(g.at) < timeout);
        let mut freed = 0;
        for slot in &mut self.slots {
            if let Some(s) = slot.filter(|s| now.saturating_duration_since(s.sent_at) >= timeout) {
                self.given_up
                    .insert(s.sequence, GivenUp { slot: s, at: now });
                *slot = None;
                freed += 1;
            }
        }
        self.in_flight -= freed;
        self.report.counters.udp_lost_messages += freed as u64;
        freed
    }

    /// Ends the phase: anything still in flight is lost (UDP) or unfinished (streams).
    pub fn finish(&mut self, lost_as_udp: bool) -> ClientReport {
        let left = self.in_flight as u64;
        let finished_at = Instant::now();
        let deadline = self.plan().deadline;
        let open = self.open.as_mut().map(|open| {
            open.account(self.in_flight, finished_at);
            let unsent = open
                .schedule
                .as_mut()
                .map_or(0, |s| s.drain_before(deadline));
            let mut report = std::mem::take(&mut open.report);
            report.unsent = unsent;
            report
        });
        self.slots.iter_mut().for_each(|s| *s = None);
        self.in_flight = 0;
        self.given_up.clear();
        let c = &mut self.report.counters;
        if lost_as_udp {
            c.udp_lost_messages += left;
        } else {
            c.unfinished_messages += left;
        }
        let mut report = std::mem::replace(&mut self.report, ClientReport::new(self.index, 0));
        report.finished_at = finished_at;
        report.histogram = self.histogram.take();
        report.open = open;
        report
    }

    /// Mutable access to the counters of the running phase.
    pub fn counters(&mut self) -> &mut ErrorCounters {
        &mut self.report.counters
    }
}

impl OpenState {
    /// Adds the in-flight count's area since the last change (the count was `in_flight`).
    fn account(&mut self, in_flight: usize, now: Instant) {
        let span = now.saturating_duration_since(self.last_change);
        self.report.in_flight_area_ns += in_flight as f64 * span.as_nanos() as f64;
        self.last_change = self.last_change.max(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(seconds: u64) -> PhasePlan {
        let now = Instant::now();
        PhasePlan {
            start: now,
            phase: 1,
            deadline: now + Duration::from_secs(seconds),
            drain_limit: now + Duration::from_secs(seconds + 2),
            record_latency: true,
        }
    }

    /// Sends `n` messages and returns them split into single messages.
    fn send(core: &mut ClientCore, n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|_| {
                let mut out = Vec::new();
                core.write_next(&mut out, Instant::now());
                out
            })
            .collect()
    }

    #[test]
    fn in_order_echoes_count_and_refill() {
        let mut core = ClientCore::new(2, 64, 4, OrderRule::Strict);
        core.begin(plan(60));
        let msgs = send(&mut core, 4);
        for m in &msgs {
            assert_eq!(core.on_echo(m, Instant::now()), Next::Send);
        }
        let r = core.finish(false);
        assert_eq!((r.sent, r.received, r.in_interval), (4, 4, 4));
        assert_eq!(r.counters.total(), 0);
        assert_eq!(r.histogram.unwrap().len(), 4);
    }

    #[test]
    fn reordering_is_an_order_error() {
        // Streams flag both messages of a swapped pair; datagrams only the one that came late.
        for (rule, expected) in [(OrderRule::Strict, 2), (OrderRule::Increasing, 1)] {
            let mut core = ClientCore::new(0, 32, 4, rule);
            core.begin(plan(60));
            let msgs = send(&mut core, 3);
            core.on_echo(&msgs[1], Instant::now());
            core.on_echo(&msgs[0], Instant::now());
            core.on_echo(&msgs[2], Instant::now());
            let r = core.finish(false);
            assert_eq!(r.counters.order_errors, expected, "{rule:?}");
            assert_eq!(r.received, 3);
        }
    }

    #[test]
    fn corruption_duplicates_and_foreign_phases_are_caught() {
        let mut core = ClientCore::new(0, 64, 2, OrderRule::Increasing);
        core.begin(plan(60));
        let msgs = send(&mut core, 2);
        let mut bad = msgs[0].clone();
        bad[40] ^= 0xFF;
        assert_eq!(core.on_echo(&bad, Instant::now()), Next::Send);
        core.on_echo(&msgs[1], Instant::now());
        core.on_echo(&msgs[1], Instant::now()); // duplicate: no slot any more
        let mut warm = msgs[1].clone();
        warm[3] = 0;
        core.on_echo(&warm, Instant::now());
        let r = core.finish(true);
        assert_eq!(r.counters.content_errors, 1);
        assert_eq!(r.counters.unexpected_messages, 1);
        assert_eq!(r.other_phase_unexpected, 1);
        assert_eq!(r.received, 1);
    }

    #[test]
    fn expiry_and_finish_account_for_every_message() {
        let mut core = ClientCore::new(0, 16, 8, OrderRule::Increasing);
        core.begin(plan(60));
        let msgs = send(&mut core, 8);
        core.on_echo(&msgs[0], Instant::now());
        assert_eq!(
            core.expire(
                Instant::now() + Duration::from_secs(1),
                Duration::from_millis(10)
            ),
            7
        );
        let r = core.finish(true);
        assert_eq!(r.sent - r.received, r.counters.udp_lost_messages);
    }

    #[test]
    fn an_echo_within_one_more_timeout_is_late_not_lost_and_later_ones_stay_lost() {
        let timeout = Duration::from_millis(100);
        let mut core = ClientCore::new(0, 16, 2, OrderRule::Increasing);
        core.begin(plan(60));
        let msgs = send(&mut core, 2);
        let t0 = Instant::now();
        // Both given up; the window refills, and the refill's echo comes first.
        assert_eq!(core.expire(t0 + timeout, timeout), 2);
        let refill = send(&mut core, 1);
        core.on_echo(&refill[0], t0 + timeout);
        assert!(
            core.has_traffic(t0 + timeout),
            "the late horizon keeps the phase open"
        );
        // Message 0 comes back half a timeout after it was given up: late, not lost, not
        // out of order; its round trip is timed from its send.
        assert_eq!(core.on_echo(&msgs[0], t0 + timeout * 3 / 2), Next::Wait);
        // Message 1 is forgotten a timeout after it was given up: its echo is unexpected.
        core.expire(t0 + timeout * 2, timeout);
        core.on_echo(&msgs[1], t0 + timeout * 2);
        let r = core.finish(true);
        assert_eq!((r.sent, r.received, r.late), (3, 2, 1));
        assert_eq!(r.counters.udp_lost_messages, 1);
        assert_eq!(r.sent - r.received, r.counters.udp_lost_messages);
        assert_eq!(r.counters.order_errors, 0);
        assert_eq!(r.counters.unexpected_messages, 1);
        assert!(r.histogram.unwrap().max() >= (timeout * 3 / 2).as_nanos() as u64 * 99 / 100);
    }

    #[test]
    fn a_lost_datagram_never_evicts_a_message_still_in_flight() {
        let mut core = ClientCore::new(0, 16, 4, OrderRule::Increasing);
        core.begin(plan(60));
        let msgs = send(&mut core, 4);
        // Sequence 1 comes back first; 0, 2 and 3 are still out. The refill must not take
        // slot 0 (sequence 4's natural slot), which still holds sequence 0.
        core.on_echo(&msgs[1], Instant::now());
        let refill = send(&mut core, 1);
        for m in [&msgs[0], &msgs[2], &msgs[3], &refill[0]] {
            core.on_echo(m, Instant::now());
        }
        let r = core.finish(true);
        assert_eq!((r.sent, r.received), (5, 5));
        assert_eq!(r.counters.unexpected_messages, 0);
        assert_eq!(r.counters.udp_lost_messages, 0);
    }

    #[test]
    fn echoes_after_the_deadline_are_drain_not_interval() {
        let mut core = ClientCore::new(0, 16, 1, OrderRule::Strict);
        let mut p = plan(60);
        p.deadline = Instant::now();
        core.begin(p);
        let msgs = send(&mut core, 1);
        assert_eq!(
            core.on_echo(&msgs[0], Instant::now() + Duration::from_millis(1)),
            Next::Wait
        );
        let r = core.finish(false);
        assert_eq!((r.received, r.in_interval), (1, 0));
    }
}
