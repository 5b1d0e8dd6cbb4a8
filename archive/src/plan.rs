//! The runs a matrix's settings plan, in the order the runner executes them before any
//! shuffle: the contract between the runner (what to run, what `--resume` still owes) and
//! the validator (what `complete: true` promises).

use std::collections::BTreeSet;

use crate::archive::Settings;
use crate::key::{CaseKey, Protocol, RunId};
use crate::IMPLEMENTATION;

/// `items` without repeats, in first-seen order.
fn dedup<T: PartialEq + Copy>(items: &[T]) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for item in items {
        if !out.contains(item) {
            out.push(*item);
        }
    }
    out
}

impl Settings {
    /// Every (configuration, repetition) these settings plan for `backend`: an explicit case
    /// list repeated, or arknet's nested order (repetition → IO profile → protocol → payload
    /// → traffic profile) in which a UDP case that the window rule makes identical to an
    /// earlier one is listed once.
    ///
    /// With a [`Shard`](crate::Shard), only that shard's configurations (every repetition of
    /// each); an invalid shard plans nothing.
    pub fn planned_runs(&self, backend: &str) -> Vec<RunId> {
        let all = self.whole_plan(backend);
        let Some(shard) = self.shard else {
            return all;
        };
        if !shard.is_valid() {
            return Vec::new();
        }
        let mut position: Vec<&CaseKey> = Vec::new();
        let mut keep = BTreeSet::new();
        for run in &all {
            if !position.contains(&&run.case) {
                if position.len() as u64 % shard.count == shard.index - 1 {
                    keep.insert(run.case.clone());
                }
                position.push(&run.case);
            }
        }
        all.into_iter().filter(|r| keep.contains(&r.case)).collect()
    }

    /// Every run of the whole matrix, ignoring any shard.
    fn whole_plan(&self, backend: &str) -> Vec<RunId> {
        let key = |protocol, payload_bytes, clients, window, io: &crate::IoProfile| CaseKey {
            backend: backend.to_string(),
            implementation: IMPLEMENTATION.to_string(),
            protocol,
            payload_bytes,
            clients,
            window,
            io_model: io.io_model,
            io_threads: io.io_threads,
            handler_work: io.handler_work,
            udp_server_recv_buffer: None,
        };
        let mut out = Vec::new();
        for repetition in 1..=self.repetitions {
            if let Some(cases) = &self.cases {
                out.extend(cases.iter().map(|c| RunId {
                    case: CaseKey {
                        backend: backend.to_string(),
                        implementation: IMPLEMENTATION.to_string(),
                        protocol: c.protocol,
                        payload_bytes: c.payload_bytes,
                        clients: c.clients,
                        window: c.window,
                        io_model: c.io_model,
                        io_threads: c.io_threads,
                        handler_work: c.handler_work,
                        udp_server_recv_buffer: c.udp_server_recv_buffer,
                    },
                    repetition,
                }));
                continue;
            }
            let mut seen = BTreeSet::new();
            for io in &self.io_profiles {
                for &protocol in &dedup(&self.protocols) {
                    for &payload in &dedup(&self.payloads) {
                        for profile in &self.profiles {
                            let window = match (protocol, self.udp_throughput_window) {
                                (Protocol::Udp, Some(w)) => w,
                                _ => profile.window,
                            };
                            let run = RunId {
                                case: key(protocol, payload, profile.clients, window, io),
                                repetition,
                            };
                            if seen.insert(run.clone()) {
                                out.push(run);
                            }
                        }
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::{AddressFamily, IoModel, IoProfile, Settings, Shard, TrafficProfile};

    fn settings() -> Settings {
        Settings {
            seconds: 1.0,
            warmup: 0.25,
            repetitions: 3,
            payloads: vec![64, 1024, 16384],
            profiles: vec![
                TrafficProfile {
                    clients: 1,
                    window: 1,
                },
                TrafficProfile {
                    clients: 16,
                    window: 16,
                },
            ],
            udp_throughput_window: Some(1),
            io_profiles: [
                (IoModel::Shared, 1),
                (IoModel::Shared, 2),
                (IoModel::Sharded, 2),
            ]
            .map(|(io_model, io_threads)| IoProfile {
                io_model,
                io_threads,
                handler_work: 0,
            })
            .to_vec(),
            protocols: "tcp,udp,http"
                .split(',')
                .map(|p| p.parse().unwrap())
                .collect(),
            execution_modes: None,
            address_family: AddressFamily::Ipv4,
            preset: None,
            shuffle_seed: None,
            case_timeout_seconds: 10.0,
            udp_timeout_ms: 250,
            udp_send_buffer: None,
            udp_recv_buffer: None,
            udp_server_recv_buffer: None,
            keep_going: false,
            cases: None,
            soak_seconds: None,
            shard: None,
        }
    }

    #[test]
    fn shards_cover_every_run_exactly_once_and_keep_configurations_whole() {
        let whole = settings().planned_runs("tokio");
        assert!(whole.len() > 40);
        for count in 1..=7 {
            let mut times_seen: BTreeMap<_, u32> = BTreeMap::new();
            let mut owner = BTreeMap::new();
            for index in 1..=count {
                let s = Settings {
                    shard: Some(Shard { index, count }),
                    ..settings()
                };
                for run in s.planned_runs("tokio") {
                    *times_seen.entry(run.clone()).or_default() += 1;
                    // Every repetition of a configuration is in the same shard.
                    assert_eq!(*owner.entry(run.case.clone()).or_insert(index), index);
                }
            }
            assert_eq!(times_seen.len(), whole.len(), "{count} shards");
            assert!(times_seen.values().all(|&n| n == 1), "{count} shards");
        }
    }

    #[test]
    fn shards_parse_and_refuse_nonsense() {
        assert_eq!("2/5".parse::<Shard>(), Ok(Shard { index: 2, count: 5 }));
        for bad in ["0/3", "4/3", "1/0", "2", "a/b", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        let s = Settings {
            shard: Some(Shard { index: 0, count: 2 }),
            ..settings()
        };
        assert!(s.planned_runs("tokio").is_empty());
    }
}
