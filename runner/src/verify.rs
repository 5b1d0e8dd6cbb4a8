//! `echomark-runner verify`: checks a server against the echo contract before it is
//! measured, as TechEmpower verifies an implementation before benchmarking it. Each check
//! opens its own connections with blocking sockets and a deadline, sends messages carrying
//! echomark's header (client id and sequence) and compares every echo byte for byte, so a
//! failure names what broke: a byte, the order, the connection, the framing.
//!
//! The checks: connect (with TLS and the WebSocket upgrade), byte-exact echo from 16 B to
//! 65,507 B, a message written in pieces, several messages in one write, a pipelined window,
//! concurrent connections, a connection reused after an idle pause, on WebSocket a message
//! in fragments with a ping between them (RFC 6455 §5.4–5.5), and, where the protocol has
//! requests to get wrong, the answer to a malformed one (an error or a close, not an echo
//! and not a hang). Checks a protocol cannot have are reported as skipped with why; an HTTP
//! server that does not answer pipelined requests is `unsupported` there, not failed (the
//! contract lets it be measured with one request in flight per connection).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use echomark_archive::{Protocol, StreamFraming};
use serde::Serialize;

use crate::case::Target;
use crate::framing::http1::Http1;
use crate::framing::prefix::LengthPrefix;
use crate::framing::raw::Raw;
use crate::framing::websocket::{self, MaskKeys, WebSocket};
use crate::framing::{FrameError, FrameHead, Framing, RecvBuf};
use crate::message::{self, Header, MAX_PAYLOAD, PHASE_WARMUP};
use crate::traffic::tls::TlsClient;

/// How long one read or connect may take before the check fails.
const IO_LIMIT: Duration = Duration::from_secs(3);
/// The idle pause before a connection is used again.
const IDLE: Duration = Duration::from_secs(2);
/// Payload sizes of the byte-exact check.
const SIZES: [usize; 6] = [16, 64, 1024, 16_384, 32_768, MAX_PAYLOAD];
/// Messages in the pipelined window and connections in the concurrency check.
const WINDOW: usize = 16;
const CONNECTIONS: usize = 8;

/// One check's outcome.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Passed,
    Failed,
    Skipped,
    /// An optional part of the contract the server lacks (HTTP pipelining): it is measured
    /// without it.
    Unsupported,
}

/// One line of the verification table.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub outcome: Outcome,
    /// What was checked, or why it failed or was skipped.
    pub detail: String,
}

/// The verification of one server.
#[derive(Debug, Clone, Serialize)]
pub struct Verification {
    pub target: String,
    pub protocol: Protocol,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub framing: Option<StreamFraming>,
    /// True when no check failed.
    pub passed: bool,
    pub checks: Vec<Check>,
}

impl Verification {
    /// The checks as a plain-text table.
    pub fn table(&self) -> String {
        let width = self
            .checks
            .iter()
            .map(|c| c.name.len())
            .max()
            .unwrap_or(5)
            .max(5);
        let mut out = format!("{:width$}  {:11}  detail\n", "check", "result");
        for c in &self.checks {
            let result = match c.outcome {
                Outcome::Passed => "pass",
                Outcome::Failed => "FAIL",
                Outcome::Skipped => "skipped",
                Outcome::Unsupported => "unsupported",
            };
            out.push_str(&format!("{:width$}  {result:11}  {}\n", c.name, c.detail));
        }
        out.push_str(if self.passed {
            "the server meets the echo contract\n"
        } else {
            "the server does not meet the echo contract: it would not be measured\n"
        });
        out
    }
}

