//! arknet's archives (schema 1 and 2, the loopback and the coroutine program), read into the
//! normalised model. The shapes are lenient where a schema or program may omit a field and
//! strict in type everywhere (counters are non-negative integers, a present `null` counter
//! is an error, protocols and IO models must be known names). The file is parsed straight
//! into these structs, never into a `serde_json::Value` tree; fields nobody reads (raw
//! stdout, reservoir details) are skipped without being stored.

use std::path::Path;

use echomark_archive::{AddressFamily, CaseKey, CaseParameters, IoModel, Protocol};
use serde::{Deserialize, Deserializer};

use super::{check_file, file_record, EntryFacts, FileRead};
use crate::measurement::{present_u64, Measurement};
use crate::model::{ArchiveFile, Format, HostInfo, Program};

/// Deserializes an array of strings into one space-separated string.
fn joined<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    struct Join;
    impl<'de> serde::de::Visitor<'de> for Join {
        type Value = String;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an array of strings")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<String, A::Error> {
            let mut out = String::new();
            while let Some(part) = seq.next_element::<std::borrow::Cow<'de, str>>()? {
                if !out.is_empty() {
                    out.push(' ');
                }
                out.push_str(&part);
            }
            Ok(out)
        }
    }
    d.deserialize_seq(Join)
}

/// One arknet archive file.
#[derive(Debug, Deserialize)]
pub struct ArknetArchive {
    pub schema_version: u32,
    #[serde(default)]
    pub recorded_at_utc: Option<String>,
    #[serde(default)]
    pub backend: Option<String>,
    #[serde(default)]
    pub git_head: Option<String>,
    #[serde(default)]
    pub git_status: Option<String>,
    #[serde(default)]
    pub source_sha256: Option<String>,
    #[serde(default)]
    pub executable_sha256: Option<String>,
    #[serde(default)]
    pub runner_sha256: Option<String>,
    #[serde(default)]
    pub host: Option<ArknetHost>,
    pub settings: ArknetSettings,
    pub results: Vec<ArknetEntry>,
    #[serde(default)]
    pub complete: Option<bool>,
    #[serde(default, deserialize_with = "present_u64")]
    pub failed_measurements: Option<u64>,
}

/// arknet's host description (arknet-archives.md §3.1); macOS adds the optional fields.
#[derive(Debug, Default, Deserialize)]
pub struct ArknetHost {
    #[serde(default)]
    pub system: Option<String>,
    #[serde(default)]
    pub release: Option<String>,
    #[serde(default)]
    pub machine: Option<String>,
    #[serde(default)]
    pub processor: Option<String>,
    #[serde(default, deserialize_with = "present_u64")]
    pub logical_cpus: Option<u64>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub cpu: Option<String>,
    #[serde(default, deserialize_with = "present_u64")]
    pub physical_cpus: Option<u64>,
    #[serde(default, deserialize_with = "present_u64")]
    pub memory_bytes: Option<u64>,
    #[serde(default)]
    pub os_version: Option<String>,
    #[serde(default)]
    pub os_build: Option<String>,
}

/// The requested matrix, as far as the pages need it.
#[derive(Debug, Deserialize)]
pub struct ArknetSettings {
    pub seconds: f64,
    pub warmup: f64,
    pub repetitions: u64,
    #[serde(default)]
    pub protocols: Option<Vec<Protocol>>,
    #[serde(default)]
    pub address_family: Option<AddressFamily>,
}

/// One `results[i]` entry.
#[derive(Debug, Deserialize)]
pub struct ArknetEntry {
    pub repetition: u64,
    pub protocol: Protocol,
    pub payload_bytes: u64,
    pub clients: u64,
    pub window: u64,
    pub io_model: IoModel,
    pub io_threads: u64,
    pub handler_work: u64,
    #[serde(default)]
    pub backend: Option<String>,
    #[serde(default)]
    pub execution: Option<String>,
    #[serde(default)]
    pub address_family: Option<AddressFamily>,
    /// The argv, joined with spaces (one allocation instead of one per argument).
    #[serde(default, deserialize_with = "joined")]
    pub command: String,
    #[serde(default)]
    pub returncode: Option<i64>,
    #[serde(default)]
    pub metrics: Option<Measurement>,
    #[serde(default)]
    pub error: Option<String>,
}

impl From<ArknetHost> for HostInfo {
    fn from(h: ArknetHost) -> Self {
        HostInfo {
            cpu: h.cpu,
            cpu_governor: None,
            cpu_signature: None,
            logical_cpus: h.logical_cpus,
            machine: h.machine,
            memory_bytes: h.memory_bytes,
            model: h.model,
            os_build: h.os_build,
            os_name: None,
            os_version: h.os_version,
            physical_cpus: h.physical_cpus,
            processor: h.processor,
            release: h.release,
            smt_active: None,
            name: None,
            system: h.system,
        }
    }
}

