//! WebSocket (RFC 6455) for the `websocket` and `wss` protocols: an HTTP/1.1 upgrade to
//! `/echo` during setup, then one binary frame per message.
//!
//! Client frames are masked and server frames are not, as the RFC requires; each end rejects
//! a frame with the other masking, a reserved bit, a continuation or control opcode, or a
//! length that is not minimally encoded. The echo never fragments, pings or closes mid-run,
//! so any such frame means the stream is not what was sent and is counted as a content error.
//!
//! Masking keys: the RFC asks for unpredictable keys so that proxies cannot be poisoned by
//! chosen bytes. Each client seeds a xorshift generator from the operating system's random
//! source (ring) once per connection and draws one key per frame from it; drawing every key
//! from the system source would add a system call per message and measure that instead.
//! The cost the RFC does impose, XOR-ing every payload byte on both ends, is paid in full.

use base64::Engine as _;
use ring::rand::{SecureRandom, SystemRandom};

use super::http1::header;
use super::{FrameError as AnyFrameError, FrameHead, Framing};

/// Longest frame head: 2 bytes, an 8-byte extended length and a 4-byte masking key.
pub const MAX_HEAD: usize = 14;

/// The GUID of RFC 6455 §1.3 that turns a key into its accept value.
const ACCEPT_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// Longest upgrade request or response accepted.
pub const MAX_HANDSHAKE: usize = 4096;

/// FIN set, opcode 2 (binary).
const FIN_BINARY: u8 = 0x82;

/// A decoded frame head.
pub type Head = FrameHead;

/// Why a frame head is rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("not a final binary frame (first byte {0:#04x})")]
    NotFinalBinary(u8),
    #[error("masking bit is {got}, expected {expected}")]
    Masking { got: bool, expected: bool },
    #[error("length is not minimally encoded")]
    NonMinimalLength,
    #[error("64-bit length has its top bit set")]
    LengthTooLarge,
}

