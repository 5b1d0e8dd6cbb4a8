//! WebSocket (RFC 6455) for the `websocket` and `wss` protocols: an HTTP/1.1 upgrade to
//! `/echo` during setup ([`handshake`]), then binary messages.
//!
//! echomark sends each message as one final binary frame. What it accepts from a peer is
//! what RFC 6455 allows an echo server or client to send: a binary message in fragments
//! (continuation frames), with ping, pong and close frames between or before them
//! ([`fragments`] joins the pieces in place and collects the control frames for the IO loop
//! to answer: a pong per ping, a close for a close). Either end rejects a frame with the
//! other masking, a reserved bit (no extension is negotiated), a text or reserved opcode, a
//! fragmented or over-long control frame, or a length that is not minimally encoded; the
//! stream is then not what was sent and is counted as a content error.
//!
//! Masking keys: the RFC asks for unpredictable keys so that proxies cannot be poisoned by
//! chosen bytes. Each client seeds a xorshift generator from the operating system's random
//! source (ring) once per connection and draws one key per frame from it; drawing every key
//! from the system source would add a system call per message and measure that instead.
//! The cost the RFC does impose, XOR-ing every payload byte on both ends, is paid in full.

pub mod fragments;
pub mod handshake;

use ring::rand::{SecureRandom, SystemRandom};

pub use fragments::{gather, Controls, Gathered};
pub use handshake::{
    accept_value, check_server_response, client_request, head_end, new_key, server_response,
    HandshakeError, MAX_HANDSHAKE,
};

use super::{FrameError as AnyFrameError, FrameHead, Framing, Pieces};

/// Longest frame head: 2 bytes, an 8-byte extended length and a 4-byte masking key.
pub const MAX_HEAD: usize = 14;

/// Frame opcodes (RFC 6455 §5.2).
pub mod opcode {
    pub const CONTINUATION: u8 = 0x0;
    pub const TEXT: u8 = 0x1;
    pub const BINARY: u8 = 0x2;
    pub const CLOSE: u8 = 0x8;
    pub const PING: u8 = 0x9;
    pub const PONG: u8 = 0xA;

    /// Close, ping and pong (and the reserved control opcodes): the high bit of the nibble.
    pub fn is_control(op: u8) -> bool {
        op & 0x8 != 0
    }
}

/// FIN set, opcode 2 (binary): every message echomark sends is one such frame.
const FIN_BINARY: u8 = 0x80 | opcode::BINARY;

/// A control frame's payload is at most this long (RFC 6455 §5.5).
pub const MAX_CONTROL_PAYLOAD: u64 = 125;

/// A decoded frame head.
pub type Head = FrameHead;

/// Why a frame is rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("reserved bits set (first byte {0:#04x}) with no extension negotiated")]
    ReservedBits(u8),
    #[error("opcode {0:#x} is not binary, continuation, close, ping or pong")]
    Opcode(u8),
    #[error("masking bit is {got}, expected {expected}")]
    Masking { got: bool, expected: bool },
    #[error("length is not minimally encoded")]
    NonMinimalLength,
    #[error("64-bit length has its top bit set")]
    LengthTooLarge,
    #[error("a control frame is fragmented or longer than 125 bytes")]
    BadControl,
    #[error("a continuation frame with no fragmented message to continue")]
    StrayContinuation,
    #[error("a new message began before the fragmented one ended")]
    Interleaved,
    #[error("a close frame in the middle of a fragmented message")]
    ClosedMidMessage,
    #[error("a fragmented message longer than any message the echo sends")]
    MessageTooLong,
    #[error("a fragmented message in more than {} pieces", fragments::MAX_PIECES)]
    TooManyPieces,
}

/// One frame's head as it is on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawHead {
    pub fin: bool,
    pub opcode: u8,
    /// Bytes of the head, masking key included.
    pub len: usize,
    /// Bytes of the payload.
    pub body: u64,
    pub mask: Option<[u8; 4]>,
}

/// Appends the head of a final binary frame carrying `len` bytes, masked with `mask` if given.
pub fn write_head(out: &mut Vec<u8>, len: usize, mask: Option<[u8; 4]>) {
    write_frame_head(out, FIN_BINARY, len, mask);
}

