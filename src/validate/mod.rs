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
use crate::model::Dataset;
use echomark_archive::CaseKey;

/// Adds the dataset-level problems of `dataset` to `problems`.
pub fn check_dataset(dataset: &Dataset, problems: &mut Vec<Problem>) {
    let Some(first) = dataset.files.first() else {
        return;
    };
    let first_name = first.path.display().to_string();
    for f in &dataset.files[1..] {
        let file = f.path.display().to_string();
        let mixed = |what: &str| {
            Problem::new(
                &file,
                what,
                format!("differs from {first_name}: a dataset holds one measurement campaign (split it into folders)"),
            )
        };
        if f.source_sha256 != first.source_sha256 {
            problems.push(mixed("source_sha256"));
        }
        if f.host != first.host {
            problems.push(mixed("host"));
        }
        if (f.seconds, f.warmup, f.repetitions) != (first.seconds, first.warmup, first.repetitions)
        {
            problems.push(mixed("settings"));
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
    pub failures: Vec<RunFailure>,
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
