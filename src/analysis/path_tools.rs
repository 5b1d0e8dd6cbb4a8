//! Which tool to use for which figure of one network path, when a dataset holds a bulk
//! transfer tool's runs (iperf3) beside echomark's echoes over the same path.
//!
//! The two do not measure the same thing, so nothing here is ranked by the comparison
//! rule: iperf3 measures a one-way bulk transfer (bits per second, retransmissions, loss
//! and jitter at a set rate), echomark verified round trips (echoes per second and their
//! latency). The advice is which of them measured each figure, with that figure, and what
//! the other measured that comes closest.

use echomark_archive::{Metric, Protocol};
use serde::Serialize;

use super::aggregate::{Configuration, Stat, Status};
use super::ratios::median_range;
use crate::model::{Dataset, ImportedSource};

/// One protocol's bulk transfer, as the tool measured it over its runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bulk {
    pub protocol: Protocol,
    pub tool: ImportedSource,
    /// Parallel streams and bytes per write of the runs (the first run's).
    pub streams: u64,
    pub write_bytes: u64,
    /// Bits per second the sender sent, median [min, max] over the runs.
    pub sent_bits_per_second: Stat,
    /// TCP: retransmitted segments; UDP: datagrams lost in percent; median [min, max].
    pub retransmits: Option<Stat>,
    pub lost_percent: Option<Stat>,
    /// UDP: jitter, microseconds, median [min, max].
    pub jitter_us: Option<Stat>,
    /// echomark's echoes of the same protocol in the dataset (the fastest valid load):
    /// payload bits per second each way, median [min, max]; the nearest figure echomark has.
    pub echoes_bits_per_second: Option<Stat>,
}

/// One protocol's round-trip latency: measured by echomark's client only.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundTrip<'a> {
    pub config: &'a Configuration,
    pub p99_us: Stat,
    /// The tools of the dataset that measured no round trip of this protocol.
    pub without: Vec<ImportedSource>,
}

/// What to use for each figure of the path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathAdvice<'a> {
    pub bulk: Vec<Bulk>,
    pub round_trips: Vec<RoundTrip<'a>>,
}

impl PathAdvice<'_> {
    pub fn is_empty(&self) -> bool {
        self.bulk.is_empty()
    }
}

/// The figures of `dataset`'s path and who measured each; `own` are echomark's
/// configurations in the dataset. Empty (no bulk rows) when no tool measured a bulk
/// transfer.
pub fn advise<'a>(dataset: &Dataset, own: &[&'a Configuration]) -> PathAdvice<'a> {
    let mut bulk: Vec<Bulk> = Vec::new();
    for protocol in [Protocol::Tcp, Protocol::Udp] {
        let runs: Vec<(&crate::model::Run, &echomark_archive::StreamFigures)> = dataset
            .runs
            .iter()
            .filter(|r| r.passed && r.key.protocol == protocol)
            .filter_map(|r| Some((r, r.imported.as_ref()?.stream.as_ref()?)))
            .collect();
        let Some((first, figures)) = runs.first() else {
            continue;
        };
        let Some(tool) = dataset.files[first.file].imported.clone() else {
            continue;
        };
        let of = |f: &dyn Fn(&echomark_archive::StreamFigures) -> Option<f64>| {
            let v: Vec<f64> = runs.iter().filter_map(|(_, s)| f(s)).collect();
            (v.len() == runs.len()).then(|| median_range(v)).flatten()
        };
        let Some(sent) = of(&|s| Some(s.sent_bits_per_second)) else {
            continue;
        };
        bulk.push(Bulk {
            protocol,
            tool,
            streams: figures.streams,
            write_bytes: first.key.payload_bytes,
            sent_bits_per_second: sent,
            retransmits: of(&|s| s.retransmits.map(|r| r as f64)),
            lost_percent: of(&|s| s.lost_percent),
            jitter_us: of(&|s| s.jitter_ms.map(|j| j * 1000.0)),
            echoes_bits_per_second: fastest(own, protocol)
                .and_then(|c| c.values.get(&Metric::PayloadMibPerSecond))
                // Both ways in MiB/s → bits per second each way.
                .and_then(|v| median_range(v.iter().map(|m| m / 2.0 * 8_388_608.0).collect())),
        });
    }
    let tools: Vec<ImportedSource> = bulk.iter().map(|b| b.tool.clone()).collect();
    let round_trips = if bulk.is_empty() {
        Vec::new()
    } else {
        [Protocol::Tcp, Protocol::Udp]
            .into_iter()
            .filter_map(|p| {
                let config = fastest(own, p)?;
                Some(RoundTrip {
                    config,
                    p99_us: config.stat(Metric::RttP99Us)?,
                    without: dedup(&tools),
                })
            })
            .collect()
    };
    PathAdvice { bulk, round_trips }
}

/// echomark's valid configuration of `protocol` with the highest median rate.
fn fastest<'a>(own: &[&'a Configuration], protocol: Protocol) -> Option<&'a Configuration> {
    own.iter()
        .copied()
        .filter(|c| c.key.protocol == protocol && c.status == Status::Valid)
        .filter_map(|c| Some((c, c.stat(Metric::RoundtripsPerSecond)?.median)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(c, _)| c)
}

