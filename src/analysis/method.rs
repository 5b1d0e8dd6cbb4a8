//! How a dataset measured beyond the shape of its matrix, where that moves the figures: an
//! in-process server on runtimes of its own (`--server-cpus`), and how UDP datagrams moved
//! (`--udp-batch`, `--udp-gso`). Datasets measured differently are neither steps of one
//! series nor a pair of hosts: their differences would be the method's, not the code's or
//! the machine's.

use serde::Serialize;

use crate::model::Dataset;

/// The measuring method of one dataset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Method {
    /// In process, the server ran on runtimes of its own, apart from the clients' threads.
    pub server_apart: bool,
    /// The largest `--udp-batch` of its runs.
    pub udp_batch: Option<u64>,
    /// Some run's batches were segmented and coalesced by the kernel (`--udp-gso`).
    pub udp_gso: bool,
}

/// How `d` measured.
pub fn of(d: &Dataset) -> Method {
    Method {
        server_apart: d.runs.iter().any(|r| {
            r.instruments
                .placement
                .as_ref()
                .is_some_and(|p| p.server_own_runtimes)
        }),
        udp_batch: d.runs.iter().filter_map(|r| r.instruments.udp_batch).max(),
        udp_gso: d.runs.iter().any(|r| r.instruments.udp_gso),
    }
}
