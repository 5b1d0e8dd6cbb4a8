//! Validation: the per-run rule lives in [`rules`]; this module checks a dataset as a whole
//! and builds the validation report.
//!
//! Dataset rules (arknet-archives.md §15.5): all files share one `source_sha256`, one host
//! (compared field by field), one (`seconds`, `warmup`, `repetitions`) timing and one address
//! family (X1); no (configuration, repetition) appears twice (X3). Breaking either makes the
//! input malformed. A dirty source tree and incomplete files are warnings.

pub mod rules;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::Problem;
use crate::model::{Dataset, Format};
use echomark_archive::CaseKey;

/// Adds the dataset-level problems of `dataset` to `problems`.
pub fn check_dataset(dataset: &Dataset, problems: &mut Vec<Problem>) {
    if let Some((first, rest)) = dataset.files.split_first() {
        for f in rest.iter().filter(|f| f.host != first.host) {
            problems.push(mixed(f, first, "host"));
        }
    }
    // Imported archives are other tools' runs: they share the dataset's host, not
    // echomark's build or timing, so the campaign's facts are compared among the others.
    let measured: Vec<&crate::model::ArchiveFile> = dataset
        .files
        .iter()
        .filter(|f| f.format != Format::Imported)
        .collect();
    if let Some((first, rest)) = measured.split_first() {
        for f in rest {
            if f.source_sha256 != first.source_sha256 {
                problems.push(mixed(f, first, "source_sha256"));
            }
            if (f.seconds, f.warmup, f.repetitions)
                != (first.seconds, first.warmup, first.repetitions)
            {
                problems.push(mixed(f, first, "settings"));
            }
            // The shards of one matrix must come from one build of the runner.
            if f.format == Format::Echomark
                && first.format == Format::Echomark
                && f.runner_sha256 != first.runner_sha256
            {
                problems.push(mixed(f, first, "runner_sha256"));
            }
            if f.shard.map(|s| s.count) != first.shard.map(|s| s.count) {
                problems.push(mixed(f, first, "settings.shard"));
            }
        }
    }
    check_runs(dataset, problems);
}

/// File `f` differs from `first` in `what`, which one campaign shares.
fn mixed(f: &crate::model::ArchiveFile, first: &crate::model::ArchiveFile, what: &str) -> Problem {
    Problem::new(
        f.path.display().to_string(),
        what,
        format!(
            "differs from {}: a dataset holds one measurement campaign (split it into folders)",
            first.path.display()
        ),
    )
}

/// Shards measured once, no (configuration, repetition) twice, one address family.
fn check_runs(dataset: &Dataset, problems: &mut Vec<Problem>) {
    let mut shards: BTreeMap<u64, &str> = BTreeMap::new();
    for f in &dataset.files {
        if let Some(shard) = f.shard {
            if let Some(other) = shards.insert(shard.index, &f.name) {
                problems.push(Problem::new(
                    f.path.display().to_string(),
                    "settings.shard",
                    format!("shard {shard} is also in {other}: each shard is measured once"),
                ));
            }
        }
    }
    let mut seen: BTreeMap<(&CaseKey, u64), (usize, usize)> = BTreeMap::new();
    let mut families: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for run in &dataset.runs {
        families
            .entry(run.address_family.as_str())
            .or_insert((run.file, run.index));
        if let Some((file, index)) = seen.insert((&run.key, run.repetition), (run.file, run.index))
        {
            let other = dataset
                .files
                .get(file)
                .map_or(String::new(), |f| f.path.display().to_string());
            problems.push(Problem::new(
                dataset
                    .files
                    .get(run.file)
                    .map_or(String::new(), |f| f.path.display().to_string()),
                format!("results[{}]", run.index),
                format!(
                    "configuration and repetition {} already in {other} results[{index}]",
                    run.repetition
                ),
            ));
        }
    }
    if families.len() > 1 {
        let (file, index) = *families.values().nth(1).expect("two families");
        problems.push(Problem::new(
            dataset
                .files
                .get(file)
                .map_or(String::new(), |f| f.path.display().to_string()),
            format!("results[{index}].metrics.address_family"),
            format!(
                "mixes address families: {}",
                families.keys().copied().collect::<Vec<_>>().join(", ")
            ),
        ));
    }
}

/// Per-dataset counts for `echomark validate --json`.
#[derive(Debug, Clone, Serialize)]
pub struct DatasetReport {
    pub dataset: String,
    pub files: usize,
    pub runs: usize,
    pub runs_passed: usize,
    pub configurations: usize,
    pub configurations_valid: usize,
    pub failed_configurations: Vec<FailedConfiguration>,
    pub warnings: Vec<Problem>,
}

/// A configuration excluded from rankings, with every failing run's reasons.
#[derive(Debug, Clone, Serialize)]
pub struct FailedConfiguration {
    #[serde(flatten)]
    pub key: CaseKey,
    pub runs: usize,
    pub runs_passed: usize,
    /// What failed, summed over the runs (for pages; `failures` keeps every raw reason).
    pub kinds: Vec<FailureKind>,
    pub failures: Vec<RunFailure>,
}

/// One kind of failure of a configuration: how many of its runs had it, and the largest
/// value (for a counter).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FailureKind {
    /// A counter name (`udp_lost_messages`), or `returncode`, `timed_out`, `no_metrics`,
    /// `invariant`.
    pub kind: String,
    pub runs: usize,
    pub largest: Option<u64>,
}

