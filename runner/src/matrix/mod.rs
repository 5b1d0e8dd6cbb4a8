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
mod fleet;
pub mod host;
pub mod identity;
mod open;
pub mod plan;
pub mod progress;
pub mod provenance;
mod runs;
pub mod server;
pub mod store;
mod until;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use echomark_archive::{Archive, Preset, Protocol, SoakReport};

use crate::case::Backend;
use plan::{MatrixSpec, Overrides, PlannedRun};

pub use error::{MatrixError, Refusal};

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
    /// `--udp-gso`: those batches segmented and coalesced by the kernel too.
    pub udp_gso: bool,
    /// `--count-syscalls`: every run counts its process's system calls.
    pub count_syscalls: bool,
    pub soak: Option<f64>,
    /// `--server-cmd`: measure these external servers instead of echomark's own, each into
    /// its own archive, their runs interleaved.
    pub external_servers: Vec<echomark_archive::ExternalServer>,
    /// `--client-cpus`: where every run's client runtime threads are pinned.
    pub client_cpus: Option<crate::placement::CpuList>,
    /// `--server-cpus`: where every external server process is pinned before it starts.
    pub server_cpus: Option<crate::placement::CpuList>,
    /// `--until-decided`: add repetitions to the undecided comparisons.
    pub until_decided: Option<UntilDecidedOptions>,
    /// `--host-name`: the name pages give this machine.
    pub host_name: Option<String>,
    /// `--fleet-size`: a fleet of generator hosts measures every run.
    pub fleet: Option<echomark_archive::FleetPlan>,
    /// `--fleet-wait`: how long to wait for the fleet to gather.
    pub fleet_wait: Option<Duration>,
}

/// `--until-decided` and its bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UntilDecidedOptions {
    pub max_repetitions: u64,
    pub budget_seconds: Option<f64>,
    /// The throughput margin, as a share.
    pub margin: f64,
    /// The confidence level over all looks, as a share.
    pub level: f64,
}

/// A `--budget` or `--margin` that is not one.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DurationError {
    #[error("{0:?} is not a duration: give seconds, or a number with s, m or h (90s, 20m, 2h), above 0 and at most 7 days")]
    Duration(String),
    #[error("{0:?} is not a percentage above 0 and below 100")]
    Percent(String),
}

/// A duration in seconds from `90s`, `20m`, `2h` or plain seconds: above 0, at most 7 days.
pub fn parse_duration(text: &str) -> Result<f64, DurationError> {
    let t = text.trim();
    let (number, unit) = match t.char_indices().last() {
        Some((i, 's')) => (&t[..i], 1.0),
        Some((i, 'm')) => (&t[..i], 60.0),
        Some((i, 'h')) => (&t[..i], 3600.0),
        _ => (t, 1.0),
    };
    number
        .trim()
        .parse::<f64>()
        .ok()
        .map(|v| v * unit)
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= echomark_archive::limits::MAX_RUN_SECONDS)
        .ok_or_else(|| DurationError::Duration(text.to_string()))
}

/// A percentage above 0 and below 100.
pub fn parse_percent(text: &str) -> Result<f64, DurationError> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|p| p.is_finite() && *p > 0.0 && *p < 100.0)
        .ok_or_else(|| DurationError::Percent(text.to_string()))
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
    /// `--pause-after`: measure at most this many runs in this invocation.
    pub pause_after: Option<u64>,
}

/// How a matrix ended (a usage problem is a [`MatrixError`] instead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatrixOutcome {
    /// Every planned run is recorded (or the first failure stopped it without
    /// `--keep-going`).
    Finished { failed_runs: u64, soak_failed: bool },
    /// SIGINT or SIGTERM: the running child was killed and the archive saved.
    Interrupted { signal: i32 },
    /// `--pause-after`: this many runs were measured and saved; `--resume` goes on.
    Paused { runs: u64 },
}

impl MatrixOutcome {
    /// The exit code of a matrix that ended so: 0 when every run is recorded and none
    /// failed (or it paused as asked), 1 with failed runs, 128 + the signal that stopped it.
    pub fn exit_code(self) -> u8 {
        use crate::exit_codes;
        match self {
            MatrixOutcome::Finished {
                failed_runs: 0,
                soak_failed: false,
            }
            | MatrixOutcome::Paused { .. } => exit_codes::OK,
            MatrixOutcome::Finished { .. } => exit_codes::FAILED,
            MatrixOutcome::Interrupted { signal } if signal == signal_hook::consts::SIGTERM => {
                exit_codes::SIGTERM
            }
            MatrixOutcome::Interrupted { .. } => exit_codes::SIGINT,
        }
    }
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
                .map(|b| archives::settings_for_backend(&settings, b.clone()))
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
            self.backends
                .iter()
                .map(|b| b.as_str().to_string())
                .collect()
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
                return Err(Refusal::OutNotAFolder { path: path.clone() }.into());
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
                return Err(Refusal::NoArchiveToResume { dir: dir.clone() }.into());
            }
            Ok(paths)
        }
        ArchiveTarget::Resume(path) => Ok(vec![path.clone()]),
    }
}

