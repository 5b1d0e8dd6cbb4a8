//! What to use, load class by load class: the recommendation a dataset's overview opens
//! with, in the manner of the seed's "如何选择 IO 模型", but computed from the data.
//!
//! A **choice** is what a reader could deploy: a backend (or external server) with an IO
//! model and a thread count. A **load class** is a corner of what the dataset measured:
//! small messages at its fewest clients, its largest messages, its most clients, and each
//! amount of added CPU work per echo. Within a class every protocol (and program) measured
//! is a **stratum**, and so is each generator count of a fleet (a load of its own, never
//! pooled into another's runs); the choices are compared over all strata at once by the comparison
//! rule ([`echomark_decide::compare_pooled`]: the geometric mean of the per-stratum ratios,
//! with its interval).
//!
//! A choice is recommended only when its pooled throughput is decided higher than every
//! other choice's *and* no stratum decides it lower than any of them; otherwise the class
//! has no single choice, and the candidates are the best and every choice it is not decided
//! above. The recommended choice's trade-off against the runner-up (throughput, p99 and CPU
//! per echo) is decided the same way.

use std::collections::{BTreeMap, BTreeSet};

use echomark_archive::{IoModel, Metric, Protocol};
use echomark_decide::{compare, compare_pooled, Decision, Verdict};
use serde::Serialize;

use crate::analysis::aggregate::{Configuration, Status};
use crate::analysis::decision::Rules;
use crate::analysis::loads::{classes, main_load};
pub use crate::analysis::loads::{ClassLoad, LoadClass};

/// What a reader could deploy.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Choice {
    pub backend: String,
    pub io_model: IoModel,
    pub io_threads: u64,
    /// QUIC transport settings other than quinn's defaults, when the dataset set them.
    pub quic_transport: Option<echomark_archive::QuicTransport>,
    /// The UDP server socket's receive-buffer request, when the dataset set one.
    pub udp_server_recv_buffer: Option<u64>,
}

impl Choice {
    /// The choice `c` was measured with.
    pub(crate) fn of(c: &Configuration) -> Self {
        Self {
            backend: c.key.backend.to_string(),
            io_model: c.key.io_model,
            io_threads: c.key.io_threads,
            quic_transport: c.key.quic_transport,
            udp_server_recv_buffer: c.key.udp_server_recv_buffer,
        }
    }

    /// The canonical order: backend by name, then 1×1, 1×2, 1×4, 2×1, 4×1, then settings.
    fn rank(&self) -> impl Ord + '_ {
        (
            self.backend.as_str(),
            u8::from(self.io_model != IoModel::Shared),
            self.io_threads,
            self.quic_transport,
            self.udp_server_recv_buffer,
        )
    }
}

/// One stratum of a class: a protocol as one program measured it, with a fleet's generator
/// count.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Stratum {
    pub protocol: Protocol,
    pub implementation: String,
    /// A fleet's generators (absent for one client process).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generators: Option<u64>,
}

impl Stratum {
    /// The stratum `c` belongs to, its program kept apart or pooled.
    fn of(c: &Configuration, programs: Programs) -> Self {
        Self {
            protocol: c.key.protocol,
            implementation: match programs {
                Programs::Apart => c.key.implementation.clone(),
                Programs::Pooled => String::new(),
            },
            generators: c.key.generators,
        }
    }
}

/// A choice against another, pooled over the class's strata.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Trade {
    pub throughput: Decision,
    /// `None` when a stratum has no p99 on either side.
    pub p99: Option<Decision>,
    /// Process CPU time per echo; `None` when a run has no CPU figure.
    pub cpu_per_echo: Option<Decision>,
}

/// What the rule says of a class.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Advice {
    /// `choice` is decided faster than every other choice, and slower in no stratum.
    Use {
        choice: Choice,
        runner_up: Choice,
        /// The choice against the runner-up.
        trade: Box<Trade>,
    },
    /// No choice is decided ahead of all others: the candidates, the best (highest pooled
    /// throughput) first, each other with the best's throughput against it.
    NoSingleChoice {
        best: Choice,
        others: Vec<(Choice, Decision)>,
        /// Strata where the best is decided slower than one of the candidates (the answer
        /// depends on the protocol).
        reversed_in: Vec<Stratum>,
        /// The choices the best is decided faster than in every stratum, each with that
        /// decision: no candidates, but what to watch out for.
        behind: Vec<(Choice, Decision)>,
    },
}

