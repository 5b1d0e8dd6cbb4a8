//! Datagram echo: one datagram per message, a per-message timeout. The client runs on a
//! connected UDP socket (`udp`) or a QUIC connection's datagrams (`quic-datagram`), both
//! through [`DatagramSocket`].
//!
//! An echo that has not come back after `--udp-timeout-ms` is counted in `udp_lost_messages`
//! and its slot is refilled (before the deadline) or freed (after it), so loss never shrinks
//! the window for good and a run never waits for an echo that will not come. A loss is
//! declared between 1 and 1.25 timeouts after its send; an echo that still comes within one
//! more timeout was late, not lost (`udp_late_messages`, see [`ClientCore::expire`]). The
//! check runs when the orchestrator rings the client's [`Alarm`], every quarter timeout (at
//! most every 250 ms, so that a timeout longer than the drain still lets the drain limit end
//! the phase).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::UdpSocket;

use crate::instruments::alarm::Alarm;
use crate::instruments::counters::{ServerEvent, ServerStats};
use crate::traffic::client::{ClientCore, ClientShape, Next, OrderRule};
use crate::traffic::fault::{Action, FaultInjector};
use crate::traffic::mmsg::{self, RecvBatch};
use crate::traffic::pacing::{self, Pacer};
use crate::traffic::phase::{ClientReport, PhaseClient, PhasePlan};
use crate::traffic::stream::ServerDuty;
use crate::traffic::work;

/// Receive buffers are larger than any datagram so an oversized echo shows as a size error.
pub const RECV_BUF: usize = 65_536;

/// What a datagram client sends its messages on and receives its echoes from.
pub trait DatagramSocket: Send + Sync + 'static {
    /// Sends one message as one datagram, returning the bytes sent.
    fn send(&self, message: &[u8]) -> impl Future<Output = std::io::Result<usize>> + Send;
    /// Receives one echo into `into`, returning its length. A peer that is gone fails with
    /// a kind [`is_disconnect`] recognises.
    fn recv(&self, into: &mut [u8]) -> impl Future<Output = std::io::Result<usize>> + Send;
    /// `--udp-batch`: sends `out` in as few system calls as the socket allows (with
    /// `segmented`, runs of one size as GSO sends).
    fn send_batch(
        &self,
        out: &[&[u8]],
        segmented: bool,
    ) -> impl Future<Output = Vec<std::io::Result<usize>>> + Send {
        let _ = segmented;
        async move {
            let mut outcomes = Vec::with_capacity(out.len());
            for message in out {
                outcomes.push(self.send(message).await);
            }
            outcomes
        }
    }
    /// `--udp-batch`: receives every queued echo into `batch`, returning how many (only a
    /// UDP socket batches; the case refuses `--udp-batch` elsewhere).
    fn recv_batch(
        &self,
        batch: &mut RecvBatch,
    ) -> impl Future<Output = std::io::Result<usize>> + Send {
        let _ = batch;
        std::future::ready(Err(std::io::ErrorKind::Unsupported.into()))
    }
}

impl DatagramSocket for UdpSocket {
    fn send(&self, message: &[u8]) -> impl Future<Output = std::io::Result<usize>> + Send {
        UdpSocket::send(self, message)
    }
    fn recv(&self, into: &mut [u8]) -> impl Future<Output = std::io::Result<usize>> + Send {
        UdpSocket::recv(self, into)
    }
    async fn send_batch(&self, out: &[&[u8]], segmented: bool) -> Vec<std::io::Result<usize>> {
        let out: Vec<(&[u8], Option<SocketAddr>)> = out.iter().map(|b| (*b, None)).collect();
        mmsg::send(self, &out, segmented).await
    }
    fn recv_batch(
        &self,
        batch: &mut RecvBatch,
    ) -> impl Future<Output = std::io::Result<usize>> + Send {
        batch.recv(self)
    }
}

/// Whether `e` says the peer is gone (an ICMP port unreachable on UDP, a closed QUIC
/// connection): the client stops instead of counting every later call.
pub fn is_disconnect(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::ConnectionReset
    )
}

