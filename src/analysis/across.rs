//! What the datasets answer together: for each question the committed data can decide
//! (runtime, IO model, protocol overhead, TLS cost, UDP buffers, external servers, path,
//! open-loop knee), one answer from the dataset that is the best witness of it. Datasets are
//! never pooled: every answer comes from one dataset (or, for the path, one dataset and its
//! loopback companion from the same host and matrix), and says which.
//!
//! The best witness: complete archives built from a clean tree first, then (where it
//! matters) runs interleaved in time, then the most evidence, then the newest.

use std::collections::BTreeSet;

use echomark_archive::{AddressFamily, PathKind, Protocol};

use super::aggregate::Configuration;
use super::backends::{self, Tally};
use super::decision::Rules;
use super::ratios::{self, Spread};
use super::{hosts, DatasetAnalysis};
use crate::model::Dataset;

/// A question the index answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Question {
    Runtime,
    IoModel,
    ProtocolOverhead,
    TlsCost,
    UdpBuffers,
    ExternalServers,
    Path,
    Knee,
}

/// One answer, from one dataset (an index into the analysed datasets).
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub question: Question,
    pub dataset: usize,
    pub body: Body,
}

/// What was found.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// One backend, server or dataset against another, configuration by configuration.
    Versus {
        subject: String,
        base: String,
        tally: Tally,
        /// The path question's loopback companion (an index into the datasets), and whether
        /// the two datasets' runs overlapped in time.
        companion: Option<(usize, bool)>,
    },
    /// Loads with several IO models, and in how many one model is distinguishably fastest.
    IoModels {
        loads: usize,
        winners: usize,
        /// Of the winners, those running more threads than the host has CPUs.
        oversubscribed: usize,
    },
    /// Protocols against the one they ride on: median round-trip ratio per pair of protocols.
    Overheads(Vec<(Protocol, Protocol, Spread)>),
    /// Loads of a buffer-isolation experiment that a larger buffer fixed, and those it did not.
    Buffers {
        loads: usize,
        fixed: usize,
        lossy: usize,
        /// Loads that lost nothing at any size.
        lossless: usize,
        largest: u64,
    },
    /// Open-loop groups, and in how many one curve's knee is distinguishably the latest.
    Knees {
        groups: usize,
        distinguishable: usize,
    },
}

/// How good a witness a dataset is: complete and clean first, then newest.
fn soundness(d: &Dataset) -> (bool, &str) {
    (d.is_sound(), d.recorded_at().unwrap_or(""))
}

/// The configurations of dataset `d`.
fn of<'a>(configs: &'a [Configuration], d: &Dataset) -> Vec<&'a Configuration> {
    configs.iter().filter(|c| c.dataset == d.name).collect()
}

/// Every answer the datasets give, in [`Question`] order; questions no dataset answers are
/// left out.
pub fn answers(
    datasets: &[Dataset],
    per_dataset: &[DatasetAnalysis],
    configs: &[Configuration],
    rules_of: &dyn Fn(&str) -> Rules,
) -> Vec<Answer> {
    let mut out = Vec::new();
    out.extend(versus(datasets, configs, false, rules_of));
    out.extend(io_models(datasets, per_dataset));
    out.extend(overheads(datasets, configs));
    out.extend(buffers(datasets, per_dataset));
    out.extend(versus(datasets, configs, true, rules_of));
    out.extend(path(datasets, configs, rules_of));
    out.extend(knees(datasets, per_dataset));
    out
}

/// The best of `candidates` (dataset index, evidence) by soundness, then `extra` (larger
/// first), then evidence, then recency; the earlier name on a full tie.
fn best<T: Ord + Copy>(datasets: &[Dataset], candidates: &[(usize, usize, T)]) -> Option<usize> {
    candidates
        .iter()
        .max_by(|a, b| {
            let (sa, ra) = soundness(&datasets[a.0]);
            let (sb, rb) = soundness(&datasets[b.0]);
            sa.cmp(&sb)
                .then(a.2.cmp(&b.2))
                .then(a.1.cmp(&b.1))
                .then(ra.cmp(rb))
                .then(datasets[b.0].name.cmp(&datasets[a.0].name))
        })
        .map(|c| c.0)
}

