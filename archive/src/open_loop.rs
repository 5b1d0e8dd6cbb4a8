//! What an open-loop run adds to its metrics: the schedule it kept, how far it fell behind,
//! the service-time latency beside the corrected one, and the figures the validator uses to
//! check Little's law.
//!
//! In an open-loop run `rtt_*` and `rtt_histogram` measure each message from the moment the
//! schedule said it was due (the latency corrected for coordinated omission); the `service_*`
//! figures measure it from the moment it was actually written. The two differ only for
//! messages that went out late.

use serde::{Deserialize, Serialize};

use crate::key::Arrival;

/// A run whose clients sent fewer than this share of the messages their schedule placed
/// before the deadline is saturated: the server could not take the offered load (within the
/// window cap), so the run is not a point on a latency-versus-load curve.
pub const SATURATION_SHARE: f64 = 0.99;

/// How far the mean number of messages in the system may stray from Little's law
/// (`achieved completion rate × mean corrected latency`), as a share of the larger side.
/// The two sides are computed independently (one integrates the in-flight count over event
/// times, the other is the histogram's mean), so they agree to the histogram's precision
/// (three significant digits) unless the bookkeeping is wrong.
pub const LITTLE_TOLERANCE: f64 = 0.02;

/// The open-loop part of a run's metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenLoopMetrics {
    /// The requested rate, messages per second over all clients.
    pub offered_rate: u64,
    pub arrival: Arrival,
    /// The seed of the Poisson schedule (each client derives its own stream from it).
    pub seed: u64,
    /// Messages the schedules placed before the deadline, over all clients.
    pub scheduled_messages: u64,
    /// `messages_sent / elapsed_seconds`.
    pub achieved_rate: f64,
    /// `messages_sent < SATURATION_SHARE × scheduled_messages`.
    pub saturated: bool,
    /// Messages that were due while their client's window was full and went out once a slot
    /// freed (still measured from their due time).
    pub late_sends: u64,
    /// Scheduled messages still waiting for a slot at the deadline (never sent).
    pub unsent_messages: u64,
    /// How long after its due time the sender wrote each message that had a free slot when
    /// it was due: the schedule's own lag. Late sends are left out (their wait for a slot is
    /// queueing behind the server, which the corrected latency already charges).
    pub schedule_lag_p50_us: f64,
    pub schedule_lag_p99_us: f64,
    pub schedule_lag_p999_us: f64,
    pub schedule_lag_max_us: f64,
    /// The lag histogram (nanoseconds), in the same wire form as `rtt_histogram`.
    pub schedule_lag_histogram: Option<String>,
    /// Latency from the actual send time (no correction).
    pub service_p50_us: f64,
    pub service_p99_us: f64,
    pub service_p999_us: f64,
    pub service_max_us: f64,
    pub service_mean_us: f64,
    pub service_histogram: Option<String>,
    /// Time-average number of messages in the system (due and not yet echoed) over
    /// `little_window_seconds`.
    pub mean_in_system: f64,
    /// From the start of the measured phase until the last echo (the drain included).
    pub little_window_seconds: f64,
    /// The clock the schedule reads and the timer that wakes the sender.
    pub clock: String,
    pub timer: String,
    /// How long before a due message the sender stopped sleeping and spun, µs.
    pub spin_us: u64,
}

impl OpenLoopMetrics {
    /// Whether the run sent fewer than [`SATURATION_SHARE`] of its scheduled messages.
    pub fn is_saturated(sent: u64, scheduled: u64) -> bool {
        (sent as f64) < SATURATION_SHARE * scheduled as f64
    }
}

/// [`crate::metrics::little_law`] from the figures themselves (for readers with their own metrics type):
/// `received` verified echoes with a mean corrected latency of `mean_latency_us`, and
/// `lost` messages that never came back.
pub fn little_check(
    open: &OpenLoopMetrics,
    received: u64,
    mean_latency_us: f64,
    lost: u64,
) -> Option<LittleCheck> {
    if open.saturated || lost > 0 || open.little_window_seconds <= 0.0 || received == 0 {
        return None;
    }
    let rate = received as f64 / open.little_window_seconds;
    let predicted = rate * mean_latency_us * 1e-6;
    let measured = open.mean_in_system;
    let larger = predicted.max(measured);
    let gap = if larger > 0.0 {
        (predicted - measured).abs() / larger
    } else {
        0.0
    };
    Some(LittleCheck {
        measured,
        predicted,
        gap,
    })
}

/// The two sides of Little's law for one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LittleCheck {
    /// The time-average number in the system, as the clients integrated it.
    pub measured: f64,
    /// Completion rate × mean corrected latency.
    pub predicted: f64,
    /// `|predicted − measured| / max(predicted, measured)`.
    pub gap: f64,
}

impl LittleCheck {
    /// Whether the gap is within [`LITTLE_TOLERANCE`].
    pub fn holds(&self) -> bool {
        self.gap <= LITTLE_TOLERANCE
    }
}
