//! What a connection does with the bytes it received: the WebSocket upgrade request, or
//! messages to echo.

use super::Conn;
use crate::framing::websocket::handshake::{self, BAD_REQUEST};
use crate::framing::Framing;
use crate::iouring::ShardContext;

impl<F: Framing> Conn<F> {
    /// Takes bytes the socket delivered: the upgrade request, or messages to echo. `false`
    /// when the connection must close now.
    pub(super) fn feed(&mut self, data: &[u8], bytes: bool, ctx: &ShardContext) -> bool {
        if bytes {
            self.side.out.extend_from_slice(data);
            return true;
        }
        if let Some(head) = &mut self.upgrade {
            head.extend_from_slice(data);
            let answer = match handshake::head_end(head) {
                Ok(None) => return true,
                Ok(Some(end)) if head.len() > end + 4 => Err(BAD_REQUEST.to_string()),
                Ok(Some(end)) => match std::str::from_utf8(&head[..end]) {
                    Ok(text) => handshake::server_response(text).map_err(|(refusal, _)| refusal),
                    Err(_) => Err(BAD_REQUEST.to_string()),
                },
                Err(_) => Err(BAD_REQUEST.to_string()),
            };
            self.upgrade = None;
            match answer {
                Ok(response) => self.side.out.extend_from_slice(response.as_bytes()),
                Err(refusal) => {
                    ctx.hooks.handshake_failed();
                    self.side.out.extend_from_slice(refusal.as_bytes());
                    self.close_after_send = true;
                }
            }
            return true;
        }
        self.side.recv.preload(data);
        self.answer()
    }

    /// Echoes every whole message received; a corrupt stream closes once what it still
    /// owes is written (the echoes before the corrupt message, an HTTP server's `400`).
    /// `false` when the connection must close now.
    pub(super) fn answer(&mut self) -> bool {
        let corrupt = self.side.answer().is_err();
        if corrupt || self.side.peer_closed() {
            self.close_after_send = true;
        }
        !corrupt || !self.side.out.is_empty()
    }
}
