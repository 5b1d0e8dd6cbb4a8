//! The server process of a run (`matrix --server-cmd`): its CPU time and resident set
//! within what its machine has, its system calls, and its io_uring rings: present only for
//! a server that has them (`serve --backend io-uring`), busy-polling only when asked
//! (`--uring-busy-poll`), and counts that add up.

use echomark_archive::{Entry, ServerProcess};

use super::{at, machine_memory, FileRead};
use crate::command_line::Words;
use crate::model::ArchiveFile;

/// Every check of entry `index`'s server process, if it has one.
pub fn check(out: &mut FileRead, file: &ArchiveFile, index: usize, entry: &Entry) {
    let Some(server) = entry.server.as_ref() else {
        return;
    };
    if let Some(cpu) = server.cpu_seconds {
        if let Err(e) = echomark_archive::limits::CPU_SECONDS.check(cpu) {
            at(out, file, index, "server.cpu_seconds", e.to_string());
        }
    }
    // The server ran on the machine `--server-machine` described, else on this one.
    let recorded = file
        .external_server
        .as_ref()
        .and_then(|s| s.machine.as_ref())
        .map_or(file.host.memory_bytes, |m| m.memory_bytes);
    let memory = machine_memory(recorded);
    if let Some(rss) = server.peak_rss_bytes.filter(|&b| b > memory) {
        at(
            out,
            file,
            index,
            "server.peak_rss_bytes",
            format!("{rss} bytes, more than the {memory} bytes of memory of the machine it ran on"),
        );
    }
    if server.syscalls == Some(0) {
        at(
            out,
            file,
            index,
            "server.syscalls",
            "is 0, but a process that started, listened and answered made system calls".to_string(),
        );
    }
    check_ring(out, file, index, server);
}

/// What the server's command line says of echomark's own `serve`: its backend and whether
/// it busy-polls; `None` when the command is not recognisably `echomark-runner serve` (a
/// script, another server), whose rings nothing here can judge.
fn serve_flags(command: &str) -> Option<(String, bool)> {
    let words = Words::split(command).ok()?;
    if !words.runs("echomark-runner", "serve") {
        return None;
    }
    let backend = words.value(&["--backend"]).unwrap_or("tokio").to_string();
    Some((backend, words.has("--uring-busy-poll")))
}

/// The arithmetic of an io-uring server's counters: every multishot completion took a
/// buffer from the ring, and every buffer taken came with a completion; every registration
/// of a file is one of the loops' other system calls, and every call the loops counted is
/// one of the process's. The rings' presence and busy looks must be what the command asked
/// for.
fn check_ring(out: &mut FileRead, file: &ArchiveFile, index: usize, server: &ServerProcess) {
    let Some(ring) = server.ring.as_ref() else {
        return;
    };
    let path = |field: &str| format!("results[{index}].server.ring.{field}");
    if ring.multishot_receives > ring.ring_buffers_used {
        out.problem(
            &file.path,
            path("multishot_receives"),
            format!(
                "is {}, more than the {} ring buffers used: each multishot completion takes one",
                ring.multishot_receives, ring.ring_buffers_used
            ),
        );
    }
    if ring.ring_buffers_used > ring.completions {
        out.problem(
            &file.path,
            path("ring_buffers_used"),
            format!(
                "is {}, more than the {} completions reaped",
                ring.ring_buffers_used, ring.completions
            ),
        );
    }
    if ring.registered_files > ring.other_syscalls {
        out.problem(
            &file.path,
            path("registered_files"),
            format!(
                "is {}, more than the {} other system calls the loops made: each registration \
                 is one of them",
                ring.registered_files, ring.other_syscalls
            ),
        );
    }
    let calls = ring.enters.saturating_add(ring.other_syscalls);
    if let Some(counted) = server.syscalls.filter(|&n| n < calls) {
        at(
            out,
            file,
            index,
            "server.syscalls",
            format!(
                "is {counted}, fewer than the {calls} io_uring_enter and other calls its rings \
                 counted"
            ),
        );
    }
    let Some((backend, busy_poll)) = serve_flags(&server.command) else {
        return;
    };
    if backend != "io-uring" {
        at(
            out,
            file,
            index,
            "server.ring",
            format!(
                "is present, but the server's command runs serve --backend {backend}, which has \
                 no io_uring rings"
            ),
        );
    } else if ring.busy_polls > 0 && !busy_poll {
        out.problem(
            &file.path,
            path("busy_polls"),
            format!(
                "is {}, but the server's command does not ask for --uring-busy-poll: its loops \
                 slept when there was nothing to do",
                ring.busy_polls
            ),
        );
    }
}