/// Runtimes (echomark's own backends) or external servers against the base one. The
/// runtime question prefers the datasets where one client measured echomark's `serve` on
/// each runtime in a process of its own ([`Dataset::own_servers_apart`]): client and server
/// no longer share a runtime, so only the server's differs.
fn versus(
    datasets: &[Dataset],
    configs: &[Configuration],
    external: bool,
    rules_of: &dyn Fn(&str) -> Rules,
) -> Vec<Answer> {
    let mut candidates = Vec::new();
    for (i, d) in datasets.iter().enumerate() {
        let own_apart = d.own_servers_apart().is_some();
        let question_is_runtime = !d.measures_external_servers() || own_apart;
        if question_is_runtime == external {
            continue;
        }
        let backends: BTreeSet<&str> = d
            .files
            .iter()
            .filter_map(|f| f.backend.as_deref())
            .collect();
        if backends.len() < 2 {
            continue;
        }
        let interleaved = d
            .files
            .iter()
            .flat_map(|f| f.protocols.iter().copied())
            .any(|p| d.backends_interleaved(p) == Some(true));
        // Evidence is the runs measured: a dataset measured until decided outweighs one with
        // more configurations at a few repetitions each.
        candidates.push((i, d.runs.len(), (own_apart, interleaved)));
    }
    let Some(chosen) = best(datasets, &candidates) else {
        return Vec::new();
    };
    let d = &datasets[chosen];
    let rules = &rules_of(&d.name);
    let mine = of(configs, d);
    let present: BTreeSet<&str> = mine.iter().map(|c| c.key.backend.as_str()).collect();
    let Some(base) = backends::base_backend(&present) else {
        return Vec::new();
    };
    present
        .iter()
        .filter(|b| **b != base)
        .map(|subject| Answer {
            question: if external {
                Question::ExternalServers
            } else {
                Question::Runtime
            },
            dataset: chosen,
            body: Body::Versus {
                subject: subject.to_string(),
                base: base.to_string(),
                tally: backends::tally(&backends::rows(&mine, subject, base, rules)),
                companion: None,
            },
        })
        .filter(|a| matches!(&a.body, Body::Versus { tally, .. } if tally.pairs > 0))
        .collect()
}

fn io_models(datasets: &[Dataset], per_dataset: &[DatasetAnalysis]) -> Option<Answer> {
    let candidates: Vec<(usize, usize, bool)> = per_dataset
        .iter()
        .enumerate()
        .filter(|(_, a)| !a.io_models.is_empty())
        .map(|(i, _)| {
            let ipv4 = datasets[i]
                .files
                .first()
                .is_some_and(|f| f.address_family == AddressFamily::Ipv4);
            // Evidence is the runs measured, as for the runtime question: a dataset measured
            // until decided outweighs one with more loads at a few repetitions each.
            (i, datasets[i].runs.len(), ipv4)
        })
        .collect();
    let chosen = best(datasets, &candidates)?;
    let findings = &per_dataset[chosen].io_models;
    let winners: Vec<_> = findings.iter().filter(|f| f.crowns_a_winner()).collect();
    Some(Answer {
        question: Question::IoModel,
        dataset: chosen,
        body: Body::IoModels {
            loads: findings.len(),
            winners: winners.len(),
            oversubscribed: winners
                .iter()
                .filter(|f| f.oversubscribed.is_some())
                .count(),
        },
    })
}

