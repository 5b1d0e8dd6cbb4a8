//! The explorer's data file (`data/explore.js`): every closed-loop configuration of every
//! dataset with its repetitions, compact enough for a browser to filter and compare
//! ([`crate::analysis`] is its only source, as for the pages). It is a script, not JSON, so
//! the explorer also works from `file://`, where a page cannot fetch a file.
//!
//! Strings are numbered once (`s`); a configuration is a row of numbers. Every figure is
//! the repetitions themselves, unrounded: the explorer decides with the same rule as the
//! pages ([`echomark_decide::compare`], ported to JavaScript), and a test checks that the
//! two agree on every pair of datasets of the committed data.

use std::collections::BTreeMap;

use echomark_archive::Metric;
use serde::Serialize;

use crate::analysis::aggregate::{Configuration, Status};
use crate::analysis::Analysis;
use crate::model::Dataset;

/// The metrics the explorer shows, in its order, with the names its address uses.
pub const METRICS: [(&str, Option<Metric>); 4] = [
    ("rate", Some(Metric::RoundtripsPerSecond)),
    ("p50", Some(Metric::RttP50Us)),
    ("p99", Some(Metric::RttP99Us)),
    // CPU time per echo, from each run's process CPU and rate (or the server's own).
    ("cpu", None),
];

#[derive(Serialize)]
struct Data {
    /// The format, for a page that reads an older file.
    v: u32,
    /// The default rule: confidence level, throughput margin, latency margin.
    rule: [f64; 3],
    /// The string table.
    s: Vec<String>,
    /// Per dataset: name, folder, host, its kind in each language, recorded at (strings as
    /// indices), and its own rule (level, throughput margin, latency margin, looks).
    d: Vec<DatasetRow>,
    /// Per configuration: see [`ConfigRow`].
    c: Vec<ConfigRow>,
    /// Per metric of [`METRICS`], per configuration, the repetitions (empty when the
    /// configuration has none of it).
    m: BTreeMap<&'static str, Vec<Vec<f64>>>,
}

/// `[name, slug, host, kind en, kind zh, recorded, level, throughput margin, latency
/// margin, looks]`.
type DatasetRow = (usize, usize, usize, usize, usize, usize, f64, f64, f64, u32);

/// `[dataset, id, protocol, program, backend, model, threads, payload, clients, window,
/// work, setting, passed (1) or failed (0), runs]`: strings as indices, `setting` the QUIC
/// transport or UDP buffer a dataset varied (an empty string otherwise), `id` a stable
/// name of the configuration (its key's fingerprint) for the explorer's address.
type ConfigRow = (
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    u64,
    u64,
    u64,
    u64,
    u64,
    usize,
    u8,
    u64,
);

#[derive(Default)]
struct Strings {
    list: Vec<String>,
    index: BTreeMap<String, usize>,
}

impl Strings {
    fn of(&mut self, s: &str) -> usize {
        if let Some(i) = self.index.get(s) {
            return *i;
        }
        self.list.push(s.to_string());
        self.index.insert(s.to_string(), self.list.len() - 1);
        self.list.len() - 1
    }
}

/// The setting a configuration's dataset varied beyond its load and IO model, as the
/// explorer names it (the same in both languages: the archive's own terms): a fleet's
/// generators first, since they multiply the load's clients.
fn setting(c: &Configuration) -> String {
    let mut parts = Vec::new();
    if let Some(n) = c.key.generators {
        parts.push(format!("generators {n}"));
    }
    if let Some(q) = &c.key.quic_transport {
        parts.push(format!(
            "quic {}",
            serde_json::to_string(q).unwrap_or_default()
        ));
    }
    if let Some(b) = c.key.udp_server_recv_buffer {
        parts.push(format!("rcvbuf {}", crate::format::buffer_size(b)));
    }
    if let Some(load) = &c.key.load {
        parts.push(format!(
            "open loop {}",
            serde_json::to_string(load).unwrap_or_default()
        ));
    }
    parts.join(" · ")
}

