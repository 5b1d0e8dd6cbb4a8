//! How open-loop clients wait for their next due message: one *send clock* per runtime that
//! sleeps on a [`PreciseTimer`] until shortly before the earliest due instant of any of its
//! clients, then spins, yielding to the runtime, until that instant, and wakes the client.
//!
//! Waking a sleeping thread costs more than a schedule can afford: on the reference 2-vCPU
//! virtual machine a timerfd wakes an idle thread about 55 µs late at the median and
//! 0.1–1 ms late at p99, whatever the timer's own precision. So the clock stops sleeping
//! `spin` before the due instant and yields (`tokio::task::yield_now`) until it has come;
//! every yield lets the runtime poll its sockets and run the server's and clients' tasks, so
//! spinning takes only time no task wanted. One clock spins per runtime, not one per
//! client: sixteen clients each spinning on their own made each other late by up to
//! milliseconds (every spin round polled all of them). The cost is CPU: a runtime whose
//! clients always have a message due within `spin` never sleeps, so open-loop CPU figures
//! describe the instrument as much as the stack (the pages say so).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::instruments::timer::PreciseTimer;

pub use crate::case::DEFAULT_SPIN;

/// How the sender waits, named in every open-loop metrics object.
pub const TIMER: &str =
    "one send clock per runtime: timerfd (hrtimer, no slack) until spin_us before the due instant, then yield_now spinning";

/// What each client is waiting for.
#[derive(Default)]
struct Waiting {
    /// (due, client) pairs; an entry whose client now waits for another instant is stale
    /// and skipped.
    queue: BinaryHeap<Reverse<(Instant, usize)>>,
    /// Per client: the instant it waits for and its waker.
    clients: Vec<Option<(Instant, Waker)>>,
}

impl Waiting {
    /// The earliest instant some client still waits for (drops stale entries on the way).
    fn earliest(&mut self) -> Option<Instant> {
        while let Some(Reverse((due, id))) = self.queue.peek().copied() {
            if matches!(&self.clients[id], Some((d, _)) if *d == due) {
                return Some(due);
            }
            self.queue.pop();
        }
        None
    }

    /// Wakes every client whose instant has come by `now`.
    fn wake_due(&mut self, now: Instant) {
        while let Some(due) = self.earliest() {
            if due > now {
                return;
            }
            let Reverse((_, id)) = self.queue.pop().expect("earliest() saw it");
            if let Some((_, waker)) = self.clients[id].take() {
                waker.wake();
            }
        }
    }
}

/// One runtime's send clock, shared by the open-loop clients on that runtime.
pub struct SendClock {
    waiting: Mutex<Waiting>,
    /// Rung when a client waits for an instant earlier than the clock knew of.
    earlier: Notify,
    spin: Duration,
}

impl SendClock {
    /// A clock with this spin window; [`SendClock::run`] must be spawned on its runtime.
    pub fn new(spin: Duration) -> Arc<Self> {
        Arc::new(Self {
            waiting: Mutex::new(Waiting::default()),
            earlier: Notify::new(),
            spin,
        })
    }

    /// A new client id on this clock.
    pub fn join(self: &Arc<Self>) -> Pacer {
        let mut w = self.lock();
        w.clients.push(None);
        Pacer {
            clock: self.clone(),
            id: w.clients.len() - 1,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Waiting> {
        // Only this module touches the state and it never panics while holding the lock.
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs the clock until the task is aborted: sleeps on the timer until `spin` before
    /// the earliest due instant (or until a client waits for an earlier one), then spins.
    pub async fn run(self: Arc<Self>) -> std::io::Result<()> {
        let mut timer = PreciseTimer::new()?;
        loop {
            let now = Instant::now();
            let next = {
                let mut w = self.lock();
                w.wake_due(now);
                w.earliest()
            };
            match next {
                None => self.earlier.notified().await,
                Some(due) if due.saturating_duration_since(now) <= self.spin => {
                    tokio::task::yield_now().await;
                }
                Some(due) => {
                    timer.arm(due - self.spin)?;
                    tokio::select! {
                        r = timer.fired() => r?,
                        _ = self.earlier.notified() => {}
                    }
                }
            }
        }
    }
}

/// One client's handle on its runtime's clock.
pub struct Pacer {
    clock: Arc<SendClock>,
    id: usize,
}

impl Pacer {
    /// Resolves once `due` has come (at once if it has).
    pub fn until(&mut self, due: Instant) -> Until<'_> {
        Until { pacer: self, due }
    }
}

/// The future of [`Pacer::until`].
pub struct Until<'a> {
    pacer: &'a mut Pacer,
    due: Instant,
}

impl Future for Until<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let clock = &this.pacer.clock;
        let id = this.pacer.id;
        if Instant::now() >= this.due {
            clock.lock().clients[id] = None;
            return Poll::Ready(());
        }
        let mut w = clock.lock();
        let known = w.earliest();
        let fresh = !matches!(&w.clients[id], Some((d, _)) if *d == this.due);
        w.clients[id] = Some((this.due, cx.waker().clone()));
        if fresh {
            w.queue.push(Reverse((this.due, id)));
        }
        drop(w);
        if known.is_none_or(|k| this.due < k) {
            clock.earlier.notify_one();
        }
        Poll::Pending
    }
}

impl Drop for Until<'_> {
    fn drop(&mut self) {
        // A client that stopped waiting (an echo came first) is not woken for this instant.
        let mut w = self.pacer.clock.lock();
        if matches!(&w.clients[self.pacer.id], Some((d, _)) if *d == self.due) {
            w.clients[self.pacer.id] = None;
        }
    }
}

/// Waits on an optional pacer until `due`; never resolves without a pacer or an instant.
pub async fn until(pacer: Option<&mut Pacer>, due: Option<Instant>) {
    match (pacer, due) {
        (Some(p), Some(due)) => p.until(due).await,
        _ => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_wake_at_their_own_instants_in_order() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let clock = SendClock::new(Duration::from_micros(100));
            let task = tokio::spawn(clock.clone().run());
            let start = Instant::now();
            let mut handles = Vec::new();
            for (k, gap_us) in [3000u64, 1000, 2000, 500].into_iter().enumerate() {
                let mut pacer = clock.join();
                let due = start + Duration::from_micros(gap_us);
                handles.push(tokio::spawn(async move {
                    pacer.until(due).await;
                    (k, Instant::now().saturating_duration_since(due))
                }));
            }
            for h in handles {
                let (k, late) = h.await.unwrap();
                assert!(
                    late < Duration::from_millis(50),
                    "client {k} woke {late:?} late"
                );
            }
            // A wait that is dropped early leaves nothing behind that could wake it.
            let mut pacer = clock.join();
            let far = Instant::now() + Duration::from_secs(60);
            tokio::select! {
                _ = pacer.until(far) => panic!("woke a minute early"),
                _ = tokio::time::sleep(Duration::from_millis(5)) => {}
            }
            assert!(clock.lock().clients.iter().all(Option::is_none));
            task.abort();
        });
    }
}
