//! What identifies a measurement: the protocol, address family and IO model enums, and the
//! one configuration key ([`CaseKey`]) that runner, validator, aggregation and pages share.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A name that is not one of an enum's spellings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} '{got}' (expected one of: {expected})")]
pub struct UnknownName {
    pub what: &'static str,
    pub got: String,
    pub expected: String,
}

macro_rules! named_enum {
    ($(#[$meta:meta])* $name:ident, $what:literal, { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] #[cfg_attr(feature = "clap", value(name = $text))] $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The spelling used in JSON and on the command line.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = UnknownName;
            fn from_str(s: &str) -> Result<Self, UnknownName> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(UnknownName {
                        what: $what,
                        got: s.to_string(),
                        expected: [$($text),+].join(", "),
                    }),
                }
            }
        }
    };
}

named_enum!(
    /// The echo protocol, in the order arknet's reports list them (default `tcp`).
    Protocol, "protocol", {
        /// TCP with TCP_NODELAY and a length prefix per message.
        #[default]
        Tcp => "tcp",
        /// One datagram per message on connected client sockets.
        Udp => "udp",
        /// RFC 6455 binary frames on `/echo` after an HTTP/1.1 upgrade.
        Websocket => "websocket",
        /// TCP's framing inside TLS.
        Tcps => "tcps",
        /// WebSocket inside TLS.
        Wss => "wss",
        /// HTTP/1.1 keep-alive `POST /echo`, pipelined up to the window on one connection.
        Http => "http",
        /// HTTP/1.1 inside TLS.
        Https => "https",
        /// QUIC (RFC 9000, TLS 1.3 inside): one long-lived bidirectional stream per client
        /// carrying TCP's length-prefixed messages.
        Quic => "quic",
        /// QUIC with a new bidirectional stream for every message (request and response,
        /// the stream's end delimiting each), so stream setup is part of each round trip.
        QuicStreams => "quic-streams",
        /// QUIC's unreliable datagrams (RFC 9221), one message each, verified like UDP.
        QuicDatagram => "quic-datagram",
        /// QUIC with a new connection for every message (a full handshake, one stream,
        /// then close), so what is measured is handshakes per second.
        QuicHandshake => "quic-handshake",
        /// `quic-handshake` resuming an earlier session and sending the message as 0-RTT
        /// data, so the echo can come back within the first round trip.
        Quic0rtt => "quic-0rtt",
    }
);

impl Protocol {
    /// The seven protocols of arknet's reports, which the presets and a matrix without
    /// `--protocols` measure (QUIC is asked for by name).
    pub const CLASSIC: &'static [Protocol] = &[
        Protocol::Tcp,
        Protocol::Udp,
        Protocol::Websocket,
        Protocol::Tcps,
        Protocol::Wss,
        Protocol::Http,
        Protocol::Https,
    ];

    /// The QUIC protocols.
    pub const QUIC: &'static [Protocol] = &[
        Protocol::Quic,
        Protocol::QuicStreams,
        Protocol::QuicDatagram,
        Protocol::QuicHandshake,
        Protocol::Quic0rtt,
    ];

    /// Whether the protocol is one of QUIC's (a UDP socket on each side, TLS 1.3 inside).
    pub fn is_quic(self) -> bool {
        Self::QUIC.contains(&self)
    }

    /// Whether every message makes a QUIC connection of its own (`quic-handshake`,
    /// `quic-0rtt`).
    pub fn is_connection_per_message(self) -> bool {
        matches!(self, Protocol::QuicHandshake | Protocol::Quic0rtt)
    }

    /// Whether messages travel as datagrams that may be lost (`udp`, `quic-datagram`):
    /// a missing echo is counted as lost, not as unfinished.
    pub fn is_datagram(self) -> bool {
        matches!(self, Protocol::Udp | Protocol::QuicDatagram)
    }

    /// Whether the protocol's packets are UDP datagrams, so the kernel's UDP counters
    /// (receive-buffer drops) describe it.
    pub fn rides_udp(self) -> bool {
        self == Protocol::Udp || self.is_quic()
    }

    /// Whether the protocol runs inside TLS over TCP (QUIC carries TLS 1.3 inside itself
    /// and has no plaintext twin).
    pub fn uses_tls(self) -> bool {
        matches!(self, Protocol::Tcps | Protocol::Wss | Protocol::Https)
    }

    /// Whether a client checks the server's certificate: TLS over TCP, and QUIC (TLS 1.3
    /// inside).
    pub fn needs_trust(self) -> bool {
        self.uses_tls() || self.is_quic()
    }

    /// The same framing without TLS (`tcps` → `tcp`); `None` for plaintext protocols.
    pub fn plaintext(self) -> Option<Protocol> {
        match self {
            Protocol::Tcps => Some(Protocol::Tcp),
            Protocol::Wss => Some(Protocol::Websocket),
            Protocol::Https => Some(Protocol::Http),
            _ => None,
        }
    }
}

