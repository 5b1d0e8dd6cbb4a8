//! Aggregation: median, min and max of every metric per configuration, with polars
//! expressions over the run table. Latency is the median of per-run percentiles (arknet's
//! method); samples are never pooled. A median of an even count is the mean of the two
//! middle values.

use std::collections::BTreeMap;

use polars::prelude::*;
use serde::Serialize;

use crate::model::Dataset;
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

    fn scaled(self, by: f64) -> Stat {
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
/// implementation, protocol, payload, clients, window, topology (1×1, 1×2, 1×4, 2×1, 4×1),
/// work.
pub fn configurations(datasets: &[Dataset]) -> PolarsResult<Vec<Configuration>> {
    let (runs, numbered) = table::runs(datasets)?;
    let df = runs
        .lazy()
        .group_by_stable([col("configuration")])
        .agg(agg_exprs())
        .collect()?;
    let logical_cpus: Vec<Option<f64>> = datasets
        .iter()
        .map(|d| {
            d.host()
                .and_then(|h| h.logical_cpus)
                .filter(|n| *n > 0)
                .map(|n| n as f64)
        })
        .collect();
    let u = |name: &str| -> PolarsResult<Vec<Option<u64>>> {
        let c = df.column(name)?.cast(&DataType::UInt64)?;
        Ok(c.u64()?.iter().collect())
    };
    let f = |name: &str| -> PolarsResult<Vec<Option<f64>>> {
        let c = df.column(name)?.cast(&DataType::Float64)?;
        Ok(c.f64()?.iter().collect())
    };
    let configuration: Vec<Option<u32>> = df.column("configuration")?.u32()?.iter().collect();
    let saturated = u("saturated_runs")?;
    let stat_columns = |name: &str| -> PolarsResult<[Vec<Option<f64>>; 3]> {
        Ok([
            f(&format!("{name}_median"))?,
            f(&format!("{name}_min"))?,
            f(&format!("{name}_max"))?,
        ])
    };
    let open_columns: Vec<[Vec<Option<f64>>; 3]> = table::OPEN_LOOP
        .iter()
        .map(|name| stat_columns(name))
        .collect::<PolarsResult<_>>()?;
    let (runs_n, passed, estimated, cpu_missing) = (
        u("runs")?,
        u("runs_passed")?,
        u("cpu_estimated_runs")?,
        u("cpu_percent_missing")?,
    );
    let cpu_seconds = f("cpu_seconds_median")?;
    let mut stats: Vec<(Metric, [Vec<Option<f64>>; 3])> = Vec::new();
    for m in Metric::ALL {
        stats.push((m, stat_columns(m.name())?));
    }

    // Each configuration's runs in repetition order, for its per-run values.
    let mut runs_of: std::collections::HashMap<(usize, &CaseKey), Vec<&crate::model::Run>> =
        std::collections::HashMap::new();
    for (d, set) in datasets.iter().enumerate() {
        for r in &set.runs {
            runs_of.entry((d, &r.key)).or_default().push(r);
        }
    }
    let mut out = Vec::with_capacity(df.height());
    for i in 0..df.height() {
        // Every group is one configuration the table numbered.
        let Some((dataset, key)) = configuration[i].and_then(|n| numbered.of.get(n as usize))
        else {
            continue;
        };
        let runs = runs_n[i].unwrap_or(0);
        let runs_passed = passed[i].unwrap_or(0);
        let mut by_metric = BTreeMap::new();
        for (name, [med, min, max]) in &stats {
            if let (Some(median), Some(min), Some(max)) = (med[i], min[i], max[i]) {
                by_metric.insert(*name, Stat { median, min, max });
            }
        }
        // CPU only when every run has a value (arknet: exactly all repetitions).
        let cpu_complete = cpu_missing[i] == Some(0);
        if !cpu_complete {
            by_metric.remove(&Metric::CpuPercent);
        }
        let stat_at = |[med, min, max]: &[Vec<Option<f64>>; 3]| -> Option<Stat> {
            Some(Stat {
                median: med[i]?,
                min: min[i]?,
                max: max[i]?,
            })
        };
        let open_loop = key.load.and_then(|_| {
            Some(OpenLoopStats {
                achieved_rate: stat_at(&open_columns[0])?,
                service_p99_us: stat_at(&open_columns[1])?,
                schedule_lag_p99_us: stat_at(&open_columns[2])?,
                late_sends: stat_at(&open_columns[3])?,
                saturated_runs: saturated[i].unwrap_or(0),
            })
        });
        let mut in_order = runs_of.remove(&(*dataset, key)).unwrap_or_default();
        in_order.sort_by_key(|r| r.repetition);
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
        let machine = cpu
            .zip(logical_cpus.get(*dataset).copied().flatten())
            .map(|(c, n)| c.scaled(n));
        out.push(Configuration {
            key: key.clone(),
            dataset: datasets[*dataset].name.clone(),
            status: if runs_passed == runs {
                Status::Valid
            } else {
                Status::Failed
            },
            runs,
            runs_passed,
            cpu_seconds: cpu_seconds[i].filter(|_| cpu_complete),
            cpu_percent_estimated: cpu.map(|_| estimated[i].unwrap_or(0) > 0),
            cpu_machine_percent: machine,
            open_loop,
            stats: by_metric,
            values,
            server_cpu_us_per_echo,
        });
    }
    out.sort_by(|a, b| canonical(a).cmp(&canonical(b)));
    Ok(out)
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
        k.topology_rank(),
        k.handler_work,
        k.udp_server_recv_buffer,
        k.load,
    )
}
