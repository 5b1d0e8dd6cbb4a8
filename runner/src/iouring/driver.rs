//! One shard's io_uring and what it counts: submissions are queued and entered once per
//! event-loop turn (or one by one, with batching switched off), completions are drained in
//! one pass, and registered file slots stand in for descriptors when asked.

use std::os::fd::RawFd;
use std::time::Duration;

use io_uring::{cqueue, squeue, types, IoUring};

use super::Tuning;

/// Submission queue entries per shard; completions get the kernel's default (twice as many).
const ENTRIES: u32 = 1024;
/// `IORING_ENTER_GETEVENTS` (include/uapi/linux/io_uring.h).
const ENTER_GETEVENTS: u32 = 1;
/// How long the SQPOLL kernel thread spins without work before it sleeps.
const SQPOLL_IDLE_MS: u32 = 50;

pub use echomark_archive::RingCounters;

/// A completion, copied out of the queue so handlers may submit while they run.
#[derive(Debug, Clone, Copy)]
pub struct Completion {
    pub user_data: u64,
    pub result: i32,
    pub flags: u32,
}

impl Completion {
    /// Whether a multishot request stays armed after this completion.
    pub fn more(&self) -> bool {
        cqueue::more(self.flags)
    }

    /// The provided buffer this completion filled, if it took one.
    pub fn buffer(&self) -> Option<u16> {
        cqueue::buffer_select(self.flags)
    }
}

/// Where an operation's socket is: its descriptor, or a registered file slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Fd(RawFd),
    Fixed(u32),
}

/// Builds an entry for `target` with either kind of file (the opcodes take both, as types).
macro_rules! on_target {
    ($target:expr, |$file:ident| $build:expr) => {
        match $target {
            $crate::iouring::driver::Target::Fd(fd) => {
                let $file = io_uring::types::Fd(fd);
                $build
            }
            $crate::iouring::driver::Target::Fixed(slot) => {
                let $file = io_uring::types::Fixed(slot);
                $build
            }
        }
    };
}
pub(crate) use on_target;

/// One shard's ring.
pub struct Driver {
    ring: IoUring,
    tuning: Tuning,
    /// Registered file slots, when `tuning.fixed_files`.
    slots: u32,
    pub stats: RingCounters,
    /// Sends queued since the last wait: their completions alone are no reason to wake.
    quiet: u32,
    /// `stats.submissions` when a busy SQPOLL loop last woke the kernel thread.
    woken_at: u64,
    /// Sends submitted and not yet completed, by half ([`SERVER`], [`GUEST`]), and whether
    /// a half submitted any since the other half last looked ([`Self::peer_sent`]): in a
    /// paired ring, whether the other half may have bytes to receive.
    pub sends_out: [u32; 2],
    fresh_sends: [bool; 2],
    /// Sends completed, by half.
    pub sends_done: [u64; 2],
}

/// The halves of a shard, for [`Driver::sends_out`].
pub const SERVER: usize = 0;
pub const GUEST: usize = 1;

impl Driver {
    /// A ring tuned as asked; with SQPOLL, its kernel thread is pinned to `sqpoll_cpu`.
    pub fn new(tuning: Tuning, slots: u32, sqpoll_cpu: Option<usize>) -> std::io::Result<Self> {
        let mut builder = IoUring::builder();
        if tuning.defer_taskrun && !tuning.sqpoll {
            builder.setup_single_issuer().setup_defer_taskrun();
        }
        if tuning.sqpoll {
            builder.setup_sqpoll(SQPOLL_IDLE_MS);
            if let Some(cpu) = sqpoll_cpu.and_then(|c| u32::try_from(c).ok()) {
                builder.setup_sqpoll_cpu(cpu);
            }
        }
        let ring = builder.build(ENTRIES)?;
        let slots = if tuning.fixed_files {
            ring.submitter().register_files_sparse(slots)?;
            slots
        } else {
            0
        };
        Ok(Self {
            ring,
            tuning,
            slots,
            stats: RingCounters::default(),
            quiet: 0,
            woken_at: 0,
            sends_out: [0; 2],
            fresh_sends: [false; 2],
            sends_done: [0; 2],
        })
    }

