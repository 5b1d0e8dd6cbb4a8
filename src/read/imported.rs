//! Imported archives (`echomark import`), normalised into the model: each imported run is a
//! [`Run`] whose case key names the tool as its backend, one connection per client and the
//! tool's pipelining as its window, so that compare, history and What changed read it as
//! they read any run. It keeps only what the tool measured: no CPU, memory or echo counters
//! that the tool does not have.

use std::collections::BTreeMap;
use std::path::Path;

use echomark_archive::{
    AddressFamily, Arrival, Backend, CaseKey, ImportedArchive, ImportedRun, IoModel, OfferedLoad,
    Protocol,
};

use super::{file_record, FileRead};
use crate::model::{Format, HostInfo, ImportedFigures, ImportedSource, Program, Run};

/// Reads one imported archive into `out`.
pub fn normalise(out: &mut FileRead, path: &Path, archive: ImportedArchive) {
    let mut file = file_record(path, Format::Imported, None);
    let tool = archive.tool;
    file.backend = Some(tool.to_string());
    file.imported = Some(ImportedSource {
        tool,
        version: archive.tool_version.clone(),
        host_recorded: archive.host.is_some(),
    });
    file.host = archive.host.map(HostInfo::from).unwrap_or_default();
    file.complete = true;
    file.runs = archive.runs.len();
    file.recorded_at_utc = archive
        .runs
        .iter()
        .filter_map(|r| r.started_at_utc.clone())
        .min();
    let mut protocols: Vec<Protocol> = archive.runs.iter().map(|r| r.protocol).collect();
    protocols.sort_by_key(|p| p.as_str());
    protocols.dedup();
    file.protocols = protocols;
    file.address_family = archive
        .runs
        .first()
        .map_or(AddressFamily::Ipv4, |r| family(r.target.as_deref()));
    // The longest run stands for the dataset's timing (an import has no requested one).
    file.seconds = archive
        .runs
        .iter()
        .map(|r| r.load.duration_seconds)
        .fold(0.0, f64::max);
    let mut repetitions: BTreeMap<CaseKey, u64> = BTreeMap::new();
    for (index, run) in archive.runs.into_iter().enumerate() {
        if !matches!(run.protocol, Protocol::Http | Protocol::Tcp | Protocol::Udp) {
            out.problem(
                path,
                format!("runs[{index}].protocol"),
                format!("{}: imported runs are http, tcp or udp", run.protocol),
            );
            continue;
        }
        if !run.failed && run.load.duration_seconds <= 0.0 {
            out.problem(
                path,
                format!("runs[{index}].load.duration_seconds"),
                "a run that did not fail has a duration",
            );
        }
        for (field, value) in run.figures().into_iter().filter(|(_, v)| *v < 0.0) {
            out.problem(
                path,
                format!("runs[{index}].{field}"),
                format!("{value}: a measurement is not negative"),
            );
        }
        // What `echomark import` refuses, refused here too: a hand-edited archive is no
        // way around it.
        for (field, why) in run.implausible(tool) {
            out.problem(path, format!("runs[{index}].{field}"), why.to_string());
        }
        let key = key_of(tool.as_str(), &run);
        let repetition = repetitions.entry(key.clone()).or_default();
        *repetition += 1;
        out.runs.push(run_of(index, key, *repetition, run));
    }
    file.repetitions = repetitions.values().copied().max().unwrap_or(0);
    out.backends.insert(tool.to_string());
    out.finish(file);
}

/// The address family of a target (`http://[::1]:80/`, `127.0.0.1:5201`).
fn family(target: Option<&str>) -> AddressFamily {
    match target {
        Some(t) if t.contains('[') || t.matches(':').count() > 2 => AddressFamily::Ipv6,
        _ => AddressFamily::Ipv4,
    }
}

/// The configuration an imported run measured, in the model's key.
fn key_of(tool: &str, run: &ImportedRun) -> CaseKey {
    CaseKey {
        backend: Backend::named(tool),
        implementation: tool.to_string(),
        protocol: run.protocol,
        payload_bytes: run.load.payload_bytes.unwrap_or(0),
        clients: run.load.connections,
        window: run.load.pipelining.max(1),
        io_model: IoModel::Shared,
        io_threads: run.load.threads.unwrap_or(1).max(1),
        handler_work: 0,
        udp_server_recv_buffer: None,
        load: run.load.rate.map(|rate| OfferedLoad {
            rate: rate.round() as u64,
            arrival: Arrival::Uniform,
        }),
        quic_transport: None,
        generators: None,
    }
}

fn run_of(index: usize, key: CaseKey, repetition: u64, run: ImportedRun) -> Run {
    let latency = run.latency.as_ref();
    let percentile = |at: f64| latency.and_then(|l| l.percentile(at));
    let payload = run.load.payload_bytes;
    let figures = ImportedFigures {
        fidelity: latency.map(|l| l.fidelity),
        resolution_us: latency.map_or(0.0, |l| l.resolution_us),
        loop_kind: run.load.loop_kind,
        latency_correction: run.load.latency_correction,
        errors: run.error_count(),
        non_2xx: run.non_2xx(),
        unfinished: run.unfinished,
        stream: run.stream.clone(),
    };
    Run {
        file: 0,
        index,
        address_family: family(run.target.as_deref()),
        key,
        repetition,
        program: Program::Imported,
        passed: !run.failed,
        reasons: run.failure.clone(),
        arknet_passed: !run.failed,
        roundtrips_per_second: run.responses_per_second,
        // Both ways, as echomark's own figure is: the body out and its echo back.
        payload_mib_per_second: match (run.responses_per_second, payload) {
            (Some(rate), Some(bytes)) => Some(rate * 2.0 * bytes as f64 / 1_048_576.0),
            _ => None,
        },
        rtt_p50_us: percentile(50.0),
        rtt_p95_us: percentile(95.0),
        rtt_p99_us: percentile(99.0),
        rtt_p999_us: percentile(99.9),
        peak_rss_bytes: None,
        cpu_seconds: None,
        cpu_percent: None,
        cpu_estimated: false,
        messages: run.responses,
        messages_sent: None,
        messages_received: run.responses,
        server_messages_received: None,
        content_errors: 0,
        order_errors: 0,
        udp_lost_messages: 0,
        udp_late_messages: None,
        kernel_udp_rcvbuf_errors_delta: None,
        kernel_readings: None,
        udp_server_receive_buffer_bytes: None,
        udp_server_receive_buffer_requested_bytes: None,
        udp_send_buffer_requested_bytes: None,
        command: run.command.unwrap_or_default(),
        open_loop: None,
        instruments: crate::model::RunInstruments::default(),
        imported: Some(Box::new(figures)),
    }
}
