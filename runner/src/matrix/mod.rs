//! `echomark-runner matrix`: every case × repetition in a fresh process, one raw archive.
//!
//! The archive is rewritten atomically after every run, so a crash or `kill -9` at any
//! moment leaves a valid archive (`complete: false`) that holds every finished run, and
//! `--resume` finishes it without repeating one. Ctrl-C (SIGINT) or SIGTERM kill the running
//! child, save the archive and exit 130 or 143.

mod archives;
pub mod child;
mod error;
mod external;
pub mod host;
pub mod identity;
pub mod plan;
pub mod progress;
pub mod provenance;
pub mod server;
pub mod store;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use echomark_archive::{Archive, Entry, Preset, Protocol, SoakReport};

use crate::case::Backend;
use plan::{MatrixSpec, Overrides, PlannedRun};

pub use error::MatrixError;

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
    /// `--udp-batch`: datagrams per system call on every UDP run's sockets.
    pub udp_batch: Option<u64>,
    pub soak: Option<f64>,
    /// `--server-cmd`: measure these external servers instead of echomark's own, each into
    /// its own archive, their runs interleaved.
    pub external_servers: Vec<echomark_archive::ExternalServer>,
    /// `--client-cpus`: where every run's client runtime threads are pinned.
    pub client_cpus: Option<crate::placement::CpuList>,
    /// `--server-cpus`: where every external server process is pinned before it starts.
    pub server_cpus: Option<crate::placement::CpuList>,
}

/// Everything `matrix` is asked to do.
#[derive(Debug, Clone)]
pub struct MatrixRequest {
    pub archive: ArchiveTarget,
    pub preset: Option<Preset>,
    pub overrides: Overrides,
    pub options: RunOptions,
    /// The backends to measure, each into its own archive (default: tokio).
    pub backends: Vec<Backend>,
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

use echomark_archive::CASE_TIMEOUT_MARGIN_SECONDS as TIMEOUT_MARGIN_SECONDS;

/// One archive a matrix writes: one per backend, or one per external server.
struct Target {
    path: PathBuf,
    archive: Archive,
    /// The runtime that measures it (the client's, against an external server).
    backend: Backend,
    /// Held until the matrix ends, and by every child it starts for this archive.
    lock: store::ArchiveLock,
}

impl Target {
    fn save(&self) -> Result<(), MatrixError> {
        store::write_atomically(&self.path, &self.archive)
            .map_err(|e| MatrixError::system(format!("cannot write {}", self.path.display()), e))
    }
}

impl MatrixRequest {
    /// What a new matrix of this request would write, archive by archive, without measuring:
    /// each archive's `backend` and `settings` (provenance, host and results aside). A
    /// published reproduction command is checked against its dataset with this.
    pub fn planned_archives(
        &self,
    ) -> Result<Vec<(String, echomark_archive::Settings)>, MatrixError> {
        let settings = archives::settings_of(self);
        match self.options.external_servers.as_slice() {
            [] => self
                .backends
                .iter()
                .map(|&b| archives::settings_for_backend(&settings, b))
                .collect(),
            servers => servers
                .iter()
                .map(|s| archives::settings_for_server(&settings, s))
                .collect(),
        }
    }

