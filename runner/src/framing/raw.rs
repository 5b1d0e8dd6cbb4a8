//! `--framing raw` for `tcp` and `tcps` against any stream echo server: a message is exactly
//! `payload` bytes with no head, so a server that writes back what it reads echoes it. Message
//! boundaries come from the payload size alone; the 16-byte echo header inside every message
//! still carries client id and sequence, so content and order are verified as with a prefix.

use super::{FrameError, FrameHead, Framing};

/// Fixed-size messages of `payload` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Raw {
    pub payload: usize,
}

impl Framing for Raw {
    fn max_head(&self) -> usize {
        0
    }

    fn encode(&mut self, out: &mut Vec<u8>, _len: usize, write_body: impl FnOnce(&mut Vec<u8>)) {
        write_body(out);
    }

    fn decode_head(&self, buf: &[u8]) -> Result<Option<FrameHead>, FrameError> {
        // The body is always `payload` bytes; RecvBuf waits until that many have arrived.
        Ok((!buf.is_empty()).then_some(FrameHead::plain(0, self.payload as u64)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::RecvBuf;

    #[test]
    fn coalesced_and_split_bytes_become_whole_messages() {
        let framing = Raw { payload: 5 };
        let wire = b"abcdefghijklmno";
        let mut buf = RecvBuf::new(5);
        let mut bodies = Vec::new();
        for chunk in wire.chunks(4) {
            buf.spare()[..chunk.len()].copy_from_slice(chunk);
            buf.filled(chunk.len());
            while let Some(r) = buf.next_frame(&framing).unwrap() {
                bodies.push(buf.bytes_mut()[r].to_vec());
            }
        }
        assert_eq!(
            bodies,
            [b"abcde".to_vec(), b"fghij".to_vec(), b"klmno".to_vec()]
        );
        let mut out = Vec::new();
        Raw { payload: 3 }.encode(&mut out, 3, |o| o.extend_from_slice(b"xyz"));
        assert_eq!(out, b"xyz");
    }
}
