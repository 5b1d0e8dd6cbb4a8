//! `summary.json` and `summary.csv`: every configuration, unrounded, with arknet's summary
//! field names plus `dataset`, `status`, `runs` and `runs_passed`.

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::aggregate::{Configuration, Stat};
use crate::table::METRICS;

fn stat_json(s: Option<Stat>) -> Value {
    s.map_or(
        Value::Null,
        |s| json!({"median": s.median, "min": s.min, "max": s.max}),
    )
}

/// One summary row as a JSON object (field order is stable).
pub fn row(c: &Configuration, repetitions: u64) -> Value {
    let k = &c.key;
    let mut m = Map::new();
    m.insert("dataset".into(), json!(c.dataset));
    m.insert("backend".into(), json!(k.backend));
    m.insert("implementation".into(), json!(k.implementation));
    m.insert("protocol".into(), json!(k.protocol));
    m.insert("payload_bytes".into(), json!(k.payload_bytes));
    m.insert("clients".into(), json!(k.clients));
    m.insert("window".into(), json!(k.window));
    m.insert("io_model".into(), json!(k.io_model));
    m.insert("io_threads".into(), json!(k.io_threads));
    m.insert("handler_work".into(), json!(k.handler_work));
    if let Some(buffer) = k.udp_server_recv_buffer {
        m.insert("udp_server_recv_buffer".into(), json!(buffer));
    }
    m.insert("repetitions".into(), json!(repetitions));
    m.insert(
        "status".into(),
        serde_json::to_value(c.status).expect("plain enum"),
    );
    m.insert("runs".into(), json!(c.runs));
    m.insert("runs_passed".into(), json!(c.runs_passed));
    for metric in METRICS {
        m.insert(metric.into(), stat_json(c.stat(metric)));
    }
    m.insert("cpu_seconds".into(), json!(c.cpu_seconds));
    m.insert(
        "cpu_percent_estimated".into(),
        json!(c.cpu_percent_estimated),
    );
    m.insert(
        "cpu_machine_percent".into(),
        stat_json(c.cpu_machine_percent),
    );
    Value::Object(m)
}

/// The CSV header and rows: one column per key field and per statistic.
pub fn csv(rows: &[Value]) -> String {
    let mut header: Vec<String> = Vec::new();
    if let Some(Value::Object(first)) = rows.first() {
        for (k, v) in first {
            match v {
                Value::Object(_) | Value::Null if is_stat(k) => {
                    for part in ["median", "min", "max"] {
                        header.push(format!("{k}_{part}"));
                    }
                }
                _ => header.push(k.clone()),
            }
        }
    }
    let mut out = header.join(",");
    out.push('\n');
    for row in rows {
        let Value::Object(obj) = row else { continue };
        let mut cells = Vec::with_capacity(header.len());
        for (k, v) in obj {
            if is_stat(k) {
                for part in ["median", "min", "max"] {
                    cells.push(cell(v.get(part).unwrap_or(&Value::Null)));
                }
            } else {
                cells.push(cell(v));
            }
        }
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

fn is_stat(key: &str) -> bool {
    METRICS.contains(&key) || key == "cpu_machine_percent"
}

fn cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) if s.contains([',', '"', '\n']) => {
            format!("\"{}\"", s.replace('"', "\"\""))
        }
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The whole `summary.json` document of one dataset.
#[derive(Debug, Serialize)]
pub struct SummaryDocument {
    pub dataset: String,
    pub source_sha256: Option<String>,
    pub host: Value,
    pub runs: usize,
    pub runs_passed: usize,
    pub configurations: usize,
    pub configurations_valid: usize,
    pub profiles: Vec<Value>,
    pub rankings: Vec<crate::rank::Ranking>,
    /// Each stream protocol against TCP, and each TLS protocol against its plaintext form,
    /// on every configuration both passed (see [`crate::compare`]).
    pub protocol_ratios: Vec<crate::compare::RatioRow>,
    pub failed_configurations: Vec<crate::validate::FailedConfiguration>,
}

impl SummaryDocument {
    /// The summary of dataset `d` from the aggregated `configurations` and `rankings` of all
    /// datasets (only `d`'s rows are taken).
    pub fn of(
        d: &crate::model::Dataset,
        configurations: &[Configuration],
        rankings: &[crate::rank::Ranking],
    ) -> Self {
        let report = crate::validate::report(d);
        let repetitions = d.repetitions();
        let mine: Vec<&Configuration> = configurations
            .iter()
            .filter(|c| c.dataset == d.name)
            .collect();
        Self {
            dataset: d.name.clone(),
            source_sha256: d.files.first().and_then(|f| f.source_sha256.clone()),
            host: serde_json::to_value(d.files.first().map(|f| &f.host)).unwrap_or(Value::Null),
            runs: report.runs,
            runs_passed: report.runs_passed,
            configurations: report.configurations,
            configurations_valid: report.configurations_valid,
            profiles: mine.iter().map(|c| row(c, repetitions)).collect(),
            rankings: rankings
                .iter()
                .filter(|r| r.group.dataset == d.name)
                .cloned()
                .collect(),
            protocol_ratios: crate::compare::ratio_rows(&mine),
            failed_configurations: report.failed_configurations,
        }
    }

    /// `summary.json` bytes: pretty, with a trailing newline.
    pub fn json(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("plain data serialises");
        bytes.push(b'\n');
        bytes
    }

    /// `summary.csv` text.
    pub fn csv(&self) -> String {
        csv(&self.profiles)
    }
}
