//! Which codec each end of a stream connection speaks: the one place a stream protocol or
//! a `--framing` is tied to its code.
//!
//! HTTP and WebSocket (and their TLS forms) have their own framing; TCP and TCP+TLS speak
//! the `--framing` the user chose (echomark's own server: its length prefix). Every client
//! takes its codec from [`ClientFraming`] (in process, against another process's server on
//! tokio or monoio, and `verify`), every echomark server side from [`ServerFraming`] (in
//! process, `serve` on tokio, monoio and io_uring), and `serve` asks [`echoes_bytes`]
//! whether a framing needs no message boundaries at all. A new framing is a codec module,
//! a variant of [`echomark_archive::StreamFraming`] and its lines here; a new framed
//! protocol is a codec module, a variant of [`echomark_archive::Protocol`] and its lines
//! here (and [`upgrades`] if its connection is upgraded first).

use echomark_archive::{Protocol, StreamFraming};

use super::http1::Http1;
use super::line::Line;
use super::prefix::LengthPrefix;
use super::raw::Raw;
use super::websocket::{self, MaskKeys, WebSocket};
use super::{FrameError, FrameHead, Framing};

/// The framing of a client against another process's server, whichever it is.
pub enum ClientFraming {
    Prefix(LengthPrefix),
    Raw(Raw),
    Line(Line),
    Http(Http1),
    WebSocket(WebSocket),
}

impl ClientFraming {
    /// The client's framing for `protocol` with `framing` against a server reached as
    /// `authority` (the HTTP `Host` and the WebSocket upgrade's), for messages of `payload`
    /// bytes.
    pub fn for_target(
        protocol: Protocol,
        framing: StreamFraming,
        authority: &str,
        payload: usize,
    ) -> std::io::Result<Self> {
        Ok(match (protocol, framing) {
            (Protocol::Http | Protocol::Https, _) => ClientFraming::Http(Http1::Client {
                host: authority.to_string(),
            }),
            (Protocol::Websocket | Protocol::Wss, _) => {
                ClientFraming::WebSocket(WebSocket::Client(MaskKeys::from_os()?))
            }
            (_, StreamFraming::Prefix) => ClientFraming::Prefix(LengthPrefix),
            (_, StreamFraming::Raw) => ClientFraming::Raw(Raw { payload }),
            (_, StreamFraming::Line) => ClientFraming::Line(Line { payload }),
        })
    }

    /// The client's framing in process, against echomark's own server reached as
    /// `authority`.
    pub fn in_process(protocol: Protocol, authority: &str) -> std::io::Result<Self> {
        Self::for_target(protocol, StreamFraming::Prefix, authority, 0)
    }

    /// Sets the size of the next echo for framings whose messages carry no length (a
    /// verifying client sends messages of many sizes).
    pub fn expect(&mut self, payload: usize) {
        match self {
            ClientFraming::Raw(raw) => raw.payload = payload,
            ClientFraming::Line(line) => line.payload = payload,
            _ => {}
        }
    }

    /// The WebSocket client's masking keys, when it speaks WebSocket.
    pub fn websocket_keys(&mut self) -> Option<&mut MaskKeys> {
        match self {
            ClientFraming::WebSocket(WebSocket::Client(keys)) => Some(keys),
            _ => None,
        }
    }
}

/// Whether a client of `protocol` upgrades its connection to WebSocket before echoing.
pub fn upgrades(protocol: Protocol) -> bool {
    matches!(protocol, Protocol::Websocket | Protocol::Wss)
}

/// The framing of echomark's own server side of a stream connection.
#[derive(Debug, Clone)]
pub enum ServerFraming {
    Prefix(LengthPrefix),
    Http(Http1),
    WebSocket(WebSocket),
}

impl ServerFraming {
    /// What echomark's server speaks for `protocol` (a framing without a head is served
    /// as bytes: [`echoes_bytes`]).
    pub fn of(protocol: Protocol) -> Self {
        match protocol {
            Protocol::Http | Protocol::Https => ServerFraming::Http(Http1::Server),
            Protocol::Websocket | Protocol::Wss => ServerFraming::WebSocket(WebSocket::Server),
            _ => ServerFraming::Prefix(LengthPrefix),
        }
    }
}