/// The protocol pairs of each overhead question: framing and HTTP over TCP, TLS over the
/// plaintext protocol.
const FRAMING: [(Protocol, Protocol); 2] = [
    (Protocol::Websocket, Protocol::Tcp),
    (Protocol::Http, Protocol::Tcp),
];
const TLS: [(Protocol, Protocol); 3] = [
    (Protocol::Tcps, Protocol::Tcp),
    (Protocol::Wss, Protocol::Websocket),
    (Protocol::Https, Protocol::Http),
];

fn overheads(datasets: &[Dataset], configs: &[Configuration]) -> Vec<Answer> {
    [
        (Question::ProtocolOverhead, &FRAMING[..]),
        (Question::TlsCost, &TLS[..]),
    ]
    .into_iter()
    .filter_map(|(question, pairs)| {
        // Echomark's own server in one process: what an overhead of the stack means.
        let spreads = |d: &Dataset| -> Vec<(Protocol, Protocol, Spread)> {
            let mine = of(configs, d);
            pairs
                .iter()
                .filter_map(|&(s, b)| Some((s, b, ratios::spread(&ratios::pairs(&mine, s, b))?)))
                .collect()
        };
        let candidates: Vec<(usize, usize, (bool, bool))> = datasets
            .iter()
            .enumerate()
            .filter(|(_, d)| !d.measures_external_servers())
            .map(|(i, d)| {
                let s = spreads(d);
                let evidence: usize = s.iter().map(|(_, _, sp)| sp.count).sum();
                let ipv4 = d
                    .files
                    .first()
                    .is_some_and(|f| f.address_family == AddressFamily::Ipv4);
                // Every pair of the question measured, over IPv4 (the common case), first.
                (i, evidence, (s.len() == pairs.len(), ipv4))
            })
            .filter(|c| c.1 > 0)
            .collect();
        let chosen = best(datasets, &candidates)?;
        Some(Answer {
            question,
            dataset: chosen,
            body: Body::Overheads(spreads(&datasets[chosen])),
        })
    })
    .collect()
}

fn buffers(datasets: &[Dataset], per_dataset: &[DatasetAnalysis]) -> Option<Answer> {
    let candidates: Vec<(usize, usize, bool)> = per_dataset
        .iter()
        .enumerate()
        .filter_map(|(i, a)| Some((i, a.udp_buffers.as_ref()?.rows.len(), true)))
        .collect();
    let chosen = best(datasets, &candidates)?;
    let f = per_dataset[chosen].udp_buffers.as_ref()?;
    Some(Answer {
        question: Question::UdpBuffers,
        dataset: chosen,
        body: Body::Buffers {
            loads: f.rows.len(),
            fixed: f.fixed_by_a_larger_buffer(),
            lossy: f.lossy_at_largest(),
            lossless: f.lossless(),
            largest: *f.requests.last()?,
        },
    })
}

/// A dataset measured over a veth pair against its loopback companion: the same host and
/// matrix, the same server, over loopback.
fn path(
    datasets: &[Dataset],
    configs: &[Configuration],
    rules_of: &dyn Fn(&str) -> Rules,
) -> Option<Answer> {
    let matrix = |d: &Dataset| {
        d.files
            .first()
            .and_then(|f| f.matrix.as_deref())
            .map(echomark_archive::Settings::shared_matrix)
    };
    let mut candidates = Vec::new();
    for (i, d) in datasets.iter().enumerate() {
        if d.path_kind() != PathKind::Veth || matrix(d).is_none() {
            continue;
        }
        let companion = datasets.iter().enumerate().find(|(j, other)| {
            *j != i
                && other.path_kind() == PathKind::Loopback
                && hosts::host_key(other) == hosts::host_key(d)
                && matrix(other) == matrix(d)
        });
        if let Some((j, _)) = companion {
            let rows = backends::rows_between(
                &of(configs, d),
                &of(configs, &datasets[j]),
                &rules_of(&d.name),
            );
            candidates.push((i, rows.len(), j));
        }
    }
    let (chosen, _, companion) = candidates
        .iter()
        .copied()
        .find(|c| Some(c.0) == best(datasets, &candidates))?;
    let tally = backends::tally(&backends::rows_between(
        &of(configs, &datasets[chosen]),
        &of(configs, &datasets[companion]),
        &rules_of(&datasets[chosen].name),
    ));
    Some(Answer {
        question: Question::Path,
        dataset: chosen,
        body: Body::Versus {
            subject: datasets[chosen].name.clone(),
            base: datasets[companion].name.clone(),
            tally,
            companion: Some((
                companion,
                overlapping(&datasets[chosen], &datasets[companion]),
            )),
        },
    })
}

