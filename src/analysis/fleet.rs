//! A fleet dataset's own figures (`matrix --fleet-size`): which generators made the load
//! (their hosts and CPUs), how closely they started together (start skew) and how well
//! their clocks agreed with the coordinator's (offsets and drift), and how the merged rate
//! went with the number of generators, each load's most generators set against its fewest
//! by the comparison rule ([`crate::analysis::decision`]). Computed from the runs' fleet
//! records and the aggregated configurations; the pages only say it.

use std::collections::{BTreeMap, BTreeSet};

use echomark_archive::cpus::CpuList;
use echomark_archive::{CaseKey, Metric, PathKind};
use echomark_decide::Decision;
use serde::Serialize;

use crate::analysis::aggregate::{Configuration, Stat, Status};
use crate::analysis::decision::{decide, Rules};
use crate::model::{Dataset, RunGenerator};

/// What a fleet dataset's runs say about the fleet that measured them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetAnalysis {
    /// The generators the fleet had (the matrix's `--fleet-size`), where the archive says.
    pub size: Option<u64>,
    /// The generator counts measured, ascending.
    pub counts: Vec<u64>,
    /// The hosts the coordinator ran on (one, unless runs disagree).
    pub coordinator_hosts: BTreeSet<String>,
    /// Each generator, by index, over every run it took part in.
    pub generators: Vec<Generator>,
    pub skew: StartSkew,
    pub clocks: Clocks,
    pub cpus: GeneratorCpus,
    /// Per load (the configuration without its generator count), the merged figures at
    /// each generator count; in the configurations' order.
    pub scaling: Vec<Scaling>,
}

/// One generator of the fleet over the runs it measured in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Generator {
    pub index: u64,
    /// Its host names (one, unless runs disagree).
    pub hosts: BTreeSet<String>,
    pub logical_cpus: BTreeSet<u64>,
    /// The CPUs its client was allowed on, each list its records gave; empty where none did.
    pub client_cpus: BTreeSet<CpuList>,
    /// Whether echomark pinned its client there (`--client-cpus`) in every run that says.
    pub pinned: bool,
    /// The runs it measured in.
    pub runs: usize,
}

/// How far the generators' starts were from the release instant, in the coordinator's
/// clock, over every generator of every run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StartSkew {
    /// The median skew, µs (positive is late).
    pub median_us: f64,
    /// The skew farthest from zero, µs.
    pub worst_us: f64,
    /// The largest uncertainty of any skew (its clock offset's), µs.
    pub uncertainty_us: f64,
    /// How many skews (a generator in a run) these summarise.
    pub samples: usize,
}

/// How the generators' clocks stood against the coordinator's, over every exchange at the
/// start and the end of every run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Clocks {
    /// The offset farthest from zero (coordinator minus generator) and its uncertainty, µs.
    pub offset_us: f64,
    pub offset_uncertainty_us: f64,
    /// The largest uncertainty of any offset, µs.
    pub largest_uncertainty_us: f64,
    /// The drift farthest from zero and its uncertainty, ppm.
    pub drift_ppm: f64,
    pub drift_uncertainty_ppm: f64,
    /// Whether every offset and every drift lies within its own uncertainty of zero: the
    /// exchanges could not tell the clocks apart.
    pub within_uncertainty: bool,
}

/// Where the generators' clients ran, as their own records say.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum GeneratorCpus {
    /// Every generator of every run was allowed on the same CPUs, and every one reached the
    /// server over loopback or a veth pair, so all ran on the server's one machine: the
    /// generators of a run shared these CPUs.
    Shared { cpus: CpuList },
    /// Every generator recorded the same CPU numbers, but not every one is known to have run
    /// on one machine: the same numbers on several hosts.
    SameNumbers { cpus: CpuList },
    /// The generators recorded different CPUs (the table lists each).
    Different,
    /// Some generator recorded none.
    NotRecorded,
}

/// One load's merged rate at each generator count, and what the rule says of the most
/// generators against the fewest.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scaling {
    /// The load: every key field but the generator count (`generators` is `None`).
    pub load: CaseKey,
    /// One point per generator count, ascending.
    pub points: Vec<Point>,
    /// The merged round trips/s at the most generators against the fewest; `None` with a
    /// single count.
    pub decision: Option<ScalingDecision>,
}

/// The merged figures of one generator count.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Point {
    pub generators: u64,
    /// Whether every run passed (a failed configuration is marked, never drawn).
    pub valid: bool,
    pub runs: u64,
    /// The generators' round trips/s summed, median [min, max] over the runs.
    pub merged: Option<Stat>,
    /// The merged rate over the generator count: what each generator drove on average.
    pub per_generator: Option<Stat>,
    /// The merged histogram's p99, median [min, max] over the runs, µs.
    pub p99_us: Option<Stat>,
}

/// The rule's word on the merged rate: `subject` generators against `base`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ScalingDecision {
    pub base: u64,
    pub subject: u64,
    pub decision: Decision,
}

/// The fleet of `d`, whose configurations are `configs`; `None` when no run of `d` was a
/// fleet run.
pub fn analyse(d: &Dataset, configs: &[&Configuration], rules: &Rules) -> Option<FleetAnalysis> {
    let records: Vec<&crate::model::RunFleet> = d
        .runs
        .iter()
        .filter_map(|r| r.instruments.fleet.as_deref())
        .collect();
    if records.is_empty() {
        return None;
    }
    let all: Vec<&RunGenerator> = records.iter().flat_map(|f| &f.generators).collect();
    let counts: BTreeSet<u64> = configs.iter().filter_map(|c| c.key.generators).collect();
    Some(FleetAnalysis {
        size: d
            .files
            .iter()
            .find_map(|f| Some(f.matrix.as_ref()?.fleet.as_ref()?.size)),
        counts: counts.into_iter().collect(),
        coordinator_hosts: records.iter().map(|f| f.coordinator_host.clone()).collect(),
        generators: generators(&all),
        skew: start_skew(&all),
        clocks: clocks(&all),
        cpus: cpus(&all),
        scaling: scaling(configs, rules),
    })
}

