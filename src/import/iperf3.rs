//! iperf3's JSON (`-J`, checked against iperf 3.12): a one-way bulk transfer over TCP or
//! UDP, with retransmits (TCP), datagram loss and jitter (UDP) and both hosts' CPU use. A
//! run iperf3 could not make is `{"error": …}` with an empty `end`, and is kept as a failed
//! run. There are no requests and no latency: what it measures is throughput one way.

use echomark_archive::limits::Shown;
use echomark_archive::{ImportedLoad, ImportedRun, Loop, Protocol, StreamFigures, Tool};
use serde::de::IgnoredAny;
use serde::Deserialize;

use super::{Read, Source};
use crate::error::Problem;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Report {
    start: Start,
    /// Every interval's figures, which the import does not keep: skipped as they are
    /// parsed, never built into a tree (a long run with `-i 0.1` writes hundreds of MB).
    #[allow(dead_code)]
    intervals: IgnoredAny,
    end: End,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct Start {
    version: String,
    #[serde(default)]
    timestamp: Option<Timestamp>,
    #[serde(default)]
    connecting_to: Option<Endpoint>,
    #[serde(default)]
    test_start: Option<TestStart>,
}

#[derive(Deserialize)]
struct Timestamp {
    timesecs: i64,
}

#[derive(Deserialize)]
struct Endpoint {
    host: String,
    port: u16,
}

#[derive(Deserialize)]
struct TestStart {
    protocol: String,
    num_streams: u64,
    blksize: u64,
    duration: f64,
    reverse: u8,
    target_bitrate: u64,
}

#[derive(Deserialize, Default)]
struct End {
    #[serde(default)]
    sum_sent: Option<Sum>,
    #[serde(default)]
    sum_received: Option<Sum>,
    /// UDP: the receiver's view of loss and jitter.
    #[serde(default)]
    sum: Option<Sum>,
    #[serde(default)]
    cpu_utilization_percent: Option<Cpu>,
}

#[derive(Deserialize)]
struct Sum {
    seconds: f64,
    bytes: u64,
    bits_per_second: f64,
    #[serde(default)]
    retransmits: Option<u64>,
    #[serde(default)]
    jitter_ms: Option<f64>,
    #[serde(default)]
    lost_packets: Option<u64>,
    #[serde(default)]
    packets: Option<u64>,
    #[serde(default)]
    lost_percent: Option<f64>,
}

#[derive(Deserialize)]
struct Cpu {
    host_total: f64,
    remote_total: f64,
}

/// Where each checked field of the run came from in iperf3's output.
pub const JSON_PATHS: &[(&str, &str)] = &[
    ("load.duration_seconds", "end.sum_sent.seconds"),
    ("load.connections", "start.test_start.num_streams"),
    ("stream.streams", "start.test_start.num_streams"),
    ("load.rate", "start.test_start.target_bitrate"),
    (
        "stream.sent_bits_per_second",
        "end.sum_sent.bits_per_second",
    ),
    (
        "stream.received_bits_per_second",
        "end.sum_received.bits_per_second",
    ),
    ("bytes_per_second", "end.sum_received.bits_per_second"),
    ("stream.lost_percent", "end.sum.lost_percent"),
    ("stream.jitter_ms", "end.sum.jitter_ms"),
];

/// Reads one iperf3 JSON report.
pub fn read(source: &Source) -> Result<Read, Problem> {
    let report: Report = source.json(Tool::Iperf3)?;
    let facts = FileFacts::of(source, &report.start)?;
    if let Some(error) = &report.error {
        return Ok(facts.failed(source, error));
    }
    let test = report.start.test_start.as_ref().ok_or_else(|| {
        source.problem("start.test_start", "missing, and iperf3 reported no error")
    })?;
    let protocol = protocol_of(source, test)?;
    let totals = Totals::of(source, &report.end)?;
    let run = ImportedRun {
        load: load(test, protocol, totals.sent),
        stream: Some(stream_figures(test, protocol, &totals, &report.end)),
        bytes_per_second: Some(totals.received.bits_per_second / 8.0),
        ..facts.base(protocol)
    };
    Ok(Read {
        run,
        version: Some(facts.version),
    })
}

/// What every run of one file says, before its transfer (or its failure) is known.
struct FileFacts {
    /// iperf3's version, `3.12` of `iperf 3.12`.
    version: String,
    started_at_utc: Option<String>,
    /// `HOST:PORT` of the server.
    target: Option<String>,
    /// The streams the command asked for (`-P`), when it names them.
    command_streams: Option<u64>,
}

impl FileFacts {
    /// The facts of `start`, refused when it is not iperf 3's.
    fn of(source: &Source, start: &Start) -> Result<Self, Problem> {
        let version = start
            .version
            .strip_prefix("iperf ")
            .filter(|v| v.starts_with('3'))
            .ok_or_else(|| {
                source.problem(
                    "start.version",
                    format!("{:?} is not iperf 3's", start.version),
                )
            })?
            .to_string();
        Ok(Self {
            version,
            started_at_utc: start
                .timestamp
                .as_ref()
                .map(|t| super::utc_from_unix(t.timesecs)),
            target: start
                .connecting_to
                .as_ref()
                .map(|c| format!("{}:{}", c.host, c.port)),
            command_streams: source
                .command
                .as_ref()
                .and_then(|c| c.number(&["-P", "--parallel"]).ok().flatten()),
        })
    }

    /// A run of `protocol` with these facts and no figures yet.
    fn base(&self, protocol: Protocol) -> ImportedRun {
        ImportedRun {
            source_file: String::new(),
            source_sha256: String::new(),
            command: None,
            started_at_utc: self.started_at_utc.clone(),
            protocol,
            target: self.target.clone(),
            load: ImportedLoad {
                connections: self.command_streams.unwrap_or(1),
                threads: None,
                pipelining: 1,
                duration_seconds: 0.0,
                payload_bytes: None,
                loop_kind: Loop::Closed,
                rate: None,
                latency_correction: false,
            },
            responses: None,
            responses_per_second: None,
            reported_rate: None,
            bytes_per_second: None,
            latency: None,
            unfinished: None,
            errors: Default::default(),
            status_codes: Default::default(),
            stream: None,
            failed: false,
            failure: Vec::new(),
        }
    }

    /// The failed run of a file in which iperf3 reported `error`: over UDP when the command
    /// asked for it (`-u`), TCP otherwise.
    fn failed(self, source: &Source, error: &str) -> Read {
        let udp_by_command = source
            .command
            .as_ref()
            .is_some_and(|c| c.has("-u") || c.has("--udp"));
        let protocol = if udp_by_command {
            Protocol::Udp
        } else {
            Protocol::Tcp
        };
        Read {
            run: ImportedRun {
                failed: true,
                failure: vec![format!("iperf3: {error}")],
                ..self.base(protocol)
            },
            version: Some(self.version),
        }
    }
}

/// The transfer's protocol: TCP or UDP, the only ones imported.
fn protocol_of(source: &Source, test: &TestStart) -> Result<Protocol, Problem> {
    match test.protocol.as_str() {
        "TCP" => Ok(Protocol::Tcp),
        "UDP" => Ok(Protocol::Udp),
        other => Err(source.problem(
            "start.test_start.protocol",
            format!("{other:?}: only TCP and UDP are imported"),
        )),
    }
}

/// The sender's and the receiver's totals of the transfer, each checked by its own
/// arithmetic.
struct Totals<'a> {
    sent: &'a Sum,
    /// `end.sum_received`, or a UDP receiver's `end.sum`.
    received: &'a Sum,
}

