//! Measuring a matrix's runs once its archives are open: every known case checked first,
//! then the runs stage by stage (each in a fresh child, against a fresh external server where
//! there is one, recorded and saved before the next), then the soaks.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use echomark_archive::{Entry, Settings};

use super::plan::{self, MatrixSpec, PlannedRun};
use super::{child, external, label, progress, provenance, server, soak_child, until};
use super::{MatrixError, Refusal, SignalFlag, Target};
use crate::placement::CpuList;

/// How a stage of runs, or the soaks, ended.
pub(super) enum Flow {
    /// Every run is recorded, or `stopped_early` at the first failure without
    /// `--keep-going`.
    Done { stopped_early: bool },
    /// SIGINT or SIGTERM: the running child was killed; the archives hold what finished.
    Interrupted,
    /// `--pause-after`: this many runs were measured and saved.
    Paused(u64),
}

/// What every run of one matrix shares.
pub(super) struct Session<'a> {
    pub exe: &'a Path,
    pub spec: MatrixSpec,
    pub settings: Settings,
    pub timeout: Duration,
    /// Where external servers are pinned (every archive of one matrix shares its settings).
    pub server_cpus: Option<CpuList>,
    pub signal: &'a SignalFlag,
    /// `--pause-after`: stop after this many runs.
    pub pause_after: Option<u64>,
    /// `--fleet-size`: the generators that measure every run instead of a child.
    pub fleet: Option<super::fleet::MatrixFleet>,
}

/// Checks every case known before anything runs, so a bad matrix fails once with exit 2,
/// not once per run, and saves each archive as it starts.
pub(super) fn check_cases(
    targets: &[Target],
    spec: &MatrixSpec,
    settings: &Settings,
) -> Result<(), MatrixError> {
    let placeholder: std::net::SocketAddr = match settings.address_family {
        echomark_archive::AddressFamily::Ipv4 => "127.0.0.1:9",
        echomark_archive::AddressFamily::Ipv6 => "[::1]:9",
    }
    .parse()
    .expect("an address");
    for t in targets {
        for run in plan::planned(&t.archive.settings, &t.archive.results, t.backend.clone()) {
            let label = label(&run, t.archive.backend.as_str());
            let case = spec
                .case(&run, settings)
                .map_err(MatrixError::case(&label))?;
            if let Some(server) = &t.archive.settings.external_server {
                external::against(case, server, placeholder, true)
                    .map_err(MatrixError::case(&label))?;
            }
        }
        let done: BTreeSet<_> = t.archive.results.iter().map(Entry::run_id).collect();
        if done.len() != t.archive.results.len() {
            return Err(Refusal::DuplicateResult {
                path: t.path.clone(),
            }
            .into());
        }
        t.save()?;
    }
    Ok(())
}

