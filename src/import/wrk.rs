//! wrk's report (checked against Debian's wrk 4.1.0): its text, with the latency
//! distribution of `--latency`, and optionally the JSON line `scripts/wrk-json.lua` prints
//! after it with wrk's exact counts and percentiles. The JSON line wins where both say a
//! figure; the text is checked against it.

use std::collections::BTreeMap;

use echomark_archive::{ImportedLatency, ImportedLoad, LatencyFidelity, Loop, Percentile};
use serde::Deserialize;

use super::{percentiles, request_run, Read, RequestRun, Source};
use crate::error::Problem;

/// The JSON line of `scripts/wrk-json.lua`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Hook {
    format: String,
    format_version: u32,
    threads: u64,
    connections: u64,
    body_bytes: u64,
    duration_us: u64,
    requests: u64,
    bytes: u64,
    errors: HookErrors,
    latency_us: HookLatency,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HookErrors {
    connect: u64,
    read: u64,
    write: u64,
    status: u64,
    timeout: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HookLatency {
    min: f64,
    max: f64,
    mean: f64,
    stdev: f64,
    percentiles: BTreeMap<String, Option<f64>>,
}

/// What the text report says.
#[derive(Default)]
struct Text {
    url: Option<String>,
    threads: Option<u64>,
    connections: Option<u64>,
    requests: Option<u64>,
    seconds: Option<f64>,
    requests_per_second: Option<f64>,
    bytes_per_second: Option<f64>,
    socket_errors: BTreeMap<String, u64>,
    non_2xx_3xx: u64,
    mean_us: Option<f64>,
    stdev_us: Option<f64>,
    max_us: Option<f64>,
    distribution: Vec<Percentile>,
    /// The JSON line and its line number.
    hook: Option<(usize, String)>,
}

const MEASURES: &str = "from writing the request to the end of the response, on each \
    connection's own schedule (closed loop: no correction for coordinated omission)";

/// Reads one wrk report.
pub fn read(source: &Source) -> Result<Read, Problem> {
    let text = parse_text(source)?;
    let url = text
        .url
        .clone()
        .ok_or_else(|| missing(source, "'Running … test @ URL'"))?;
    let hook = hook(source, &text)?;
    let counts = Counts::of(source, &text, hook.as_ref())?;
    let (errors, non_2xx_3xx) = failures(&text, hook.as_ref());
    let latency = if counts.requests == 0 {
        None
    } else {
        Some(match &hook {
            Some(h) => hook_latency(source, h, text.hook.as_ref().map_or(0, |h| h.0))?,
            None => text_latency(source, &text)?,
        })
    };
    let run = request_run(RequestRun {
        started_at_utc: None,
        target: Some(url),
        load: ImportedLoad {
            connections: counts.connections,
            threads: counts.threads,
            pipelining: 1,
            duration_seconds: counts.seconds,
            payload_bytes: hook.as_ref().map(|h| h.body_bytes).or(source.payload_bytes),
            loop_kind: Loop::Closed,
            rate: None,
            latency_correction: false,
        },
        responses: counts.requests,
        reported_rate: text.requests_per_second,
        bytes_per_second: match &hook {
            Some(h) => Some(h.bytes as f64 / counts.seconds),
            None => text.bytes_per_second,
        },
        latency,
        unfinished: None,
        errors,
        status_codes: status_codes(counts.requests, non_2xx_3xx),
    });
    Ok(Read { run, version: None })
}

/// The problem of a report without the line that says `what`.
fn missing(source: &Source, what: &str) -> Problem {
    source.problem("", format!("not wrk's report: no {what} line"))
}

/// The JSON line of `scripts/wrk-json.lua`, when the report has one: parsed, of the format
/// this reads, and of the same run as the text.
fn hook(source: &Source, text: &Text) -> Result<Option<Hook>, Problem> {
    let Some((line, json)) = &text.hook else {
        return Ok(None);
    };
    let h = crate::read::parse::typed::<Hook>(
        &format!("{} line {line}", source.file),
        json.as_bytes(),
    )?;
    if h.format != "echomark-wrk-json" || h.format_version != 1 {
        return Err(source.problem(
            "",
            format!(
                "the JSON line is {:?} version {}, not scripts/wrk-json.lua's echomark-wrk-json 1",
                h.format, h.format_version
            ),
        ));
    }
    if text.requests.is_some_and(|r| r != h.requests) {
        return Err(source.problem(
            "",
            "the text's request count and the JSON line's disagree: not one run",
        ));
    }
    Ok(Some(h))
}

/// The run's size: the JSON line's where it has one, the text's otherwise.
struct Counts {
    connections: u64,
    threads: Option<u64>,
    requests: u64,
    seconds: f64,
}

impl Counts {
    /// The counts of the report, refused when neither the JSON line nor the text says one.
    fn of(source: &Source, text: &Text, hook: Option<&Hook>) -> Result<Self, Problem> {
        let connections = match hook {
            Some(h) => h.connections,
            None => text
                .connections
                .ok_or_else(|| missing(source, "'N threads and M connections'"))?,
        };
        let threads = hook.map(|h| h.threads).or(text.threads);
        let requests = match hook {
            Some(h) => h.requests,
            None => text
                .requests
                .ok_or_else(|| missing(source, "'N requests in T'"))?,
        };
        let seconds = match hook {
            Some(h) => h.duration_us as f64 / 1e6,
            None => text
                .seconds
                .ok_or_else(|| missing(source, "'N requests in T'"))?,
        };
        Ok(Self {
            connections,
            threads,
            requests,
            seconds,
        })
    }
}

/// The requests that ended in a socket error, by kind, and the answers outside 2xx and 3xx:
/// the JSON line's where it has one, the text's otherwise.
fn failures(text: &Text, hook: Option<&Hook>) -> (BTreeMap<String, u64>, u64) {
    let Some(h) = hook else {
        return (text.socket_errors.clone(), text.non_2xx_3xx);
    };
    let errors = [
        ("connect", h.errors.connect),
        ("read", h.errors.read),
        ("write", h.errors.write),
        ("timeout", h.errors.timeout),
    ]
    .into_iter()
    .filter(|(_, n)| *n > 0)
    .map(|(k, n)| (format!("socket {k}"), n))
    .collect();
    (errors, h.errors.status)
}

/// The latency the JSON line (on line `line`) gives: wrk's exact statistics and percentiles.
fn hook_latency(source: &Source, h: &Hook, line: usize) -> Result<ImportedLatency, Problem> {
    for (name, v) in [
        ("min", h.latency_us.min),
        ("max", h.latency_us.max),
        ("mean", h.latency_us.mean),
        ("stdev", h.latency_us.stdev),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(source.problem(
                format!("line {line}: latency_us.{name}"),
                format!("{v}: a latency is finite and not negative"),
            ));
        }
    }
    Ok(ImportedLatency {
        fidelity: LatencyFidelity::SummaryOnly,
        resolution_us: 1.0,
        measures: MEASURES.into(),
        min_us: Some(h.latency_us.min),
        mean_us: Some(h.latency_us.mean),
        max_us: Some(h.latency_us.max),
        stddev_us: Some(h.latency_us.stdev),
        percentiles: percentiles(
            source,
            "latency_us.percentiles",
            h.latency_us.percentiles.clone(),
            1.0,
        )?,
        histogram: Vec::new(),
    })
}

