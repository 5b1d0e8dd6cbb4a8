//! Imported runs and their agreement with echomark's: what each other load generator
//! measured per load, and, where echomark's client measured the same load in the same
//! dataset, whether the two agree. "Agrees" is said only where the ranges over the
//! repetitions overlap; a latency the tool kept at a coarse resolution (whole milliseconds)
//! stands for any value from half a unit below it (tools that round) to a unit above it
//! (tools that truncate).

use std::collections::BTreeSet;

use echomark_archive::{CaseKey, LatencyFidelity, Loop, Metric, OfferedLoad, Protocol};
use serde::Serialize;

use super::aggregate::{Configuration, Stat};
use crate::model::{Dataset, ImportedSource};

/// One load one tool measured, over its repetitions.
#[derive(Debug, Clone, Serialize)]
pub struct ToolLoad<'a> {
    pub config: &'a Configuration,
    /// The coarsest latency resolution of its runs, microseconds.
    pub resolution_us: f64,
    /// `None` when no run kept a latency.
    pub fidelity: Option<LatencyFidelity>,
    pub loop_kind: Loop,
    pub latency_correction: bool,
    /// Summed over the runs.
    pub errors: u64,
    pub non_2xx: u64,
    pub unfinished: Option<u64>,
}

/// One tool's loads in a dataset.
#[derive(Debug, Clone, Serialize)]
pub struct ToolRuns<'a> {
    pub source: ImportedSource,
    pub loads: Vec<ToolLoad<'a>>,
}

/// What each imported tool of `dataset` measured, in the order of the tools' files.
pub fn tools<'a>(dataset: &Dataset, configs: &[&'a Configuration]) -> Vec<ToolRuns<'a>> {
    let mut out: Vec<ToolRuns> = Vec::new();
    for source in dataset.files.iter().filter_map(|f| f.imported.clone()) {
        if out.iter().any(|t| t.source.tool == source.tool) {
            continue;
        }
        let backend = source.tool.as_str();
        let loads = configs
            .iter()
            .filter(|c| c.key.backend == backend)
            .map(|c| tool_load(dataset, c))
            .collect();
        out.push(ToolRuns { source, loads });
    }
    out
}

fn tool_load<'a>(dataset: &Dataset, config: &'a Configuration) -> ToolLoad<'a> {
    let figures: Vec<&crate::model::ImportedFigures> = dataset
        .runs
        .iter()
        .filter(|r| r.key == config.key)
        .filter_map(|r| r.imported.as_deref())
        .collect();
    let sum = |f: fn(&crate::model::ImportedFigures) -> u64| figures.iter().map(|x| f(x)).sum();
    ToolLoad {
        config,
        resolution_us: figures.iter().map(|f| f.resolution_us).fold(0.0, f64::max),
        fidelity: figures.iter().find_map(|f| f.fidelity),
        loop_kind: figures.first().map_or(Loop::Closed, |f| f.loop_kind),
        latency_correction: figures.iter().any(|f| f.latency_correction),
        errors: sum(|f| f.errors),
        non_2xx: sum(|f| f.non_2xx),
        unfinished: figures
            .iter()
            .filter_map(|f| f.unfinished)
            .reduce(|a, b| a + b),
    }
}

/// A metric of a tool set against echomark's: the ratio of the medians and whether the
/// ranges overlap.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Judged {
    pub echomark: Stat,
    pub tool: Stat,
    /// tool ÷ echomark; `None` where the tool's median is below its own resolution (a
    /// latency of "0 ms"), which no ratio describes.
    pub ratio: Option<f64>,
    pub agrees: bool,
}

/// One load measured by echomark's client and by one tool.
#[derive(Debug, Clone, Serialize)]
pub struct AgreementRow<'a> {
    pub echomark: &'a Configuration,
    pub tool: ToolLoad<'a>,
    pub source: ImportedSource,
    pub throughput: Option<Judged>,
    pub p50: Option<Judged>,
    pub p99: Option<Judged>,
}

/// The load two configurations must share to be set side by side: protocol, payload,
/// connections, requests in flight per connection and the offered rate.
fn same_load(a: &CaseKey, b: &CaseKey) -> bool {
    let load = |k: &CaseKey| -> (Protocol, u64, u64, u64, Option<OfferedLoad>) {
        (k.protocol, k.payload_bytes, k.clients, k.window, k.load)
    };
    load(a) == load(b)
}

/// The configurations of `configs` that echomark's client measured: those of no tool.
pub fn echomark_side<'a>(
    configs: &[&'a Configuration],
    tools: &[ToolRuns],
) -> Vec<&'a Configuration> {
    let imported: BTreeSet<&str> = tools.iter().map(|t| t.source.tool.as_str()).collect();
    configs
        .iter()
        .copied()
        .filter(|c| !imported.contains(c.key.backend.as_str()))
        .collect()
}

