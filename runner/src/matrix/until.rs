//! `--until-decided` in a running matrix: once the planned runs are in, the added runs the
//! contract plans from the results ([`echomark_archive::until_decided::plan`]), the budget
//! they may take, and what each archive records of why each comparison stopped.

use std::time::Instant;

use echomark_archive::until_decided::{self, Plan, Side, UntilDecidedRecord};
use echomark_archive::{CaseKey, RunId, Settings};

use super::plan::PlannedRun;
use super::Target;

/// The archives as the contract's sides, in the order the matrix opened them.
fn sides(targets: &[Target]) -> Vec<Side<'_>> {
    targets
        .iter()
        .map(|t| Side {
            backend: t.archive.backend.as_str(),
            results: &t.archive.results,
        })
        .collect()
}

/// What the archives record so far (the first's; they are kept alike).
fn record(targets: &[Target]) -> Option<&UntilDecidedRecord> {
    targets
        .first()
        .and_then(|t| t.archive.until_decided.as_ref())
}

/// The contract's plan of what is still owed.
fn plan(targets: &[Target], settings: &Settings) -> Plan {
    let spent = record(targets).is_some_and(|r| r.budget_spent);
    until_decided::plan(settings, &sides(targets), spent)
}

/// The runs to add next (the next look of every undecided comparison), each side in turn
/// for each repetition; none when the matrix is not measured until decided.
pub(super) fn added_runs(targets: &[Target], settings: &Settings) -> Vec<PlannedRun> {
    plan(targets, settings)
        .runs
        .into_iter()
        .map(|(i, run)| {
            let runtime = targets[i].backend.clone();
            PlannedRun {
                target: i,
                backend: runtime.clone(),
                // Planned runs carry the runtime's name; the entry takes the archive's.
                id: RunId {
                    case: CaseKey {
                        backend: runtime,
                        ..run.case
                    },
                    repetition: run.repetition,
                },
            }
        })
        .collect()
}

/// The time the added runs take, against `--budget`.
pub(super) struct Budget {
    limit: Option<f64>,
    /// Spent in earlier invocations (a resumed matrix goes on counting).
    before: f64,
    since: Option<Instant>,
}

impl Budget {
    pub fn of(targets: &[Target], settings: &Settings) -> Self {
        Self {
            limit: settings
                .until_decided
                .as_ref()
                .and_then(|u| u.budget_seconds),
            before: targets
                .iter()
                .filter_map(|t| t.archive.until_decided.as_ref())
                .map(|r| r.spent_seconds)
                .fold(0.0, f64::max),
            since: None,
        }
    }

    /// Seconds the added runs took so far.
    fn spent(&self) -> f64 {
        self.before + self.since.map_or(0.0, |s| s.elapsed().as_secs_f64())
    }

    /// Called before each added run: starts the clock, records what was spent, and says
    /// whether the budget is spent (then it is recorded as such and nothing more is added).
    pub fn before_run(&mut self, targets: &mut [Target]) -> bool {
        self.since.get_or_insert_with(Instant::now);
        let spent = self.spent();
        let over = self.limit.is_some_and(|limit| spent >= limit);
        for t in targets.iter_mut() {
            if let Some(r) = t.archive.until_decided.as_mut() {
                r.spent_seconds = spent;
                r.budget_spent |= over;
            }
        }
        over
    }
}

/// Every comparison's end, recorded in each archive once nothing more is owed.
pub(super) fn finish(targets: &mut [Target], settings: &Settings) {
    if settings.until_decided.is_none() {
        return;
    }
    let plan = plan(targets, settings);
    let names: Vec<String> = targets
        .iter()
        .map(|t| t.archive.backend.to_string())
        .collect();
    let comparisons = until_decided::stopped(
        &plan,
        |key| {
            let across = plan.groups.first().is_some_and(|g| g.group.across_sides);
            configuration(key, !across)
        },
        |i, key| {
            if targets.len() > 1 {
                names[i].clone()
            } else {
                format!("{} {}", key.io_model, key.io_threads)
            }
        },
    );
    for t in targets.iter_mut() {
        if let Some(r) = t.archive.until_decided.as_mut() {
            r.comparisons = comparisons.clone();
        }
    }
}

/// A configuration as the record names it: protocol, payload, clients × window and work,
/// and its IO model unless the IO models are what is compared.
fn configuration(key: &CaseKey, load_only: bool) -> String {
    let mut text = format!(
        "{} {} B {}×{}",
        key.protocol, key.payload_bytes, key.clients, key.window
    );
    if !load_only {
        text.push_str(&format!(" {} {}", key.io_model, key.io_threads));
    }
    if key.handler_work > 0 {
        text.push_str(&format!(" work {}", key.handler_work));
    }
    text
}
