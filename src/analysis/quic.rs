//! The QUIC figures of one dataset, for the QUIC report: each QUIC protocol against each
//! protocol it is compared with (how many configurations the comparison rule decides each
//! way), and per QUIC configuration the medians of quinn's counters over its passed runs.

use echomark_archive::{CaseKey, Protocol, QuicTransport};
use serde::Serialize;

use super::aggregate::{Configuration, Stat, Status};
use super::backends::Tally;
use super::decision::{decide, Rules};
use super::ratios::{self, Spread};
use crate::model::{Dataset, Run};
use echomark_decide::Decision;

/// One QUIC protocol against one of its baselines, over the configurations both passed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub subject: Protocol,
    pub base: Protocol,
    /// The throughput ratios of the medians.
    pub spread: Spread,
    /// The subject decided lower or higher than the base, equivalent, or undecided, in how
    /// many configurations.
    pub lower: usize,
    pub higher: usize,
    pub equivalent: usize,
    pub undecided: usize,
}

/// quinn's counters of one QUIC configuration, medians over its passed runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterRow {
    pub key: CaseKey,
    pub runs: usize,
    /// Packets declared lost per 100 sent (the clients', summed over connections).
    pub lost_percent: Stat,
    pub congestion_events: f64,
    /// UDP datagrams per send system call (above 1 when GSO batched them).
    pub datagrams_per_send: f64,
    pub smoothed_rtt_us: f64,
    /// The smallest datagram size limit any run ended with (RFC 9221).
    pub datagram_size_limit: Option<u64>,
    /// `quic-datagram`: datagrams handed to quinn and never sent, per run (median over the
    /// runs that recorded both counts).
    pub datagrams_dropped_on_send: Option<f64>,
    /// A connection per message (`quic-handshake`, `quic-0rtt`): the handshakes a run made
    /// (the connection figures above are then zero), and the share whose 0-RTT data the
    /// server accepted, in percent.
    pub handshakes: Option<f64>,
    pub zero_rtt_accepted_percent: Option<f64>,
}

/// One QUIC configuration measured under several transport settings: its figures, and
/// against the same configuration with quinn's defaults where that was measured too.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TransportRow {
    pub key: CaseKey,
    /// The settings in full (quinn's defaults where the key names none).
    pub transport: QuicTransport,
    pub throughput: Stat,
    pub p99_us: Option<Stat>,
    /// Against quinn's defaults: the ratio of the throughput medians and what the ranges
    /// decide; absent for the defaults themselves and where they were not measured.
    pub against_defaults: Option<(f64, Decision)>,
}

/// One configuration of a receive-buffer pressure experiment (the server's UDP receive
/// buffer requested per case): UDP or a QUIC protocol, every run counted, passed or not.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PressureRow {
    pub key: CaseKey,
    pub runs: usize,
    pub runs_passed: usize,
    /// Round trips per second over every run (failed ones too: a run that lost messages
    /// still measured its rate).
    pub throughput: Option<Stat>,
    /// Messages lost per run, median (the datagram protocols; the stream protocols lose none).
    pub lost_messages: f64,
    /// QUIC: packets the clients' connections declared lost per 100 sent, median.
    pub lost_packets_percent: Option<f64>,
}

/// The QUIC figures of one dataset; empty without QUIC runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct QuicAnalysis {
    /// QUIC runs in the dataset, passed or not.
    pub runs: usize,
    pub comparisons: Vec<Comparison>,
    pub counters: Vec<CounterRow>,
    /// The configurations measured under more than one transport setting, each setting a
    /// row, grouped by configuration.
    pub transports: Vec<TransportRow>,
    /// The receive-buffer pressure experiment, when the dataset ran one for QUIC.
    pub pressure: Vec<PressureRow>,
}

/// The QUIC figures of `dataset`, whose valid configurations are `configs`.
pub fn analyse(dataset: &Dataset, configs: &[&Configuration], rules: &Rules) -> QuicAnalysis {
    let runs = dataset
        .runs
        .iter()
        .filter(|r| r.key.protocol.is_quic())
        .count();
    if runs == 0 {
        return QuicAnalysis::default();
    }
    QuicAnalysis {
        runs,
        comparisons: comparisons(configs, rules),
        counters: configs
            .iter()
            .filter(|c| c.key.protocol.is_quic() && c.status == Status::Valid)
            .filter_map(|c| counter_row(&c.key, dataset))
            .collect(),
        transports: transports(configs, rules),
        pressure: pressure(dataset),
    }
}

