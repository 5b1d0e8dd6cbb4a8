//! Aggregation: median, min and max of every metric per configuration, with polars
//! expressions over the run table. Latency is the median of per-run percentiles (arknet's
//! method); samples are never pooled. A median of an even count is the mean of the two
//! middle values.

use std::collections::{BTreeMap, HashMap};

use polars::prelude::*;
use serde::Serialize;

use crate::model::{Dataset, Run};
use echomark_archive::CaseKey;
use echomark_archive::Metric;

use crate::table;

/// Median, min and max over a configuration's runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Stat {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Stat {
    /// Whether the [min, max] ranges of two stats overlap.
    pub fn overlaps(&self, other: &Stat) -> bool {
        self.min <= other.max && other.min <= self.max
    }

    /// Each figure divided by `by`.
    pub(crate) fn scaled(self, by: f64) -> Stat {
        Stat {
            median: self.median / by,
            min: self.min / by,
            max: self.max / by,
        }
    }
}

/// Whether a configuration may be ranked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Every run passed.
    Valid,
    /// At least one run failed: excluded from rankings, charts' bars and ratios.
    Failed,
}

/// One configuration's aggregate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Configuration {
    pub dataset: String,
    #[serde(flatten)]
    pub key: CaseKey,
    pub status: Status,
    pub runs: u64,
    pub runs_passed: u64,
    /// Only the metrics some run reported.
    pub stats: BTreeMap<Metric, Stat>,
    /// Each metric's value in every run that reported it, in repetition order: what the
    /// comparison rule ([`crate::analysis::decision`]) judges. Not serialised (the summary
    /// lists the runs themselves).
    #[serde(skip)]
    pub values: BTreeMap<Metric, Vec<f64>>,
    /// An external server's own CPU time per echo (µs) in every run that measured it, in
    /// repetition order (the matrix's `wait4` on the server process); empty in process.
    #[serde(skip)]
    pub server_cpu_us_per_echo: Vec<f64>,
    /// Median of the CPU seconds as reported (their interval depends on the program).
    pub cpu_seconds: Option<f64>,
    /// Whether any run's CPU interval had to be estimated; `None` without CPU figures.
    pub cpu_percent_estimated: Option<bool>,
    /// `cpu_percent` ÷ the host's logical CPUs: the share of the whole machine.
    pub cpu_machine_percent: Option<Stat>,
    /// Open-loop configurations: what the schedules achieved over the runs.
    pub open_loop: Option<OpenLoopStats>,
}

/// An open-loop configuration's schedule figures over its runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct OpenLoopStats {
    /// Messages sent per second.
    pub achieved_rate: Stat,
    /// p99 of the latency from the actual send time.
    pub service_p99_us: Stat,
    /// p99 of how late the sender wrote its messages.
    pub schedule_lag_p99_us: Stat,
    pub late_sends: Stat,
    /// Runs that could not keep the schedule (see `OpenLoopMetrics::saturated`).
    pub saturated_runs: u64,
}

impl Configuration {
    /// The share of its runs that failed (0 to 1).
    pub fn failed_share(&self) -> f64 {
        1.0 - self.runs_passed as f64 / self.runs.max(1) as f64
    }

    /// A metric's statistic, if any run reported it.
    pub fn stat(&self, metric: Metric) -> Option<Stat> {
        self.stats.get(&metric).copied()
    }
}

/// A configuration of 1,024 B, 16 clients, window 16, no work, for unit tests.
#[cfg(test)]
pub(crate) fn test_configuration(
    protocol: &str,
    io_model: &str,
    io_threads: u64,
    stats: BTreeMap<Metric, Stat>,
    status: Status,
) -> Configuration {
    Configuration {
        dataset: "d".into(),
        key: CaseKey {
            backend: "tokio".into(),
            implementation: "echomark".into(),
            protocol: protocol.parse().expect("a protocol name"),
            payload_bytes: 1024,
            clients: 16,
            window: 16,
            io_model: io_model.parse().expect("an IO model name"),
            io_threads,
            handler_work: 0,
            udp_server_recv_buffer: None,
            load: None,
            quic_transport: None,
            generators: None,
        },
        status,
        runs: 3,
        runs_passed: if status == Status::Valid { 3 } else { 2 },
        values: stats
            .iter()
            .map(|(m, s)| (*m, vec![s.min, s.median, s.max]))
            .collect(),
        server_cpu_us_per_echo: Vec::new(),
        stats,
        cpu_seconds: None,
        cpu_percent_estimated: None,
        cpu_machine_percent: None,
        open_loop: None,
    }
}

