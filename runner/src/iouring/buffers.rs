//! A provided-buffer ring (`IORING_REGISTER_PBUF_RING`, Linux 5.19): buffers the kernel
//! picks from itself when a multishot receive completes, so no receive holds a buffer while
//! it waits. The ring is a page-aligned array of `io_uring_buf` entries shared with the
//! kernel; the application publishes a returned buffer by writing an entry and advancing the
//! tail, the kernel consumes from the head.

use std::alloc::Layout;
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::types::BufRingEntry;
use io_uring::IoUring;

/// The alignment the kernel requires of the entry array.
const PAGE: usize = 4096;

/// A registered buffer ring of `count` buffers of `size` bytes each, group `group`.
pub struct BufferRing {
    entries: *mut BufRingEntry,
    layout: Layout,
    storage: Vec<u8>,
    size: usize,
    count: u16,
    /// The next tail the application publishes (the kernel sees it after [`Self::publish`]).
    tail: u16,
    group: u16,
}

impl BufferRing {
    /// Allocates and registers the ring with `ring`, every buffer handed to the kernel.
    /// `count` must be a power of two (at most 32,768).
    pub fn register(ring: &IoUring, group: u16, count: u16, size: usize) -> std::io::Result<Self> {
        if !count.is_power_of_two() || count > 32_768 {
            return Err(std::io::Error::other(format!(
                "a buffer ring holds a power of two up to 32,768 buffers, not {count}"
            )));
        }
        let bytes = usize::from(count) * std::mem::size_of::<BufRingEntry>();
        let layout = Layout::from_size_align(bytes.max(PAGE), PAGE)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        // SAFETY: the layout has a non-zero size; zeroed entries are valid `io_uring_buf`s.
        let entries = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<BufRingEntry>();
        if entries.is_null() {
            return Err(std::io::Error::other("out of memory for a buffer ring"));
        }
        let mut me = Self {
            entries,
            layout,
            storage: vec![0; usize::from(count) * size],
            size,
            count,
            tail: 0,
            group,
        };
        // SAFETY: `entries` stays allocated until `Drop`, which unregisters nothing (the ring
        // is dropped first by its owner, see `Drop`), and holds `count` entries.
        unsafe {
            ring.submitter()
                .register_buf_ring(entries as u64, count, group)
        }?;
        for id in 0..count {
            me.give_back(id);
        }
        me.publish();
        Ok(me)
    }

    /// The group the ring was registered as, for `RecvMulti` and `RecvMsgMulti`.
    pub fn group(&self) -> u16 {
        self.group
    }

    /// Bytes per buffer.
    pub fn buffer_size(&self) -> usize {
        self.size
    }

    /// The first `len` bytes of buffer `id`, which a completion just filled.
    pub fn filled(&mut self, id: u16, len: usize) -> &mut [u8] {
        let at = usize::from(id % self.count) * self.size;
        &mut self.storage[at..at + len.min(self.size)]
    }

    /// Hands buffer `id` back to the kernel (visible after [`Self::publish`]).
    pub fn give_back(&mut self, id: u16) {
        let id = id % self.count;
        let slot = usize::from(self.tail & (self.count - 1));
        let addr = self.storage[usize::from(id) * self.size..].as_ptr() as u64;
        // SAFETY: `slot < count`, inside the allocation; the kernel reads only entries
        // between its head and the published tail, and this one lies past the tail.
        let entry = unsafe { &mut *self.entries.add(slot) };
        entry.set_addr(addr);
        entry.set_len(self.size as u32);
        entry.set_bid(id);
        self.tail = self.tail.wrapping_add(1);
    }

    /// Publishes every buffer given back since the last call.
    pub fn publish(&self) {
        // SAFETY: the tail field lives in the first entry, inside the allocation; the kernel
        // reads it concurrently, hence the atomic release store.
        let tail = unsafe { &*(BufRingEntry::tail(self.entries).cast::<AtomicU16>()) };
        tail.store(self.tail, Ordering::Release);
    }
}

impl Drop for BufferRing {
    fn drop(&mut self) {
        // SAFETY: allocated in `register` with this layout. The owner drops its `IoUring`
        // (which releases the registration) before this ring: see `Shard`'s field order.
        unsafe { std::alloc::dealloc(self.entries.cast(), self.layout) };
    }
}
