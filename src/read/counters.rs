//! The counters of an echomark run, checked against each other and against what the
//! matrix asked for: each problem names the run's JSON path. The one rule that classifies a
//! run is [`crate::validate::rules`]; these are the archive's own consistency, which a
//! runner cannot break and an edited or damaged archive can.

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
    check_ring(out, file, index, entry);
    check_quic(out, file, index, entry);
    check_udp_gso(out, file, index, entry);
    check_syscalls(out, file, (index, entry), settings.count_syscalls);
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

/// The arithmetic of a QUIC run's counters: no more packets lost than sent, no more send
/// calls than datagrams sent, no more DATAGRAM frames sent than datagrams handed.
fn check_quic(out: &mut FileRead, file: &ArchiveFile, index: usize, entry: &Entry) {
    let Some(q) = entry.metrics.as_ref().and_then(|m| m.quic.as_ref()) else {
        return;
    };
    let path = |field: &str| format!("results[{index}].metrics.quic.{field}");
    if q.lost_packets > q.sent_packets {
        out.problem(
            &file.path,
            path("lost_packets"),
            format!(
                "is {}, more than the {} packets sent",
                q.lost_packets, q.sent_packets
            ),
        );
    }
    if let (Some(accepted), Some(made)) = (q.zero_rtt_accepted, q.handshakes) {
        if accepted > made {
            out.problem(
                &file.path,
                path("zero_rtt_accepted"),
                format!("is {accepted}, more than the {made} handshakes made"),
            );
        }
    }
    if let (Some(handed), Some(sent)) = (q.datagrams_handed, q.datagram_frames_sent) {
        if sent > handed {
            out.problem(
                &file.path,
                path("datagram_frames_sent"),
                format!(
                    "is {sent}, more DATAGRAM frames than the {handed} datagrams handed to quinn"
                ),
            );
        }
    }
    if q.udp_tx_ios > q.udp_tx_datagrams {
        out.problem(
            &file.path,
            path("udp_tx_ios"),
            format!(
                "is {}, more send calls than the {} datagrams they sent",
                q.udp_tx_ios, q.udp_tx_datagrams
            ),
        );
    }
}

/// The arithmetic of an io-uring server's counters: every multishot completion took a
/// buffer from the ring, and every buffer taken came with a completion.
fn check_ring(out: &mut FileRead, file: &ArchiveFile, index: usize, entry: &Entry) {
    let Some(ring) = entry.server.as_ref().and_then(|s| s.ring.as_ref()) else {
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
}
