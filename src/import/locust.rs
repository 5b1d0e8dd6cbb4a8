//! Locust's JSON statistics (`--json`, checked against Locust 2.47): per endpoint, request
//! and failure counts, the first and last request's time and every response time in a
//! histogram of whole milliseconds (Locust rounds longer times coarser: to 10 ms above
//! 100 ms, to 100 ms above 1 s). The histogram holds every request, so the latency is
//! lossless at Locust's resolution; percentiles are read from it by nearest rank. The users
//! (`-u`) come from the command.

use std::collections::BTreeMap;

use echomark_archive::limits::saturating_sum;
use echomark_archive::{
    Bucket, ImportedLatency, ImportedLoad, LatencyFidelity, Loop, Percentile, Tool,
};
use serde::Deserialize;

use super::{request_run, Read, RequestRun, Source};
use crate::error::Problem;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Endpoint {
    #[allow(dead_code)]
    name: String,
    #[allow(dead_code)]
    method: Option<String>,
    last_request_timestamp: Option<f64>,
    start_time: f64,
    num_requests: u64,
    #[allow(dead_code)]
    num_none_requests: u64,
    num_failures: u64,
    total_response_time: f64,
    max_response_time: f64,
    min_response_time: Option<f64>,
    #[allow(dead_code)]
    total_content_length: u64,
    response_times: BTreeMap<String, u64>,
    #[allow(dead_code)]
    num_reqs_per_sec: BTreeMap<String, u64>,
    #[allow(dead_code)]
    num_fail_per_sec: BTreeMap<String, u64>,
}

/// The percentiles read from the histogram.
const PERCENTILES: [f64; 6] = [50.0, 90.0, 95.0, 99.0, 99.9, 99.99];

/// Where each checked field of the run came from in Locust's output, or its command line.
pub const JSON_PATHS: &[(&str, &str)] = &[
    ("load.duration_seconds", "[0].last_request_timestamp"),
    ("load.connections", "--command -u"),
];

/// Reads one Locust JSON statistics file.
pub fn read(source: &Source) -> Result<Read, Problem> {
    let endpoints: Vec<Endpoint> = source.json(Tool::Locust)?;
    if endpoints.is_empty() {
        return Err(source.problem("", "no endpoint: Locust made no request"));
    }
    let command = source.command_for(Tool::Locust, "how many users it ran (-u)")?;
    let usage =
        |e: crate::command_line::CommandLineError| source.problem("", format!("--command: {e}"));
    let users = command
        .number(&["-u", "--users"])
        .map_err(usage)?
        .ok_or_else(|| source.problem("", "--command names no users (-u)"))?;
    let mut totals = Totals::default();
    for (i, e) in endpoints.iter().enumerate() {
        totals.add(source, i, e)?;
    }
    let duration = totals.last - totals.start;
    if !(duration.is_finite() && duration > 0.0) {
        return Err(source.problem(
            "[0].last_request_timestamp",
            "missing or not after start_time: the run has no duration",
        ));
    }
    let (requests, failures) = (totals.requests, totals.failures);
    let answered = requests - failures.min(requests);
    let mut errors = BTreeMap::new();
    if failures > 0 {
        errors.insert("failures (Locust's count)".to_string(), failures);
    }
    let run = request_run(RequestRun {
        started_at_utc: Some(super::utc_from_unix(totals.start.floor() as i64)),
        target: command.value(&["-H", "--host"]).map(str::to_string),
        load: ImportedLoad {
            connections: users,
            threads: None,
            pipelining: 1,
            duration_seconds: duration,
            payload_bytes: source.payload_bytes,
            loop_kind: Loop::Closed,
            rate: None,
            latency_correction: false,
        },
        responses: answered,
        reported_rate: None,
        bytes_per_second: None,
        latency: totals.latency(),
        unfinished: None,
        errors,
        status_codes: BTreeMap::new(),
    });
    Ok(Read { run, version: None })
}

