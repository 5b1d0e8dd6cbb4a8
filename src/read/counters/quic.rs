//! A QUIC run's counters (quinn's connection statistics): packets and calls that add up,
//! figures a connection can have (a round-trip time, a congestion window, a path MTU within
//! QUIC's), connections for the messages it carried, and the transport settings the runner
//! accepts.

use echomark_archive::limits;
use echomark_archive::quic::{QUIC_MAX_MTU, QUIC_MIN_MTU};
use echomark_archive::{Entry, QuicCounters};

use super::{at, FileRead};
use crate::model::ArchiveFile;

/// Every check of entry `index`'s QUIC counters and transport.
pub fn check(out: &mut FileRead, file: &ArchiveFile, index: usize, entry: &Entry) {
    if let Some(why) = entry.case_key().quic_transport.and_then(|t| t.problem()) {
        at(out, file, index, "quic_transport", why);
    }
    let Some(m) = entry.metrics.as_ref() else {
        return;
    };
    let Some(q) = m.quic.as_ref() else {
        return;
    };
    check_arithmetic(out, file, index, entry);
    if let Some(why) = q.transport.and_then(|t| t.problem()) {
        at(out, file, index, "metrics.quic.transport", why);
    }
    for (field, value, bound) in [
        ("smoothed_rtt_us", q.smoothed_rtt_us, &limits::LATENCY_US),
        ("cwnd_bytes", q.cwnd_bytes, &limits::WINDOW_BYTES),
    ] {
        if let Err(e) = bound.check(value) {
            at(
                out,
                file,
                index,
                &format!("metrics.quic.{field}"),
                e.to_string(),
            );
        }
    }
    check_connections(out, file, index, (q, m.clients, m.messages_received));
}

/// A run that kept its connections (every mode but `quic-handshake` and `quic-0rtt`, which
/// count handshakes instead) carried its messages over at least one, one per client at
/// most, each with a path MTU inside QUIC's range; a datagram's payload rides in one
/// packet, so its limit is below that MTU.
fn check_connections(
    out: &mut FileRead,
    file: &ArchiveFile,
    index: usize,
    (q, clients, received): (&QuicCounters, u64, u64),
) {
    let path = |field: &str| format!("metrics.quic.{field}");
    if q.handshakes.is_none() && received > 0 && q.connections == 0 {
        at(
            out,
            file,
            index,
            &path("connections"),
            format!("is 0, but the run received {received} echoes over its connections"),
        );
    }
    if q.connections > clients {
        at(
            out,
            file,
            index,
            &path("connections"),
            format!(
                "is {}, more than the run's {clients} clients (one connection each)",
                q.connections
            ),
        );
    }
    let mtus = u64::from(QUIC_MIN_MTU)..=u64::from(QUIC_MAX_MTU);
    let no_path = q.connections == 0 && q.current_mtu == 0;
    if !no_path && !mtus.contains(&q.current_mtu) {
        at(
            out,
            file,
            index,
            &path("current_mtu"),
            format!(
                "is {}, outside QUIC's {QUIC_MIN_MTU} to {QUIC_MAX_MTU} bytes for a connection's \
                 path",
                q.current_mtu
            ),
        );
    }
    if let Some(limit) = q.datagram_size_limit.filter(|&l| l >= q.current_mtu) {
        at(
            out,
            file,
            index,
            &path("datagram_size_limit"),
            format!(
                "is {limit}, not below the path's MTU of {} bytes: a DATAGRAM frame rides in \
                 one packet",
                q.current_mtu
            ),
        );
    }
}

/// The arithmetic of a QUIC run's counters: no more packets lost than sent, no more send
/// calls than datagrams sent, no more DATAGRAM frames sent than datagrams handed.
fn check_arithmetic(out: &mut FileRead, file: &ArchiveFile, index: usize, entry: &Entry) {
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
