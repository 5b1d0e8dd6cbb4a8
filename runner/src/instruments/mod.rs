//! What a measurement records besides the traffic itself: the orchestrator's alarms, the
//! server-side counters, latency histograms, process and kernel readings, and the network
//! path to an external server.

pub mod alarm;
pub mod counters;
pub mod latency;
pub mod path;
pub mod resources;
pub mod syscalls;
pub mod timer;