/// Normalises one parsed arknet file.
pub fn normalise(out: &mut FileRead, path: &Path, raw: ArknetArchive) {
    let Some(format) = format_of(out, path, raw.schema_version) else {
        return;
    };
    let settings_family = raw.settings.address_family.unwrap_or(AddressFamily::Ipv4);
    let failed_measurements = match format {
        Format::ArknetSchema2 => Some(raw.failed_measurements),
        _ => None,
    };
    let with_error = raw.results.iter().filter(|e| e.error.is_some()).count() as u64;
    let file = ArchiveFile {
        backend: raw.backend.clone(),
        recorded_at_utc: raw.recorded_at_utc,
        git_head: raw.git_head,
        source_sha256: raw.source_sha256,
        executable_sha256: raw.executable_sha256,
        runner_sha256: raw.runner_sha256,
        host: raw.host.map(HostInfo::from).unwrap_or_default(),
        seconds: raw.settings.seconds,
        warmup: raw.settings.warmup,
        repetitions: raw.settings.repetitions,
        address_family: settings_family,
        complete: raw.complete.unwrap_or(false),
        runs: raw.results.len(),
        protocols: raw.settings.protocols.unwrap_or_default(),
        ..file_record(path, format, raw.git_status.as_deref())
    };
    check_file(out, &file, failed_measurements, with_error);
    for (index, mut entry) in raw.results.into_iter().enumerate() {
        let Some(backend) = backend_of(&entry, raw.backend.as_deref()) else {
            out.problem(
                path,
                format!("results[{index}]"),
                "no backend in the entry, the file or the metrics",
            );
            continue;
        };
        let command = std::mem::take(&mut entry.command);
        let facts = entry_facts(index, &entry, &backend, settings_family, command);
        out.add_run(&file, facts, entry.metrics.as_ref());
    }
    out.finish(file);
}

/// The format of a file of `schema_version`; a problem and `None` for a version arknet
/// never wrote.
fn format_of(out: &mut FileRead, path: &Path, schema_version: u32) -> Option<Format> {
    match schema_version {
        1 => Some(Format::ArknetSchema1),
        2 => Some(Format::ArknetSchema2),
        v => {
            out.problem(
                path,
                "schema_version",
                format!("unknown schema_version {v} (expected 1 or 2)"),
            );
            None
        }
    }
}

/// The backend an entry ran: its own, else the file's, else its metrics'.
fn backend_of(entry: &ArknetEntry, file_backend: Option<&str>) -> Option<String> {
    entry
        .backend
        .clone()
        .or_else(|| file_backend.map(str::to_string))
        .or_else(|| entry.metrics.as_ref().and_then(|m| m.backend.clone()))
}

/// What the one rule needs of entry `index`, run on `backend`, whose argv is `command`;
/// its address family is the settings' (`settings_family`) where neither it nor its
/// metrics name one.
fn entry_facts<'a>(
    index: usize,
    entry: &'a ArknetEntry,
    backend: &str,
    settings_family: AddressFamily,
    command: String,
) -> EntryFacts<'a> {
    let metrics = entry.metrics.as_ref();
    let program = match metrics {
        Some(m) if m.implementation.is_some() || m.latency_mode.is_some() => {
            Program::ArknetCoroutine
        }
        _ => Program::ArknetLoopback,
    };
    let address_family = metrics
        .and_then(|m| m.address_family)
        .or(entry.address_family)
        .unwrap_or(settings_family);
    let key = case_key(entry, backend);
    // arknet's metrics echo seconds as printed numbers; they are not compared here.
    let requested_backend = entry
        .backend
        .as_deref()
        .map(echomark_archive::Backend::named);
    let request = CaseParameters::requested(&key, requested_backend, entry.address_family, None);
    EntryFacts {
        index,
        key,
        repetition: entry.repetition,
        program,
        address_family,
        returncode: entry.returncode,
        runner_error: entry.error.as_deref(),
        request,
        command,
        instruments: crate::model::RunInstruments::default(),
    }
}

/// The case `entry` measured on `backend`; its implementation is its metrics', else named
/// by its execution, else arknet's callback program.
fn case_key(entry: &ArknetEntry, backend: &str) -> CaseKey {
    let implementation = entry
        .metrics
        .as_ref()
        .and_then(|m| m.implementation.clone())
        .or_else(|| match entry.execution.as_deref() {
            Some("callback") => Some("asio-callback".to_string()),
            Some("coroutine") => Some("asio-coroutine".to_string()),
            _ => None,
        })
        .unwrap_or_else(|| "arknet-callback".to_string());
    CaseKey {
        backend: echomark_archive::Backend::named(backend),
        implementation,
        protocol: entry.protocol,
        payload_bytes: entry.payload_bytes,
        clients: entry.clients,
        window: entry.window,
        io_model: entry.io_model,
        io_threads: entry.io_threads,
        handler_work: entry.handler_work,
        udp_server_recv_buffer: None,
        load: None,
        quic_transport: None,
        generators: None,
    }
}
