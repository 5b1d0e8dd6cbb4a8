//! echomark's own archives, read with the contract's types (`echomark-archive`) and
//! normalised into the model: the reader and the runner cannot disagree about a field.

use std::path::Path;

use std::collections::BTreeSet;

use echomark_archive::cpus::CpuList;
use echomark_archive::{Archive, CaseParameters, Entry, Host, RequestedTiming, RunId};

use super::{check_file, file_record, EntryFacts, FileRead};
use crate::measurement::Measurement;
use crate::model::{ArchiveFile, Format, HostInfo, Program, Reach, SoakResult};

impl From<Host> for HostInfo {
    fn from(h: Host) -> Self {
        HostInfo {
            cpu: Some(h.cpu),
            cpu_governor: h.cpu_governor,
            cpu_signature: h.cpu_signature,
            logical_cpus: Some(h.logical_cpus),
            machine: Some(h.machine),
            memory_bytes: h.memory_bytes,
            model: None,
            name: h.name,
            os_build: None,
            os_name: h.os_name,
            os_version: h.os_version,
            physical_cpus: h.physical_cpus,
            processor: None,
            release: Some(h.release),
            smt_active: h.smt_active,
            system: Some(h.system),
        }
    }
}

/// Every result must be a planned run, and `complete: true` must mean that every planned run
/// is there.
fn check_plan(
    out: &mut FileRead,
    file: &ArchiveFile,
    (settings, planned): (&echomark_archive::Settings, &[RunId]),
    results: &[Entry],
) {
    let planned_set: BTreeSet<RunId> = planned.iter().cloned().collect();
    let present: BTreeSet<&RunId> = results.iter().map(Entry::run_id).collect();
    for (index, entry) in results.iter().enumerate() {
        // Measured until decided: later repetitions of a planned configuration belong too.
        if !echomark_archive::until_decided::within(settings, &planned_set, entry.run_id()) {
            out.problem(
                &file.path,
                format!("results[{index}]"),
                format!("{} is not a run the settings plan", entry.run_id()),
            );
        }
    }
    if file.complete {
        let missing = planned.iter().filter(|r| !present.contains(*r)).count();
        if missing > 0 {
            out.problem(
                &file.path,
                "complete",
                format!(
                    "is true, but {missing} of the {} planned runs are missing",
                    planned.len()
                ),
            );
        }
    }
}

/// An archive of an external server names it as its backend, and holds runs only of
/// protocols the server passed verification for; an archive of echomark's own server has
/// neither verification nor server processes.
fn check_external(
    out: &mut FileRead,
    file: &ArchiveFile,
    (settings, backend): (&echomark_archive::Settings, &str),
    verification: &[echomark_archive::VerificationRecord],
    results: &[Entry],
) {
    let Some(server) = &settings.external_server else {
        if !verification.is_empty() {
            out.problem(
                &file.path,
                "verification",
                "is present, but settings.external_server names no external server".to_string(),
            );
        }
        if let Some(index) = results.iter().position(|e| e.server.is_some()) {
            out.problem(
                &file.path,
                format!("results[{index}].server"),
                "is present, but settings.external_server names no external server".to_string(),
            );
        }
        return;
    };
    if server.name != backend {
        out.problem(
            &file.path,
            "backend",
            format!(
                "is {backend:?}, but the external server is named {:?}",
                server.name
            ),
        );
    }
    let protocols: BTreeSet<echomark_archive::Protocol> =
        results.iter().map(|e| e.case_key().protocol).collect();
    for protocol in protocols {
        if !verification
            .iter()
            .any(|v| v.protocol == protocol && v.passed)
        {
            out.problem(
                &file.path,
                "verification",
                format!(
                    "has no passed verification for {protocol}, yet {protocol} runs were measured against {:?}",
                    server.name
                ),
            );
        }
    }
    // A server found not to pipeline must not have been measured with pipelined requests.
    for (index, entry) in results.iter().enumerate() {
        let refused = verification
            .iter()
            .any(|v| v.protocol == entry.case_key().protocol && !v.pipelines());
        let pipelined = target_of(entry).and_then(|t| t.http_pipelined);
        if refused && pipelined == Some(true) {
            out.problem(
                &file.path,
                format!("results[{index}].metrics.target.http_pipelined"),
                format!(
                    "is true, but the verification found that {:?} does not answer pipelined {} requests",
                    server.name, entry.case_key().protocol
                ),
            );
        }
    }
}

/// The target a run measured, if it measured one.
fn target_of(e: &Entry) -> Option<&echomark_archive::TargetInfo> {
    e.metrics.as_ref()?.target.as_ref()
}