/// One row of the recommendation table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recommendation {
    pub load: ClassLoad,
    pub strata: Vec<Stratum>,
    pub advice: Advice,
    /// Choices left out because they did not pass, or were not measured, in every stratum.
    pub left_out: Vec<Choice>,
}

/// A configuration's CPU time per echo, in microseconds, run by run: an external server's
/// own (when every run measured it), else the measuring process's (CPU percent of one CPU ÷
/// round trips per second, client and in-process server together); empty when a run lacks
/// the figures.
pub fn cpu_per_echo_us(c: &Configuration) -> Vec<f64> {
    if c.runs > 0 && c.server_cpu_us_per_echo.len() as u64 == c.runs {
        return c.server_cpu_us_per_echo.clone();
    }
    let (Some(cpu), Some(rate)) = (
        c.values.get(&Metric::CpuPercent),
        c.values.get(&Metric::RoundtripsPerSecond),
    ) else {
        return Vec::new();
    };
    if cpu.len() != rate.len() {
        return Vec::new();
    }
    cpu.iter()
        .zip(rate)
        .filter(|(_, r)| **r > 0.0)
        .map(|(c, r)| c / 100.0 / r * 1e6)
        .collect()
}

/// Each protocol at the main load on its own, when the dataset compares several choices
/// and no IO-model ranking speaks for the load (backends or servers on one model).
pub fn main_load_choices(configs: &[&Configuration], rules: &Rules) -> Vec<StratumAdvice> {
    let Some((payload_bytes, clients)) = main_load(configs) else {
        return Vec::new();
    };
    let load = ClassLoad {
        class: LoadClass::ManyClients,
        payload_bytes,
        clients,
        handler_work: 0,
    };
    per_stratum(configs, load, rules)
}

/// The recommendation for every class of `configs` (one dataset's configurations), in
/// class order; empty when the dataset offers one choice.
pub fn recommendations(configs: &[&Configuration], rules: &Rules) -> Vec<Recommendation> {
    classes(configs)
        .into_iter()
        .filter_map(|load| recommend(configs, load, Programs::Apart, rules))
        .collect()
}

/// Which client to measure with, load class by load class, in a dataset where echomark's
/// client and other load generators took turns against one server: the same rule, each
/// client a choice (its backend is the tool's name) and each protocol one stratum whoever
/// implemented the client. "Use" names the client decided to drive the server fastest.
pub fn clients(configs: &[&Configuration], rules: &Rules) -> Vec<Recommendation> {
    classes(configs)
        .into_iter()
        .filter_map(|load| recommend(configs, load, Programs::Pooled, rules))
        .collect()
}

/// Whether the program that produced a configuration parts its stratum: apart for servers
/// (arknet's coroutine TCP is not its callback TCP), pooled for clients of one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Programs {
    Apart,
    Pooled,
}

/// The configurations of one class, by stratum and choice: each protocol and program at
/// the largest window it was measured with at that load, without open loop.
fn cells<'a>(configs: &[&'a Configuration], load: ClassLoad, programs: Programs) -> Cells<'a> {
    let at_load: Vec<&Configuration> = configs
        .iter()
        .copied()
        .filter(|c| {
            c.key.load.is_none()
                && c.key.payload_bytes == load.payload_bytes
                && c.key.clients == load.clients
                && c.key.handler_work == load.handler_work
        })
        .collect();
    let stratum = |c: &Configuration| Stratum::of(c, programs);
    let mut widest: BTreeMap<Stratum, u64> = BTreeMap::new();
    for c in &at_load {
        let w = widest.entry(stratum(c)).or_default();
        *w = (*w).max(c.key.window);
    }
    let mut out: BTreeMap<Stratum, BTreeMap<Choice, Vec<&Configuration>>> = BTreeMap::new();
    for c in at_load {
        let s = stratum(c);
        if widest.get(&s) == Some(&c.key.window) {
            out.entry(s)
                .or_default()
                .entry(Choice::of(c))
                .or_default()
                .push(c);
        }
    }
    out
}