/// Verifies the server `target` speaks `protocol` as the contract asks.
pub fn verify(protocol: Protocol, target: &Target) -> Verification {
    let v = Verifier {
        protocol,
        target,
        tls: target
            .tls
            .as_ref()
            .map(|(trust, name)| TlsClient::for_target(trust, name).map_err(|e| e.to_string())),
    };
    let mut checks = vec![v.check("connect", || v.connect_check())];
    if checks[0].outcome == Outcome::Passed {
        checks.push(v.check("echo-sizes", || v.sizes()));
        checks.push(v.check("split-write", || v.split_write()));
        let pipelined = v.check("pipelined-window", || v.pipelined());
        let pipelines = pipelined.outcome != Outcome::Unsupported;
        checks.push(v.check("coalesced-write", || v.coalesced(pipelines)));
        checks.push(pipelined);
        checks.push(v.check("concurrent-connections", || v.concurrent(pipelines)));
        checks.push(v.check("idle-keep-alive", || v.idle()));
        checks.push(v.check("fragments-and-ping", || v.fragments_and_ping()));
        checks.push(v.check("malformed-request", || v.malformed()));
    }
    Verification {
        target: target.addr.to_string(),
        protocol,
        framing: matches!(protocol, Protocol::Tcp | Protocol::Tcps).then_some(target.framing),
        passed: checks.iter().all(|c| c.outcome != Outcome::Failed),
        checks,
    }
}

/// A check's result: what it showed, `Skip` with why it does not apply, or `Unsupported`
/// with what the server lacks.
enum Found {
    Pass(String),
    Skip(String),
    Unsupported(String),
}

struct Verifier<'a> {
    protocol: Protocol,
    target: &'a Target,
    tls: Option<Result<TlsClient, String>>,
}