/// What two configurations of different datasets must share to be set side by side: every
/// field of the key but the dataset (the explorer joins the same fields the same way).
pub fn share_key(c: &Configuration) -> String {
    let k = &c.key;
    [
        k.protocol.as_str().to_string(),
        k.implementation.clone(),
        k.backend.as_str().to_string(),
        k.io_model.as_str().to_string(),
        k.io_threads.to_string(),
        k.payload_bytes.to_string(),
        k.clients.to_string(),
        k.window.to_string(),
        k.handler_work.to_string(),
        setting(c),
    ]
    .join("|")
}

/// A configuration's stable name: the fingerprint of its dataset and key.
pub fn config_id(c: &Configuration) -> String {
    let key = serde_json::to_string(&(&c.dataset, &c.key)).unwrap_or_default();
    format!("{:08x}", crate::output::fingerprint(&key))
}

/// The repetitions of one explorer metric of `c`.
pub fn values(c: &Configuration, metric: &str) -> Vec<f64> {
    match METRICS.iter().find(|(name, _)| *name == metric) {
        Some((_, Some(m))) => c.values.get(m).cloned().unwrap_or_default(),
        Some((_, None)) => crate::analysis::recommend::cpu_per_echo_us(c),
        None => Vec::new(),
    }
}

/// The data file for `datasets`, as a script that sets `window.ECHOMARK_EXPLORE`; `kinds`
/// names each dataset's kind in English and Chinese.
pub fn data_js(datasets: &[Dataset], analysis: &Analysis, kinds: &[(String, String)]) -> String {
    let mut s = Strings::default();
    let rules = analysis.rules;
    let d: Vec<DatasetRow> = datasets
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let r = analysis.rules_of(&d.name);
            let (en, zh) = kinds.get(i).cloned().unwrap_or_default();
            (
                s.of(&d.name),
                s.of(&crate::output::dataset_folder(&d.name)),
                s.of(&crate::analysis::hosts::host_name(d).unwrap_or_default()),
                s.of(&en),
                s.of(&zh),
                s.of(d.recorded_at().map_or("", |t| t.get(..19).unwrap_or(t))),
                r.throughput.level,
                r.throughput.margin,
                r.latency.margin,
                r.throughput.looks,
            )
        })
        .collect();
    let index: BTreeMap<&str, usize> = datasets
        .iter()
        .enumerate()
        .map(|(i, d)| (d.name.as_str(), i))
        .collect();
    let mut c = Vec::new();
    let mut m: BTreeMap<&'static str, Vec<Vec<f64>>> = BTreeMap::new();
    for conf in &analysis.configurations {
        let Some(&dataset) = index.get(conf.dataset.as_str()) else {
            continue;
        };
        let k = &conf.key;
        c.push((
            dataset,
            s.of(&config_id(conf)),
            s.of(k.protocol.as_str()),
            s.of(&k.implementation),
            s.of(k.backend.as_str()),
            s.of(k.io_model.as_str()),
            k.io_threads,
            k.payload_bytes,
            k.clients,
            k.window,
            k.handler_work,
            s.of(&setting(conf)),
            u8::from(conf.status == Status::Valid),
            conf.runs,
        ));
        for (name, _) in METRICS {
            m.entry(name).or_default().push(values(conf, name));
        }
    }
    let data = Data {
        v: 1,
        rule: [
            rules.throughput.level,
            rules.throughput.margin,
            rules.latency.margin,
        ],
        s: s.list,
        d,
        c,
        m,
    };
    let json = serde_json::to_string(&data).expect("the explorer's data serialises");
    format!("window.ECHOMARK_EXPLORE={};\n", script_safe(&json))
}

/// `json` safe inside a `<script>` element and as a script file: no `<` (so no
/// `</script>` or `<!--`) and no line separators that older parsers end a string at.
pub fn script_safe(json: &str) -> String {
    json.replace('<', "\\u003c")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}