/// Appends the head of a final binary frame carrying `len` bytes, masked with `mask` if given.
pub fn write_head(out: &mut Vec<u8>, len: usize, mask: Option<[u8; 4]>) {
    out.push(FIN_BINARY);
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

/// Decodes a frame head at the start of `buf`; `Ok(None)` when more bytes are needed.
/// `masked` says whether frames from the peer must be masked (true on the server).
pub fn read_head(buf: &[u8], masked: bool) -> Result<Option<Head>, FrameError> {
    let (Some(&first), Some(&second)) = (buf.first(), buf.get(1)) else {
        return Ok(None);
    };
    if first != FIN_BINARY {
        return Err(FrameError::NotFinalBinary(first));
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
    Ok(Some(Head {
        len: key_at + if masked { 4 } else { 0 },
        body,
        mask,
        chunked: false,
    }))
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

/// `Sec-WebSocket-Accept` for a `Sec-WebSocket-Key` (RFC 6455 §4.2.2).
pub fn accept_value(key: &str) -> String {
    let mut input = String::with_capacity(key.len() + ACCEPT_GUID.len());
    input.push_str(key);
    input.push_str(ACCEPT_GUID);
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, input.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
}

/// Why an upgrade failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("WebSocket handshake: {0}")]
pub struct HandshakeError(pub String);

fn refused(what: impl std::fmt::Display) -> HandshakeError {
    HandshakeError(what.to_string())
}

/// Whether a comma-separated header value lists `token` (case-insensitive).
fn lists_token(value: Option<&str>, token: &str) -> bool {
    value.is_some_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
}

/// A fresh `Sec-WebSocket-Key`: 16 random bytes, base64.
pub fn new_key() -> Result<String, HandshakeError> {
    let mut nonce = [0u8; 16];
    SystemRandom::new()
        .fill(&mut nonce)
        .map_err(|_| refused("no random source for the key"))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(nonce))
}

/// The client's upgrade request for `/echo`.
pub fn client_request(host: &str, key: &str) -> String {
    format!(
        "GET /echo HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
}

/// Checks the server's answer (a head without its blank line) to a request sent with `key`.
pub fn check_server_response(head: &str, key: &str) -> Result<(), HandshakeError> {
    let status = head.split("\r\n").next().unwrap_or("");
    if !status.starts_with("HTTP/1.1 101") {
        return Err(refused(format!("server answered {status:?}")));
    }
    if !lists_token(header(head, "upgrade"), "websocket")
        || !lists_token(header(head, "connection"), "upgrade")
    {
        return Err(refused("response lacks Upgrade: websocket"));
    }
    if header(head, "sec-websocket-accept") != Some(accept_value(key).as_str()) {
        return Err(refused("wrong Sec-WebSocket-Accept"));
    }
    Ok(())
}

/// The answer to a client's upgrade request (a head without its blank line): `101
/// Switching Protocols` for GET `/echo`, version 13 and a 16-byte key; otherwise the `400`
/// to send before failing.
pub fn server_response(head: &str) -> Result<String, (String, HandshakeError)> {
    let key = header(head, "sec-websocket-key");
    let key_ok = key.is_some_and(|k| {
        base64::engine::general_purpose::STANDARD
            .decode(k)
            .is_ok_and(|raw| raw.len() == 16)
    });
    let valid = head.split("\r\n").next() == Some("GET /echo HTTP/1.1")
        && lists_token(header(head, "upgrade"), "websocket")
        && lists_token(header(head, "connection"), "upgrade")
        && header(head, "sec-websocket-version") == Some("13");
    match key.filter(|_| valid && key_ok) {
        Some(key) => Ok(format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Accept: {}\r\n\r\n",
            accept_value(key)
        )),
        None => Err((
            "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".to_string(),
            refused("bad upgrade request"),
        )),
    }
}

/// Where an HTTP head ends in `buf`: the position of its blank line. An upgrade head must be
/// all that was sent (the peer sends no frame before the handshake completes), and at most
/// [`MAX_HANDSHAKE`] bytes long.
pub fn head_end(buf: &[u8]) -> Result<Option<usize>, HandshakeError> {
    match buf.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(end) if end + 4 != buf.len() => Err(refused("bytes after the upgrade head")),
        Some(end) => Ok(Some(end)),
        None if buf.len() > MAX_HANDSHAKE => Err(refused("head longer than 4 KiB")),
        None => Ok(None),
    }
}

/// RFC 6455 binary frames for one end: the client masks every frame with a fresh key, the
/// server sends unmasked frames and insists on masked ones.
#[derive(Debug, Clone)]
pub enum WebSocket {
    Client(MaskKeys),
    Server,
}

impl Framing for WebSocket {
    fn max_head(&self) -> usize {
        MAX_HEAD
    }

    fn encode(&mut self, out: &mut Vec<u8>, len: usize, write_body: impl FnOnce(&mut Vec<u8>)) {
        let mask = match self {
            WebSocket::Client(keys) => Some(keys.next_key()),
            WebSocket::Server => None,
        };
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6455 §1.3.
    #[test]
    fn accept_value_matches_the_rfc_example() {
        assert_eq!(
            accept_value("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

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
                chunked: false,
            }
        );
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
            Some(Head {
                len: 10,
                body: 65536,
                mask: None,
                chunked: false,
            })
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
    fn rejects_what_the_echo_never_sends() {
        // Text, continuation, ping and close frames; a cleared FIN; a reserved bit.
        for first in [0x81, 0x00, 0x89, 0x88, 0x02, 0xC2] {
            assert_eq!(
                read_head(&[first, 0x80, 0, 0, 0, 0], true),
                Err(FrameError::NotFinalBinary(first))
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
    fn handshake_succeeds_between_the_two_ends_and_rejects_a_wrong_path() {
        let key = new_key().unwrap();
        let request = client_request("127.0.0.1:9", &key);
        let end = head_end(request.as_bytes()).unwrap().unwrap();
        let response = server_response(&request[..end]).unwrap();
        let end = head_end(response.as_bytes()).unwrap().unwrap();
        check_server_response(&response[..end], &key).unwrap();
        assert!(check_server_response(&response[..end], &new_key().unwrap()).is_err());

        let bad = "GET /other HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==";
        let (answer, error) = server_response(bad).unwrap_err();
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        assert!(error.to_string().contains("bad upgrade request"));
        assert!(head_end(b"GET / HTTP/1.1\r\n\r\nextra").is_err());
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n"), Ok(None));
    }
}