/// One datagram client: a UDP socket, or a QUIC connection's datagrams.
pub struct UdpClient<S = UdpSocket> {
    socket: S,
    core: ClientCore,
    send_buf: Vec<u8>,
    recv_buf: Vec<u8>,
    /// `--udp-batch N`: echoes are received N at a time, and the messages they free sent
    /// together; `None` for one datagram per system call.
    batch: Option<RecvBatch>,
    /// The messages of one batched send.
    batch_out: Vec<Vec<u8>>,
    timeout: Duration,
    alarm: Arc<Alarm>,
    /// Open loop: waits for the client's next due message.
    pacer: Option<Pacer>,
    broken: bool,
}

impl<S: DatagramSocket> UdpClient<S> {
    /// A client on `socket`; open-loop clients wait for their due messages on `pacer`.
    pub fn new(
        socket: S,
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
            batch: None,
            batch_out: Vec::new(),
            timeout,
            alarm,
            pacer,
            broken: false,
        }
    }

    /// Receives and sends up to `batching.datagrams` datagrams per system call
    /// (`--udp-batch`), segmented and coalesced by the kernel with `--udp-gso` (the
    /// socket [`mmsg::Batching::prepare`]d).
    pub fn batched(mut self, batching: mmsg::Batching) -> Self {
        self.batch = Some(RecvBatch::new(
            batching.datagrams,
            RECV_BUF,
            batching.segmented,
        ));
        self
    }

    /// Closed loop, batched: the next `count` messages in one `sendmmsg` (or as few as the
    /// kernel takes), each counted as [`Self::send_next`] counts one.
    async fn send_many(&mut self, count: usize, now: Instant) {
        if self.batch.is_none() || count == 1 {
            for _ in 0..count {
                self.send_next(now).await;
            }
            return;
        }
        self.batch_out.resize_with(count, Vec::new);
        for buf in &mut self.batch_out[..count] {
            buf.clear();
            self.core.write_next(buf, now);
        }
        let out: Vec<&[u8]> = self.batch_out[..count].iter().map(Vec::as_slice).collect();
        let segmented = self.batch.as_ref().is_some_and(RecvBatch::segmented);
        let outcomes = self.socket.send_batch(&out, segmented).await;
        for (i, outcome) in outcomes.into_iter().enumerate() {
            let len = self.batch_out[i].len();
            self.count_send(outcome, len);
        }
    }

    /// Counts the outcome of sending one message of `len` bytes.
    fn count_send(&mut self, outcome: std::io::Result<usize>, len: usize) {
        match outcome {
            Ok(n) if n == len => {}
            Ok(_) => self.core.counters().client_send_completion_errors += 1,
            Err(e) if is_disconnect(&e) => {
                self.core.counters().disconnect_errors += 1;
                self.broken = true;
            }
            Err(_) => self.core.counters().client_send_rejections += 1,
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
        let outcome = self.socket.send(&self.send_buf).await;
        self.count_send(outcome, self.send_buf.len());
    }
}

