//! The run table: every run of every dataset as one row of a polars DataFrame.

use polars::prelude::*;

use crate::model::Dataset;

use echomark_archive::Metric;

/// Key columns that identify a configuration within the table.
pub const KEY: [&str; 13] = [
    "dataset",
    "backend",
    "implementation",
    "protocol",
    "payload_bytes",
    "clients",
    "window",
    "io_model",
    "io_threads",
    "handler_work",
    "udp_server_recv_buffer",
    "offered_rate",
    "arrival",
];

/// Open-loop columns (null for closed-loop runs), aggregated beside the metrics.
pub const OPEN_LOOP: [&str; 4] = [
    "achieved_rate",
    "service_p99_us",
    "schedule_lag_p99_us",
    "late_sends",
];

/// Builds the table: one row per run, key columns, `passed`, and the metrics (null where a
/// run did not report one).
pub fn runs(datasets: &[Dataset]) -> PolarsResult<DataFrame> {
    let rows: Vec<(&str, &crate::model::Run)> = datasets
        .iter()
        .flat_map(|d| d.runs.iter().map(move |r| (d.name.as_str(), r)))
        .collect();
    let text = |name: &str, f: &dyn Fn(&crate::model::Run) -> &str| {
        Column::new(
            name.into(),
            rows.iter().map(|(_, r)| f(r)).collect::<Vec<_>>(),
        )
    };
    let int = |name: &str, f: &dyn Fn(&crate::model::Run) -> u64| {
        Column::new(
            name.into(),
            rows.iter().map(|(_, r)| f(r)).collect::<Vec<_>>(),
        )
    };
    let num = |name: &str, f: &dyn Fn(&crate::model::Run) -> Option<f64>| {
        Column::new(
            name.into(),
            rows.iter().map(|(_, r)| f(r)).collect::<Vec<_>>(),
        )
    };
    let metric = |m: Metric| num(m.name(), &move |r| r.metric(m));
    let columns = vec![
        Column::new(
            "dataset".into(),
            rows.iter().map(|(d, _)| *d).collect::<Vec<_>>(),
        ),
        text("backend", &|r| &r.key.backend),
        text("implementation", &|r| &r.key.implementation),
        text("protocol", &|r| r.key.protocol.as_str()),
        int("payload_bytes", &|r| r.key.payload_bytes),
        int("clients", &|r| r.key.clients),
        int("window", &|r| r.key.window),
        text("io_model", &|r| r.key.io_model.as_str()),
        int("io_threads", &|r| r.key.io_threads),
        int("handler_work", &|r| r.key.handler_work),
        Column::new(
            "udp_server_recv_buffer".into(),
            rows.iter()
                .map(|(_, r)| r.key.udp_server_recv_buffer)
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "offered_rate".into(),
            rows.iter()
                .map(|(_, r)| r.key.load.map(|l| l.rate))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "arrival".into(),
            rows.iter()
                .map(|(_, r)| r.key.load.map(|l| l.arrival.as_str()))
                .collect::<Vec<_>>(),
        ),
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
    DataFrame::new(rows.len(), columns)
}
