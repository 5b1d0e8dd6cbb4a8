//! Clocks: the wall clock a generator reads (shifted on purpose in tests), the
//! four-timestamp exchange that relates it to the coordinator's, and the mapping from a
//! time in the coordinator's clock to an instant of this process.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Exchanges made before a run and after it; the one of smallest delay is kept.
pub const EXCHANGES: usize = 16;

/// This host's wall clock in ns since the Unix epoch, plus a shift a test may set to play a
/// host whose clock is off.
#[derive(Debug, Clone, Copy, Default)]
pub struct WallClock {
    shift_ns: i64,
}

impl WallClock {
    /// The real clock.
    pub fn real() -> Self {
        WallClock { shift_ns: 0 }
    }

    /// A clock `shift_ns` ahead of the real one (test only: plays a host whose clock is off).
    pub fn shifted(shift_ns: i64) -> Self {
        WallClock { shift_ns }
    }

    /// Now, in ns since the Unix epoch.
    pub fn now_ns(&self) -> i64 {
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        since.as_nanos() as i64 + self.shift_ns
    }

    /// The instant of this process at which this clock reads `ns`.
    pub fn instant_at(&self, ns: i64) -> Instant {
        let (now, now_ns) = (Instant::now(), self.now_ns());
        let ahead = ns - now_ns;
        if ahead >= 0 {
            now + Duration::from_nanos(ahead as u64)
        } else {
            now.checked_sub(Duration::from_nanos(ahead.unsigned_abs()))
                .unwrap_or(now)
        }
    }

    /// What this clock read at `instant` (an instant of this process, past or future).
    pub fn ns_at(&self, instant: Instant) -> i64 {
        let (now, now_ns) = (Instant::now(), self.now_ns());
        match instant.checked_duration_since(now) {
            Some(ahead) => now_ns + ahead.as_nanos() as i64,
            None => now_ns - now.duration_since(instant).as_nanos() as i64,
        }
    }
}

/// One four-timestamp exchange: the generator sent at `t1` and received the answer at `t4`
/// (its clock); the coordinator received at `t2` and answered at `t3` (its clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exchange {
    pub t1: i64,
    pub t2: i64,
    pub t3: i64,
    pub t4: i64,
}

impl Exchange {
    /// Coordinator minus generator, in ns: `((t2 − t1) + (t3 − t4)) / 2`.
    pub fn offset_ns(&self) -> f64 {
        ((self.t2 - self.t1) as f64 + (self.t3 - self.t4) as f64) / 2.0
    }

    /// The time the exchange spent on the path: `(t4 − t1) − (t3 − t2)`, never negative.
    pub fn delay_ns(&self) -> i64 {
        ((self.t4 - self.t1) - (self.t3 - self.t2)).max(0)
    }
}

/// The offset of a set of exchanges: the one of smallest delay, whose true offset lies
/// within half its delay of the estimate whatever the path's asymmetry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Offset {
    /// Coordinator minus generator, ns.
    pub offset_ns: f64,
    /// Half the kept exchange's delay, ns.
    pub uncertainty_ns: f64,
    pub delay_ns: i64,
    pub exchanges: u64,
    /// When it was measured, in the generator's clock (the kept exchange's midpoint).
    pub at_ns: i64,
}

impl Offset {
    /// The estimate of `exchanges`; `None` when there are none.
    pub fn of(exchanges: &[Exchange]) -> Option<Offset> {
        let best = exchanges.iter().min_by_key(|e| e.delay_ns())?;
        Some(Offset {
            offset_ns: best.offset_ns(),
            uncertainty_ns: best.delay_ns() as f64 / 2.0,
            delay_ns: best.delay_ns(),
            exchanges: exchanges.len() as u64,
            at_ns: best.t1 + (best.t4 - best.t1) / 2,
        })
    }

    /// How fast the offset moved from `self` to `later`, in ppm (µs per s), and that
    /// figure's uncertainty (both offsets' over the time between them).
    pub fn drift_ppm(&self, later: &Offset) -> (f64, f64) {
        let span = (later.at_ns - self.at_ns) as f64;
        if span <= 0.0 {
            return (0.0, 0.0);
        }
        (
            (later.offset_ns - self.offset_ns) / span * 1e6,
            (later.uncertainty_ns + self.uncertainty_ns) / span * 1e6,
        )
    }
}