/// How the runs of an archive reached their external server, if they recorded a path.
/// Every latency histogram decodes within its bounds and belongs to its run (the same count
/// and p99): what `compare` pools must be what `validate` accepted.
fn check_histograms(out: &mut FileRead, file: &ArchiveFile, results: &[Entry]) {
    for (index, entry) in results.iter().enumerate() {
        let Some(metrics) = &entry.metrics else {
            continue;
        };
        let Some(text) = &metrics.rtt_histogram else {
            continue;
        };
        let verdict = echomark_archive::histogram::decode(text).and_then(|h| {
            echomark_archive::histogram::check_against(
                &h,
                metrics.rtt_observations,
                metrics.rtt_p99_us,
            )
        });
        if let Err(why) = verdict {
            out.problem(
                &file.path,
                format!("results[{index}].metrics.rtt_histogram"),
                why.to_string(),
            );
        }
    }
}

fn reach(settings: &echomark_archive::Settings, results: &[Entry]) -> Option<Reach> {
    let path = results.iter().find_map(|e| target_of(e)?.path.clone())?;
    let namespaces: Vec<bool> = results
        .iter()
        .filter_map(|e| e.server.as_ref()?.separate_network_namespace)
        .collect();
    let server_machine = settings
        .external_server
        .as_ref()
        .and_then(|s| s.machine.clone())
        .or_else(|| {
            results
                .iter()
                .find_map(|e| target_of(e)?.server_machine.clone())
        })
        .map(HostInfo::from);
    Some(Reach {
        path,
        separate_namespace: (!namespaces.is_empty()).then(|| namespaces.iter().all(|&s| s)),
        server_machine,
    })
}

/// Every run of one archive must have reached its server the same way: a path that
/// changed in the middle of a matrix means the setup changed under it.
fn check_paths(out: &mut FileRead, file: &ArchiveFile, results: &[Entry]) {
    let Some(first) = &file.reach else {
        return;
    };
    for (index, entry) in results.iter().enumerate() {
        let path = target_of(entry).and_then(|t| t.path.as_ref());
        if let Some(p) =
            path.filter(|p| (p.kind, &p.interface) != (first.path.kind, &first.path.interface))
        {
            out.problem(
                &file.path,
                format!("results[{index}].metrics.target.path"),
                format!(
                    "is {} over {}, but an earlier run went {} over {}: one archive, one path",
                    p.kind.as_str(),
                    p.interface,
                    first.path.kind.as_str(),
                    first.path.interface
                ),
            );
        }
    }
}

/// Normalises one parsed echomark archive.
pub fn normalise(out: &mut FileRead, path: &Path, archive: Archive) {
    let Archive {
        recorded_at_utc,
        backend,
        git_head,
        git_status,
        source_sha256,
        executable_sha256,
        runner_sha256,
        host,
        settings,
        results,
        complete,
        failed_measurements,
        soak,
        toolchain,
        verification,
        ..
    } = archive;
    let with_error = results.iter().filter(|e| e.error.is_some()).count() as u64;
    let backend_name = backend.clone();
    let file = ArchiveFile {
        backend: Some(backend.to_string()),
        recorded_at_utc: Some(recorded_at_utc),
        git_head,
        source_sha256: Some(source_sha256),
        executable_sha256: Some(executable_sha256),
        runner_sha256: Some(runner_sha256),
        host: HostInfo::from(host),
        seconds: settings.seconds,
        warmup: settings.warmup,
        repetitions: settings.repetitions,
        address_family: settings.address_family,
        complete,
        runs: results.len(),
        shuffle_seed: settings.shuffle_seed,
        preset: settings.preset,
        protocols: settings.protocols.clone(),
        keep_going: settings.keep_going,
        soak_seconds: settings.soak_seconds,
        udp_timeout_ms: Some(settings.udp_timeout_ms),
        soak: soak_results(&soak),
        toolchain,
        shard: settings.shard,
        external_server: settings.external_server.clone(),
        reach: reach(&settings, &results),
        run_span: run_span(&results),
        matrix: Some(Box::new(settings.clone())),
        ..file_record(path, Format::Echomark, git_status.as_deref())
    };
    check_paths(out, &file, &results);
    if let Some(why) = file
        .host
        .name
        .as_deref()
        .and_then(echomark_archive::limits::host_name_problem)
    {
        out.problem(&file.path, "host.name".to_string(), why);
    }
    check_settings(
        out,
        &file,
        (&settings, backend_name.as_str()),
        &verification,
        &results,
    );
    check_file(out, &file, Some(Some(failed_measurements)), with_error);
    check_histograms(out, &file, &results);
    // Settings the command line would refuse plan nothing worth listing (an edited
    // repetitions of 10^9 would list a billion runs): said, and the plan left unchecked.
    match echomark_archive::limits::settings_problem(&settings) {
        Some((at, why)) => out.problem(&file.path, format!("settings.{at}"), why),
        None => check_plan(
            out,
            &file,
            (
                &settings,
                &settings.planned_runs(backend_name.as_str(), &results),
            ),
            &results,
        ),
    }
    add_runs(out, &file, &settings, results);
    out.finish(file);
}