/// The latency the text gives (its distribution needs `--latency`), rounded as wrk prints it.
fn text_latency(source: &Source, text: &Text) -> Result<ImportedLatency, Problem> {
    if text.distribution.is_empty() {
        return Err(source.problem(
            "",
            "wrk printed no latency percentiles: run it with --latency, or with -s scripts/wrk-json.lua",
        ));
    }
    Ok(ImportedLatency {
        fidelity: LatencyFidelity::SummaryOnly,
        // The text rounds to two decimals of its unit: 0.01 µs at best.
        resolution_us: 0.01,
        measures: MEASURES.into(),
        min_us: None,
        mean_us: text.mean_us,
        max_us: text.max_us,
        stddev_us: text.stdev_us,
        percentiles: text.distribution.clone(),
        histogram: Vec::new(),
    })
}

/// The answers by status class, which is all wrk tells of them.
fn status_codes(requests: u64, non_2xx_3xx: u64) -> BTreeMap<String, u64> {
    let ok = requests.saturating_sub(non_2xx_3xx);
    let mut status_codes = BTreeMap::new();
    if ok > 0 {
        status_codes.insert("2xx or 3xx".to_string(), ok);
    }
    if non_2xx_3xx > 0 {
        status_codes.insert("4xx or 5xx".to_string(), non_2xx_3xx);
    }
    status_codes
}