/// Appends a frame head whose first byte (FIN, reserved bits, opcode) is `first`.
fn write_frame_head(out: &mut Vec<u8>, first: u8, len: usize, mask: Option<[u8; 4]>) {
    out.push(first);
    let mask_bit = if mask.is_some() { 0x80 } else { 0 };
    if len < 126 {
        out.push(mask_bit | len as u8);
    } else if len <= u16::MAX as usize {
        out.push(mask_bit | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(mask_bit | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    if let Some(key) = mask {
        out.extend_from_slice(&key);
    }
}

/// Appends a whole frame: head, then `payload` (masked with `mask` if given).
pub fn write_frame(out: &mut Vec<u8>, fin: bool, op: u8, payload: &[u8], mask: Option<[u8; 4]>) {
    let first = if fin { 0x80 } else { 0 } | (op & 0x0F);
    write_frame_head(out, first, payload.len(), mask);
    let body = out.len();
    out.extend_from_slice(payload);
    if let Some(key) = mask {
        apply_mask(&mut out[body..], key);
    }
}

/// Decodes any frame's head at the start of `buf`; `Ok(None)` when more bytes are needed.
/// `masked` says whether frames from the peer must be masked (true on the server). The
/// opcode is returned as it is; which opcodes may come where is [`fragments`]' business.
pub fn read_raw_head(buf: &[u8], masked: bool) -> Result<Option<RawHead>, FrameError> {
    let (Some(&first), Some(&second)) = (buf.first(), buf.get(1)) else {
        return Ok(None);
    };
    if first & 0x70 != 0 {
        return Err(FrameError::ReservedBits(first));
    }
    let has_mask = second & 0x80 != 0;
    if has_mask != masked {
        return Err(FrameError::Masking {
            got: has_mask,
            expected: masked,
        });
    }
    let (ext, body) = match second & 0x7F {
        126 => {
            let Some(b) = buf.get(2..4) else {
                return Ok(None);
            };
            let n = u16::from_be_bytes([b[0], b[1]]) as u64;
            if n < 126 {
                return Err(FrameError::NonMinimalLength);
            }
            (2, n)
        }
        127 => {
            let Some(b) = buf.get(2..10) else {
                return Ok(None);
            };
            let n = u64::from_be_bytes(b.try_into().expect("8 bytes"));
            if n >> 63 != 0 {
                return Err(FrameError::LengthTooLarge);
            }
            if n <= u16::MAX as u64 {
                return Err(FrameError::NonMinimalLength);
            }
            (8, n)
        }
        n => (0, n as u64),
    };
    let key_at = 2 + ext;
    let mask = if masked {
        let Some(k) = buf.get(key_at..key_at + 4) else {
            return Ok(None);
        };
        Some([k[0], k[1], k[2], k[3]])
    } else {
        None
    };
    Ok(Some(RawHead {
        fin: first & 0x80 != 0,
        opcode: first & 0x0F,
        len: key_at + if masked { 4 } else { 0 },
        body,
        mask,
    }))
}

/// Decodes the frame head at the start of `buf` for the receive path: a final binary frame
/// is a whole message; any other frame echomark may receive starts a run of frames for
/// [`gather`] (a head of no bytes in [`Pieces::WebSocketFrames`]); anything else is an
/// error. `Ok(None)` when more bytes are needed.
pub fn read_head(buf: &[u8], masked: bool) -> Result<Option<Head>, FrameError> {
    let Some(raw) = read_raw_head(buf, masked)? else {
        return Ok(None);
    };
    match raw.opcode {
        opcode::BINARY if raw.fin => Ok(Some(Head {
            len: raw.len,
            body: raw.body,
            mask: raw.mask,
            pieces: Pieces::Whole,
        })),
        opcode::BINARY | opcode::CONTINUATION | opcode::CLOSE | opcode::PING | opcode::PONG => {
            Ok(Some(Head {
                pieces: Pieces::WebSocketFrames { masked },
                ..Head::plain(0, 0)
            }))
        }
        other => Err(FrameError::Opcode(other)),
    }
}

/// XORs `data` with the repeating masking key (masking and unmasking are the same).
pub fn apply_mask(data: &mut [u8], key: [u8; 4]) {
    let word = u64::from_ne_bytes([
        key[0], key[1], key[2], key[3], key[0], key[1], key[2], key[3],
    ]);
    let mut chunks = data.chunks_exact_mut(8);
    for chunk in &mut chunks {
        let v = u64::from_ne_bytes(chunk.try_into().expect("8 bytes")) ^ word;
        chunk.copy_from_slice(&v.to_ne_bytes());
    }
    for (i, b) in chunks.into_remainder().iter_mut().enumerate() {
        *b ^= key[i % 4];
    }
}

/// Per-connection source of masking keys (see the module notes).
#[derive(Debug, Clone)]
pub struct MaskKeys(u64);

impl MaskKeys {
    /// Seeds from the operating system's random source.
    pub fn from_os() -> std::io::Result<Self> {
        let mut seed = [0u8; 8];
        SystemRandom::new()
            .fill(&mut seed)
            .map_err(|_| std::io::Error::other("no random source for WebSocket masking keys"))?;
        // xorshift has one fixed point, zero.
        Ok(Self(u64::from_ne_bytes(seed) | 1))
    }

    /// The next key.
    pub fn next_key(&mut self) -> [u8; 4] {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        ((x >> 16) as u32).to_ne_bytes()
    }
}

/// RFC 6455 binary frames for one end: the client masks every frame with a fresh key, the
/// server sends unmasked frames and insists on masked ones.
#[derive(Debug, Clone)]
pub enum WebSocket {
    Client(MaskKeys),
    Server,
}

impl WebSocket {
    fn next_mask(&mut self) -> Option<[u8; 4]> {
        match self {
            WebSocket::Client(keys) => Some(keys.next_key()),
            WebSocket::Server => None,
        }
    }
}

impl Framing for WebSocket {
    fn max_head(&self) -> usize {
        MAX_HEAD
    }

    fn encode(&mut self, out: &mut Vec<u8>, len: usize, write_body: impl FnOnce(&mut Vec<u8>)) {
        let mask = self.next_mask();
        write_head(out, len, mask);
        let body = out.len();
        write_body(out);
        if let Some(key) = mask {
            apply_mask(&mut out[body..], key);
        }
    }

    fn decode_head(&self, buf: &[u8]) -> Result<Option<FrameHead>, AnyFrameError> {
        Ok(read_head(buf, matches!(self, WebSocket::Server))?)
    }

    fn answer_controls(&mut self, out: &mut Vec<u8>, controls: &mut Controls) {
        for ping in controls.take_pings() {
            let mask = self.next_mask();
            write_frame(out, true, opcode::PONG, &ping, mask);
        }
        if let Some(close) = controls.close_to_answer() {
            let mask = self.next_mask();
            write_frame(out, true, opcode::CLOSE, &close, mask);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6455 §5.7: a masked "Hello" (text there; the framing bytes past the opcode agree).
    #[test]
    fn masked_frame_matches_the_rfc_example() {
        let mut out = Vec::new();
        let key = [0x37, 0xfa, 0x21, 0x3d];
        write_head(&mut out, 5, Some(key));
        let start = out.len();
        out.extend_from_slice(b"Hello");
        apply_mask(&mut out[start..], key);
        assert_eq!(
            out[1..],
            [0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]
        );
        let head = read_head(&out, true).unwrap().unwrap();
        assert_eq!(
            head,
            Head {
                len: 6,
                body: 5,
                mask: Some(key),
                pieces: Pieces::Whole,
            }
        );
        // The same frame through the general writer.
        let mut again = Vec::new();
        write_frame(&mut again, true, opcode::BINARY, b"Hello", Some(key));
        assert_eq!(again, out);
    }

    /// RFC 6455 §5.7: 256 bytes and 64 KiB in a single unmasked binary frame.
    #[test]
    fn extended_lengths_match_the_rfc_examples() {
        let mut out = Vec::new();
        write_head(&mut out, 256, None);
        assert_eq!(out, [0x82, 0x7E, 0x01, 0x00]);
        out.clear();
        write_head(&mut out, 65536, None);
        assert_eq!(out, [0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0]);
        assert_eq!(
            read_head(&out, false).unwrap(),
            Some(Head::plain(10, 65536))
        );
    }

    #[test]
    fn every_length_round_trips_and_partial_heads_wait() {
        for len in [0, 1, 125, 126, 127, 65535, 65536, 100_000] {
            for mask in [None, Some([1, 2, 3, 4])] {
                let mut out = Vec::new();
                write_head(&mut out, len, mask);
                let head = read_head(&out, mask.is_some()).unwrap().unwrap();
                assert_eq!(
                    (head.len, head.body, head.mask),
                    (out.len(), len as u64, mask)
                );
                for cut in 0..out.len() {
                    assert_eq!(
                        read_head(&out[..cut], mask.is_some()),
                        Ok(None),
                        "{len} {cut}"
                    );
                }
            }
        }
    }

    #[test]
    fn fragments_and_control_frames_go_to_the_gatherer() {
        // A first fragment, a continuation, a close, a ping and a pong.
        for first in [0x02, 0x80, 0x88, 0x89, 0x8A] {
            assert_eq!(
                read_head(&[first, 0x80, 0, 0, 0, 0], true),
                Ok(Some(Head {
                    pieces: Pieces::WebSocketFrames { masked: true },
                    ..Head::plain(0, 0)
                })),
                "{first:#x}"
            );
        }
    }

    #[test]
    fn rejects_what_no_echo_may_send() {
        // Text, and reserved data and control opcodes.
        for first in [0x81, 0x83, 0x87, 0x8B, 0x8F] {
            assert_eq!(
                read_head(&[first, 0x80, 0, 0, 0, 0], true),
                Err(FrameError::Opcode(first & 0x0F))
            );
        }
        for first in [0xC2, 0xA2, 0x92] {
            assert_eq!(
                read_head(&[first, 0x80, 0, 0, 0, 0], true),
                Err(FrameError::ReservedBits(first))
            );
        }
        assert_eq!(
            read_head(&[0x82, 0x05], true),
            Err(FrameError::Masking {
                got: false,
                expected: true
            })
        );
        assert_eq!(
            read_head(&[0x82, 0x85, 1, 2, 3, 4], false),
            Err(FrameError::Masking {
                got: true,
                expected: false
            })
        );
        assert_eq!(
            read_head(&[0x82, 126, 0, 125], false),
            Err(FrameError::NonMinimalLength)
        );
        assert_eq!(
            read_head(&[0x82, 127, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF], false),
            Err(FrameError::NonMinimalLength)
        );
        assert_eq!(
            read_head(&[0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 0], false),
            Err(FrameError::LengthTooLarge)
        );
    }

    #[test]
    fn masking_twice_restores_the_bytes_at_every_alignment() {
        let original: Vec<u8> = (0..=255u8).cycle().take(1037).collect();
        for start in 0..9 {
            let mut data = original[start..].to_vec();
            apply_mask(&mut data, [0xA5, 0x5A, 0x0F, 0xF0]);
            assert_ne!(data, original[start..]);
            // Byte i is masked with key[i % 4] whatever the alignment.
            assert_eq!(data[5], original[start + 5] ^ 0x5A);
            apply_mask(&mut data, [0xA5, 0x5A, 0x0F, 0xF0]);
            assert_eq!(data, original[start..]);
        }
    }

    #[test]
    fn mask_keys_vary() {
        let mut keys = MaskKeys::from_os().unwrap();
        let drawn: std::collections::HashSet<[u8; 4]> =
            (0..1000).map(|_| keys.next_key()).collect();
        assert!(drawn.len() > 990);
    }

    #[test]
    fn pings_get_pongs_and_a_close_gets_one_close() {
        let mut controls = Controls::default();
        controls.record(opcode::PING, b"abc".to_vec());
        controls.record(opcode::PONG, b"ignored".to_vec());
        controls.record(opcode::PING, Vec::new());
        controls.record(opcode::CLOSE, vec![0x03, 0xE8, b'x']);
        let mut out = Vec::new();
        WebSocket::Server.answer_controls(&mut out, &mut controls);
        assert_eq!(
            out,
            [
                &[0x8A, 3][..],
                b"abc",
                &[0x8A, 0],
                // The close echoes the status code only.
                &[0x88, 2, 0x03, 0xE8],
            ]
            .concat()
        );
        assert!(controls.peer_closed());
        out.clear();
        WebSocket::Server.answer_controls(&mut out, &mut controls);
        assert!(out.is_empty(), "answered once");
    }
}