/// The configurations of `dataset` that request their own server receive buffer, UDP and
/// QUIC alike, in key order; none unless some QUIC run requests one.
fn pressure(dataset: &Dataset) -> Vec<PressureRow> {
    use std::collections::BTreeMap;
    let pressured = |r: &&Run| r.key.udp_server_recv_buffer.is_some() && r.key.protocol.rides_udp();
    if !dataset
        .runs
        .iter()
        .filter(pressured)
        .any(|r| r.key.protocol.is_quic())
    {
        return Vec::new();
    }
    let mut by_key: BTreeMap<&CaseKey, Vec<&Run>> = BTreeMap::new();
    for r in dataset.runs.iter().filter(pressured) {
        by_key.entry(&r.key).or_default().push(r);
    }
    by_key
        .into_iter()
        .map(|(key, runs)| {
            let lost_packets: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.instruments.quic.as_ref())
                .filter(|q| q.sent_packets > 0)
                .map(|q| 100.0 * q.lost_packets as f64 / q.sent_packets as f64)
                .collect();
            let lost: Vec<f64> = runs.iter().map(|r| r.udp_lost_messages as f64).collect();
            PressureRow {
                key: key.clone(),
                runs: runs.len(),
                runs_passed: runs.iter().filter(|r| r.passed).count(),
                throughput: ratios::median_range(
                    runs.iter()
                        .filter_map(|r| r.roundtrips_per_second)
                        .collect(),
                ),
                lost_messages: echomark_archive::plan::median(&lost).unwrap_or(0.0),
                lost_packets_percent: echomark_archive::plan::median(&lost_packets),
            }
        })
        .collect()
}

/// Every valid QUIC configuration whose settings were varied: the rows of each
/// configuration (its key without the transport) side by side, quinn's defaults first.
fn transports(configs: &[&Configuration], rules: &Rules) -> Vec<TransportRow> {
    use std::collections::BTreeMap;
    let metric = echomark_archive::Metric::RoundtripsPerSecond;
    let mut groups: BTreeMap<CaseKey, Vec<&Configuration>> = BTreeMap::new();
    for c in configs
        .iter()
        .filter(|c| c.key.protocol.is_quic() && c.status == Status::Valid)
    {
        let plain = CaseKey {
            quic_transport: None,
            ..c.key.clone()
        };
        groups.entry(plain).or_default().push(c);
    }
    let mut rows = Vec::new();
    for (plain, mut members) in groups.into_iter().filter(|(_, m)| m.len() > 1) {
        members.sort_by_key(|c| c.key.quic_transport);
        let defaults = members.iter().copied().find(|c| c.key == plain);
        for c in members {
            let Some(throughput) = c.stat(metric) else {
                continue;
            };
            let against_defaults = defaults
                .filter(|_| c.key.quic_transport.is_some())
                .and_then(|d| {
                    let median = d.stat(metric)?.median;
                    Some((throughput.median / median, decide(d, c, metric, rules)?))
                });
            rows.push(TransportRow {
                key: c.key.clone(),
                transport: c.key.quic_transport.unwrap_or_default(),
                throughput,
                p99_us: c.stat(echomark_archive::Metric::RttP99Us),
                against_defaults,
            });
        }
    }
    rows
}

fn comparisons(configs: &[&Configuration], rules: &Rules) -> Vec<Comparison> {
    let present = |p: Protocol| configs.iter().any(|c| c.key.protocol == p);
    Protocol::QUIC
        .iter()
        .copied()
        .filter(|p| present(*p))
        .flat_map(|subject| {
            ratios::baselines(subject)
                .into_iter()
                .filter(|base| present(*base))
                .filter_map(move |base| {
                    let pairs = ratios::pairs(configs, subject, base);
                    let spread = ratios::spread(&pairs)?;
                    let metric = echomark_archive::Metric::RoundtripsPerSecond;
                    let mut t = Tally::default();
                    for p in &pairs {
                        if let Some(d) = decide(p.base, p.subject, metric, rules) {
                            t.count(&d);
                        }
                    }
                    Some(Comparison {
                        subject,
                        base,
                        spread,
                        lower: t.subject_lower,
                        higher: t.subject_higher,
                        equivalent: t.equivalent,
                        undecided: t.undecided,
                    })
                })
        })
        .collect()
}