    /// The ring, to register a buffer ring with.
    pub fn ring(&self) -> &IoUring {
        &self.ring
    }

    /// Queues `entry`; entered with the turn's wait, or at once when batching is off (or the
    /// queue is full).
    ///
    /// # Safety
    ///
    /// Every buffer and structure `entry` points to must stay valid and unmoved until its
    /// completion is reaped.
    pub unsafe fn push(&mut self, entry: squeue::Entry) -> std::io::Result<()> {
        // SAFETY: the caller keeps the entry's memory alive until its completion.
        while unsafe { self.ring.submission().push(&entry) }.is_err() {
            self.enter_now()?;
        }
        self.stats.submissions += 1;
        if !self.tuning.batched_submit {
            self.enter_now()?;
        }
        Ok(())
    }

    /// [`Self::push`] for an echo's send: the turn's wait also waits for its completion,
    /// so that a send completing at once does not end the wait by itself and cost a second
    /// `io_uring_enter` before the next request arrives.
    ///
    /// # Safety
    ///
    /// As for [`Self::push`].
    pub unsafe fn push_quiet(&mut self, entry: squeue::Entry) -> std::io::Result<()> {
        // SAFETY: as the caller promised.
        unsafe { self.push(entry) }?;
        if self.tuning.batched_submit {
            self.quiet += 1;
        }
        Ok(())
    }

    fn enter_now(&mut self) -> std::io::Result<()> {
        // With SQPOLL the kernel thread takes submissions itself; `submit` enters only to
        // wake it.
        let needs_enter = !self.tuning.sqpoll || self.ring.submission().need_wakeup();
        self.ring.submit()?;
        self.stats.enters += u64::from(needs_enter);
        Ok(())
    }

