//! Stream echo: one TCP connection per client, TCP_NODELAY on both ends, messages framed by
//! arknet's `use_dgram` length prefix (`tcp`, `tcps`), as pipelined HTTP/1.1 requests and
//! responses (`http`, `https`, see [`crate::http1`]) or as WebSocket binary frames
//! (`websocket`, `wss`, see [`crate::websocket`]).
//!
//! The client task never blocks on a write while echoes wait to be read (read and write halves
//! are polled together), so large windows cannot deadlock against the server. Reads go through
//! `AsyncRead`, whose short reads clear readiness, so a 1 × 1 round trip costs one read and one
//! write system call per side.

use std::sync::Arc;
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::net::TcpStream;

use crate::alarm::Alarm;
use crate::case::Fault;
use crate::client::{ClientCore, Next, OrderRule};
use crate::connect::ServerConn;
use crate::counters::{ServerEvent, ServerStats};
use crate::http1;
use crate::phase::{ClientReport, PhaseClient, PhasePlan};
use crate::websocket::{self, MaskKeys};
use crate::wire::{self, framing, HEADER_LEN, MAX_PAYLOAD};
use crate::work;

/// A frame body longer than this means the stream is corrupt.
const MAX_BODY: u64 = MAX_PAYLOAD as u64;

/// How messages are delimited on the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Framing {
    /// arknet's `use_dgram` length prefix.
    Dgram,
    /// HTTP/1.1 `POST /echo`; the client sends this `Host` header.
    Http { host: String },
    /// RFC 6455 binary frames, masked from client to server.
    WebSocket,
}

/// A decoded message head, whatever the framing: the WebSocket head, whose `mask` is `None`
/// for the unmasked framings.
type FrameHead = websocket::Head;

/// Which end of the connection reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Client,
    Server,
}

impl Framing {
    /// Room a message's framing takes beyond its body.
    fn overhead(&self) -> usize {
        match self {
            Framing::Dgram => framing::MAX_PREFIX,
            Framing::Http { .. } => 160,
            Framing::WebSocket => websocket::MAX_HEAD,
        }
    }

    /// Appends what precedes a body of `len` bytes sent by `side`; `mask` is the WebSocket
    /// client's key for this frame (the caller masks the body once it is written).
    fn write_head(&self, out: &mut Vec<u8>, side: Side, len: usize, mask: Option<[u8; 4]>) {
        match (self, side) {
            (Framing::Dgram, _) => framing::write_prefix(out, len),
            (Framing::Http { host }, Side::Client) => http1::write_request(out, host, len),
            (Framing::Http { .. }, Side::Server) => http1::write_response(out, len),
            (Framing::WebSocket, _) => websocket::write_head(out, len, mask),
        }
    }

    /// Decodes the head at the start of `buf` as read by `side`.
    fn read_head(&self, buf: &[u8], side: Side) -> Result<Option<FrameHead>, ()> {
        let unmasked = |(len, body)| FrameHead {
            len,
            body,
            mask: None,
        };
        match self {
            Framing::Dgram => Ok(framing::read_prefix(buf).map(unmasked)),
            Framing::Http { .. } => {
                let kind = if side == Side::Server {
                    http1::Kind::Request
                } else {
                    http1::Kind::Response
                };
                http1::parse(buf, kind)
                    .map(|head| head.map(unmasked))
                    .map_err(|_| ())
            }
            Framing::WebSocket => websocket::read_head(buf, side == Side::Server).map_err(|_| ()),
        }
    }
}

/// A growable receive buffer holding unparsed bytes in `[start, end)`.
struct InBuf {
    bytes: Vec<u8>,
    start: usize,
    end: usize,
}

impl InBuf {
    fn new(frame: usize) -> Self {
        Self {
            bytes: vec![0; (4 * frame).max(64 * 1024)],
            start: 0,
            end: 0,
        }
    }