impl Session<'_> {
    /// Runs every planned run not yet in an archive. Stages: the plan as known now; a rate
    /// sweep's open-loop runs join it once their closed-loop runs are in the archive, so a
    /// second stage runs them. Several backends' runs are shuffled together, so that no
    /// backend always runs first.
    pub fn stages(
        &self,
        targets: &mut [Target],
        progress: &mut progress::Progress,
    ) -> Result<Flow, MatrixError> {
        let mut measured = 0;
        let mut budget = until::Budget::of(targets, &self.settings);
        loop {
            let mut todo = self.todo(targets);
            // Measured until decided: once every planned run is in, the next look's runs
            // of the comparisons still undecided.
            let added = todo.is_empty();
            if added {
                todo = until::added_runs(targets, &self.settings);
            }
            if todo.is_empty() {
                until::finish(targets, &self.settings);
                return Ok(Flow::Done {
                    stopped_early: false,
                });
            }
            progress.add_planned(todo.len() as u64);
            for run in todo {
                if self.pause_after == Some(measured) {
                    return Ok(Flow::Paused(measured));
                }
                if added && budget.before_run(targets) {
                    // Spent: recorded, and nothing more is planned.
                    break;
                }
                measured += 1;
                let Some(failed) = self.measure(&mut targets[run.target], &run, progress)? else {
                    return Ok(Flow::Interrupted);
                };
                if failed && !self.settings.keep_going {
                    return Ok(Flow::Done {
                        stopped_early: true,
                    });
                }
            }
        }
    }

    /// The runs of every archive that are planned and not yet recorded, in running order.
    fn todo(&self, targets: &[Target]) -> Vec<PlannedRun> {
        let mut runs: Vec<PlannedRun> = targets
            .iter()
            .enumerate()
            .flat_map(|(i, t)| {
                plan::planned(&t.archive.settings, &t.archive.results, t.backend.clone())
                    .into_iter()
                    .map(move |r| PlannedRun { target: i, ..r })
            })
            .collect();
        if let Some(seed) = self.settings.shuffle_seed {
            plan::shuffle(&mut runs, seed);
        }
        let done: BTreeSet<_> = targets
            .iter()
            .flat_map(|t| t.archive.results.iter().map(Entry::run_id))
            .collect();
        runs.into_iter()
            .filter(|r| !done.contains(&r.key_as(&targets[r.target].archive.backend)))
            .collect()
    }

    /// Measures one run into its archive and saves it: whether it failed, or `None` when a
    /// signal interrupted it.
    fn measure(
        &self,
        target: &mut Target,
        run: &PlannedRun,
        progress: &mut progress::Progress,
    ) -> Result<Option<bool>, MatrixError> {
        let order = target.archive.results.len();
        let label = label(run, target.archive.backend.as_str());
        progress.starting(&label);
        let case = self
            .spec
            .case(run, &self.settings)
            .map_err(MatrixError::case(&label))?;
        let started_at_utc = provenance::utc_now();
        let (server, case_args) = self.start_server(target, run, case, &label)?;
        let ready = server.as_ref().is_none_or(|s| s.ready_seconds.is_some());
        let fleet_run = self.fleet.as_ref().zip(run.case().generators);
        let mut fleet_error = None;
        let outcome = if let (true, Some((fleet, generators))) = (ready, fleet_run) {
            let (outcome, error) = fleet.measure(&case_args, generators);
            fleet_error = error;
            Some(outcome)
        } else if ready {
            let lock_fd = Some(target.lock.fd());
            match child::run(
                self.exe,
                &case_args,
                self.timeout,
                &self.signal.flag,
                lock_fd,
            ) {
                Ok(Ok(outcome)) => Some(outcome),
                Ok(Err(child::Interrupted)) => return Ok(None),
                Err(e) => {
                    return Err(MatrixError::system(
                        format!("cannot start {}", self.exe.display()),
                        e,
                    ))
                }
            }
        } else {
            None
        };
        let server = server.map(server::Started::stop);
        if let Some(n) = server.as_ref().map(|p| p.left_behind).filter(|&n| n > 0) {
            eprintln!("{label}: the server left {n} process(es) behind; they were killed");
        }
        if self.signal.flag.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let ready_limit = target
            .archive
            .settings
            .external_server
            .as_ref()
            .map(echomark_archive::ExternalServer::ready_limit);
        let judged = self.judge(
            run,
            &target.archive.backend,
            outcome.as_ref(),
            server.as_ref().zip(ready_limit),
        );
        let mut judged = judged;
        if let Some(e) = fleet_error {
            judged.error = Some(e);
        }
        let summary = summary_line(&judged);
        let failed = judged.error.is_some();
        let command = match fleet_run {
            Some((_, generators)) => super::fleet::command(self.exe, generators, &case_args),
            None => [vec![self.exe.display().to_string()], case_args].concat(),
        };
        let archive = &mut target.archive;
        archive.results.push(Entry {
            run: run.key_as(&archive.backend),
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
        Ok(Some(failed))
    }

    /// Starts `target`'s external server for `run`, fresh as echomark's own is, and the
    /// arguments of the run's child against it (or against echomark's own server).
    fn start_server(
        &self,
        target: &Target,
        run: &PlannedRun,
        case: crate::case::Case,
        label: &str,
    ) -> Result<(Option<server::Started>, Vec<String>), MatrixError> {
        let Some(external) = &target.archive.settings.external_server else {
            return Ok((None, case.to_args()));
        };
        if let Some(address) = &external.address {
            let family = target.archive.settings.address_family;
            let resolved = external::resolve(address, family)
                .map_err(|e| MatrixError::system("cannot reach the server", e))?;
            let pipelines = external::pipelines(&target.archive.verification, run.case().protocol);
            let args = external::against(case, external, resolved, pipelines)
                .map_err(MatrixError::case(label))?
                .to_args();
            return Ok((None, args));
        }
        let started = server::start(external, run.case().protocol, self.server_cpus.as_ref())
            .map_err(|e| MatrixError::system("cannot start the server", e))?;
        let pipelines = external::pipelines(&target.archive.verification, run.case().protocol);
        let args = external::against(case, external, started.address, pipelines)
            .map_err(MatrixError::case(label))?
            .to_args();
        Ok((Some(started), args))
    }

    /// What the run's outcome means; the server's own failure is the cause when it has one.
    fn judge(
        &self,
        run: &PlannedRun,
        backend: &echomark_archive::Backend,
        outcome: Option<&child::ChildOutcome>,
        server: Option<(&echomark_archive::ServerProcess, std::time::Duration)>,
    ) -> child::Judged {
        let mut judged = match outcome {
            Some(outcome) => child::judge(
                run,
                backend,
                self.spec.seconds,
                self.spec.warmup,
                self.spec.address_family,
                outcome,
            ),
            None => child::Judged {
                metrics: None,
                stdout: None,
                error: None,
            },
        };
        if let Some(reason) =
            server.and_then(|(p, ready_limit)| server::failure(p, outcome.is_some(), ready_limit))
        {
            judged.error = Some(reason);
        }
        judged
    }

    /// Runs the soaks each archive still owes, one per protocol, and saves each.
    pub fn soaks(
        &self,
        targets: &mut [Target],
        progress: &mut progress::Progress,
    ) -> Result<Flow, MatrixError> {
        for target in targets.iter_mut() {
            let Some(seconds) = self
                .settings
                .soak_seconds
                .filter(|_| target.archive.soak.is_empty())
            else {
                continue;
            };
            for &protocol in &self.settings.protocols {
                let name = format!("soak {} {protocol} {seconds} s", target.backend);
                progress.starting(&name);
                let record = soak_child(
                    self.exe,
                    (target.backend.clone(), protocol),
                    seconds,
                    self.settings.address_family,
                    (&self.signal.flag, target.lock.fd()),
                )?;
                let Some(record) = record else {
                    return Ok(Flow::Interrupted);
                };
                let summary = if record.passed { "passed" } else { "FAILED" };
                progress.finished(&name, !record.passed, summary);
                target.archive.soak.push(record);
                target.save()?;
            }
        }
        Ok(Flow::Done {
            stopped_early: false,
        })
    }
}

/// What the progress line says of a finished run: its error, or its rate and latency.
fn summary_line(judged: &child::Judged) -> String {
    match (&judged.error, &judged.metrics) {
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
    }
}
