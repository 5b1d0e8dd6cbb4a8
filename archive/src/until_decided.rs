//! Measuring until decided (`matrix --until-decided`): after its planned repetitions a
//! matrix adds more to the comparisons the rule ([`echomark_decide`]) leaves undecided,
//! look by look, until each is decided, reaches its maximum, fails, or the budget is spent.
//!
//! A comparison is one configuration measured by several archives (backends or external
//! servers: the first archive is the base, each other is set against it), or, in a matrix of
//! one archive, the IO models of one load (the model with the highest median is set against
//! each other). It is decided at a look when none of its comparisons is undecided there,
//! judged on each side's first n repetitions. The added runs are ordinary runs: the next
//! repetitions of the configurations, planned here from the results alone, side after side
//! for each repetition (ABAB, never all of one side first), so a resumed matrix plans
//! exactly what an unbroken one would have.

use std::collections::BTreeMap;

use echomark_decide::{compare, Rule, Verdict};

use crate::archive::{Entry, Settings};
pub use crate::decided::{looks, Stop, Stopped, UntilDecided, UntilDecidedRecord};
use crate::key::{CaseKey, RunId};

/// One archive of the matrix: its backend's name and its results.
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    pub backend: &'a str,
    pub results: &'a [Entry],
}

/// A comparison: the configuration each side measures, the first the base.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub members: Vec<(usize, CaseKey)>,
    /// Set against the base (several archives) or against the best (one archive).
    pub across_sides: bool,
}

/// A comparison's state after the looks its results allow.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupState {
    pub group: Group,
    /// Repetitions a side at the last look that was judged.
    pub repetitions: u64,
    /// `None` while it is still measuring.
    pub stop: Option<Stop>,
}

/// What is still owed: the runs to measure next, per side, in running order, and each
/// comparison's state.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    pub runs: Vec<(usize, RunId)>,
    pub groups: Vec<GroupState>,
}

/// The comparisons of a matrix whose archives are `sides` (in the order the matrix opened
/// them), from its planned repetitions.
pub fn groups(settings: &Settings, sides: &[Side]) -> Vec<Group> {
    let planned = |side: &Side| -> Vec<CaseKey> {
        let mut keys: Vec<CaseKey> = Vec::new();
        for r in settings.planned_runs(side.backend, &[]) {
            if r.repetition == 1 && r.case.load.is_none() && !keys.contains(&r.case) {
                keys.push(r.case);
            }
        }
        keys
    };
    let Some(base) = sides.first() else {
        return Vec::new();
    };
    if sides.len() > 1 {
        let others: Vec<Vec<CaseKey>> = sides[1..].iter().map(planned).collect();
        return planned(base)
            .into_iter()
            .filter_map(|key| {
                let mut members = vec![(0, key.clone())];
                for (i, keys) in others.iter().enumerate() {
                    let mine = CaseKey {
                        backend: crate::backend::Backend::named(sides[i + 1].backend),
                        ..key.clone()
                    };
                    if keys.contains(&mine) {
                        members.push((i + 1, mine));
                    }
                }
                (members.len() > 1).then_some(Group {
                    members,
                    across_sides: true,
                })
            })
            .collect();
    }
    // One archive: the IO models of each load.
    let mut loads: BTreeMap<CaseKey, Vec<(usize, CaseKey)>> = BTreeMap::new();
    let mut order: Vec<CaseKey> = Vec::new();
    for key in planned(base) {
        let load = CaseKey {
            io_model: crate::key::IoModel::Shared,
            io_threads: 0,
            ..key.clone()
        };
        if !loads.contains_key(&load) {
            order.push(load.clone());
        }
        loads.entry(load).or_default().push((0, key));
    }
    order
        .into_iter()
        .filter_map(|load| {
            let members = loads.remove(&load)?;
            (members.len() > 1).then_some(Group {
                members,
                across_sides: false,
            })
        })
        .collect()
}

