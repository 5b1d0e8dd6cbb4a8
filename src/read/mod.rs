//! Reading: find the archives, parse each one (streaming, typed), normalise it into runs.
//!
//! A path may be a file or a folder. A folder that holds `*.json` files directly is one
//! dataset; a folder that holds only sub-folders (like `raw-results/`) holds one dataset per
//! sub-folder. A file on its own belongs to the dataset named after its folder.

pub mod raw;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Problem};
use crate::model::{ArchiveFile, ConfigKey, Dataset, Format, Program, Run};
use crate::validate::{self, rules};
use raw::RawArchive;

/// Dataset name → its archive files, sorted by path.
pub type Layout = BTreeMap<String, Vec<PathBuf>>;

fn json_files(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut files = Vec::new();
    let entries = fs::read_dir(dir).map_err(|e| Error::Io(format!("{}: {e}", dir.display())))?;
    for entry in entries {
        let path = entry
            .map_err(|e| Error::Io(format!("{}: {e}", dir.display())))?
            .path();
        if path.is_file() && path.extension().is_some_and(|x| x == "json") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

fn folder_name(dir: &Path) -> String {
    let canonical = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    canonical
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "dataset".to_string())
}

/// Finds the datasets under `paths`.
pub fn discover(paths: &[PathBuf]) -> Result<Layout, Error> {
    let mut layout = Layout::new();
    for path in paths {
        if path.is_file() {
            let dir = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            layout
                .entry(folder_name(dir))
                .or_default()
                .push(path.clone());
        } else if path.is_dir() {
            let direct = json_files(path)?;
            if !direct.is_empty() {
                layout.entry(folder_name(path)).or_default().extend(direct);
                continue;
            }
            let mut subdirs: Vec<PathBuf> = fs::read_dir(path)
                .map_err(|e| Error::Io(format!("{}: {e}", path.display())))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_dir())
                .collect();
            subdirs.sort();
            for sub in subdirs {
                let files = json_files(&sub)?;
                if !files.is_empty() {
                    layout.entry(folder_name(&sub)).or_default().extend(files);
                }
            }
        } else {
            return Err(Error::Io(format!(
                "{}: no such file or folder",
                path.display()
            )));
        }
    }
    for files in layout.values_mut() {
        files.sort();
        files.dedup();
    }
    if layout.is_empty() {
        let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(Error::Io(format!(
            "no archives (*.json) found in {}",
            shown.join(", ")
        )));
    }
    Ok(layout)
}

/// Parses one file strictly: the first error names the JSON path where parsing failed.
pub fn parse(path: &Path) -> Result<RawArchive, Problem> {
    let file = path.display().to_string();
    let bytes = fs::read(path).map_err(|e| Problem::new(&file, "", e.to_string()))?;
    parse_bytes(&file, &bytes)
}

/// Parses archive bytes named `file` (streaming into typed structs, no JSON tree). The fast
/// path parses without tracking paths; only a file that fails is parsed again to name the
/// JSON path of its first problem.
pub fn parse_bytes(file: &str, bytes: &[u8]) -> Result<RawArchive, Problem> {
    if let Ok(archive) = serde_json::from_slice::<RawArchive>(bytes) {
        return Ok(archive);
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let archive: RawArchive = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let message = if inner.is_eof() {
            format!("truncated: {inner}")
        } else {
            inner.to_string()
        };
        Problem::new(
            file,
            if path == "." { String::new() } else { path },
            message,
        )
    })?;
    de.end()
        .map_err(|e| Problem::new(file, "", format!("trailing data after the archive: {e}")))?;
    Ok(archive)
}

/// Reads and validates every dataset under `paths`. Malformed or inconsistent input is an
/// error listing every problem; failed runs are data and come back classified.
pub fn load(paths: &[PathBuf]) -> Result<Vec<Dataset>, Error> {
    let layout = discover(paths)?;
    let mut problems = Vec::new();
    let mut datasets = Vec::new();
    for (name, files) in layout {
        let mut dataset = Dataset {
            name,
            files: Vec::new(),
            runs: Vec::new(),
            warnings: Vec::new(),
        };
        for read in read_all(&files) {
            problems.extend(read.problems);
            dataset.warnings.extend(read.warnings);
            if let Some(file) = read.file {
                let index = dataset.files.len();
                dataset.files.push(file);
                dataset.runs.extend(read.runs.into_iter().map(|mut r| {
                    r.file = index;
                    r
                }));
            }
        }
        validate::check_dataset(&dataset, &mut problems);
        datasets.push(dataset);
    }
    if problems.is_empty() {
        Ok(datasets)
    } else {
        Err(Error::Invalid(problems))
    }
}

/// Reads files on all cores; the order of results matches `files`.
fn read_all(files: &[PathBuf]) -> Vec<FileRead> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(files.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut slots: Vec<Option<FileRead>> = (0..files.len()).map(|_| None).collect();
    let done = std::sync::Mutex::new(&mut slots);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(path) = files.get(i) else { break };
                let read = read_file(path);
                done.lock().expect("no reader panics")[i] = Some(read);
            });
        }
    });
    slots
        .into_iter()
        .map(|r| r.expect("every file read"))
        .collect()
}

