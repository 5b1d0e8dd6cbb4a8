//! `echomark-runner matrix`: every case × repetition in a fresh process, one raw archive.
//!
//! The archive is rewritten atomically after every run, so a crash or `kill -9` at any
//! moment leaves a valid archive (`complete: false`) that holds every finished run, and
//! `--resume` finishes it without repeating one. Ctrl-C (SIGINT) or SIGTERM kill the running
//! child, save the archive and exit 130 or 143.

pub mod child;
pub mod host;
pub mod plan;
pub mod progress;
pub mod provenance;
pub mod store;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use echomark_archive::{
    Archive, EchomarkInfo, Entry, Preset, Protocol, SoakReport, ARCHIVE_SCHEMA_VERSION,
    FORMAT_VERSION, TOOL_NAME,
};

use crate::case::DEFAULT_UDP_TIMEOUT_MS;
use crate::measure::report::BACKEND;
use plan::{MatrixSpec, Overrides, PlannedRun, SettingsExtra};

/// A problem that stops the matrix before (or instead of) measuring: exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct MatrixError(pub String);

/// Which archive a matrix writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArchiveTarget {
    /// A new archive at this path (which must not exist).
    New(PathBuf),
    /// Finish this interrupted archive with its own settings.
    Resume(PathBuf),
}

/// Run options recorded in the archive's settings beside the matrix itself.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub keep_going: bool,
    pub shuffle: Option<u64>,
    pub shard: Option<echomark_archive::Shard>,
    pub case_timeout: Option<f64>,
    pub udp_send_buffer: Option<u64>,
    pub udp_recv_buffer: Option<u64>,
    pub udp_server_recv_buffer: Option<u64>,
    pub udp_timeout_ms: Option<u64>,
    pub soak: Option<f64>,
}

/// Everything `matrix` is asked to do.
#[derive(Debug, Clone)]
pub struct MatrixRequest {
    pub archive: ArchiveTarget,
    pub preset: Option<Preset>,
    pub overrides: Overrides,
    pub options: RunOptions,
    /// Workspace whose sources `source_sha256` covers (default: the one this binary was
    /// built from).
    pub source_dir: Option<PathBuf>,
}

/// How a matrix ended (a usage problem is a [`MatrixError`] instead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatrixOutcome {
    /// Every planned run is recorded (or the first failure stopped it without
    /// `--keep-going`).
    Finished { failed_runs: u64, soak_failed: bool },
    /// SIGINT or SIGTERM: the running child was killed and the archive saved.
    Interrupted { signal: i32 },
}

/// Default margin of the per-run timeout beyond seconds + warmup: setup, two drains and
/// the client barrier fit well inside it.
const TIMEOUT_MARGIN_SECONDS: f64 = 30.0;