impl Verifier<'_> {
    fn check(&self, name: &'static str, run: impl FnOnce() -> Result<Found, String>) -> Check {
        let (outcome, detail) = match run() {
            Ok(Found::Pass(d)) => (Outcome::Passed, d),
            Ok(Found::Skip(d)) => (Outcome::Skipped, d),
            Ok(Found::Unsupported(d)) => (Outcome::Unsupported, d),
            Err(d) => (Outcome::Failed, d),
        };
        Check {
            name,
            outcome,
            detail,
        }
    }

    fn is_stream(&self) -> bool {
        self.protocol != Protocol::Udp
    }

    fn open(&self) -> Result<Conn, String> {
        Conn::open(self.protocol, self.target, self.tls.as_ref())
    }

    fn connect_check(&self) -> Result<Found, String> {
        let conn = self.open()?;
        Ok(Found::Pass(format!(
            "{}{}",
            self.target.addr,
            conn.negotiated
                .as_ref()
                .map(|t| format!(", {t}"))
                .unwrap_or_default()
        )))
    }

    fn sizes(&self) -> Result<Found, String> {
        let mut conn = self.open()?;
        for (seq, &size) in SIZES.iter().enumerate() {
            conn.round_trips(&[msg(0, seq as u64, size)])?;
        }
        Ok(Found::Pass(format!(
            "{} B to {} B, one at a time, byte for byte",
            SIZES[0],
            format_count(MAX_PAYLOAD)
        )))
    }

    fn split_write(&self) -> Result<Found, String> {
        if !self.is_stream() {
            return Ok(Found::Skip("a datagram cannot be split".into()));
        }
        let mut conn = self.open()?;
        let m = msg(0, 0, 1024);
        let wire = conn.frame(std::slice::from_ref(&m));
        for piece in wire.chunks(wire.len().div_ceil(3)) {
            conn.write(piece)?;
            std::thread::sleep(Duration::from_millis(20));
        }
        conn.expect(&[m])?;
        Ok(Found::Pass(
            "1,024 B written in three pieces 20 ms apart".into(),
        ))
    }

    fn coalesced(&self, pipelines: bool) -> Result<Found, String> {
        if !self.is_stream() {
            return Ok(Found::Skip("each datagram is one message".into()));
        }
        if !pipelines {
            return Ok(Found::Unsupported(
                "several requests in one write are pipelined requests, which the server does not answer (see pipelined-window)".into(),
            ));
        }
        let mut conn = self.open()?;
        let batch: Vec<Vec<u8>> = (0..8).map(|s| msg(0, s, 256)).collect();
        conn.round_trips(&batch)?;
        Ok(Found::Pass(
            "8 messages of 256 B in one write, echoed in order".into(),
        ))
    }

    fn pipelined(&self) -> Result<Found, String> {
        let mut conn = self.open()?;
        let batch: Vec<Vec<u8>> = (0..WINDOW as u64).map(|s| msg(0, s, 1024)).collect();
        if let Err(e) = conn.round_trips(&batch) {
            // HTTP/1.1 servers need not pipeline (RFC 9112 §9.3.2 lets a client fall back):
            // such a server is measured with one request in flight per connection.
            return if matches!(self.protocol, Protocol::Http | Protocol::Https) {
                Ok(Found::Unsupported(format!(
                    "{e}: the server does not answer pipelined requests, so it is measured with one request in flight per connection (--no-pipelining)"
                )))
            } else {
                Err(e)
            };
        }
        Ok(Found::Pass(format!(
            "{WINDOW} messages of 1,024 B in flight, echoed in order"
        )))
    }

    /// Eight connections at once, four messages in flight on each (one where the server
    /// does not pipeline).
    fn concurrent(&self, pipelines: bool) -> Result<Found, String> {
        let per_connection = if pipelines { 4 } else { 1 };
        let mut conns: Vec<Conn> = (0..CONNECTIONS)
            .map(|_| self.open())
            .collect::<Result<_, _>>()?;
        let batches: Vec<Vec<Vec<u8>>> = (0..CONNECTIONS)
            .map(|c| (0..per_connection).map(|s| msg(c as u32, s, 512)).collect())
            .collect();
        for (conn, batch) in conns.iter_mut().zip(&batches) {
            conn.send(batch)?;
        }
        for (i, (conn, batch)) in conns.iter_mut().zip(&batches).enumerate() {
            conn.expect(batch)
                .map_err(|e| format!("connection {i}: {e}"))?;
        }
        Ok(Found::Pass(format!(
            "{CONNECTIONS} connections open at once, {per_connection} message{} each, every echo on its own connection",
            if per_connection == 1 { "" } else { "s" }
        )))
    }

    fn idle(&self) -> Result<Found, String> {
        let mut conn = self.open()?;
        conn.round_trips(&[msg(0, 0, 64)])?;
        std::thread::sleep(IDLE);
        conn.round_trips(&[msg(0, 1, 64)])
            .map_err(|e| format!("after {} s idle: {e}", IDLE.as_secs()))?;
        Ok(Found::Pass(format!(
            "the same connection echoes again after {} s idle",
            IDLE.as_secs()
        )))
    }

    fn fragments_and_ping(&self) -> Result<Found, String> {
        if !matches!(self.protocol, Protocol::Websocket | Protocol::Wss) {
            return Ok(Found::Skip(
                "only WebSocket has fragments and control frames".into(),
            ));
        }
        let mut conn = self.open()?;
        let m = msg(0, 0, 3000);
        let ping = b"echomark verify";
        let wire = conn.fragmented_with_ping(&m, ping);
        conn.write(&wire)?;
        conn.expect(&[m])?;
        conn.await_pong(ping)
            .map_err(|e| format!("echoed the message, but the ping: {e}"))?;
        Ok(Found::Pass(
            "3,000 B in three fragments with a ping between the first two: one whole echo, and a pong with the ping's payload"
                .into(),
        ))
    }

    fn malformed(&self) -> Result<Found, String> {
        let garbage: &[u8] = match self.protocol {
            // A well-formed request line with a length that is no number: the server must not
            // guess a body.
            Protocol::Http | Protocol::Https => {
                b"POST /echo HTTP/1.1\r\nHost: verify\r\nContent-Length: twelve\r\n\r\n"
            }
            // An unmasked client frame: RFC 6455 §5.1 says the server must close.
            Protocol::Websocket | Protocol::Wss => &[0x82, 0x03, b'a', b'b', b'c'],
            _ => {
                return Ok(Found::Skip(
                    "a byte stream or datagram echo has no malformed input".into(),
                ))
            }
        };
        let mut conn = self.open()?;
        conn.write(garbage)?;
        let answer = conn.read_some_until_close()?;
        let head = String::from_utf8_lossy(&answer[..answer.len().min(64)]).to_string();
        let first_line = head.split("\r\n").next().unwrap_or("").to_string();
        match self.protocol {
            Protocol::Http | Protocol::Https if answer.is_empty() => Ok(Found::Pass(
                "closed the connection without an answer".into(),
            )),
            Protocol::Http | Protocol::Https
                if first_line.starts_with("HTTP/1.1 4")
                    || first_line.starts_with("HTTP/1.1 5")
                    || first_line.starts_with("HTTP/1.0 4") =>
            {
                Ok(Found::Pass(format!("answered {first_line:?}")))
            }
            Protocol::Http | Protocol::Https => Err(format!(
                "answered a malformed request with {first_line:?} instead of an error or a close"
            )),
            _ if echoes_data(&answer) => {
                Err("echoed an unmasked client frame instead of closing".into())
            }
            _ => Ok(Found::Pass(
                "closed the connection on an unmasked client frame".into(),
            )),
        }
    }
}

