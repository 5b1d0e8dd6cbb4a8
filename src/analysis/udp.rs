//! UDP accounting of one dataset: pass counts per backend, loss per configuration, the
//! receive-buffer isolation invariants, the buffer sizes the kernel read back, and the runs
//! a reader can repeat.

use std::collections::{BTreeMap, BTreeSet};

use echomark_archive::{CaseKey, Protocol};
use serde::Serialize;

use super::aggregate::{Configuration, Status};
use crate::model::{Dataset, Run};

/// One backend's UDP pass counts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BackendPasses {
    pub backend: String,
    pub runs: u64,
    pub runs_passed: u64,
    pub configurations: u64,
    pub configurations_failed: u64,
    /// The largest number of datagrams one run lost.
    pub worst_loss: u64,
    /// Echoes that came back after their timeout, over every run that counted them (round
    /// trips, not losses); `None` when no run did.
    pub late: Option<u64>,
}

/// An isolation invariant that a run broke.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "invariant", rename_all = "snake_case")]
pub enum Broken {
    /// Client sent − server received ≠ lost.
    SentMinusServer { repetition: u64 },
    /// Server received ≠ client replies.
    ServerVersusReplies { repetition: u64 },
    /// Content or order errors.
    ContentOrOrder { repetition: u64 },
    /// The kernel's RcvbufErrors delta ≠ the loss.
    Kernel {
        repetition: u64,
        kernel: u64,
        lost: u64,
    },
}

/// One UDP configuration's loss, run by run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Loss {
    /// Lost datagrams per run, in repetition order.
    pub per_run: Vec<u64>,
    /// The median run's loss (the upper one of an even count).
    pub median: u64,
    /// Whether every run lost exactly as many.
    pub same_in_every_run: bool,
    /// The server socket's receive buffer as read back (largest over the runs).
    pub server_buffer: Option<u64>,
    /// Invariants of the isolation experiment each run broke.
    pub broken: Vec<Broken>,
}

/// Socket buffers of the first UDP run that reported them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Buffers {
    pub send_requested: Option<u64>,
    pub server_receive_requested: Option<u64>,
    pub server_receive_actual: Option<u64>,
}

/// Everything the UDP report needs from one dataset.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UdpAnalysis {
    pub runs: u64,
    pub runs_passed: u64,
    pub backends: Vec<BackendPasses>,
    pub loss: BTreeMap<CaseKey, Loss>,
    pub buffers: Option<Buffers>,
    /// Distinct (server receive request, read-back size) pairs in run order, at most four.
    pub readbacks: Vec<(u64, u64)>,
    /// A run that lost datagrams and, where the dataset has one, the run that shows what
    /// makes the same load pass.
    pub reproduction: Option<Reproduction>,
    /// The command of the first run that passed, when no lossy run has a passing partner.
    pub passed_command: Option<String>,
}

/// A lossy run to reproduce, with the evidence of what the loss was.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reproduction {
    pub command: String,
    pub lost: u64,
    /// The kernel's `UdpRcvbufErrors` delta over the run.
    pub kernel_delta: Option<u64>,
    /// The counter's before/after readings and the fragmentation deltas, where recorded.
    pub readings: Option<crate::model::KernelReadings>,
    /// The server receive buffer the isolation case requested.
    pub server_buffer: Option<u64>,
    /// A passing run of the same load that differs only in its server receive buffer.
    pub passing: Option<PassingPartner>,
}

/// The run that makes a lossy load pass.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PassingPartner {
    pub command: String,
    pub server_buffer: u64,
}