    /// The names of the archives a new matrix writes: its external servers', else its
    /// backends'.
    pub fn archive_names(&self) -> Vec<String> {
        if self.options.external_servers.is_empty() {
            self.backends.iter().map(|b| b.name().to_string()).collect()
        } else {
            let servers = &self.options.external_servers;
            servers.iter().map(|s| s.name.clone()).collect()
        }
    }
}

/// The archive files a request names: `--out FILE` for one backend or server, `--out DIR`
/// (one `NAME.json` each) for several; `--resume` a file, or a folder whose archives are
/// resumed together.
fn target_paths(request: &MatrixRequest) -> Result<Vec<PathBuf>, MatrixError> {
    let names = request.archive_names();
    match &request.archive {
        ArchiveTarget::New(path) if names.len() > 1 => {
            if path.exists() && !path.is_dir() {
                return Err(MatrixError::Refused(format!(
                    "{}: with several backends or servers, --out names a folder (one archive each)",
                    path.display()
                )));
            }
            Ok(names
                .iter()
                .map(|name| path.join(format!("{name}.json")))
                .collect())
        }
        ArchiveTarget::New(path) => Ok(vec![path.clone()]),
        ArchiveTarget::Resume(dir) if dir.is_dir() => {
            let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
                .map_err(|e| MatrixError::system(dir.display().to_string(), e))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect();
            paths.sort();
            if paths.is_empty() {
                return Err(MatrixError::Refused(format!(
                    "{}: no archive to resume",
                    dir.display()
                )));
            }
            Ok(paths)
        }
        ArchiveTarget::Resume(path) => Ok(vec![path.clone()]),
    }
}

/// Runs the matrix described by `request`.
pub fn run(request: &MatrixRequest) -> Result<MatrixOutcome, MatrixError> {
    let exe =
        std::env::current_exe().map_err(|e| MatrixError::system("cannot locate own binary", e))?;
    let source_dir = request
        .source_dir
        .clone()
        .unwrap_or_else(provenance::default_source_dir);
    // Hashing the binary and the sources takes a moment; it is done after the cheap checks.
    let hashes = || -> Result<(String, String), MatrixError> {
        let exe_sha = provenance::file_sha256(&exe)
            .map_err(|e| MatrixError::system(format!("cannot hash {}", exe.display()), e))?;
        let source_sha = provenance::source_sha256(&source_dir).map_err(|e| {
            MatrixError::Refused(format!(
                "cannot hash the measured sources in {} ({e}); pass --source-dir WORKSPACE",
                source_dir.display()
            ))
        })?;
        Ok((exe_sha, source_sha))
    };

    let paths = target_paths(request)?;
    if let ArchiveTarget::New(out) = &request.archive {
        if request.archive_names().len() > 1 && !out.exists() {
            std::fs::create_dir(out)
                .map_err(|e| MatrixError::system(format!("cannot create {}", out.display()), e))?;
        }
    }
    let mut locks = Vec::with_capacity(paths.len());
    for path in &paths {
        let lock = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(dir) if !dir.is_dir() => {
                return Err(MatrixError::Refused(format!(
                    "{}: no such folder",
                    dir.display()
                )))
            }
            _ => store::ArchiveLock::take(path).map_err(MatrixError::Locked)?,
        };
        locks.push(lock);
    }
    // The sources and the binary are hashed once, however many archives there are.
    let mut hashed: Option<(String, String)> = None;
    let mut hashes_once = || -> Result<(String, String), MatrixError> {
        if let Some(h) = &hashed {
            return Ok(h.clone());
        }
        Ok(hashed.insert(hashes()?).clone())
    };
    // A new matrix: every archive is the same but for its backend, so it is made once.
    let template = match &request.archive {
        ArchiveTarget::New(_) => {
            if let Some(path) = paths.iter().find(|p| p.exists()) {
                return Err(MatrixError::Refused(format!(
                    "{} already exists; finish it with --resume {0} or choose another --out",
                    path.display()
                )));
            }
            let (exe_sha, source_sha) = hashes_once()?;
            Some(archives::new_archive(
                request,
                (&exe_sha, &source_sha),
                (&source_dir, &paths[0]),
            ))
        }
        ArchiveTarget::Resume(_) => None,
    };
    let mut targets: Vec<Target> = Vec::with_capacity(paths.len());
    for ((path, lock), index) in paths.into_iter().zip(locks).zip(0..) {
        let archive = match &template {
            Some(template) => {
                let archive = match request.options.external_servers.get(index) {
                    Some(server) => {
                        // What the server is, found once, before anything is measured.
                        let identity =
                            identity::identify(&server.command, server.version_command.as_deref());
                        let server = echomark_archive::ExternalServer {
                            identity: Some(identity),
                            ..server.clone()
                        };
                        archives::for_server(template, &server)?
                    }
                    None => archives::for_backend(template, request.backends[index])?,
                };
                archives::check_plan(&path, &archive)?;
                archive
            }
            None => archives::resume(&path, &mut hashes_once)?,
        };
        let backend = archives::runtime_of(&archive).ok_or_else(|| {
            MatrixError::Refused(format!(
                "{}: backend {:?} is not one this runner has",
                path.display(),
                archive.backend
            ))
        })?;
        if let Some(first) = targets.first() {
            if first.archive.settings.shared_matrix() != archive.settings.shared_matrix() {
                return Err(MatrixError::Refused(format!(
                    "{} and {}: archives resumed together must have the same settings",
                    first.path.display(),
                    path.display()
                )));
            }
        }
        targets.push(Target {
            path,
            archive,
            backend,
            lock,
        });
    }
    if targets.iter().any(|t| t.backend == Backend::Monoio) {
        crate::measure::shards::probe()?;
    }
    let first = &targets[0];
    let settings = first.archive.settings.clone();
    let spec = MatrixSpec::from_settings(&settings).map_err(|source| MatrixError::Settings {
        what: format!("{}: settings", first.path.display()),
        source,
    })?;
    // Every case known before anything runs is checked first, so a bad matrix fails once
    // with exit 2, not once per run.
    let placeholder: std::net::SocketAddr = match settings.address_family {
        echomark_archive::AddressFamily::Ipv4 => "127.0.0.1:9",
        echomark_archive::AddressFamily::Ipv6 => "[::1]:9",
    }
    .parse()
    .expect("an address");
    for t in &targets {
        for run in plan::planned(&t.archive.settings, &t.archive.results, t.backend) {
            let label = label(&run, &t.archive.backend);
            let case = spec
                .case(&run, &settings)
                .map_err(MatrixError::case(&label))?;
            if let Some(server) = &t.archive.settings.external_server {
                external::against(case, server, placeholder, true)
                    .map_err(MatrixError::case(&label))?;
            }
        }
        let done: BTreeSet<_> = t.archive.results.iter().map(Entry::run_id).collect();
        if done.len() != t.archive.results.len() {
            return Err(MatrixError::Refused(format!(
                "{}: a (case, repetition) appears twice in results",
                t.path.display()
            )));
        }
        t.save()?;
    }
    if targets
        .iter()
        .any(|t| t.archive.settings.external_server.is_some())
    {
        // A daemon a server forks comes back here when its parent dies, to be killed.
        server::adopt_orphans();
    }
    for target in targets.iter_mut() {
        if let Some(server) = target.archive.settings.external_server.clone() {
            external::verify_first(target, &server, &settings.protocols)?;
        }
    }
    let signal = install_signal_flags()?;
    let soaks_due: usize = targets
        .iter()
        .map(|t| match settings.soak_seconds {
            Some(_) if t.archive.soak.is_empty() => settings.protocols.len(),
            _ => 0,
        })
        .sum();
    let failed_before = targets.iter().map(|t| t.archive.failed_measurements).sum();
    let mut progress = progress::Progress::new(soaks_due as u64, failed_before);
    let timeout = Duration::try_from_secs_f64(settings.case_timeout_seconds)
        .map_err(|e| MatrixError::Refused(format!("settings.case_timeout_seconds: {e}")))?;
    let keep_going = settings.keep_going;
    // Every archive of one matrix shares its settings, so its servers share one list.
    let server_cpus = server::pinned_cpus(&settings)?;
    let mut stopped_early = false;
    // Stages: the plan as known now; a rate sweep's open-loop runs join it once their
    // closed-loop runs are in the archive, so a second stage runs them. Several backends'
    // runs are shuffled together, so that no backend always runs first.
    'stages: loop {
        let mut runs: Vec<PlannedRun> = targets
            .iter()
            .enumerate()
            .flat_map(|(i, t)| {
                plan::planned(&t.archive.settings, &t.archive.results, t.backend)
                    .into_iter()
                    .map(move |r| PlannedRun { target: i, ..r })
            })
            .collect();
        if let Some(seed) = settings.shuffle_seed {
            plan::shuffle(&mut runs, seed);
        }
        let done: BTreeSet<_> = targets
            .iter()
            .flat_map(|t| t.archive.results.iter().map(Entry::run_id))
            .collect();
        let todo: Vec<PlannedRun> = runs
            .into_iter()
            .filter(|r| !done.contains(&r.key_as(&targets[r.target].archive.backend)))
            .collect();
        if todo.is_empty() {
            break;
        }
        progress.add_planned(todo.len() as u64);
        for run in todo {
            let target = &mut targets[run.target];
            let order = target.archive.results.len();
            let label = label(&run, &target.archive.backend);
            progress.starting(&label);
            let case = spec
                .case(&run, &settings)
                .map_err(MatrixError::case(&label))?;
            let started_at_utc = provenance::utc_now();
            let lock_fd = Some(target.lock.fd());
            // An external server starts fresh for every run, as echomark's own does.
            let external = target.archive.settings.external_server.clone();
            let server = match &external {
                Some(s) => Some((
                    s,
                    server::start(s, run.protocol, server_cpus.as_ref())
                        .map_err(|e| MatrixError::system("cannot start the server", e))?,
                )),
                None => None,
            };
            let case_args = match &server {
                Some((s, started)) => {
                    let pipelines = external::pipelines(&target.archive.verification, run.protocol);
                    external::against(case, s, started.address, pipelines)
                        .map_err(MatrixError::case(&label))?
                        .to_args()
                }
                None => case.to_args(),
            };
            let ready = server
                .as_ref()
                .is_none_or(|(_, s)| s.ready_seconds.is_some());
            let outcome = if ready {
                match child::run(&exe, &case_args, timeout, &signal.flag, lock_fd) {
                    Ok(Ok(outcome)) => Some(outcome),
                    Ok(Err(child::Interrupted)) => {
                        return Ok(interrupted(&targets, &progress, &signal))
                    }
                    Err(e) => {
                        return Err(MatrixError::system(
                            format!("cannot start {}", exe.display()),
                            e,
                        ))
                    }
                }
            } else {
                None
            };
            let server = server.map(|(_, started)| started.stop());
            if let Some(n) = server.as_ref().map(|p| p.left_behind).filter(|&n| n > 0) {
                eprintln!("{label}: the server left {n} process(es) behind; they were killed");
            }
            if signal.flag.load(Ordering::Relaxed) {
                return Ok(interrupted(&targets, &progress, &signal));
            }
            let mut judged = match &outcome {
                Some(outcome) => child::judge(
                    &run,
                    &target.archive.backend,
                    spec.seconds,
                    spec.warmup,
                    spec.address_family,
                    outcome,
                ),
                None => child::Judged {
                    metrics: None,
                    stdout: None,
                    error: None,
                },
            };
            // The server's own failure is the cause when there is one.
            if let Some(reason) = server
                .as_ref()
                .and_then(|p| server::failure(p, outcome.is_some()))
            {
                judged.error = Some(reason);
            }
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
            let archive = &mut target.archive;
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
                // No child ran when the server never got ready.
                returncode: outcome.as_ref().map(|o| o.returncode),
                wall_seconds: outcome.as_ref().map_or(0.0, |o| o.wall.as_secs_f64()),
                stderr: outcome.map(|o| o.stderr).unwrap_or_default(),
                metrics: judged.metrics,
                stdout: judged.stdout,
                error: judged.error,
                order: order as u64,
                started_at_utc,
                server,
            });
            archive.failed_measurements += u64::from(failed);
            target.save()?;
            progress.finished(&label, failed, &summary);
            if failed && !keep_going {
                stopped_early = true;
                break 'stages;
            }
        }
    }
    if !stopped_early {
        for index in 0..targets.len() {
            let Some(seconds) = settings
                .soak_seconds
                .filter(|_| targets[index].archive.soak.is_empty())
            else {
                continue;
            };
            for protocol in settings.protocols.clone() {
                let target = &targets[index];
                let name = format!("soak {} {protocol} {seconds} s", target.backend);
                progress.starting(&name);
                let record = soak_child(
                    &exe,
                    (target.backend, protocol),
                    seconds,
                    settings.address_family,
                    (&signal.flag, target.lock.fd()),
                )?;
                let Some(record) = record else {
                    return Ok(interrupted(&targets, &progress, &signal));
                };
                let summary = if record.passed { "passed" } else { "FAILED" };
                progress.finished(&name, !record.passed, summary);
                targets[index].archive.soak.push(record);
                targets[index].save()?;
            }
        }
        for target in &mut targets {
            target.archive.complete = true;
            target.save()?;
        }
    }
    let failed: u64 = targets.iter().map(|t| t.archive.failed_measurements).sum();
    let complete = targets.iter().all(|t| t.archive.complete);
    let written: Vec<String> = targets
        .iter()
        .map(|t| format!("{}: {} runs", t.path.display(), t.archive.results.len()))
        .collect();
    progress.finish(&format!(
        "{}, {failed} failed{}",
        written.join("; "),
        if complete {
            ""
        } else {
            ", stopped at the first failure (complete: false)"
        }
    ));
    Ok(MatrixOutcome::Finished {
        failed_runs: failed,
        soak_failed: targets
            .iter()
            .any(|t| t.archive.soak.iter().any(|s| !s.passed)),
    })
}

