//! A static HTTP server for the browser tests: serves a site folder (and, optionally, one
//! extra page of the test's own) on 127.0.0.1 until the test binary ends.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;

/// Serves `root` on a free loopback port and returns the port. `extra` is a page of the
/// test's own, `(name, html)`, answered at `/name`.
pub fn serve(root: PathBuf, extra: Option<(&'static str, String)>) -> u16 {
    serve_mounted(root, Vec::new(), extra)
}

/// [`serve`], with each `(prefix, folder)` of `mounts` served under `/prefix/` (one origin
/// for pages of several sites, so a harness page can read them all).
pub fn serve_mounted(
    root: PathBuf,
    mounts: Vec<(&'static str, PathBuf)>,
    extra: Option<(&'static str, String)>,
) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 8192];
            let n = s.read(&mut buf).unwrap_or(0);
            let request = String::from_utf8_lossy(&buf[..n]);
            let path = request.split_whitespace().nth(1).unwrap_or("/");
            let path = percent_decode(path.trim_start_matches('/'));
            let path = if path.is_empty() {
                "index.html".to_string()
            } else {
                path
            };
            let (status, kind, body) = match &extra {
                Some((name, html)) if *name == path => (
                    "200 OK",
                    "text/html; charset=utf-8",
                    html.clone().into_bytes(),
                ),
                _ => {
                    let file = mounts
                        .iter()
                        .find_map(|(prefix, folder)| {
                            Some(folder.join(path.strip_prefix(prefix)?.strip_prefix('/')?))
                        })
                        .unwrap_or_else(|| root.join(&path));
                    match std::fs::read(&file) {
                        Ok(b) if !path.contains("..") => ("200 OK", kind_of(&path), b),
                        _ => ("404 Not Found", "text/plain", b"not found".to_vec()),
                    }
                }
            };
            // The head and the body leave in one write: written apart, the body waits for
            // the head's delayed ACK (Nagle), 40 ms per file.
            let mut response = format!(
                "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .into_bytes();
            response.extend_from_slice(&body);
            let _ = s.write_all(&response);
        }
    });
    port
}

fn kind_of(path: &str) -> &'static str {
    match path.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("css") => "text/css",
        Some("svg") => "image/svg+xml",
        _ => "application/octet-stream",
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
