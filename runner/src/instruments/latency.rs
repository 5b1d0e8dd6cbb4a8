//! Round-trip latency: one HdrHistogram per client, merged at the end. Every round trip is
//! recorded (no reservoir, no lock); values are nanoseconds with 3 significant digits.

use std::time::Duration;

use hdrhistogram::Histogram;

/// Largest value tracked exactly: 60 s. Longer round trips are clamped to it.
const HIGHEST_NS: u64 = 60_000_000_000;
const SIGNIFICANT_DIGITS: u8 = 3;

/// The percentile method, named in every metrics object.
pub const METHOD: &str =
    "hdrhistogram: every round trip, ns, 3 significant digits, value_at_quantile";

/// A new, empty histogram with echomark's bounds.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIGHEST_NS, SIGNIFICANT_DIGITS).expect("static bounds are valid")
}

/// Records one round trip (clamped into the tracked range).
#[inline]
pub fn record(hist: &mut Histogram<u64>, rtt: Duration) {
    let ns = (rtt.as_nanos() as u64).clamp(1, HIGHEST_NS);
    hist.record(ns).expect("value clamped into range");
}

/// Merges `h` into `total` (both have echomark's bounds, so the merge cannot fail).
pub fn merge_into(total: &mut Option<Histogram<u64>>, h: Histogram<u64>) {
    match total.as_mut() {
        Some(t) => t.add(&h).expect("same bounds"),
        None => *total = Some(h),
    }
}

/// The percentiles a metrics object reports, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Summary {
    pub samples: u64,
    pub min_us: f64,
    pub mean_us: f64,
    pub stddev_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub p9999_us: f64,
    pub max_us: f64,
}

/// Summarises a merged histogram; all zero when it is empty.
pub fn summarize(hist: &Histogram<u64>) -> Summary {
    if hist.is_empty() {
        return Summary::default();
    }
    let us = |ns: u64| ns as f64 / 1000.0;
    let q = |p: f64| us(hist.value_at_quantile(p));
    Summary {
        samples: hist.len(),
        min_us: us(hist.min()),
        mean_us: hist.mean() / 1000.0,
        stddev_us: hist.stdev() / 1000.0,
        p50_us: q(0.50),
        p90_us: q(0.90),
        p95_us: q(0.95),
        p99_us: q(0.99),
        p999_us: q(0.999),
        p9999_us: q(0.9999),
        max_us: us(hist.max()),
    }
}

/// The histogram as the archive stores it (HdrHistogram V2 + DEFLATE, base64): the archive
/// keeps the full distribution, so repetitions can later be merged instead of averaging
/// percentiles.
pub fn encode(hist: &Histogram<u64>) -> Option<String> {
    echomark_archive::histogram::encode(hist)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_histograms_summarise_all_values() {
        let mut a = new_histogram();
        let mut b = new_histogram();
        for i in 1..=500u64 {
            record(&mut a, Duration::from_micros(i));
            record(&mut b, Duration::from_micros(500 + i));
        }
        a.add(&b).unwrap();
        let s = summarize(&a);
        assert_eq!(s.samples, 1000);
        assert!((s.p50_us - 500.0).abs() < 1.0, "{s:?}");
        assert!((s.p99_us - 990.0).abs() < 1.0, "{s:?}");
        assert!((s.max_us - 1000.0).abs() < 1.0, "{s:?}");
        assert!(s.p50_us <= s.p90_us && s.p90_us <= s.p99_us && s.p99_us <= s.p999_us);
    }

    #[test]
    fn empty_histogram_summarises_to_zero() {
        assert_eq!(summarize(&new_histogram()), Summary::default());
    }

    #[test]
    fn encoded_histogram_decodes_to_the_same_counts() {
        let mut h = new_histogram();
        for i in 0..100 {
            record(&mut h, Duration::from_nanos(10_000 + i * 37));
        }
        let back = echomark_archive::histogram::decode(&encode(&h).unwrap()).unwrap();
        assert_eq!(back, h);
    }
}
