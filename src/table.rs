//! The run table: every run of every dataset as one row of a polars DataFrame.

use polars::prelude::*;

use crate::model::Dataset;

use echomark_archive::Metric;

/// Key columns that identify a configuration within the table.
pub const KEY: [&str; 11] = [
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
