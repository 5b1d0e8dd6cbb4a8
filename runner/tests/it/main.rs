//! echomark-runner's integration tests in one binary: the real `echomark-runner` against
//! real sockets, servers and archives, one module per subject. One binary instead of one per
//! file: each would link the generator (and polars) again, which made most of the tests'
//! build time.

mod common;
mod compare_aa;
mod external;
mod fleet;
mod hostile;
mod http_framing;
mod matrix;
mod monoio;
mod namespaces;
mod once;
mod open_loop;
mod placement;
mod quic;
mod quic_interop;
mod quic_limits;
mod ring;
mod ring_client;
mod ring_hostile;
mod servers;
mod soak;
mod until_decided;
mod websocket_interop;
