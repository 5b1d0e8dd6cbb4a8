//! The open-loop sender's timer: a Linux `timerfd` on `CLOCK_MONOTONIC` (the clock behind
//! `std::time::Instant`), registered with tokio's reactor; each runtime's send clock
//! (`traffic::pacing`) sleeps on one.
//!
//! tokio's own timers have a one-millisecond wheel, far too coarse for a schedule whose gaps
//! are tens of microseconds. A timerfd is a kernel hrtimer without timer slack, so it fires
//! within microseconds of the requested instant, and it wakes the client through the same
//! `epoll_wait` as its sockets. Arming costs one `timerfd_settime` call; a wake-up costs the
//! `read` that consumes it.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// The clock the schedule reads, named in every open-loop metrics object.
pub const CLOCK: &str = "CLOCK_MONOTONIC via std::time::Instant (vDSO)";

/// One client's timer.
pub struct PreciseTimer {
    fd: AsyncFd<OwnedFd>,
    armed_for: Option<Instant>,
}

impl PreciseTimer {
    /// A disarmed timer registered with the current tokio runtime.
    pub fn new() -> io::Result<Self> {
        // SAFETY: timerfd_create has no memory effects; the result is checked.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let owned = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: the `OwnedFd` keeps this one descriptor open for as long as the `AsyncFd`
        // owns it, and its `as_raw_fd` always returns it.
        let fd = unsafe { AsyncFd::register_with_interest(owned, Interest::READABLE) }?;
        Ok(Self {
            fd,
            armed_for: None,
        })
    }

    /// Makes the timer fire at `at` (at once if `at` has passed). Re-arming for the same
    /// instant costs nothing.
    pub fn arm(&mut self, at: Instant) -> io::Result<()> {
        if self.armed_for == Some(at) {
            return Ok(());
        }
        // Relative arming: the gap to `at` as read now (an absolute CLOCK_MONOTONIC value
        // cannot be taken out of an Instant).
        let left = at
            .saturating_duration_since(Instant::now())
            .max(Duration::from_nanos(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: left.as_secs() as libc::time_t,
                tv_nsec: left.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: `spec` is a valid itimerspec and the old value is not requested.
        let rc =
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        self.armed_for = Some(at);
        Ok(())
    }

    /// Waits until the armed instant has passed, then consumes the expiry.
    pub async fn fired(&mut self) -> io::Result<()> {
        loop {
            let mut guard = self.fd.readable().await?;
            let mut expirations = [0u8; 8];
            let read = guard.try_io(|fd| {
                // SAFETY: reads 8 bytes into a buffer of 8 bytes.
                let n = unsafe { libc::read(fd.as_raw_fd(), expirations.as_mut_ptr().cast(), 8) };
                if n < 0 {
                    Err(io::Error::last_os_error())
                } else {
                    Ok(())
                }
            });
            match read {
                Ok(result) => {
                    self.armed_for = None;
                    return result;
                }
                // Readiness was stale (the timer was re-armed after an earlier expiry).
                Err(_would_block) => continue,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fires_after_the_instant_and_can_be_rearmed() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut t = PreciseTimer::new().unwrap();
            for gap_us in [200u64, 50, 1000] {
                let at = Instant::now() + Duration::from_micros(gap_us);
                t.arm(at).unwrap();
                t.fired().await.unwrap();
                assert!(Instant::now() >= at, "fired before {gap_us} µs");
            }
            // An instant in the past fires at once.
            t.arm(Instant::now() - Duration::from_millis(5)).unwrap();
            t.fired().await.unwrap();
        });
    }
}
