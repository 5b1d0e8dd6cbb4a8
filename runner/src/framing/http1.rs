//! HTTP/1.1 framing for the `http` protocol: keep-alive `POST /echo` whose body is the
//! message, answered by `200 OK` with the same body.
//!
//! The window is honoured by **pipelining**: a client writes up to `window` requests back to
//! back on its one connection and the server answers them in order (RFC 9112 §9.3.2). That
//! keeps the closed loop and the strict order check identical to TCP's, and measures one
//! connection per client as arknet does; concurrent requests would need more connections.
//! Only what the echo needs is parsed: the start line, `Content-Length` or
//! `Transfer-Encoding: chunked` (which an external server may answer with; the chunks are
//! joined in place), the blank line.

use std::fmt::Write as _;

use super::{FrameError, FrameHead, Framing, Pieces};

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
    #[error("malformed chunk")]
    BadChunk,
    #[error("a chunked body longer than any message")]
    ChunkedTooLong,
    #[error("trailer fields longer than {MAX_HEAD} bytes")]
    TrailersTooLong,
    #[error("a Content-Length that is not one decimal number")]
    BadContentLength,
    #[error("both Transfer-Encoding and Content-Length (RFC 9112 §6.3: a smuggling shape)")]
    LengthAndEncoding,
    #[error("a transfer coding other than chunked last (RFC 9112 §6.3)")]
    NotChunked,
    #[error("a malformed header field line")]
    BadField,
}

/// What an HTTP server answers a request it cannot frame, before it closes the connection
/// (RFC 9112 §6.3: the length of what follows is unknown, so nothing after it is read).
pub const BAD_REQUEST_CLOSE: &[u8] =
    b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/// How a message's body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// `Content-Length` bytes follow the head.
    Length(u64),
    /// Chunks follow the head (`Transfer-Encoding: chunked`).
    Chunked,
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
        Ok(parse(buf, kind)?.map(|(len, body)| match body {
            Body::Length(n) => FrameHead::plain(len, n),
            Body::Chunked => FrameHead {
                pieces: Pieces::HttpChunks,
                ..FrameHead::plain(len, 0)
            },
        }))
    }

    fn refusal(&self) -> Option<&'static [u8]> {
        match self {
            Http1::Client { .. } => None,
            Http1::Server => Some(BAD_REQUEST_CLOSE),
        }
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