/// Each generator index over every record of it.
fn generators(all: &[&RunGenerator]) -> Vec<Generator> {
    let mut by_index: BTreeMap<u64, Generator> = BTreeMap::new();
    for g in all {
        let entry = by_index.entry(g.index).or_insert_with(|| Generator {
            index: g.index,
            hosts: BTreeSet::new(),
            logical_cpus: BTreeSet::new(),
            client_cpus: BTreeSet::new(),
            pinned: true,
            runs: 0,
        });
        entry.hosts.insert(g.host.clone());
        entry.logical_cpus.insert(g.logical_cpus);
        entry.client_cpus.extend(g.client_cpus.clone());
        entry.pinned &= g.client_pinned;
        entry.runs += 1;
    }
    by_index.into_values().collect()
}

/// The value of `values` farthest from zero (the first of several as far), with the value
/// `with` gives for it.
fn farthest<T>(values: &[T], of: impl Fn(&T) -> f64, with: impl Fn(&T) -> f64) -> (f64, f64) {
    let mut best: Option<&T> = None;
    for v in values {
        if best.is_none_or(|b| of(v).abs() > of(b).abs()) {
            best = Some(v);
        }
    }
    best.map_or((0.0, 0.0), |v| (of(v), with(v)))
}

fn start_skew(all: &[&RunGenerator]) -> StartSkew {
    let skews: Vec<f64> = all.iter().map(|g| g.start_skew_us).collect();
    StartSkew {
        median_us: echomark_archive::plan::median(&skews).unwrap_or(0.0),
        worst_us: farthest(all, |g| g.start_skew_us, |_| 0.0).0,
        uncertainty_us: all
            .iter()
            .map(|g| g.start_skew_uncertainty_us)
            .fold(0.0, f64::max),
        samples: skews.len(),
    }
}

fn clocks(all: &[&RunGenerator]) -> Clocks {
    // Every offset measured, at the start and at the end: (offset, uncertainty).
    let offsets: Vec<(f64, f64)> = all
        .iter()
        .flat_map(|g| {
            let c = &g.clock;
            [
                (c.offset_us, c.uncertainty_us),
                (c.offset_end_us, c.uncertainty_end_us),
            ]
        })
        .collect();
    let drifts: Vec<(f64, f64)> = all
        .iter()
        .map(|g| (g.clock.drift_ppm, g.clock.drift_uncertainty_ppm))
        .collect();
    let (offset_us, offset_uncertainty_us) = farthest(&offsets, |o| o.0, |o| o.1);
    let (drift_ppm, drift_uncertainty_ppm) = farthest(&drifts, |d| d.0, |d| d.1);
    let within = |(v, u): &(f64, f64)| v.abs() <= *u;
    Clocks {
        offset_us,
        offset_uncertainty_us,
        largest_uncertainty_us: offsets.iter().map(|o| o.1).fold(0.0, f64::max),
        drift_ppm,
        drift_uncertainty_ppm,
        within_uncertainty: offsets.iter().all(within) && drifts.iter().all(within),
    }
}

fn cpus(all: &[&RunGenerator]) -> GeneratorCpus {
    let lists: Option<BTreeSet<&CpuList>> = all.iter().map(|g| g.client_cpus.as_ref()).collect();
    match lists {
        None => GeneratorCpus::NotRecorded,
        Some(lists) if lists.len() == 1 => {
            let cpus = lists.into_iter().next().expect("one list").clone();
            let one_machine = all
                .iter()
                .all(|g| matches!(g.path, Some(PathKind::Loopback | PathKind::Veth)));
            if one_machine {
                GeneratorCpus::Shared { cpus }
            } else {
                GeneratorCpus::SameNumbers { cpus }
            }
        }
        Some(_) => GeneratorCpus::Different,
    }
}

/// Each load's points by generator count, and its most generators against its fewest.
fn scaling(configs: &[&Configuration], rules: &Rules) -> Vec<Scaling> {
    let mut loads: Vec<(CaseKey, Vec<&Configuration>)> = Vec::new();
    for c in configs.iter().filter(|c| c.key.generators.is_some()) {
        let load = CaseKey {
            generators: None,
            ..c.key.clone()
        };
        match loads.iter_mut().find(|(k, _)| *k == load) {
            Some((_, members)) => members.push(c),
            None => loads.push((load, vec![c])),
        }
    }
    loads
        .into_iter()
        .map(|(load, mut members)| {
            members.sort_by_key(|c| c.key.generators);
            let decision = match (members.first(), members.last()) {
                (Some(fewest), Some(most)) if members.len() > 1 => {
                    decide(fewest, most, Metric::RoundtripsPerSecond, rules).map(|decision| {
                        ScalingDecision {
                            base: fewest.key.generators.unwrap_or(1),
                            subject: most.key.generators.unwrap_or(1),
                            decision,
                        }
                    })
                }
                _ => None,
            };
            Scaling {
                load,
                points: members.iter().map(|c| point(c)).collect(),
                decision,
            }
        })
        .collect()
}

fn point(c: &Configuration) -> Point {
    let generators = c.key.generators.unwrap_or(1);
    let merged = c.stat(Metric::RoundtripsPerSecond);
    Point {
        generators,
        valid: c.status == Status::Valid,
        runs: c.runs,
        merged,
        per_generator: merged.map(|s| s.scaled(generators as f64)),
        p99_us: c.stat(Metric::RttP99Us),
    }
}

#[cfg(test)]
mod tests;