impl<S: DatagramSocket> PhaseClient for UdpClient<S> {
    async fn run_phase(&mut self, plan: PhasePlan) -> ClientReport {
        if let Some(report) = self.core.begin_unless_broken(plan, self.broken, true) {
            return report;
        }
        let now = Instant::now();
        let open = self.core.is_open_loop();
        if open {
            self.send_pass(now).await;
        } else {
            self.send_many(self.core.window(), now).await;
        }
        // Loss checks and the drain limit run when the orchestrator rings the alarm.
        let alarm = self.alarm.clone();
        let mut seen = alarm.rings();
        while self.core.has_traffic(Instant::now()) && !self.broken {
            let wake = self.core.next_wake(Instant::now());
            tokio::select! {
                biased;
                _ = pacing::until(self.pacer.as_mut(), wake), if wake.is_some() => {
                    self.send_pass(Instant::now()).await;
                },
                r = receive(&self.socket, &mut self.recv_buf, self.batch.as_mut()) => match r {
                    Ok((count, len)) => {
                        alarm.progressed();
                        let now = Instant::now();
                        let mut freed = 0;
                        for i in 0..count {
                            let echo = match &self.batch {
                                Some(batch) => batch.get(i).0,
                                None => &self.recv_buf[..len],
                            };
                            if self.core.on_echo(echo, now) == Next::Send {
                                freed += 1;
                            }
                        }
                        if freed > 0 {
                            self.send_many(freed, now).await;
                        } else if open {
                            self.send_pass(now).await;
                        }
                    }
                    Err(e) if is_disconnect(&e) => {
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

/// One echo into `one`, or as many as are queued into `batch`: how many arrived, and the
/// length of the one in `one` (0 when batched).
async fn receive<S: DatagramSocket>(
    socket: &S,
    one: &mut [u8],
    batch: Option<&mut RecvBatch>,
) -> std::io::Result<(usize, usize)> {
    match batch {
        Some(batch) => Ok((socket.recv_batch(batch).await?, 0)),
        None => Ok((1, socket.recv(one).await?)),
    }
}

/// `--udp-batch N`: [`serve`] with the datagrams queued on the socket received up to N per
/// `recvmmsg`, and their echoes (in arrival order, a held-back one right after the echo it
/// follows) sent per `sendmmsg`; with `--udp-gso` the kernel coalesces and segments runs
/// of one client's datagrams (the socket [`mmsg::Batching::prepare`]d).
pub async fn serve_batched(socket: UdpSocket, duty: ServerDuty, batching: mmsg::Batching) {
    let mut incoming = RecvBatch::new(batching.datagrams, RECV_BUF, batching.segmented);
    let mut server = DatagramServer::new(duty);
    loop {
        let Ok(count) = incoming.recv(&socket).await else {
            // ICMP errors from a client that already closed surface here; keep serving.
            continue;
        };
        if let Some(stall) = server.stall() {
            tokio::time::sleep(stall).await;
        }
        // What to send: (datagram index or a held-back message, peer, phase).
        let mut replies: Vec<(Result<usize, Vec<u8>>, SocketAddr, u8)> = Vec::new();
        for i in 0..count {
            let (message, Some(peer)) = incoming.get_mut(i) else {
                continue;
            };
            if let Reply::Echo { phase, then } = server.on_datagram(message, peer) {
                replies.push((Ok(i), peer, phase));
                if let Some((late, to)) = then {
                    replies.push((Err(late), to, phase));
                }
            }
        }
        let out: Vec<(&[u8], Option<SocketAddr>)> = replies
            .iter()
            .map(|(what, to, _)| {
                let bytes = match what {
                    Ok(i) => incoming.get(*i).0,
                    Err(late) => late.as_slice(),
                };
                (bytes, Some(*to))
            })
            .collect();
        let outcomes = mmsg::send(&socket, &out, batching.segmented).await;
        for ((outcome, (bytes, _)), (_, _, phase)) in outcomes.into_iter().zip(&out).zip(&replies) {
            server.sent(*phase, outcome, bytes.len());
        }
    }
}

/// The task that serves one server socket, one datagram per system call or batched (the
/// socket [`mmsg::Batching::prepare`]d here).
pub fn server_task(
    socket: UdpSocket,
    duty: ServerDuty,
    batching: Option<mmsg::Batching>,
) -> std::io::Result<std::pin::Pin<Box<dyn Future<Output = ()> + Send>>> {
    Ok(match batching {
        Some(batching) => {
            batching.prepare(&socket)?;
            Box::pin(serve_batched(socket, duty, batching))
        }
        None => Box::pin(serve(socket, duty)),
    })
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
    /// Nothing (foreign or malformed).
    Nothing,
    /// Nothing: a `drop` fault swallowed the message.
    Dropped,
    /// Nothing yet: a `delay` fault holds the message back, to go after the peer's next echo
    /// (`then`).
    Held,
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
            Action::Drop => return Reply::Dropped,
            Action::Delay if self.held.is_none() => {
                self.held = Some((message.to_vec(), peer));
                return Reply::Held;
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
