//! The receive side of a stream: a growable buffer of bytes not yet parsed, and the
//! extraction of whole message bodies with any [`Framing`].

use std::ops::Range;

use super::websocket::{self, Controls, Gathered};
use super::{http1, FrameError, Framing, Pieces};
use crate::message::MAX_PAYLOAD;

/// Smallest receive buffer: one read takes up to this much.
const MIN_CAPACITY: usize = 64 * 1024;

/// Unparsed bytes live in `bytes[start..end]`.
pub struct RecvBuf {
    bytes: Vec<u8>,
    start: usize,
    end: usize,
    /// WebSocket control frames received and not answered yet.
    controls: Controls,
}

impl RecvBuf {
    /// A buffer for frames of up to `frame` bytes (head included).
    pub fn new(frame: usize) -> Self {
        Self {
            bytes: vec![0; (4 * frame).max(MIN_CAPACITY)],
            start: 0,
            end: 0,
            controls: Controls::default(),
        }
    }

    /// Free space to read into, compacting first when the tail is short, and growing when
    /// a frame fills the whole buffer (an HTTP request of the largest payload with a long
    /// head does). Growth is bounded: `next_frame` rejects any frame longer than a message
    /// and any head longer than its framing allows. Never empty, so a read of 0 bytes
    /// always means the peer closed.
    pub fn spare(&mut self) -> &mut [u8] {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.bytes.len() - self.end < self.bytes.len() / 4 {
            self.bytes.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.bytes.len() {
            self.bytes.resize(self.bytes.len() * 2, 0);
        }
        &mut self.bytes[self.end..]
    }

    /// Appends bytes that arrived some other way (after a handshake, before the first read).
    pub fn preload(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let spare = self.spare();
            let n = spare.len().min(bytes.len());
            spare[..n].copy_from_slice(&bytes[..n]);
            self.filled(n);
            bytes = &bytes[n..];
        }
    }

    /// Whether no unparsed byte is held.
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// Records that `n` bytes were read into [`Self::spare`].
    pub fn filled(&mut self, n: usize) {
        self.end += n;
    }

    /// For owned-buffer IO (io_uring takes the buffer for the length of a read): the storage
    /// and the offset of its free space (compacted first, as for [`Self::spare`]). Until
    /// [`Self::give_back`], the buffer is empty.
    pub fn lend(&mut self) -> (Vec<u8>, usize) {
        self.spare();
        (std::mem::take(&mut self.bytes), self.end)
    }

    /// Returns the storage [`Self::lend`] handed out, with `n` bytes read at its offset.
    pub fn give_back(&mut self, bytes: Vec<u8>, n: usize) {
        self.bytes = bytes;
        self.end += n;
    }

    /// The next complete body (unmasked), as a range of [`Self::bytes_mut`]; `Ok(None)` when
    /// more bytes are needed, and for good once the peer sent a WebSocket close. Control
    /// frames on the way are recorded in [`Self::controls`].
    pub fn next_frame(
        &mut self,
        framing: &impl Framing,
    ) -> Result<Option<Range<usize>>, FrameError> {
        loop {
            if self.controls.peer_closed() {
                return Ok(None);
            }
            let avail = &self.bytes[self.start..self.end];
            let Some(head) = framing.decode_head(avail)? else {
                return Ok(None);
            };
            let body_at = self.start + head.len;
            match head.pieces {
                Pieces::Whole => {}
                Pieces::HttpChunks => {
                    let Some((consumed, len)) = http1::dechunk(&mut self.bytes[body_at..self.end])?
                    else {
                        return Ok(None);
                    };
                    self.start = body_at + consumed;
                    return Ok(Some(body_at..body_at + len));
                }
                Pieces::WebSocketFrames { masked } => {
                    let run = &mut self.bytes[body_at..self.end];
                    match websocket::gather(run, masked, &mut self.controls)? {
                        Gathered::Incomplete => return Ok(None),
                        Gathered::Control { consumed } => {
                            self.start = body_at + consumed;
                            continue;
                        }
                        Gathered::Message { consumed, len } => {
                            self.start = body_at + consumed;
                            return Ok(Some(body_at..body_at + len));
                        }
                    }
                }
            }
            if head.body > MAX_PAYLOAD as u64 {
                return Err(FrameError::TooLong(head.body));
            }
            let total = head.len + head.body as usize;
            if avail.len() < total {
                return Ok(None);
            }
            let range = body_at..self.start + total;
            self.start += total;
            if let Some(key) = head.mask {
                websocket::apply_mask(&mut self.bytes[range.clone()], key);
            }
            return Ok(Some(range));
        }
    }

    /// WebSocket control frames received so far and not answered.
    pub fn controls(&mut self) -> &mut Controls {
        &mut self.controls
    }

    /// The buffer, for the ranges [`Self::next_frame`] returns.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::prefix::LengthPrefix;

    #[test]
    fn frames_split_across_reads_come_out_whole() {
        let mut wire = Vec::new();
        let mut framing = LengthPrefix;
        for body in [&b"hello"[..], &[7u8; 300][..]] {
            framing.encode(&mut wire, body.len(), |out| out.extend_from_slice(body));
        }
        let mut buf = RecvBuf::new(16);
        let mut bodies = Vec::new();
        for chunk in wire.chunks(7) {
            buf.spare()[..chunk.len()].copy_from_slice(chunk);
            buf.filled(chunk.len());
            while let Some(r) = buf.next_frame(&framing).unwrap() {
                bodies.push(buf.bytes_mut()[r].to_vec());
            }
        }
        assert_eq!(bodies, [b"hello".to_vec(), vec![7u8; 300]]);
    }

    #[test]
    fn a_frame_larger_than_the_buffer_grows_it() {
        let mut wire = Vec::new();
        let body = vec![5u8; MAX_PAYLOAD];
        crate::framing::http1::write_request(&mut wire, "127.0.0.1:1", body.len());
        wire.extend_from_slice(&body);
        let mut buf = RecvBuf::new(16);
        let mut got = None;
        let mut fed = 0;
        while got.is_none() {
            let spare = buf.spare();
            assert!(
                !spare.is_empty(),
                "a full buffer must grow, not look closed"
            );
            let n = spare.len().min(wire.len() - fed).min(4096);
            spare[..n].copy_from_slice(&wire[fed..fed + n]);
            buf.filled(n);
            fed += n;
            got = buf
                .next_frame(&crate::framing::http1::Http1::Server)
                .unwrap()
                .map(|r| buf.bytes_mut()[r].to_vec());
        }
        assert_eq!(got.unwrap(), body);
    }

    #[test]
    fn an_impossible_length_is_an_error() {
        let mut buf = RecvBuf::new(16);
        let mut wire = Vec::new();
        prefix::write_prefix(&mut wire, MAX_PAYLOAD + 1);
        buf.spare()[..wire.len()].copy_from_slice(&wire);
        buf.filled(wire.len());
        assert_eq!(
            buf.next_frame(&LengthPrefix),
            Err(FrameError::TooLong(MAX_PAYLOAD as u64 + 1))
        );
    }

    use crate::framing::prefix;
}