    /// One turn: submits everything queued and waits for at least one completion besides
    /// those of the quiet sends just submitted, or for `wait`, in one `io_uring_enter`; then
    /// copies every completion into `reaped` (emptied first). With busy polling the turn
    /// looks instead of waiting.
    pub fn turn(&mut self, wait: Duration, reaped: &mut Vec<Completion>) -> std::io::Result<()> {
        if self.tuning.busy_poll {
            return self.busy_turn(wait, reaped);
        }
        if wait.is_zero() {
            // A look that will not sleep (an open-loop sender close to its next message):
            // other threads on this CPU get their turn first, as tokio's sender yields.
            std::thread::yield_now();
        }
        let ts = types::Timespec::from(wait);
        let args = types::SubmitArgs::new().timespec(&ts);
        let want = 1 + std::mem::take(&mut self.quiet) as usize;
        if self.ring.completion().is_empty() {
            self.stats.enters += 1;
            match self.ring.submitter().submit_with_args(want, &args) {
                Ok(_) => {}
                Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR)) => {}
                // The completion queue overflowed: reap first, the kernel flushes the rest.
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
                Err(e) => return Err(e),
            }
        } else if !self.ring.submission().is_empty() {
            self.enter_now()?;
        }
        self.reap(reaped);
        Ok(())
    }

    /// Whether nothing waits to be submitted: a paired ring's next turn would sleep.
    pub fn nothing_queued(&mut self) -> bool {
        self.ring.submission().is_empty()
    }

    /// Counts a send `half` submitted.
    pub fn sending(&mut self, half: usize) {
        self.sends_out[half] += 1;
        self.fresh_sends[half] = true;
    }

    /// Counts a send of `half` completed.
    pub fn sent(&mut self, half: usize) {
        self.sends_out[half] = self.sends_out[half].saturating_sub(1);
        self.sends_done[half] += 1;
    }

    /// Whether `half` submitted a send since the last call, or has one not yet completed.
    pub fn peer_sent(&mut self, half: usize) -> bool {
        std::mem::take(&mut self.fresh_sends[half]) || self.sends_out[half] > 0
    }

    /// A paired ring's turn (client and server halves on one ring, every receive issued
    /// right after the other half's sends, without waiting): what was queued is submitted
    /// and the completions it produced are reaped, without sleeping, while there is
    /// anything to submit; with nothing queued the turn waits for a completion or `wait`.
    pub fn paired_turn(
        &mut self,
        wait: Duration,
        reaped: &mut Vec<Completion>,
    ) -> std::io::Result<()> {
        if self.ring.submission().is_empty() {
            self.quiet = 0;
            return self.turn(wait, reaped);
        }
        self.stats.enters += 1;
        let to_submit = self.ring.submission().len() as u32;
        // GETEVENTS with no minimum: the kernel runs the completions' deferred task work
        // (a send that had to wait for room) and returns at once.
        // SAFETY: no argument is passed.
        let entered = unsafe {
            self.ring
                .submitter()
                .enter::<libc::sigset_t>(to_submit, 0, ENTER_GETEVENTS, None)
        };
        match entered {
            Ok(_) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EBUSY)) => {}
            Err(e) => return Err(e),
        }
        self.reap(reaped);
        Ok(())
    }

    /// A turn that never sleeps: it looks for completions until one is there or `wait` has
    /// passed, entering without waiting (with SQPOLL, only to wake the kernel thread: the
    /// thread posts completions itself, and the loop reads the queue).
    fn busy_turn(&mut self, wait: Duration, reaped: &mut Vec<Completion>) -> std::io::Result<()> {
        let until = std::time::Instant::now() + wait;
        let no_wait = types::Timespec::new();
        let args = types::SubmitArgs::new().timespec(&no_wait);
        // Every completion ends the look; a quiet send's alone is no reason to sleep here.
        self.quiet = 0;
        loop {
            self.stats.busy_polls += 1;
            if self.tuning.sqpoll {
                // One wake for what was queued since the last: until the kernel thread is
                // scheduled the queue stays full, and waking it again on every look only
                // adds system calls (thousands of them on a loaded machine).
                if self.stats.submissions != self.woken_at && !self.ring.submission().is_empty() {
                    self.enter_now()?;
                    self.woken_at = self.stats.submissions;
                }
            } else {
                self.stats.enters += 1;
                // Asking for one completion without waiting for it is what makes the kernel
                // run the completions' deferred task work.
                match self.ring.submitter().submit_with_args(1, &args) {
                    Ok(_) => {}
                    Err(e)
                        if matches!(
                            e.raw_os_error(),
                            Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                        ) => {}
                    Err(e) => return Err(e),
                }
            }
            if !self.ring.completion().is_empty() || std::time::Instant::now() >= until {
                break;
            }
            std::hint::spin_loop();
        }
        self.reap(reaped);
        Ok(())
    }

    /// Copies every completion into `reaped` (emptied first).
    fn reap(&mut self, reaped: &mut Vec<Completion>) {
        reaped.clear();
        reaped.extend(self.ring.completion().map(|cqe| Completion {
            user_data: cqe.user_data(),
            result: cqe.result(),
            flags: cqe.flags(),
        }));
        self.stats.completions += reaped.len() as u64;
    }

    /// Puts `fd` in registered slot `slot` when there are slots and `slot` is one of them;
    /// the target its operations use.
    pub fn register(&mut self, slot: usize, fd: RawFd) -> Target {
        match u32::try_from(slot) {
            Ok(s) if s < self.slots => {
                self.stats.other_syscalls += 1;
                match self.ring.submitter().register_files_update(s, &[fd]) {
                    Ok(_) => {
                        self.stats.registered_files += 1;
                        Target::Fixed(s)
                    }
                    Err(_) => Target::Fd(fd),
                }
            }
            _ => Target::Fd(fd),
        }
    }

    /// Empties the slot `target` names, if it is one.
    pub fn unregister(&mut self, target: Target) {
        if let Target::Fixed(slot) = target {
            self.stats.other_syscalls += 1;
            let _ = self.ring.submitter().register_files_update(slot, &[-1]);
        }
    }
}