    /// Free space to read into, compacting first when the tail is short.
    fn spare(&mut self) -> &mut [u8] {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.bytes.len() - self.end < self.bytes.len() / 4 {
            self.bytes.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        &mut self.bytes[self.end..]
    }

    /// The next complete frame body (unmasked), `Ok(None)` when more bytes are needed, `Err`
    /// when the head is malformed or announces an impossible length.
    fn next_frame(
        &mut self,
        framing: &Framing,
        side: Side,
    ) -> Result<Option<std::ops::Range<usize>>, ()> {
        let avail = &self.bytes[self.start..self.end];
        let Some(head) = framing.read_head(avail, side)? else {
            return Ok(None);
        };
        if head.body > MAX_BODY {
            return Err(());
        }
        let total = head.len + head.body as usize;
        if avail.len() < total {
            return Ok(None);
        }
        let range = self.start + head.len..self.start + total;
        self.start += total;
        if let Some(key) = head.mask {
            websocket::apply_mask(&mut self.bytes[range.clone()], key);
        }
        Ok(Some(range))
    }
}

/// A client's connection: plain TCP (split without cost) or TLS (split into owned halves).
pub enum Conn {
    Plain(TcpStream),
    Tls(Box<TlsHalves>),
}

/// The two halves of a client TLS stream.
pub type TlsHalves = (
    ReadHalf<tokio_rustls::client::TlsStream<TcpStream>>,
    WriteHalf<tokio_rustls::client::TlsStream<TcpStream>>,
);

/// Everything of a stream client except its connection.
struct Session {
    core: ClientCore,
    inbuf: InBuf,
    out: Vec<u8>,
    payload: usize,
    framing: Framing,
    /// WebSocket only: where the masking keys come from.
    mask_keys: Option<MaskKeys>,
    alarm: Arc<Alarm>,
    broken: bool,
}

/// One stream client connection.
pub struct TcpClient {
    conn: Conn,
    session: Session,
}

impl TcpClient {
    /// A client on `conn`, which has completed any TLS and WebSocket handshake.
    pub fn new(
        conn: Conn,
        index: usize,
        payload: usize,
        window: usize,
        framing: Framing,
        alarm: Arc<Alarm>,
    ) -> std::io::Result<Self> {
        let mask_keys = match framing {
            Framing::WebSocket => Some(MaskKeys::from_os()?),
            _ => None,
        };
        Ok(Self {
            conn,
            session: Session {
                core: ClientCore::new(index, payload, window, OrderRule::Strict),
                inbuf: InBuf::new(payload + framing.overhead()),
                out: Vec::with_capacity(window * (payload + framing.overhead())),
                payload,
                framing,
                mask_keys,
                alarm,
                broken: false,
            },
        })
    }
}

impl Session {
    fn queue_next(&mut self, now: Instant) {
        let mask = self.mask_keys.as_mut().map(MaskKeys::next_key);
        self.framing
            .write_head(&mut self.out, Side::Client, self.payload, mask);
        let body_start = self.out.len();
        self.core.write_next(&mut self.out, now);
        if let Some(key) = mask {
            websocket::apply_mask(&mut self.out[body_start..], key);
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
            if self.core.in_flight() == 0 && written == self.out.len() {
                break;
            }
            let pending_out = written < self.out.len();
            tokio::select! {
                biased;
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
                r = rd.read(self.inbuf.spare()) => match r {
                    Ok(0) | Err(_) => {
                        self.core.counters().disconnect_errors += 1;
                        self.broken = true;
                        break;
                    }
                    Ok(n) => {
                        self.inbuf.end += n;
                        alarm.progressed();
                        let now = Instant::now();
                        loop {
                            match self.inbuf.next_frame(&self.framing, Side::Client) {
                                Ok(Some(range)) => {
                                    let next = self.core.on_echo(&self.inbuf.bytes[range], now);
                                    if next == Next::Send {
                                        self.queue_next(now);
                                    }
                                }
                                Ok(None) => break,
                                Err(()) => {
                                    self.core.counters().content_errors += 1;
                                    self.broken = true;
                                    break;
                                }
                            }
                        }
                        if self.broken {
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

impl PhaseClient for TcpClient {
    async fn run_phase(&mut self, plan: PhasePlan) -> ClientReport {
        let s = &mut self.session;
        s.core.begin(plan);
        if s.broken {
            // A client that lost its connection earlier cannot take part.
            s.core.counters().disconnect_errors += 1;
            return s.core.finish(false);
        }
        let now = Instant::now();
        s.out.clear();
        for _ in 0..s.core.window() {
            s.queue_next(now);
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
        }
        s.core.finish(false)
    }
}

/// Serves one accepted connection until the peer closes it: every intact message is echoed
/// after `work` rounds of synthetic work; malformed ones are counted and not echoed.
pub async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    work_rounds: u64,
    stats: Arc<ServerStats>,
    fault: Option<Fault>,
    closing: Arc<std::sync::atomic::AtomicBool>,
    framing: Framing,
) {
    let mut inbuf = InBuf::new(MAX_PAYLOAD / 4);
    let mut out: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut seen: u64 = 0;
    loop {
        let n = match stream.read(inbuf.spare()).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(_) => {
                if !closing.load(std::sync::atomic::Ordering::Relaxed) {
                    stats.count(wire::PHASE_MEASURED, ServerEvent::Disconnected);
                }
                break;
            }
        };
        inbuf.end += n;
        let batch_start = out.len();
        let mut frames_in_batch = 0usize;
        loop {
            let range = match inbuf.next_frame(&framing, Side::Server) {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(_) => {
                    stats.count(wire::PHASE_WARMUP, ServerEvent::ContentError);
                    return;
                }
            };
            let message = &mut inbuf.bytes[range];
            if stats.admit(message).is_none() {
                continue;
            }
            seen += 1;
            work::run(work_rounds, message);
            match fault {
                Some(Fault::Drop) if seen % 97 == 0 => continue,
                Some(Fault::Corrupt) if seen % 97 == 0 && message.len() > HEADER_LEN => {
                    message[HEADER_LEN] ^= 0x5A;
                }
                _ => {}
            }
            framing.write_head(&mut out, Side::Server, message.len(), None);
            out.extend_from_slice(message);
            frames_in_batch += 1;
            if fault == Some(Fault::Reorder) && frames_in_batch == 2 && seen % 7 == 0 {
                swap_first_two_frames(&framing, &mut out[batch_start..]);
            }
        }
        if !out.is_empty() {
            if stream.write_all(&out).await.is_err() || stream.flush().await.is_err() {
                if !closing.load(std::sync::atomic::Ordering::Relaxed) {
                    stats.count(wire::PHASE_MEASURED, ServerEvent::SendRejected);
                }
                break;
            }
            out.clear();
        }
    }
}

/// [`serve`] on either kind of server connection.
pub async fn serve_conn(
    conn: ServerConn,
    work_rounds: u64,
    stats: Arc<ServerStats>,
    fault: Option<Fault>,
    closing: Arc<std::sync::atomic::AtomicBool>,
    framing: Framing,
) {
    match conn {
        ServerConn::Plain(s) => serve(s, work_rounds, stats, fault, closing, framing).await,
        ServerConn::Tls(s) => serve(*s, work_rounds, stats, fault, closing, framing).await,
    }
}

/// Swaps the first two frames of `buf` in place (fault injection only).
fn swap_first_two_frames(framing: &Framing, buf: &mut [u8]) {
    let frame_len = |b: &[u8]| {
        framing
            .read_head(b, Side::Client)
            .ok()
            .flatten()
            .map(|head| head.len + head.body as usize)
    };
    let Some(first) = frame_len(buf) else { return };
    let Some(second) = frame_len(&buf[first..]) else {
        return;
    };
    buf[..first + second].rotate_left(first);
}
