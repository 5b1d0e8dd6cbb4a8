//! `summary.json` and `summary.csv`: every configuration, unrounded, with arknet's summary
//! field names plus `dataset`, `status`, `runs` and `runs_passed`.

use serde::Serialize;
use serde_json::{json, Map, Value};

use echomark_archive::Metric;

use crate::analysis::aggregate::{Configuration, Stat};
use crate::analysis::DatasetAnalysis;

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
    // A fleet's generators, each with `clients` connections; null without a fleet.
    m.insert("generators".into(), json!(k.generators));
    if let Some(buffer) = k.udp_server_recv_buffer {
        m.insert("udp_server_recv_buffer".into(), json!(buffer));
    }
    if let Some(load) = k.load {
        m.insert("offered_rate".into(), json!(load.rate));
        m.insert("arrival".into(), json!(load.arrival));
    }
    m.insert("repetitions".into(), json!(repetitions));
    m.insert(
        "status".into(),
        serde_json::to_value(c.status).expect("plain enum"),
    );
    m.insert("runs".into(), json!(c.runs));
    m.insert("runs_passed".into(), json!(c.runs_passed));
    for metric in Metric::ALL {
        m.insert(metric.name().into(), stat_json(c.stat(metric)));
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

/// The CSV header and rows: one column per key field and per statistic, written with the
/// `csv` crate (quoting) and with text cells a spreadsheet would run as a formula (a leading
/// `=`, `+`, `-`, `@`, tab or carriage return) neutralised by a leading `'`.
pub fn csv(rows: &[Value]) -> String {
    // The columns of every row, in the order they first appear: a key a configuration may
    // leave out (an open-loop load) is an empty cell in the rows without it.
    let mut keys: Vec<&str> = Vec::new();
    for row in rows {
        if let Value::Object(obj) = row {
            for k in obj.keys() {
                if !keys.contains(&k.as_str()) {
                    keys.push(k);
                }
            }
        }
    }
    let mut header: Vec<String> = Vec::new();
    for k in &keys {
        if is_stat(k) {
            for part in ["median", "min", "max"] {
                header.push(format!("{k}_{part}"));
            }
        } else {
            header.push(k.to_string());
        }
    }
    let mut writer = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    let write = |w: &mut csv::Writer<Vec<u8>>, cells: &[String]| {
        w.write_record(cells)
            .expect("writing to memory cannot fail");
    };
    write(&mut writer, &header);
    for row in rows {
        let Value::Object(obj) = row else { continue };
        let mut cells = Vec::with_capacity(header.len());
        for k in &keys {
            let v = obj.get(*k).unwrap_or(&Value::Null);
            if is_stat(k) {
                for part in ["median", "min", "max"] {
                    cells.push(cell(v.get(part).unwrap_or(&Value::Null)));
                }
            } else {
                cells.push(cell(v));
            }
        }
        write(&mut writer, &cells);
    }
    let bytes = writer.into_inner().expect("writing to memory cannot fail");
    String::from_utf8(bytes).expect("the cells are UTF-8")
}

fn is_stat(key: &str) -> bool {
    Metric::ALL.iter().any(|m| m.name() == key) || key == "cpu_machine_percent"
}

/// One cell's text: empty for null, the JSON number or boolean, or the string with a
/// formula-starting character neutralised.
fn cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) if s.starts_with(['=', '+', '-', '@', '\t', '\r']) => format!("'{s}"),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The whole `summary.json` document of one dataset.
#[derive(Debug, Serialize)]
pub struct SummaryDocument {
    pub dataset: String,
    pub source_sha256: Option<String>,
    pub host: Option<crate::model::HostInfo>,
    pub runs: usize,
    pub runs_passed: usize,
    pub configurations: usize,
    pub configurations_valid: usize,
    pub profiles: Vec<Value>,
    pub rankings: Vec<crate::analysis::rank::Ranking>,
    /// Each stream protocol against TCP, and each TLS protocol against its plaintext form,
    /// on every configuration both passed (see [`crate::analysis::ratios`]).
    pub protocol_ratios: Vec<crate::analysis::ratios::RatioRow>,
    /// Datasets of several backends: each other backend against the base one (tokio when
    /// present) on every configuration both passed, with the range verdicts (see
    /// [`crate::analysis::backends`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub backend_ratios: Vec<crate::analysis::backends::BackendRow>,
    pub failed_configurations: Vec<crate::validate::FailedConfiguration>,
    /// Open-loop datasets: latency against offered load, one curve per configuration.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub load_curves: Vec<crate::analysis::load_curve::LoadCurve>,
}