impl<'a> Totals<'a> {
    /// The totals of `end`, refused when missing, negative, not finite or inconsistent.
    fn of(source: &Source, end: &'a End) -> Result<Self, Problem> {
        let sent = end
            .sum_sent
            .as_ref()
            .ok_or_else(|| source.problem("end.sum_sent", "missing"))?;
        let received = end
            .sum_received
            .as_ref()
            .or(end.sum.as_ref())
            .ok_or_else(|| source.problem("end.sum_received", "missing"))?;
        for (path, v) in [
            ("end.sum_sent.seconds", sent.seconds),
            ("end.sum_sent.bits_per_second", sent.bits_per_second),
            ("end.sum_received.bits_per_second", received.bits_per_second),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(source.problem(path, format!("{v}: not finite and non-negative")));
            }
        }
        let received_path = if end.sum_received.is_some() {
            "end.sum_received"
        } else {
            "end.sum"
        };
        for (path, sum) in [("end.sum_sent", sent), (received_path, received)] {
            agrees_with_its_bytes(source, path, sum)?;
        }
        Ok(Self { sent, received })
    }
}

/// The load of a transfer of `protocol`: its streams, its duration (the sender's seconds, or
/// the one asked for) and, for UDP with a target bitrate, its datagrams per second.
fn load(test: &TestStart, protocol: Protocol, sent: &Sum) -> ImportedLoad {
    let rate = (protocol == Protocol::Udp && test.target_bitrate > 0 && test.blksize > 0)
        .then(|| test.target_bitrate as f64 / 8.0 / test.blksize as f64);
    ImportedLoad {
        connections: test.num_streams,
        threads: None,
        pipelining: 1,
        duration_seconds: if sent.seconds > 0.0 {
            sent.seconds
        } else {
            test.duration
        },
        payload_bytes: Some(test.blksize),
        loop_kind: super::loop_of(rate),
        rate,
        latency_correction: false,
    }
}

