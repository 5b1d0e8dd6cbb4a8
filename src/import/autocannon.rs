//! autocannon's JSON (`--json`, checked against autocannon 9.0): connections, pipelining,
//! duration, counts by status class and code, and latency percentiles in whole
//! milliseconds. It names neither its rate (`-R`) nor its version, so the command is needed
//! to know whether the load was open loop.

use std::collections::BTreeMap;

use echomark_archive::{ImportedLatency, ImportedLoad, LatencyFidelity, Tool};
use serde::Deserialize;

use echomark_archive::limits::{saturating_sum, DURATION_SECONDS};

use super::{loop_of, percentiles, request_run, Read, RequestRun, Source};
use crate::error::Problem;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Report {
    url: String,
    connections: u64,
    /// Milliseconds between samples (`-L`; a second by default).
    sample_int: u64,
    pipelining: u64,
    workers: u64,
    duration: f64,
    /// Whole sample intervals (`sampleInt`, a second by default) the run lasted: its rate is
    /// their mean.
    samples: u64,
    start: String,
    #[allow(dead_code)]
    finish: String,
    errors: u64,
    #[allow(dead_code)]
    timeouts: u64,
    mismatches: u64,
    non2xx: u64,
    resets: u64,
    #[serde(rename = "1xx")]
    informational: u64,
    #[serde(rename = "2xx")]
    success: u64,
    #[serde(rename = "3xx")]
    redirect: u64,
    #[serde(rename = "4xx")]
    client_error: u64,
    #[serde(rename = "5xx")]
    server_error: u64,
    status_code_stats: BTreeMap<String, CodeCount>,
    latency: Histogram,
    requests: Histogram,
    throughput: Histogram,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CodeCount {
    count: u64,
}

/// autocannon's summary of an HdrHistogram: statistics and `pNN_N` percentiles.
#[derive(Deserialize)]
struct Histogram {
    mean: f64,
    stddev: f64,
    min: f64,
    max: f64,
    #[serde(flatten)]
    rest: BTreeMap<String, serde_json::Value>,
}

impl Histogram {
    /// The `pNN_N` fields, as names and numbers.
    fn percentiles(&self) -> Vec<(String, Option<f64>)> {
        self.rest
            .iter()
            .filter(|(k, _)| k.starts_with('p'))
            .map(|(k, v)| (k.clone(), v.as_f64()))
            .collect()
    }
}

/// Where each checked field of the run came from in autocannon's output, or its command line.
pub const JSON_PATHS: &[(&str, &str)] = &[
    ("load.duration_seconds", "duration"),
    ("load.connections", "connections"),
    ("load.rate", "--command -R"),
    ("reported_rate", "requests.mean"),
    ("bytes_per_second", "throughput.mean"),
    ("latency.min_us", "latency.min"),
    ("latency.mean_us", "latency.mean"),
    ("latency.max_us", "latency.max"),
    ("latency.stddev_us", "latency.stddev"),
];

/// Reads one autocannon JSON report.
pub fn read(source: &Source) -> Result<Read, Problem> {
    let report: Report = source.json(Tool::Autocannon)?;
    let command = source.command_for(
        Tool::Autocannon,
        "its rate (-R), so whether it ran open loop",
    )?;
    let usage =
        |e: crate::command_line::CommandLineError| source.problem("", format!("--command: {e}"));
    let rate = command.decimal(&["-R", "--overallRate"]).map_err(usage)?;
    let duration = super::within(source, "duration", report.duration, &DURATION_SECONDS)?;
    let responses = answered(source, &report)?;
    let reported_rate = sampled_rate(source, &report, responses)?;
    let latency = if responses == 0 {
        None
    } else {
        Some(latency(source, &report.latency)?)
    };
    let errors = errors(&report);
    let status_codes: BTreeMap<String, u64> = report
        .status_code_stats
        .into_iter()
        .map(|(code, c)| (code, c.count))
        .collect();
    let run = request_run(RequestRun {
        started_at_utc: Some(report.start),
        target: Some(report.url),
        load: ImportedLoad {
            connections: report.connections,
            threads: (report.workers > 0).then_some(report.workers),
            pipelining: report.pipelining,
            duration_seconds: duration,
            payload_bytes: source
                .payload_bytes
                .or_else(|| command.value(&["-b", "--body"]).map(|b| b.len() as u64)),
            loop_kind: loop_of(rate),
            rate,
            latency_correction: false,
        },
        responses,
        reported_rate,
        bytes_per_second: Some(report.throughput.mean),
        latency,
        unfinished: None,
        errors,
        status_codes,
    });
    if report.non2xx != run.non_2xx() {
        return Err(source.problem(
            "non2xx",
            format!(
                "is {}, but the status codes hold {} answers outside 2xx",
                report.non2xx,
                run.non_2xx()
            ),
        ));
    }
    Ok(Read { run, version: None })
}

/// The answers, any status: the 1xx–5xx counts, which the counts by code must agree with.
fn answered(source: &Source, report: &Report) -> Result<u64, Problem> {
    let responses = saturating_sum([
        report.informational,
        report.success,
        report.redirect,
        report.client_error,
        report.server_error,
    ]);
    let counted = saturating_sum(report.status_code_stats.values().map(|c| c.count));
    if counted != responses {
        return Err(source.problem(
            "statusCodeStats",
            format!("counts {counted} answers, but 1xx–5xx count {responses}"),
        ));
    }
    Ok(responses)
}

/// The latency of a run with answers: autocannon's statistics and percentiles, in whole
/// milliseconds.
fn latency(source: &Source, l: &Histogram) -> Result<ImportedLatency, Problem> {
    for (name, v) in [
        ("mean", l.mean),
        ("stddev", l.stddev),
        ("min", l.min),
        ("max", l.max),
    ] {
        super::finite_non_negative(source, &format!("latency.{name}"), v)?;
    }
    Ok(ImportedLatency {
        fidelity: LatencyFidelity::SummaryOnly,
        resolution_us: 1000.0,
        measures: "from writing the request to the end of the response, in whole milliseconds \
                   (no correction for coordinated omission)"
            .into(),
        min_us: Some(l.min * 1e3),
        mean_us: Some(l.mean * 1e3),
        max_us: Some(l.max * 1e3),
        stddev_us: Some(l.stddev * 1e3),
        percentiles: percentiles(source, "latency", l.percentiles(), 1e3)?,
        histogram: Vec::new(),
    })
}

/// The requests that ended without an answer, by kind.
fn errors(report: &Report) -> BTreeMap<String, u64> {
    let mut errors = BTreeMap::new();
    // autocannon's `errors` counts every request that ended without an answer, timeouts
    // included; mismatches (`--expectBody`) and resets are counted on their own.
    for (kind, n) in [
        ("errors (timeouts included)", report.errors),
        ("body mismatches", report.mismatches),
        ("resets", report.resets),
    ] {
        if n > 0 {
            errors.insert(kind.to_string(), n);
        }
    }
    errors
}

/// How closely autocannon's mean of its samples times their number gives its count of
/// answers: its histogram of samples keeps 3 significant digits.
const SAMPLE_MEAN_TOLERANCE: f64 = 0.01;

/// autocannon's own rate, checked by its own arithmetic: it counts the answers of every
/// `sampleInt` milliseconds as one sample, and of the time after the last whole interval as
/// a last one, so its duration spans its samples and their mean times their number is its
/// count. The mean is a rate per second only when an interval is a second; `None` otherwise
/// and when there was no sample. With workers, each thread samples on its own, so only the
/// mean is kept.
fn sampled_rate(source: &Source, report: &Report, responses: u64) -> Result<Option<f64>, Problem> {
    let mean = super::within(
        source,
        "requests.mean",
        report.requests.mean,
        &echomark_archive::limits::RATE_PER_SECOND,
    )?;
    if report.workers > 0 {
        return Ok((report.samples > 0 && report.sample_int == 1000).then_some(mean));
    }
    let interval = report.sample_int as f64 / 1e3;
    let (earliest, latest) = (
        report.samples.saturating_sub(1) as f64 * interval,
        report.samples.saturating_add(1) as f64 * interval,
    );
    // autocannon rounds its duration to 10 ms.
    if !(earliest - 0.01..=latest + 0.01).contains(&report.duration) {
        return Err(source.problem(
            "duration",
            format!(
                "{} s, but autocannon took {} samples {} ms apart: the run lasted from {earliest} \
                 to {latest} s",
                report.duration, report.samples, report.sample_int
            ),
        ));
    }
    if report.samples == 0 {
        return Ok(None);
    }
    let sampled = mean * report.samples as f64;
    let tolerance = SAMPLE_MEAN_TOLERANCE * sampled.max(responses as f64) + 1.0;
    if (sampled - responses as f64).abs() > tolerance {
        return Err(source.problem(
            "requests.mean",
            format!(
                "{mean} per sample over {} samples makes {sampled} answers, but autocannon \
                 counted {responses}: they must agree within {}% (its samples keep 3 \
                 significant digits)",
                report.samples,
                SAMPLE_MEAN_TOLERANCE * 100.0
            ),
        ));
    }
    Ok((report.sample_int == 1000).then_some(mean))
}
