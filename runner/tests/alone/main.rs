//! The tests that need the machine to themselves, in a binary of their own whose tests run
//! one at a time: open-loop schedules kept to the microsecond, and the kernel's UDP drop
//! counters, which count every process's datagrams. Cargo runs test binaries one after
//! another, so nothing else of the suite runs beside these.

use std::sync::{Mutex, MutexGuard};

mod isolation;
mod open_loop;

#[path = "../it/common/open_loop.rs"]
mod run;

/// Held for the whole of each test: the tests of this binary run one at a time.
fn alone() -> MutexGuard<'static, ()> {
    static ALONE: Mutex<()> = Mutex::new(());
    // A failed test poisons the lock; the next one still runs alone.
    ALONE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
