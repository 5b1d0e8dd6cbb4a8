//! Protocol against protocol on the same configuration: what TLS, WebSocket framing or
//! HTTP costs relative to the stream it rides on.
//!
//! A pair is formed only where the configuration passed under both protocols, and every key
//! field but the protocol is equal (backend, implementation, payload, clients, window, IO
//! model, threads, handler work), so a ratio never crosses a failed run or another load.

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

use crate::analysis::aggregate::{Configuration, Stat, Status};
use echomark_archive::{CaseKey, Metric, Protocol};

/// The protocols `protocol` is compared with, closest first: a TLS protocol against its
/// plaintext form (`wss` → `websocket`, `https` → `http`; `tcps` → `tcp`), then every stream
/// protocol against TCP. UDP is not a layer over TCP and has no baseline; QUIC, reliable and
/// encrypted over UDP, is set against TCP+TLS, then TCP; its two other forms against the
/// nearest of their own kind.
pub fn baselines(protocol: Protocol) -> Vec<Protocol> {
    match protocol {
        Protocol::Tcp | Protocol::Udp => vec![],
        // Encrypted like TCP+TLS, reliable like TCP: the two it stands in for.
        Protocol::Quic => vec![Protocol::Tcps, Protocol::Tcp],
        // A stream per message against one long-lived stream (what stream setup costs),
        // then against TCP+TLS.
        Protocol::QuicStreams => vec![Protocol::Quic, Protocol::Tcps],
        // Datagrams with QUIC's encryption and congestion control against bare datagrams,
        // then against QUIC's reliable stream (what reliability costs).
        Protocol::QuicDatagram => vec![Protocol::Udp, Protocol::Quic],
        // A connection per message against a stream per message on a kept connection (what
        // the handshake costs); 0-RTT against the full handshake (what resumption saves).
        Protocol::QuicHandshake => vec![Protocol::QuicStreams],
        Protocol::Quic0rtt => vec![Protocol::QuicHandshake, Protocol::QuicStreams],
        p => p
            .plaintext()
            .filter(|plain| *plain != Protocol::Tcp)
            .into_iter()
            .chain(std::iter::once(Protocol::Tcp))
            .collect(),
    }
}

/// One configuration measured under both protocols.
#[derive(Debug, Clone, Copy)]
pub struct Pair<'a> {
    pub subject: &'a Configuration,
    pub base: &'a Configuration,
    /// Median round trips/s of the subject ÷ the base's.
    pub throughput: f64,
    /// Median p99 of the subject ÷ the base's, when both have latency.
    pub p99: Option<f64>,
}

/// The spread of the throughput ratios over all pairs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    pub count: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

/// Every pair of `subject` against `base` among `configs`, in the order of `configs`.
pub fn pairs<'a>(
    configs: &[&'a Configuration],
    subject: Protocol,
    base: Protocol,
) -> Vec<Pair<'a>> {
    let passed = |c: &&&Configuration| c.status == Status::Valid;
    let bases: HashMap<CaseKey, &Configuration> = configs
        .iter()
        .filter(passed)
        .filter(|c| c.key.protocol == base)
        .map(|c| {
            let mut key = c.key.clone();
            key.protocol = subject;
            (key, *c)
        })
        .collect();
    configs
        .iter()
        .filter(passed)
        .filter(|c| c.key.protocol == subject)
        .filter_map(|c| {
            let b = *bases.get(&c.key)?;
            let ratio = |metric: Metric| {
                let (s, b) = (c.stat(metric)?.median, b.stat(metric)?.median);
                (b > 0.0).then_some(s / b)
            };
            Some(Pair {
                subject: c,
                base: b,
                throughput: ratio(Metric::RoundtripsPerSecond)?,
                p99: ratio(Metric::RttP99Us),
            })
        })
        .collect()
}

/// One ratio as `summary.json` lists it: the subject's key, the baseline protocol, and the
/// ratios of the medians.
#[derive(Debug, Clone, Serialize)]
pub struct RatioRow {
    #[serde(flatten)]
    pub key: CaseKey,
    pub baseline: Protocol,
    pub roundtrips_per_second_ratio: f64,
    pub rtt_p99_us_ratio: Option<f64>,
}