/// The moment a wait ended, read on both clocks at once.
#[derive(Debug, Clone, Copy)]
pub struct Woke {
    pub at: Instant,
    /// The wall clock then, ns since the Unix epoch.
    pub unix_ns: i64,
    /// Whether the thread watched the clock at a real-time priority.
    pub realtime: bool,
}

impl WallClock {
    /// Waits until `at`, asleep (the kernel's timer slack at its least) and, where the
    /// process may (root, or `CAP_SYS_NICE`), at a real-time priority, so the timer's
    /// wakeup preempts whatever generators that started already run on the CPUs they share
    /// (namespaces on one host); it reads both clocks before it drops back. No spinning:
    /// a generator awake early would keep the others' wakeups waiting.
    pub fn wait_until(&self, at: Instant) -> Woke {
        let realtime = realtime(true);
        #[cfg(target_os = "linux")]
        // SAFETY: PR_SET_TIMERSLACK takes a plain integer and affects only this thread.
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
        }
        loop {
            let left = at.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left);
        }
        let woke = Woke {
            at: Instant::now(),
            unix_ns: self.now_ns(),
            realtime,
        };
        if realtime {
            self::realtime(false);
        }
        woke
    }
}

/// Puts this thread under SCHED_FIFO at the lowest real-time priority (`on`) or back under
/// the normal scheduler; whether it took.
fn realtime(on: bool) -> bool {
    #[cfg(target_os = "linux")]
    // SAFETY: sched_setscheduler on this thread (0) with a valid sched_param.
    unsafe {
        let (policy, priority) = if on {
            (
                libc::SCHED_FIFO,
                libc::sched_get_priority_min(libc::SCHED_FIFO),
            )
        } else {
            (libc::SCHED_OTHER, 0)
        };
        let param = libc::sched_param {
            sched_priority: priority,
        };
        libc::sched_setscheduler(0, policy, &param) == 0
    }
    #[cfg(not(target_os = "linux"))]
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offset_of_a_symmetric_path_is_exact_and_the_smallest_delay_is_kept() {
        // The generator's clock is 1,000 ns behind; the path takes 50 ns each way, the
        // coordinator 10 ns to answer.
        let symmetric = Exchange {
            t1: 0,
            t2: 1_050,
            t3: 1_060,
            t4: 110,
        };
        assert_eq!(symmetric.offset_ns(), 1_000.0);
        assert_eq!(symmetric.delay_ns(), 100);
        // A slow exchange with an asymmetric path: its estimate is off, within its delay / 2.
        let slow = Exchange {
            t1: 200,
            t2: 1_250,
            t3: 1_260,
            t4: 1_310,
        };
        assert!((slow.offset_ns() - 1_000.0).abs() <= slow.delay_ns() as f64 / 2.0);
        let o = Offset::of(&[slow, symmetric]).unwrap();
        assert_eq!(o.offset_ns, 1_000.0);
        assert_eq!(o.uncertainty_ns, 50.0);
        assert_eq!(o.exchanges, 2);
        assert_eq!(Offset::of(&[]), None);
    }

    #[test]
    fn drift_is_the_offset_change_per_second() {
        let at = |ns: i64, offset: f64| Offset {
            offset_ns: offset,
            uncertainty_ns: 0.0,
            delay_ns: 0,
            exchanges: 1,
            at_ns: ns,
        };
        let (d, _) = at(0, 0.0).drift_ppm(&at(2_000_000_000, 4_000.0));
        assert!((d - 2.0).abs() < 1e-9, "{d}");
        assert_eq!(at(5, 0.0).drift_ppm(&at(5, 9.0)), (0.0, 0.0));
    }

    #[test]
    fn a_shifted_clock_reads_ahead_and_maps_times_back_to_instants() {
        let real = WallClock::real();
        let ahead = WallClock::shifted(3_000_000_000);
        let gap = ahead.now_ns() - real.now_ns();
        assert!((2_950_000_000..3_050_000_000).contains(&gap), "{gap}");
        let at = Instant::now() + Duration::from_millis(100);
        let back = ahead.instant_at(ahead.ns_at(at));
        let error = back.max(at) - back.min(at);
        assert!(error < Duration::from_millis(50), "{error:?}");
    }
}
