//! What echomark's QUIC server lets a client make it hold when it faces any client
//! (`serve`). quinn's defaults suit a server that reads what it accepts: a peer may open 100
//! bidirectional and 100 unidirectional streams, fill each up to its 1.25 MB window and the
//! connection up to 2^62 bytes (no limit), and buffer 1.25 MB of datagrams; the echo reads
//! one stream (`quic`), a stream per message (`quic-streams`) or datagrams
//! (`quic-datagram`), so a client that wrote on the streams it never reads made the server
//! hold about 250 MB per connection, with no cap on connections.
//!
//! The limits follow from the protocol: only the streams it reads may be opened (no
//! unidirectional stream ever), the connection window is twice the stream window (a
//! stream's window, and as much again while the credit the server returns is on its way)
//! unless `--quic-connection-window` says otherwise, datagrams are buffered only where they
//! are the protocol, and connections past a cap are refused. The client's transport (what
//! a run records) is unchanged; in process, where the server faces only its own clients,
//! both ends keep it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use echomark_archive::quic::QUINN_CONNECTION_WINDOW;
use echomark_archive::{Protocol, QuicTransport};
use serde::Serialize;

/// Connections `serve` takes at once unless `--quic-max-connections` says otherwise: as
/// many as the most clients a run has (`--clients` at most 1,024).
pub const DEFAULT_MAX_CONNECTIONS: usize = 1_024;
/// Streams in flight on one `quic-streams` connection: a client's largest window
/// (`--window` at most 1,024).
const MOST_STREAMS_IN_FLIGHT: u32 = 1_024;
/// quinn's datagram buffer (as large as its stream window), where datagrams are the protocol
/// and the server reads them as they come.
const QUINN_DATAGRAM_BUFFER: usize = 1_250_000;
/// Datagram bytes buffered where datagrams are not the protocol: no fewer than the largest
/// datagram quinn lets a peer announce (so the size limit a client records is the same),
/// and no more.
const UNREAD_DATAGRAM_BUFFER: usize = u16::MAX as usize;

/// A server's receive limits, as `serve`'s listening line says them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ServerLimits {
    /// Bytes a client may send on one stream before the server reads them.
    pub stream_window: u64,
    /// Bytes a client may send over all streams of a connection before they are read.
    pub connection_window: u64,
    /// Bidirectional streams a client may have open at once (unidirectional: none).
    pub bidi_streams: u32,
    /// Datagram bytes buffered before the oldest are dropped.
    pub datagram_buffer: usize,
    /// Connections served at once; more are refused.
    pub connections: usize,
}

impl ServerLimits {
    /// The limits of a server of `protocol` on `transport`, taking `connections` at once.
    pub fn of(transport: &QuicTransport, protocol: Protocol, connections: usize) -> Self {
        let bidi_streams = match protocol {
            Protocol::QuicStreams => MOST_STREAMS_IN_FLIGHT,
            // One stream: the client's long one, or the message of a connection's own.
            Protocol::Quic | Protocol::QuicHandshake | Protocol::Quic0rtt => 1,
            _ => 0,
        };
        let connection_window = if transport.connection_window == QUINN_CONNECTION_WINDOW {
            transport
                .stream_window
                .saturating_mul(2)
                .min(QUINN_CONNECTION_WINDOW)
        } else {
            transport.connection_window
        };
        let datagram_buffer = match protocol {
            Protocol::QuicDatagram => QUINN_DATAGRAM_BUFFER,
            _ => UNREAD_DATAGRAM_BUFFER,
        };
        Self {
            stream_window: transport.stream_window,
            connection_window,
            bidi_streams,
            datagram_buffer,
            connections,
        }
    }

    /// quinn's transport for the server: `transport` (as the client has it) within these
    /// limits.
    pub fn transport(&self, transport: &QuicTransport) -> quinn::TransportConfig {
        let mut config = super::transport_config(transport);
        let window = |bytes: u64| quinn::VarInt::from_u64(bytes).unwrap_or(quinn::VarInt::MAX);
        config
            .receive_window(window(self.connection_window))
            .max_concurrent_bidi_streams(self.bidi_streams.into())
            .max_concurrent_uni_streams(0u32.into())
            .datagram_receive_buffer_size(Some(self.datagram_buffer));
        config
    }

    /// The count of open connections every endpoint of a server shares.
    pub fn cap(&self) -> ConnectionCap {
        ConnectionCap {
            most: self.connections,
            open: Arc::default(),
        }
    }
}

/// How many connections a server takes at once, and how many it has, over all its
/// endpoints.
#[derive(Debug, Clone)]
pub struct ConnectionCap {
    most: usize,
    open: Arc<AtomicUsize>,
}

impl ConnectionCap {
    /// A place for one more connection, held until the guard is dropped; `None` at the cap.
    pub fn admit(&self) -> Option<Admitted> {
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| {
                (open < self.most).then_some(open + 1)
            })
            .ok()?;
        Some(Admitted(self.open.clone()))
    }
}

/// One admitted connection's place under the cap.
#[derive(Debug)]
pub struct Admitted(Arc<AtomicUsize>);

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_protocol_may_open_only_the_streams_it_reads_within_a_bounded_window() {
        let t = QuicTransport::default();
        let of = |p| ServerLimits::of(&t, p, 8);
        assert_eq!(of(Protocol::Quic).bidi_streams, 1);
        assert_eq!(of(Protocol::QuicStreams).bidi_streams, 1_024);
        assert_eq!(of(Protocol::QuicDatagram).bidi_streams, 0);
        assert_eq!(of(Protocol::Quic).connection_window, 2 * t.stream_window);
        assert!(of(Protocol::QuicDatagram).datagram_buffer > of(Protocol::Quic).datagram_buffer);
        // A window the flags give is kept as given.
        let given = QuicTransport {
            connection_window: 262_144,
            ..t
        };
        let limits = ServerLimits::of(&given, Protocol::Quic, 8);
        assert_eq!(limits.connection_window, 262_144);
    }

    #[test]
    fn the_cap_admits_up_to_its_count_and_frees_a_place_when_a_connection_ends() {
        let cap = ServerLimits::of(&QuicTransport::default(), Protocol::Quic, 2).cap();
        let first = cap.admit().expect("one");
        let _second = cap.admit().expect("two");
        assert!(cap.admit().is_none(), "three");
        drop(first);
        assert!(cap.admit().is_some(), "a freed place");
    }
}