/// One file, parsed and normalised on its own (so files can be read in parallel and each
/// raw archive is dropped as soon as its runs exist).
#[derive(Default)]
struct FileRead {
    file: Option<ArchiveFile>,
    runs: Vec<Run>,
    problems: Vec<Problem>,
    warnings: Vec<Problem>,
}

fn read_file(path: &Path) -> FileRead {
    let mut out = FileRead::default();
    match parse(path) {
        Ok(raw) => normalise(&mut out, path, raw),
        Err(p) => out.problems.push(p),
    }
    out
}

/// Turns one parsed file into runs, recording file-level problems (F1, F6, F8, E5).
fn normalise(out: &mut FileRead, path: &Path, raw: RawArchive) {
    let problems = &mut out.problems;
    let file = path.display().to_string();
    let format = match (&raw.echomark, raw.schema_version) {
        (Some(info), 2) => {
            if info.format_version != echomark_archive::FORMAT_VERSION {
                problems.push(Problem::new(
                    &file,
                    "echomark.format_version",
                    format!(
                        "unknown echomark format version {} (this build reads {})",
                        info.format_version,
                        echomark_archive::FORMAT_VERSION
                    ),
                ));
                return;
            }
            Format::Echomark
        }
        (None, 1) => Format::ArknetSchema1,
        (None, 2) => Format::ArknetSchema2,
        (_, v) => {
            problems.push(Problem::new(
                &file,
                "schema_version",
                format!("unknown schema_version {v} (expected 1 or 2)"),
            ));
            return;
        }
    };
    if raw.source_sha256.as_deref().is_none_or(str::is_empty) {
        problems.push(Problem::new(
            &file,
            "source_sha256",
            "missing: every archive must name its measured sources",
        ));
    }
    if matches!(format, Format::ArknetSchema2 | Format::Echomark) {
        let with_error = raw.results.iter().filter(|e| e.error.is_some()).count() as u64;
        match raw.failed_measurements {
            Some(n) if n == with_error => {}
            Some(n) => problems.push(Problem::new(
                &file,
                "failed_measurements",
                format!("says {n} but {with_error} entries carry an error"),
            )),
            None => problems.push(Problem::new(
                &file,
                "failed_measurements",
                "missing (required in schema 2)",
            )),
        }
    }
    let complete = raw.complete.unwrap_or(false);
    if !complete {
        out.warnings.push(Problem::new(
            &file,
            "complete",
            "the matrix did not finish (complete is not true)",
        ));
    }
    let settings_family = raw
        .settings
        .address_family
        .clone()
        .unwrap_or_else(|| "ipv4".to_string());
    let mut backends = BTreeSet::new();
    backends.extend(raw.backend.clone());
    let mut raw = raw;
    let results = std::mem::take(&mut raw.results);
    let total_runs = results.len();
    for (index, mut entry) in results.into_iter().enumerate() {
        let command = std::mem::take(&mut entry.command);
        let entry = &entry;
        let at = |field: &str| format!("results[{index}]{field}");
        let metrics = entry.metrics.as_ref();
        let Some(backend) = entry
            .backend
            .clone()
            .or_else(|| raw.backend.clone())
            .or_else(|| metrics.and_then(|m| m.backend.clone()))
        else {
            problems.push(Problem::new(
                &file,
                at(""),
                "no backend in the entry, the file or the metrics",
            ));
            continue;
        };
        backends.insert(backend.clone());
        if let Some(b) = metrics.and_then(|m| m.backend.clone()) {
            backends.insert(b);
        }
        if entry.repetition < 1 || entry.repetition > raw.settings.repetitions {
            problems.push(Problem::new(
                &file,
                at(".repetition"),
                format!(
                    "{} is outside 1..={}",
                    entry.repetition, raw.settings.repetitions
                ),
            ));
        }
        let program = match (format, metrics) {
            (Format::Echomark, _) => Program::Echomark,
            (_, Some(m)) if m.implementation.is_some() || m.latency_mode.is_some() => {
                Program::ArknetCoroutine
            }
            _ => Program::ArknetLoopback,
        };
        let implementation = match program {
            Program::Echomark => "echomark".to_string(),
            _ => metrics
                .and_then(|m| m.implementation.clone())
                .or_else(|| match entry.execution.as_deref() {
                    Some("callback") => Some("asio-callback".to_string()),
                    Some("coroutine") => Some("asio-coroutine".to_string()),
                    _ => None,
                })
                .unwrap_or_else(|| "arknet-callback".to_string()),
        };
        let verdict = rules::classify(entry, program);
        let (cpu_percent, cpu_estimated) = metrics.map_or((None, false), rules::cpu_percent);
        let address_family = metrics
            .and_then(|m| m.address_family.clone())
            .or_else(|| entry.address_family.clone())
            .unwrap_or_else(|| settings_family.clone());
        out.runs.push(Run {
            file: 0, // set when the file joins its dataset
            index,
            key: ConfigKey {
                backend,
                implementation,
                protocol: entry.protocol.clone(),
                payload_bytes: entry.payload_bytes,
                clients: entry.clients,
                window: entry.window,
                io_model: entry.io_model.clone(),
                io_threads: entry.io_threads,
                handler_work: entry.handler_work,
                udp_server_recv_buffer: entry.udp_server_recv_buffer,
            },
            repetition: entry.repetition,
            program,
            address_family,
            passed: verdict.passed,
            reasons: verdict.reasons,
            arknet_passed: verdict.arknet_passed,
            roundtrips_per_second: metrics.and_then(|m| m.roundtrips_per_second),
            payload_mib_per_second: metrics.and_then(|m| m.payload_mib_per_second),
            rtt_p50_us: metrics.and_then(|m| m.rtt_p50_us),
            rtt_p95_us: metrics.and_then(|m| m.rtt_p95_us),
            rtt_p99_us: metrics.and_then(|m| m.rtt_p99_us),
            rtt_p999_us: metrics.and_then(|m| m.rtt_p999_us),
            peak_rss_bytes: metrics.and_then(|m| m.peak_rss_bytes).map(|b| b as f64),
            cpu_seconds: metrics.and_then(|m| m.cpu_seconds.or(m.total_cpu_seconds)),
            cpu_percent,
            cpu_estimated,
            messages: metrics.and_then(|m| m.messages),
            messages_sent: metrics.and_then(|m| m.messages_sent),
            messages_received: metrics.and_then(|m| m.messages_received.or(m.messages)),
            server_messages_received: metrics.and_then(|m| m.server_messages_received),
            content_errors: metrics.and_then(|m| m.content_errors).unwrap_or(0),
            order_errors: metrics.and_then(|m| m.order_errors).unwrap_or(0),
            udp_lost_messages: metrics.and_then(|m| m.udp_lost_messages).unwrap_or(0),
            kernel_udp_rcvbuf_errors_delta: metrics.and_then(|m| m.kernel_udp_rcvbuf_errors_delta),
            udp_server_receive_buffer_bytes: metrics
                .and_then(|m| m.udp_server_receive_buffer_bytes),
            udp_server_receive_buffer_requested_bytes: metrics
                .and_then(|m| m.udp_server_receive_buffer_requested_bytes),
            udp_send_buffer_requested_bytes: metrics
                .and_then(|m| m.udp_send_buffer_requested_bytes),
            command,
        });
    }
    if backends.len() > 1 {
        let list: Vec<_> = backends.iter().cloned().collect();
        problems.push(Problem::new(
            &file,
            "backend",
            format!("one file holds one backend, found {}", list.join(", ")),
        ));
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    out.file = Some(ArchiveFile {
        path: path.to_path_buf(),
        name,
        format,
        backend: backends.into_iter().next(),
        recorded_at_utc: raw.recorded_at_utc,
        git_head: raw.git_head,
        dirty: raw
            .git_status
            .as_deref()
            .is_some_and(|s| !s.trim().is_empty()),
        source_sha256: raw.source_sha256,
        executable_sha256: raw.executable_sha256,
        runner_sha256: raw.runner_sha256,
        host: raw.host.unwrap_or_default(),
        seconds: raw.settings.seconds,
        warmup: raw.settings.warmup,
        repetitions: raw.settings.repetitions,
        address_family: settings_family,
        complete,
        runs: total_runs,
        shuffle_seed: raw.settings.shuffle_seed,
        preset: raw.settings.preset,
        protocols: raw.settings.protocols.clone().unwrap_or_default(),
        keep_going: raw.settings.keep_going.unwrap_or(false),
        soak_seconds: raw.settings.soak_seconds,
        udp_timeout_ms: raw.settings.udp_timeout_ms,
        soak: raw
            .soak
            .iter()
            .map(|s| {
                let report = s.report.as_ref();
                let rounds = report
                    .and_then(|r| r.get("rounds"))
                    .and_then(|r| r.as_array());
                crate::model::SoakResult {
                    protocol: s.protocol.clone(),
                    seconds: s.seconds,
                    passed: s.passed,
                    verified_echoes: report
                        .and_then(|r| r.get("verified_echoes"))
                        .and_then(|v| v.as_u64())
                        .unwrap_or(0),
                    rounds: rounds.map_or(0, |r| r.len() as u64),
                    failure: rounds.and_then(|r| {
                        r.iter()
                            .flat_map(|round| {
                                round
                                    .get("failures")
                                    .and_then(|f| f.as_array())
                                    .cloned()
                                    .unwrap_or_default()
                            })
                            .find_map(|f| f.as_str().map(str::to_string))
                    }),
                }
            })
            .collect(),
    });
}