named_enum!(
    /// The loopback address family.
    AddressFamily, "address family", {
        /// 127.0.0.1
        #[default]
        Ipv4 => "ipv4",
        /// ::1
        Ipv6 => "ipv6",
    }
);

named_enum!(
    /// How runtimes and threads are arranged.
    IoModel, "IO model", {
        /// One runtime (arknet: one io_context) driven by N threads.
        #[default]
        Shared => "shared",
        /// N single-thread runtimes (arknet: N io_contexts), one OS thread each.
        Sharded => "sharded",
    }
);

named_enum!(
    /// How an open-loop schedule spaces its messages.
    Arrival, "arrival process", {
        /// Evenly spaced: one message every `clients / rate` seconds per client, the clients
        /// offset so that the combined stream is evenly spaced too.
        #[default]
        Uniform => "uniform",
        /// Exponential gaps (a Poisson process) from a seeded generator, per client.
        Poisson => "poisson",
    }
);

/// An open-loop load: messages sent on a schedule at a fixed offered rate, whether or not
/// echoes have come back. A configuration without one is closed-loop (a client sends its next
/// message only when an echo frees a slot in its window).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OfferedLoad {
    /// Messages per second over all clients.
    pub rate: u64,
    pub arrival: Arrival,
}

impl fmt::Display for OfferedLoad {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} msg/s {}", self.rate, self.arrival)
    }
}

/// The fields that identify a configuration: arknet's nine-field group key plus echomark's
/// per-case UDP server receive buffer. Every layer (runner, validator, aggregation, pages)
/// uses this one key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CaseKey {
    /// The measured stack (`tokio`; arknet's `standalone` and `boost`).
    pub backend: crate::backend::Backend,
    /// The program variant: `echomark`, or arknet's `arknet-callback`, `asio-coroutine`, …
    pub implementation: String,
    pub protocol: Protocol,
    pub payload_bytes: u64,
    pub clients: u64,
    pub window: u64,
    pub io_model: IoModel,
    pub io_threads: u64,
    pub handler_work: u64,
    /// UDP isolation cases: the server socket's receive-buffer request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_server_recv_buffer: Option<u64>,
    /// Open loop: the offered load; absent for closed-loop configurations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<OfferedLoad>,
    /// QUIC: the transport settings, when they are not quinn's defaults
    /// ([`crate::quic::QuicTransport::keyed`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic_transport: Option<crate::quic::QuicTransport>,
    /// A fleet run: how many generator hosts, each with `clients` connections, measured the
    /// case together; absent for one client process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generators: Option<u64>,
}

impl CaseKey {
    /// Position of the topology in the canonical order 1×1, 1×2, 1×4, 2×1, 4×1
    /// (runtimes × threads each): shared by threads, then sharded by threads.
    pub fn topology_rank(&self) -> (u8, u64) {
        (u8::from(self.io_model != IoModel::Shared), self.io_threads)
    }

