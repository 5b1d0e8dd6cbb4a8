//! Stream echo on tokio: one TCP connection per client, TCP_NODELAY on both ends, messages
//! framed by any [`Framing`] (`tcp`, `tcps`: length prefix; `http`, `https`: pipelined
//! HTTP/1.1; `websocket`, `wss`: RFC 6455 frames).
//!
//! The client task never blocks on a write while echoes wait to be read (read and write halves
//! are polled together), so large windows cannot deadlock against the server. Reads go through
//! `AsyncRead`, whose short reads clear readiness, so a 1 × 1 round trip costs one read and one
//! write system call per side.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::case::Fault;
use crate::framing::{Framing, RecvBuf};
use crate::instruments::alarm::Alarm;
use crate::instruments::counters::{ServerEvent, ServerStats};
use crate::message::{self, MAX_PAYLOAD};
use crate::traffic::client::{ClientCore, ClientShape, Next, OrderRule};
use crate::traffic::connect::Conn;
use crate::traffic::connect::ServerConn;
use crate::traffic::fault::{Action, FaultInjector};
use crate::traffic::pacing::{self, Pacer};
use crate::traffic::phase::{ClientReport, PhaseClient, PhasePlan};
use crate::traffic::work;

/// A server reads into a buffer sized for a quarter of the largest message at first.
const SERVER_RECV_FRAME: usize = MAX_PAYLOAD / 4;
/// A server's output buffer starts at this size.
const SERVER_OUT_CAPACITY: usize = 64 * 1024;

/// Everything of a stream client except its connection; no IO happens here, so every
/// backend's IO loop drives the same session.
pub struct Session<F> {
    pub core: ClientCore,
    pub recv: RecvBuf,
    /// Framed messages not yet written.
    pub out: Vec<u8>,
    payload: usize,
    framing: F,
    pub alarm: Arc<Alarm>,
    /// Open loop: waits for the client's next due message.
    pacer: Option<Pacer>,
    /// The connection failed; the client sits out every later phase.
    pub broken: bool,
}

/// One stream client connection.
pub struct StreamClient<F> {
    conn: Conn,
    session: Session<F>,
}

impl<F: Framing> StreamClient<F> {
    /// A client on `conn`, which has completed any TLS and WebSocket handshake; open-loop
    /// clients wait for their due messages on `pacer`.
    pub fn new(
        conn: Conn,
        index: usize,
        shape: ClientShape,
        framing: F,
        (alarm, pacer): (Arc<Alarm>, Option<Pacer>),
    ) -> Self {
        Self {
            conn,
            session: Session::new(index, shape, framing, (alarm, pacer)),
        }
    }
}

impl<F> StreamClient<F> {
    /// Bytes the server sent before the first phase (right after a WebSocket `101`): they
    /// are the start of what this client receives.
    pub fn received_early(&mut self, bytes: &[u8]) {
        self.session.recv.preload(bytes);
    }
}

impl<F: Framing> Session<F> {
    /// Client `index`'s session with empty buffers.
    pub fn new(
        index: usize,
        shape: ClientShape,
        framing: F,
        (alarm, pacer): (Arc<Alarm>, Option<Pacer>),
    ) -> Self {
        let frame = shape.payload + framing.max_head();
        Session {
            core: shape.core(index, OrderRule::Strict),
            recv: RecvBuf::new(frame),
            out: Vec::with_capacity(shape.window * frame),
            payload: shape.payload,
            framing,
            alarm,
            pacer,
            broken: false,
        }
    }

    /// Opens a phase: queues the first window (closed loop) or the first due messages (open
    /// loop). A client whose connection broke earlier cannot take part: its report comes
    /// back at once.
    pub fn start_phase(&mut self, plan: PhasePlan) -> Option<ClientReport> {
        if let Some(report) = self.core.begin_unless_broken(plan, self.broken, false) {
            return Some(report);
        }
        let now = Instant::now();
        self.out.clear();
        if self.core.is_open_loop() {
            self.send_pass(now);
        } else {
            for _ in 0..self.core.window() {
                self.queue_next(now);
            }
        }
        None
    }

    fn queue_next(&mut self, now: Instant) {
        let core = &mut self.core;
        self.framing
            .encode(&mut self.out, self.payload, |out| core.write_next(out, now));
    }

    /// Open loop: queues every message that is due and has a slot.
    pub fn send_pass(&mut self, now: Instant) {
        while self.core.due(now) {
            self.queue_next(now);
        }
        self.core.end_pass();
    }