fn parse_text(source: &Source) -> Result<Text, Problem> {
    let body = source.text()?;
    let mut text = Text::default();
    let mut in_distribution = false;
    for (i, line) in body.lines().enumerate() {
        let n = i + 1;
        let at = |what: &str| {
            source.problem(format!("line {n}"), format!("cannot read {what}: {line:?}"))
        };
        let trimmed = line.trim();
        let words: Vec<&str> = trimmed.split_whitespace().collect();
        if trimmed.starts_with('{') {
            text.hook = Some((n, trimmed.to_string()));
        } else if let Some(rest) = trimmed.strip_prefix("Running ") {
            text.url = rest.split_once(" @ ").map(|(_, u)| u.trim().to_string());
        } else if words.len() == 5 && words[1] == "threads" && words[4] == "connections" {
            text.threads = Some(words[0].parse().map_err(|_| at("the threads"))?);
            text.connections = Some(words[3].parse().map_err(|_| at("the connections"))?);
        } else if words.first() == Some(&"Latency") && words.len() == 5 {
            text.mean_us = Some(micros(words[1]).ok_or_else(|| at("the mean latency"))?);
            text.stdev_us = Some(micros(words[2]).ok_or_else(|| at("the latency's deviation"))?);
            text.max_us = Some(micros(words[3]).ok_or_else(|| at("the largest latency"))?);
        } else if trimmed == "Latency Distribution" {
            in_distribution = true;
            continue;
        } else if in_distribution && words.len() == 2 && words[0].ends_with('%') {
            let at_pct: f64 = words[0]
                .trim_end_matches('%')
                .parse()
                .map_err(|_| at("a percentile"))?;
            let us = micros(words[1]).ok_or_else(|| at("a percentile's latency"))?;
            text.distribution.push(Percentile { at: at_pct, us });
            continue;
        } else if words.len() >= 4 && words[1] == "requests" && words[2] == "in" {
            text.requests = Some(words[0].parse().map_err(|_| at("the requests"))?);
            let secs = words[3].trim_end_matches(',');
            text.seconds =
                Some(crate::command_line::seconds(secs).ok_or_else(|| at("the duration"))?);
        } else if let Some(rest) = trimmed.strip_prefix("Requests/sec:") {
            text.requests_per_second = Some(rest.trim().parse().map_err(|_| at("the rate"))?);
        } else if let Some(rest) = trimmed.strip_prefix("Transfer/sec:") {
            text.bytes_per_second =
                Some(bytes(rest.trim()).ok_or_else(|| at("the transfer rate"))?);
        } else if let Some(rest) = trimmed.strip_prefix("Socket errors:") {
            for part in rest.split(',') {
                let mut kv = part.split_whitespace();
                let (Some(k), Some(v)) = (kv.next(), kv.next()) else {
                    return Err(at("the socket errors"));
                };
                let v: u64 = v.parse().map_err(|_| at("the socket errors"))?;
                if v > 0 {
                    text.socket_errors.insert(format!("socket {k}"), v);
                }
            }
        } else if let Some(rest) = trimmed.strip_prefix("Non-2xx or 3xx responses:") {
            text.non_2xx_3xx = rest.trim().parse().map_err(|_| at("the non-2xx answers"))?;
        }
        in_distribution = false;
    }
    Ok(text)
}

/// Microseconds in wrk's `69.94us`, `9.06ms`, `1.20s`, `2.00m`.
fn micros(text: &str) -> Option<f64> {
    with_unit(
        text,
        &[
            ("us", 1.0),
            ("ms", 1e3),
            ("s", 1e6),
            ("m", 60e6),
            ("h", 3600e6),
        ],
    )
}

/// Bytes in wrk's `220.77MB` (powers of 1,024, as wrk divides).
fn bytes(text: &str) -> Option<f64> {
    const K: f64 = 1024.0;
    with_unit(
        text,
        &[
            ("B", 1.0),
            ("KB", K),
            ("MB", K * K),
            ("GB", K * K * K),
            ("TB", K * K * K * K),
        ],
    )
}

/// A number followed by one of `units`, scaled by it; finite and not negative.
fn with_unit(text: &str, units: &[(&str, f64)]) -> Option<f64> {
    let split = text.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = text.split_at(split);
    let v: f64 = number.parse().ok()?;
    let scale = units.iter().find(|(u, _)| *u == unit)?.1;
    Some(v * scale).filter(|v| v.is_finite() && *v >= 0.0)
}