impl Framing for ServerFraming {
    fn max_head(&self) -> usize {
        match self {
            ServerFraming::Prefix(f) => f.max_head(),
            ServerFraming::Http(f) => f.max_head(),
            ServerFraming::WebSocket(f) => f.max_head(),
        }
    }

    fn encode(&mut self, out: &mut Vec<u8>, len: usize, write_body: impl FnOnce(&mut Vec<u8>)) {
        match self {
            ServerFraming::Prefix(f) => f.encode(out, len, write_body),
            ServerFraming::Http(f) => f.encode(out, len, write_body),
            ServerFraming::WebSocket(f) => f.encode(out, len, write_body),
        }
    }

    fn decode_head(&self, buf: &[u8]) -> Result<Option<FrameHead>, FrameError> {
        match self {
            ServerFraming::Prefix(f) => f.decode_head(buf),
            ServerFraming::Http(f) => f.decode_head(buf),
            ServerFraming::WebSocket(f) => f.decode_head(buf),
        }
    }

    fn answer_controls(&mut self, out: &mut Vec<u8>, controls: &mut websocket::Controls) {
        if let ServerFraming::WebSocket(f) = self {
            f.answer_controls(out, controls);
        }
    }

    fn refusal(&self) -> Option<&'static [u8]> {
        match self {
            ServerFraming::Http(f) => f.refusal(),
            _ => None,
        }
    }

    fn verbatim(&self) -> bool {
        matches!(self, ServerFraming::Prefix(_))
    }
}

/// Whether `serve` echoes `protocol` with `framing` byte for byte, as bytes come, without
/// finding message boundaries (a framing with no head: any byte echo serves it).
pub fn echoes_bytes(protocol: Protocol, framing: StreamFraming) -> bool {
    // A line echo server is a byte echo that waits for the end of the line; a byte echo
    // serves it.
    matches!(protocol, Protocol::Tcp | Protocol::Tcps)
        && matches!(framing, StreamFraming::Raw | StreamFraming::Line)
}

impl Framing for ClientFraming {
    fn max_head(&self) -> usize {
        match self {
            ClientFraming::Prefix(f) => f.max_head(),
            ClientFraming::Raw(f) => f.max_head(),
            ClientFraming::Line(f) => f.max_head(),
            ClientFraming::Http(f) => f.max_head(),
            ClientFraming::WebSocket(f) => f.max_head(),
        }
    }

    fn encode(&mut self, out: &mut Vec<u8>, len: usize, write_body: impl FnOnce(&mut Vec<u8>)) {
        match self {
            ClientFraming::Prefix(f) => f.encode(out, len, write_body),
            ClientFraming::Raw(f) => f.encode(out, len, write_body),
            ClientFraming::Line(f) => f.encode(out, len, write_body),
            ClientFraming::Http(f) => f.encode(out, len, write_body),
            ClientFraming::WebSocket(f) => f.encode(out, len, write_body),
        }
    }

    fn decode_head(&self, buf: &[u8]) -> Result<Option<FrameHead>, FrameError> {
        match self {
            ClientFraming::Prefix(f) => f.decode_head(buf),
            ClientFraming::Raw(f) => f.decode_head(buf),
            ClientFraming::Line(f) => f.decode_head(buf),
            ClientFraming::Http(f) => f.decode_head(buf),
            ClientFraming::WebSocket(f) => f.decode_head(buf),
        }
    }

    fn answer_controls(&mut self, out: &mut Vec<u8>, controls: &mut websocket::Controls) {
        if let ClientFraming::WebSocket(f) = self {
            f.answer_controls(out, controls);
        }
    }

    fn refusal(&self) -> Option<&'static [u8]> {
        match self {
            ClientFraming::Http(f) => f.refusal(),
            _ => None,
        }
    }
}