fn dedup(tools: &[ImportedSource]) -> Vec<ImportedSource> {
    let mut out: Vec<ImportedSource> = Vec::new();
    for t in tools {
        if !out.iter().any(|o| o.tool == t.tool) {
            out.push(t.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use echomark_archive::{Loop, StreamFigures, Tool};

    use super::*;
    use crate::model::{Format, ImportedFigures, Run};

    fn stream(bits: f64, retransmits: Option<u64>, lost: Option<f64>) -> StreamFigures {
        StreamFigures {
            streams: 1,
            sent_bits_per_second: bits,
            received_bits_per_second: bits,
            sent_bytes: 0,
            received_bytes: 0,
            retransmits,
            datagrams: None,
            lost_datagrams: None,
            lost_percent: lost,
            jitter_ms: lost.map(|_| 0.001),
            datagram_bytes: None,
            sender_cpu_percent: None,
            receiver_cpu_percent: None,
        }
    }

    fn tool_run(protocol: Protocol, bytes: u64, s: StreamFigures) -> Run {
        let mut r = crate::model::tests::run(protocol, 0);
        r.key.backend = echomark_archive::Backend::named("iperf3");
        r.key.payload_bytes = bytes;
        r.imported = Some(Box::new(ImportedFigures {
            fidelity: None,
            resolution_us: 0.0,
            loop_kind: Loop::Closed,
            latency_correction: false,
            errors: 0,
            non_2xx: 0,
            unfinished: None,
            stream: Some(s),
        }));
        r
    }

    fn dataset(runs: Vec<Run>) -> Dataset {
        let mut file =
            crate::read::file_record(std::path::Path::new("iperf3.json"), Format::Imported, None);
        file.imported = Some(ImportedSource {
            tool: Tool::Iperf3,
            version: Some("3.12".into()),
            host_recorded: true,
        });
        Dataset {
            name: "d".into(),
            files: vec![file],
            runs,
            warnings: Vec::new(),
        }
    }

    /// echomark's TCP echoes: 2,000 MiB/s both ways at 1, 2 and 3 M round trips/s.
    fn echoes() -> Configuration {
        let stat = |v: [f64; 3]| Stat {
            median: v[1],
            min: v[0],
            max: v[2],
        };
        let mut key = crate::model::tests::run(Protocol::Tcp, 0).key;
        key.window = 16;
        Configuration {
            dataset: "d".into(),
            key,
            status: Status::Valid,
            runs: 3,
            runs_passed: 3,
            stats: BTreeMap::from([
                (Metric::RoundtripsPerSecond, stat([1e6, 2e6, 3e6])),
                (Metric::RttP99Us, stat([7.0, 7.5, 8.0])),
            ]),
            values: BTreeMap::from([
                (Metric::RoundtripsPerSecond, vec![1e6, 2e6, 3e6]),
                (Metric::PayloadMibPerSecond, vec![1000.0, 2000.0, 3000.0]),
            ]),
            server_cpu_us_per_echo: Vec::new(),
            cpu_seconds: None,
            cpu_percent_estimated: None,
            cpu_machine_percent: None,
            open_loop: None,
        }
    }

    #[test]
    fn each_figure_names_the_side_that_measured_it_with_its_figures() {
        let d = dataset(vec![
            tool_run(Protocol::Tcp, 131_072, stream(22e9, Some(40), None)),
            tool_run(Protocol::Udp, 1024, stream(1e9, None, Some(0.3))),
            tool_run(Protocol::Tcp, 131_072, stream(20e9, Some(30), None)),
            tool_run(Protocol::Udp, 1024, stream(0.9e9, None, Some(0.5))),
            tool_run(Protocol::Tcp, 131_072, stream(24e9, Some(50), None)),
            tool_run(Protocol::Udp, 1024, stream(1.1e9, None, Some(0.1))),
        ]);
        let own = echoes();
        let advice = advise(&d, &[&own]);
        assert_eq!(advice.bulk.len(), 2, "{advice:?}");
        let tcp = &advice.bulk[0];
        assert_eq!(tcp.protocol, Protocol::Tcp);
        assert_eq!(tcp.tool.tool, Tool::Iperf3);
        assert_eq!(tcp.write_bytes, 131_072);
        assert_eq!(
            (
                tcp.sent_bits_per_second.median,
                tcp.sent_bits_per_second.min
            ),
            (22e9, 20e9)
        );
        assert_eq!(tcp.retransmits.map(|s| s.median), Some(40.0));
        assert!(tcp.lost_percent.is_none() && tcp.jitter_us.is_none());
        // 2,000 MiB/s both ways is 1,000 MiB/s each way: 8,388,608,000 bits/s.
        let each_way = tcp.echoes_bits_per_second.expect("echomark's TCP echoes");
        assert_eq!(each_way.median, 1000.0 * 8_388_608.0);
        let udp = &advice.bulk[1];
        assert_eq!(
            udp.lost_percent.map(|s| (s.median, s.max)),
            Some((0.3, 0.5))
        );
        assert_eq!(udp.jitter_us.map(|s| s.median), Some(1.0));
        assert!(
            udp.echoes_bits_per_second.is_none(),
            "no UDP echoes measured"
        );
        // Round trips: echomark's TCP alone, and iperf3 named as the tool without them.
        assert_eq!(advice.round_trips.len(), 1);
        assert_eq!(advice.round_trips[0].p99_us.median, 7.5);
        assert_eq!(advice.round_trips[0].without.len(), 1);
    }

    #[test]
    fn a_failed_tool_run_is_no_figure_and_a_dataset_without_streams_has_no_advice() {
        let mut failed = tool_run(Protocol::Tcp, 131_072, stream(22e9, Some(40), None));
        failed.passed = false;
        let own = echoes();
        let advice = advise(&dataset(vec![failed]), &[&own]);
        assert!(
            advice.is_empty() && advice.round_trips.is_empty(),
            "{advice:?}"
        );
    }
}