/// [`test_configuration`] with only a throughput and a p99 median (no spread).
#[cfg(test)]
pub(crate) fn test_rated(
    protocol: &str,
    io_model: &str,
    io_threads: u64,
    (rate, p99): (f64, f64),
    status: Status,
) -> Configuration {
    let stat = |v: f64| Stat {
        median: v,
        min: v,
        max: v,
    };
    let stats = BTreeMap::from([
        (Metric::RoundtripsPerSecond, stat(rate)),
        (Metric::RttP99Us, stat(p99)),
    ]);
    test_configuration(protocol, io_model, io_threads, stats, status)
}

fn agg_exprs() -> Vec<Expr> {
    let mut exprs = vec![
        len().alias("runs"),
        col("passed")
            .cast(DataType::UInt32)
            .sum()
            .alias("runs_passed"),
        col("cpu_estimated")
            .cast(DataType::UInt32)
            .sum()
            .alias("cpu_estimated_runs"),
        col("cpu_seconds").median().alias("cpu_seconds_median"),
        col("cpu_percent").null_count().alias("cpu_percent_missing"),
    ];
    exprs.push(
        col("saturated")
            .cast(DataType::UInt32)
            .sum()
            .alias("saturated_runs"),
    );
    for m in Metric::ALL
        .map(Metric::name)
        .into_iter()
        .chain(table::OPEN_LOOP)
    {
        exprs.push(col(m).median().alias(format!("{m}_median")));
        exprs.push(col(m).min().alias(format!("{m}_min")));
        exprs.push(col(m).max().alias(format!("{m}_max")));
    }
    exprs
}

/// Aggregates every configuration of every dataset, in canonical order: dataset, backend,
/// implementation, protocol, payload, clients, window, a fleet's generators, topology (1×1,
/// 1×2, 1×4, 2×1, 4×1), work.
pub fn configurations(datasets: &[Dataset]) -> PolarsResult<Vec<Configuration>> {
    let (runs, numbered) = table::runs(datasets)?;
    let df = runs
        .lazy()
        .group_by_stable([col("configuration")])
        .agg(agg_exprs())
        .collect()?;
    let logical_cpus = logical_cpus(datasets);
    let columns = Columns::of(&df)?;
    let mut runs_of = runs_of(datasets);
    let mut out = Vec::with_capacity(df.height());
    for i in 0..df.height() {
        // Every group is one configuration the table numbered.
        let Some((dataset, key)) =
            columns.configuration[i].and_then(|n| numbered.of.get(n as usize))
        else {
            continue;
        };
        let mut in_order = runs_of.remove(&(*dataset, key)).unwrap_or_default();
        in_order.sort_by_key(|r| r.repetition);
        out.push(columns.configuration_at(
            i,
            (&datasets[*dataset], key),
            &in_order,
            logical_cpus.get(*dataset).copied().flatten(),
        ));
    }
    out.sort_by(|a, b| canonical(a).cmp(&canonical(b)));
    Ok(out)
}

/// Each dataset's host's logical CPUs, where it says them.
fn logical_cpus(datasets: &[Dataset]) -> Vec<Option<f64>> {
    datasets
        .iter()
        .map(|d| {
            d.host()
                .and_then(|h| h.logical_cpus)
                .filter(|n| *n > 0)
                .map(|n| n as f64)
        })
        .collect()
}

/// Each configuration's runs (by dataset index and key), in the datasets' order.
fn runs_of(datasets: &[Dataset]) -> HashMap<(usize, &CaseKey), Vec<&Run>> {
    let mut runs_of: HashMap<(usize, &CaseKey), Vec<&Run>> = HashMap::new();
    for (d, set) in datasets.iter().enumerate() {
        for r in &set.runs {
            runs_of.entry((d, &r.key)).or_default().push(r);
        }
    }
    runs_of
}

/// The median, min and max columns of one figure.
type StatColumns = [Vec<Option<f64>>; 3];

/// The aggregated table's columns, one value per configuration.
struct Columns {
    /// The configuration's number in the run table.
    configuration: Vec<Option<u32>>,
    saturated: Vec<Option<u64>>,
    /// The figures of [`table::OPEN_LOOP`], in its order.
    open_loop: Vec<StatColumns>,
    runs: Vec<Option<u64>>,
    passed: Vec<Option<u64>>,
    cpu_estimated: Vec<Option<u64>>,
    cpu_missing: Vec<Option<u64>>,
    cpu_seconds: Vec<Option<f64>>,
    /// Every metric's, in [`Metric::ALL`]'s order.
    stats: Vec<(Metric, StatColumns)>,
}