/// The lossy run to show: preferably one of an isolation case (a requested server receive
/// buffer) with a passing partner of the same load, so the page can show the change that
/// fixes it; else any lossy run.
fn reproduction(udp: &[&Run]) -> Option<Reproduction> {
    let lossy = || udp.iter().filter(|r| !r.passed && r.udp_lost_messages > 0);
    // A passing run whose key differs from `r`'s only in the server receive buffer.
    let partner = |r: &Run| {
        udp.iter().find_map(|o| {
            let b = o.key.udp_server_recv_buffer?;
            let same_load = CaseKey {
                udp_server_recv_buffer: o.key.udp_server_recv_buffer,
                ..r.key.clone()
            } == o.key;
            (o.passed && same_load && r.key.udp_server_recv_buffer != Some(b)).then(|| {
                PassingPartner {
                    command: o.command.clone(),
                    server_buffer: b,
                }
            })
        })
    };
    let (chosen, passing) = lossy()
        .filter(|r| r.key.udp_server_recv_buffer.is_some())
        .find_map(|r| partner(r).map(|p| (r, Some(p))))
        .or_else(|| lossy().next().map(|r| (r, None)))?;
    Some(Reproduction {
        command: chosen.command.clone(),
        lost: chosen.udp_lost_messages,
        kernel_delta: chosen.kernel_udp_rcvbuf_errors_delta,
        readings: chosen.kernel_readings,
        server_buffer: chosen.key.udp_server_recv_buffer,
        passing,
    })
}

/// The late echoes of `runs`, summed over the runs that counted them; `None` when none did
/// (archives older than the count), so a page says nothing rather than "0".
fn late_echoes(runs: &[&Run]) -> Option<u64> {
    runs.iter()
        .filter_map(|r| r.udp_late_messages)
        .reduce(|a, b| a + b)
}

/// How many read-back pairs the report lists.
const READBACKS_SHOWN: usize = 4;

/// Analyses the UDP runs of `d` (`configs` are its aggregated configurations).
pub fn analyse(d: &Dataset, configs: &[&Configuration]) -> UdpAnalysis {
    let udp: Vec<&Run> = d
        .runs
        .iter()
        .filter(|r| r.key.protocol == Protocol::Udp)
        .collect();
    if udp.is_empty() {
        return UdpAnalysis::default();
    }
    let mut by_key: BTreeMap<&CaseKey, Vec<&Run>> = BTreeMap::new();
    for r in &udp {
        by_key.entry(&r.key).or_default().push(r);
    }
    let loss = by_key
        .into_iter()
        .map(|(key, mut runs)| {
            runs.sort_by_key(|r| r.repetition);
            (key.clone(), loss_of(&runs))
        })
        .collect();
    let backends: BTreeSet<&str> = udp.iter().map(|r| r.key.backend.as_str()).collect();
    let backends = backends
        .into_iter()
        .map(|backend| {
            let runs: Vec<&Run> = udp
                .iter()
                .copied()
                .filter(|r| r.key.backend == backend)
                .collect();
            let configs: Vec<&&Configuration> = configs
                .iter()
                .filter(|c| c.key.protocol == Protocol::Udp && c.key.backend == backend)
                .collect();
            BackendPasses {
                backend: backend.to_string(),
                runs: runs.len() as u64,
                runs_passed: runs.iter().filter(|r| r.passed).count() as u64,
                configurations: configs.len() as u64,
                configurations_failed: configs
                    .iter()
                    .filter(|c| c.status == Status::Failed)
                    .count() as u64,
                worst_loss: runs.iter().map(|r| r.udp_lost_messages).max().unwrap_or(0),
                late: late_echoes(&runs),
            }
        })
        .collect();
    let mut readbacks = Vec::new();
    for r in &udp {
        if let (Some(req), Some(actual)) = (
            r.udp_server_receive_buffer_requested_bytes,
            r.udp_server_receive_buffer_bytes,
        ) {
            if !readbacks.contains(&(req, actual)) {
                readbacks.push((req, actual));
            }
        }
    }
    readbacks.truncate(READBACKS_SHOWN);
    UdpAnalysis {
        runs: udp.len() as u64,
        runs_passed: udp.iter().filter(|r| r.passed).count() as u64,
        backends,
        loss,
        buffers: udp
            .iter()
            .find(|r| r.udp_server_receive_buffer_bytes.is_some())
            .map(|r| Buffers {
                send_requested: r.udp_send_buffer_requested_bytes,
                server_receive_requested: r.udp_server_receive_buffer_requested_bytes,
                server_receive_actual: r.udp_server_receive_buffer_bytes,
            }),
        readbacks,
        reproduction: reproduction(&udp),
        passed_command: udp.iter().find(|r| r.passed).map(|r| r.command.clone()),
    }
}

