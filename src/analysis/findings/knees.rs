//! The open-loop finding of one protocol, payload and arrival: which curve keeps its p99
//! near the protocol's best low-load level up to the highest offered rate. A curve is
//! named only where its knee is distinguishable from every other curve's
//! ([`knees_distinguishable`]); otherwise every curve whose knee is not is a candidate.

use echomark_archive::{Arrival, Protocol};
use serde::Serialize;

use crate::analysis::load_curve::{knees_distinguishable, LoadCurve};

/// The knees of the curves of one protocol, payload and arrival on one dataset.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KneeFinding {
    pub protocol: Protocol,
    pub payload_bytes: u64,
    pub arrival: Arrival,
    /// The curve whose knee is at the highest offered rate (an index into the curves
    /// given), or `None` when no curve has a knee.
    pub latest: Option<usize>,
    /// Whether `latest` is distinguishable from every other curve of the group.
    pub distinguishable: bool,
    /// The other curves whose knees `latest`'s is not distinguishable from.
    pub ties: Vec<usize>,
    /// Every curve of the group, in the order given.
    pub curves: Vec<usize>,
}

/// The knee findings of one dataset's `curves`, one per protocol, payload and arrival that
/// has at least two curves, in the order of the first curve of each.
pub fn knee_findings(curves: &[&LoadCurve]) -> Vec<KneeFinding> {
    let mut groups: Vec<((Protocol, u64, Arrival), Vec<usize>)> = Vec::new();
    for (i, c) in curves.iter().enumerate() {
        let key = (c.key.protocol, c.key.payload_bytes, c.arrival);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(i),
            None => groups.push((key, vec![i])),
        }
    }
    groups
        .into_iter()
        .filter(|(_, members)| members.len() >= 2)
        .map(|((protocol, payload_bytes, arrival), members)| {
            let knee_rate = |i: usize| {
                let c = curves[i];
                c.knee.map(|k| c.points[k].offered_rate)
            };
            // The highest knee rate; the earlier curve on a tie, so order never matters more.
            let latest = members
                .iter()
                .copied()
                .filter(|&i| knee_rate(i).is_some())
                .max_by(|&a, &b| knee_rate(a).cmp(&knee_rate(b)).then(b.cmp(&a)));
            let ties: Vec<usize> = latest.map_or_else(Vec::new, |l| {
                members
                    .iter()
                    .copied()
                    .filter(|&i| i != l && !knees_distinguishable(curves[l], curves[i]))
                    .collect()
            });
            KneeFinding {
                protocol,
                payload_bytes,
                arrival,
                latest,
                distinguishable: latest.is_some() && ties.is_empty(),
                ties,
                curves: members,
            }
        })
        .collect()
}