/// Parses a head at the start of `buf`: `Ok(Some((head_len, body)))`, `Ok(None)` when more
/// bytes are needed.
pub fn parse(buf: &[u8], kind: Kind) -> Result<Option<(usize, Body)>, HeadError> {
    // The whole head, its blank line included, must fit in MAX_HEAD: a longer one is
    // refused whether or not its end has arrived.
    let window = &buf[..buf.len().min(MAX_HEAD)];
    let Some(end) = window.windows(4).position(|w| w == b"\r\n\r\n") else {
        return if buf.len() >= MAX_HEAD {
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
    let body = match kind {
        Kind::Request => request_body(head)?,
        Kind::Response => response_body(head)?,
    };
    Ok(Some((end + 4, body)))
}

/// How a request's body is delimited (RFC 9112 §6.3), refusing every shape two parsers
/// could read two ways: Transfer-Encoding beside Content-Length, a coding other than
/// chunked last, Content-Length values that differ or are no number, and field lines with
/// no name or whitespace before the colon (§5.1).
fn request_body(head: &str) -> Result<Body, HeadError> {
    let well_formed = head.split("\r\n").skip(1).all(|line| {
        line.split_once(':').is_some_and(|(name, _)| {
            !name.is_empty() && !name.bytes().any(|b| b.is_ascii_whitespace())
        })
    });
    if !well_formed {
        return Err(HeadError::BadField);
    }
    let length = content_length(head)?;
    match (last_coding(head), length) {
        (None, Some(n)) => Ok(Body::Length(n)),
        (None, None) => Err(HeadError::NoContentLength),
        (Some(_), Some(_)) => Err(HeadError::LengthAndEncoding),
        (Some(last), None) if last.eq_ignore_ascii_case("chunked") => Ok(Body::Chunked),
        (Some(_), None) => Err(HeadError::NotChunked),
    }
}

/// How a response's body is delimited: a chunked transfer coding wins over any
/// Content-Length (RFC 9112 §6.3), as a client reading any server takes it.
fn response_body(head: &str) -> Result<Body, HeadError> {
    if last_coding(head).is_some_and(|last| last.eq_ignore_ascii_case("chunked")) {
        return Ok(Body::Chunked);
    }
    content_length(head)?
        .map(Body::Length)
        .ok_or(HeadError::NoContentLength)
}

/// The last transfer coding over every Transfer-Encoding field, if there is one.
fn last_coding(head: &str) -> Option<&str> {
    headers(head, "transfer-encoding")
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .last()
}

/// The Content-Length over every field and list element (RFC 9110 §8.6: the same value
/// repeated is that value); values that differ, or one that is not digits, are an error.
fn content_length(head: &str) -> Result<Option<u64>, HeadError> {
    let mut length = None;
    for value in headers(head, "content-length").flat_map(|v| v.split(',')) {
        let value = value.trim();
        if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
            return Err(HeadError::BadContentLength);
        }
        let n = value
            .parse::<u64>()
            .map_err(|_| HeadError::BadContentLength)?;
        if length.is_some_and(|seen| seen != n) {
            return Err(HeadError::BadContentLength);
        }
        length = Some(n);
    }
    Ok(length)
}

/// Longest chunk-size line accepted (size, extensions, CRLF).
const MAX_CHUNK_LINE: usize = 1024;

/// The most bytes a chunked body may take on the wire before its trailers: twice the
/// largest message, plus room for its chunk lines.
const MAX_CHUNKED_WIRE: usize = 2 * crate::message::MAX_PAYLOAD + 64 * 1024;

/// A chunked body at the start of `buf` (after its head): when it is complete, joins the
/// chunks' data at the start of `buf` and returns `(bytes the body took on the wire, data
/// length)`; `Ok(None)` (and `buf` untouched) while more bytes are needed. Trailer fields
/// are skipped.
pub fn dechunk(buf: &mut [u8]) -> Result<Option<(usize, usize)>, HeadError> {
    // First pass: find every chunk without touching the buffer.
    let mut chunks: Vec<(usize, usize)> = Vec::new();
    let mut at = 0usize;
    let mut total = 0usize;
    loop {
        // Every part is bounded, and so is the whole: data, chunk lines and their CRLFs
        // (tiny chunks cannot make a small body take unbounded bytes or bookkeeping).
        if at > MAX_CHUNKED_WIRE {
            return Err(HeadError::ChunkedTooLong);
        }
        let Some(line_end) = find_crlf(&buf[at..], MAX_CHUNK_LINE)? else {
            return Ok(None);
        };
        let line = std::str::from_utf8(&buf[at..at + line_end]).map_err(|_| HeadError::BadChunk)?;
        let size_text = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| HeadError::BadChunk)?;
        at += line_end + 2;
        if size == 0 {
            break;
        }
        total = total.checked_add(size).ok_or(HeadError::ChunkedTooLong)?;
        if total > crate::message::MAX_PAYLOAD {
            return Err(HeadError::ChunkedTooLong);
        }
        if buf.len() < at + size + 2 {
            return Ok(None);
        }
        if &buf[at + size..at + size + 2] != b"\r\n" {
            return Err(HeadError::BadChunk);
        }
        chunks.push((at, size));
        at += size + 2;
    }
    // Trailer fields, then the blank line that ends the body: MAX_HEAD in all.
    let trailers_start = at;
    loop {
        let room = MAX_HEAD.saturating_sub(at - trailers_start);
        let Some(line_end) = find_crlf(&buf[at..], room).map_err(|_| HeadError::TrailersTooLong)?
        else {
            return Ok(None);
        };
        at += line_end + 2;
        if at - trailers_start > MAX_HEAD {
            return Err(HeadError::TrailersTooLong);
        }
        if line_end == 0 {
            break;
        }
    }
    // Second pass: the body is complete; move the data together (always leftwards).
    let mut to = 0usize;
    for (from, size) in chunks {
        buf.copy_within(from..from + size, to);
        to += size;
    }
    Ok(Some((at, total)))
}

/// The offset of the first CRLF in `buf`, if it comes within `limit` bytes.
fn find_crlf(buf: &[u8], limit: usize) -> Result<Option<usize>, HeadError> {
    match buf.windows(2).position(|w| w == b"\r\n") {
        Some(p) if p <= limit => Ok(Some(p)),
        Some(_) => Err(HeadError::BadChunk),
        None if buf.len() > limit + 1 => Err(HeadError::BadChunk),
        None => Ok(None),
    }
}

/// The trimmed value of header `name` (case-insensitive) in a head without its blank line;
/// the start line is skipped.
pub fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    headers(head, name).next()
}