/// Runs the matrix described by `request`.
pub fn run(request: &MatrixRequest) -> Result<MatrixOutcome, MatrixError> {
    let exe = std::env::current_exe()
        .map_err(|e| MatrixError(format!("cannot locate own binary: {e}")))?;
    let source_dir = request
        .source_dir
        .clone()
        .unwrap_or_else(provenance::default_source_dir);
    // Hashing the binary and the sources takes a moment; it is done after the cheap checks.
    let hashes = || -> Result<(String, String), MatrixError> {
        let exe_sha = provenance::file_sha256(&exe)
            .map_err(|e| MatrixError(format!("cannot hash {}: {e}", exe.display())))?;
        let source_sha = provenance::source_sha256(&source_dir).map_err(|e| {
            MatrixError(format!(
                "cannot hash the measured sources in {} ({e}); pass --source-dir WORKSPACE",
                source_dir.display()
            ))
        })?;
        Ok((exe_sha, source_sha))
    };

    let target = match &request.archive {
        ArchiveTarget::Resume(path) | ArchiveTarget::New(path) => path,
    };
    // Held until the matrix ends, and by every child it starts.
    let lock = match target.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) if !dir.is_dir() => {
            return Err(MatrixError(format!("{}: no such folder", dir.display())))
        }
        _ => store::ArchiveLock::take(target).map_err(|e| MatrixError(e.to_string()))?,
    };
    let (path, mut archive) = match &request.archive {
        ArchiveTarget::Resume(path) => (path.clone(), resume(path, hashes)?),
        ArchiveTarget::New(path) => {
            if path.exists() {
                return Err(MatrixError(format!(
                    "{} already exists; finish it with --resume {0} or choose another --out",
                    path.display()
                )));
            }
            let (exe_sha, source_sha) = hashes()?;
            let archive = new_archive(request, &exe_sha, &source_sha, &source_dir)?;
            check_plan(path, &archive)?;
            (path.clone(), archive)
        }
    };
    let spec = MatrixSpec::from_settings(&archive.settings)
        .map_err(|e| MatrixError(format!("{}: settings: {e}", path.display())))?;
    // Every case known before anything runs is checked first, so a bad matrix fails once
    // with exit 2, not once per run.
    for run in plan::planned(&archive.settings, &archive.results) {
        spec.case(&run, &archive.settings)
            .map_err(|e| MatrixError(format!("case {}: {e}", label(&run))))?;
    }
    let done: BTreeSet<_> = archive.results.iter().map(Entry::run_id).collect();
    if done.len() != archive.results.len() {
        return Err(MatrixError(format!(
            "{}: a (case, repetition) appears twice in results",
            path.display()
        )));
    }

    store::write_atomically(&path, &archive)
        .map_err(|e| MatrixError(format!("cannot write {}: {e}", path.display())))?;
    let signal = install_signal_flags();
    let soaks_due = match archive.settings.soak_seconds {
        Some(_) if archive.soak.is_empty() => archive.settings.protocols.len(),
        _ => 0,
    };
    let mut progress = progress::Progress::new(soaks_due as u64, archive.failed_measurements);
    let timeout = Duration::try_from_secs_f64(archive.settings.case_timeout_seconds)
        .map_err(|e| MatrixError(format!("settings.case_timeout_seconds: {e}")))?;
    let keep_going = archive.settings.keep_going;
    let mut stopped_early = false;
    // Stages: the plan as known now; a rate sweep's open-loop runs join it once their
    // closed-loop runs are in the archive, so a second stage runs them.
    'stages: loop {
        let mut runs = plan::planned(&archive.settings, &archive.results);
        if let Some(seed) = archive.settings.shuffle_seed {
            plan::shuffle(&mut runs, seed);
        }
        let done: BTreeSet<_> = archive.results.iter().map(Entry::run_id).collect();
        let todo: Vec<PlannedRun> = runs
            .into_iter()
            .filter(|r| !done.contains(&r.key()))
            .collect();
        if todo.is_empty() {
            break;
        }
        progress.add_planned(todo.len() as u64);
        for run in todo {
            let order = archive.results.len();
            let label = label(&run);
            progress.starting(&label);
            let case_args = spec
                .case(&run, &archive.settings)
                .map_err(|e| MatrixError(format!("case {label}: {e}")))?
                .to_args();
            let started_at_utc = provenance::utc_now();
            let outcome = match child::run(&exe, &case_args, timeout, &signal.flag, Some(lock.fd()))
            {
                Ok(Ok(outcome)) => outcome,
                Ok(Err(child::Interrupted)) => {
                    return Ok(interrupted(&path, &archive, &progress, &signal))
                }
                Err(e) => return Err(MatrixError(format!("cannot start {}: {e}", exe.display()))),
            };
            if signal.flag.load(Ordering::Relaxed) {
                return Ok(interrupted(&path, &archive, &progress, &signal));
            }
            let judged = child::judge(
                &run,
                spec.seconds,
                spec.warmup,
                spec.address_family,
                &outcome,
            );
            let summary = match (&judged.error, &judged.metrics) {
                (Some(e), _) => e.clone(),
                (None, Some(m)) => match &m.open_loop {
                    Some(o) => format!(
                        "{} msg/s offered, {:.0} sent/s{}, corrected p99 {:.1} µs, lag p99 {:.1} µs",
                        o.offered_rate,
                        o.achieved_rate,
                        if o.saturated { " (saturated)" } else { "" },
                        m.rtt_p99_us,
                        o.schedule_lag_p99_us
                    ),
                    None => format!(
                        "{:.0} rt/s, p99 {:.1} µs",
                        m.roundtrips_per_second, m.rtt_p99_us
                    ),
                },
                (None, None) => String::new(),
            };
            let failed = judged.error.is_some();
            let mut command = vec![exe.display().to_string()];
            command.extend(case_args);
            archive.results.push(Entry {
                repetition: run.repetition,
                protocol: run.protocol,
                payload_bytes: run.payload,
                clients: run.clients,
                window: run.window,
                io_model: run.io_model,
                io_threads: run.io_threads,
                handler_work: run.handler_work,
                udp_server_recv_buffer: run.udp_server_recv_buffer,
                load: run.load,
                backend: archive.backend.clone(),
                address_family: archive.settings.address_family,
                command,
                returncode: Some(outcome.returncode),
                stderr: outcome.stderr,
                metrics: judged.metrics,
                stdout: judged.stdout,
                error: judged.error,
                order: order as u64,
                started_at_utc,
                wall_seconds: outcome.wall.as_secs_f64(),
            });
            archive.failed_measurements += u64::from(failed);
            store::write_atomically(&path, &archive)
                .map_err(|e| MatrixError(format!("cannot write {}: {e}", path.display())))?;
            progress.finished(&label, failed, &summary);
            if failed && !keep_going {
                stopped_early = true;
                break 'stages;
            }
        }
    }
    if !stopped_early {
        if let Some(seconds) = archive
            .settings
            .soak_seconds
            .filter(|_| archive.soak.is_empty())
        {
            for protocol in archive.settings.protocols.clone() {
                progress.starting(&format!("soak {protocol} {seconds} s"));
                let record = soak_child(
                    &exe,
                    protocol,
                    seconds,
                    archive.settings.address_family,
                    (&signal.flag, lock.fd()),
                )?;
                let Some(record) = record else {
                    return Ok(interrupted(&path, &archive, &progress, &signal));
                };
                let summary = if record.passed {
                    "passed".to_string()
                } else {
                    "FAILED".to_string()
                };
                progress.finished(
                    &format!("soak {protocol} {seconds} s"),
                    !record.passed,
                    &summary,
                );
                archive.soak.push(record);
                store::write_atomically(&path, &archive)
                    .map_err(|e| MatrixError(format!("cannot write {}: {e}", path.display())))?;
            }
        }
        archive.complete = true;
        store::write_atomically(&path, &archive)
            .map_err(|e| MatrixError(format!("cannot write {}: {e}", path.display())))?;
    }
    let failed = archive.failed_measurements;
    progress.finish(&format!(
        "{}: {} runs, {failed} failed{}",
        path.display(),
        archive.results.len(),
        if archive.complete {
            ""
        } else {
            ", stopped at the first failure (complete: false)"
        }
    ));
    Ok(MatrixOutcome::Finished {
        failed_runs: failed,
        soak_failed: archive.soak.iter().any(|s| !s.passed),
    })
}

