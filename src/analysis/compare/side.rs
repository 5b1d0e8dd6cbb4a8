//! One side of a comparison: a dataset read and validated as for the site, its runs grouped
//! by configuration, and, for echomark archives, the recorded latency histograms pooled per
//! configuration into intervals for each compared percentile.

use std::collections::BTreeMap;
use std::path::Path;

use echomark_archive::{AddressFamily, CaseKey, Metric};
use hdrhistogram::Histogram;
use serde::Deserialize;

use super::stats;
use super::COMPARED;
use crate::error::{printable, Error, Problem, Refusal};
use crate::model::{Dataset, Format};
use crate::read;

/// A configuration as compare pairs them: the case key and the address family.
pub type ConfigId = (CaseKey, AddressFamily);

/// A configuration's runs on one side.
#[derive(Debug, Clone)]
pub struct Group {
    /// Whether every run passed (the site's rule for a valid configuration).
    pub valid: bool,
    pub runs: usize,
    pub runs_passed: usize,
    /// The first failure's reasons, for "not comparable".
    pub failure: Option<String>,
    /// Each compared metric's per-repetition values (passing runs only).
    pub values: BTreeMap<Metric, Vec<f64>>,
    /// Each compared percentile's interval (µs) from the pooled histograms; empty when some
    /// run recorded none.
    pub tails: BTreeMap<Metric, (f64, f64)>,
}

/// A dataset ready to be compared.
#[derive(Debug)]
pub struct Side<'a> {
    pub dataset: &'a Dataset,
    pub groups: BTreeMap<ConfigId, Group>,
}

/// The only part of an echomark archive this module reads a second time.
#[derive(Deserialize)]
struct HistogramsOnly {
    results: Vec<ResultHistogram>,
}

#[derive(Deserialize)]
struct ResultHistogram {
    #[serde(default)]
    metrics: Option<MetricsHistogram>,
}

#[derive(Deserialize)]
struct MetricsHistogram {
    #[serde(default)]
    rtt_histogram: Option<String>,
}

/// Reads `path` (a dataset folder or one archive), which must hold exactly one dataset.
pub fn load_dataset(path: &Path) -> Result<Dataset, Error> {
    let mut datasets = read::load(&[path.to_path_buf()])?;
    if datasets.len() != 1 {
        return Err(Error::Refused(Refusal::SeveralDatasets {
            path: path.to_path_buf(),
            datasets: datasets.into_iter().map(|d| d.name).collect(),
        }));
    }
    Ok(datasets.remove(0))
}

impl<'a> Side<'a> {
    /// `dataset` grouped by configuration, with its histograms pooled (read again from its
    /// archive files).
    pub fn of(dataset: &'a Dataset) -> Result<Side<'a>, Error> {
        let mut members: BTreeMap<ConfigId, Vec<usize>> = BTreeMap::new();
        for (i, run) in dataset.runs.iter().enumerate() {
            members
                .entry((run.key.clone(), run.address_family))
                .or_default()
                .push(i);
        }
        let pooled = pooled_histograms(dataset, &members)?;
        let groups = members
            .into_iter()
            .map(|(id, runs)| {
                let hist = pooled.get(&id).and_then(Option::as_ref);
                let group = group(dataset, &runs, hist);
                (id, group)
            })
            .collect();
        Ok(Side { dataset, groups })
    }
}

/// Each configuration's passing runs' histograms, added up; `None` for a configuration in
/// which some passing run recorded no histogram (its tails are then unknown, not guessed).
fn pooled_histograms(
    dataset: &Dataset,
    members: &BTreeMap<ConfigId, Vec<usize>>,
) -> Result<BTreeMap<ConfigId, Option<Histogram<u64>>>, Error> {
    // (file, result index) → the configuration of a passing run.
    let mut owner: BTreeMap<(usize, usize), &ConfigId> = BTreeMap::new();
    let mut expected: BTreeMap<&ConfigId, usize> = BTreeMap::new();
    for (id, runs) in members {
        for &i in runs {
            let run = &dataset.runs[i];
            if run.passed {
                owner.insert((run.file, run.index), id);
                *expected.entry(id).or_default() += 1;
            }
        }
    }
    let mut pooled: BTreeMap<&ConfigId, (Histogram<u64>, usize)> = BTreeMap::new();
    let mut problems = Vec::new();
    for (file_index, file) in dataset.files.iter().enumerate() {
        if file.format != Format::Echomark {
            continue;
        }
        let shown = file.path.display().to_string();
        let bytes = read::archive_bytes(&file.path).map_err(|e| Error::Io {
            path: printable(&shown),
            source: e,
        })?;
        let only: HistogramsOnly = serde_json::from_slice(&bytes)
            .map_err(|e| Error::Invalid(vec![Problem::new(&shown, "", e.to_string())]))?;
        for (index, result) in only.results.into_iter().enumerate() {
            let Some(id) = owner.get(&(file_index, index)) else {
                continue;
            };
            let Some(text) = result.metrics.and_then(|m| m.rtt_histogram) else {
                continue;
            };
            let hist = match echomark_archive::histogram::decode(&text) {
                Ok(h) => h,
                Err(e) => {
                    problems.push(Problem::new(
                        &shown,
                        format!("results[{index}].metrics.rtt_histogram"),
                        e.to_string(),
                    ));
                    continue;
                }
            };
            match pooled.get_mut(id) {
                Some((sum, count)) => {
                    if let Err(e) = sum.add(&hist) {
                        problems.push(Problem::new(
                            &shown,
                            format!("results[{index}].metrics.rtt_histogram"),
                            format!("cannot be added to its repetitions' histograms: {e:?}"),
                        ));
                    }
                    *count += 1;
                }
                None => {
                    pooled.insert(id, (hist, 1));
                }
            }
        }
    }
    if !problems.is_empty() {
        return Err(Error::Invalid(problems));
    }
    Ok(members
        .keys()
        .map(|id| {
            let complete = pooled
                .remove(id)
                .filter(|(_, count)| expected.get(id) == Some(count))
                .map(|(hist, _)| hist);
            (id.clone(), complete)
        })
        .collect())
}

fn group(dataset: &Dataset, members: &[usize], pooled: Option<&Histogram<u64>>) -> Group {
    let runs: Vec<_> = members.iter().map(|&i| &dataset.runs[i]).collect();
    let passed: Vec<_> = runs.iter().filter(|r| r.passed).collect();
    let failure = runs.iter().find(|r| !r.passed).map(|r| {
        format!(
            "repetition {} failed: {}",
            r.repetition,
            if r.reasons.is_empty() {
                "no reason recorded".to_string()
            } else {
                r.reasons.join("; ")
            }
        )
    });
    let values = COMPARED
        .iter()
        .map(|&m| (m, passed.iter().filter_map(|r| r.metric(m)).collect()))
        .collect();
    let tails = match pooled {
        Some(hist) => COMPARED
            .iter()
            .filter_map(|&m| {
                let q = super::quantile(m)?;
                let (low, high) = stats::quantile_interval(hist, q)?;
                Some((m, (low as f64 / 1_000.0, high as f64 / 1_000.0)))
            })
            .collect(),
        None => BTreeMap::new(),
    };
    Group {
        valid: passed.len() == runs.len(),
        runs: runs.len(),
        runs_passed: passed.len(),
        failure,
        values,
        tails,
    }
}