/// The soaks as the site reads them: each one's protocol, length, verdict and first failure.
fn soak_results(soak: &[echomark_archive::SoakRecord]) -> Vec<SoakResult> {
    soak.iter()
        .map(|s| SoakResult {
            protocol: s.protocol,
            seconds: s.seconds,
            passed: s.passed,
            verified_echoes: s.report.as_ref().map_or(0, |r| r.verified_echoes),
            rounds: s.report.as_ref().map_or(0, |r| r.rounds.len() as u64),
            failure: s
                .report
                .as_ref()
                .and_then(|r| r.first_failure())
                .map(str::to_string),
        })
        .collect()
}

/// The earliest and latest start of the archive's runs.
fn run_span(results: &[Entry]) -> Option<(String, String)> {
    results
        .iter()
        .map(|e| e.started_at_utc.as_str())
        .min()
        .zip(results.iter().map(|e| e.started_at_utc.as_str()).max())
        .map(|(a, b)| (a.to_string(), b.to_string()))
}

/// Settings that contradict themselves or the archive: a shard outside its count, an
/// external server without its verification ([`check_external`]), unsupported IO profiles
/// that are not the backend's.
fn check_settings(
    out: &mut FileRead,
    file: &ArchiveFile,
    (settings, backend_name): (&echomark_archive::Settings, &str),
    verification: &[echomark_archive::VerificationRecord],
    results: &[Entry],
) {
    if let Some(shard) = settings.shard.filter(|s| !s.is_valid()) {
        out.problem(
            &file.path,
            "settings.shard",
            format!(
                "index {} of {} shards: the index must be from 1 to the count",
                shard.index, shard.count
            ),
        );
    }
    if let Some(why) = settings
        .quic_axes
        .transports()
        .iter()
        .find_map(|t| t.problem())
    {
        out.problem(&file.path, "settings.quic_axes", why);
    }
    check_external(out, file, (settings, backend_name), verification, results);
    let unsupported = settings.unsupported_for(backend_name);
    if settings.unsupported_io_profiles != unsupported {
        let names: Vec<String> = unsupported
            .iter()
            .map(|u| format!("{} {}", u.io_model, u.io_threads))
            .collect();
        out.problem(
            &file.path,
            "settings.unsupported_io_profiles",
            format!(
                "does not match what backend {backend_name} cannot run (expected: [{}])",
                names.join(", ")
            ),
        );
    }
}

/// Each entry as a run of the file, with what it was asked to measure and where it ran.
fn add_runs(
    out: &mut FileRead,
    file: &ArchiveFile,
    settings: &echomark_archive::Settings,
    results: Vec<Entry>,
) {
    for (index, entry) in results.into_iter().enumerate() {
        let measurement = entry.metrics.as_ref().map(Measurement::from);
        let key = entry.case_key().clone();
        let timing = RequestedTiming {
            seconds: settings.seconds,
            warmup_seconds: settings.warmup,
        };
        let request = CaseParameters::requested(
            &key,
            Some(key.backend.clone()),
            Some(entry.address_family),
            Some(timing),
        );
        super::counters::check(out, file, (index, &entry), settings);
        let facts = EntryFacts {
            index,
            key,
            repetition: entry.run.repetition,
            program: Program::Echomark,
            address_family: entry.address_family,
            returncode: entry.returncode.map(i64::from),
            runner_error: entry.error.as_deref(),
            request,
            command: entry.command.join(" "),
            instruments: crate::model::RunInstruments {
                placement: placement(out, file, index, &entry),
                udp_batch: entry.metrics.as_ref().and_then(|m| m.udp_batch),
                udp_gso: entry.metrics.as_ref().is_some_and(|m| m.udp_gso),
                server_enters_per_echo: per_echo(&entry, |s| Some(s.ring.as_ref()?.enters as f64)),
                server_busy_polls_per_echo: per_echo(&entry, |s| {
                    let looks = s.ring.as_ref()?.busy_polls;
                    (looks > 0).then_some(looks as f64)
                }),
                server_syscalls_per_echo: per_echo(&entry, |s| Some(s.syscalls? as f64)),
                syscalls_per_echo: entry.metrics.as_ref().and_then(|m| {
                    let calls = m.syscalls? as f64;
                    (m.messages > 0).then(|| calls / m.messages as f64)
                }),
                server_cpu_us_per_echo: per_echo(&entry, |s| Some(s.cpu_seconds? * 1e6)),
                quic: entry.metrics.as_ref().and_then(|m| m.quic.clone()),
                fleet: fleet(out, file, index, &entry),
            },
        };
        out.add_run(file, facts, measurement.as_ref());
    }
}