/// Runs `echomark-runner soak` as a child and records it; `None` when interrupted.
fn soak_child(
    exe: &Path,
    protocol: Protocol,
    seconds: f64,
    address_family: echomark_archive::AddressFamily,
    (interrupted, lock_fd): (&AtomicBool, i32),
) -> Result<Option<echomark_archive::SoakRecord>, MatrixError> {
    let args: Vec<String> = [
        "soak",
        "--protocol",
        protocol.as_str(),
        "--address-family",
        address_family.as_str(),
        "--seconds",
        &seconds.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // The settings were checked: `seconds` is finite and at most an hour.
    let timeout = Duration::from_secs_f64(seconds * 2.0 + TIMEOUT_MARGIN_SECONDS * 3.0);
    let outcome = match child::run(exe, &args, timeout, interrupted, Some(lock_fd)) {
        Ok(Ok(o)) => o,
        Ok(Err(child::Interrupted)) => return Ok(None),
        Err(e) => return Err(MatrixError(format!("cannot start {}: {e}", exe.display()))),
    };
    let report: Option<SoakReport> = serde_json::from_str(outcome.stdout.trim()).ok();
    let passed = outcome.returncode == 0 && report.as_ref().is_some_and(|r| r.passed);
    let mut command = vec![exe.display().to_string()];
    command.extend(args);
    Ok(Some(echomark_archive::SoakRecord {
        protocol,
        seconds,
        command,
        returncode: Some(outcome.returncode),
        passed,
        report,
        stderr: outcome.stderr,
    }))
}

fn interrupted(
    path: &Path,
    archive: &Archive,
    progress: &progress::Progress,
    signal: &SignalFlag,
) -> MatrixOutcome {
    // The archive on disk already holds every finished run; say so and leave it.
    let sig = signal.which.load(Ordering::Relaxed);
    progress.finish(&format!(
        "interrupted: {} holds {} finished runs (complete: false); finish it with --resume {}",
        path.display(),
        archive.results.len(),
        path.display()
    ));
    MatrixOutcome::Interrupted { signal: sig }
}

struct SignalFlag {
    flag: Arc<AtomicBool>,
    which: Arc<AtomicI32>,
}

fn install_signal_flags() -> SignalFlag {
    let flag = Arc::new(AtomicBool::new(false));
    let which = Arc::new(AtomicI32::new(0));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let (f, w) = (flag.clone(), which.clone());
        // SAFETY: the handler only stores to atomics, which is async-signal-safe.
        let _ = unsafe {
            signal_hook::low_level::register(sig, move || {
                w.store(sig, Ordering::Relaxed);
                f.store(true, Ordering::Relaxed);
            })
        };
    }
    SignalFlag { flag, which }
}