/// Every pair of every protocol in `configs` against each of its [`baselines`], subject
/// protocols in name order.
pub fn ratio_rows(configs: &[&Configuration]) -> Vec<RatioRow> {
    let protocols: BTreeSet<Protocol> = configs.iter().map(|c| c.key.protocol).collect();
    // Subjects in name order, as summary.json has always listed them.
    let mut subjects: Vec<Protocol> = protocols.iter().copied().collect();
    subjects.sort_by_key(|p| p.as_str());
    subjects
        .into_iter()
        .flat_map(|subject| {
            baselines(subject)
                .into_iter()
                .filter(|base| protocols.contains(base))
                .flat_map(move |base| {
                    pairs(configs, subject, base)
                        .into_iter()
                        .map(move |p| RatioRow {
                            key: p.subject.key.clone(),
                            baseline: base,
                            roundtrips_per_second_ratio: p.throughput,
                            rtt_p99_us_ratio: p.p99,
                        })
                })
        })
        .collect()
}

/// Median, minimum and maximum of the throughput ratios; `None` without pairs.
pub fn spread(pairs: &[Pair]) -> Option<Spread> {
    let s = median_range(pairs.iter().map(|p| p.throughput).collect())?;
    Some(Spread {
        count: pairs.len(),
        median: s.median,
        min: s.min,
        max: s.max,
    })
}

/// Median (of an even count, the mean of the two middle values), minimum and maximum of
/// `values`; `None` when there are none.
pub fn median_range(values: Vec<f64>) -> Option<Stat> {
    let median = echomark_archive::plan::median(&values)?;
    let (min, max) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    Some(Stat { median, min, max })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(protocol: &str, threads: u64, rate: f64, p99: f64, status: Status) -> Configuration {
        crate::analysis::aggregate::test_rated(protocol, "shared", threads, (rate, p99), status)
    }

    #[test]
    fn tls_protocols_compare_with_their_plain_form_first() {
        use Protocol::*;
        assert_eq!(baselines(Tcps), [Tcp]);
        assert_eq!(baselines(Wss), [Websocket, Tcp]);
        assert_eq!(baselines(Https), [Http, Tcp]);
        assert_eq!(baselines(Websocket), [Tcp]);
        assert!(baselines(Tcp).is_empty() && baselines(Udp).is_empty());
    }

    #[test]
    fn quic_compares_with_tls_over_tcp_and_its_other_forms_with_their_own_kind() {
        use Protocol::*;
        assert_eq!(baselines(Quic), [Tcps, Tcp]);
        assert_eq!(baselines(QuicStreams), [Quic, Tcps]);
        assert_eq!(baselines(QuicDatagram), [Udp, Quic]);
        assert_eq!(baselines(Quic0rtt), [QuicHandshake, QuicStreams]);
    }

    #[test]
    fn pairs_match_the_whole_key_and_skip_failures() {
        let all = [
            config("tcp", 1, 100.0, 10.0, Status::Valid),
            config("tcp", 2, 200.0, 20.0, Status::Valid),
            config("tcp", 4, 400.0, 40.0, Status::Failed),
            config("tcps", 1, 40.0, 25.0, Status::Valid),
            config("tcps", 2, 60.0, 30.0, Status::Valid),
            config("tcps", 4, 100.0, 50.0, Status::Valid),
            config("tcps", 8, 100.0, 50.0, Status::Valid),
        ];
        let refs: Vec<&Configuration> = all.iter().collect();
        let found = pairs(&refs, Protocol::Tcps, Protocol::Tcp);
        // threads 4: the TCP side failed; threads 8: no TCP configuration.
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].base.key.io_threads, 1);
        assert!((found[0].throughput - 0.4).abs() < 1e-12);
        assert_eq!(found[0].p99, Some(2.5));
        assert!((found[1].throughput - 0.3).abs() < 1e-12);
        let s = spread(&found).unwrap();
        assert_eq!(s.count, 2);
        assert!((s.median - 0.35).abs() < 1e-12 && s.min == found[1].throughput);
        assert_eq!(spread(&[]), None);
    }
}
