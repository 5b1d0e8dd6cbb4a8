//! The frames of RFC 6455 §5.4–5.5 that echomark never sends but must accept: a binary
//! message split into a first frame and continuation frames, and control frames (close,
//! ping, pong) before a message or between its fragments.
//!
//! [`gather`] looks at a run of frames at the start of the unparsed bytes. Nothing is
//! touched until the run is complete (a partial run is looked at again when more bytes
//! arrive), then the fragments' payloads are unmasked and moved together in place, so the
//! message comes out as one body like any other, and the control frames' payloads go to
//! [`Controls`] for the IO loop to answer.

use super::{apply_mask, opcode, read_raw_head, FrameError, RawHead, MAX_CONTROL_PAYLOAD};
use crate::message::MAX_PAYLOAD;

/// Most frames (fragments and control frames) one message may arrive in; beyond it a peer
/// is flooding, not echoing.
pub const MAX_PIECES: usize = 4096;

/// What [`gather`] found at the start of the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gathered {
    /// More bytes are needed; nothing was changed.
    Incomplete,
    /// One control frame, recorded in [`Controls`], took `consumed` bytes.
    Control { consumed: usize },
    /// A whole message, now in the first `len` bytes; the run took `consumed` bytes.
    Message { consumed: usize, len: usize },
}

/// Control frames received and not answered yet.
#[derive(Debug, Default)]
pub struct Controls {
    pings: Vec<Vec<u8>>,
    close: Option<Vec<u8>>,
    close_answered: bool,
    /// Pings and pongs received on this connection, for the record.
    pub pings_received: u64,
    pub pongs_received: u64,
    /// The payload of the latest pong, for a client that pinged and waits for the answer.
    pub last_pong: Option<Vec<u8>>,
}

impl Controls {
    /// Records a control frame's (unmasked) payload.
    pub fn record(&mut self, op: u8, payload: Vec<u8>) {
        match op {
            opcode::PING => {
                self.pings_received += 1;
                self.pings.push(payload);
            }
            opcode::PONG => {
                self.pongs_received += 1;
                self.last_pong = Some(payload);
            }
            _ => {
                if self.close.is_none() {
                    self.close = Some(payload);
                }
            }
        }
    }

    /// The payloads of the pings still owed a pong, oldest first.
    pub fn take_pings(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.pings)
    }

    /// The payload of the close frame to answer with (the peer's status code, RFC 6455
    /// §5.5.1), once: `None` when no close came or it was answered.
    pub fn close_to_answer(&mut self) -> Option<Vec<u8>> {
        if self.close_answered {
            return None;
        }
        let close = self.close.as_ref()?;
        self.close_answered = true;
        Some(close.get(..2).unwrap_or_default().to_vec())
    }

    /// Whether the peer sent a close frame: no more messages come.
    pub fn peer_closed(&self) -> bool {
        self.close.is_some()
    }

    /// Whether anything waits to be answered.
    pub fn owed(&self) -> bool {
        !self.pings.is_empty() || (self.close.is_some() && !self.close_answered)
    }
}

/// Looks at the run of frames at the start of `buf` (see the module notes). `masked` says
/// whether the peer's frames must be masked.
pub fn gather(
    buf: &mut [u8],
    masked: bool,
    controls: &mut Controls,
) -> Result<Gathered, FrameError> {
    let mut pieces: Vec<(RawHead, usize)> = Vec::new();
    let mut started = false;
    let mut total = 0u64;
    let mut at = 0usize;
    loop {
        let Some(head) = read_raw_head(&buf[at..], masked)? else {
            return Ok(Gathered::Incomplete);
        };
        let control = opcode::is_control(head.opcode);
        if control {
            if !head.fin || head.body > MAX_CONTROL_PAYLOAD {
                return Err(FrameError::BadControl);
            }
            match head.opcode {
                opcode::PING | opcode::PONG => {}
                opcode::CLOSE if !started => {}
                opcode::CLOSE => return Err(FrameError::ClosedMidMessage),
                other => return Err(FrameError::Opcode(other)),
            }
        } else {
            match head.opcode {
                opcode::BINARY if !started => started = true,
                opcode::BINARY => return Err(FrameError::Interleaved),
                opcode::CONTINUATION if started => {}
                opcode::CONTINUATION => return Err(FrameError::StrayContinuation),
                other => return Err(FrameError::Opcode(other)),
            }
            total += head.body;
            if total > MAX_PAYLOAD as u64 {
                return Err(FrameError::MessageTooLong);
            }
        }
        // Bounded above: 125 for a control frame, a message's length for a fragment.
        let body_at = at + head.len;
        let end = body_at + head.body as usize;
        if buf.len() < end {
            return Ok(Gathered::Incomplete);
        }
        if control && !started {
            if let Some(key) = head.mask {
                apply_mask(&mut buf[body_at..end], key);
            }
            controls.record(head.opcode, buf[body_at..end].to_vec());
            return Ok(Gathered::Control { consumed: end });
        }
        pieces.push((head, body_at));
        if pieces.len() > MAX_PIECES {
            return Err(FrameError::TooManyPieces);
        }
        at = end;
        if !control && head.fin {
            break;
        }
    }
    // The run is complete: join the fragments' payloads at the front. The write position
    // never passes the end of the piece being read, so nothing unread is overwritten.
    let mut len = 0usize;
    for (head, body_at) in pieces {
        let body = body_at..body_at + head.body as usize;
        if let Some(key) = head.mask {
            apply_mask(&mut buf[body.clone()], key);
        }
        if opcode::is_control(head.opcode) {
            controls.record(head.opcode, buf[body].to_vec());
        } else {
            let n = body.len();
            buf.copy_within(body, len);
            len += n;
        }
    }
    Ok(Gathered::Message { consumed: at, len })
}