/// Every endpoint's figures together: the response times in one histogram, the counts
/// summed, the run's span from the first start to the last request.
struct Totals {
    /// Requests by whole milliseconds.
    histogram: BTreeMap<u64, u64>,
    requests: u64,
    failures: u64,
    total_ms: f64,
    start: f64,
    last: f64,
    min_ms: f64,
    max_ms: f64,
}

impl Default for Totals {
    fn default() -> Self {
        Self {
            histogram: BTreeMap::new(),
            requests: 0,
            failures: 0,
            total_ms: 0.0,
            start: f64::INFINITY,
            last: f64::NEG_INFINITY,
            min_ms: f64::INFINITY,
            max_ms: 0.0,
        }
    }
}

impl Totals {
    /// Adds endpoint `e` (the `i`th), refused when a figure is negative or not finite, a
    /// response time is not whole milliseconds, or its histogram does not hold its requests.
    fn add(&mut self, source: &Source, i: usize, e: &Endpoint) -> Result<(), Problem> {
        let at = |field: &str| format!("[{i}].{field}");
        for (field, v) in [
            ("start_time", e.start_time),
            ("total_response_time", e.total_response_time),
            ("max_response_time", e.max_response_time),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(source.problem(at(field), format!("{v}: not finite and non-negative")));
            }
        }
        for (key, &count) in &e.response_times {
            let ms: u64 = key.parse().map_err(|_| {
                source.problem(
                    at(&format!("response_times.{key:?}")),
                    "not whole milliseconds",
                )
            })?;
            let slot = self.histogram.entry(ms).or_default();
            *slot = slot.saturating_add(count);
        }
        let recorded = saturating_sum(e.response_times.values().copied());
        if recorded != e.num_requests {
            return Err(source.problem(
                at("response_times"),
                format!(
                    "holds {recorded} requests, but num_requests is {}",
                    e.num_requests
                ),
            ));
        }
        self.requests = self.requests.saturating_add(e.num_requests);
        self.failures = self.failures.saturating_add(e.num_failures);
        self.total_ms += e.total_response_time;
        self.start = self.start.min(e.start_time);
        if let Some(t) = e.last_request_timestamp {
            self.last = self.last.max(t);
        }
        if let Some(m) = e.min_response_time {
            self.min_ms = self.min_ms.min(m);
        }
        self.max_ms = self.max_ms.max(e.max_response_time);
        Ok(())
    }

    /// The latency of every request, from the histogram (none without requests).
    fn latency(&self) -> Option<ImportedLatency> {
        let (requests, histogram) = (self.requests, &self.histogram);
        (requests > 0).then(|| ImportedLatency {
            fidelity: LatencyFidelity::Lossless,
            resolution_us: 1000.0,
            measures: "from sending the request to the end of the response, as Locust's HTTP \
                       client times it, rounded to whole milliseconds (closed loop: each user \
                       waits for its answer)"
                .into(),
            min_us: self.min_ms.is_finite().then_some(self.min_ms * 1e3),
            mean_us: Some(self.total_ms / requests as f64 * 1e3),
            max_us: Some(self.max_ms * 1e3),
            stddev_us: None,
            percentiles: PERCENTILES
                .iter()
                .map(|&at| Percentile {
                    at,
                    us: nearest_rank(histogram, requests, at) as f64 * 1e3,
                })
                .collect(),
            histogram: histogram
                .iter()
                .map(|(&ms, &count)| Bucket {
                    upper_us: ms as f64 * 1e3,
                    count,
                })
                .collect(),
        })
    }
}

/// The smallest value with at least `at` percent of the `total` requests at or below it.
fn nearest_rank(histogram: &BTreeMap<u64, u64>, total: u64, at: f64) -> u64 {
    let rank = ((at / 100.0) * total as f64).ceil().max(1.0) as u64;
    let mut seen = 0u64;
    for (&value, &count) in histogram {
        seen = seen.saturating_add(count);
        if seen >= rank {
            return value;
        }
    }
    histogram.keys().next_back().copied().unwrap_or(0)
}
