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
//! contract lets it be measured with one request in flight per connection). The QUIC
//! protocols have checks of their own (`verify/quic.rs`).

mod conn;
mod failure;
mod quic;

use std::sync::Arc;
use std::time::Duration;

use echomark_archive::{Protocol, StreamFraming};
use serde::Serialize;

use conn::Conn;
use failure::Failure;

use crate::case::Target;
use crate::framing::websocket;
use crate::message::{self, Header, MAX_PAYLOAD, PHASE_WARMUP};
use crate::traffic::tls::{TlsClient, TlsError};

/// How long verification waits, and for what. Each check fails once a wait runs out, so a
/// server that hangs, drips or never answers fails the check it breaks instead of hanging
/// the verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// How long one connect, read or write (a whole echo on a stream) may take
    /// (`--io-timeout`; 3 s).
    pub io: Duration,
    /// How long a whole TLS handshake, WebSocket upgrade or QUIC handshake may take: a
    /// server may answer each read in time and still never finish (`--handshake-timeout`;
    /// 10 s, as `once` allows its setup).
    pub handshake: Duration,
    /// The pause before the idle check uses its connection again (`--idle`; 2 s). A server
    /// that closes connections idle for less fails that check.
    pub idle: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            io: Duration::from_secs(3),
            handshake: Duration::from_secs(10),
            idle: Duration::from_secs(2),
        }
    }
}
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
    /// This verification with `passed` set from its checks: no check failed.
    fn judged(mut self) -> Self {
        self.passed = self.checks.iter().all(|c| c.outcome != Outcome::Failed);
        self
    }

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

/// Verifies the server `target` speaks `protocol` as the contract asks, waiting as long as
/// `limits` allow.
pub fn verify(protocol: Protocol, target: &Target, limits: Limits) -> Verification {
    let v = Verifier {
        protocol,
        target,
        limits,
        tls: target
            .tls
            .as_ref()
            .map(|(trust, name)| TlsClient::for_target(trust, name).map_err(Arc::new)),
    };
    if protocol.is_quic() {
        return Verification {
            target: target.addr.to_string(),
            protocol,
            framing: None,
            passed: false,
            checks: quic::checks(protocol, target, v.tls.as_ref(), limits),
        }
        .judged();
    }
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
        passed: false,
        checks,
    }
    .judged()
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
    limits: Limits,
    /// The TLS client, or why none could be set up (every check that connects then fails
    /// with it).
    tls: Option<Result<TlsClient, Arc<TlsError>>>,
}

impl Verifier<'_> {
    fn check(&self, name: &'static str, run: impl FnOnce() -> Result<Found, Failure>) -> Check {
        let (outcome, detail) = match run() {
            Ok(Found::Pass(d)) => (Outcome::Passed, d),
            Ok(Found::Skip(d)) => (Outcome::Skipped, d),
            Ok(Found::Unsupported(d)) => (Outcome::Unsupported, d),
            Err(failure) => (Outcome::Failed, failure.to_string()),
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

    fn open(&self) -> Result<Conn, Failure> {
        let tls = match &self.tls {
            None => None,
            Some(Ok(client)) => Some(client),
            Some(Err(e)) => return Err(Failure::TlsSetup(e.clone())),
        };
        Conn::open(self.protocol, self.target, tls, self.limits)
    }

    fn connect_check(&self) -> Result<Found, Failure> {
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

    fn sizes(&self) -> Result<Found, Failure> {
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

    fn split_write(&self) -> Result<Found, Failure> {
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

    fn coalesced(&self, pipelines: bool) -> Result<Found, Failure> {
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

    fn pipelined(&self) -> Result<Found, Failure> {
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
    fn concurrent(&self, pipelines: bool) -> Result<Found, Failure> {
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
                .map_err(Failure::within(format!("connection {i}")))?;
        }
        Ok(Found::Pass(format!(
            "{CONNECTIONS} connections open at once, {per_connection} message{} each, every echo on its own connection",
            if per_connection == 1 { "" } else { "s" }
        )))
    }

    fn idle(&self) -> Result<Found, Failure> {
        let mut conn = self.open()?;
        conn.round_trips(&[msg(0, 0, 64)])?;
        let idle = failure::seconds(self.limits.idle);
        std::thread::sleep(self.limits.idle);
        conn.round_trips(&[msg(0, 1, 64)])
            .map_err(Failure::within(format!("after {idle} idle")))?;
        Ok(Found::Pass(format!(
            "the same connection echoes again after {idle} idle"
        )))
    }

    fn fragments_and_ping(&self) -> Result<Found, Failure> {
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
            .map_err(Failure::within("echoed the message, but the ping"))?;
        Ok(Found::Pass(
            "3,000 B in three fragments with a ping between the first two: one whole echo, and a pong with the ping's payload"
                .into(),
        ))
    }

    fn malformed(&self) -> Result<Found, Failure> {
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
            Protocol::Http | Protocol::Https => Err(Failure::contract(format!(
                "answered a malformed request with {first_line:?} instead of an error or a close"
            ))),
            _ if echoes_data(&answer) => Err(Failure::contract(
                "echoed an unmasked client frame instead of closing",
            )),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The defaults docs/servers.md and `verify --help` state: 3 s per connect, read or write,
    /// 10 s per handshake (as `once` allows its setup), a 2 s idle pause.
    #[test]
    fn the_default_limits_are_the_documented_ones() {
        let limits = Limits::default();
        assert_eq!(
            (limits.io, limits.handshake, limits.idle),
            (
                Duration::from_secs(3),
                Duration::from_secs(10),
                Duration::from_secs(2)
            )
        );
        assert_eq!(failure::seconds(limits.handshake), "10 s");
    }
}