/// A choice's per-run values of one figure in each stratum, in stratum order: `None` where
/// the stratum has no valid configuration of it, or one without the figure (or a value
/// that is not positive). Several configurations of one choice in a stratum pool their runs.
fn values_of(
    cells: &Cells,
    choice: &Choice,
    figure: &dyn Fn(&Configuration) -> Vec<f64>,
) -> Vec<Option<Vec<f64>>> {
    cells
        .values()
        .map(|by_choice| {
            let configs = by_choice.get(choice)?;
            if configs.iter().any(|c| c.status != Status::Valid) {
                return None;
            }
            let v: Vec<f64> = configs.iter().flat_map(|c| figure(c)).collect();
            (!v.is_empty() && v.iter().all(|x| x.is_finite() && *x > 0.0)).then_some(v)
        })
        .collect()
}

fn metric(m: Metric) -> impl Fn(&Configuration) -> Vec<f64> {
    move |c: &Configuration| c.values.get(&m).cloned().unwrap_or_default()
}

/// The strata (indices) where both sides have values, with those values as
/// `(base, subject)` pairs.
fn common<'v>(
    base: &'v [Option<Vec<f64>>],
    subject: &'v [Option<Vec<f64>>],
) -> Vec<(usize, &'v [f64], &'v [f64])> {
    base.iter()
        .zip(subject)
        .enumerate()
        .filter_map(|(i, (b, s))| Some((i, b.as_deref()?, s.as_deref()?)))
        .collect()
}

/// `subject` against `base`, pooled over the strata where both have values; `None` when
/// there is none.
fn pooled(
    base: &[Option<Vec<f64>>],
    subject: &[Option<Vec<f64>>],
    rule: &echomark_decide::Rule,
) -> Option<Decision> {
    let pairs: Vec<(&[f64], &[f64])> = common(base, subject)
        .into_iter()
        .map(|(_, b, s)| (b, s))
        .collect();
    (!pairs.is_empty()).then(|| compare_pooled(&pairs, rule))
}

/// The mean log ratio of `subject` over `base` on their common strata; `None` without any.
fn log_ratio(base: &[Option<Vec<f64>>], subject: &[Option<Vec<f64>>]) -> Option<f64> {
    let mean = |v: &[f64]| v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64;
    let pairs = common(base, subject);
    (!pairs.is_empty())
        .then(|| pairs.iter().map(|(_, b, s)| mean(s) - mean(b)).sum::<f64>() / pairs.len() as f64)
}

type Cells<'a> = BTreeMap<Stratum, BTreeMap<Choice, Vec<&'a Configuration>>>;

fn recommend(
    configs: &[&Configuration],
    load: ClassLoad,
    programs: Programs,
    rules: &Rules,
) -> Option<Recommendation> {
    let cells = cells(configs, load, programs);
    let (advice, left_out) = advise(&cells, rules)?;
    Some(Recommendation {
        load,
        strata: cells.keys().cloned().collect(),
        advice,
        left_out,
    })
}

/// One stratum of a load on its own: what the rule says there, with each choice's medians.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StratumAdvice {
    pub stratum: Stratum,
    pub advice: Advice,
    /// Each valid choice's throughput and p99 medians, the fastest first.
    pub medians: Vec<(Choice, f64, Option<f64>)>,
}

/// Each stratum of `load` on its own (the key results of a dataset that compares backends
/// or servers), in stratum order; strata with fewer than two valid choices are left out.
pub fn per_stratum(
    configs: &[&Configuration],
    load: ClassLoad,
    rules: &Rules,
) -> Vec<StratumAdvice> {
    cells(configs, load, Programs::Apart)
        .into_iter()
        .filter_map(|(stratum, by_choice)| {
            let one: Cells = BTreeMap::from([(stratum.clone(), by_choice)]);
            let (advice, _) = advise(&one, rules)?;
            let mut medians: Vec<(Choice, f64, Option<f64>)> = one[&stratum]
                .iter()
                .filter(|(_, cs)| cs.iter().all(|c| c.status == Status::Valid))
                .filter_map(|(choice, cs)| {
                    let c = cs.first()?;
                    Some((
                        choice.clone(),
                        c.stat(Metric::RoundtripsPerSecond)?.median,
                        c.stat(Metric::RttP99Us).map(|s| s.median),
                    ))
                })
                .collect();
            medians.sort_by(|a, b| {
                b.1.total_cmp(&a.1)
                    .then_with(|| a.0.rank().cmp(&b.0.rank()))
            });
            Some(StratumAdvice {
                stratum,
                advice,
                medians,
            })
        })
        .collect()
}

