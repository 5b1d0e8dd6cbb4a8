//! oha's JSON (`--output-format json`, checked against oha 1.16): a summary, percentiles
//! p10–p99.99, an 11-bucket histogram, status codes and errors. It names neither the
//! connections nor the rate nor oha's version, so they come from `--command` and
//! `--tool-version`.

use std::collections::BTreeMap;

use echomark_archive::limits::saturating_sum;
use echomark_archive::{Bucket, ImportedLatency, ImportedLoad, LatencyFidelity, Tool};
use serde::de::IgnoredAny;
use serde::Deserialize;

use super::{loop_of, percentiles, request_run, Read, RequestRun, Source};
use crate::error::Problem;

/// oha's JSON, every top-level key of the version read: another version's fields are an
/// error rather than a guess. The keys the import does not keep are skipped as they are
/// parsed, never built into a tree.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Report {
    summary: Summary,
    #[allow(dead_code)]
    metrics: IgnoredAny,
    response_time_histogram: BTreeMap<String, u64>,
    latency_percentiles: BTreeMap<String, Option<f64>>,
    #[allow(dead_code)]
    first_byte_histogram: IgnoredAny,
    #[allow(dead_code)]
    first_byte_percentiles: IgnoredAny,
    #[allow(dead_code)]
    rps: IgnoredAny,
    #[allow(dead_code)]
    details: IgnoredAny,
    status_code_distribution: BTreeMap<String, u64>,
    error_distribution: BTreeMap<String, u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Summary {
    #[allow(dead_code)]
    success_rate: f64,
    total: f64,
    slowest: Option<f64>,
    fastest: Option<f64>,
    average: Option<f64>,
    requests_per_sec: f64,
    #[allow(dead_code)]
    total_data: u64,
    #[allow(dead_code)]
    size_per_request: Option<u64>,
    size_per_sec: f64,
}

/// What oha calls the requests its deadline cut off: in flight, not failed.
const CUT_AT_DEADLINE: &str = "aborted due to deadline";

/// oha's default connections (`-c`).
const DEFAULT_CONNECTIONS: u64 = 50;

/// Where each checked field of the run came from in oha's output, or its command line.
pub const JSON_PATHS: &[(&str, &str)] = &[
    ("load.duration_seconds", "summary.total"),
    ("load.connections", "--command -c"),
    ("load.rate", "--command -q"),
    ("reported_rate", "summary.requestsPerSec"),
    ("bytes_per_second", "summary.sizePerSec"),
    ("latency.min_us", "summary.fastest"),
    ("latency.mean_us", "summary.average"),
    ("latency.max_us", "summary.slowest"),
];

/// Reads one oha JSON report.
pub fn read(source: &Source) -> Result<Read, Problem> {
    let report: Report = source.json(Tool::Oha)?;
    let command = source.command_for(Tool::Oha, "its connections, duration or rate")?;
    let usage =
        |e: crate::command_line::CommandLineError| source.problem("", format!("--command: {e}"));
    let connections = command
        .number(&["-c"])
        .map_err(usage)?
        .unwrap_or(DEFAULT_CONNECTIONS);
    let rate = command.decimal(&["-q"]).map_err(usage)?;
    let summary = &report.summary;
    let duration = super::finite_non_negative(source, "summary.total", summary.total)?;
    let responses = saturating_sum(report.status_code_distribution.values().copied());
    let mut errors = report.error_distribution.clone();
    let unfinished = errors.remove(CUT_AT_DEADLINE);
    let latency = if responses == 0 {
        None
    } else {
        let mut histogram = Vec::new();
        for (bound, &count) in &report.response_time_histogram {
            let at = format!("responseTimeHistogram.{bound:?}");
            let seconds: f64 = bound
                .parse()
                .ok()
                .filter(|s: &f64| s.is_finite() && *s >= 0.0)
                .ok_or_else(|| source.problem(&at, "not a latency in seconds"))?;
            histogram.push(Bucket {
                upper_us: seconds * 1e6,
                count,
            });
        }
        histogram.sort_by(|a, b| a.upper_us.total_cmp(&b.upper_us));
        Some(ImportedLatency {
            fidelity: LatencyFidelity::SummaryOnly,
            resolution_us: 0.001,
            measures: if command.has("--latency-correction") {
                "from when the request was due by the rate's schedule to the end of the response"
                    .into()
            } else {
                "from sending the request to the end of the response".into()
            },
            min_us: summary.fastest.map(|s| s * 1e6),
            mean_us: summary.average.map(|s| s * 1e6),
            max_us: summary.slowest.map(|s| s * 1e6),
            stddev_us: None,
            percentiles: percentiles(
                source,
                "latencyPercentiles",
                report.latency_percentiles.clone(),
                1e6,
            )?,
            histogram,
        })
    };
    let run = request_run(RequestRun {
        started_at_utc: None,
        target: last_url(command).map(str::to_string),
        load: ImportedLoad {
            connections,
            threads: None,
            pipelining: 1,
            duration_seconds: duration,
            payload_bytes: source.payload_bytes,
            loop_kind: loop_of(rate),
            rate,
            latency_correction: command.has("--latency-correction"),
        },
        responses,
        reported_rate: Some(super::finite_non_negative(
            source,
            "summary.requestsPerSec",
            summary.requests_per_sec,
        )?),
        bytes_per_second: Some(summary.size_per_sec),
        latency,
        unfinished,
        errors,
        status_codes: report.status_code_distribution,
    });
    Ok(Read { run, version: None })
}

/// The URL a request tool's command line measures: its last word that looks like one.
pub fn last_url(command: &crate::command_line::Words) -> Option<&str> {
    command.urls().last().copied()
}
