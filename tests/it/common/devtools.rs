//! A headless Chromium driven over the DevTools protocol: navigate, evaluate, and press keys
//! as a keyboard does (`Input.dispatchKeyEvent`: trusted events, so Tab moves the focus and
//! Enter or Space activate a button, which script-made events never do).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::{Message, WebSocket};

use super::harness::headless;

/// One page of a headless Chromium, and the browser, killed on drop.
pub struct Browser {
    child: Child,
    socket: WebSocket<TcpStream>,
    next_id: u64,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plain HTTP GET of `path` on 127.0.0.1:`port`; the body (read to its Content-Length:
/// DevTools keeps the connection open).
fn http_get(port: u16, path: &str) -> std::io::Result<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )?;
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head.lines().find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse::<usize>().ok())?
            });
            if length.is_some_and(|n| body.len() >= n) {
                return Ok(body.to_string());
            }
        }
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Ok(text
                .split_once("\r\n\r\n")
                .map(|(_, b)| b.to_string())
                .unwrap_or_default());
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
}

impl Browser {
    /// Starts `browser` with a window of `width` × `height` and attaches to its page.
    pub fn start(browser: &Path, width: u32, height: u32) -> Self {
        let profile = tempfile::tempdir().unwrap();
        let child = headless(browser, profile.path())
            .arg("--remote-debugging-port=0")
            .arg(format!("--window-size={width},{height}"))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromium starts");
        let file = profile.path().join("DevToolsActivePort");
        let deadline = Instant::now() + Duration::from_secs(30);
        let port: u16 = loop {
            if let Some(port) = std::fs::read_to_string(&file)
                .ok()
                .and_then(|t| t.lines().next().and_then(|l| l.trim().parse().ok()))
            {
                break port;
            }
            assert!(Instant::now() < deadline, "chromium wrote no DevTools port");
            std::thread::sleep(Duration::from_millis(50));
        };
        let url = loop {
            let targets: Value = http_get(port, "/json")
                .ok()
                .and_then(|b| serde_json::from_str(&b).ok())
                .unwrap_or(Value::Null);
            let page = targets.as_array().and_then(|t| {
                t.iter()
                    .find(|t| t["type"] == "page")
                    .and_then(|t| t["webSocketDebuggerUrl"].as_str().map(String::from))
            });
            if let Some(url) = page {
                break url;
            }
            assert!(Instant::now() < deadline, "chromium shows no page");
            std::thread::sleep(Duration::from_millis(50));
        };
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let (socket, _) = tungstenite::client(url.as_str(), stream).expect("DevTools handshake");
        let mut b = Browser {
            child,
            socket,
            next_id: 1,
            _profile: profile,
        };
        b.call("Page.enable", json!({}));
        b
    }

    /// Calls `method` and returns its result (events in between are skipped).
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let request = json!({ "id": id, "method": method, "params": params });
        self.socket
            .send(Message::text(request.to_string()))
            .expect("DevTools send");
        loop {
            let message = self.socket.read().expect("DevTools answer");
            let Message::Text(text) = message else {
                continue;
            };
            let v: Value = serde_json::from_str(text.as_str()).expect("DevTools JSON");
            if v["id"] == id {
                assert!(v.get("error").is_none(), "{method}: {}", v["error"]);
                return v["result"].clone();
            }
        }
    }

    /// The value of the JavaScript expression `expr` in the page.
    pub fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({ "expression": expr, "returnByValue": true, "awaitPromise": true }),
        );
        assert!(
            r.get("exceptionDetails").is_none(),
            "{expr}: {}",
            r["exceptionDetails"]
        );
        r["result"]["value"].clone()
    }

    /// Opens `url` and waits until `ready` (an expression) is true.
    pub fn open(&mut self, url: &str, ready: &str) {
        self.call("Page.navigate", json!({ "url": url }));
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.eval(&format!("!!({ready})")) != Value::Bool(true) {
            assert!(Instant::now() < deadline, "{url}: never {ready}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Presses and releases one key: `key` as DOM names it (`Tab`, `Enter`, ` `, `u`), with
    /// Shift held when `shift`.
    pub fn press(&mut self, key: &str, shift: bool) {
        let (code, vk, text) = match key {
            "Tab" => ("Tab".to_string(), 9, None),
            "Enter" => ("Enter".to_string(), 13, Some("\r".to_string())),
            " " => ("Space".to_string(), 32, Some(" ".to_string())),
            k if k.len() == 1 => {
                let c = k.chars().next().unwrap().to_ascii_uppercase();
                (format!("Key{c}"), c as u32, Some(k.to_string()))
            }
            other => panic!("no key {other}"),
        };
        let modifiers = if shift { 8 } else { 0 };
        let mut down = json!({ "type": if text.is_some() { "keyDown" } else { "rawKeyDown" },
            "key": key, "code": code, "windowsVirtualKeyCode": vk, "modifiers": modifiers });
        if let Some(t) = &text {
            down["text"] = json!(t);
        }
        self.call("Input.dispatchKeyEvent", down);
        self.call(
            "Input.dispatchKeyEvent",
            json!({ "type": "keyUp", "key": key, "code": code,
                "windowsVirtualKeyCode": vk, "modifiers": modifiers }),
        );
    }

    /// Presses Tab until `is_there` (an expression about `document.activeElement`) holds;
    /// how many presses it took, or `None` after `most`.
    pub fn tab_to(&mut self, is_there: &str, most: usize) -> Option<usize> {
        for n in 1..=most {
            self.press("Tab", false);
            if self.eval(&format!(
                "(() => {{ const a = document.activeElement; return !!({is_there}); }})()"
            )) == Value::Bool(true)
            {
                return Some(n);
            }
        }
        None
    }
}