fn new_archive(
    request: &MatrixRequest,
    exe_sha: &str,
    source_sha: &str,
    source_dir: &Path,
) -> Result<Archive, MatrixError> {
    let spec = MatrixSpec::preset(request.preset).apply(request.overrides.clone());
    let o = &request.options;
    let settings = spec.settings(SettingsExtra {
        preset: request.preset,
        shuffle_seed: o.shuffle,
        case_timeout_seconds: o
            .case_timeout
            .unwrap_or(spec.seconds + spec.warmup + TIMEOUT_MARGIN_SECONDS),
        udp_timeout_ms: o.udp_timeout_ms.unwrap_or(DEFAULT_UDP_TIMEOUT_MS),
        udp_send_buffer: o.udp_send_buffer,
        udp_recv_buffer: o.udp_recv_buffer,
        udp_server_recv_buffer: o.udp_server_recv_buffer,
        keep_going: o.keep_going,
        soak_seconds: o.soak,
        shard: o.shard,
    });
    if spec.runs(o.shard).is_empty() {
        return Err(MatrixError("the matrix has no cases".into()));
    }
    let out = match &request.archive {
        ArchiveTarget::Resume(p) | ArchiveTarget::New(p) => p,
    };
    let (git_head, git_status) = provenance::git_state(source_dir, out);
    Ok(Archive {
        schema_version: ARCHIVE_SCHEMA_VERSION,
        echomark: EchomarkInfo {
            tool: TOOL_NAME.to_string(),
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            format_version: FORMAT_VERSION,
            source_hash_rule: provenance::SOURCE_HASH_RULE.to_string(),
        },
        recorded_at_utc: provenance::utc_now(),
        backend: BACKEND.to_string(),
        git_head,
        git_status,
        source_sha256: source_sha.to_string(),
        executable_sha256: exe_sha.to_string(),
        runner_sha256: exe_sha.to_string(),
        host: host::describe(),
        settings,
        results: Vec::new(),
        complete: false,
        failed_measurements: 0,
        soak: Vec::new(),
        toolchain: Some(host::toolchain()),
    })
}

/// The settings must be runnable and every result one of their planned runs.
fn check_plan(path: &Path, archive: &Archive) -> Result<(), MatrixError> {
    plan::check_settings(&archive.settings)
        .map_err(|e| MatrixError(format!("{}: {e}", path.display())))?;
    let planned: BTreeSet<_> = archive
        .settings
        .planned_runs(BACKEND, &archive.results)
        .into_iter()
        .collect();
    match archive
        .results
        .iter()
        .enumerate()
        .find(|(_, e)| !planned.contains(&e.run_id()))
    {
        None => Ok(()),
        Some((i, e)) => Err(MatrixError(format!(
            "{}: results[{i}]: {} {} B, {} × {}, {} {}, work {}, repetition {} is not a run the settings plan",
            path.display(),
            e.protocol,
            e.payload_bytes,
            e.clients,
            e.window,
            e.io_model,
            e.io_threads,
            e.handler_work,
            e.repetition
        ))),
    }
}

fn resume(
    path: &Path,
    hashes: impl FnOnce() -> Result<(String, String), MatrixError>,
) -> Result<Archive, MatrixError> {
    let archive = store::read(path).map_err(|e| MatrixError(e.to_string()))?;
    if archive.echomark.tool != TOOL_NAME || archive.echomark.format_version != FORMAT_VERSION {
        return Err(MatrixError(format!(
            "{}: written by {} format {}, not {TOOL_NAME} format {FORMAT_VERSION}",
            path.display(),
            archive.echomark.tool,
            archive.echomark.format_version
        )));
    }
    if archive.complete {
        return Err(MatrixError(format!(
            "{}: already complete; nothing to resume",
            path.display()
        )));
    }
    check_plan(path, &archive)?;
    let (exe_sha, source_sha) = hashes()?;
    if archive.executable_sha256 != exe_sha || archive.source_sha256 != source_sha {
        return Err(MatrixError(format!(
            "{}: measured with another build (executable or source hash differs); \
             one archive holds one build, so start a new archive",
            path.display()
        )));
    }
    // Fields an older archive did not record are not compared.
    let mut here = host::describe();
    let recorded = &archive.host;
    if recorded.cpu_signature.is_none() {
        here.cpu_signature = None;
    }
    if recorded.smt_active.is_none() {
        here.smt_active = None;
    }
    if recorded.cpu_governor.is_none() {
        here.cpu_governor = None;
    }
    if archive.host != here {
        return Err(MatrixError(format!(
            "{}: measured on another host",
            path.display()
        )));
    }
    let failed = archive.results.iter().filter(|e| e.error.is_some()).count() as u64;
    if failed != archive.failed_measurements {
        return Err(MatrixError(format!(
            "{}: failed_measurements is {} but {failed} entries carry an error",
            path.display(),
            archive.failed_measurements
        )));
    }
    Ok(archive)
}

fn label(run: &PlannedRun) -> String {
    format!(
        "{} {} B {}×{} {} {} work {} rep {}",
        run.protocol,
        run.payload,
        run.clients,
        run.window,
        run.io_model,
        run.io_threads,
        run.handler_work,
        run.repetition
    )
}