    /// Judges every whole echo in the receive buffer, queueing a new message per freed slot
    /// (closed loop) or running a send pass after them (open loop), and a pong per WebSocket
    /// ping; false when the stream is corrupt or the server sent a WebSocket close.
    pub fn take_echoes(&mut self, now: Instant) -> bool {
        loop {
            match self.recv.next_frame(&self.framing) {
                Ok(Some(range)) => {
                    let next = self.core.on_echo(&self.recv.bytes_mut()[range], now);
                    if next == Next::Send {
                        self.queue_next(now);
                    }
                }
                Ok(None) => {
                    let controls = self.recv.controls();
                    if controls.owed() {
                        self.framing.answer_controls(&mut self.out, controls);
                    }
                    if controls.peer_closed() {
                        self.core.counters().disconnect_errors += 1;
                        return false;
                    }
                    if self.core.is_open_loop() {
                        self.send_pass(now);
                    }
                    return true;
                }
                Err(_) => {
                    self.core.counters().content_errors += 1;
                    return false;
                }
            }
        }
    }

    /// Moves bytes both ways until nothing is in flight, the stream breaks or the drain limit.
    async fn exchange<R, W>(&mut self, plan: PhasePlan, rd: &mut R, wr: &mut W)
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let alarm = self.alarm.clone();
        let mut seen = alarm.rings();
        let mut written = 0usize;
        loop {
            let idle = self.core.in_flight() == 0 && written == self.out.len();
            if idle && !self.core.schedule_pending(Instant::now()) {
                break;
            }
            let pending_out = written < self.out.len();
            let wake = self.core.next_wake(Instant::now());
            let pacer = self.pacer.as_mut();
            tokio::select! {
                biased;
                _ = pacing::until(pacer, wake), if wake.is_some() => {
                    self.send_pass(Instant::now());
                },
                r = wr.write(&self.out[written..]), if pending_out => match r {
                    Ok(n) if n > 0 => {
                        written += n;
                        if written == self.out.len() {
                            written = 0;
                            self.out.clear();
                        }
                        // TLS buffers records; push them out so the echo is not delayed.
                        if wr.flush().await.is_err() {
                            self.core.counters().client_send_rejections += 1;
                            self.broken = true;
                            break;
                        }
                    }
                    _ => {
                        self.core.counters().client_send_rejections += 1;
                        self.broken = true;
                        break;
                    }
                },
                r = rd.read(self.recv.spare()) => match r {
                    Ok(0) | Err(_) => {
                        self.core.counters().disconnect_errors += 1;
                        self.broken = true;
                        break;
                    }
                    Ok(n) => {
                        self.recv.filled(n);
                        alarm.progressed();
                        if !self.take_echoes(Instant::now()) {
                            self.broken = true;
                            break;
                        }
                    }
                },
                rung = alarm.after(seen) => {
                    seen = rung;
                    if Instant::now() >= plan.drain_limit {
                        self.core.counters().drain_timeouts += 1;
                        break;
                    }
                }
            }
        }
        if written > 0 {
            self.out.drain(..written);
        }
    }
}

impl<F: Framing> PhaseClient for StreamClient<F> {
    async fn run_phase(&mut self, plan: PhasePlan) -> ClientReport {
        let s = &mut self.session;
        if let Some(report) = s.start_phase(plan) {
            return report;
        }
        match &mut self.conn {
            Conn::Plain(stream) => {
                let (mut rd, mut wr) = stream.split();
                s.exchange(plan, &mut rd, &mut wr).await;
            }
            Conn::Tls(halves) => {
                let (rd, wr) = &mut **halves;
                s.exchange(plan, rd, wr).await;
            }
            Conn::Quic(q) => {
                let q = &mut **q;
                s.exchange(plan, &mut q.recv, &mut q.send).await;
            }
        }
        s.core.finish(false)
    }
}

/// How a server task echoes: its synthetic work, counters, fault and shutdown flag.
#[derive(Clone)]
pub struct ServerDuty {
    pub work_rounds: u64,
    pub stats: Arc<ServerStats>,
    pub fault: Option<Fault>,
    /// Set once measuring is over, so disconnects stop counting as errors.
    pub closing: Arc<AtomicBool>,
    /// `serve`: echo messages without echomark's header too (counted as foreign).
    pub echo_foreign: bool,
    /// `serve --idle-timeout`: connections that send nothing for this long are closed.
    pub idle: Option<IdleLimit>,
}