/// Every trimmed value of header `name`, in order, as [`header`] finds the first.
fn headers<'a: 'n, 'n>(head: &'a str, name: &'n str) -> impl Iterator<Item = &'a str> + 'n {
    head.split("\r\n")
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .filter(move |(n, _)| n.trim().eq_ignore_ascii_case(name))
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
        assert_eq!((head, body), (out.len(), Body::Length(1024)));
        assert!(String::from_utf8_lossy(&out).contains("Host: [::1]:8080\r\n"));
        let mut resp = Vec::new();
        write_response(&mut resp, 16);
        assert_eq!(
            parse(&resp, Kind::Response).unwrap(),
            Some((resp.len(), Body::Length(16)))
        );
    }

    #[test]
    fn every_part_of_a_message_is_bounded_even_when_it_ends_properly() {
        // A 56 KB head with its blank line is as much too long as one without it.
        let mut head = b"POST /echo HTTP/1.1\r\nContent-Length: 1\r\n".to_vec();
        while head.len() < 56_000 {
            head.extend_from_slice(b"X-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
        }
        head.extend_from_slice(b"\r\n");
        assert_eq!(parse(&head, Kind::Request), Err(HeadError::TooLong));
        // Endless trailer fields: refused once they pass MAX_HEAD, not buffered forever.
        let mut trailers = b"1\r\nx\r\n0\r\n".to_vec();
        while trailers.len() < 3 * MAX_HEAD {
            trailers.extend_from_slice(b"X-Trailer: 1\r\n");
        }
        assert_eq!(dechunk(&mut trailers), Err(HeadError::TrailersTooLong));
        let mut short = b"1\r\nx\r\n0\r\nX-Trailer: 1\r\n".to_vec();
        assert_eq!(
            dechunk(&mut short),
            Ok(None),
            "a few trailers still wait for more"
        );
        // A small body in endless one-byte chunks.
        let mut tiny = Vec::new();
        while tiny.len() < 4 * MAX_CHUNKED_WIRE {
            tiny.extend_from_slice(b"1;ext=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\nx\r\n");
        }
        assert_eq!(dechunk(&mut tiny), Err(HeadError::ChunkedTooLong));
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
        assert_eq!(
            parse(lower, Kind::Response),
            Ok(Some((lower.len(), Body::Length(7))))
        );
    }

    #[test]
    fn a_request_two_parsers_could_frame_two_ways_is_refused() {
        let request = |fields: &str| format!("POST /echo HTTP/1.1\r\nHost: x\r\n{fields}\r\n");
        let refused = [
            (
                "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
                HeadError::LengthAndEncoding,
            ),
            (
                "Transfer-Encoding: chunked\r\nContent-Length: 5, 6\r\n",
                HeadError::BadContentLength,
            ),
            (
                "Content-Length: 5\r\nContent-Length: 6\r\n",
                HeadError::BadContentLength,
            ),
            ("Content-Length: 5, 6\r\n", HeadError::BadContentLength),
            ("Content-Length: +5\r\n", HeadError::BadContentLength),
            ("Content-Length: 0x5\r\n", HeadError::BadContentLength),
            (
                "Content-Length: 99999999999999999999999\r\n",
                HeadError::BadContentLength,
            ),
            ("Transfer-Encoding: gzip\r\n", HeadError::NotChunked),
            (
                "Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n",
                HeadError::NotChunked,
            ),
            (
                "Transfer-Encoding: gzip\r\nContent-Length: 5\r\n",
                HeadError::LengthAndEncoding,
            ),
            ("Content-Length : 5\r\n", HeadError::BadField),
            (" Content-Length: 5\r\n", HeadError::BadField),
            ("Content-Length: 5\r\nno colon\r\n", HeadError::BadField),
        ];
        for (fields, why) in refused {
            let head = request(fields);
            assert_eq!(
                parse(head.as_bytes(), Kind::Request),
                Err(why),
                "{fields:?}"
            );
        }
        // The same value repeated is that value (RFC 9110 §8.6); chunked alone is chunked.
        let head = request("Content-Length: 5\r\ncontent-length: 5, 5\r\n");
        assert_eq!(
            parse(head.as_bytes(), Kind::Request),
            Ok(Some((head.len(), Body::Length(5))))
        );
        let head = request("Transfer-Encoding: gzip, Chunked\r\n");
        assert_eq!(
            parse(head.as_bytes(), Kind::Request),
            Ok(Some((head.len(), Body::Chunked)))
        );
        // What the server answers them, and that a client has no such answer.
        assert_eq!(Http1::Server.refusal(), Some(BAD_REQUEST_CLOSE));
        assert_eq!(Http1::Client { host: "x".into() }.refusal(), None);
    }

    #[test]
    fn chunked_bodies_are_joined_only_once_complete() {
        let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n";
        assert_eq!(
            parse(head, Kind::Response),
            Ok(Some((head.len(), Body::Chunked)))
        );
        let body = b"4;ext=1\r\nWiki\r\n5\r\npedia\r\n0\r\nX-Trailer: 1\r\n\r\nNEXT";
        let complete = body.len() - 4;
        for cut in 0..complete {
            let mut part = body[..cut].to_vec();
            let before = part.clone();
            assert_eq!(dechunk(&mut part), Ok(None), "cut at {cut}");
            assert_eq!(part, before, "an incomplete body is left as it was");
        }
        let mut whole = body.to_vec();
        assert_eq!(dechunk(&mut whole), Ok(Some((complete, 9))));
        assert_eq!(&whole[..9], b"Wikipedia");
        assert_eq!(dechunk(&mut b"zz\r\n".to_vec()), Err(HeadError::BadChunk));
        assert_eq!(
            dechunk(&mut b"3\r\nabcX\r\n0\r\n\r\n".to_vec()),
            Err(HeadError::BadChunk)
        );
        assert_eq!(
            dechunk(&mut b"ffffff\r\n".to_vec()),
            Err(HeadError::ChunkedTooLong)
        );
    }
}
