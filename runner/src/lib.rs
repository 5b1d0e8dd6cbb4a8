//! echomark-runner: the loopback echo core and the matrix driver, grouped by job.
//!
//! One measurement, by module: [`case`] (what to measure, validated) → [`measure`] (the
//! orchestrator: runtimes, setup, phases, the metrics object) → [`traffic`] (the client and
//! server loops on tokio, connection setup, TLS) using the sans-IO [`framing`] codecs and
//! the [`message`] format; [`instruments`] hold what is recorded on the way (alarms,
//! counters, latency histograms, CPU, memory and kernel readings). [`matrix`] runs many
//! measurements as child processes into one archive; [`soak`] and [`calibrate`] are the
//! sustained test and the host's loopback floor; [`fleet`] runs one measurement on several
//! generator hosts released at one barrier and merges them exactly. The archive shapes live in
//! `echomark-archive`; command-line parsing lives in the binary.

pub mod calibrate;
pub mod case;
pub mod exit_codes;
pub mod fleet;
pub mod framing;
pub mod instruments;
pub mod iouring;
pub mod matrix;
pub mod measure;
pub mod message;
pub mod placement;
pub mod random;
pub mod serve;
pub mod signals;
pub mod soak;
pub mod traffic;
pub mod verify;