/// Runs the matrix described by `request`: opens its archives, checks every case, verifies
/// external servers, then measures each run and the soaks, saving after each.
pub fn run(request: &MatrixRequest) -> Result<MatrixOutcome, MatrixError> {
    let exe =
        std::env::current_exe().map_err(|e| MatrixError::system("cannot locate own binary", e))?;
    if !request.options.external_servers.is_empty() {
        // Before the servers are identified: a version probe's daemon comes back here too.
        server::adopt_orphans();
    }
    let mut targets = open::targets(request, &exe)?;
    if targets.iter().any(|t| t.backend == Backend::Monoio) {
        crate::measure::shards::probe()?;
    }
    let first = &targets[0];
    let settings = first.archive.settings.clone();
    let spec = MatrixSpec::from_settings(&settings).map_err(|source| MatrixError::Settings {
        what: format!("{}: settings", first.path.display()),
        source,
    })?;
    runs::check_cases(&targets, &spec, &settings)?;
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
    let fleet = fleet::gather(
        settings.fleet.as_ref(),
        crate::fleet::FleetTiming {
            warmup: spec.warmup,
            seconds: spec.seconds,
        },
        request.options.fleet_wait.unwrap_or(fleet::DEFAULT_WAIT),
    )?;
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
    let session = runs::Session {
        exe: &exe,
        timeout: Duration::try_from_secs_f64(settings.case_timeout_seconds)
            .map_err(Refusal::CaseTimeout)?,
        server_cpus: server::pinned_cpus(&settings)?,
        spec,
        settings,
        signal: &signal,
        pause_after: request.pause_after,
        fleet,
    };
    match session.stages(&mut targets, &mut progress)? {
        runs::Flow::Interrupted => return Ok(interrupted(&targets, &progress, &signal)),
        runs::Flow::Paused(runs) => {
            progress.finish(&format!(
                "paused after {runs} runs (complete: false); go on with --resume {}",
                resume_path(&targets)
            ));
            return Ok(MatrixOutcome::Paused { runs });
        }
        runs::Flow::Done {
            stopped_early: true,
        } => {}
        runs::Flow::Done {
            stopped_early: false,
        } => {
            if let runs::Flow::Interrupted = session.soaks(&mut targets, &mut progress)? {
                return Ok(interrupted(&targets, &progress, &signal));
            }
            for target in &mut targets {
                target.archive.complete = true;
                target.save()?;
            }
        }
    }
    Ok(finished(&targets, &progress))
}

/// The last progress line and the outcome, once every run that will run has.
fn finished(targets: &[Target], progress: &progress::Progress) -> MatrixOutcome {
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
    MatrixOutcome::Finished {
        failed_runs: failed,
        soak_failed: targets
            .iter()
            .any(|t| t.archive.soak.iter().any(|s| !s.passed)),
    }
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
        backend.as_str(),
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
    progress.finish(&format!(
        "interrupted: {} (complete: false); finish with --resume {}",
        held.join("; "),
        resume_path(targets)
    ));
    MatrixOutcome::Interrupted { signal: sig }
}

/// What `--resume` takes to go on with these archives: the file, or their folder.
fn resume_path(targets: &[Target]) -> String {
    match targets {
        [one] => one.path.display().to_string(),
        _ => targets[0]
            .path
            .parent()
            .map_or_else(|| ".".into(), |p| p.display().to_string()),
    }
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
    let fleet = match run.case().generators {
        Some(1) => " by 1 generator".to_string(),
        Some(n) => format!(" by {n} generators"),
        None => String::new(),
    };
    format!(
        "{} {} {} B {}×{}{fleet} {} {} work {} rep {}",
        backend,
        run.case().protocol,
        run.case().payload_bytes,
        run.case().clients,
        run.case().window,
        run.case().io_model,
        run.case().io_threads,
        run.case().handler_work,
        run.repetition()
    )
}
