//! The opening handshake of RFC 6455 §4: the client's upgrade request for `/echo`, the
//! server's `101 Switching Protocols` and the checks each end makes of the other's.

use base64::Engine as _;
use ring::rand::{SecureRandom, SystemRandom};

use crate::framing::http1::header;

/// The GUID of RFC 6455 §1.3 that turns a key into its accept value.
const ACCEPT_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// The answer to an upgrade request that cannot be accepted.
pub const BAD_REQUEST: &str = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";

/// Longest upgrade request or response accepted.
pub const MAX_HANDSHAKE: usize = 4096;

/// `Sec-WebSocket-Accept` for a `Sec-WebSocket-Key` (RFC 6455 §4.2.2).
pub fn accept_value(key: &str) -> String {
    let mut input = String::with_capacity(key.len() + ACCEPT_GUID.len());
    input.push_str(key);
    input.push_str(ACCEPT_GUID);
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, input.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
}

/// Why an upgrade failed: which end saw what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// The client found no random source for its `Sec-WebSocket-Key`.
    #[error("WebSocket handshake: no random source for the key")]
    NoRandomSource,
    /// The server answered with another status line than `101`.
    #[error("WebSocket handshake: server answered {status:?}")]
    Status { status: String },
    /// The server's `101` lacks `Upgrade: websocket` or `Connection: Upgrade`.
    #[error("WebSocket handshake: response lacks Upgrade: websocket")]
    NotUpgraded,
    /// The server's `Sec-WebSocket-Accept` is not the one for the key sent.
    #[error("WebSocket handshake: wrong Sec-WebSocket-Accept")]
    WrongAccept,
    /// The client's request is not a GET `/echo` upgrade, version 13, with a 16-byte key.
    #[error("WebSocket handshake: bad upgrade request")]
    BadRequest,
    /// A head longer than [`MAX_HANDSHAKE`].
    #[error("WebSocket handshake: head longer than 4 KiB")]
    HeadTooLong,
    /// The peer closed the connection before its head ended.
    #[error("WebSocket handshake: connection closed during the upgrade")]
    Closed,
    /// A head that is not UTF-8.
    #[error("WebSocket handshake: head is not UTF-8")]
    NotUtf8(#[source] std::str::Utf8Error),
    /// The client sent frames before the server's `101`.
    #[error("WebSocket handshake: frames before the 101 (a client must wait for it)")]
    FramesBefore101,
    /// echomark's own server sent bytes after its `101`, which it never does.
    #[error("WebSocket handshake: bytes after the 101")]
    BytesAfter101,
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
        .map_err(|_| HandshakeError::NoRandomSource)?;
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
        return Err(HandshakeError::Status {
            status: status.to_string(),
        });
    }
    if !lists_token(header(head, "upgrade"), "websocket")
        || !lists_token(header(head, "connection"), "upgrade")
    {
        return Err(HandshakeError::NotUpgraded);
    }
    if header(head, "sec-websocket-accept") != Some(accept_value(key).as_str()) {
        return Err(HandshakeError::WrongAccept);
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
        None => Err((BAD_REQUEST.to_string(), HandshakeError::BadRequest)),
    }
}

/// Where an HTTP head ends in `buf`: the position of its blank line, at most
/// [`MAX_HANDSHAKE`] bytes in. Bytes after it are the peer's first frames: a server may
/// send frames (a ping) right after its `101`; a client must wait for the `101` before it
/// sends any (RFC 6455 §4.1), which the server side checks.
pub fn head_end(buf: &[u8]) -> Result<Option<usize>, HandshakeError> {
    match buf.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(end) if end <= MAX_HANDSHAKE => Ok(Some(end)),
        Some(_) => Err(HandshakeError::HeadTooLong),
        None if buf.len() > MAX_HANDSHAKE => Err(HandshakeError::HeadTooLong),
        None => Ok(None),
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
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n\r\nextra"), Ok(Some(14)));
        assert!(head_end(&[b'a'; MAX_HANDSHAKE + 1]).is_err());
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n"), Ok(None));
    }

    #[test]
    fn handshake_errors_say_what_each_end_saw() {
        let said = |e: HandshakeError| e.to_string();
        assert_eq!(
            said(HandshakeError::NoRandomSource),
            "WebSocket handshake: no random source for the key"
        );
        assert_eq!(
            said(HandshakeError::Status {
                status: "HTTP/1.1 404 Not Found".into()
            }),
            "WebSocket handshake: server answered \"HTTP/1.1 404 Not Found\""
        );
        assert_eq!(
            said(HandshakeError::NotUpgraded),
            "WebSocket handshake: response lacks Upgrade: websocket"
        );
        assert_eq!(
            said(HandshakeError::WrongAccept),
            "WebSocket handshake: wrong Sec-WebSocket-Accept"
        );
        assert_eq!(
            said(HandshakeError::BadRequest),
            "WebSocket handshake: bad upgrade request"
        );
        assert_eq!(
            said(HandshakeError::HeadTooLong),
            "WebSocket handshake: head longer than 4 KiB"
        );
        assert_eq!(
            said(HandshakeError::Closed),
            "WebSocket handshake: connection closed during the upgrade"
        );
        let bytes = vec![0xff_u8];
        let not_utf8 = std::str::from_utf8(&bytes).unwrap_err();
        assert_eq!(
            said(HandshakeError::NotUtf8(not_utf8)),
            "WebSocket handshake: head is not UTF-8"
        );
        assert_eq!(
            said(HandshakeError::FramesBefore101),
            "WebSocket handshake: frames before the 101 (a client must wait for it)"
        );
        assert_eq!(
            said(HandshakeError::BytesAfter101),
            "WebSocket handshake: bytes after the 101"
        );
        let status = check_server_response("HTTP/1.1 200 OK", "k").unwrap_err();
        assert!(matches!(status, HandshakeError::Status { status } if status == "HTTP/1.1 200 OK"));
    }
}