impl Columns {
    /// The columns of `df`, as [`agg_exprs`] named them.
    fn of(df: &DataFrame) -> PolarsResult<Self> {
        let u = |name: &str| -> PolarsResult<Vec<Option<u64>>> {
            let c = df.column(name)?.cast(&DataType::UInt64)?;
            Ok(c.u64()?.iter().collect())
        };
        let f = |name: &str| -> PolarsResult<Vec<Option<f64>>> {
            let c = df.column(name)?.cast(&DataType::Float64)?;
            Ok(c.f64()?.iter().collect())
        };
        let stat_columns = |name: &str| -> PolarsResult<StatColumns> {
            Ok([
                f(&format!("{name}_median"))?,
                f(&format!("{name}_min"))?,
                f(&format!("{name}_max"))?,
            ])
        };
        let configuration: Vec<Option<u32>> = df.column("configuration")?.u32()?.iter().collect();
        let saturated = u("saturated_runs")?;
        let open_loop: Vec<StatColumns> = table::OPEN_LOOP
            .iter()
            .map(|name| stat_columns(name))
            .collect::<PolarsResult<_>>()?;
        let (runs, passed, cpu_estimated, cpu_missing) = (
            u("runs")?,
            u("runs_passed")?,
            u("cpu_estimated_runs")?,
            u("cpu_percent_missing")?,
        );
        let cpu_seconds = f("cpu_seconds_median")?;
        let mut stats: Vec<(Metric, StatColumns)> = Vec::new();
        for m in Metric::ALL {
            stats.push((m, stat_columns(m.name())?));
        }
        Ok(Self {
            configuration,
            saturated,
            open_loop,
            runs,
            passed,
            cpu_estimated,
            cpu_missing,
            cpu_seconds,
            stats,
        })
    }

    /// Row `i`: the configuration `key` of `dataset`, whose runs are `in_order` (by
    /// repetition) on a host of `logical_cpus`.
    fn configuration_at(
        &self,
        i: usize,
        (dataset, key): (&Dataset, &CaseKey),
        in_order: &[&Run],
        logical_cpus: Option<f64>,
    ) -> Configuration {
        let runs = self.runs[i].unwrap_or(0);
        let runs_passed = self.passed[i].unwrap_or(0);
        let mut by_metric = self.stats_at(i);
        // CPU only when every run has a value (arknet: exactly all repetitions).
        let cpu_complete = self.cpu_missing[i] == Some(0);
        if !cpu_complete {
            by_metric.remove(&Metric::CpuPercent);
        }
        let open_loop = key.load.and_then(|_| self.open_loop_at(i));
        let values = Metric::ALL
            .into_iter()
            .filter(|m| by_metric.contains_key(m))
            .map(|m| (m, in_order.iter().filter_map(|r| r.metric(m)).collect()))
            .collect();
        let server_cpu_us_per_echo = in_order
            .iter()
            .filter_map(|r| r.instruments.server_cpu_us_per_echo)
            .collect();
        let cpu = by_metric.get(&Metric::CpuPercent).copied();
        let machine = cpu.zip(logical_cpus).map(|(c, n)| c.scaled(n));
        Configuration {
            key: key.clone(),
            dataset: dataset.name.clone(),
            status: if runs_passed == runs {
                Status::Valid
            } else {
                Status::Failed
            },
            runs,
            runs_passed,
            cpu_seconds: self.cpu_seconds[i].filter(|_| cpu_complete),
            cpu_percent_estimated: cpu.map(|_| self.cpu_estimated[i].unwrap_or(0) > 0),
            cpu_machine_percent: machine,
            open_loop,
            stats: by_metric,
            values,
            server_cpu_us_per_echo,
        }
    }

    /// Row `i`'s statistic of every metric some run reported.
    fn stats_at(&self, i: usize) -> BTreeMap<Metric, Stat> {
        let mut by_metric = BTreeMap::new();
        for (name, [med, min, max]) in &self.stats {
            if let (Some(median), Some(min), Some(max)) = (med[i], min[i], max[i]) {
                by_metric.insert(*name, Stat { median, min, max });
            }
        }
        by_metric
    }

    /// Row `i`'s open-loop figures, when every one of them is there.
    fn open_loop_at(&self, i: usize) -> Option<OpenLoopStats> {
        let stat_at = |[med, min, max]: &StatColumns| -> Option<Stat> {
            Some(Stat {
                median: med[i]?,
                min: min[i]?,
                max: max[i]?,
            })
        };
        Some(OpenLoopStats {
            achieved_rate: stat_at(&self.open_loop[0])?,
            service_p99_us: stat_at(&self.open_loop[1])?,
            schedule_lag_p99_us: stat_at(&self.open_loop[2])?,
            late_sends: stat_at(&self.open_loop[3])?,
            saturated_runs: self.saturated[i].unwrap_or(0),
        })
    }
}

fn canonical(c: &Configuration) -> impl Ord + '_ {
    let k = &c.key;
    (
        c.dataset.as_str(),
        k.backend.as_str(),
        k.implementation.as_str(),
        k.protocol.as_str(),
        k.payload_bytes,
        k.clients,
        k.window,
        k.generators,
        k.topology_rank(),
        k.handler_work,
        k.udp_server_recv_buffer,
        k.load,
    )
}