#[cfg(test)]
mod tests {
    use super::super::write_frame;
    use super::*;

    fn frame(out: &mut Vec<u8>, fin: bool, op: u8, payload: &[u8], masked: bool) {
        write_frame(out, fin, op, payload, masked.then_some([9, 8, 7, 6]));
    }

    /// A message in three fragments with a ping and a pong between them.
    fn fragmented(masked: bool) -> Vec<u8> {
        let mut wire = Vec::new();
        frame(&mut wire, false, opcode::BINARY, b"hello, ", masked);
        frame(&mut wire, true, opcode::PING, b"p1", masked);
        frame(&mut wire, false, opcode::CONTINUATION, b"frag", masked);
        frame(&mut wire, true, opcode::PONG, b"", masked);
        frame(
            &mut wire,
            true,
            opcode::CONTINUATION,
            b"mented world",
            masked,
        );
        wire
    }

    #[test]
    fn fragments_are_joined_and_control_frames_recorded_only_once_complete() {
        for masked in [false, true] {
            let wire = fragmented(masked);
            for cut in 0..wire.len() {
                let mut part = wire[..cut].to_vec();
                let mut controls = Controls::default();
                assert_eq!(
                    gather(&mut part, masked, &mut controls),
                    Ok(Gathered::Incomplete),
                    "{cut}"
                );
                assert_eq!(part, wire[..cut], "untouched while incomplete");
                assert!(!controls.owed());
            }
            let mut buf = wire.clone();
            buf.extend_from_slice(&[0x82, 0]); // the next message's head stays
            let mut controls = Controls::default();
            let got = gather(&mut buf, masked, &mut controls).unwrap();
            assert_eq!(
                got,
                Gathered::Message {
                    consumed: wire.len(),
                    len: 23
                }
            );
            assert_eq!(&buf[..23], b"hello, fragmented world");
            assert_eq!(&buf[wire.len()..], [0x82, 0]);
            assert_eq!(controls.take_pings(), [b"p1".to_vec()]);
            assert_eq!((controls.pings_received, controls.pongs_received), (1, 1));
        }
    }

    #[test]
    fn a_control_frame_before_a_message_stands_alone() {
        let mut wire = Vec::new();
        frame(&mut wire, true, opcode::PING, b"hi", true);
        let ping_len = wire.len();
        frame(&mut wire, true, opcode::BINARY, b"x", true);
        let mut controls = Controls::default();
        assert_eq!(
            gather(&mut wire, true, &mut controls),
            Ok(Gathered::Control { consumed: ping_len })
        );
        assert_eq!(controls.take_pings(), [b"hi".to_vec()]);

        let mut close = Vec::new();
        frame(&mut close, true, opcode::CLOSE, &[0x03, 0xE8], false);
        let mut controls = Controls::default();
        assert_eq!(
            gather(&mut close, false, &mut controls),
            Ok(Gathered::Control { consumed: 4 })
        );
        assert!(controls.peer_closed());
        assert_eq!(controls.close_to_answer(), Some(vec![0x03, 0xE8]));
    }

    /// FIN, opcode and payload of one frame.
    type Piece<'a> = (bool, u8, &'a [u8]);

    #[test]
    fn what_rfc_6455_forbids_is_an_error() {
        let cases: [(&[Piece], FrameError); 6] = [
            (
                &[(true, opcode::CONTINUATION, b"x")],
                FrameError::StrayContinuation,
            ),
            (
                &[(false, opcode::BINARY, b"a"), (true, opcode::BINARY, b"b")],
                FrameError::Interleaved,
            ),
            (&[(false, opcode::PING, b"")], FrameError::BadControl),
            (&[(true, opcode::PING, &[0; 126])], FrameError::BadControl),
            (
                &[(false, opcode::BINARY, b"a"), (true, opcode::CLOSE, b"")],
                FrameError::ClosedMidMessage,
            ),
            (
                &[(false, opcode::BINARY, b"a"), (true, opcode::TEXT, b"b")],
                FrameError::Opcode(opcode::TEXT),
            ),
        ];
        for (frames, expected) in cases {
            let mut wire = Vec::new();
            for &(fin, op, payload) in frames {
                frame(&mut wire, fin, op, payload, false);
            }
            assert_eq!(
                gather(&mut wire, false, &mut Controls::default()),
                Err(expected)
            );
        }
    }

    #[test]
    fn a_fragmented_message_longer_than_any_message_is_refused_before_it_arrives() {
        let mut wire = Vec::new();
        frame(
            &mut wire,
            false,
            opcode::BINARY,
            &vec![0; MAX_PAYLOAD],
            false,
        );
        // Only the head of the next fragment, which would make it too long.
        write_frame(&mut wire, true, opcode::CONTINUATION, b"", None);
        wire.truncate(wire.len() - 2);
        wire.extend_from_slice(&[0x80, 1]);
        assert_eq!(
            gather(&mut wire, false, &mut Controls::default()),
            Err(FrameError::MessageTooLong)
        );
    }

    #[test]
    fn endless_fragments_are_refused() {
        let mut wire = Vec::new();
        for _ in 0..=MAX_PIECES {
            frame(&mut wire, false, opcode::CONTINUATION, b"", false);
        }
        wire[0] = opcode::BINARY;
        assert_eq!(
            gather(&mut wire, false, &mut Controls::default()),
            Err(FrameError::TooManyPieces)
        );
    }
}