/// What the rule says over `cells`, and the choices left out (valid in no stratum); `None`
/// with fewer than two choices valid somewhere.
///
/// Two choices are compared on the strata where both passed, so one failed run removes a
/// choice from that protocol only. The best is the choice with the highest mean log ratio
/// over every other (on each pair's common strata); it is recommended only when it is
/// decided faster than every other choice it shares a stratum with, and slower in none of
/// those strata.
fn advise(cells: &Cells, rules: &Rules) -> Option<(Advice, Vec<Choice>)> {
    let every: BTreeSet<Choice> = cells.values().flat_map(|m| m.keys().cloned()).collect();
    let rate = metric(Metric::RoundtripsPerSecond);
    let mut candidates: Vec<(Choice, Vec<Option<Vec<f64>>>)> = Vec::new();
    let mut left_out = Vec::new();
    for choice in every {
        let v = values_of(cells, &choice, &rate);
        if v.iter().any(Option::is_some) {
            candidates.push((choice, v));
        } else {
            left_out.push(choice);
        }
    }
    if candidates.len() < 2 {
        return None;
    }
    let score = |x: &Vec<Option<Vec<f64>>>| {
        let ratios: Vec<f64> = candidates
            .iter()
            .filter(|(_, y)| !std::ptr::eq(x, y))
            .filter_map(|(_, y)| log_ratio(y, x))
            .collect();
        if ratios.is_empty() {
            f64::NEG_INFINITY
        } else {
            ratios.iter().sum::<f64>() / ratios.len() as f64
        }
    };
    let scores: Vec<f64> = candidates.iter().map(|(_, v)| score(v)).collect();
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by(|&a, &b| {
        scores[b]
            .total_cmp(&scores[a])
            .then_with(|| candidates[a].0.rank().cmp(&candidates[b].0.rank()))
    });
    let (best, best_rates) = &candidates[order[0]];
    let rule = rules.throughput;
    let strata: Vec<&Stratum> = cells.keys().collect();
    // The best against every other it shares a stratum with, closest first.
    let mut against: Vec<(Choice, Decision, Vec<Stratum>)> = order[1..]
        .iter()
        .filter_map(|&i| {
            let (other, rates) = &candidates[i];
            let d = pooled(rates, best_rates, &rule)?;
            let reversed: Vec<Stratum> = common(rates, best_rates)
                .into_iter()
                .filter(|(_, o, b)| compare(o, b, &rule).verdict == Verdict::Lower)
                .map(|(k, _, _)| strata[k].clone())
                .collect();
            Some((other.clone(), d, reversed))
        })
        .collect();
    if against.is_empty() {
        return None;
    }
    against.sort_by(|a, b| a.1.ratio.total_cmp(&b.1.ratio));
    let wins = against
        .iter()
        .all(|(_, d, reversed)| d.verdict == Verdict::Higher && reversed.is_empty());
    let advice = if wins {
        let (runner_up, throughput, _) = against[0].clone();
        let cost = |figure: &dyn Fn(&Configuration) -> Vec<f64>, rule| {
            pooled(
                &values_of(cells, &runner_up, figure),
                &values_of(cells, best, figure),
                rule,
            )
        };
        let p99 = metric(Metric::RttP99Us);
        Advice::Use {
            trade: Box::new(Trade {
                throughput,
                p99: cost(&p99, &rules.latency),
                cpu_per_echo: cost(&cpu_per_echo_us, &rules.throughput),
            }),
            choice: best.clone(),
            runner_up,
        }
    } else {
        let mut reversed_in: BTreeSet<Stratum> = BTreeSet::new();
        let (others, behind): (Vec<_>, Vec<_>) = against
            .into_iter()
            .partition(|(_, d, reversed)| d.verdict != Verdict::Higher || !reversed.is_empty());
        let others = others
            .into_iter()
            .map(|(c, d, reversed)| {
                reversed_in.extend(reversed);
                (c, d)
            })
            .collect();
        Advice::NoSingleChoice {
            best: best.clone(),
            others,
            reversed_in: reversed_in.into_iter().collect(),
            behind: behind.into_iter().map(|(c, d, _)| (c, d)).collect(),
        }
    };
    Some((advice, left_out))
}

#[cfg(test)]
mod tests;
