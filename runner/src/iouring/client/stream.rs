//! A stream client on a ring (TCP with any framing, HTTP, WebSocket): one receive armed
//! straight into its session's buffer, one send in flight with what the session framed.

use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::Instant;

use io_uring::opcode;

use super::{push_receive, tag, RingClient, RECV, SEND};
use crate::framing::Framing;
use crate::iouring::driver::{on_target, Completion, Driver, Target, GUEST as GUEST_SENDS};
use crate::traffic::phase::{ClientReport, PhasePlan};
use crate::traffic::stream::Session;

/// Bytes a multishot receive takes at most.
const STREAM_BUFFER: usize = 16 * 1024;

/// One stream client.
pub struct StreamClient<F> {
    socket: TcpStream,
    /// The registered file slot it asks for; its target once registered.
    slot: usize,
    target: Option<Target>,
    session: Session<F>,
    recv_armed: bool,
    /// The bytes of the send in flight, how many the kernel took, and whether the rest
    /// waits to be submitted.
    sending: Option<Vec<u8>>,
    sent: usize,
    resend: bool,
    /// An emptied send buffer, for the next batch.
    spare: Vec<u8>,
    /// A phase began at least once: received bytes are judged from then on.
    begun: bool,
    /// How long the single-shot receive in flight may read, and whether the last one
    /// filled that (more may be waiting).
    recv_len: usize,
    recv_full: bool,
    /// The connection failed in the running phase.
    failed: bool,
}

impl<F: Framing> StreamClient<F> {
    /// A client on `socket` (connected, its handshakes done) with `session`, asking for
    /// registered file slot `slot`.
    pub fn new(socket: TcpStream, session: Session<F>, slot: usize) -> Self {
        Self {
            socket,
            slot,
            target: None,
            session,
            recv_armed: false,
            sending: None,
            sent: 0,
            resend: false,
            spare: Vec::new(),
            begun: false,
            recv_len: 0,
            recv_full: false,
            failed: false,
        }
    }

    fn break_off(&mut self) {
        self.session.broken = true;
        self.failed = true;
    }
}

impl<F> StreamClient<F> {
    /// Its socket's target on `driver`'s ring, registered on first use.
    fn target(&mut self, driver: &mut Driver) -> Target {
        *self
            .target
            .get_or_insert_with(|| driver.register(self.slot, self.socket.as_raw_fd()))
    }
}

impl<F: Framing> RingClient for StreamClient<F> {
    fn start(&mut self, plan: PhasePlan, now: Instant) -> Option<ClientReport> {
        self.failed = false;
        let report = self.session.start_phase(plan);
        if report.is_none() {
            self.begun = true;
            // Bytes that came before the phase (after a WebSocket `101`, or late echoes of
            // the last phase) are judged now.
            if !self.session.recv.is_empty() && !self.session.take_echoes(now) {
                self.break_off();
            }
        }
        report
    }

    fn complete(&mut self, kind: u64, _: usize, c: Completion, data: Option<&[u8]>, now: Instant) {
        match kind {
            RECV => {
                self.recv_armed = data.is_some() && c.more();
                self.recv_full =
                    data.is_none() && c.result > 0 && c.result as usize >= self.recv_len;
                if matches!(-c.result, libc::ENOBUFS | libc::EAGAIN) {
                    // The clients' buffer ring was empty, or (paired) nothing had come yet:
                    // armed again at the end of the turn, or after the server's next sends.
                } else if c.result > 0 {
                    match data {
                        Some(bytes) => self.session.recv.preload(bytes),
                        None => self.session.recv.filled(c.result as usize),
                    }
                    if self.begun && !self.failed && !self.session.take_echoes(now) {
                        self.break_off();
                    }
                } else if !self.session.broken {
                    // The end of the stream, or an error: a disconnect, counted in the
                    // phase it happened in (and the client sits out the later ones).
                    if self.begun {
                        self.session.core.counters().disconnect_errors += 1;
                    }
                    self.break_off();
                }
            }
            SEND => {
                let Some(batch) = self.sending.take() else {
                    return;
                };
                if c.result <= 0 {
                    if !self.session.broken {
                        self.session.core.counters().client_send_rejections += 1;
                        self.break_off();
                    }
                    return;
                }
                self.sent += c.result as usize;
                if self.sent < batch.len() {
                    self.sending = Some(batch);
                    self.resend = true;
                } else {
                    let mut batch = batch;
                    batch.clear();
                    self.spare = batch;
                }
            }
            _ => {}
        }
    }

    fn send(&mut self, driver: &mut Driver, me: usize) -> std::io::Result<()> {
        if self.session.broken {
            return Ok(());
        }
        let target = self.target(driver);
        if self.sending.is_none() && !self.session.out.is_empty() {
            let spare = std::mem::take(&mut self.spare);
            self.sending = Some(std::mem::replace(&mut self.session.out, spare));
            self.sent = 0;
            self.resend = true;
        }
        if let (true, Some(batch)) = (self.resend, &self.sending) {
            let rest = &batch[self.sent..];
            let entry = on_target!(target, |file| opcode::Send::new(
                file,
                rest.as_ptr(),
                rest.len() as u32
            )
            .flags(libc::MSG_NOSIGNAL)
            .build());
            // SAFETY: `sending` is neither touched nor dropped until this send completes.
            unsafe { driver.push_quiet(entry.user_data(tag(SEND, 0, me))) }?;
            driver.sending(GUEST_SENDS);
            self.resend = false;
        }
        Ok(())
    }

    fn receive(
        &mut self,
        driver: &mut Driver,
        me: usize,
        group: Option<u16>,
        now: bool,
    ) -> std::io::Result<()> {
        if self.session.broken || self.recv_armed {
            return Ok(());
        }
        let target = self.target(driver);
        let buf: &mut [u8] = match group {
            Some(_) => &mut [],
            None => self.session.recv.spare(),
        };
        self.recv_len = buf.len();
        // SAFETY: the receive buffer (the session's, or the clients' buffer ring) is neither
        // touched nor moved until this receive completes (it is read only after), and lives
        // as long as the client, which the shard drops after its ring.
        unsafe { push_receive(driver, (target, me), group, buf, now) }?;
        self.recv_armed = true;
        Ok(())
    }

    fn wants_receive(&self, peer_sending: bool) -> bool {
        !self.recv_armed && !self.session.broken && (peer_sending || self.recv_full)
    }

    fn tick(&mut self, now: Instant) {
        if self.session.core.is_open_loop() && !self.session.broken {
            self.session.send_pass(now);
        }
    }

    fn done(&self, now: Instant) -> bool {
        self.failed
            || self.session.broken
            || (self.session.core.in_flight() == 0
                && self.session.out.is_empty()
                && self.sending.is_none()
                && !self.session.core.schedule_pending(now))
    }

    fn finish(&mut self, drain_timeout: bool) -> ClientReport {
        if drain_timeout {
            self.session.core.counters().drain_timeouts += 1;
        }
        self.session.core.finish(false)
    }

    fn timed(&self) -> bool {
        self.session.core.is_open_loop()
    }

    fn due(&self, now: Instant) -> Option<Instant> {
        self.session.core.next_wake(now)
    }

    fn wake(&self, now: Instant) -> Option<Instant> {
        self.session.core.next_wake(now)
    }

    fn buffer_size(&self) -> usize {
        STREAM_BUFFER
    }
}
