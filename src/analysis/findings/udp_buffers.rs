//! The question of a UDP buffer-isolation dataset: how many datagrams each load loses
//! against the receive buffer its server socket asked for. Only cases that set their own
//! server buffer (`udp_server_recv_buffer`) take part.

use std::collections::BTreeMap;

use echomark_archive::CaseKey;
use serde::Serialize;

use crate::analysis::udp::Loss;

/// One load at one server receive buffer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BufferCell {
    /// The request, in bytes.
    pub requested: u64,
    /// What the kernel granted, as read back (Linux doubles the request), when recorded.
    pub granted: Option<u64>,
    /// The median run's loss, and the least and most any run lost.
    pub median_lost: u64,
    pub min_lost: u64,
    pub max_lost: u64,
}

/// One load (the case without its buffer) across the buffers it was measured with.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BufferRow {
    pub key: CaseKey,
    /// Ascending by request.
    pub cells: Vec<BufferCell>,
}

/// Loss against buffer size over a dataset's buffer cases.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BufferFinding {
    /// Every request measured, ascending.
    pub requests: Vec<u64>,
    pub rows: Vec<BufferRow>,
}

impl BufferFinding {
    /// Loads that lost datagrams at their smallest buffer and none at their largest.
    pub fn fixed_by_a_larger_buffer(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| match (r.cells.first(), r.cells.last()) {
                (Some(small), Some(large)) => {
                    r.cells.len() >= 2 && small.min_lost > 0 && large.max_lost == 0
                }
                _ => false,
            })
            .count()
    }

    /// Loads that lost no datagram in any run at any buffer size.
    pub fn lossless(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.cells.iter().all(|c| c.max_lost == 0))
            .count()
    }

    /// Loads that lost datagrams in some run even at their largest buffer.
    pub fn lossy_at_largest(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.cells.last().is_some_and(|c| c.max_lost > 0))
            .count()
    }
}

/// The finding of `loss` (a dataset's UDP loss per case); `None` when no case set its
/// own server buffer.
pub fn buffer_finding(loss: &BTreeMap<CaseKey, Loss>) -> Option<BufferFinding> {
    let mut rows: BTreeMap<CaseKey, Vec<BufferCell>> = BTreeMap::new();
    for (key, l) in loss {
        let Some(requested) = key.udp_server_recv_buffer else {
            continue;
        };
        let load = CaseKey {
            udp_server_recv_buffer: None,
            ..key.clone()
        };
        rows.entry(load).or_default().push(BufferCell {
            requested,
            granted: l.server_buffer,
            median_lost: l.median,
            min_lost: l.per_run.iter().copied().min().unwrap_or(0),
            max_lost: l.per_run.iter().copied().max().unwrap_or(0),
        });
    }
    if rows.is_empty() {
        return None;
    }
    let mut requests: Vec<u64> = rows.values().flatten().map(|c| c.requested).collect();
    requests.sort_unstable();
    requests.dedup();
    Some(BufferFinding {
        requests,
        rows: rows
            .into_iter()
            .map(|(key, mut cells)| {
                cells.sort_by_key(|c| c.requested);
                BufferRow { key, cells }
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(window: u64, buffer: Option<u64>) -> CaseKey {
        CaseKey {
            backend: "tokio".into(),
            implementation: "echomark".into(),
            protocol: echomark_archive::Protocol::Udp,
            payload_bytes: 16_384,
            clients: 16,
            window,
            io_model: echomark_archive::IoModel::Shared,
            io_threads: 1,
            handler_work: 0,
            udp_server_recv_buffer: buffer,
            load: None,
            quic_transport: None,
            generators: None,
        }
    }

    fn loss(per_run: &[u64]) -> Loss {
        let mut sorted = per_run.to_vec();
        sorted.sort_unstable();
        Loss {
            per_run: per_run.to_vec(),
            median: sorted[sorted.len() / 2],
            same_in_every_run: sorted.first() == sorted.last(),
            server_buffer: None,
            broken: Vec::new(),
        }
    }

    #[test]
    fn each_load_lists_its_loss_by_buffer_and_cases_without_a_buffer_stay_out() {
        let map = BTreeMap::from([
            (key(64, Some(4 << 20)), loss(&[0, 0, 0])),
            (key(64, Some(1 << 20)), loss(&[3_700, 3_732, 3_650])),
            (key(16, Some(1 << 20)), loss(&[292, 292, 292])),
            (key(16, Some(4 << 20)), loss(&[0, 1, 0])),
            (key(1, None), loss(&[5, 5, 5])),
        ]);
        let f = buffer_finding(&map).unwrap();
        assert_eq!(f.requests, vec![1 << 20, 4 << 20]);
        assert_eq!(f.rows.len(), 2);
        let w64 = f.rows.iter().find(|r| r.key.window == 64).unwrap();
        assert_eq!(w64.cells[0].median_lost, 3_700);
        assert_eq!(
            (w64.cells[0].min_lost, w64.cells[0].max_lost),
            (3_650, 3_732)
        );
        assert_eq!(
            f.fixed_by_a_larger_buffer(),
            1,
            "window 64 is fixed; window 16 still lost 1"
        );
        assert_eq!(f.lossy_at_largest(), 1);
        assert!(buffer_finding(&BTreeMap::from([(key(1, None), loss(&[1]))])).is_none());
    }
}
