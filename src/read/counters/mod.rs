//! The counters of an echomark run, checked against each other, against what the matrix
//! asked for and against what is physically possible: each problem names the run's JSON
//! path. The one rule that classifies a run is [`crate::validate::rules`]; these are the
//! archive's own consistency, which a runner cannot break and an edited or damaged archive
//! can. Ranges are the runner's flags' where it has one ([`echomark_archive::limits`]),
//! what a machine can do otherwise. The server process's are in `server`, QUIC's in
//! `quic`, a fleet run's against its generators' in `fleet`.

mod fleet;
mod quic;
mod server;

use echomark_archive::limits::{self, UDP_BATCH};
use echomark_archive::{Entry, Settings};

use super::FileRead;
use crate::model::ArchiveFile;

/// Every check of entry `index`'s counters.
pub fn check(
    out: &mut FileRead,
    file: &ArchiveFile,
    (index, entry): (usize, &Entry),
    settings: &Settings,
) {
    server::check(out, file, index, entry);
    quic::check(out, file, index, entry);
    check_udp_gso(out, file, index, entry);
    check_syscalls(out, file, (index, entry), settings.count_syscalls);
    check_client(out, file, index, entry);
    fleet::check(out, file, index, entry);
}

/// A problem at `field` of entry `index`'s JSON (`results[3].metrics.udp_batch`).
fn at(out: &mut FileRead, file: &ArchiveFile, index: usize, field: &str, message: String) {
    out.problem(&file.path, format!("results[{index}].{field}"), message);
}

/// The most memory a process on a machine with `memory_bytes` (when recorded) can hold
/// resident: all of it, and never more than any machine has.
fn machine_memory(memory_bytes: Option<u64>) -> u64 {
    memory_bytes.map_or(limits::MAX_MEMORY_BYTES, |m| {
        m.min(limits::MAX_MEMORY_BYTES)
    })
}

/// The client's own figures: a UDP batch inside `--udp-batch`'s range, a resident set no
/// larger than the machine's memory, and system calls for the round trips it made.
fn check_client(out: &mut FileRead, file: &ArchiveFile, index: usize, entry: &Entry) {
    let Some(m) = entry.metrics.as_ref() else {
        return;
    };
    if let Some(batch) = m.udp_batch.filter(|b| !UDP_BATCH.contains(b)) {
        at(
            out,
            file,
            index,
            "metrics.udp_batch",
            format!(
                "is {batch}, outside --udp-batch's {} to {}",
                UDP_BATCH.start(),
                UDP_BATCH.end()
            ),
        );
    }
    let memory = machine_memory(file.host.memory_bytes);
    if let Some(rss) = m.peak_rss_bytes.filter(|&b| b > memory) {
        at(
            out,
            file,
            index,
            "metrics.peak_rss_bytes",
            format!("{rss} bytes, more than the {memory} bytes of memory of the machine"),
        );
    }
    // Over the measured interval, a round trip needs a send and a receive: at the least one
    // system call (io_uring_enter) for all of them.
    if m.syscalls == Some(0) && m.messages > 0 {
        at(
            out,
            file,
            index,
            "metrics.syscalls",
            format!(
                "is 0, but the run completed {} round trips: a process that sends and \
                 receives makes system calls",
                m.messages
            ),
        );
    }
}

/// A matrix that counted system calls has a count in every run that measured (and one that
/// did not, none): what was asked for is what was recorded.
fn check_syscalls(
    out: &mut FileRead,
    file: &ArchiveFile,
    (index, entry): (usize, &Entry),
    asked: bool,
) {
    let Some(m) = entry.metrics.as_ref() else {
        return;
    };
    let problem = match (asked, m.syscalls) {
        (true, None) if m.ok => "is missing, though settings.count_syscalls asked every run for it",
        (false, Some(_)) => "is present, though settings.count_syscalls did not ask for it",
        _ => return,
    };
    out.problem(
        &file.path,
        format!("results[{index}].metrics.syscalls"),
        problem.to_string(),
    );
}

/// `--udp-gso` rides on `--udp-batch`: a run that says the kernel segmented its batches
/// must say how large they were.
fn check_udp_gso(out: &mut FileRead, file: &ArchiveFile, index: usize, entry: &Entry) {
    if entry
        .metrics
        .as_ref()
        .is_some_and(|m| m.udp_gso && m.udp_batch.is_none())
    {
        out.problem(
            &file.path,
            format!("results[{index}].metrics.udp_gso"),
            "is true, though the run records no udp_batch for it to segment".to_string(),
        );
    }
}