/// How long a connection may stay silent before the server closes it, and how many it
/// closed so (`serve` only: holding connections open must not be enough to exhaust it).
#[derive(Debug, Clone)]
pub struct IdleLimit {
    pub after: std::time::Duration,
    pub closed: Arc<std::sync::atomic::AtomicU64>,
}

impl IdleLimit {
    /// Counts one connection closed for silence.
    pub fn expired(&self) {
        self.closed
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Awaits `read`; `None` once `idle` passes first on the runtime's timer (`sleep`), which
/// counts as an idle close.
pub async fn within_idle<T, Sleep>(
    idle: Option<&IdleLimit>,
    read: impl std::future::Future<Output = T>,
    sleep: impl FnOnce(std::time::Duration) -> Sleep,
) -> Option<T>
where
    Sleep: std::future::Future<Output = ()>,
{
    let Some(limit) = idle else {
        return Some(read.await);
    };
    tokio::select! {
        biased;
        done = read => Some(done),
        () = sleep(limit.after) => {
            limit.expired();
            None
        }
    }
}

impl ServerDuty {
    /// Counts `message`: the phase to charge its echo to, or `None` when it must not be
    /// echoed (not echomark's, and this server is not `serve`).
    pub fn admit(&self, message: &[u8]) -> Option<u8> {
        if self.echo_foreign {
            Some(self.stats.admit_any(message))
        } else {
            self.stats.admit(message)
        }
    }
}

/// Serves one accepted connection until the peer closes it: every intact message is echoed
/// after the synthetic work; malformed ones are counted and not echoed.
pub async fn serve<S, F>(mut stream: S, duty: ServerDuty, framing: F)
where
    S: AsyncRead + AsyncWrite + Unpin,
    F: Framing,
{
    let idle = duty.idle.clone();
    let mut server = ServerSide::new(duty, framing);
    loop {
        let read = within_idle(
            idle.as_ref(),
            stream.read(server.recv.spare()),
            tokio::time::sleep,
        )
        .await;
        let n = match read {
            None | Some(Ok(0)) => break,
            Some(Ok(n)) => n,
            Some(Err(_)) => {
                server.disconnected();
                break;
            }
        };
        server.recv.filled(n);
        if let Some(stall) = server.stall() {
            tokio::time::sleep(stall).await;
        }
        let corrupt = server.answer().is_err();
        if !server.out.is_empty() {
            let written = match stream.write_all(&server.out).await {
                Ok(()) => stream.flush().await,
                failed => failed,
            };
            if let Err(e) = written {
                server.send_failed(&e);
                break;
            }
            server.out.clear();
        }
        if corrupt {
            // The refusal is the last thing sent (a TLS session's close_notify after it).
            let _ = stream.shutdown().await;
            break;
        }
        if server.peer_closed() {
            break;
        }
    }
}

/// The runtime-independent half of a stream server task: what it read, what it owes, its
/// faults; the IO loop of each backend reads into `recv`, calls [`Self::answer`] and writes
/// `out`.
pub struct ServerSide<F> {
    pub recv: RecvBuf,
    pub out: Vec<u8>,
    duty: ServerDuty,
    framing: F,
    faults: FaultInjector,
    held: Option<Vec<u8>>,
}

/// The stream is corrupt: the server writes what `out` still holds (the echoes of the
/// messages before the corrupt one, then the framing's refusal, an HTTP `400`), reads
/// nothing more and closes the connection.
#[derive(Debug)]
pub struct Corrupt;

impl<F: Framing> ServerSide<F> {
    /// A server side with empty buffers.
    pub fn new(duty: ServerDuty, framing: F) -> Self {
        Self {
            recv: RecvBuf::new(SERVER_RECV_FRAME),
            out: Vec::with_capacity(SERVER_OUT_CAPACITY),
            faults: FaultInjector::new(duty.fault),
            duty,
            framing,
            held: None,
        }
    }

    fn closing(&self) -> bool {
        self.duty.closing.load(Ordering::Relaxed)
    }

    /// The read failed (not a clean close).
    pub fn disconnected(&self) {
        if !self.closing() {
            self.duty
                .stats
                .count(message::PHASE_MEASURED, ServerEvent::Disconnected);
        }
    }

    /// Writing `out` failed with `e`. A reset or closed peer is a disconnect, whichever
    /// operation saw it first: a reset that arrives while an echo is being written fails
    /// the write and leaves the read only an end of stream, so counting it by the operation
    /// would make the count depend on timing.
    pub fn send_failed(&self, e: &std::io::Error) {
        if peer_gone(e) {
            return self.disconnected();
        }
        if !self.closing() {
            self.duty
                .stats
                .count(message::PHASE_MEASURED, ServerEvent::SendRejected);
        }
    }

    /// A `stall` fault: how long to stop answering now, if at all.
    pub fn stall(&mut self) -> Option<std::time::Duration> {
        self.faults.stall(std::time::Instant::now())
    }

    /// The peer sent a WebSocket close (answered in `out`): once `out` is written, the
    /// connection ends.
    pub fn peer_closed(&mut self) -> bool {
        self.recv.controls().peer_closed()
    }

    /// Zero-copy echo: when nothing is buffered or owed and the framing echoes a message
    /// as its own bytes, judges the whole messages at the start of `data` where they lie
    /// (counted and worked on as [`Self::answer`] does) and returns how many bytes of
    /// `data` are their echo, to be sent from `data` itself; the partial message after
    /// them is kept in `recv`. `None`, having judged nothing, when a message there is not
    /// one to echo unchanged (a corrupt or foreign one, a fault to apply): then `data`
    /// goes through `recv` and [`Self::answer`] as usual.
    pub fn answer_verbatim(&mut self, data: &mut [u8]) -> Option<usize> {
        if !self.framing.verbatim()
            || !self.recv.is_empty()
            || !self.out.is_empty()
            || self.held.is_some()
            || self.duty.fault.is_some()
        {
            return None;
        }
        // First look, judging nothing: every whole message must be one that is echoed.
        let mut end = 0;
        while let Ok(Some(head)) = self.framing.decode_head(&data[end..]) {
            let body = usize::try_from(head.body).ok()?;
            if body > MAX_PAYLOAD {
                return None;
            }
            let Some(frame) = data.get(end + head.len..end + head.len + body) else {
                break;
            };
            if !self.duty.echo_foreign && message::parse_header(frame).is_err() {
                return None;
            }
            end += head.len + body;
        }
        if self.framing.decode_head(&data[end..]).is_err() {
            return None;
        }
        let mut at = 0;
        while at < end {
            let Ok(Some(head)) = self.framing.decode_head(&data[at..end]) else {
                break;
            };
            let body = &mut data[at + head.len..at + head.len + head.body as usize];
            self.duty.admit(body);
            work::run(self.duty.work_rounds, body);
            at += head.len + head.body as usize;
        }
        self.recv.preload(&data[end..]);
        Some(end)
    }

    /// Echoes every whole message in `recv` into `out` after the synthetic work, and answers
    /// WebSocket control frames; malformed messages are counted and not echoed.
    pub fn answer(&mut self) -> Result<(), Corrupt> {
        loop {
            let range = match self.recv.next_frame(&self.framing) {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(_) => {
                    self.duty
                        .stats
                        .count(message::PHASE_WARMUP, ServerEvent::ContentError);
                    if let Some(refusal) = self.framing.refusal() {
                        self.out.extend_from_slice(refusal);
                    }
                    return Err(Corrupt);
                }
            };
            let body = &mut self.recv.bytes_mut()[range];
            if self.duty.admit(body).is_none() {
                continue;
            }
            work::run(self.duty.work_rounds, body);
            match self.faults.on_message(body) {
                Action::Drop => continue,
                Action::Delay if self.held.is_none() => {
                    self.held = Some(body.to_vec());
                    continue;
                }
                _ => {}
            }
            self.framing
                .encode(&mut self.out, body.len(), |o| o.extend_from_slice(body));
            if let Some(late) = self.held.take() {
                self.framing
                    .encode(&mut self.out, late.len(), |o| o.extend_from_slice(&late));
            }
        }
        // A delayed message with nothing after it in this batch goes out now: the client may
        // be waiting for it before it sends more.
        if let Some(late) = self.held.take() {
            self.framing
                .encode(&mut self.out, late.len(), |o| o.extend_from_slice(&late));
        }
        self.framing
            .answer_controls(&mut self.out, self.recv.controls());
        Ok(())
    }
}

/// Whether `e` says the peer reset or closed the connection (not that this end failed).
fn peer_gone(e: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        e.kind(),
        ErrorKind::ConnectionReset | ErrorKind::BrokenPipe | ErrorKind::ConnectionAborted
    )
}

/// [`serve`] on either kind of server connection.
pub async fn serve_conn<F: Framing>(conn: ServerConn, duty: ServerDuty, framing: F) {
    match conn {
        ServerConn::Plain(s) => serve(s, duty, framing).await,
        ServerConn::Tls(s) => serve(*s, duty, framing).await,
    }
}