/// Runs `echomark-runner soak` as a child and records it; `None` when interrupted.
fn soak_child(
    exe: &Path,
    (backend, protocol): (Backend, Protocol),
    seconds: f64,
    address_family: echomark_archive::AddressFamily,
    (interrupted, lock_fd): (&AtomicBool, i32),
) -> Result<Option<echomark_archive::SoakRecord>, MatrixError> {
    let args: Vec<String> = [
        "soak",
        "--backend",
        backend.name(),
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
        Err(e) => {
            return Err(MatrixError::system(
                format!("cannot start {}", exe.display()),
                e,
            ))
        }
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
    targets: &[Target],
    progress: &progress::Progress,
    signal: &SignalFlag,
) -> MatrixOutcome {
    // The archives on disk already hold every finished run; say so and leave them.
    let sig = signal.which.load(Ordering::Relaxed);
    let held: Vec<String> = targets
        .iter()
        .map(|t| {
            format!(
                "{} holds {} finished runs",
                t.path.display(),
                t.archive.results.len()
            )
        })
        .collect();
    let resume = match targets {
        [one] => one.path.display().to_string(),
        _ => targets[0]
            .path
            .parent()
            .map_or_else(|| ".".into(), |p| p.display().to_string()),
    };
    progress.finish(&format!(
        "interrupted: {} (complete: false); finish with --resume {resume}",
        held.join("; ")
    ));
    MatrixOutcome::Interrupted { signal: sig }
}

struct SignalFlag {
    flag: Arc<AtomicBool>,
    which: Arc<AtomicI32>,
}

fn install_signal_flags() -> Result<SignalFlag, MatrixError> {
    let flag = Arc::new(AtomicBool::new(false));
    let which = Arc::new(AtomicI32::new(0));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let (f, w) = (flag.clone(), which.clone());
        // SAFETY: the handler only stores to atomics, which is async-signal-safe.
        let registered = unsafe {
            signal_hook::low_level::register(sig, move || {
                w.store(sig, Ordering::Relaxed);
                f.store(true, Ordering::Relaxed);
            })
        };
        // Without the handler, Ctrl-C would kill the matrix before it saves the archive.
        registered.map_err(|e| MatrixError::system(format!("cannot handle signal {sig}"), e))?;
    }
    Ok(SignalFlag { flag, which })
}

/// A run as the progress lines name it: the archive's backend (an external server's name)
/// and the case.
fn label(run: &PlannedRun, backend: &str) -> String {
    format!(
        "{} {} {} B {}×{} {} {} work {} rep {}",
        backend,
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
