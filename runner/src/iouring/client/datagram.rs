//! A UDP client on a ring: a connected socket, one receive armed into its buffer, and a
//! send per message from a pool of buffers whose memory stays put until the kernel
//! completes them. Losses are declared on the same timeout and schedule as on the other
//! backends.

use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use io_uring::opcode;

use super::{push_receive, tag, RingClient, RECV, SEND};
use crate::iouring::driver::{on_target, Completion, Driver, Target, GUEST as GUEST_SENDS};
use crate::traffic::client::{ClientCore, Next};
use crate::traffic::datagram::RECV_BUF;
use crate::traffic::phase::{ClientReport, PhasePlan};

/// One UDP client.
pub struct DatagramClient {
    socket: UdpSocket,
    slot: usize,
    target: Option<Target>,
    core: ClientCore,
    recv_buf: Vec<u8>,
    recv_armed: bool,
    /// Send buffers by index: free, queued to be submitted, or in flight.
    sends: Vec<Vec<u8>>,
    free: Vec<usize>,
    queued: Vec<usize>,
    /// The loss timeout, and how often losses are looked for.
    timeout: Duration,
    tick: Duration,
    last_expiry: Instant,
    broken: bool,
    begun: bool,
    /// The last receive found a datagram (more may be queued).
    recv_full: bool,
}

impl DatagramClient {
    /// A client on `socket` (connected to its server) with `core`, losses declared after
    /// `timeout` and looked for every `tick`, asking for registered file slot `slot`.
    pub fn new(
        socket: UdpSocket,
        core: ClientCore,
        (timeout, tick): (Duration, Duration),
        slot: usize,
    ) -> Self {
        Self {
            socket,
            slot,
            target: None,
            core,
            recv_buf: vec![0; RECV_BUF],
            recv_armed: false,
            sends: Vec::new(),
            free: Vec::new(),
            queued: Vec::new(),
            timeout,
            tick,
            last_expiry: Instant::now(),
            broken: false,
            begun: false,
            recv_full: false,
        }
    }

    /// Frames the next message into a free send buffer, queued for the end of the turn.
    fn queue_next(&mut self, now: Instant) {
        let index = self.free.pop().unwrap_or_else(|| {
            self.sends.push(Vec::with_capacity(RECV_BUF));
            self.sends.len() - 1
        });
        let buf = &mut self.sends[index];
        buf.clear();
        self.core.write_next(buf, now);
        self.queued.push(index);
    }

    /// Open loop: queues every message that is due and has a slot.
    fn send_pass(&mut self, now: Instant) {
        while self.core.due(now) && !self.broken {
            self.queue_next(now);
        }
        self.core.end_pass();
    }

    /// Its socket's target on `driver`'s ring, registered on first use.
    fn target(&mut self, driver: &mut Driver) -> Target {
        *self
            .target
            .get_or_insert_with(|| driver.register(self.slot, self.socket.as_raw_fd()))
    }

    fn refused(e: i32) -> bool {
        matches!(e, libc::ECONNREFUSED | libc::ECONNRESET)
    }
}

impl RingClient for DatagramClient {
    fn start(&mut self, plan: PhasePlan, now: Instant) -> Option<ClientReport> {
        if let Some(report) = self.core.begin_unless_broken(plan, self.broken, true) {
            return Some(report);
        }
        self.begun = true;
        self.last_expiry = now;
        if self.core.is_open_loop() {
            self.send_pass(now);
        } else {
            for _ in 0..self.core.window() {
                self.queue_next(now);
            }
        }
        None
    }

