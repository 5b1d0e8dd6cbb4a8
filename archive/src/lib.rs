//! The raw-archive contract between `echomark-runner` and the `echomark` generator.
//!
//! One crate owns the JSON shapes so that the producer and the reader cannot drift apart
//! (the same idea as `nextest-metadata`). The layout is a superset of arknet's schema 2:
//! an arknet-aware reader understands an echomark archive, and echomark adds what arknet
//! lacks (full latency histograms, interval-exact throughput, kernel UDP counters, per-run
//! timing and a shuffle seed). `schema/archive.schema.json` documents the same shapes as a
//! JSON Schema; a test keeps the two in agreement.

pub mod archive;
pub mod metrics;

pub use archive::{
    Archive, CaseKey, EchomarkInfo, Entry, ExplicitCase, Host, IoProfile, Settings, SoakRecord,
    TrafficProfile, ARCHIVE_SCHEMA_VERSION, FORMAT_VERSION, TOOL_NAME,
};
pub use metrics::{Metrics, ERROR_COUNTER_NAMES};

/// The JSON Schema of an echomark archive, as shipped in `schema/archive.schema.json`.
pub const ARCHIVE_JSON_SCHEMA: &str = include_str!("../schema/archive.schema.json");
