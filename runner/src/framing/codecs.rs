//! Which codec a client speaks to a server it did not start, and how `serve` echoes each
//! framing: the one place a stream protocol or a `--framing` is tied to its code.
//!
//! HTTP and WebSocket (and their TLS forms) have their own framing; TCP and TCP+TLS speak
//! the `--framing` the user chose. Every client of another process's server (`once
//! --target`, on tokio or monoio, and `verify`) takes its codec from [`ClientFraming::for_target`];
//! `serve` asks [`echoes_bytes`] whether a framing needs no message boundaries on the
//! server's side. A new framing is a codec module, a variant of
//! [`echomark_archive::StreamFraming`] and its lines here.

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
}
