//! Protocol against protocol on the same configuration: what TLS, WebSocket framing or
//! HTTP costs relative to the stream it rides on.
//!
//! A pair is formed only where the configuration passed under both protocols, and every key
//! field but the protocol is equal (backend, implementation, payload, clients, window, IO
//! model, threads, handler work), so a ratio never crosses a failed run or another load.

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

use crate::aggregate::{Configuration, Status};
use crate::model::ConfigKey;

/// The protocols `protocol` is compared with, closest first: a TLS protocol against its
/// plaintext form (`wss` → `websocket`, `https` → `http`; `tcps` → `tcp`), then every stream
/// protocol against TCP. UDP is not a layer over TCP and has no baseline.
pub fn baselines(protocol: &str) -> Vec<&'static str> {
    match protocol {
        "tcp" | "udp" => vec![],
        "wss" => vec!["websocket", "tcp"],
        "https" => vec!["http", "tcp"],
        _ => vec!["tcp"],
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
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub count: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

/// Every pair of `subject` against `base` among `configs`, in the order of `configs`.
pub fn pairs<'a>(configs: &[&'a Configuration], subject: &str, base: &str) -> Vec<Pair<'a>> {
    let passed = |c: &&&Configuration| c.status == Status::Valid;
    let bases: HashMap<ConfigKey, &Configuration> = configs
        .iter()
        .filter(passed)
        .filter(|c| c.key.protocol == base)
        .map(|c| {
            let mut key = c.key.clone();
            key.protocol = subject.to_string();
            (key, *c)
        })
        .collect();
    configs
        .iter()
        .filter(passed)
        .filter(|c| c.key.protocol == subject)
        .filter_map(|c| {
            let b = *bases.get(&c.key)?;
            let ratio = |metric: &str| {
                let (s, b) = (c.stat(metric)?.median, b.stat(metric)?.median);
                (b > 0.0).then_some(s / b)
            };
            Some(Pair {
                subject: c,
                base: b,
                throughput: ratio("roundtrips_per_second")?,
                p99: ratio("rtt_p99_us"),
            })
        })
        .collect()
}

/// One ratio as `summary.json` lists it: the subject's key, the baseline protocol, and the
/// ratios of the medians.
#[derive(Debug, Clone, Serialize)]
pub struct RatioRow {
    #[serde(flatten)]
    pub key: ConfigKey,
    pub baseline: String,
    pub roundtrips_per_second_ratio: f64,
    pub rtt_p99_us_ratio: Option<f64>,
}

/// Every pair of every protocol in `configs` against each of its [`baselines`], subject
/// protocols in name order.
pub fn ratio_rows(configs: &[&Configuration]) -> Vec<RatioRow> {
    let protocols: BTreeSet<&str> = configs.iter().map(|c| c.key.protocol.as_str()).collect();
    protocols
        .iter()
        .flat_map(|subject| {
            baselines(subject)
                .into_iter()
                .filter(|base| protocols.contains(base))
                .flat_map(move |base| {
                    pairs(configs, subject, base)
                        .into_iter()
                        .map(move |p| RatioRow {
                            key: p.subject.key.clone(),
                            baseline: base.to_string(),
                            roundtrips_per_second_ratio: p.throughput,
                            rtt_p99_us_ratio: p.p99,
                        })
                })
        })
        .collect()
}

/// Median, minimum and maximum of the throughput ratios; `None` without pairs.
pub fn spread(pairs: &[Pair]) -> Option<Spread> {
    let mut ratios: Vec<f64> = pairs.iter().map(|p| p.throughput).collect();
    ratios.sort_by(f64::total_cmp);
    let n = ratios.len();
    let median = match n {
        0 => return None,
        _ if n % 2 == 1 => ratios[n / 2],
        _ => (ratios[n / 2 - 1] + ratios[n / 2]) / 2.0,
    };
    Some(Spread {
        count: n,
        median,
        min: ratios[0],
        max: ratios[n - 1],
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::aggregate::Stat;

    fn config(protocol: &str, threads: u64, rate: f64, p99: f64, status: Status) -> Configuration {
        let stat = |v: f64| Stat {
            median: v,
            min: v,
            max: v,
        };
        let stats = BTreeMap::from([
            ("roundtrips_per_second", stat(rate)),
            ("rtt_p99_us", stat(p99)),
        ]);
        crate::aggregate::test_configuration(protocol, "shared", threads, stats, status)
    }

    #[test]
    fn tls_protocols_compare_with_their_plain_form_first() {
        assert_eq!(baselines("tcps"), ["tcp"]);
        assert_eq!(baselines("wss"), ["websocket", "tcp"]);
        assert_eq!(baselines("https"), ["http", "tcp"]);
        assert_eq!(baselines("websocket"), ["tcp"]);
        assert!(baselines("tcp").is_empty() && baselines("udp").is_empty());
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
        let found = pairs(&refs, "tcps", "tcp");
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
