//! The archives a matrix writes: a new one made from the request (once, then named per
//! backend), or an interrupted one read back and checked for `--resume`.

use std::collections::BTreeSet;
use std::path::Path;

use echomark_archive::{Archive, EchomarkInfo, ARCHIVE_SCHEMA_VERSION, FORMAT_VERSION, TOOL_NAME};

use super::plan::{self, MatrixSpec, SettingsExtra};
use super::TIMEOUT_MARGIN_SECONDS;
use super::{host, provenance, store, MatrixError, MatrixRequest, Refusal};
use crate::case::{Backend, DEFAULT_UDP_TIMEOUT_MS};

/// The settings a new matrix of `request` records, before any backend or server is set
/// ([`for_backend`], [`for_server`] do): the preset, the flags, and the defaults of what
/// was not given.
pub(super) fn settings_of(request: &MatrixRequest) -> echomark_archive::Settings {
    let spec = MatrixSpec::preset(request.preset).apply(request.overrides.clone());
    let o = &request.options;
    let mut settings = spec.settings(SettingsExtra {
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
    // Set per archive by `for_server`.
    settings.external_server = o.external_servers.first().cloned();
    settings.client_cpus = o.client_cpus.as_ref().map(ToString::to_string);
    settings.server_cpus = o.server_cpus.as_ref().map(ToString::to_string);
    settings.udp_batch = o.udp_batch;
    settings.udp_gso = o.udp_gso;
    settings.count_syscalls = o.count_syscalls;
    settings.fleet = o.fleet.clone();
    settings.until_decided =
        o.until_decided
            .map(|u| echomark_archive::until_decided::UntilDecided {
                level: u.level,
                margin: u.margin,
                looks: echomark_archive::until_decided::looks(
                    spec.repetitions,
                    u.max_repetitions.max(spec.repetitions),
                ),
                budget_seconds: u.budget_seconds,
            });
    settings
}

/// A new archive of `request`'s matrix with no backend yet ([`for_backend`] sets it).
pub(super) fn new_archive(
    request: &MatrixRequest,
    (exe_sha, source_sha): (&str, &str),
    (source_dir, out): (&Path, &Path),
) -> Archive {
    let settings = settings_of(request);
    let (git_head, git_status) = provenance::git_state(source_dir, out);
    Archive {
        schema_version: ARCHIVE_SCHEMA_VERSION,
        echomark: EchomarkInfo {
            tool: TOOL_NAME.to_string(),
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            format_version: FORMAT_VERSION,
            source_hash_rule: provenance::SOURCE_HASH_RULE.to_string(),
        },
        recorded_at_utc: provenance::utc_now(),
        backend: echomark_archive::Backend::Named(String::new()),
        git_head,
        git_status,
        source_sha256: source_sha.to_string(),
        executable_sha256: exe_sha.to_string(),
        runner_sha256: exe_sha.to_string(),
        host: echomark_archive::Host {
            name: request.options.host_name.clone(),
            ..host::describe()
        },
        settings,
        results: Vec::new(),
        complete: false,
        failed_measurements: 0,
        soak: Vec::new(),
        toolchain: Some(host::toolchain()),
        verification: Vec::new(),
        until_decided: request.options.until_decided.map(|_| {
            echomark_archive::until_decided::UntilDecidedRecord {
                spent_seconds: 0.0,
                budget_spent: false,
                comparisons: Vec::new(),
            }
        }),
    }
}

/// The `backend` an archive records: the external server's name, else the runtime's.
pub(super) fn archive_backend(settings: &echomark_archive::Settings, runtime: Backend) -> String {
    match &settings.external_server {
        Some(server) => server.name.clone(),
        None => runtime.as_str().to_string(),
    }
}

/// The runtime that measures an archive's runs: the client's (tokio) against an external
/// server, else the one its `backend` names.
pub(super) fn runtime_of(archive: &Archive) -> Option<Backend> {
    match archive.settings.external_server {
        Some(_) => Some(Backend::Tokio),
        None => archive
            .backend
            .is_runtime()
            .then(|| archive.backend.clone()),
    }
}

/// `settings` as the archive of `backend` records them (the IO profiles it cannot run),
/// with the name that archive's `backend` carries.
pub(super) fn settings_for_backend(
    settings: &echomark_archive::Settings,
    backend: Backend,
) -> Result<(String, echomark_archive::Settings), MatrixError> {
    let mut settings = settings.clone();
    settings.unsupported_io_profiles = settings.unsupported_for(backend.as_str());
    if settings.planned_runs(backend.as_str(), &[]).is_empty() {
        return Err(Refusal::NoCasesFor { backend }.into());
    }
    Ok((archive_backend(&settings, backend), settings))
}

/// `settings` as the archive of the external server `server` records them: its name is the
/// backend (the client runs on tokio).
pub(super) fn settings_for_server(
    settings: &echomark_archive::Settings,
    server: &echomark_archive::ExternalServer,
) -> Result<(String, echomark_archive::Settings), MatrixError> {
    let mut settings = settings.clone();
    settings.external_server = Some(server.clone());
    settings_for_backend(&settings, Backend::Tokio)
}

/// `template`'s archive for `backend`: its name, and the IO profiles it cannot run.
pub(super) fn for_backend(template: &Archive, backend: Backend) -> Result<Archive, MatrixError> {
    let (name, settings) = settings_for_backend(&template.settings, backend)?;
    Ok(Archive {
        backend: echomark_archive::Backend::named(&name),
        settings,
        ..template.clone()
    })
}

/// `template`'s archive for the external server `server`: its name as the backend (the
/// client runs on tokio).
pub(super) fn for_server(
    template: &Archive,
    server: &echomark_archive::ExternalServer,
) -> Result<Archive, MatrixError> {
    let (name, settings) = settings_for_server(&template.settings, server)?;
    Ok(Archive {
        backend: echomark_archive::Backend::named(&name),
        settings,
        ..template.clone()
    })
}

/// The settings must be runnable and every result one of their planned runs.
pub(super) fn check_plan(path: &Path, archive: &Archive) -> Result<(), MatrixError> {
    plan::check_settings(&archive.settings).map_err(|source| MatrixError::Settings {
        what: path.display().to_string(),
        source,
    })?;
    if archive.settings.unsupported_io_profiles
        != archive.settings.unsupported_for(archive.backend.as_str())
    {
        return Err(Refusal::UnsupportedProfiles {
            path: path.to_path_buf(),
            backend: archive.backend.clone(),
        }
        .into());
    }
    let planned: BTreeSet<_> = archive
        .settings
        .planned_runs(archive.backend.as_str(), &archive.results)
        .into_iter()
        .collect();
    let settings = &archive.settings;
    match archive
        .results
        .iter()
        .enumerate()
        .find(|(_, e)| !echomark_archive::until_decided::within(settings, &planned, e.run_id()))
    {
        None => Ok(()),
        Some((index, e)) => Err(Refusal::UnplannedResult {
            path: path.to_path_buf(),
            index,
            run: Box::new(e.run_id().clone()),
        }
        .into()),
    }
}

pub(super) fn resume(
    path: &Path,
    hashes: impl FnOnce() -> Result<(String, String), MatrixError>,
) -> Result<Archive, MatrixError> {
    let archive = store::read(path)?;
    if archive.echomark.tool != TOOL_NAME || archive.echomark.format_version != FORMAT_VERSION {
        return Err(Refusal::OtherFormat {
            path: path.to_path_buf(),
            tool: archive.echomark.tool,
            format_version: archive.echomark.format_version,
        }
        .into());
    }
    if archive.complete {
        return Err(Refusal::AlreadyComplete {
            path: path.to_path_buf(),
        }
        .into());
    }
    check_plan(path, &archive)?;
    let (exe_sha, source_sha) = hashes()?;
    if archive.executable_sha256 != exe_sha || archive.source_sha256 != source_sha {
        return Err(Refusal::OtherBuild {
            path: path.to_path_buf(),
        }
        .into());
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
    // The name is the user's, not a fact of the machine: a resumed archive keeps its own.
    here.name.clone_from(&recorded.name);
    if archive.host != here {
        return Err(Refusal::OtherHost {
            path: path.to_path_buf(),
        }
        .into());
    }
    let failed = archive.results.iter().filter(|e| e.error.is_some()).count() as u64;
    if failed != archive.failed_measurements {
        return Err(Refusal::FailedCount {
            path: path.to_path_buf(),
            recorded: archive.failed_measurements,
            counted: failed,
        }
        .into());
    }
    if let Some(server) = archive
        .settings
        .external_server
        .as_ref()
        .filter(|s| s.address.is_none())
    {
        // The command comes from the file, which anyone who could write it chose: say what
        // will run before it does.
        eprintln!(
            "matrix --resume: {} starts its server with the command recorded in settings.external_server.command: {}",
            path.display(),
            server.command
        );
    }
    Ok(archive)
}