/// A member's throughput in its first `n` repetitions: `Some(values)` when all are in its
/// side's results, `Err(())` when one of them failed, `None` while some are missing.
fn values(side: &Side, key: &CaseKey, n: u64) -> Option<Result<Vec<f64>, ()>> {
    let mut by_repetition: BTreeMap<u64, &Entry> = BTreeMap::new();
    for e in side.results.iter().filter(|e| &e.run.case == key) {
        by_repetition.insert(e.run.repetition, e);
    }
    let mut out = Vec::new();
    for r in 1..=n {
        let e = by_repetition.get(&r)?;
        match e.metrics.as_ref().filter(|m| m.ok && e.error.is_none()) {
            Some(m) => out.push(m.roundtrips_per_second),
            None => return Some(Err(())),
        }
    }
    Some(Ok(out))
}

/// Whether the rule decides `group` on these values (one vector per member).
fn decided(group: &Group, values: &[Vec<f64>], rule: &Rule) -> bool {
    let median = |v: &[f64]| crate::plan::median(v).unwrap_or(0.0);
    let pivot = if group.across_sides {
        0
    } else {
        (0..values.len())
            .max_by(|&a, &b| median(&values[a]).total_cmp(&median(&values[b])))
            .unwrap_or(0)
    };
    (0..values.len()).filter(|&i| i != pivot).all(|i| {
        !matches!(
            compare(&values[i], &values[pivot], rule).verdict,
            Verdict::Undecided { .. }
        )
    })
}

/// What a matrix measured until decided still owes, from its archives' results alone:
/// every comparison judged at each look whose runs are all in, and the next look's runs of
/// those still undecided. `budget_spent` plans nothing more.
pub fn plan(settings: &Settings, sides: &[Side], budget_spent: bool) -> Plan {
    let Some(until) = &settings.until_decided else {
        return Plan::default();
    };
    let rule = until.rule();
    let mut owed: BTreeMap<u64, Vec<(usize, RunId)>> = BTreeMap::new();
    let mut states = Vec::new();
    for group in groups(settings, sides) {
        let mut state = GroupState {
            group: group.clone(),
            repetitions: until.looks.first().copied().unwrap_or(0),
            stop: None,
        };
        for (k, &n) in until.looks.iter().enumerate() {
            let got: Option<Result<Vec<Vec<f64>>, ()>> = group
                .members
                .iter()
                .map(|(i, key)| values(&sides[*i], key, n))
                .collect::<Option<Vec<_>>>()
                .map(|v| v.into_iter().collect());
            let Some(got) = got else {
                // This look's runs are not all in yet: measuring goes on (the base plan
                // owes the first look's; the previous look planned the others).
                break;
            };
            state.repetitions = n;
            let Ok(values) = got else {
                state.stop = Some(Stop::Failed);
                break;
            };
            if decided(&group, &values, &rule) {
                state.stop = Some(Stop::Decided);
                break;
            }
            let Some(&next) = until.looks.get(k + 1) else {
                state.stop = Some(Stop::Maximum);
                break;
            };
            if budget_spent {
                // Nothing more is owed, but the looks already measured are still judged: a
                // comparison says how far it got (at its end the next look's runs are not
                // all in, and it stops for the budget there).
                continue;
            }
            for r in n + 1..=next {
                for (i, key) in &group.members {
                    owed.entry(r).or_default().push((
                        *i,
                        RunId {
                            case: key.clone(),
                            repetition: r,
                        },
                    ));
                }
            }
        }
        states.push(state);
    }
    // Repetition by repetition over every comparison, each side in turn.
    let runs = owed
        .into_values()
        .flatten()
        .filter(|(i, run)| !sides[*i].results.iter().any(|e| &e.run == run))
        .collect();
    Plan {
        runs,
        groups: states,
    }
}

