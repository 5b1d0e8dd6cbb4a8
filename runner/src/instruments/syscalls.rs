//! System calls counted by the kernel for this process: the `raw_syscalls:sys_enter`
//! tracepoint as a perf counter (counted in the kernel, never traced to user space), opened
//! before the runtime threads start so that every thread they spawn inherits it. The IO
//! loops of every backend are counted alike, which `io_uring_enter` counts of one backend
//! cannot do for the others.
//!
//! It needs the tracepoint's id from tracefs and the right to count it (root, or
//! `CAP_PERFMON`, or `kernel.perf_event_paranoid` ≤ -1). A newly started machine often has
//! no tracefs mounted: as root the counter mounts it (and says so on stderr); otherwise it
//! fails with the one command that fixes it.

use std::path::Path;

use perf_event::events::Tracepoint;
use perf_event::{Builder, Counter};

/// Where tracefs is mounted by convention (and where the counter mounts it).
const TRACEFS: &str = "/sys/kernel/tracing";

/// Where tracefs keeps the tracepoint's id: its own mount first, then under debugfs.
const TRACEPOINT_ID_FILES: [&str; 2] = [
    "/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
    "/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id",
];

/// The command that mounts tracefs, as the errors tell it.
pub const MOUNT_COMMAND: &str = "sudo mount -t tracefs nodev /sys/kernel/tracing";

/// Why system calls could not be counted.
#[derive(Debug, thiserror::Error)]
pub enum SyscallCountError {
    #[error("cannot count system calls: tracefs is not mounted (no {}) and this process may not mount it; run `{MOUNT_COMMAND}` once, then again", TRACEPOINT_ID_FILES.join(" or "))]
    NotMounted,
    #[error("cannot count system calls: mounting tracefs at {TRACEFS} failed ({0}); run `{MOUNT_COMMAND}` once, then again")]
    MountFailed(#[source] std::io::Error),
    #[error("cannot count system calls: tracefs is mounted but has no raw_syscalls:sys_enter tracepoint ({}); the kernel needs CONFIG_FTRACE_SYSCALLS", TRACEPOINT_ID_FILES.join(", "))]
    NoTracepoint,
    #[error(
        "cannot count system calls: the kernel refused a counter of raw_syscalls:sys_enter (root or CAP_PERFMON needed): {0}"
    )]
    Refused(#[source] std::io::Error),
    #[error("reading the system call counter failed: {0}")]
    Read(#[source] std::io::Error),
}

/// A running count of the system calls made by the thread that opened it and by every
/// thread started after it (`inherit`).
pub struct SyscallCounter {
    counter: Counter,
}

impl SyscallCounter {
    /// Opens and starts the counter; call before any thread to be counted is spawned.
    /// Mounts tracefs first when it is missing and this process may mount it.
    pub fn open() -> Result<Self, SyscallCountError> {
        let id = match tracepoint_id() {
            Some(id) => id,
            None => {
                mount_tracefs()?;
                tracepoint_id().ok_or(SyscallCountError::NoTracepoint)?
            }
        };
        let counter = Builder::new(Tracepoint::with_id(id))
            .observe_self()
            .any_cpu()
            .inherit(true)
            // The tracepoint fires in the kernel: a counter that excludes the kernel (the
            // builder's default) counts nothing.
            .include_kernel()
            .enabled(true)
            .build()
            .map_err(SyscallCountError::Refused)?;
        Ok(Self { counter })
    }

    /// [`open`](Self::open) when `asked`, else no counter: what `once` and `serve` do with
    /// `--count-syscalls`.
    pub fn open_if(asked: bool) -> Result<Option<Self>, SyscallCountError> {
        asked.then(Self::open).transpose()
    }

    /// System calls counted so far, live threads included.
    pub fn read(&mut self) -> Result<u64, SyscallCountError> {
        self.counter.read().map_err(SyscallCountError::Read)
    }
}

/// The tracepoint's id, from whichever tracefs mount has it.
fn tracepoint_id() -> Option<u64> {
    TRACEPOINT_ID_FILES
        .iter()
        .find_map(|file| read_id(Path::new(file)))
}

fn read_id(file: &Path) -> Option<u64> {
    std::fs::read_to_string(file).ok()?.trim().parse().ok()
}

/// Mounts tracefs at [`TRACEFS`] when this process may (its effective user is root); the
/// mount stays for every later run, as `mount` itself would leave it.
fn mount_tracefs() -> Result<(), SyscallCountError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(SyscallCountError::NotMounted);
    }
    let c = |s: &str| std::ffi::CString::new(s).expect("no NUL in a constant");
    let (source, target, kind) = (c("nodev"), c(TRACEFS), c("tracefs"));
    // SAFETY: every pointer is a NUL-terminated string that outlives the call; tracefs
    // takes no mount data.
    let r = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            kind.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if r != 0 {
        return Err(SyscallCountError::MountFailed(
            std::io::Error::last_os_error(),
        ));
    }
    eprintln!("echomark-runner: mounted tracefs at {TRACEFS} to count system calls");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_counts_the_system_calls_of_threads_started_after_it() {
        let mut counter = match SyscallCounter::open() {
            Ok(c) => c,
            // Counting needs root or CAP_PERFMON (CI runs as root).
            Err(e) => return echomark::skip::because(&e.to_string()),
        };
        let before = counter.read().unwrap();
        std::thread::spawn(|| {
            for _ in 0..1000 {
                // getppid is a system call libc does not cache.
                unsafe { libc::getppid() };
            }
        })
        .join()
        .unwrap();
        let after = counter.read().unwrap();
        assert!(after - before >= 1000, "{before} → {after}");
        assert!(after - before < 1100, "{before} → {after}");
    }
}