/// Whether two datasets' runs overlap in time (first to last run start of each).
fn overlapping(a: &Dataset, b: &Dataset) -> bool {
    matches!((a.run_span(), b.run_span()), (Some(x), Some(y)) if crate::model::spans_overlap(x, y))
}

fn knees(datasets: &[Dataset], per_dataset: &[DatasetAnalysis]) -> Option<Answer> {
    let candidates: Vec<(usize, usize, bool)> = per_dataset
        .iter()
        .enumerate()
        .filter(|(_, a)| !a.knees.is_empty())
        .map(|(i, a)| (i, a.knees.len(), true))
        .collect();
    let chosen = best(datasets, &candidates)?;
    let k = &per_dataset[chosen].knees;
    Some(Answer {
        question: Question::Knee,
        dataset: chosen,
        body: Body::Knees {
            groups: k.len(),
            distinguishable: k.iter().filter(|f| f.distinguishable).count(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Format;

    /// A dataset of one archive: clean and complete or not, recorded at `at`, its runs
    /// spanning `span`.
    fn dataset(name: &str, sound: bool, at: &str, span: (&str, &str)) -> Dataset {
        let mut file =
            crate::read::file_record(std::path::Path::new("a.json"), Format::Echomark, None);
        file.dirty = !sound;
        file.complete = true;
        file.recorded_at_utc = Some(at.to_string());
        file.run_span = Some((span.0.to_string(), span.1.to_string()));
        Dataset {
            name: name.to_string(),
            files: vec![file],
            runs: Vec::new(),
            warnings: Vec::new(),
        }
    }

    #[test]
    fn the_witness_is_clean_before_it_is_big_then_interleaved_then_new() {
        let d = vec![
            dataset("dirty-but-big", false, "2026-12-03", ("a", "b")),
            dataset("clean-old", true, "2026-12-01", ("a", "b")),
            dataset("clean-new", true, "2026-12-02", ("a", "b")),
        ];
        // (index, evidence, extra): a dirty build loses however much evidence it has.
        let chosen = best(&d, &[(0, 1000, false), (1, 10, false), (2, 10, false)]);
        assert_eq!(chosen, Some(2), "clean, then the newest of equal evidence");
        let chosen = best(&d, &[(0, 1000, true), (1, 10, true), (2, 10, false)]);
        assert_eq!(chosen, Some(1), "interleaved before newer");
        let chosen = best(&d, &[(1, 10, false), (2, 5, false)]);
        assert_eq!(chosen, Some(1), "more evidence before newer");
        assert_eq!(best::<bool>(&d, &[]), None);
    }

    #[test]
    fn datasets_measured_minutes_apart_do_not_overlap_in_time() {
        let veth = dataset(
            "veth",
            true,
            "x",
            ("2026-12-02T07:13:00Z", "2026-12-02T07:16:21Z"),
        );
        let loopback = dataset(
            "loopback",
            true,
            "x",
            ("2026-12-02T07:17:00Z", "2026-12-02T07:20:18Z"),
        );
        let interleaved = dataset(
            "both",
            true,
            "x",
            ("2026-12-02T07:15:00Z", "2026-12-02T07:18:00Z"),
        );
        assert!(!overlapping(&veth, &loopback));
        assert!(overlapping(&veth, &interleaved) && overlapping(&interleaved, &loopback));
    }
}
