//! `serve --protocol http` on every backend against requests whose length two parsers could
//! read two ways (request smuggling, #53): each is answered `400` and the connection closed
//! at once (RFC 9112 §6.3), after the echoes of the requests before it, never waited on
//! until a timeout and never echoed.
use crate::common::*;
use echomark_runner::framing::http1::{write_response, BAD_REQUEST_CLOSE};
use std::io::{Read, Write};
use std::time::Duration;

/// A well-formed request, echoed before the ambiguous one is refused.
const FINE: &str = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello";

/// Requests with a body whose end the server cannot know. Every body could be the start of
/// a chunk ("12345" is a chunk size waiting for its line's end), so a server that took the
/// chunked coding would wait for more.
const AMBIGUOUS: [(&str, &str); 5] = [
    (
        "Content-Length beside chunked",
        "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n12345",
    ),
    (
        "conflicting Content-Length beside chunked",
        "Content-Length: 5\r\nContent-Length: 7\r\nTransfer-Encoding: chunked\r\n\r\n12345",
    ),
    (
        "conflicting Content-Length fields",
        "Content-Length: 5\r\nContent-Length: 7\r\n\r\n12345",
    ),
    ("a Content-Length list", "Content-Length: 5, 7\r\n\r\n12345"),
    (
        "a coding other than chunked last",
        "Transfer-Encoding: chunked, gzip\r\n\r\n12345",
    ),
];

/// Everything the server sends on `stream` until it closes it; fails when it is still open
/// after `limit` (far below the server's 60 s idle timeout).
fn read_to_close(stream: &mut std::net::TcpStream, limit: Duration, what: &str) -> Vec<u8> {
    stream.set_read_timeout(Some(limit)).unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return answer,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            // A reset after the answer closes it too.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return answer,
            Err(e) => panic!(
                "{what}: not closed ({e}) after {:?}",
                String::from_utf8_lossy(&answer)
            ),
        }
    }
}

#[test]
fn every_backend_answers_an_ambiguous_request_400_and_closes() {
    let mut expected = Vec::new();
    write_response(&mut expected, 5);
    expected.extend_from_slice(b"hello");
    expected.extend_from_slice(BAD_REQUEST_CLOSE);
    for backend in ["tokio", "monoio", "io-uring"] {
        let server = Server::echomark(&["--protocol", "http", "--backend", backend]);
        for (what, fields) in AMBIGUOUS {
            let what = format!("{backend}, {what}");
            let mut stream = std::net::TcpStream::connect(&server.address).unwrap();
            let ambiguous = format!("POST /echo HTTP/1.1\r\nHost: x\r\n{fields}");
            stream
                .write_all(format!("{FINE}{ambiguous}").as_bytes())
                .unwrap();
            let answer = read_to_close(&mut stream, Duration::from_secs(20), &what);
            assert_eq!(
                String::from_utf8_lossy(&answer),
                String::from_utf8_lossy(&expected),
                "{what}"
            );
        }
        // The server still serves, and counted each refusal as a content error.
        let mut stream = std::net::TcpStream::connect(&server.address).unwrap();
        exchange(&mut stream, "http");
        drop(stream);
        let report = server.stop();
        assert_eq!(
            report["content_errors"],
            AMBIGUOUS.len(),
            "{backend}: {report}"
        );
        assert_eq!(report["foreign_messages"], AMBIGUOUS.len() + 1, "{backend}");
    }
}
