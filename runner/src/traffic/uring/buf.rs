//! The owned buffer an io_uring read fills: a [`RecvBuf`]'s storage lent for one read, so
//! the kernel writes straight into the free space after the unparsed bytes (no copy).

use monoio::buf::IoBufMut;

use crate::framing::RecvBuf;

/// A [`RecvBuf`]'s storage during one read: bytes from `at` on are free.
pub struct ReadSpace {
    bytes: Vec<u8>,
    at: usize,
    filled: usize,
}

impl ReadSpace {
    /// Takes `recv`'s storage for one read.
    pub fn lend(recv: &mut RecvBuf) -> Self {
        let (bytes, at) = recv.lend();
        Self {
            bytes,
            at,
            filled: 0,
        }
    }

    /// Returns the storage to `recv` with what the read wrote.
    pub fn give_back(self, recv: &mut RecvBuf) {
        recv.give_back(self.bytes, self.filled);
    }
}

// SAFETY: the pointer is into the Vec's heap allocation, which does not move while the
// ReadSpace (and the Vec in it) is owned by the runtime; `bytes_total` never goes past the
// Vec's initialised length, so the kernel only writes memory the Vec owns.
unsafe impl IoBufMut for ReadSpace {
    fn write_ptr(&mut self) -> *mut u8 {
        // `at` ≤ len, so the offset stays inside (or one past) the allocation.
        self.bytes[self.at..].as_mut_ptr()
    }

    fn bytes_total(&mut self) -> usize {
        self.bytes.len() - self.at
    }

    unsafe fn set_init(&mut self, pos: usize) {
        self.filled = pos;
    }
}
