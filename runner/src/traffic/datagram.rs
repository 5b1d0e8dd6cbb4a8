//! UDP echo: one datagram per message, connected client sockets, a per-message timeout.
//!
//! An echo that has not come back after `--udp-timeout-ms` is counted in `udp_lost_messages`
//! and its slot is refilled (before the deadline) or freed (after it), so loss never shrinks
//! the window for good and a run never waits for an echo that will not come. A loss is
//! declared between 1 and 1.25 timeouts after its send. The check runs when the orchestrator rings the client's
//! [`Alarm`], every quarter timeout (at most every 250 ms, so that a timeout longer than the
//! drain still lets the drain limit end the phase).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::UdpSocket;

use crate::instruments::alarm::Alarm;
use crate::instruments::counters::{ServerEvent, ServerStats};
use crate::measure::phase::{ClientReport, PhaseClient, PhasePlan};
use crate::traffic::client::{ClientCore, ClientShape, Next, OrderRule};
use crate::traffic::fault::{Action, FaultInjector};
use crate::traffic::pacing::{self, Pacer};
use crate::traffic::stream::ServerDuty;
use crate::traffic::work;

/// Receive buffers are larger than any datagram so an oversized echo shows as a size error.
pub const RECV_BUF: usize = 65_536;

/// One UDP client socket.
pub struct UdpClient {
    socket: UdpSocket,
    core: ClientCore,
    send_buf: Vec<u8>,
    recv_buf: Vec<u8>,
    timeout: Duration,
    alarm: Arc<Alarm>,
    /// Open loop: waits for the client's next due message.
    pacer: Option<Pacer>,
    broken: bool,
}

impl UdpClient {
    /// A client on `socket`; open-loop clients wait for their due messages on `pacer`.
    pub fn new(
        socket: UdpSocket,
        index: usize,
        shape: ClientShape,
        timeout: Duration,
        (alarm, pacer): (Arc<Alarm>, Option<Pacer>),
    ) -> Self {
        Self {
            socket,
            core: shape.core(index, OrderRule::Increasing),
            send_buf: Vec::with_capacity(shape.payload),
            recv_buf: vec![0; RECV_BUF],
            timeout,
            alarm,
            pacer,
            broken: false,
        }
    }

    /// Open loop: sends every message that is due and has a slot.
    async fn send_pass(&mut self, now: Instant) {
        while self.core.due(now) && !self.broken {
            self.send_next(now).await;
        }
        self.core.end_pass();
    }

    async fn send_next(&mut self, now: Instant) {
        self.send_buf.clear();
        self.core.write_next(&mut self.send_buf, now);
        match self.socket.send(&self.send_buf).await {
            Ok(n) if n == self.send_buf.len() => {}
            Ok(_) => self.core.counters().client_send_completion_errors += 1,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                self.core.counters().disconnect_errors += 1;
                self.broken = true;
            }
            Err(_) => self.core.counters().client_send_rejections += 1,
        }
    }
}

