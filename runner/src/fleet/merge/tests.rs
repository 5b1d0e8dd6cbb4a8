use std::time::Duration;

use super::*;
use crate::instruments::latency;

/// One generator's metrics: `samples` round trips (ns) recorded as a run records them.
fn generator(samples: &[u64], errors: u64) -> Metrics {
    let mut h = latency::new_histogram();
    for &ns in samples {
        latency::record(&mut h, Duration::from_nanos(ns));
    }
    let mut m = Metrics {
        protocol: echomark_archive::Protocol::Tcp,
        payload_bytes: 64,
        clients: 4,
        window: 1,
        requested_seconds: 1.0,
        elapsed_seconds: 1.0 + samples.len() as f64 / 1e6,
        messages_sent: samples.len() as u64 + errors,
        messages: samples.len() as u64,
        messages_received: samples.len() as u64,
        rtt_observations: samples.len() as u64,
        payload_roundtrip_bytes: 128 * samples.len() as u64,
        content_errors: errors,
        latency_recording: true,
        cpu_seconds: Some(0.5),
        cpu_elapsed_seconds: Some(1.0),
        ..Metrics::default()
    };
    crate::measure::report::set_latency(&mut m, &h);
    m
}

/// Deterministic, spread values: 1 µs to ~10 ms, with long tails.
fn samples(seed: u64, n: usize) -> Vec<u64> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            1_000 + (x % 1_000) * (x % 10_000)
        })
        .collect()
}

#[test]
fn the_merged_histogram_equals_one_histogram_of_every_generators_samples() {
    let parts: Vec<Vec<u64>> = (1..=4)
        .map(|g| samples(g * 7_919, 5_000 * g as usize))
        .collect();
    let metrics: Vec<Metrics> = parts.iter().map(|s| generator(s, 0)).collect();
    let merged = merge(&metrics).unwrap();

    let mut one = latency::new_histogram();
    for ns in parts.iter().flatten() {
        latency::record(&mut one, Duration::from_nanos(*ns));
    }
    let got = echomark_archive::histogram::decode(merged.rtt_histogram.as_ref().unwrap()).unwrap();
    let values = |h: &Histogram<u64>| {
        h.iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect::<Vec<_>>()
    };
    assert_eq!(values(&got), values(&one), "value for value");
    assert_eq!(got.len(), 50_000);
    let mut expected = Metrics::default();
    crate::measure::report::set_latency(&mut expected, &one);
    for (name, a, b) in [
        ("p50", merged.rtt_p50_us, expected.rtt_p50_us),
        ("p99", merged.rtt_p99_us, expected.rtt_p99_us),
        ("p99.99", merged.rtt_p9999_us, expected.rtt_p9999_us),
        ("max", merged.rtt_max_us, expected.rtt_max_us),
        ("mean", merged.rtt_mean_us, expected.rtt_mean_us),
    ] {
        assert_eq!(a, b, "{name}");
    }
    // The merged p99 never exceeds the merged maximum (Locust #1563's rounding cannot happen).
    assert!(merged.rtt_p99_us <= merged.rtt_max_us);
    assert_eq!(merged.rtt_samples, 50_000);
    assert_eq!(merged.messages, 50_000);
    assert!(merged.ok, "{:?}", merged.error);
}

#[test]
fn counters_add_rates_use_the_longest_interval_and_an_error_anywhere_fails_the_sum() {
    let a = generator(&samples(1, 1_000), 0);
    let b = generator(&samples(2, 3_000), 2);
    let merged = merge(&[a.clone(), b.clone()]).unwrap();
    assert_eq!(merged.messages, 4_000);
    assert_eq!(merged.messages_sent, 4_002);
    assert_eq!(merged.content_errors, 2);
    assert_eq!(merged.elapsed_seconds, b.elapsed_seconds);
    assert_eq!(merged.roundtrips_per_second, 4_000.0 / b.elapsed_seconds);
    assert_eq!(merged.cpu_seconds, Some(1.0));
    assert_eq!(merged.cpu_percent, Some(100.0));
    assert_eq!(merged.clients, 4, "the case's clients, per generator");
    assert!(!merged.ok);
    assert!(merged
        .error
        .as_deref()
        .unwrap()
        .contains("content_errors 2"));

    let mut failed = a.clone();
    failed.error = Some("setup failed: connection refused".into());
    let merged = merge(&[a.clone(), failed]).unwrap();
    assert_eq!(
        merged.error.as_deref(),
        Some("generator 1: setup failed: connection refused")
    );
}

#[test]
fn generators_that_measured_different_cases_are_not_merged() {
    let a = generator(&samples(1, 10), 0);
    let mut b = a.clone();
    b.payload_bytes = 1024;
    assert_eq!(
        merge(&[a, b]).unwrap_err().to_string(),
        "generator 1 measured payload_bytes 1024, generator 0 64: not one case"
    );
    assert_eq!(merge(&[]).unwrap_err(), MergeError::Empty);
}
