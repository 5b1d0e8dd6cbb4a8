//! The server half of a shard: TCP connections ([`stream`]) or one UDP socket
//! ([`datagram`]), echoed as every backend echoes them.

pub mod datagram;
pub mod stream;

use std::time::Duration;

/// How long a turn waits for completions before it looks at the stop flag and the clocks.
pub const TURN: Duration = Duration::from_millis(20);
/// Registered file slots per shard at most (fewer when the open-file limit leaves fewer);
/// connections past them use plain descriptors.
pub const SLOTS: u32 = 16_384;
/// How long a stopping shard waits for its operations to complete.
pub(crate) const STOP_GRACE: Duration = Duration::from_millis(500);
/// How long a shard waits before accepting again after the kernel ran out of descriptors
/// or memory.
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// A shard's turn: the guest queues what is due, then the ring submits and waits (a
/// paired ring without sleeping while it has anything to submit) and copies the
/// completions into `reaped`.
fn turn<G: super::Guest>(
    driver: &mut super::driver::Driver,
    guest: &mut G,
    paired: bool,
    reaped: &mut Vec<super::driver::Completion>,
) -> std::io::Result<()> {
    guest.before_turn(driver)?;
    let wait = guest.wait().min(TURN);
    if paired {
        driver.paired_turn(wait, reaped)
    } else {
        driver.turn(wait, reaped)
    }
}