    /// The key ordered by names (protocol and IO model as their names sort, as arknet's
    /// group key does), for listings sorted by name rather than in page order.
    pub fn by_name(&self) -> impl Ord + '_ {
        (
            (self.backend.as_str(), self.implementation.as_str()),
            self.protocol.as_str(),
            (self.payload_bytes, self.clients, self.window),
            self.io_model.as_str(),
            (
                self.io_threads,
                self.handler_work,
                self.udp_server_recv_buffer,
                self.load,
                self.quic_transport,
            ),
            // Last, so that listings without a fleet keep their order.
            self.generators,
        )
    }

    /// Clients × window as plain text (`16 × 1`), led by the generators of a fleet run
    /// (`4 generators × 16 × 1`): the load's connections, as messages and listings say them.
    pub fn clients_by_window(&self) -> String {
        let connections = format!("{} × {}", self.clients, self.window);
        match self.generators {
            Some(1) => format!("1 generator × {connections}"),
            Some(n) => format!("{n} generators × {connections}"),
            None => connections,
        }
    }

    /// Whether this is the one-thread baseline of its group (`shared 1`).
    pub fn is_baseline(&self) -> bool {
        self.io_model == IoModel::Shared && self.io_threads == 1
    }
}

/// One repetition of one configuration: unique within a dataset.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunId {
    pub case: CaseKey,
    pub repetition: u64,
}

/// `udp 1024 B, 16 × 1, shared 1, work 0, repetition 2` (`tcp 1024 B, 4 generators × 16 ×
/// 1, …` for a fleet run): how errors name a run.
impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.case;
        write!(
            f,
            "{} {} B, {}, {} {}, work {}, repetition {}",
            c.protocol,
            c.payload_bytes,
            c.clients_by_window(),
            c.io_model,
            c.io_threads,
            c.handler_work,
            self.repetition
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_errors() {
        for p in Protocol::ALL {
            assert_eq!(p.as_str().parse::<Protocol>(), Ok(*p));
            assert_eq!(serde_json::to_string(p).unwrap(), format!("\"{p}\""));
        }
        let e = "sctp".parse::<Protocol>().unwrap_err();
        assert!(e.to_string().contains("unknown protocol 'sctp'"), "{e}");
        assert!(serde_json::from_str::<IoModel>("\"owned\"").is_err());
        assert_eq!("sharded".parse::<IoModel>(), Ok(IoModel::Sharded));
    }

    #[test]
    fn canonical_topology_order_puts_shared_first() {
        let key = |io_model, io_threads| CaseKey {
            backend: "tokio".into(),
            implementation: "echomark".into(),
            protocol: Protocol::Tcp,
            payload_bytes: 64,
            clients: 1,
            window: 1,
            io_model,
            io_threads,
            handler_work: 0,
            udp_server_recv_buffer: None,
            load: None,
            quic_transport: None,
            generators: None,
        };
        assert!(key(IoModel::Shared, 4).topology_rank() < key(IoModel::Sharded, 2).topology_rank());
        assert!(key(IoModel::Shared, 1).is_baseline() && !key(IoModel::Sharded, 1).is_baseline());
        assert_eq!(Protocol::Wss.plaintext(), Some(Protocol::Websocket));
    }

    #[test]
    fn generator_counts_are_configurations_of_their_own_in_name_order_and_in_labels() {
        let fleet = |generators| CaseKey {
            backend: "echomark-serve".into(),
            implementation: "echomark".into(),
            protocol: Protocol::Tcp,
            payload_bytes: 1024,
            clients: 16,
            window: 1,
            io_model: IoModel::Shared,
            io_threads: 1,
            handler_work: 0,
            udp_server_recv_buffer: None,
            load: None,
            quic_transport: None,
            generators,
        };
        let names: std::collections::BTreeSet<_> = [None, Some(1), Some(2), Some(4)]
            .map(fleet)
            .iter()
            .map(|k| {
                format!(
                    "{}",
                    RunId {
                        case: k.clone(),
                        repetition: 1
                    }
                )
            })
            .collect();
        assert_eq!(names.len(), 4, "{names:?}");
        let [none, one, two, four] = [None, Some(1), Some(2), Some(4)].map(fleet);
        assert!(two.by_name() < four.by_name() && none.by_name() < one.by_name());
        assert_eq!(fleet(None).clients_by_window(), "16 × 1");
        assert_eq!(fleet(Some(1)).clients_by_window(), "1 generator × 16 × 1");
        assert_eq!(
            RunId {
                case: fleet(Some(4)),
                repetition: 2
            }
            .to_string(),
            "tcp 1024 B, 4 generators × 16 × 1, shared 1, work 0, repetition 2"
        );
    }
}