/// Whether the frames a WebSocket server sent carry data (an echo), not only control frames
/// (a ping it sent on its own, the close it answers with).
fn echoes_data(answer: &[u8]) -> bool {
    let mut at = 0;
    while let Ok(Some(head)) = websocket::read_raw_head(&answer[at..], false) {
        if !websocket::opcode::is_control(head.opcode) {
            return true;
        }
        at += head.len + head.body as usize;
        if at >= answer.len() {
            break;
        }
    }
    false
}

/// Message `sequence` of client `client` with `size` bytes: echomark's header and filler.
fn msg(client: u32, sequence: u64, size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(size);
    message::write_message(
        &mut out,
        Header {
            phase: PHASE_WARMUP,
            client_id: client,
            sequence,
        },
        size,
    );
    out
}

fn format_count(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The framings a verifying client may speak.
enum AnyFraming {
    Prefix(LengthPrefix),
    Raw(Raw),
    Http(Http1),
    WebSocket(WebSocket),
}

impl Framing for AnyFraming {
    fn max_head(&self) -> usize {
        match self {
            AnyFraming::Prefix(f) => f.max_head(),
            AnyFraming::Raw(f) => f.max_head(),
            AnyFraming::Http(f) => f.max_head(),
            AnyFraming::WebSocket(f) => f.max_head(),
        }
    }

    fn encode(&mut self, out: &mut Vec<u8>, len: usize, write_body: impl FnOnce(&mut Vec<u8>)) {
        match self {
            AnyFraming::Prefix(f) => f.encode(out, len, write_body),
            AnyFraming::Raw(f) => f.encode(out, len, write_body),
            AnyFraming::Http(f) => f.encode(out, len, write_body),
            AnyFraming::WebSocket(f) => f.encode(out, len, write_body),
        }
    }

    fn decode_head(&self, buf: &[u8]) -> Result<Option<FrameHead>, FrameError> {
        match self {
            AnyFraming::Prefix(f) => f.decode_head(buf),
            AnyFraming::Raw(f) => f.decode_head(buf),
            AnyFraming::Http(f) => f.decode_head(buf),
            AnyFraming::WebSocket(f) => f.decode_head(buf),
        }
    }

    fn answer_controls(&mut self, out: &mut Vec<u8>, controls: &mut websocket::Controls) {
        if let AnyFraming::WebSocket(f) = self {
            f.answer_controls(out, controls);
        }
    }
}

/// A blocking connection or socket to the server.
enum Wire {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
    Datagram(UdpSocket),
}

struct Conn {
    wire: Wire,
    framing: AnyFraming,
    recv: RecvBuf,
    /// TLS: version and cipher suite.
    negotiated: Option<String>,
}

fn io_error(what: &str, e: io::Error) -> String {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            format!("{what}: no answer within {} s", IO_LIMIT.as_secs())
        }
        _ => format!("{what}: {e}"),
    }
}

