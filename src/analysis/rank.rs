//! Rankings: within every group of comparable configurations, which IO model is fastest.
//!
//! A group is (dataset, backend, implementation, protocol, payload, clients, window, work,
//! and a fleet's generator count);
//! its members differ only in topology. Only valid configurations compete. The best is the
//! highest throughput median; a tie goes to the earlier topology in the canonical order
//! 1×1, 1×2, 1×4, 2×1, 4×1 (contexts × threads), never to string order. The best is set
//! against every other model, and against one thread, by the comparison rule
//! ([`crate::analysis::decision`]): the medians order them, the rule decides.

use serde::Serialize;

use echomark_archive::{IoModel, Metric, Protocol};

use crate::analysis::aggregate::{Configuration, Stat, Status};
use crate::analysis::decision::{decide, Rules};
use echomark_decide::Decision;

/// The fields a group shares.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct GroupKey {
    pub dataset: String,
    pub backend: String,
    pub implementation: String,
    pub protocol: Protocol,
    pub payload_bytes: u64,
    pub clients: u64,
    pub window: u64,
    pub handler_work: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub udp_server_recv_buffer: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quic_transport: Option<echomark_archive::QuicTransport>,
    /// A fleet's load: the generators that measured together (absent for one client).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generators: Option<u64>,
}

/// One topology's figures in a ranking.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Contender {
    pub io_model: IoModel,
    pub io_threads: u64,
    pub roundtrips_per_second: Stat,
    pub rtt_p99_us: Option<Stat>,
}

/// Another model of the group set against the best.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rival {
    pub contender: Contender,
    /// The best's throughput against this model's (the best is the subject).
    pub throughput: Decision,
}

/// The verdict for one group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ranking {
    #[serde(flatten)]
    pub group: GroupKey,
    pub best: Contender,
    /// The one-thread (`shared 1`) configuration, when it is valid.
    pub baseline: Option<Contender>,
    /// Best median ÷ baseline median.
    pub speedup: Option<f64>,
    /// The best's throughput against one thread's; `None` when the best is one thread or
    /// one thread did not pass.
    pub against_baseline: Option<Decision>,
    pub runner_up: Option<Contender>,
    /// Every other valid model set against the best, by throughput median (the runner-up
    /// first).
    pub rivals: Vec<Rival>,
    /// Valid topologies compared.
    pub candidates: usize,
    /// Topologies left out because a run failed.
    pub excluded: Vec<String>,
}

impl Ranking {
    /// The best's throughput against the runner-up's.
    pub fn against_runner_up(&self) -> Option<&Decision> {
        self.rivals.first().map(|r| &r.throughput)
    }

    /// Whether the rule finds the best higher than every other model: the one case a page
    /// names it the fastest.
    pub fn best_is_decided(&self) -> bool {
        !self.rivals.is_empty()
            && self
                .rivals
                .iter()
                .all(|r| r.throughput.verdict == echomark_decide::Verdict::Higher)
    }
}

impl Ranking {
    /// The configuration key of the group's fastest model.
    pub fn best_key(&self) -> echomark_archive::CaseKey {
        let g = &self.group;
        echomark_archive::CaseKey {
            backend: echomark_archive::Backend::named(&g.backend),
            implementation: g.implementation.clone(),
            protocol: g.protocol,
            payload_bytes: g.payload_bytes,
            clients: g.clients,
            window: g.window,
            io_model: self.best.io_model,
            io_threads: self.best.io_threads,
            handler_work: g.handler_work,
            udp_server_recv_buffer: g.udp_server_recv_buffer,
            load: None,
            quic_transport: g.quic_transport,
            generators: g.generators,
        }
    }
}

/// The group a configuration competes in (the load its IO models are ranked in).
pub fn group_key(c: &Configuration) -> GroupKey {
    group_of(c)
}

/// The group a configuration competes in.
pub(crate) fn group_of(c: &Configuration) -> GroupKey {
    GroupKey {
        dataset: c.dataset.clone(),
        backend: c.key.backend.to_string(),
        implementation: c.key.implementation.clone(),
        protocol: c.key.protocol,
        payload_bytes: c.key.payload_bytes,
        clients: c.key.clients,
        window: c.key.window,
        handler_work: c.key.handler_work,
        udp_server_recv_buffer: c.key.udp_server_recv_buffer,
        quic_transport: c.key.quic_transport,
        generators: c.key.generators,
    }
}

/// A configuration as a contender of its group.
pub(crate) fn contender(c: &Configuration, throughput: Stat) -> Contender {
    Contender {
        io_model: c.key.io_model,
        io_threads: c.key.io_threads,
        roundtrips_per_second: throughput,
        rtt_p99_us: c.stat(Metric::RttP99Us),
    }
}

