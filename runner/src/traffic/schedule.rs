//! Open-loop send schedules: when each of a client's messages is due, fixed before the phase
//! starts and independent of when echoes come back. Sans-IO: the clients ask for the next
//! due instant and consume it when they send.

use std::time::{Duration, Instant};

use echomark_archive::Arrival;

use crate::random::SplitMix64;

pub use crate::case::OpenLoop;

/// One client's schedule.
#[derive(Debug, Clone)]
pub struct Schedule {
    next_due: Instant,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    /// A fixed period.
    Uniform { period: Duration },
    /// Exponential gaps with this mean, in seconds.
    Poisson { mean_gap: f64, random: SplitMix64 },
}

impl Schedule {
    /// Client `index` of `clients` under `load`, starting at `start`. Uniform clients are
    /// offset by `index / rate`, so the clients' messages interleave evenly; a Poisson
    /// client's first message comes one random gap after `start` (the superposition of the
    /// clients' processes is a Poisson process of the full rate).
    pub fn new(load: &OpenLoop, index: usize, clients: usize, start: Instant) -> Self {
        let rate = load.rate.max(1) as f64;
        let per_client = rate / clients.max(1) as f64;
        match load.arrival {
            Arrival::Uniform => Schedule {
                next_due: start + Duration::from_secs_f64(index as f64 / rate),
                kind: Kind::Uniform {
                    period: Duration::from_secs_f64(1.0 / per_client),
                },
            },
            Arrival::Poisson => {
                // Distinct, well-mixed streams per client from one seed.
                let mixed = load.seed ^ (index as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
                let mut s = Schedule {
                    next_due: start,
                    kind: Kind::Poisson {
                        mean_gap: 1.0 / per_client,
                        random: SplitMix64::new(mixed),
                    },
                };
                s.advance();
                s
            }
        }
    }

    /// When the next message is due.
    pub fn next_due(&self) -> Instant {
        self.next_due
    }

    /// Consumes the next due instant and returns it.
    pub fn advance(&mut self) -> Instant {
        let due = self.next_due;
        let gap = match &mut self.kind {
            Kind::Uniform { period } => *period,
            Kind::Poisson { mean_gap, random } => {
                Duration::from_secs_f64(-random.next_open_unit().ln() * *mean_gap)
            }
        };
        self.next_due = due + gap;
        due
    }

    /// How many more messages are due before `deadline` (consumes them).
    pub fn drain_before(&mut self, deadline: Instant) -> u64 {
        let mut n = 0;
        while self.next_due < deadline {
            self.advance();
            n += 1;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offsets(load: OpenLoop, index: usize, clients: usize, n: usize) -> Vec<Duration> {
        let start = Instant::now();
        let mut s = Schedule::new(&load, index, clients, start);
        (0..n).map(|_| s.advance() - start).collect()
    }

    #[test]
    fn uniform_clients_interleave_into_one_even_stream() {
        let load = OpenLoop {
            rate: 1000,
            arrival: Arrival::Uniform,
            seed: 0,
        };
        let mut all: Vec<Duration> = (0..4).flat_map(|i| offsets(load, i, 4, 250)).collect();
        all.sort();
        for (k, t) in all.iter().enumerate() {
            let expected = Duration::from_micros(1000 * k as u64);
            let error = t.abs_diff(expected);
            assert!(error < Duration::from_micros(1), "message {k} at {t:?}");
        }
    }

    #[test]
    fn poisson_schedules_are_reproducible_from_their_seed_and_have_the_right_rate() {
        let load = OpenLoop {
            rate: 10_000,
            arrival: Arrival::Poisson,
            seed: 42,
        };
        assert_eq!(offsets(load, 3, 8, 100), offsets(load, 3, 8, 100));
        assert_ne!(offsets(load, 3, 8, 100), offsets(load, 4, 8, 100));
        let other = OpenLoop { seed: 43, ..load };
        assert_ne!(offsets(load, 3, 8, 100), offsets(other, 3, 8, 100));
        // 20,000 gaps of mean 1 ms: the mean is within 3% and the gaps' coefficient of
        // variation (1 for an exponential) within 5%.
        let times = offsets(load, 0, 10, 20_001);
        let gaps: Vec<f64> = times
            .windows(2)
            .map(|w| (w[1] - w[0]).as_secs_f64())
            .collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        assert!((mean / 1e-3 - 1.0).abs() < 0.03, "mean gap {mean}");
        assert!(
            (var.sqrt() / mean - 1.0).abs() < 0.05,
            "cv {}",
            var.sqrt() / mean
        );
    }

    #[test]
    fn draining_counts_what_was_still_due() {
        let load = OpenLoop {
            rate: 100,
            arrival: Arrival::Uniform,
            seed: 0,
        };
        let start = Instant::now();
        let mut s = Schedule::new(&load, 0, 1, start);
        s.advance();
        assert_eq!(s.drain_before(start + Duration::from_millis(1000)), 99);
    }
}