impl Conn {
    fn open(
        protocol: Protocol,
        target: &Target,
        tls: Option<&Result<TlsClient, String>>,
    ) -> Result<Conn, String> {
        let addr: SocketAddr = target.addr;
        if protocol == Protocol::Udp {
            let any = SocketAddr::new(crate::traffic::sockets::unspecified_for(&addr), 0);
            let socket = UdpSocket::bind(any).map_err(|e| io_error("bind", e))?;
            socket.connect(addr).map_err(|e| io_error("connect", e))?;
            socket
                .set_read_timeout(Some(IO_LIMIT))
                .map_err(|e| io_error("socket", e))?;
            return Ok(Conn {
                wire: Wire::Datagram(socket),
                framing: AnyFraming::Raw(Raw { payload: 0 }),
                recv: RecvBuf::new(MAX_PAYLOAD),
                negotiated: None,
            });
        }
        let stream = TcpStream::connect_timeout(&addr, IO_LIMIT)
            .map_err(|e| io_error(&format!("connecting to {addr}"), e))?;
        stream
            .set_nodelay(true)
            .map_err(|e| io_error("socket", e))?;
        stream
            .set_read_timeout(Some(IO_LIMIT))
            .map_err(|e| io_error("socket", e))?;
        stream
            .set_write_timeout(Some(IO_LIMIT))
            .map_err(|e| io_error("socket", e))?;
        let (wire, negotiated) = match tls {
            None => (Wire::Plain(stream), None),
            Some(Err(e)) => return Err(e.clone()),
            Some(Ok(client)) => {
                let session = client.blocking().map_err(|e| format!("TLS: {e}"))?;
                let mut tls = rustls::StreamOwned::new(session, stream);
                while tls.conn.is_handshaking() {
                    tls.conn
                        .complete_io(&mut tls.sock)
                        .map_err(|e| io_error("TLS handshake", e))?;
                }
                let negotiated = format!(
                    "{:?}, {:?}",
                    tls.conn
                        .protocol_version()
                        .unwrap_or(rustls::ProtocolVersion::Unknown(0)),
                    tls.conn
                        .negotiated_cipher_suite()
                        .map(|s| s.suite())
                        .unwrap_or(rustls::CipherSuite::Unknown(0))
                );
                (Wire::Tls(Box::new(tls)), Some(negotiated))
            }
        };
        let framing = match protocol {
            Protocol::Http | Protocol::Https => AnyFraming::Http(Http1::Client {
                host: target.authority.clone(),
            }),
            Protocol::Websocket | Protocol::Wss => AnyFraming::WebSocket(WebSocket::Client(
                MaskKeys::from_os().map_err(|e| format!("random source: {e}"))?,
            )),
            _ => match target.framing {
                StreamFraming::Prefix => AnyFraming::Prefix(LengthPrefix),
                StreamFraming::Raw => AnyFraming::Raw(Raw { payload: 0 }),
            },
        };
        let mut conn = Conn {
            wire,
            framing,
            recv: RecvBuf::new(MAX_PAYLOAD + websocket::MAX_HEAD),
            negotiated,
        };
        if matches!(protocol, Protocol::Websocket | Protocol::Wss) {
            conn.upgrade(&target.authority)?;
        }
        Ok(conn)
    }

