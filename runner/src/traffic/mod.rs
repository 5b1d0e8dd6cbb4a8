//! The traffic of one measurement: the protocol-independent client core ([`client`]), the
//! stream and datagram client and server loops on tokio ([`stream`], [`datagram`], batched
//! with [`mmsg`]) and on monoio ([`uring`]), connection setup ([`sockets`], [`connect`],
//! [`tls`]), QUIC on quinn in its three protocols ([`quic`]), the server's synthetic work
//! ([`work`]) and the test-only faults ([`fault`]).

pub mod client;
pub mod connect;
pub mod datagram;
pub mod fault;
pub mod mmsg;
pub mod pacing;
pub mod phase;
pub mod quic;
pub mod schedule;
pub mod sockets;
pub mod stream;
pub mod tls;
pub mod uring;
pub mod work;