/// The loss of one configuration's runs (sorted by repetition).
fn loss_of(runs: &[&Run]) -> Loss {
    let per_run: Vec<u64> = runs.iter().map(|r| r.udp_lost_messages).collect();
    let mut sorted = per_run.clone();
    sorted.sort_unstable();
    let mut broken = Vec::new();
    for r in runs {
        let repetition = r.repetition;
        if let (Some(sent), Some(server)) = (r.messages_sent, r.server_messages_received) {
            if sent.checked_sub(server) != Some(r.udp_lost_messages) {
                broken.push(Broken::SentMinusServer { repetition });
            }
            if Some(server) != r.messages_received {
                broken.push(Broken::ServerVersusReplies { repetition });
            }
        }
        if r.content_errors + r.order_errors > 0 {
            broken.push(Broken::ContentOrOrder { repetition });
        }
        if let Some(kernel) = r.kernel_udp_rcvbuf_errors_delta {
            if kernel != r.udp_lost_messages {
                broken.push(Broken::Kernel {
                    repetition,
                    kernel,
                    lost: r.udp_lost_messages,
                });
            }
        }
    }
    Loss {
        median: sorted.get(sorted.len() / 2).copied().unwrap_or(0),
        same_in_every_run: per_run.windows(2).all(|w| w[0] == w[1]),
        server_buffer: runs
            .iter()
            .filter_map(|r| r.udp_server_receive_buffer_bytes)
            .max(),
        per_run,
        broken,
    }
}

/// The UDP runs of several datasets taken together, as the site-wide report counts them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Datasets with at least one UDP run.
    pub datasets: usize,
    pub runs: u64,
    pub runs_passed: u64,
    /// Configurations that failed, over every backend of every dataset.
    pub configurations_failed: u64,
}

impl Totals {
    /// The sums over `each` dataset's UDP analysis.
    pub fn of<'a>(each: impl IntoIterator<Item = &'a UdpAnalysis>) -> Self {
        each.into_iter().fold(Totals::default(), |t, u| Totals {
            datasets: t.datasets + usize::from(u.runs > 0),
            runs: t.runs + u.runs,
            runs_passed: t.runs_passed + u.runs_passed,
            configurations_failed: t.configurations_failed
                + u.backends
                    .iter()
                    .map(|b| b.configurations_failed)
                    .sum::<u64>(),
        })
    }
}