impl PhaseClient for UdpClient {
    async fn run_phase(&mut self, plan: PhasePlan) -> ClientReport {
        self.core.begin(plan);
        if self.broken {
            self.core.counters().disconnect_errors += 1;
            return self.core.finish(true);
        }
        let now = Instant::now();
        let open = self.core.is_open_loop();
        if open {
            self.send_pass(now).await;
        } else {
            for _ in 0..self.core.window() {
                self.send_next(now).await;
            }
        }
        // Loss checks and the drain limit run when the orchestrator rings the alarm.
        let alarm = self.alarm.clone();
        let mut seen = alarm.rings();
        while (self.core.in_flight() > 0 || self.core.schedule_pending(Instant::now()))
            && !self.broken
        {
            let wake = self.core.next_wake(Instant::now());
            tokio::select! {
                biased;
                _ = pacing::until(self.pacer.as_mut(), wake), if wake.is_some() => {
                    self.send_pass(Instant::now()).await;
                },
                r = self.socket.recv(&mut self.recv_buf) => match r {
                    Ok(n) => {
                        alarm.progressed();
                        let now = Instant::now();
                        if self.core.on_echo(&self.recv_buf[..n], now) == Next::Send {
                            self.send_next(now).await;
                        } else if open {
                            self.send_pass(now).await;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                        self.core.counters().disconnect_errors += 1;
                        self.broken = true;
                    }
                    Err(_) => self.core.counters().unexpected_messages += 1,
                },
                rung = alarm.after(seen) => {
                    seen = rung;
                    let now = Instant::now();
                    if now >= plan.drain_limit {
                        self.core.counters().drain_timeouts += 1;
                        break;
                    }
                    let freed = self.core.expire(now, self.timeout);
                    if open {
                        self.send_pass(now).await;
                    } else if self.core.may_send(now) {
                        for _ in 0..freed {
                            self.send_next(now).await;
                        }
                    }
                }
            }
        }
        self.core.finish(true)
    }
}

/// Serves one server socket: each intact datagram is echoed to its sender after the
/// synthetic work. Runs until the task is cancelled.
pub async fn serve(socket: UdpSocket, duty: ServerDuty) {
    let mut buf = vec![0u8; RECV_BUF];
    let mut server = DatagramServer::new(duty);
    loop {
        let (n, peer) = match socket.recv_from(&mut buf).await {
            Ok(r) => r,
            // ICMP errors from a client that already closed surface here; keep serving.
            Err(_) => continue,
        };
        if let Some(stall) = server.stall() {
            tokio::time::sleep(stall).await;
        }
        let message = &mut buf[..n];
        let Reply::Echo { phase, then } = server.on_datagram(message, peer) else {
            continue;
        };
        server.sent(phase, socket.send_to(message, peer).await, message.len());
        if let Some((late, to)) = then {
            server.sent(phase, socket.send_to(&late, to).await, late.len());
        }
    }
}

/// The runtime-independent half of a UDP server task: counting, work and faults per
/// datagram. Every backend's IO loop receives, asks [`Self::on_datagram`] what to send and
/// reports each send to [`Self::sent`].
pub struct DatagramServer {
    duty: ServerDuty,
    faults: FaultInjector,
    held: Option<(Vec<u8>, SocketAddr)>,
}

/// What to send after a datagram arrived.
pub enum Reply {
    /// Nothing (foreign, malformed, or dropped or held by a fault).
    Nothing,
    /// Echo the datagram (in place, after the work) to its sender, then `then` if any (a
    /// message a fault held back for this peer).
    Echo {
        phase: u8,
        then: Option<(Vec<u8>, SocketAddr)>,
    },
}

impl DatagramServer {
    /// A server side with no datagram held.
    pub fn new(duty: ServerDuty) -> Self {
        Self {
            faults: FaultInjector::new(duty.fault),
            duty,
            held: None,
        }
    }

    /// A `stall` fault: how long to stop answering now, if at all.
    pub fn stall(&mut self) -> Option<Duration> {
        self.faults.stall(Instant::now())
    }

    /// Counts `message` from `peer`, runs the work on it and says what to send.
    pub fn on_datagram(&mut self, message: &mut [u8], peer: SocketAddr) -> Reply {
        let Some(phase) = self.duty.admit(message) else {
            return Reply::Nothing;
        };
        work::run(self.duty.work_rounds, message);
        match self.faults.on_message(message) {
            Action::Drop => return Reply::Nothing,
            Action::Delay if self.held.is_none() => {
                self.held = Some((message.to_vec(), peer));
                return Reply::Nothing;
            }
            _ => {}
        }
        Reply::Echo {
            phase,
            then: self.held.take_if(|(_, to)| *to == peer),
        }
    }

    /// Counts the outcome of sending `len` bytes in `phase`.
    pub fn sent(&self, phase: u8, result: std::io::Result<usize>, len: usize) {
        let stats: &ServerStats = &self.duty.stats;
        match result {
            Ok(sent) if sent == len => {}
            Ok(_) => stats.count(phase, ServerEvent::SendShort),
            Err(_) => stats.count(phase, ServerEvent::SendRejected),
        }
    }
}
