//! arknet's `use_dgram` length prefix for `tcp` and `tcps`: 1 byte below 254; 254 and a
//! u16 little-endian length up to 65,535; 255 and a u64 little-endian length above.

use super::{FrameError, FrameHead, Framing};

/// Longest prefix.
pub const MAX_PREFIX: usize = 9;

/// Appends the prefix for a body of `len` bytes.
pub fn write_prefix(out: &mut Vec<u8>, len: usize) {
    if len < 254 {
        out.push(len as u8);
    } else if len <= u16::MAX as usize {
        out.push(254);
        out.extend_from_slice(&(len as u16).to_le_bytes());
    } else {
        out.push(255);
        out.extend_from_slice(&(len as u64).to_le_bytes());
    }
}

/// Decodes a prefix at the start of `buf`: `Some((prefix_len, body_len))`, or `None` when
/// more bytes are needed.
pub fn read_prefix(buf: &[u8]) -> Option<(usize, u64)> {
    match *buf.first()? {
        254 => {
            let b = buf.get(1..3)?;
            Some((3, u16::from_le_bytes([b[0], b[1]]) as u64))
        }
        255 => {
            let b = buf.get(1..9)?;
            Some((9, u64::from_le_bytes(b.try_into().ok()?)))
        }
        n => Some((1, n as u64)),
    }
}

/// The length-prefix framing; the same on both ends.
#[derive(Debug, Clone, Copy, Default)]
pub struct LengthPrefix;

impl Framing for LengthPrefix {
    fn max_head(&self) -> usize {
        MAX_PREFIX
    }

    fn encode(&mut self, out: &mut Vec<u8>, len: usize, write_body: impl FnOnce(&mut Vec<u8>)) {
        write_prefix(out, len);
        write_body(out);
    }

    fn decode_head(&self, buf: &[u8]) -> Result<Option<FrameHead>, FrameError> {
        Ok(read_prefix(buf).map(|(len, body)| FrameHead::plain(len, body)))
    }

    fn verbatim(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_roundtrips_at_every_boundary() {
        for len in [0usize, 1, 253, 254, 255, 65_535, 65_536, 1 << 33] {
            let mut out = Vec::new();
            write_prefix(&mut out, len);
            let (plen, body) = read_prefix(&out).unwrap();
            assert_eq!((plen, body), (out.len(), len as u64));
            assert_eq!(read_prefix(&out[..plen - 1]).filter(|_| plen > 1), None);
        }
    }
}
