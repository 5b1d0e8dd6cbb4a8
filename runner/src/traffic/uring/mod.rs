//! The traffic of one measurement on monoio (io_uring): the IO loops only. Everything else,
//! the client core and its verification, the stream session and framings, the server's
//! answers, work and faults, is the code tokio runs ([`crate::traffic`]).

pub mod buf;
pub mod datagram;
pub mod stream;

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::os::fd::{AsRawFd, RawFd};

thread_local! {
    /// The sockets the tasks of this shard still hold open.
    static OPEN_SOCKETS: RefCell<BTreeSet<RawFd>> = const { RefCell::new(BTreeSet::new()) };
    /// Set once this shard has shut its sockets down.
    static STOPPING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this shard is stopping: an empty read is then the shutdown, not a message.
pub fn stopping() -> bool {
    STOPPING.with(std::cell::Cell::get)
}

/// A socket a task of this shard holds: listed while it lives, so that stopping can shut it
/// down. A read in flight on io_uring only ends when the socket has data or is shut down,
/// and dropping a runtime does not drop such tasks (their sockets would stay open), so the
/// shard shuts its sockets down and lets every task end on its own before it stops.
pub struct OpenSocket(RawFd);

impl OpenSocket {
    /// Lists `socket` (call on the shard that owns it, before handing it to monoio).
    pub fn of(socket: &impl AsRawFd) -> Self {
        let fd = socket.as_raw_fd();
        OPEN_SOCKETS.with(|open| open.borrow_mut().insert(fd));
        Self(fd)
    }
}

impl Drop for OpenSocket {
    fn drop(&mut self) {
        OPEN_SOCKETS.with(|open| open.borrow_mut().remove(&self.0));
    }
}

/// Shuts down, both ways, every socket still listed on this shard: each read in flight
/// completes (end of stream), each peer sees the close, and each task ends. Only sockets a
/// live task holds are listed, so no descriptor number here can have been reused.
pub fn shut_down_open_sockets() {
    STOPPING.with(|s| s.set(true));
    OPEN_SOCKETS.with(|open| {
        for fd in open.borrow().iter() {
            // SAFETY: `fd` is an open socket owned by a live task on this thread (it leaves
            // the list before its socket is closed); shutdown(2) does not close it.
            unsafe {
                libc::shutdown(*fd, libc::SHUT_RDWR);
            }
        }
    });
}