/// The lossy run that best explains a loss among `each` dataset's: one with a passing
/// partner (it shows the fix) before one without, then one whose kernel counters were read
/// (they show where the datagrams went); the first among equals.
pub fn best_reproduction<'a>(
    each: impl IntoIterator<Item = &'a UdpAnalysis>,
) -> Option<&'a Reproduction> {
    let rank = |r: &Reproduction| (r.passing.is_some(), r.readings.is_some());
    each.into_iter()
        .filter_map(|u| u.reproduction.as_ref())
        .fold(None, |best: Option<&Reproduction>, r| match best {
            Some(b) if rank(r) <= rank(b) => Some(b),
            _ => Some(r),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::run;

    #[test]
    fn loss_invariants_name_the_run_that_broke_them() {
        let mut a = run(Protocol::Udp, 1);
        (
            a.messages_sent,
            a.server_messages_received,
            a.messages_received,
        ) = (Some(100), Some(95), Some(95));
        a.udp_lost_messages = 5;
        a.kernel_udp_rcvbuf_errors_delta = Some(5);
        let mut b = a.clone();
        b.repetition = 2;
        b.server_messages_received = Some(96);
        b.kernel_udp_rcvbuf_errors_delta = Some(9);
        let l = loss_of(&[&a, &b]);
        assert_eq!(l.per_run, [5, 5]);
        assert!(l.same_in_every_run);
        assert_eq!(
            l.broken,
            [
                Broken::SentMinusServer { repetition: 2 },
                Broken::ServerVersusReplies { repetition: 2 },
                Broken::Kernel {
                    repetition: 2,
                    kernel: 9,
                    lost: 5
                },
            ]
        );
    }

    #[test]
    fn late_echoes_are_summed_over_the_runs_that_counted_them() {
        let with_late = |late: Option<u64>| {
            let mut r = run(Protocol::Udp, 1);
            r.udp_late_messages = late;
            r
        };
        let (a, b, old) = (with_late(Some(2)), with_late(Some(3)), with_late(None));
        assert_eq!(late_echoes(&[&a, &old, &b]), Some(5));
        assert_eq!(late_echoes(&[&old]), None, "not counted is not zero");
        assert_eq!(late_echoes(&[&with_late(Some(0))]), Some(0));
    }

    #[test]
    fn the_median_loss_is_the_middle_run() {
        let runs: Vec<Run> = [3, 0, 767]
            .iter()
            .enumerate()
            .map(|(i, lost)| {
                let mut r = run(Protocol::Udp, i as u64 + 1);
                r.udp_lost_messages = *lost;
                r
            })
            .collect();
        let refs: Vec<&Run> = runs.iter().collect();
        let l = loss_of(&refs);
        assert_eq!((l.median, l.same_in_every_run), (3, false));
    }

    #[test]
    fn the_reproduction_prefers_a_lossy_isolation_run_that_a_larger_buffer_fixes() {
        let lossy_plain = {
            let mut r = run(Protocol::Udp, 1);
            (r.passed, r.udp_lost_messages, r.command) = (false, 9, "plain".into());
            r
        };
        let with_buffer = |buffer: u64, lost: u64| {
            let mut r = run(Protocol::Udp, 1);
            r.key.payload_bytes = 16384;
            r.key.udp_server_recv_buffer = Some(buffer);
            (r.passed, r.udp_lost_messages) = (lost == 0, lost);
            r.kernel_udp_rcvbuf_errors_delta = Some(lost);
            r.command = format!("buffer {buffer}");
            r
        };
        let (small, large) = (with_buffer(1 << 21, 292), with_buffer(1 << 22, 0));
        let r = reproduction(&[&lossy_plain, &small, &large]).unwrap();
        assert_eq!(
            (r.command.as_str(), r.lost, r.kernel_delta),
            ("buffer 2097152", 292, Some(292))
        );
        assert_eq!(r.passing.unwrap().server_buffer, 1 << 22);
        // Without a partner the first lossy run is shown, with no fix.
        let r = reproduction(&[&lossy_plain, &small]).unwrap();
        assert_eq!((r.command.as_str(), r.passing), ("plain", None));
        assert_eq!(reproduction(&[&large]), None);
    }

    fn lossy(passing: bool, readings: bool, lost: u64) -> UdpAnalysis {
        UdpAnalysis {
            runs: 3,
            runs_passed: 2,
            reproduction: Some(Reproduction {
                command: format!("lost {lost}"),
                lost,
                kernel_delta: None,
                readings: readings.then_some(crate::model::KernelReadings {
                    rcvbuf_errors_before: 0,
                    rcvbuf_errors_after: lost,
                    frag_creates: None,
                    reasm_reqds: None,
                    reasm_oks: None,
                    reasm_fails: None,
                }),
                server_buffer: None,
                passing: passing.then(|| PassingPartner {
                    command: String::new(),
                    server_buffer: 1 << 22,
                }),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn the_best_reproduction_shows_the_fix_then_the_counters_and_the_first_wins_ties() {
        let each = [
            lossy(false, true, 1),
            lossy(true, false, 2),
            lossy(true, true, 3),
            lossy(true, true, 4),
        ];
        assert_eq!(best_reproduction(&each).map(|r| r.lost), Some(3));
        assert_eq!(best_reproduction(&each[..2]).map(|r| r.lost), Some(2));
        assert_eq!(best_reproduction(&[UdpAnalysis::default()]), None);
        let t = Totals::of(&each);
        assert_eq!((t.datasets, t.runs, t.runs_passed), (4, 12, 8));
    }
}