/// The transfer's figures: both directions' rates and bytes, TCP's retransmits, UDP's loss
/// and jitter, and both ends' CPU use.
fn stream_figures(
    test: &TestStart,
    protocol: Protocol,
    totals: &Totals,
    end: &End,
) -> StreamFigures {
    let (sender_cpu, receiver_cpu) = cpu_by_role(test, end);
    let loss = end.sum.as_ref().filter(|_| protocol == Protocol::Udp);
    StreamFigures {
        streams: test.num_streams,
        sent_bits_per_second: totals.sent.bits_per_second,
        received_bits_per_second: totals.received.bits_per_second,
        sent_bytes: totals.sent.bytes,
        received_bytes: totals.received.bytes,
        retransmits: totals
            .sent
            .retransmits
            .filter(|_| protocol == Protocol::Tcp),
        datagrams: loss.and_then(|s| s.packets),
        lost_datagrams: loss.and_then(|s| s.lost_packets),
        lost_percent: loss.and_then(|s| s.lost_percent),
        jitter_ms: loss.and_then(|s| s.jitter_ms),
        datagram_bytes: (protocol == Protocol::Udp).then_some(test.blksize),
        sender_cpu_percent: sender_cpu,
        receiver_cpu_percent: receiver_cpu,
    }
}

/// The sender's and the receiver's CPU use: this host's and the server's, swapped by `-R`.
fn cpu_by_role(test: &TestStart, end: &End) -> (Option<f64>, Option<f64>) {
    let (host_cpu, remote_cpu) = end
        .cpu_utilization_percent
        .as_ref()
        .map_or((None, None), |c| (Some(c.host_total), Some(c.remote_total)));
    // With -R the server sends and this host receives.
    if test.reverse != 0 {
        (remote_cpu, host_cpu)
    } else {
        (host_cpu, remote_cpu)
    }
}

/// How closely iperf3's bits per second follow its bytes over its seconds: it prints what
/// it computed from them, and a UDP receiver's `sum` divides the bytes sent by its own
/// seconds (4 × 10⁻⁵ apart in the fixtures).
const BITS_TOLERANCE: f64 = 1e-3;

/// iperf3's own rate, checked by its own arithmetic: `bits_per_second` is `bytes × 8 /
/// seconds`.
fn agrees_with_its_bytes(source: &Source, path: &str, sum: &Sum) -> Result<(), Problem> {
    if sum.seconds <= 0.0 {
        return Ok(());
    }
    let computed = sum.bytes as f64 * 8.0 / sum.seconds;
    let reported = sum.bits_per_second;
    if (computed - reported).abs() > BITS_TOLERANCE * computed.max(reported) + 1.0 {
        return Err(source.problem(
            format!("{path}.bits_per_second"),
            format!(
                "{} bits per second, but {} bytes over {} s are {}: they must agree within {}%",
                Shown(reported),
                sum.bytes,
                Shown(sum.seconds),
                Shown(computed),
                BITS_TOLERANCE * 100.0
            ),
        ));
    }
    Ok(())
}
