//! The raw-archive contract between `echomark-runner` and the `echomark` generator.
//!
//! One crate owns the JSON shapes so that the producer and the reader cannot drift apart
//! (the same idea as `nextest-metadata`): the configuration key and its enums ([`key`]), the
//! metrics one run prints and its error counters ([`metrics`]), the archive around them
//! ([`archive`]), the runs its settings plan ([`plan`]), what measuring until decided records ([`decided`]) and the runs it adds ([`until_decided`]), the soak report ([`soak`]), an external server's description ([`target`]), the latency histogram's wire form ([`histogram`]), what other load generators measured ([`imported`]) and what such a run can be ([`plausible`]), the bounds of a real run ([`limits`]) and the
//! check that a measurement measured what was asked for ([`echo`]). The layout is a superset of arknet's schema 2: an arknet-aware
//! reader understands an echomark archive, and echomark adds what arknet lacks (full latency
//! histograms, interval-exact throughput, kernel UDP counters, per-run timing and a shuffle
//! seed). `schema/archive.schema.json` documents the same shapes as a JSON Schema; a test
//! checks the two against each other in both directions.

pub mod archive;
pub mod backend;
pub mod capabilities;
pub mod cpus;
pub mod decided;
pub mod echo;
pub mod files;
pub mod fleet;
pub mod histogram;
pub mod host;
pub mod imported;
pub mod key;
pub mod limits;
pub mod metrics;
pub mod open_loop;
pub mod plan;
pub mod plausible;
pub mod quic;
pub mod shell;
pub mod soak;
pub mod target;
pub mod until_decided;

pub use archive::{
    Archive, EchomarkInfo, Entry, ExplicitCase, IoProfile, OpenLoopPlan, Preset, Settings, Shard,
    SoakRecord, Toolchain, TrafficProfile, UnsupportedProfile, ARCHIVE_SCHEMA_VERSION,
    CASE_TIMEOUT_MARGIN_SECONDS, DEFAULT_UDP_TIMEOUT_MS, FORMAT_VERSION, IMPLEMENTATION, TOOL_NAME,
};
pub use backend::Backend;
pub use capabilities::{unsupported, Capabilities, Role, Support};
pub use echo::{check_echo, CaseParameters, RequestedTiming};
pub use fleet::{ClockRecord, FleetPlan};
pub use host::Host;
pub use imported::{
    Bucket, ImportInfo, ImportedArchive, ImportedLatency, ImportedLoad, ImportedRun,
    LatencyFidelity, Loop, Percentile, StreamFigures, Tool, IMPORT_FORMAT_VERSION,
};
pub use key::{
    AddressFamily, Arrival, CaseKey, IoModel, OfferedLoad, Protocol, RunId, UnknownName,
};
pub use limits::{Bound, OutOfRange};
pub use metrics::little_law;
pub use metrics::{
    ErrorCounters, FleetRecord, GeneratorRecord, Metric, Metrics, Placement, QuicCounters,
    ERROR_COUNTER_NAMES,
};
pub use open_loop::{little_check, LittleCheck, OpenLoopMetrics};
pub use plausible::{Implausible, RateRule};
pub use quic::{Congestion, QuicAxes, QuicSetting, QuicTransport};
pub use soak::{SoakReport, SoakRound};
pub use target::{
    ExternalServer, NetworkPath, PathKind, RingCounters, ServerIdentity, ServerProcess,
    StreamFraming, TargetInfo, TlsVerification, VerificationCheck, VerificationRecord,
};

/// The JSON Schema of an echomark archive, as shipped in `schema/archive.schema.json`.
pub const ARCHIVE_JSON_SCHEMA: &str = include_str!("../schema/archive.schema.json");

/// The JSON Schema of an imported archive ([`ImportedArchive`]), as shipped in
/// `schema/imported.schema.json`.
pub const IMPORTED_JSON_SCHEMA: &str = include_str!("../schema/imported.schema.json");