/// The medians of quinn's counters over the passed runs of `key`; `None` when none of
/// them recorded the counters.
fn counter_row(key: &CaseKey, dataset: &Dataset) -> Option<CounterRow> {
    let counted: Vec<(&Run, &echomark_archive::QuicCounters)> = dataset
        .runs
        .iter()
        .filter(|r| r.passed && &r.key == key)
        .filter_map(|r| Some((r, r.instruments.quic.as_ref()?)))
        .collect();
    let median = |f: &dyn Fn(&echomark_archive::QuicCounters) -> f64| {
        ratios::median_range(counted.iter().map(|(_, q)| f(q)).collect())
    };
    let per = |part: u64, whole: u64| part as f64 / whole.max(1) as f64;
    Some(CounterRow {
        key: key.clone(),
        runs: counted.len(),
        lost_percent: median(&|q| 100.0 * per(q.lost_packets, q.sent_packets))?,
        congestion_events: median(&|q| q.congestion_events as f64)?.median,
        datagrams_per_send: median(&|q| per(q.udp_tx_datagrams, q.udp_tx_ios))?.median,
        smoothed_rtt_us: median(&|q| q.smoothed_rtt_us)?.median,
        datagram_size_limit: counted
            .iter()
            .filter_map(|(_, q)| q.datagram_size_limit)
            .min(),
        datagrams_dropped_on_send: optional_median(&counted, |q| {
            Some(q.datagrams_handed?.saturating_sub(q.datagram_frames_sent?) as f64)
        }),
        handshakes: optional_median(&counted, |q| Some(q.handshakes? as f64)),
        zero_rtt_accepted_percent: optional_median(&counted, |q| {
            Some(100.0 * per(q.zero_rtt_accepted?, q.handshakes?))
        }),
    })
}

