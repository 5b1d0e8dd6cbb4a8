//! The verifier's blocking connection: a plain, TLS or datagram socket to the server with
//! a framing, the WebSocket upgrade, and byte-for-byte reading of echoes with a deadline.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::Instant;

use echomark_archive::Protocol;

use super::failure::Failure;
use super::Limits;
use crate::case::Target;
use crate::framing::codecs::ClientFraming;
use crate::framing::raw::Raw;
use crate::framing::websocket;
use crate::framing::{Framing, RecvBuf};
use crate::message::{self, MAX_PAYLOAD};
use crate::traffic::tls::TlsClient;

/// A blocking connection or socket to the server.
enum Wire {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
    Datagram(UdpSocket),
}

/// One connection (or UDP socket) to the server under verification.
pub(super) struct Conn {
    wire: Wire,
    framing: ClientFraming,
    recv: RecvBuf,
    /// TLS: version and cipher suite.
    pub(super) negotiated: Option<String>,
    limits: Limits,
}

impl Conn {
    pub(super) fn open(
        protocol: Protocol,
        target: &Target,
        tls: Option<&TlsClient>,
        limits: Limits,
    ) -> Result<Conn, Failure> {
        let addr: SocketAddr = target.addr;
        if protocol == Protocol::Udp {
            let any = SocketAddr::new(crate::traffic::sockets::unspecified_for(&addr), 0);
            let socket = UdpSocket::bind(any).map_err(Failure::io_in("bind"))?;
            socket.connect(addr).map_err(Failure::io_in("connect"))?;
            socket
                .set_read_timeout(Some(limits.io))
                .map_err(Failure::io_in("socket"))?;
            return Ok(Conn {
                wire: Wire::Datagram(socket),
                framing: ClientFraming::Raw(Raw { payload: 0 }),
                recv: RecvBuf::new(MAX_PAYLOAD),
                negotiated: None,
                limits,
            });
        }
        let stream = TcpStream::connect_timeout(&addr, limits.io)
            .map_err(|e| Failure::exchange(format!("connecting to {addr}"), limits.io, e))?;
        stream.set_nodelay(true).map_err(Failure::io_in("socket"))?;
        stream
            .set_read_timeout(Some(limits.io))
            .map_err(Failure::io_in("socket"))?;
        stream
            .set_write_timeout(Some(limits.io))
            .map_err(Failure::io_in("socket"))?;
        let (wire, negotiated) = match tls {
            None => (Wire::Plain(stream), None),
            Some(client) => {
                let session = client.blocking().map_err(Failure::TlsSession)?;
                let mut tls = rustls::StreamOwned::new(session, stream);
                // A read timeout bounds each read, not a server that drips a byte at a time.
                let deadline = Instant::now() + limits.handshake;
                while tls.conn.is_handshaking() {
                    if Instant::now() > deadline {
                        return Err(Failure::Deadline {
                            what: "TLS handshake not complete".into(),
                            limit: limits.handshake,
                        });
                    }
                    tls.conn
                        .complete_io(&mut tls.sock)
                        .map_err(|e| Failure::exchange("TLS handshake", limits.io, e))?;
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
        let framing = ClientFraming::for_target(protocol, target.framing, &target.authority, 0)
            .map_err(Failure::io_in("random source"))?;
        let mut conn = Conn {
            wire,
            framing,
            recv: RecvBuf::new(MAX_PAYLOAD + websocket::MAX_HEAD),
            negotiated,
            limits,
        };
        if crate::framing::codecs::upgrades(protocol) {
            conn.upgrade(&target.authority)?;
        }
        Ok(conn)
    }

    fn upgrade(&mut self, host: &str) -> Result<(), Failure> {
        let key = websocket::new_key().map_err(Failure::Upgrade)?;
        self.write(websocket::client_request(host, &key).as_bytes())?;
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        // One byte at a time: nothing after the head may be consumed here.
        let deadline = Instant::now() + self.limits.handshake;
        while !head.ends_with(b"\r\n\r\n") {
            if Instant::now() > deadline {
                return Err(Failure::Deadline {
                    what: "WebSocket upgrade not answered".into(),
                    limit: self.limits.handshake,
                });
            }
            if head.len() > websocket::MAX_HANDSHAKE {
                return Err(Failure::contract("upgrade answer too long"));
            }
            match self.read(&mut byte) {
                Ok(0) => return Err(Failure::contract("closed during the WebSocket upgrade")),
                Ok(_) => head.push(byte[0]),
                Err(e) => return Err(Failure::exchange("WebSocket upgrade", self.limits.io, e)),
            }
        }
        let text = String::from_utf8_lossy(&head[..head.len() - 4]).to_string();
        websocket::check_server_response(&text, &key).map_err(Failure::Upgrade)
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.wire {
            Wire::Plain(s) => s.read(buf),
            Wire::Tls(s) => s.read(buf),
            Wire::Datagram(s) => s.recv(buf),
        }
    }

    pub(super) fn write(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        let r = match &mut self.wire {
            Wire::Plain(s) => s.write_all(bytes).and_then(|_| s.flush()),
            Wire::Tls(s) => s.write_all(bytes).and_then(|_| s.flush()),
            Wire::Datagram(s) => s.send(bytes).map(|_| ()),
        };
        r.map_err(|e| Failure::exchange("write", self.limits.io, e))
    }

    /// The messages framed back to back, as one write would carry them.
    pub(super) fn frame(&mut self, messages: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        for m in messages {
            self.framing
                .encode(&mut out, m.len(), |o| o.extend_from_slice(m));
        }
        out
    }

    /// Sends `messages`: in one write on a stream, one datagram each otherwise.
    pub(super) fn send(&mut self, messages: &[Vec<u8>]) -> Result<(), Failure> {
        if let Wire::Datagram(_) = self.wire {
            messages.iter().try_for_each(|m| self.write(m))
        } else {
            let wire = self.frame(messages);
            self.write(&wire)
        }
    }

    /// Sends `messages` and expects their echoes in order.
    pub(super) fn round_trips(&mut self, messages: &[Vec<u8>]) -> Result<(), Failure> {
        self.send(messages)?;
        self.expect(messages)
    }

    /// Reads one echo per message and compares it byte for byte.
    pub(super) fn expect(&mut self, messages: &[Vec<u8>]) -> Result<(), Failure> {
        for (i, m) in messages.iter().enumerate() {
            let echo = self.next_echo(m.len())?;
            if echo != *m {
                return Err(Failure::Contract(describe_mismatch(i, m, &echo)));
            }
        }
        Ok(())
    }

    fn next_echo(&mut self, expected: usize) -> Result<Vec<u8>, Failure> {
        if let Wire::Datagram(s) = &self.wire {
            let mut buf = vec![0u8; MAX_PAYLOAD + 1];
            let n = s
                .recv(&mut buf)
                .map_err(|e| Failure::exchange("echo", self.limits.io, e))?;
            buf.truncate(n);
            return Ok(buf);
        }
        self.framing.expect(expected);
        let deadline = Instant::now() + self.limits.io;
        loop {
            match self.recv.next_frame(&self.framing) {
                Ok(Some(range)) => return Ok(self.recv.bytes_mut()[range].to_vec()),
                Ok(None) => self.answer_controls()?,
                Err(source) => {
                    return Err(Failure::Framing {
                        expected: "the answer is not a framed echo",
                        source,
                    })
                }
            }
            self.read_more(deadline, "echo")?;
        }
    }

    /// Waits for the pong to a ping that carried `payload`.
    pub(super) fn await_pong(&mut self, payload: &[u8]) -> Result<(), Failure> {
        let deadline = Instant::now() + self.limits.io;
        loop {
            match self.recv.next_frame(&self.framing) {
                Ok(Some(_)) => return Err(Failure::contract("a message came instead of the pong")),
                Ok(None) => self.answer_controls()?,
                Err(source) => {
                    return Err(Failure::Framing {
                        expected: "not a WebSocket frame",
                        source,
                    })
                }
            }
            if let Some(pong) = self.recv.controls().last_pong.take() {
                return if pong == payload {
                    Ok(())
                } else {
                    Err(Failure::contract(format!(
                        "the pong carries {} bytes that are not the ping's payload",
                        pong.len()
                    )))
                };
            }
            self.read_more(deadline, "pong")?;
        }
    }

    /// Reads more of the stream into the receive buffer; an error after `deadline`, on a
    /// close, or when the read fails.
    fn read_more(&mut self, deadline: Instant, awaited: &str) -> Result<(), Failure> {
        if Instant::now() > deadline {
            return Err(Failure::Deadline {
                what: format!("no whole {awaited}"),
                limit: self.limits.io,
            });
        }
        let spare = self.recv.spare();
        let n = match &mut self.wire {
            Wire::Plain(s) => s.read(spare),
            Wire::Tls(s) => s.read(spare),
            Wire::Datagram(_) => {
                return Err(Failure::contract("a datagram socket has no stream to read"))
            }
        };
        match n {
            Ok(0) => Err(Failure::contract("the server closed the connection")),
            Ok(n) => {
                self.recv.filled(n);
                Ok(())
            }
            Err(e) => Err(Failure::exchange(awaited, self.limits.io, e)),
        }
    }

    /// `message` as WebSocket fragments of about a third each, with a ping carrying
    /// `ping` between the first two, masked as a client must.
    pub(super) fn fragmented_with_ping(&mut self, message: &[u8], ping: &[u8]) -> Vec<u8> {
        let Some(keys) = self.framing.websocket_keys() else {
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
    fn answer_controls(&mut self) -> Result<(), Failure> {
        let controls = self.recv.controls();
        if !controls.owed() {
            return Ok(());
        }
        let closed = controls.peer_closed();
        let mut answers = Vec::new();
        self.framing.answer_controls(&mut answers, controls);
        self.write(&answers)?;
        if closed {
            return Err(Failure::contract("the server sent a WebSocket close frame"));
        }
        Ok(())
    }

    /// Whatever arrives until the server closes, goes quiet for the read limit, has sent
    /// [`ANSWER_LIMIT`] bytes, or the read limit has passed since the first read: a server
    /// that answers without end (an endless body, headers or trailers, a trickle of bytes)
    /// is judged on what came first, and never holds the measuring host's memory or time.
    pub(super) fn read_some_until_close(&mut self) -> Result<Vec<u8>, Failure> {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        let deadline = Instant::now() + self.limits.io;
        loop {
            if got.len() >= ANSWER_LIMIT || (!got.is_empty() && Instant::now() > deadline) {
                return Ok(got);
            }
            match self.read(&mut buf) {
                Ok(0) => return Ok(got),
                Ok(n) => got.extend_from_slice(&buf[..n.min(ANSWER_LIMIT - got.len())]),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return if got.is_empty() {
                        Err(Failure::Deadline {
                            what: "neither answered nor closed".into(),
                            limit: self.limits.io,
                        })
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

/// The most of an answer to a malformed request that is read: its first line and head
/// decide the verdict.
pub(super) const ANSWER_LIMIT: usize = 64 * 1024;

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
