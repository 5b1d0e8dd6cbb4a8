//! `--framing line` for `tcp` and `tcps` against a newline-delimited echo server (one that
//! reads a line and writes it back, as many text protocols' test servers do): every
//! message is its `payload` bytes followed by `\n`.
//!
//! Message boundaries come from the payload size, as with `raw`: a body may hold `\n` bytes
//! too (a line server then echoes it as two lines, so the same bytes come back), and the
//! `\n` that ends a message is read as the head of the next one. Every echomark message
//! starts with its magic `EMK`, so a `\n` in front of a body is always a terminator; the
//! 16-byte echo header inside every message still carries client id and sequence, so
//! content and order are verified as with a prefix.

use super::{FrameError, FrameHead, Framing};

/// Messages of `payload` bytes, each ended by `\n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line {
    pub payload: usize,
}

impl Framing for Line {
    fn max_head(&self) -> usize {
        1
    }

    fn encode(&mut self, out: &mut Vec<u8>, _len: usize, write_body: impl FnOnce(&mut Vec<u8>)) {
        write_body(out);
        out.push(b'\n');
    }

    fn decode_head(&self, buf: &[u8]) -> Result<Option<FrameHead>, FrameError> {
        let body = self.payload as u64;
        Ok(match buf.first() {
            None => None,
            // The previous message's end.
            Some(b'\n') => Some(FrameHead::plain(1, body)),
            Some(_) => Some(FrameHead::plain(0, body)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::RecvBuf;

    #[test]
    fn lines_split_anywhere_and_bodies_holding_newlines_become_whole_messages() {
        // Two 6-byte messages, the second with a newline inside, each ended by `\n`.
        let mut framing = Line { payload: 6 };
        let mut wire = Vec::new();
        framing.encode(&mut wire, 6, |o| o.extend_from_slice(b"EMKab1"));
        framing.encode(&mut wire, 6, |o| o.extend_from_slice(b"EMK\nb2"));
        assert_eq!(wire, b"EMKab1\nEMK\nb2\n");
        let mut buf = RecvBuf::new(16);
        let mut bodies = Vec::new();
        for chunk in wire.chunks(3) {
            buf.spare()[..chunk.len()].copy_from_slice(chunk);
            buf.filled(chunk.len());
            while let Some(r) = buf.next_frame(&framing).unwrap() {
                bodies.push(buf.bytes_mut()[r].to_vec());
            }
        }
        assert_eq!(bodies, [b"EMKab1".to_vec(), b"EMK\nb2".to_vec()]);
    }
}