/// The kinds of failure in `reasons` (one run's): counters with their values, and the
/// process-level and invariant failures; texts that repeat these (`ok is not true`, the
/// runner's and the program's error texts) are left to the raw list.
fn kinds_of(reasons: &[String]) -> BTreeMap<String, Option<u64>> {
    let mut out = BTreeMap::new();
    for r in reasons {
        let (head, tail) = r.split_once(' ').unwrap_or((r.as_str(), ""));
        let kind = if echomark_archive::ERROR_COUNTER_NAMES.contains(&head)
            || matches!(
                head,
                "content_or_io_errors" | "pending_completions" | "warmup_errors"
            ) {
            Some((head.to_string(), tail.parse::<u64>().ok()))
        } else if head == "returncode" {
            Some(("returncode".into(), None))
        } else if r.starts_with("no returncode") {
            Some(("timed_out".into(), None))
        } else if r == "no metrics" {
            Some(("no_metrics".into(), None))
        } else if is_invariant_id(head) {
            Some(("invariant".into(), None))
        } else if let Some(kind) = imported_kind(tail) {
            // An imported run's reasons, as `echomark import` words them.
            Some((kind.into(), head.parse::<u64>().ok()))
        } else if r.starts_with("iperf3: ") || r == "no request was answered" {
            Some(("tool_failed".into(), None))
        } else {
            None
        };
        if let Some((kind, value)) = kind {
            let slot = out.entry(kind).or_insert(value);
            *slot = (*slot).max(value);
        }
    }
    out
}

/// The kind of an imported run's counted failure (`38227 requests ended in an error: …`).
fn imported_kind(tail: &str) -> Option<&'static str> {
    if tail.starts_with("requests ended in an error") {
        Some("request_errors")
    } else if tail.starts_with("answers with status") {
        Some("non_2xx")
    } else {
        None
    }
}

/// An invariant's id with its colon, as the rules write it (`E1:`, `L12:`).
fn is_invariant_id(head: &str) -> bool {
    let Some(id) = head.strip_suffix(':') else {
        return false;
    };
    let mut chars = id.chars();
    chars.next().is_some_and(|c| c.is_ascii_uppercase())
        && !id[1..].is_empty()
        && id[1..].chars().all(|c| c.is_ascii_digit())
}

/// The failure kinds of one configuration's failed runs.
fn summarise(runs: &[&crate::model::Run]) -> Vec<FailureKind> {
    let mut total: BTreeMap<String, (usize, Option<u64>)> = BTreeMap::new();
    for run in runs.iter().filter(|r| !r.passed) {
        for (kind, value) in kinds_of(&run.reasons) {
            let slot = total.entry(kind).or_insert((0, None));
            slot.0 += 1;
            slot.1 = slot.1.max(value);
        }
    }
    total
        .into_iter()
        .map(|(kind, (runs, largest))| FailureKind {
            kind,
            runs,
            largest,
        })
        .collect()
}

/// One failed run.
#[derive(Debug, Clone, Serialize)]
pub struct RunFailure {
    pub file: String,
    pub index: usize,
    pub repetition: u64,
    pub reasons: Vec<String>,
}

/// Counts runs and configurations and lists the failed configurations.
pub fn report(dataset: &Dataset) -> DatasetReport {
    // Listed by name, the order reports and summaries have always used.
    let mut configs: BTreeMap<_, (&CaseKey, Vec<&crate::model::Run>)> = BTreeMap::new();
    for run in &dataset.runs {
        configs
            .entry(run.key.by_name())
            .or_insert_with(|| (&run.key, Vec::new()))
            .1
            .push(run);
    }
    let configs: Vec<(&CaseKey, Vec<&crate::model::Run>)> = configs.into_values().collect();
    let failed_configurations: Vec<FailedConfiguration> = configs
        .iter()
        .filter(|(_, runs)| runs.iter().any(|r| !r.passed))
        .map(|(key, runs)| FailedConfiguration {
            key: (*key).clone(),
            runs: runs.len(),
            runs_passed: runs.iter().filter(|r| r.passed).count(),
            kinds: summarise(runs),
            failures: runs
                .iter()
                .filter(|r| !r.passed)
                .map(|r| RunFailure {
                    file: dataset.files[r.file].name.clone(),
                    index: r.index,
                    repetition: r.repetition,
                    reasons: r.reasons.clone(),
                })
                .collect(),
        })
        .collect();
    DatasetReport {
        dataset: dataset.name.clone(),
        files: dataset.files.len(),
        runs: dataset.runs.len(),
        runs_passed: dataset.runs.iter().filter(|r| r.passed).count(),
        configurations: configs.len(),
        configurations_valid: configs.len() - failed_configurations.len(),
        failed_configurations,
        warnings: dataset.warnings.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_kinds_are_counted_per_run_with_the_largest_value() {
        let reasons = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut a = crate::model::tests::run(echomark_archive::Protocol::Udp, 1);
        a.passed = false;
        a.reasons = reasons(&[
            "returncode 1",
            "ok is not true",
            "udp_lost_messages 2621",
            "L12: sent 3 − received 1 ≠ lost 1 + unfinished 0",
        ]);
        let mut b = a.clone();
        b.reasons = reasons(&[
            "udp_lost_messages 2628",
            "error: benchmark validation failed: udp_lost_messages 2628",
        ]);
        let kinds = summarise(&[&a, &b]);
        let find = |k: &str| kinds.iter().find(|f| f.kind == k).cloned();
        assert_eq!(
            find("udp_lost_messages").map(|f| (f.runs, f.largest)),
            Some((2, Some(2628)))
        );
        assert_eq!(find("returncode").map(|f| f.runs), Some(1));
        assert_eq!(find("invariant").map(|f| f.runs), Some(1));
        assert_eq!(kinds.len(), 3, "{kinds:?}");
    }
}