/// A figure of the run's external server (`io_uring_enter` calls, CPU microseconds) over
/// the messages the run sent it, warmup and measured: per echo.
fn per_echo(
    entry: &Entry,
    figure: impl FnOnce(&echomark_archive::ServerProcess) -> Option<f64>,
) -> Option<f64> {
    let total = figure(entry.server.as_ref()?)?;
    let m = entry.metrics.as_ref()?;
    let echoes = m.messages_sent + m.warmup_messages;
    (echoes > 0).then(|| total / echoes as f64)
}

/// How entry `index`'s fleet ran, when it is a fleet run: the release, and each generator's
/// host, clock and CPUs (a CPU list that does not parse is a problem at its JSON path).
fn fleet(
    out: &mut FileRead,
    file: &ArchiveFile,
    index: usize,
    entry: &Entry,
) -> Option<Box<crate::model::RunFleet>> {
    let record = entry.metrics.as_ref()?.fleet.as_ref()?;
    let generators = record
        .generators
        .iter()
        .enumerate()
        .map(|(g, generator)| {
            let placement = generator.metrics.placement.as_ref();
            let client_cpus = placement.and_then(|p| match p.client_cpus.parse::<CpuList>() {
                Ok(list) => Some(list),
                Err(e) => {
                    out.problem(
                        &file.path,
                        format!(
                            "results[{index}].metrics.fleet.generators[{g}].metrics.placement.client_cpus"
                        ),
                        e.to_string(),
                    );
                    None
                }
            });
            crate::model::RunGenerator {
                index: generator.index,
                host: generator.host.clone(),
                logical_cpus: generator.logical_cpus,
                clock: generator.clock.clone(),
                start_skew_us: generator.start_skew_us,
                start_skew_uncertainty_us: generator.start_skew_uncertainty_us,
                client_cpus,
                client_pinned: placement.is_some_and(|p| p.client_pinned),
                path: generator
                    .metrics
                    .target
                    .as_ref()
                    .and_then(|t| Some(t.path.as_ref()?.kind)),
            }
        })
        .collect();
    Some(Box::new(crate::model::RunFleet {
        coordinator_host: record.coordinator_host.clone(),
        start_skew_median_us: record.start_skew_median_us,
        start_skew_worst_us: record.start_skew_worst_us,
        start_skew_uncertainty_us: record.start_skew_uncertainty_us,
        generators,
    }))
}

/// Where entry `index` ran: its client's placement from the metrics, and the server's
/// (the same threads in process, the external server's own record apart). A list that does
/// not parse is a problem at its JSON path.
fn placement(
    out: &mut FileRead,
    file: &ArchiveFile,
    index: usize,
    entry: &Entry,
) -> Option<crate::model::RunPlacement> {
    let recorded = entry.metrics.as_ref()?.placement.as_ref()?;
    let mut list = |text: &str, json_path: String| match text.parse::<CpuList>() {
        Ok(list) => Some(list),
        Err(e) => {
            out.problem(&file.path, json_path, e.to_string());
            None
        }
    };
    let client = list(
        &recorded.client_cpus,
        format!("results[{index}].metrics.placement.client_cpus"),
    )?;
    let (server, server_pinned) = match (&entry.server, recorded.server_in_process) {
        (_, true) => match &recorded.server_cpus {
            // Apart in process: the server's own runtimes, pinned by --server-cpus.
            Some(text) => (
                Some(list(
                    text,
                    format!("results[{index}].metrics.placement.server_cpus"),
                )?),
                true,
            ),
            None => (Some(client.clone()), recorded.client_pinned),
        },
        (Some(process), false) => (
            process
                .cpus
                .as_deref()
                .and_then(|text| list(text, format!("results[{index}].server.cpus"))),
            process.pinned,
        ),
        (None, false) => (None, false),
    };
    Some(crate::model::RunPlacement {
        client,
        client_pinned: recorded.client_pinned,
        server_in_process: recorded.server_in_process,
        server_own_runtimes: recorded.server_in_process && recorded.server_cpus.is_some(),
        server,
        server_pinned,
    })
}