impl SummaryDocument {
    /// The summary of dataset `d` from the analysis of every dataset (only `d`'s rows are
    /// taken) and `d`'s own analysis.
    pub fn of(
        d: &crate::model::Dataset,
        all: &crate::analysis::Analysis,
        own: &DatasetAnalysis,
    ) -> Self {
        let report = &own.report;
        let repetitions = d.repetitions();
        Self {
            dataset: d.name.clone(),
            source_sha256: d.files.first().and_then(|f| f.source_sha256.clone()),
            host: d.host().cloned(),
            runs: report.runs,
            runs_passed: report.runs_passed,
            configurations: report.configurations,
            configurations_valid: report.configurations_valid,
            profiles: all
                .configurations
                .iter()
                .filter(|c| c.dataset == d.name)
                .map(|c| row(c, repetitions))
                .collect(),
            rankings: all
                .rankings
                .iter()
                .filter(|r| r.group.dataset == d.name)
                .cloned()
                .collect(),
            protocol_ratios: own.ratios.clone(),
            backend_ratios: own.backends.clone(),
            failed_configurations: report.failed_configurations.clone(),
            load_curves: all
                .curves
                .iter()
                .filter(|c| c.dataset == d.name)
                .cloned()
                .collect(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn csv_quotes_and_neutralises_formulas() {
        let rows = vec![
            json!({"dataset": "=HYPERLINK(\"x\")", "backend": "a,b", "runs": 3, "rtt_p99_us": {"median": 1.5, "min": 1.0, "max": 2.0}}),
        ];
        let text = csv(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "dataset,backend,runs,rtt_p99_us_median,rtt_p99_us_min,rtt_p99_us_max"
        );
        assert_eq!(lines[1], "\"'=HYPERLINK(\"\"x\"\")\",\"a,b\",3,1.5,1.0,2.0");
        for start in ["+1", "-1", "@x", "\tx", "\rx"] {
            assert!(cell(&json!(start)).starts_with('\''), "{start:?}");
        }
        assert_eq!(cell(&json!(-1.5)), "-1.5", "numbers are not neutralised");
    }

    #[test]
    fn rows_with_a_key_others_lack_get_an_empty_cell_in_the_others() {
        // An open-loop configuration has a `load`; a closed-loop one has none.
        let rows = vec![
            json!({"dataset": "d", "runs": 3}),
            json!({"dataset": "d", "load": 5000, "runs": 3}),
        ];
        let text = csv(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines, ["dataset,runs,load", "d,3,", "d,3,5000"]);
    }

    #[test]
    fn every_row_has_a_generators_cell_empty_without_a_fleet() {
        use crate::analysis::aggregate::{test_rated, Status};
        let plain = test_rated("tcp", "shared", 1, (1000.0, 10.0), Status::Valid);
        let mut fleet = plain.clone();
        fleet.key.generators = Some(4);
        let rows = [row(&plain, 3), row(&fleet, 3)];
        assert_eq!(rows[0]["generators"], Value::Null);
        assert_eq!(rows[1]["generators"], 4);
        let text = csv(&rows);
        let lines: Vec<&str> = text.lines().collect();
        let column = lines[0].split(',').position(|c| c == "generators").unwrap();
        let cells = |line: &str| line.split(',').nth(column).map(str::to_string);
        assert_eq!(cells(lines[1]).as_deref(), Some(""));
        assert_eq!(cells(lines[2]).as_deref(), Some("4"));
        assert_eq!(
            lines[0].split(',').nth(column - 1),
            Some("handler_work"),
            "after the other key fields"
        );
    }
}
