//! The runs a matrix's settings plan, in the order the runner executes them before any
//! shuffle: the contract between the runner (what to run, what `--resume` still owes) and
//! the validator (what `complete: true` promises).

use std::collections::BTreeSet;

use crate::archive::{Entry, Settings};
use crate::key::{CaseKey, OfferedLoad, Protocol, RunId};

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
    /// earlier one is listed once. IO profiles the backend cannot run are left out
    /// ([`crate::capabilities::unsupported`]).
    ///
    /// With a [`Shard`](crate::archive::Shard), only that shard's configurations (every repetition of
    /// each); an invalid shard plans nothing.
    ///
    /// Open loop: with fixed `rates`, each configuration is planned at each rate instead of
    /// closed-loop. A sweep plans the closed-loop configurations first and, for each one
    /// whose repetitions all passed in `results`, its open-loop runs at the sweep's shares
    /// of their median throughput, so the plan grows as the archive does and a resumed
    /// matrix derives the same rates.
    pub fn planned_runs(&self, backend: &str, results: &[Entry]) -> Vec<RunId> {
        let closed = self.by_fleet(self.sharded(self.whole_plan(backend)));
        let Some(open) = &self.open_loop else {
            return closed;
        };
        let load = |rate: u64| OfferedLoad {
            rate,
            arrival: open.arrival,
        };
        if !open.rates.is_empty() {
            return closed
                .iter()
                .flat_map(|run| {
                    dedup(&open.rates).into_iter().map(|rate| RunId {
                        case: CaseKey {
                            load: Some(load(rate)),
                            ..run.case.clone()
                        },
                        repetition: run.repetition,
                    })
                })
                .collect();
        }
        let mut derived = Vec::new();
        for run in &closed {
            let Some(max) = median_closed_loop_rate(&run.case, self.repetitions, results) else {
                continue;
            };
            let mut rates: Vec<u64> = open
                .sweep_percent
                .iter()
                .map(|&p| ((max * p as f64 / 100.0).round() as u64).max(1))
                .collect();
            rates.dedup();
            derived.extend(rates.into_iter().map(|rate| RunId {
                case: CaseKey {
                    load: Some(load(rate)),
                    ..run.case.clone()
                },
                repetition: run.repetition,
            }));
        }
        [closed, derived].concat()
    }

    /// An upper bound of how many runs [`Self::planned_runs`] lists, counted without listing
    /// them (repeats and unsupported profiles included), so that settings planning more
    /// than a matrix can hold are refused before any list is built.
    pub fn planned_runs_bound(&self) -> u64 {
        let product = |lens: &[usize]| lens.iter().fold(1u64, |p, &l| p.saturating_mul(l as u64));
        let a = &self.quic_axes;
        let quic = product(
            &[
                a.congestion.len(),
                a.gso.len(),
                a.initial_mtu.len(),
                a.stream_window.len(),
                a.connection_window.len(),
            ]
            .map(|l| l.max(1)),
        );
        let cases = match &self.cases {
            Some(cases) => cases.len() as u64,
            None => product(&[
                self.io_profiles.len(),
                self.protocols.len(),
                self.payloads.len(),
                self.profiles.len(),
            ]),
        };
        let loads = self.open_loop.as_ref().map_or(1, |o| {
            if o.rates.is_empty() {
                1 + o.sweep_percent.len() as u64
            } else {
                o.rates.len() as u64
            }
        });
        let repetitions = self.until_decided.as_ref().map_or(self.repetitions, |u| {
            u.max_repetitions().max(self.repetitions)
        });
        let generators = self.fleet.as_ref().map_or(1, |f| f.generators.len() as u64);
        cases
            .saturating_mul(generators)
            .saturating_mul(repetitions)
            .saturating_mul(quic)
            .saturating_mul(loads)
    }

    /// A fleet's matrix: each run once per generator count, in the plan's order.
    fn by_fleet(&self, runs: Vec<RunId>) -> Vec<RunId> {
        let Some(fleet) = &self.fleet else {
            return runs;
        };
        let counts = dedup(&fleet.generators);
        runs.into_iter()
            .flat_map(|run| {
                counts.iter().map(move |&n| RunId {
                    case: CaseKey {
                        generators: Some(n),
                        ..run.case.clone()
                    },
                    repetition: run.repetition,
                })
            })
            .collect()
    }

    /// `all` restricted to this archive's shard, if any.
    fn sharded(&self, all: Vec<RunId>) -> Vec<RunId> {
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
        let key = |protocol, payload_bytes, clients, window, io: &crate::archive::IoProfile| {
            let case = crate::archive::ExplicitCase {
                protocol,
                payload_bytes,
                clients,
                window,
                io_model: io.io_model,
                io_threads: io.io_threads,
                handler_work: io.handler_work,
                udp_server_recv_buffer: None,
            };
            case.case_key(crate::backend::Backend::named(backend))
        };
        let mut out = Vec::new();
        for repetition in 1..=self.repetitions {
            if let Some(cases) = &self.cases {
                let runnable = cases.iter().filter(|c| {
                    crate::capabilities::unsupported(backend, c.io_model, c.io_threads).is_none()
                });
                out.extend(runnable.map(|c| RunId {
                    case: c.case_key(crate::backend::Backend::named(backend)),
                    repetition,
                }));
                continue;
            }
            let mut seen = BTreeSet::new();
            let runnable = self.io_profiles.iter().filter(|io| {
                crate::capabilities::unsupported(backend, io.io_model, io.io_threads).is_none()
            });
            for io in runnable {
                for &protocol in &dedup(&self.protocols) {
                    for &payload in &dedup(&self.payloads) {
                        if protocol == Protocol::QuicDatagram && payload > QUIC_DATAGRAM_FITS {
                            continue;
                        }
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
        self.with_quic_transports(out)
    }

    /// Each QUIC run once per combination of the QUIC transport axes, side by side; the
    /// other protocols' runs as they are.
    fn with_quic_transports(&self, runs: Vec<RunId>) -> Vec<RunId> {
        if self.quic_axes.is_empty() {
            return runs;
        }
        let transports = self.quic_axes.transports();
        runs.into_iter()
            .flat_map(|run| {
                let variants: Vec<Option<crate::quic::QuicTransport>> =
                    if run.case.protocol.is_quic() {
                        transports.iter().map(|t| t.keyed()).collect()
                    } else {
                        vec![None]
                    };
                variants.into_iter().map(move |quic_transport| RunId {
                    case: CaseKey {
                        quic_transport,
                        ..run.case.clone()
                    },
                    repetition: run.repetition,
                })
            })
            .collect()
    }
}

/// The largest `quic-datagram` payload a grid plans: what one datagram carries at QUIC's
/// smallest MTU (1,200 bytes) with quinn's defaults, so the message fits before path MTU
/// discovery has raised the limit. Larger payloads of the grid are left to the stream
/// protocols.
pub const QUIC_DATAGRAM_FITS: u64 = 1162;

/// The median closed-loop throughput of `case` over `repetitions` runs, when every one of
/// them is in `results` and passed; the base of a rate sweep.
fn median_closed_loop_rate(case: &CaseKey, repetitions: u64, results: &[Entry]) -> Option<f64> {
    let mut rates: Vec<f64> = Vec::new();
    for e in results
        .iter()
        .filter(|e| e.case_key().load.is_none() && e.case_key() == case)
    {
        let m = e.metrics.as_ref().filter(|m| m.ok && e.error.is_none())?;
        rates.push(m.roundtrips_per_second);
    }
    if rates.len() as u64 != repetitions || rates.iter().any(|r| !r.is_finite()) {
        return None;
    }
    median(&rates)
}

/// The median (the mean of the two middle values for an even count); `None` when empty.
/// A selection on a copy of `values`, not a sort.
pub fn median(values: &[f64]) -> Option<f64> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let mut values = values.to_vec();
    let (below, &mut upper, _) = values.select_nth_unstable_by(n / 2, f64::total_cmp);
    Some(if n % 2 == 1 {
        upper
    } else {
        // The lower middle is the largest of the half below the upper one.
        let lower = below
            .iter()
            .copied()
            .max_by(f64::total_cmp)
            .unwrap_or(upper);
        (lower + upper) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use crate::archive::{IoProfile, Settings, Shard, TrafficProfile};
    use crate::key::{AddressFamily, IoModel, Protocol};

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
            open_loop: None,
            unsupported_io_profiles: Vec::new(),
            external_server: None,
            client_cpus: None,
            server_cpus: None,
            udp_batch: None,
            udp_gso: false,
            count_syscalls: false,
            quic_axes: Default::default(),
            until_decided: None,
            fleet: None,
        }
    }

    #[test]
    fn shards_cover_every_run_exactly_once_and_keep_configurations_whole() {
        let whole = settings().planned_runs("tokio", &[]);
        assert!(whole.len() > 40);
        for count in 1..=7 {
            let mut times_seen: BTreeMap<_, u32> = BTreeMap::new();
            let mut owner = BTreeMap::new();
            for index in 1..=count {
                let s = Settings {
                    shard: Some(Shard { index, count }),
                    ..settings()
                };
                for run in s.planned_runs("tokio", &[]) {
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
    fn a_grid_plans_quic_datagrams_only_with_payloads_that_fit_in_one() {
        let s = Settings {
            payloads: vec![64, 1024, 16384],
            protocols: vec![Protocol::QuicDatagram, Protocol::Quic],
            ..settings()
        };
        let runs = s.planned_runs("tokio", &[]);
        let payloads = |p: Protocol| -> BTreeSet<u64> {
            runs.iter()
                .filter(|r| r.case.protocol == p)
                .map(|r| r.case.payload_bytes)
                .collect()
        };
        assert_eq!(payloads(Protocol::QuicDatagram), BTreeSet::from([64, 1024]));
        assert_eq!(payloads(Protocol::Quic), BTreeSet::from([64, 1024, 16384]));
    }

    #[test]
    fn quic_transport_axes_multiply_the_quic_cases_alone_and_key_only_what_differs() {
        let plain = Settings {
            payloads: vec![1024],
            protocols: vec![Protocol::Tcp, Protocol::Quic],
            ..settings()
        };
        let axes = crate::quic::QuicAxes {
            congestion: vec![crate::quic::Congestion::Cubic, crate::quic::Congestion::Bbr],
            gso: vec![true, false],
            ..crate::quic::QuicAxes::default()
        };
        let varied = Settings {
            quic_axes: axes,
            ..plain.clone()
        };
        let count = |s: &Settings, p: Protocol| {
            s.planned_runs("tokio", &[])
                .iter()
                .filter(|r| r.case.protocol == p)
                .count()
        };
        assert_eq!(count(&varied, Protocol::Tcp), count(&plain, Protocol::Tcp));
        assert_eq!(
            count(&varied, Protocol::Quic),
            4 * count(&plain, Protocol::Quic)
        );
        let runs = varied.planned_runs("tokio", &[]);
        let transports: BTreeSet<Option<crate::quic::QuicTransport>> = runs
            .iter()
            .filter(|r| r.case.protocol == Protocol::Quic)
            .map(|r| r.case.quic_transport)
            .collect();
        // quinn's defaults (cubic, GSO on) are keyed as none, like runs that name nothing.
        assert_eq!(transports.len(), 4);
        assert!(transports.contains(&None));
        assert!(runs
            .iter()
            .filter(|r| r.case.protocol == Protocol::Tcp)
            .all(|r| r.case.quic_transport.is_none()));
    }

    fn open(rates: Vec<u64>, sweep_percent: Vec<u64>) -> Settings {
        Settings {
            open_loop: Some(crate::archive::OpenLoopPlan {
                rates,
                sweep_percent,
                arrival: crate::key::Arrival::Uniform,
                seed: 1,
            }),
            ..settings()
        }
    }

    /// A passing entry of `run` with `rate` round trips per second.
    fn passed(run: &crate::key::RunId, rate: f64) -> crate::archive::Entry {
        crate::archive::Entry {
            run: run.clone(),
            address_family: AddressFamily::Ipv4,
            command: Vec::new(),
            returncode: Some(0),
            stderr: String::new(),
            metrics: Some(crate::metrics::Metrics {
                ok: true,
                roundtrips_per_second: rate,
                ..crate::metrics::Metrics::default()
            }),
            stdout: None,
            error: None,
            order: 0,
            started_at_utc: String::new(),
            wall_seconds: 1.0,
            server: None,
        }
    }

    #[test]
    fn fixed_rates_measure_every_configuration_at_each_rate_instead_of_closed_loop() {
        let closed = settings().planned_runs("tokio", &[]);
        let runs = open(vec![1000, 5000, 1000], Vec::new()).planned_runs("tokio", &[]);
        assert_eq!(runs.len(), 2 * closed.len());
        assert!(runs.iter().all(|r| r.case.load.is_some()));
    }

    #[test]
    fn a_sweep_derives_its_rates_from_the_median_of_passed_closed_loop_runs() {
        let s = open(Vec::new(), vec![10, 50, 100]);
        let closed = s.planned_runs("tokio", &[]);
        assert_eq!(
            closed,
            settings().planned_runs("tokio", &[]),
            "closed loop first"
        );
        let first = closed[0].case.clone();
        let reps: Vec<_> = closed.iter().filter(|r| r.case == first).collect();
        assert_eq!(reps.len(), 3);
        // Two of three repetitions: nothing derived yet.
        let mut results: Vec<_> = reps[..2].iter().map(|r| passed(r, 1000.0)).collect();
        assert_eq!(s.planned_runs("tokio", &results).len(), closed.len());
        results.push(passed(reps[2], 4000.0));
        let grown = s.planned_runs("tokio", &results);
        let derived: Vec<_> = grown[closed.len()..].iter().collect();
        assert_eq!(derived.len(), 9, "3 rates × 3 repetitions");
        let mut rates: Vec<u64> = derived.iter().map(|r| r.case.load.unwrap().rate).collect();
        rates.sort_unstable();
        rates.dedup();
        assert_eq!(rates, [100, 500, 1000], "shares of the median, 1,000 rt/s");
        // A failed repetition derives nothing.
        results[0].error = Some("failed".into());
        assert_eq!(s.planned_runs("tokio", &results).len(), closed.len());
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
        assert!(s.planned_runs("tokio", &[]).is_empty());
    }
}
