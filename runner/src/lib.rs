//! echomark-runner: the loopback echo core and the matrix driver.
//!
//! The pipeline of one measurement, by module: [`case`] (what to measure) → [`topology`]
//! (runtimes) → [`sockets`] and [`connect`] (setup: TLS handshakes from [`tls`], WebSocket
//! upgrades from [`websocket`]) → [`tcp`] / [`udp`] (traffic, using [`client`], [`wire`] and
//! the stream framings of [`http1`] and [`websocket`]) → [`phase`] (warmup, measured, drain)
//! → [`bench`](mod@bench) (orchestration and the metrics object). [`latency`], [`counters`] and
//! [`resources`] hold the measurements.

pub mod alarm;
pub mod bench;
pub mod calibrate;
pub mod case;
pub mod cli;
pub mod client;
pub mod connect;
pub mod counters;
pub mod http1;
pub mod latency;
pub mod matrix;
pub mod phase;
pub mod resources;
pub mod soak;
pub mod sockets;
pub mod tcp;
pub mod tls;
pub mod topology;
pub mod udp;
pub mod websocket;
pub mod wire;
pub mod work;
