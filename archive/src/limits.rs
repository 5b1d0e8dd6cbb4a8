//! The bounds of what a real run can be, in one place for the runner (the ranges of its
//! flags) and the generator (what `validate` and `import` accept): a figure outside them is
//! not a measurement, whoever wrote it. Where the runner has a flag for a value, its range
//! is the flag's; elsewhere the bound is what is physically possible, with room to spare.

use std::ops::RangeInclusive;

/// The most connections (or clients, or streams) one run can hold: Linux's default
/// `fs.nr_open`, the most file descriptors one process may have open.
pub const MAX_CONNECTIONS: u64 = 1 << 20;

/// `--udp-batch`: datagrams per `recvmmsg`/`sendmmsg` call. One is no batch; Linux's
/// `UIO_MAXIOV` is far above 64, and more would only grow the buffers.
pub const UDP_BATCH: RangeInclusive<u64> = 2..=MAX_UDP_BATCH;

/// The largest `--udp-batch`.
pub const MAX_UDP_BATCH: u64 = 64;

/// The longest a run (or anything inside it) can last: 7 days, in seconds.
pub const MAX_RUN_SECONDS: f64 = 7.0 * 86_400.0;

/// The most memory one machine can have, in bytes: 256 TiB, the physical address space of
/// x86-64 with 4-level paging (48 bits), eight times the largest servers sold.
pub const MAX_MEMORY_BYTES: u64 = 1 << 48;

/// The sum of counts read from input, stopping at `u64::MAX` instead of wrapping (or
/// panicking): a total no run can reach is then refused by its bound, not read as a small
/// one.
pub fn saturating_sum(counts: impl IntoIterator<Item = u64>) -> u64 {
    counts.into_iter().fold(0, u64::saturating_add)
}

/// A range a figure of a real run stays in, with the words that say what it is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    pub min: f64,
    /// Whether `min` itself is outside (a duration or an offered rate of 0 is no run).
    pub above_min: bool,
    pub max: f64,
    /// What the range is, for messages: "a run lasts from 1 ms to 7 days".
    pub rule: &'static str,
}

/// A figure outside its [`Bound`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{} is not a real run's figure: {rule}", Shown(*.value))]
pub struct OutOfRange {
    pub value: f64,
    pub rule: &'static str,
}

/// A figure as a message shows it: plain where that is short, in exponent form where the
/// plain form would run to hundreds of digits (`1e-300`, `1e308`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shown(pub f64);

impl std::fmt::Display for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = self.0;
        if v != 0.0 && v.is_finite() && !(1e-3..1e15).contains(&v.abs()) {
            write!(f, "{v:e}")
        } else {
            write!(f, "{v}")
        }
    }
}

impl Bound {
    /// `value` when it is finite and inside the bound.
    pub fn check(&self, value: f64) -> Result<f64, OutOfRange> {
        let above = if self.above_min {
            value > self.min
        } else {
            value >= self.min
        };
        if value.is_finite() && above && value <= self.max {
            Ok(value)
        } else {
            Err(OutOfRange {
                value,
                rule: self.rule,
            })
        }
    }
}

/// How long a run lasts, seconds.
pub const DURATION_SECONDS: Bound = Bound {
    min: 1e-3,
    above_min: false,
    max: MAX_RUN_SECONDS,
    rule: "a run lasts from 1 ms to 7 days (604,800 s)",
};

/// Connections, clients, users or streams of one run.
pub const CONNECTIONS: Bound = Bound {
    min: 1.0,
    above_min: false,
    max: MAX_CONNECTIONS as f64,
    rule: "a run holds from 1 to 1,048,576 connections (Linux's fs.nr_open, the most \
           descriptors one process may have)",
};

/// Requests, answers or messages per second, as measured (0 when nothing was answered).
pub const RATE_PER_SECOND: Bound = Bound {
    min: 0.0,
    above_min: false,
    max: 1e9,
    rule: "a rate is from 0 to 10^9 per second (a nanosecond per request)",
};

/// The rate a run was asked to offer, per second.
pub const OFFERED_RATE_PER_SECOND: Bound = Bound {
    above_min: true,
    rule: "an offered rate is above 0 and at most 10^9 per second (a nanosecond per request)",
    ..RATE_PER_SECOND
};

/// Bytes per second over a link.
pub const BYTES_PER_SECOND: Bound = Bound {
    min: 0.0,
    above_min: false,
    max: 1.25e12,
    rule: "a transfer is from 0 to 1.25 × 10^12 bytes per second (10 Tbit/s, above any link \
           or loopback)",
};

/// Bits per second over a link.
pub const BITS_PER_SECOND: Bound = Bound {
    max: 1e13,
    rule: "a transfer is from 0 to 10^13 bits per second (10 Tbit/s, above any link or \
           loopback)",
    ..BYTES_PER_SECOND
};

/// A latency or a round-trip time, microseconds.
pub const LATENCY_US: Bound = Bound {
    min: 0.0,
    above_min: false,
    max: MAX_RUN_SECONDS * 1e6,
    rule: "a latency is from 0 to 7 days (the longest run), in microseconds",
};

/// CPU time of one process over a run, seconds.
pub const CPU_SECONDS: Bound = Bound {
    min: 0.0,
    above_min: false,
    max: MAX_RUN_SECONDS * 8192.0,
    rule: "CPU time is from 0 to 7 days on each of 8,192 CPUs (Linux's most)",
};

/// A congestion or flow-control window, bytes: what a sender may have in flight, each byte
/// kept until it is acknowledged.
pub const WINDOW_BYTES: Bound = Bound {
    min: 0.0,
    above_min: false,
    max: MAX_MEMORY_BYTES as f64,
    rule: "a window is from 0 to 256 TiB (bytes kept in flight until acknowledged, more than \
           any machine's memory)",
};

/// A share, percent.
pub const PERCENT: Bound = Bound {
    min: 0.0,
    above_min: false,
    max: 100.0,
    rule: "a share is from 0 to 100 percent",
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_hold_their_ends_and_refuse_what_is_not_finite() {
        assert_eq!(DURATION_SECONDS.check(1e-3), Ok(1e-3));
        assert_eq!(DURATION_SECONDS.check(MAX_RUN_SECONDS), Ok(MAX_RUN_SECONDS));
        let e = DURATION_SECONDS.check(1e-300).unwrap_err();
        assert_eq!(
            e.to_string(),
            "1e-300 is not a real run's figure: a run lasts from 1 ms to 7 days (604,800 s)"
        );
        assert!(RATE_PER_SECOND.check(0.0).is_ok());
        assert!(OFFERED_RATE_PER_SECOND.check(0.0).is_err());
        assert!(OFFERED_RATE_PER_SECOND.check(0.5).is_ok());
        assert!(CONNECTIONS.check(1e12).is_err());
        assert!(CONNECTIONS.check(MAX_CONNECTIONS as f64).is_ok());
        assert_eq!(Shown(1e308).to_string(), "1e308");
        assert_eq!(Shown(98_592.5).to_string(), "98592.5");
        for bad in [f64::NAN, f64::INFINITY, -1.0, 1e308] {
            assert!(LATENCY_US.check(bad).is_err(), "{bad}");
        }
    }
}