/// Every (load, tool) that echomark's client measured too, in the order of echomark's
/// configurations and then the tools'.
pub fn agreement<'a>(
    configs: &[&'a Configuration],
    tools: &[ToolRuns<'a>],
) -> Vec<AgreementRow<'a>> {
    let mut rows = Vec::new();
    for own in echomark_side(configs, tools) {
        for tool in tools {
            for load in tool
                .loads
                .iter()
                .filter(|l| same_load(&l.config.key, &own.key))
            {
                let resolution = load.resolution_us;
                rows.push(AgreementRow {
                    echomark: own,
                    tool: load.clone(),
                    source: tool.source.clone(),
                    throughput: judge(own, load.config, Metric::RoundtripsPerSecond, 0.0),
                    p50: judge(own, load.config, Metric::RttP50Us, resolution),
                    p99: judge(own, load.config, Metric::RttP99Us, resolution),
                });
            }
        }
    }
    rows
}

/// `metric` of `tool` against `own`, each over its passing runs; a tool value `v` stands for
/// anything in `[v − resolution / 2, v + resolution)`.
fn judge(
    own: &Configuration,
    tool: &Configuration,
    metric: Metric,
    resolution: f64,
) -> Option<Judged> {
    let (e, t) = (*own.stats.get(&metric)?, *tool.stats.get(&metric)?);
    if e.median <= 0.0 {
        return None;
    }
    let widened = Stat {
        median: t.median,
        min: (t.min - resolution / 2.0).max(0.0),
        max: t.max + resolution,
    };
    Some(Judged {
        echomark: e,
        tool: t,
        ratio: (t.median >= resolution && t.median > 0.0).then(|| t.median / e.median),
        agrees: widened.overlaps(&e),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn config(backend: &str, rate: f64, p50: (f64, f64)) -> Configuration {
        let mut key = crate::model::tests::run(Protocol::Http, 1).key;
        key.backend = echomark_archive::Backend::named(backend);
        let stat = |m: f64, lo: f64, hi: f64| Stat {
            median: m,
            min: lo,
            max: hi,
        };
        Configuration {
            dataset: "d".into(),
            key,
            status: super::super::aggregate::Status::Valid,
            runs: 3,
            runs_passed: 3,
            stats: BTreeMap::from([
                (
                    Metric::RoundtripsPerSecond,
                    stat(rate, rate * 0.98, rate * 1.02),
                ),
                (Metric::RttP50Us, stat(p50.0, p50.0, p50.1)),
            ]),
            values: BTreeMap::from([
                (
                    Metric::RoundtripsPerSecond,
                    vec![rate * 0.98, rate, rate * 1.02],
                ),
                (Metric::RttP50Us, vec![p50.0, p50.0, p50.1]),
            ]),
            cpu_seconds: None,
            cpu_percent_estimated: None,
            cpu_machine_percent: None,
            open_loop: None,
        }
    }

    #[test]
    fn agreement_is_said_only_where_ranges_overlap_within_the_tools_resolution() {
        let own = config("tokio", 100_000.0, (60.0, 70.0));
        let close = config("wrk", 101_000.0, (65.0, 66.0));
        let slower = config("oha", 60_000.0, (0.0, 0.0));
        fn tool(c: &Configuration, resolution: f64) -> ToolLoad<'_> {
            ToolLoad {
                config: c,
                resolution_us: resolution,
                fidelity: Some(LatencyFidelity::SummaryOnly),
                loop_kind: Loop::Closed,
                latency_correction: false,
                errors: 0,
                non_2xx: 0,
                unfinished: None,
            }
        }
        let source = |t: echomark_archive::Tool| ImportedSource {
            tool: t,
            version: None,
            host_recorded: true,
        };
        let tools = vec![
            ToolRuns {
                source: source(echomark_archive::Tool::Wrk),
                loads: vec![tool(&close, 1.0)],
            },
            ToolRuns {
                source: source(echomark_archive::Tool::Oha),
                loads: vec![tool(&slower, 1000.0)],
            },
        ];
        let rows = agreement(&[&own, &close, &slower], &tools);
        assert_eq!(
            rows.len(),
            2,
            "one row per tool, none for the tools themselves"
        );
        let wrk = rows[0].throughput.unwrap();
        assert!(wrk.agrees && (wrk.ratio.unwrap() - 1.01).abs() < 1e-9);
        assert!(rows[0].p50.unwrap().agrees);
        let oha = rows[1].throughput.unwrap();
        assert!(!oha.agrees, "60,000 against 100,000: apart");
        // p50 0 at a 1 ms resolution stands for anything below 1 ms: it agrees with 60 µs,
        // and no ratio is claimed for it.
        let p50 = rows[1].p50.unwrap();
        assert!(p50.agrees && p50.ratio.is_none());
    }
}
