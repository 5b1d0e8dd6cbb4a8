//! A client's wake-up call for time-based work (UDP loss checks, the drain limit).
//!
//! A tokio timer in every client would make each `epoll_wait` arm a kernel hrtimer, which
//! costs several percent of a 1 × 1 round trip. Instead the orchestrator thread, which
//! sleeps through the phase anyway, rings every client's alarm on a fixed tick; a client
//! polls its alarm beside its socket at the cost of one atomic load and a waker
//! compare-and-swap.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use atomic_waker::AtomicWaker;

/// One client's alarm.
#[derive(Debug, Default)]
pub struct Alarm {
    rings: AtomicU64,
    waker: AtomicWaker,
}

impl Alarm {
    /// How often it has rung so far.
    pub fn rings(&self) -> u64 {
        self.rings.load(Ordering::Acquire)
    }

    /// Rings: wakes the task waiting on it, if any.
    pub fn ring(&self) {
        self.rings.fetch_add(1, Ordering::AcqRel);
        self.waker.wake();
    }

    /// Resolves once the alarm has rung more than `seen` times.
    pub fn after(&self, seen: u64) -> AlarmWait<'_> {
        AlarmWait { alarm: self, seen }
    }
}

/// The future returned by [`Alarm::after`].
pub struct AlarmWait<'a> {
    alarm: &'a Alarm,
    seen: u64,
}

impl Future for AlarmWait<'_> {
    type Output = u64;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u64> {
        let now = self.alarm.rings();
        if now != self.seen {
            return Poll::Ready(now);
        }
        self.alarm.waker.register(cx.waker());
        // Re-check: a ring between the load and the registration must not be missed.
        match self.alarm.rings() {
            n if n != self.seen => Poll::Ready(n),
            _ => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn a_ring_from_another_thread_wakes_the_waiter() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let alarm = Arc::new(Alarm::default());
        let ringer = alarm.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            ringer.ring();
        });
        let seen = alarm.rings();
        let got = rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(5), alarm.after(seen)).await
        });
        assert_eq!(got, Ok(1));
        t.join().unwrap();
    }

    #[test]
    fn an_earlier_ring_is_seen_at_once() {
        let alarm = Alarm::default();
        alarm.ring();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(rt.block_on(alarm.after(0)), 1);
    }
}