    fn upgrade(&mut self, host: &str) -> Result<(), String> {
        let key = websocket::new_key().map_err(|e| e.to_string())?;
        self.write(websocket::client_request(host, &key).as_bytes())?;
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        // One byte at a time: nothing after the head may be consumed here.
        while !head.ends_with(b"\r\n\r\n") {
            if head.len() > websocket::MAX_HANDSHAKE {
                return Err("upgrade answer too long".into());
            }
            match self.read(&mut byte) {
                Ok(0) => return Err("closed during the WebSocket upgrade".into()),
                Ok(_) => head.push(byte[0]),
                Err(e) => return Err(io_error("WebSocket upgrade", e)),
            }
        }
        let text = String::from_utf8_lossy(&head[..head.len() - 4]).to_string();
        websocket::check_server_response(&text, &key).map_err(|e| format!("WebSocket upgrade: {e}"))
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.wire {
            Wire::Plain(s) => s.read(buf),
            Wire::Tls(s) => s.read(buf),
            Wire::Datagram(s) => s.recv(buf),
        }
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), String> {
        let r = match &mut self.wire {
            Wire::Plain(s) => s.write_all(bytes).and_then(|_| s.flush()),
            Wire::Tls(s) => s.write_all(bytes).and_then(|_| s.flush()),
            Wire::Datagram(s) => s.send(bytes).map(|_| ()),
        };
        r.map_err(|e| io_error("write", e))
    }

    /// The messages framed back to back, as one write would carry them.
    fn frame(&mut self, messages: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        for m in messages {
            self.framing
                .encode(&mut out, m.len(), |o| o.extend_from_slice(m));
        }
        out
    }

    /// Sends `messages`: in one write on a stream, one datagram each otherwise.
    fn send(&mut self, messages: &[Vec<u8>]) -> Result<(), String> {
        if let Wire::Datagram(_) = self.wire {
            messages.iter().try_for_each(|m| self.write(m))
        } else {
            let wire = self.frame(messages);
            self.write(&wire)
        }
    }

    /// Sends `messages` and expects their echoes in order.
    fn round_trips(&mut self, messages: &[Vec<u8>]) -> Result<(), String> {
        self.send(messages)?;
        self.expect(messages)
    }

    /// Reads one echo per message and compares it byte for byte.
    fn expect(&mut self, messages: &[Vec<u8>]) -> Result<(), String> {
        for (i, m) in messages.iter().enumerate() {
            let echo = self.next_echo(m.len())?;
            if echo != *m {
                return Err(describe_mismatch(i, m, &echo));
            }
        }
        Ok(())
    }

    fn next_echo(&mut self, expected: usize) -> Result<Vec<u8>, String> {
        if let Wire::Datagram(s) = &self.wire {
            let mut buf = vec![0u8; MAX_PAYLOAD + 1];
            let n = s.recv(&mut buf).map_err(|e| io_error("echo", e))?;
            buf.truncate(n);
            return Ok(buf);
        }
        if let AnyFraming::Raw(raw) = &mut self.framing {
            raw.payload = expected;
        }
        let deadline = Instant::now() + IO_LIMIT;
        loop {
            match self.recv.next_frame(&self.framing) {
                Ok(Some(range)) => return Ok(self.recv.bytes_mut()[range].to_vec()),
                Ok(None) => self.answer_controls()?,
                Err(e) => return Err(format!("the answer is not a framed echo: {e}")),
            }
            self.read_more(deadline, "echo")?;
        }
    }

    /// Waits for the pong to a ping that carried `payload`.
    fn await_pong(&mut self, payload: &[u8]) -> Result<(), String> {
        let deadline = Instant::now() + IO_LIMIT;
        loop {
            match self.recv.next_frame(&self.framing) {
                Ok(Some(_)) => return Err("a message came instead of the pong".into()),
                Ok(None) => self.answer_controls()?,
                Err(e) => return Err(format!("not a WebSocket frame: {e}")),
            }
            if let Some(pong) = self.recv.controls().last_pong.take() {
                return if pong == payload {
                    Ok(())
                } else {
                    Err(format!(
                        "the pong carries {} bytes that are not the ping's payload",
                        pong.len()
                    ))
                };
            }
            self.read_more(deadline, "pong")?;
        }
    }