/// The median of `f` over the runs that have it.
fn optional_median(
    counted: &[(&Run, &echomark_archive::QuicCounters)],
    f: impl Fn(&echomark_archive::QuicCounters) -> Option<f64>,
) -> Option<f64> {
    let values: Vec<f64> = counted.iter().filter_map(|(_, q)| f(q)).collect();
    echomark_archive::plan::median(&values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::run;

    /// A run of `protocol` whose clients' QUIC statistics were `counters`.
    fn with_quic(
        protocol: Protocol,
        repetition: u64,
        counters: echomark_archive::QuicCounters,
    ) -> Run {
        let mut r = run(protocol, repetition);
        r.instruments.quic = Some(counters);
        r
    }

    fn quic_run(repetition: u64, sent: u64, lost: u64) -> Run {
        with_quic(
            Protocol::Quic,
            repetition,
            echomark_archive::QuicCounters {
                connections: 1,
                sent_packets: sent,
                lost_packets: lost,
                udp_tx_datagrams: sent,
                udp_tx_ios: sent / 2,
                smoothed_rtt_us: 100.0,
                datagram_size_limit: Some(1400 - repetition),
                ..Default::default()
            },
        )
    }

    #[test]
    fn counters_are_medians_over_the_passed_runs_of_a_configuration() {
        let mut failed = quic_run(3, 100, 90);
        failed.passed = false;
        let dataset = Dataset {
            runs: vec![quic_run(1, 1000, 10), quic_run(2, 1000, 30), failed],
            name: "d".into(),
            files: Vec::new(),
            warnings: Vec::new(),
        };
        let row = counter_row(&dataset.runs[0].key, &dataset).expect("counted");
        assert_eq!(row.runs, 2);
        assert_eq!(row.lost_percent.median, 2.0);
        assert_eq!((row.lost_percent.min, row.lost_percent.max), (1.0, 3.0));
        assert_eq!(row.datagrams_per_send, 2.0);
        assert_eq!(row.datagram_size_limit, Some(1398));
        assert_eq!(
            (row.handshakes, row.zero_rtt_accepted_percent),
            (None, None)
        );
    }

    #[test]
    fn datagrams_dropped_on_send_are_those_handed_and_never_framed() {
        let datagram_run = |repetition, handed, framed| {
            with_quic(
                Protocol::QuicDatagram,
                repetition,
                echomark_archive::QuicCounters {
                    datagrams_handed: Some(handed),
                    datagram_frames_sent: Some(framed),
                    ..Default::default()
                },
            )
        };
        let dataset = Dataset {
            runs: vec![
                datagram_run(1, 1000, 1000),
                datagram_run(2, 1000, 990),
                datagram_run(3, 1000, 970),
            ],
            name: "d".into(),
            files: Vec::new(),
            warnings: Vec::new(),
        };
        let row = counter_row(&dataset.runs[0].key, &dataset).expect("counted");
        assert_eq!(row.datagrams_dropped_on_send, Some(10.0));
        let streams = Dataset {
            runs: vec![quic_run(1, 1000, 10)],
            ..dataset
        };
        let row = counter_row(&streams.runs[0].key, &streams).expect("counted");
        assert_eq!(row.datagrams_dropped_on_send, None);
    }

    #[test]
    fn a_connection_per_message_counts_its_handshakes_and_the_share_resumed_in_0_rtt() {
        let resumed = |repetition, made, accepted| {
            with_quic(
                Protocol::Quic0rtt,
                repetition,
                echomark_archive::QuicCounters {
                    handshakes: Some(made),
                    zero_rtt_accepted: Some(accepted),
                    ..Default::default()
                },
            )
        };
        let dataset = Dataset {
            runs: vec![resumed(1, 200, 150), resumed(2, 400, 360)],
            name: "d".into(),
            files: Vec::new(),
            warnings: Vec::new(),
        };
        let row = counter_row(&dataset.runs[0].key, &dataset).expect("counted");
        assert_eq!(row.handshakes, Some(300.0));
        assert_eq!(row.zero_rtt_accepted_percent, Some(82.5));
    }

    #[test]
    fn each_varied_setting_is_set_against_quinns_defaults_by_the_rule() {
        use crate::analysis::aggregate::test_configuration;
        use echomark_archive::{Congestion, Metric};
        let with = |transport: Option<QuicTransport>, (min, median, max): (f64, f64, f64)| {
            let stats = std::collections::BTreeMap::from([(
                Metric::RoundtripsPerSecond,
                Stat { median, min, max },
            )]);
            let mut c = test_configuration("quic", "shared", 1, stats, Status::Valid);
            c.key.quic_transport = transport;
            c
        };
        let rules = Rules::default();
        let bbr = QuicTransport {
            congestion: Congestion::Bbr,
            ..QuicTransport::default()
        };
        let no_gso = QuicTransport {
            gso: false,
            ..QuicTransport::default()
        };
        let configs = [
            with(Some(bbr), (150.0, 160.0, 170.0)),
            with(None, (90.0, 100.0, 110.0)),
            with(Some(no_gso), (95.0, 105.0, 115.0)),
        ];
        let refs: Vec<&Configuration> = configs.iter().collect();
        let rows = transports(&refs, &rules);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].transport, QuicTransport::default());
        assert_eq!(rows[0].against_defaults, None);
        let of = |t: QuicTransport| rows.iter().find(|r| r.transport == t).unwrap();
        let (ratio, d) = of(bbr).against_defaults.unwrap();
        assert_eq!((ratio, d.verdict), (1.6, echomark_decide::Verdict::Higher));
        assert!(matches!(
            of(no_gso).against_defaults.map(|a| a.1.verdict),
            Some(echomark_decide::Verdict::Undecided { .. })
        ));
        // A configuration measured under one setting alone has nothing to set it against.
        assert!(transports(&refs[..1], &rules).is_empty());
    }

    #[test]
    fn a_pressure_row_counts_failed_runs_their_lost_messages_and_quics_lost_packets() {
        let pressed = |protocol, repetition, passed, lost, sent_lost: Option<(u64, u64)>| {
            let mut r = run(protocol, repetition);
            r.key.udp_server_recv_buffer = Some(8192);
            r.passed = passed;
            r.udp_lost_messages = lost;
            r.instruments.quic = sent_lost.map(|(sent, lost)| echomark_archive::QuicCounters {
                sent_packets: sent,
                lost_packets: lost,
                ..Default::default()
            });
            r
        };
        let udp_only = Dataset {
            runs: vec![pressed(Protocol::Udp, 1, false, 40, None)],
            name: "d".into(),
            files: Vec::new(),
            warnings: Vec::new(),
        };
        // UDP alone is the UDP report's isolation experiment, not QUIC's.
        assert!(pressure(&udp_only).is_empty());
        let dataset = Dataset {
            runs: vec![
                pressed(Protocol::Udp, 1, false, 40, None),
                pressed(Protocol::Quic, 1, true, 0, Some((1000, 50))),
                pressed(Protocol::Quic, 2, true, 0, Some((1000, 30))),
                pressed(Protocol::QuicDatagram, 1, false, 12, Some((500, 0))),
            ],
            name: "d".into(),
            files: Vec::new(),
            warnings: Vec::new(),
        };
        let rows = pressure(&dataset);
        assert_eq!(rows.len(), 3);
        let of = |p: Protocol| rows.iter().find(|r| r.key.protocol == p).unwrap();
        assert_eq!(
            (
                of(Protocol::Udp).runs_passed,
                of(Protocol::Udp).lost_messages
            ),
            (0, 40.0)
        );
        assert_eq!(of(Protocol::Quic).runs_passed, 2);
        assert_eq!(of(Protocol::Quic).lost_packets_percent, Some(4.0));
        assert_eq!(of(Protocol::QuicDatagram).lost_messages, 12.0);
    }

    #[test]
    fn a_dataset_without_quic_has_nothing_to_report() {
        let dataset = Dataset {
            runs: vec![run(Protocol::Tcp, 1)],
            name: "d".into(),
            files: Vec::new(),
            warnings: Vec::new(),
        };
        assert_eq!(
            analyse(&dataset, &[], &Rules::default()),
            QuicAnalysis::default()
        );
    }
}
