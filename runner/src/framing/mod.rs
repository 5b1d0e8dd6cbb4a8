//! The stream framings, sans IO: codecs over byte buffers that any runtime's IO loop drives
//! (no runtime type appears here). One trait, [`Framing`], and four implementations:
//! arknet's length prefix ([`prefix`]), a bare byte echo ([`raw`], for servers that speak no
//! framing), HTTP/1.1 requests and responses ([`http1`]) and RFC 6455 frames ([`websocket`]); [`RecvBuf`] turns the bytes a socket delivered into
//! message bodies with any of them.

pub mod codecs;
pub mod http1;
pub mod line;
pub mod prefix;
pub mod raw;
pub mod recv;
pub mod websocket;

pub use recv::RecvBuf;

use crate::message::MAX_PAYLOAD;

/// A decoded message head, whatever the framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHead {
    /// Bytes of the head (a WebSocket masking key included).
    pub len: usize,
    /// Bytes of the body that follows.
    pub body: u64,
    /// WebSocket client frames: the key the body is masked with.
    pub mask: Option<[u8; 4]>,
    /// How the body is laid out on the wire.
    pub pieces: Pieces,
}

/// How a message's body follows its head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pieces {
    /// `body` bytes right after the head.
    Whole,
    /// HTTP responses with `Transfer-Encoding: chunked`: `body` is unknown (0) and the body
    /// is the chunks that follow the head, up to the last (empty) one.
    HttpChunks,
    /// A WebSocket message in fragments, or control frames: the head is empty (`len` 0) and
    /// [`websocket::gather`] reads the run of frames from here.
    WebSocketFrames {
        /// Whether the peer's frames must be masked.
        masked: bool,
    },
}

impl FrameHead {
    /// A head whose body is sent as is.
    pub fn plain(len: usize, body: u64) -> Self {
        Self {
            len,
            body,
            mask: None,
            pieces: Pieces::Whole,
        }
    }
}

/// Why the bytes on a stream are not a message the echo sent: the stream is corrupt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("HTTP head: {0}")]
    Http(#[from] http1::HeadError),
    #[error("WebSocket frame: {0}")]
    WebSocket(#[from] websocket::FrameError),
    #[error("a body of {0} bytes is longer than any message ({MAX_PAYLOAD} bytes)")]
    TooLong(u64),
}

/// A message framing on a byte stream, for one end of a connection.
pub trait Framing: Send + 'static {
    /// The most bytes one head can take.
    fn max_head(&self) -> usize;

    /// Appends one message: its head, then the body `write_body` appends (masked afterwards
    /// when the framing masks bodies).
    fn encode(&mut self, out: &mut Vec<u8>, len: usize, write_body: impl FnOnce(&mut Vec<u8>));

    /// Decodes the head at the start of `buf`; `Ok(None)` when more bytes are needed.
    fn decode_head(&self, buf: &[u8]) -> Result<Option<FrameHead>, FrameError>;

    /// Appends the answers owed to control frames the peer sent (a WebSocket pong per ping,
    /// a close for a close). Framings without control frames never record any.
    fn answer_controls(&mut self, _out: &mut Vec<u8>, _controls: &mut websocket::Controls) {}

    /// What this end writes when it cannot decode what the peer sent, before it closes the
    /// connection (an HTTP server's `400`); `None` closes without a word.
    fn refusal(&self) -> Option<&'static [u8]> {
        None
    }

    /// Whether a server's echo of a message is the message's own bytes, head included (so
    /// an echo may be sent from the buffer the message arrived in).
    fn verbatim(&self) -> bool {
        false
    }
}