    fn complete(&mut self, kind: u64, op: usize, c: Completion, data: Option<&[u8]>, now: Instant) {
        match kind {
            RECV => {
                self.recv_armed = data.is_some() && c.more();
                self.recv_full = false;
                if matches!(-c.result, libc::ENOBUFS | libc::EAGAIN) {
                    // The clients' buffer ring was empty, or (paired) nothing had come yet:
                    // armed again at the end of the turn, or after the server's next sends.
                } else if c.result >= 0 {
                    if !self.begun {
                        return;
                    }
                    let echo = match data {
                        Some(bytes) => bytes,
                        None => &self.recv_buf[..(c.result as usize).min(RECV_BUF)],
                    };
                    let next = self.core.on_echo(echo, now);
                    // More echoes may be queued only while messages are still out.
                    self.recv_full = self.core.in_flight() > 0;
                    if next == Next::Send {
                        self.queue_next(now);
                    }
                } else if Self::refused(-c.result) {
                    if !self.broken && self.begun {
                        self.core.counters().disconnect_errors += 1;
                    }
                    self.broken = true;
                } else if self.begun {
                    self.core.counters().unexpected_messages += 1;
                }
            }
            SEND => {
                let len = self.sends.get(op).map_or(0, Vec::len);
                self.free.push(op);
                match c.result {
                    n if n >= 0 && n as usize == len => {}
                    n if n >= 0 => self.core.counters().client_send_completion_errors += 1,
                    e if Self::refused(-e) => {
                        if !self.broken {
                            self.core.counters().disconnect_errors += 1;
                        }
                        self.broken = true;
                    }
                    _ => self.core.counters().client_send_rejections += 1,
                }
            }
            _ => {}
        }
    }

    fn send(&mut self, driver: &mut Driver, me: usize) -> std::io::Result<()> {
        if self.broken {
            self.queued.clear();
            return Ok(());
        }
        let target = self.target(driver);
        for i in 0..self.queued.len() {
            let index = self.queued[i];
            let buf = &self.sends[index];
            let entry = on_target!(target, |file| opcode::Send::new(
                file,
                buf.as_ptr(),
                buf.len() as u32
            )
            .build());
            // SAFETY: a queued buffer is neither touched nor freed until its send completes.
            unsafe { driver.push_quiet(entry.user_data(tag(SEND, index, me))) }?;
            driver.sending(GUEST_SENDS);
        }
        self.queued.clear();
        Ok(())
    }

    fn receive(
        &mut self,
        driver: &mut Driver,
        me: usize,
        group: Option<u16>,
        now: bool,
    ) -> std::io::Result<()> {
        if self.broken || self.recv_armed {
            return Ok(());
        }
        let target = self.target(driver);
        let buf = &mut self.recv_buf;
        // SAFETY: the receive buffer is not touched until this receive completes and lives
        // as long as the client, which the shard drops after its ring.
        unsafe { push_receive(driver, (target, me), group, buf, now) }?;
        self.recv_armed = true;
        Ok(())
    }

    fn wants_receive(&self, peer_sending: bool) -> bool {
        !self.recv_armed && !self.broken && (peer_sending || self.recv_full)
    }

    fn tick(&mut self, now: Instant) {
        if self.broken {
            return;
        }
        if now.saturating_duration_since(self.last_expiry) >= self.tick {
            self.last_expiry = now;
            let freed = self.core.expire(now, self.timeout);
            if !self.core.is_open_loop() && self.core.may_send(now) {
                for _ in 0..freed {
                    self.queue_next(now);
                }
            }
        }
        if self.core.is_open_loop() {
            self.send_pass(now);
        }
    }

    fn done(&self, now: Instant) -> bool {
        self.broken || !self.core.has_traffic(now)
    }

    fn finish(&mut self, drain_timeout: bool) -> ClientReport {
        if drain_timeout {
            self.core.counters().drain_timeouts += 1;
        }
        self.core.finish(true)
    }

    fn buffer_size(&self) -> usize {
        RECV_BUF
    }

    fn timed(&self) -> bool {
        true
    }

    fn due(&self, now: Instant) -> Option<Instant> {
        self.core.next_wake(now)
    }

    fn wake(&self, now: Instant) -> Option<Instant> {
        let expiry = self.last_expiry + self.tick;
        Some(self.core.next_wake(now).map_or(expiry, |w| w.min(expiry)))
    }
}
