//! A fleet run: several load generators, each an ordinary echomark client on a host of its
//! own, released at one barrier against one target. The run's [`Metrics`](crate::Metrics)
//! are the generators' merged exactly (histograms and counters summed); `Metrics::fleet`
//! keeps how the fleet ran and each generator's own record beside the sum. The records are
//! generic over the metrics they hold, so this file needs nothing of `metrics.rs`, which
//! holds a fleet ([`crate::metrics::FleetRecord`] is `Fleet<Metrics>`).
//!
//! Times are in the coordinator's clock. A generator's clock is related to it by a
//! four-timestamp exchange, as NTP does: the generator sends at `t1` (its clock), the
//! coordinator receives at `t2` and answers at `t3` (its clock), the generator receives at
//! `t4`; then `offset = ((t2 − t1) + (t3 − t4)) / 2` (coordinator minus generator) and
//! `delay = (t4 − t1) − (t3 − t2)`. Whatever the asymmetry of the path, the true offset
//! lies within `delay / 2` of the estimate, which is its uncertainty; of several exchanges
//! the one with the smallest delay is kept.

use serde::{Deserialize, Serialize};

/// A matrix measured by a fleet (`--fleet-size`, `--fleet-generators`): each case once per
/// generator count, as a load dimension of its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetPlan {
    /// Generators the fleet had (`--fleet-size`).
    pub size: u64,
    /// How many of them measured each case together (`--fleet-generators`), in order.
    pub generators: Vec<u64>,
    /// Where the coordinator listened for them (`--fleet-listen`).
    pub listen: String,
    /// How the generators were started, as their launcher said it
    /// (`ECHOMARK_FLEET_LAUNCHER`: `scripts/fleet-in-namespaces` sets it to its own command
    /// line); absent when nothing said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launcher: Option<String>,
}

/// The environment variable by which whatever started a fleet's pods says how.
pub const LAUNCHER_ENV: &str = "ECHOMARK_FLEET_LAUNCHER";

/// How a fleet ran: the barrier, the start skew, and every generator's record (`M`: the
/// metrics each holds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fleet<M> {
    /// Generators that measured (each one record in `generators`).
    pub generator_count: u64,
    /// The host the coordinator ran on.
    pub coordinator_host: String,
    /// The release instant, in the coordinator's clock: ns since the Unix epoch.
    pub start_unix_ns: u64,
    /// The common end of the measured interval, in the coordinator's clock.
    pub end_unix_ns: u64,
    /// How long before the start the release was sent to the generators.
    pub release_lead_ms: f64,
    /// The generators' start skews (their start minus the release instant, in the
    /// coordinator's clock): the median and the one farthest from zero, in µs.
    pub start_skew_median_us: f64,
    pub start_skew_worst_us: f64,
    /// The largest uncertainty of a generator's skew (its clock offset's), in µs.
    pub start_skew_uncertainty_us: f64,
    /// Each generator's own record, in index order.
    pub generators: Vec<Generator<M>>,
}

/// One generator of a fleet run: where it ran, its clock, its start, and its own metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Generator<M> {
    /// Its place in the fleet (0 is the coordinator's own host in a Job).
    pub index: u64,
    /// Its host name and logical CPUs.
    pub host: String,
    pub logical_cpus: u64,
    /// Its clock against the coordinator's, before the run and after it.
    pub clock: ClockRecord,
    /// Its start minus the release instant, in the coordinator's clock (its own start
    /// instant corrected by its offset), in µs; positive is late.
    pub start_skew_us: f64,
    /// The skew's uncertainty: the offset's, in µs.
    pub start_skew_uncertainty_us: f64,
    /// What it measured alone: the same metrics object as `once --target`.
    pub metrics: M,
}

/// A generator's clock against the coordinator's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockRecord {
    /// Coordinator minus generator at the start, from the exchange with the smallest
    /// delay, in µs.
    pub offset_us: f64,
    /// Half that exchange's delay: the true offset is within this of `offset_us`, in µs.
    pub uncertainty_us: f64,
    /// That exchange's round-trip delay, in µs.
    pub delay_us: f64,
    /// Exchanges made at the start and at the end.
    pub exchanges: u64,
    /// The same after the measured phase.
    pub offset_end_us: f64,
    pub uncertainty_end_us: f64,
    /// How fast the offset moved between the two, in parts per million (µs per s).
    pub drift_ppm: f64,
    /// The drift's uncertainty: the two offsets' uncertainties over the time between them,
    /// in ppm (a short run bounds drift loosely).
    pub drift_uncertainty_ppm: f64,
}

impl<M> Fleet<M> {
    /// The generators' metrics, in index order.
    pub fn metrics(&self) -> impl Iterator<Item = &M> {
        self.generators.iter().map(|g| &g.metrics)
    }
}
