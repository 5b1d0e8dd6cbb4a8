//! HTTP/1.1 framing for the `http` protocol: keep-alive `POST /echo` whose body is the
//! message, answered by `200 OK` with the same body.
//!
//! The window is honoured by **pipelining**: a client writes up to `window` requests back to
//! back on its one connection and the server answers them in order (RFC 9112 §9.3.2). That
//! keeps the closed loop and the strict order check identical to TCP's, and measures one
//! connection per client as arknet does; concurrent requests would need more connections.
//! Only what the echo needs is parsed: the start line, `Content-Length`, the blank line.

use std::fmt::Write as _;

use super::{FrameError, FrameHead, Framing};

/// Longest head accepted before the stream is declared corrupt.
pub const MAX_HEAD: usize = 8 * 1024;

/// Room a head echomark writes takes (start line, Host, Content-Type, Content-Length).
const WRITTEN_HEAD: usize = 160;

/// Which side's messages are parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `POST /echo HTTP/1.1` requests (the server reads these).
    Request,
    /// `HTTP/1.1 200 OK` responses (the client reads these).
    Response,
}

/// Why a head could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeadError {
    #[error("no blank line within {MAX_HEAD} bytes")]
    TooLong,
    #[error("not the expected start line")]
    BadStartLine,
    #[error("no Content-Length")]
    NoContentLength,
}

/// HTTP/1.1 for one end: the client writes requests and reads responses, the server the
/// other way round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Http1 {
    /// Sends this `Host` header (`127.0.0.1:port` or `[::1]:port`).
    Client {
        host: String,
    },
    Server,
}

impl Framing for Http1 {
    fn max_head(&self) -> usize {
        WRITTEN_HEAD
    }

    fn encode(&mut self, out: &mut Vec<u8>, len: usize, write_body: impl FnOnce(&mut Vec<u8>)) {
        match self {
            Http1::Client { host } => write_request(out, host, len),
            Http1::Server => write_response(out, len),
        }
        write_body(out);
    }

    fn decode_head(&self, buf: &[u8]) -> Result<Option<FrameHead>, FrameError> {
        let kind = match self {
            Http1::Client { .. } => Kind::Response,
            Http1::Server => Kind::Request,
        };
        Ok(parse(buf, kind)?.map(|(len, body)| FrameHead::plain(len, body)))
    }
}

/// Appends a request head for a body of `len` bytes. `host` is `127.0.0.1:port` or
/// `[::1]:port` (the Host header follows the address family).
pub fn write_request(out: &mut Vec<u8>, host: &str, len: usize) {
    let mut head = String::with_capacity(128);
    let _ = write!(
        head,
        "POST /echo HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/octet-stream\r\nContent-Length: {len}\r\n\r\n"
    );
    out.extend_from_slice(head.as_bytes());
}

/// Appends a response head for a body of `len` bytes.
pub fn write_response(out: &mut Vec<u8>, len: usize) {
    let mut head = String::with_capacity(96);
    let _ = write!(head, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {len}\r\n\r\n");
    out.extend_from_slice(head.as_bytes());
}

/// Parses a head at the start of `buf`: `Ok(Some((head_len, body_len)))`, `Ok(None)` when
/// more bytes are needed.
pub fn parse(buf: &[u8], kind: Kind) -> Result<Option<(usize, u64)>, HeadError> {
    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        return if buf.len() > MAX_HEAD {
            Err(HeadError::TooLong)
        } else {
            Ok(None)
        };
    };
    let head = std::str::from_utf8(&buf[..end]).map_err(|_| HeadError::BadStartLine)?;
    let start = head.split("\r\n").next().unwrap_or("");
    let start_ok = match kind {
        Kind::Request => start == "POST /echo HTTP/1.1",
        Kind::Response => start.starts_with("HTTP/1.1 200"),
    };
    if !start_ok {
        return Err(HeadError::BadStartLine);
    }
    let length = header(head, "content-length")
        .and_then(|v| v.parse::<u64>().ok())
        .ok_or(HeadError::NoContentLength)?;
    Ok(Some((end + 4, length)))
}

/// The trimmed value of header `name` (case-insensitive) in a head without its blank line;
/// the start line is skipped.
pub fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.split("\r\n")
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.trim().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_and_response_roundtrip() {
        let mut out = Vec::new();
        write_request(&mut out, "[::1]:8080", 1024);
        let (head, body) = parse(&out, Kind::Request).unwrap().unwrap();
        assert_eq!((head, body), (out.len(), 1024));
        assert!(String::from_utf8_lossy(&out).contains("Host: [::1]:8080\r\n"));
        let mut resp = Vec::new();
        write_response(&mut resp, 16);
        assert_eq!(
            parse(&resp, Kind::Response).unwrap(),
            Some((resp.len(), 16))
        );
    }

    #[test]
    fn partial_heads_wait_and_bad_heads_are_errors() {
        let mut out = Vec::new();
        write_request(&mut out, "127.0.0.1:1", 5);
        assert_eq!(parse(&out[..out.len() - 1], Kind::Request), Ok(None));
        assert_eq!(
            parse(b"GET / HTTP/1.1\r\n\r\n", Kind::Request),
            Err(HeadError::BadStartLine)
        );
        assert_eq!(
            parse(b"HTTP/1.1 500 Oops\r\n\r\n", Kind::Response),
            Err(HeadError::BadStartLine)
        );
        assert_eq!(
            parse(b"POST /echo HTTP/1.1\r\nHost: x\r\n\r\n", Kind::Request),
            Err(HeadError::NoContentLength)
        );
        assert_eq!(
            parse(&vec![b'a'; MAX_HEAD + 1], Kind::Request),
            Err(HeadError::TooLong)
        );
        let lower = b"HTTP/1.1 200 OK\r\ncontent-length: 7\r\n\r\n";
        assert_eq!(parse(lower, Kind::Response), Ok(Some((lower.len(), 7))));
    }
}