/// Ranks every group that has at least one valid configuration with a throughput figure.
pub fn rankings(
    configurations: &[Configuration],
    rules_of: &dyn Fn(&str) -> Rules,
) -> Vec<Ranking> {
    let mut groups: std::collections::BTreeMap<GroupKey, Vec<&Configuration>> = Default::default();
    for c in configurations {
        groups.entry(group_of(c)).or_default().push(c);
    }
    let mut out = Vec::new();
    for (group, members) in groups {
        let excluded = members
            .iter()
            .filter(|c| c.status == Status::Failed)
            .map(|c| format!("{} {}", c.key.io_model, c.key.io_threads))
            .collect();
        let mut valid: Vec<(&Configuration, Stat)> = members
            .iter()
            .filter(|c| c.status == Status::Valid)
            .filter_map(|c| c.stat(Metric::RoundtripsPerSecond).map(|s| (*c, s)))
            .collect();
        if valid.is_empty() {
            continue;
        }
        valid.sort_by(|(a, sa), (b, sb)| {
            sb.median
                .total_cmp(&sa.median)
                .then(a.key.topology_rank().cmp(&b.key.topology_rank()))
        });
        let (best_cfg, best_stat) = valid[0];
        let rules = &rules_of(&group.dataset);
        let baseline = valid.iter().find(|(c, _)| c.key.is_baseline());
        let runner_up = valid.get(1);
        let throughput =
            |other: &Configuration| decide(other, best_cfg, Metric::RoundtripsPerSecond, rules);
        out.push(Ranking {
            group,
            best: contender(best_cfg, best_stat),
            baseline: baseline.map(|(c, s)| contender(c, *s)),
            speedup: baseline
                .filter(|(_, s)| s.median > 0.0)
                .map(|(_, s)| best_stat.median / s.median),
            against_baseline: baseline
                .filter(|(c, _)| !std::ptr::eq(*c, best_cfg))
                .and_then(|(c, _)| throughput(c)),
            runner_up: runner_up.map(|(c, s)| contender(c, *s)),
            rivals: valid[1..]
                .iter()
                .filter_map(|(c, s)| {
                    Some(Rival {
                        contender: contender(c, *s),
                        throughput: throughput(c)?,
                    })
                })
                .collect(),
            candidates: valid.len(),
            excluded,
        });
    }
    // Listed by name, as summary.json always has: protocol names sort alphabetically here,
    // while pages use the protocols' canonical order.
    out.sort_by(|a, b| a.group.by_name().cmp(&b.group.by_name()));
    out
}

impl GroupKey {
    /// The key with the protocol by its name, for listings sorted by name.
    fn by_name(&self) -> impl Ord + '_ {
        (
            self.dataset.as_str(),
            self.backend.as_str(),
            self.implementation.as_str(),
            self.protocol.as_str(),
            self.payload_bytes,
            self.clients,
            self.window,
            self.handler_work,
            self.udp_server_recv_buffer,
            self.quic_transport,
            self.generators,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn config(
        model: &str,
        threads: u64,
        median: f64,
        spread: f64,
        status: Status,
    ) -> Configuration {
        let mut stats = BTreeMap::new();
        stats.insert(
            Metric::RoundtripsPerSecond,
            Stat {
                median,
                min: median - spread,
                max: median + spread,
            },
        );
        crate::analysis::aggregate::test_configuration("tcp", model, threads, stats, status)
    }

    #[test]
    fn ties_go_to_the_canonical_topology_order_not_string_order() {
        // "sharded" < "shared" as strings; the canonical order puts shared 4 (1×4) first.
        let configs = [
            config("sharded", 2, 500.0, 1.0, Status::Valid),
            config("shared", 4, 500.0, 1.0, Status::Valid),
            config("shared", 1, 250.0, 1.0, Status::Valid),
        ];
        let r = &rankings(&configs, &|_| Rules::default())[0];
        assert_eq!((r.best.io_model, r.best.io_threads), (IoModel::Shared, 4));
        assert_eq!(r.speedup, Some(2.0));
        let higher = echomark_decide::Verdict::Higher;
        assert_eq!(r.against_baseline.map(|d| d.verdict), Some(higher));
        assert_eq!(
            r.against_runner_up().map(|d| d.verdict),
            Some(echomark_decide::Verdict::Equivalent),
            "equal runs are equivalent"
        );
        assert!(!r.best_is_decided());
    }

    #[test]
    fn failed_configurations_never_win() {
        let configs = [
            config("sharded", 4, 900.0, 1.0, Status::Failed),
            config("shared", 2, 300.0, 100.0, Status::Valid),
            config("shared", 1, 250.0, 100.0, Status::Valid),
        ];
        let r = &rankings(&configs, &|_| Rules::default())[0];
        assert_eq!(r.best.io_threads, 2);
        assert_eq!(r.excluded, ["sharded 4"]);
        assert!(
            matches!(
                r.against_baseline.map(|d| d.verdict),
                Some(echomark_decide::Verdict::Undecided { .. })
            ),
            "a 20 % difference inside a ±33 % spread decides nothing: {:?}",
            r.against_baseline
        );
        assert_eq!(r.candidates, 2);
        assert!(!r.best_is_decided());
    }

    #[test]
    fn generator_counts_are_loads_of_their_own_never_rivals() {
        let fleet = |generators, median| {
            let mut c = config("shared", 1, median, 1.0, Status::Valid);
            c.key.generators = Some(generators);
            c
        };
        let configs = [fleet(1, 500.0), fleet(2, 510.0), fleet(4, 490.0)];
        let ranked = rankings(&configs, &|_| Rules::default());
        assert_eq!(ranked.len(), 3, "one load per generator count");
        for (r, c) in ranked.iter().zip(&configs) {
            assert_eq!(r.group.generators, c.key.generators);
            assert_eq!((r.candidates, r.rivals.len()), (1, 0));
            assert_eq!(
                r.best_key(),
                c.key,
                "the key leads back to its configuration"
            );
        }
        let json = serde_json::to_value(&ranked[2]).unwrap();
        assert_eq!(json["generators"], 4);
        let plain = &rankings(&[config("shared", 1, 1.0, 0.0, Status::Valid)], &|_| {
            Rules::default()
        })[0];
        assert!(serde_json::to_value(plain)
            .unwrap()
            .get("generators")
            .is_none());
    }
}