    /// Reads more of the stream into the receive buffer; an error after `deadline`, on a
    /// close, or when the read fails.
    fn read_more(&mut self, deadline: Instant, awaited: &str) -> Result<(), String> {
        if Instant::now() > deadline {
            return Err(format!(
                "no whole {awaited} within {} s",
                IO_LIMIT.as_secs()
            ));
        }
        let spare = self.recv.spare();
        let n = match &mut self.wire {
            Wire::Plain(s) => s.read(spare),
            Wire::Tls(s) => s.read(spare),
            Wire::Datagram(_) => return Err("a datagram socket has no stream to read".into()),
        };
        match n {
            Ok(0) => Err("the server closed the connection".into()),
            Ok(n) => {
                self.recv.filled(n);
                Ok(())
            }
            Err(e) => Err(io_error(awaited, e)),
        }
    }

    /// `message` as WebSocket fragments of about a third each, with a ping carrying
    /// `ping` between the first two, masked as a client must.
    fn fragmented_with_ping(&mut self, message: &[u8], ping: &[u8]) -> Vec<u8> {
        let AnyFraming::WebSocket(WebSocket::Client(keys)) = &mut self.framing else {
            return Vec::new();
        };
        let third = message.len().div_ceil(3);
        let pieces: Vec<&[u8]> = message.chunks(third).collect();
        let mut wire = Vec::new();
        for (i, piece) in pieces.iter().enumerate() {
            let op = if i == 0 {
                websocket::opcode::BINARY
            } else {
                websocket::opcode::CONTINUATION
            };
            let last = i + 1 == pieces.len();
            websocket::write_frame(&mut wire, last, op, piece, Some(keys.next_key()));
            if i == 0 {
                let key = Some(keys.next_key());
                websocket::write_frame(&mut wire, true, websocket::opcode::PING, ping, key);
            }
        }
        wire
    }

    /// Sends the pongs owed to the server's pings; an error once the server sent a close.
    fn answer_controls(&mut self) -> Result<(), String> {
        let controls = self.recv.controls();
        if !controls.owed() {
            return Ok(());
        }
        let closed = controls.peer_closed();
        let mut answers = Vec::new();
        self.framing.answer_controls(&mut answers, controls);
        self.write(&answers)?;
        if closed {
            return Err("the server sent a WebSocket close frame".into());
        }
        Ok(())
    }

    /// Whatever arrives until the server closes or goes quiet for the read limit.
    fn read_some_until_close(&mut self) -> Result<Vec<u8>, String> {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match self.read(&mut buf) {
                Ok(0) => return Ok(got),
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return if got.is_empty() {
                        Err(format!(
                            "neither answered nor closed within {} s",
                            IO_LIMIT.as_secs()
                        ))
                    } else {
                        Ok(got)
                    };
                }
                // A reset is a close too.
                Err(_) => return Ok(got),
            }
        }
    }
}

/// What differs between a sent message and its echo.
fn describe_mismatch(index: usize, sent: &[u8], echo: &[u8]) -> String {
    if echo.len() != sent.len() {
        return format!(
            "echo {index} has {} bytes, {} were sent",
            echo.len(),
            sent.len()
        );
    }
    if let (Ok(a), Ok(b)) = (message::parse_header(sent), message::parse_header(echo)) {
        if a.sequence != b.sequence || a.client_id != b.client_id {
            return format!(
                "echo {index} is message {} of client {}, expected message {} of client {} (out of order)",
                b.sequence, b.client_id, a.sequence, a.client_id
            );
        }
    }
    let at = sent.iter().zip(echo).position(|(a, b)| a != b).unwrap_or(0);
    format!("echo {index} differs from what was sent at byte {at}")
}
