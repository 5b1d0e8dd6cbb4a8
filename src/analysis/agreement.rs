//! Imported runs and their agreement with echomark's: what each other load generator
//! measured per load, and, where echomark's client measured the same load in the same
//! dataset, whether the two agree. The comparison rule decides: a tool "agrees" only where
//! its figure is equivalent to echomark's within the margin, and differs where the rule
//! finds it higher or lower; a noisy pair is undecided, never an agreement. A latency the
//! tool kept at a resolution coarser than the margin (whole milliseconds for a
//! sub-millisecond figure) cannot be judged by it, and is said to be.

use std::collections::BTreeSet;

use echomark_archive::{CaseKey, LatencyFidelity, Loop, Metric, OfferedLoad, Protocol};
use serde::Serialize;

use super::aggregate::{Configuration, Stat};
use super::decision::{decide, Rules};
use crate::model::{Dataset, ImportedSource};
use echomark_decide::Decision;

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

/// A metric of a tool set against echomark's: the ratio of the medians and the rule's
/// decision on the tool's figure against echomark's.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Judged {
    pub echomark: Stat,
    pub tool: Stat,
    /// tool ÷ echomark; `None` where the tool's median is below its own resolution (a
    /// latency of "0 ms"), which no ratio describes.
    pub ratio: Option<f64>,
    /// The tool against echomark; `None` where the tool's resolution is coarser than the
    /// margin of echomark's median, so its figures cannot be judged to that margin.
    pub decision: Option<Decision>,
}

impl Judged {
    /// Whether the tool's figure is equivalent to echomark's within the margin.
    pub fn agrees(&self) -> bool {
        self.decision
            .is_some_and(|d| d.verdict == echomark_decide::Verdict::Equivalent)
    }
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
/// connections (and a fleet's generators), requests in flight per connection and the
/// offered rate.
fn same_load(a: &CaseKey, b: &CaseKey) -> bool {
    type Load = (Protocol, u64, u64, Option<u64>, u64, Option<OfferedLoad>);
    let load = |k: &CaseKey| -> Load {
        (
            k.protocol,
            k.payload_bytes,
            k.clients,
            k.generators,
            k.window,
            k.load,
        )
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
    rules: &Rules,
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
                    throughput: judge(own, load.config, Metric::RoundtripsPerSecond, 0.0, rules),
                    p50: judge(own, load.config, Metric::RttP50Us, resolution, rules),
                    p99: judge(own, load.config, Metric::RttP99Us, resolution, rules),
                });
            }
        }
    }
    rows
}

/// `metric` of `tool` against `own`, each over its passing runs, decided by the rule where
/// the tool's `resolution` is finer than the margin of echomark's median.
fn judge(
    own: &Configuration,
    tool: &Configuration,
    metric: Metric,
    resolution: f64,
    rules: &Rules,
) -> Option<Judged> {
    let (e, t) = (*own.stats.get(&metric)?, *tool.stats.get(&metric)?);
    if e.median <= 0.0 {
        return None;
    }
    let fine_enough = resolution < rules.for_metric(metric).margin * e.median;
    Some(Judged {
        echomark: e,
        tool: t,
        ratio: (t.median >= resolution && t.median > 0.0).then(|| t.median / e.median),
        decision: fine_enough
            .then(|| decide(own, tool, metric, rules))
            .flatten(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A configuration of `backend` whose runs measured `rates` and `p50s`.
    fn config(backend: &str, rates: [f64; 3], p50s: [f64; 3]) -> Configuration {
        let mut key = crate::model::tests::run(Protocol::Http, 1).key;
        key.backend = echomark_archive::Backend::named(backend);
        let stat = |v: [f64; 3]| Stat {
            median: v[1],
            min: v[0],
            max: v[2],
        };
        Configuration {
            dataset: "d".into(),
            key,
            status: super::super::aggregate::Status::Valid,
            runs: 3,
            runs_passed: 3,
            stats: BTreeMap::from([
                (Metric::RoundtripsPerSecond, stat(rates)),
                (Metric::RttP50Us, stat(p50s)),
            ]),
            values: BTreeMap::from([
                (Metric::RoundtripsPerSecond, rates.to_vec()),
                (Metric::RttP50Us, p50s.to_vec()),
            ]),
            server_cpu_us_per_echo: Vec::new(),
            cpu_seconds: None,
            cpu_percent_estimated: None,
            cpu_machine_percent: None,
            open_loop: None,
        }
    }

    #[test]
    fn a_tool_agrees_only_where_the_rule_finds_it_equivalent_to_its_resolution() {
        let own = config(
            "tokio",
            [99_900.0, 100_000.0, 100_100.0],
            [60.0, 61.0, 62.0],
        );
        // 1 % above echomark's, as tight: equivalent within ±5 %.
        let close = config("wrk", [100_900.0, 101_000.0, 101_100.0], [50.0, 65.0, 80.0]);
        // 40 % below, and a p50 of "0 ms" kept in whole milliseconds.
        let slower = config("oha", [59_900.0, 60_000.0, 60_100.0], [0.0, 0.0, 0.0]);
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
        let rows = agreement(&[&own, &close, &slower], &tools, &Rules::default());
        assert_eq!(
            rows.len(),
            2,
            "one row per tool, none for the tools themselves"
        );
        let wrk = rows[0].throughput.unwrap();
        assert!(wrk.agrees() && (wrk.ratio.unwrap() - 1.01).abs() < 1e-9);
        // A p50 spread from 50 to 80 µs against 60 to 62: undecided, which is no agreement.
        let p50 = rows[0].p50.unwrap();
        assert!(!p50.agrees(), "{p50:?}");
        assert!(matches!(
            p50.decision.map(|d| d.verdict),
            Some(echomark_decide::Verdict::Undecided { .. })
        ));
        let oha = rows[1].throughput.unwrap();
        assert_eq!(
            oha.decision.map(|d| d.verdict),
            Some(echomark_decide::Verdict::Lower),
            "60,000 against 100,000"
        );
        // A 1 ms resolution cannot judge a 61 µs p50 to ±10 %: no decision, no ratio.
        let p50 = rows[1].p50.unwrap();
        assert!(p50.decision.is_none() && p50.ratio.is_none() && !p50.agrees());
    }
}
