//! The run table: every run of every dataset as one row of a polars DataFrame.

use polars::prelude::*;

use crate::model::Dataset;

use std::collections::HashMap;

use echomark_archive::{CaseKey, Metric};

/// The configurations of a run table: `of[n]` is the dataset (an index into the datasets)
/// and the case key of the runs whose `configuration` column holds `n`, numbered in the
/// order the runs first name them. The key stays typed here; the table only groups by its
/// number.
#[derive(Debug, Clone, Default)]
pub struct Configurations {
    pub of: Vec<(usize, CaseKey)>,
}

/// Open-loop columns (null for closed-loop runs), aggregated beside the metrics.
pub const OPEN_LOOP: [&str; 4] = [
    "achieved_rate",
    "service_p99_us",
    "schedule_lag_p99_us",
    "late_sends",
];

/// Builds the table: one row per run, its `configuration` number, `passed`, and the
/// metrics (null where a run did not report one).
pub fn runs(datasets: &[Dataset]) -> PolarsResult<(DataFrame, Configurations)> {
    let rows: Vec<(usize, &crate::model::Run)> = datasets
        .iter()
        .enumerate()
        .flat_map(|(d, set)| set.runs.iter().map(move |r| (d, r)))
        .collect();
    let mut numbers: HashMap<(usize, &CaseKey), u32> = HashMap::new();
    let mut configurations = Configurations::default();
    let configuration: Vec<u32> = rows
        .iter()
        .map(|&(d, r)| {
            *numbers.entry((d, &r.key)).or_insert_with(|| {
                configurations.of.push((d, r.key.clone()));
                (configurations.of.len() - 1) as u32
            })
        })
        .collect();
    let num = |name: &str, f: &dyn Fn(&crate::model::Run) -> Option<f64>| {
        Column::new(
            name.into(),
            rows.iter().map(|(_, r)| f(r)).collect::<Vec<_>>(),
        )
    };
    let metric = |m: Metric| num(m.name(), &move |r| r.metric(m));
    let columns = vec![
        Column::new("configuration".into(), configuration),
        num("achieved_rate", &|r| r.open_loop.map(|o| o.achieved_rate)),
        num("service_p99_us", &|r| r.open_loop.map(|o| o.service_p99_us)),
        num("schedule_lag_p99_us", &|r| {
            r.open_loop.map(|o| o.schedule_lag_p99_us)
        }),
        num("late_sends", &|r| r.open_loop.map(|o| o.late_sends as f64)),
        Column::new(
            "saturated".into(),
            rows.iter()
                .map(|(_, r)| r.open_loop.map(|o| o.saturated))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "passed".into(),
            rows.iter().map(|(_, r)| r.passed).collect::<Vec<_>>(),
        ),
        Column::new(
            "cpu_estimated".into(),
            rows.iter()
                .map(|(_, r)| r.cpu_estimated)
                .collect::<Vec<_>>(),
        ),
        num("cpu_seconds", &|r| r.cpu_seconds),
    ];
    let mut columns = columns;
    columns.extend(Metric::ALL.into_iter().map(metric));
    Ok((DataFrame::new(rows.len(), columns)?, configurations))
}