/// Whether `run` belongs to an archive whose settings plan `planned` (closed-loop runs
/// listed by [`Settings::planned_runs`]): one of them, or, measured until decided, a later
/// repetition of a planned configuration within the maximum.
pub fn within(
    settings: &Settings,
    planned: &std::collections::BTreeSet<RunId>,
    run: &RunId,
) -> bool {
    planned.contains(run)
        || settings.until_decided.as_ref().is_some_and(|u| {
            run.repetition <= u.max_repetitions()
                && planned.contains(&RunId {
                    case: run.case.clone(),
                    repetition: 1,
                })
        })
}

/// Each comparison's end as an archive records it, naming a comparison by its base
/// configuration (`label`) and its sides by `side_name`.
pub fn stopped(
    plan: &Plan,
    label: impl Fn(&CaseKey) -> String,
    side_name: impl Fn(usize, &CaseKey) -> String,
) -> Vec<Stopped> {
    plan.groups
        .iter()
        .map(|g| Stopped {
            configuration: label(&g.group.members[0].1),
            sides: g
                .group
                .members
                .iter()
                .map(|(i, k)| side_name(*i, k))
                .collect(),
            repetitions: g.repetitions,
            stop: g.stop.unwrap_or(Stop::Budget),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::{IoProfile, TrafficProfile};
    use crate::key::{AddressFamily, IoModel, Protocol};

    #[test]
    fn the_looks_grow_by_half_to_the_maximum() {
        assert_eq!(looks(3, 30), [3, 5, 8, 12, 18, 27, 30]);
        assert_eq!(looks(3, 3), [3]);
    }

    /// TCP and UDP at one load on one thread, 3 repetitions, until decided up to 8.
    fn settings() -> Settings {
        let mut s: Settings = serde_json::from_value(serde_json::json!({
            "seconds": 1.0, "warmup": 0.25, "repetitions": 3, "payloads": [1024],
            "profiles": [], "udp_throughput_window": null, "io_profiles": [],
            "protocols": ["tcp", "udp"], "execution_modes": null, "address_family": "ipv4",
            "preset": null, "shuffle_seed": null, "case_timeout_seconds": 30.0,
            "udp_timeout_ms": 250, "udp_send_buffer": null, "udp_recv_buffer": null,
            "udp_server_recv_buffer": null, "keep_going": false
        }))
        .unwrap();
        s.profiles = vec![TrafficProfile {
            clients: 1,
            window: 1,
        }];
        s.io_profiles = vec![IoProfile {
            io_model: IoModel::Shared,
            io_threads: 1,
            handler_work: 0,
        }];
        s.until_decided = Some(UntilDecided {
            level: 0.95,
            margin: 0.05,
            looks: looks(3, 8),
            budget_seconds: None,
        });
        s
    }

    fn entry(case: &CaseKey, repetition: u64, rate: f64) -> Entry {
        Entry {
            run: RunId {
                case: case.clone(),
                repetition,
            },
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

    /// `backend`'s configuration of `protocol`.
    fn key(s: &Settings, backend: &str, protocol: Protocol) -> CaseKey {
        s.planned_runs(backend, &[])
            .into_iter()
            .find(|r| r.case.protocol == protocol)
            .unwrap()
            .case
    }

    #[test]
    fn undecided_comparisons_get_the_next_look_side_by_side_and_decided_ones_stop() {
        let s = settings();
        let (tcp_a, udp_a) = (key(&s, "a", Protocol::Tcp), key(&s, "a", Protocol::Udp));
        let (tcp_b, udp_b) = (key(&s, "b", Protocol::Tcp), key(&s, "b", Protocol::Udp));
        // TCP: b is clearly faster (decided). UDP: noisy and close (undecided).
        let a: Vec<Entry> = (1..=3)
            .flat_map(|r| {
                [
                    entry(&tcp_a, r, 100.0 + r as f64),
                    entry(&udp_a, r, [90.0, 110.0, 100.0][r as usize - 1]),
                ]
            })
            .collect();
        let b: Vec<Entry> = (1..=3)
            .flat_map(|r| {
                [
                    entry(&tcp_b, r, 150.0 + r as f64),
                    entry(&udp_b, r, [95.0, 115.0, 102.0][r as usize - 1]),
                ]
            })
            .collect();
        let sides = [
            Side {
                backend: "a",
                results: &a,
            },
            Side {
                backend: "b",
                results: &b,
            },
        ];
        let p = plan(&s, &sides, false);
        assert_eq!(p.groups.len(), 2);
        let tcp = &p.groups[0];
        assert_eq!((tcp.repetitions, tcp.stop), (3, Some(Stop::Decided)));
        assert_eq!(p.groups[1].stop, None, "UDP goes on measuring");
        // The next look is 5: repetitions 4 and 5 of UDP, a then b for each.
        let owed: Vec<(usize, u64)> = p.runs.iter().map(|(i, r)| (*i, r.repetition)).collect();
        assert_eq!(owed, [(0, 4), (1, 4), (0, 5), (1, 5)]);
        assert!(p.runs.iter().all(|(_, r)| r.case.protocol == Protocol::Udp));
        // Out of budget: nothing more, and the UDP comparison says why it stopped (the
        // record maps a comparison still open to the budget).
        let spent = plan(&s, &sides, true);
        assert!(spent.runs.is_empty());
        assert_eq!(spent.groups[1].stop, None);
        let record = stopped(
            &spent,
            |k| k.protocol.as_str().to_string(),
            |i, _| i.to_string(),
        );
        assert_eq!((record[1].repetitions, record[1].stop), (3, Stop::Budget));
        // Spent after the next look was measured: the comparison got to 5, and says so.
        let more = |rows: &[Entry], case: &CaseKey, rates: [f64; 2]| {
            let mut rows = rows.to_vec();
            rows.push(entry(case, 4, rates[0]));
            rows.push(entry(case, 5, rates[1]));
            rows
        };
        let (a5, b5) = (
            more(&a, &udp_a, [92.0, 108.0]),
            more(&b, &udp_b, [97.0, 111.0]),
        );
        let sides5 = [
            Side {
                backend: "a",
                results: &a5,
            },
            Side {
                backend: "b",
                results: &b5,
            },
        ];
        let spent5 = plan(&s, &sides5, true);
        assert!(spent5.runs.is_empty());
        let record = stopped(
            &spent5,
            |k| k.protocol.as_str().to_string(),
            |i, _| i.to_string(),
        );
        assert_eq!(record[1].repetitions, 5, "{record:?}");
        assert_eq!(record[1].stop, Stop::Budget);
        // Later repetitions within the maximum belong to the archive; beyond it they do not.
        let planned: std::collections::BTreeSet<RunId> =
            s.planned_runs("a", &[]).into_iter().collect();
        let later = |repetition| RunId {
            case: udp_a.clone(),
            repetition,
        };
        assert!(within(&s, &planned, &later(8)) && !within(&s, &planned, &later(9)));
    }

    #[test]
    fn a_comparison_still_undecided_at_the_last_look_stops_at_its_maximum() {
        let s = settings();
        let (udp_a, udp_b) = (key(&s, "a", Protocol::Udp), key(&s, "b", Protocol::Udp));
        let noisy = [90.0, 110.0, 100.0, 120.0, 80.0, 105.0, 95.0, 115.0];
        let a: Vec<Entry> = (1..=8)
            .map(|r| entry(&udp_a, r, noisy[r as usize - 1]))
            .collect();
        let b: Vec<Entry> = (1..=8)
            .map(|r| entry(&udp_b, r, noisy[8 - r as usize] * 1.04))
            .collect();
        let sides = [
            Side {
                backend: "a",
                results: &a,
            },
            Side {
                backend: "b",
                results: &b,
            },
        ];
        let p = plan(&s, &sides, false);
        let udp = p
            .groups
            .iter()
            .find(|g| g.group.members[0].1 == udp_a)
            .unwrap();
        assert_eq!((udp.repetitions, udp.stop), (8, Some(Stop::Maximum)));
        assert!(p.runs.iter().all(|(_, r)| r.case.protocol == Protocol::Tcp));
    }
}
