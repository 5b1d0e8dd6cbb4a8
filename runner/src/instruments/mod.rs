//! What a measurement records besides the traffic itself: the orchestrator's alarms, the
//! server-side counters, latency histograms, and process and kernel readings.

pub mod alarm;
pub mod counters;
pub mod latency;
pub mod resources;
pub mod timer;
