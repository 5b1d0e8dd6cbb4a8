//! Which loads a dataset measured, as its overview names them: the load classes a
//! recommendation row is about (the corners of what was measured, [`classes`]) and the main
//! load its key results and charts show ([`main_load`], [`main_load_configs`]).

use std::collections::{BTreeMap, BTreeSet};

use echomark_archive::Protocol;
use serde::Serialize;

use crate::analysis::aggregate::{Configuration, Status};

/// The kind of load a recommendation row is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadClass {
    /// The smallest messages at the fewest clients.
    Light,
    /// The smallest messages, where the dataset measured one client count.
    SmallMessages,
    /// The fewest clients, where the dataset measured one payload there.
    FewClients,
    /// The one closed-loop load the dataset measured (without added work).
    Single,
    /// The largest messages at the fewest clients.
    LargeMessages,
    /// The most clients, at the payload nearest 1,024 B.
    ManyClients,
    /// Added CPU work per echo, at the load nearest the most clients and 1,024 B.
    Work,
}

/// One class's load: the configurations it selects share these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ClassLoad {
    pub class: LoadClass,
    pub payload_bytes: u64,
    pub clients: u64,
    pub handler_work: u64,
}

/// The classes `configs` measured, in table order, each once (two classes on the same load
/// are one row, the first kept).
pub fn classes(configs: &[&Configuration]) -> Vec<ClassLoad> {
    let closed: Vec<&&Configuration> = configs.iter().filter(|c| c.key.load.is_none()).collect();
    let plain: Vec<&&Configuration> = closed
        .iter()
        .copied()
        .filter(|c| c.key.handler_work == 0)
        .collect();
    let mut out: Vec<ClassLoad> = Vec::new();
    let mut push = |class, payload_bytes, clients, handler_work| {
        let load = ClassLoad {
            class,
            payload_bytes,
            clients,
            handler_work,
        };
        let exists = closed.iter().any(|c| {
            c.key.payload_bytes == payload_bytes
                && c.key.clients == clients
                && c.key.handler_work == handler_work
        });
        let same = |o: &ClassLoad| {
            (o.payload_bytes, o.clients, o.handler_work) == (payload_bytes, clients, handler_work)
        };
        if exists && !out.iter().any(same) {
            out.push(load);
        }
    };
    if let (Some(few), Some(most)) = (
        plain.iter().map(|c| c.key.clients).min(),
        plain.iter().map(|c| c.key.clients).max(),
    ) {
        let at = |clients: u64| {
            let payloads: BTreeSet<u64> = plain
                .iter()
                .filter(|c| c.key.clients == clients)
                .map(|c| c.key.payload_bytes)
                .collect();
            payloads
        };
        let (small, large) = (at(few), at(most));
        if let (Some(&smallest), Some(&largest)) = (small.first(), small.last()) {
            let class = match (largest > smallest, most > few) {
                (true, true) => LoadClass::Light,
                (true, false) => LoadClass::SmallMessages,
                (false, true) => LoadClass::FewClients,
                (false, false) => LoadClass::Single,
            };
            push(class, smallest, few, 0);
            if largest > smallest {
                push(LoadClass::LargeMessages, largest, few, 0);
            }
        }
        if most > few {
            if let Some(p) = nearest_1024(&large) {
                push(LoadClass::ManyClients, p, most, 0);
            }
        }
    }
    let works: BTreeSet<u64> = closed
        .iter()
        .map(|c| c.key.handler_work)
        .filter(|w| *w > 0)
        .collect();
    for work in works {
        let with: Vec<&&&Configuration> = closed
            .iter()
            .filter(|c| c.key.handler_work == work)
            .collect();
        let Some(most) = with.iter().map(|c| c.key.clients).max() else {
            continue;
        };
        let payloads: BTreeSet<u64> = with
            .iter()
            .filter(|c| c.key.clients == most)
            .map(|c| c.key.payload_bytes)
            .collect();
        if let Some(p) = nearest_1024(&payloads) {
            push(LoadClass::Work, p, most, work);
        }
    }
    out
}

/// The payload nearest 1,024 B (the smaller of two as near).
fn nearest_1024(payloads: &BTreeSet<u64>) -> Option<u64> {
    payloads
        .iter()
        .copied()
        .min_by_key(|p| (p.abs_diff(1024), *p))
}

/// The load the overview's charts and key results use: 1,024 B (or the nearest payload) at
/// the largest client count, among the loads the dataset measured with a valid
/// configuration (a load whose every configuration failed cannot be a headline).
pub fn main_load(configs: &[&Configuration]) -> Option<(u64, u64)> {
    let valid: Vec<&&Configuration> = configs
        .iter()
        .filter(|c| c.status == Status::Valid && c.key.load.is_none())
        .collect();
    let clients = valid.iter().map(|c| c.key.clients).max()?;
    let payloads: BTreeSet<u64> = valid
        .iter()
        .filter(|c| c.key.clients == clients)
        .map(|c| c.key.payload_bytes)
        .collect();
    Some((nearest_1024(&payloads)?, clients))
}

/// A backend's configurations at the main load without handler work, each protocol at the
/// largest window measured at that load, in page order.
pub fn main_load_configs<'a>(
    configs: &[&'a Configuration],
    backend: &str,
    payload: u64,
    clients: u64,
) -> Vec<&'a Configuration> {
    let at_load = |c: &&&Configuration| c.key.payload_bytes == payload && c.key.clients == clients;
    let mut widest: BTreeMap<Protocol, u64> = BTreeMap::new();
    for c in configs.iter().filter(at_load) {
        let w = widest.entry(c.key.protocol).or_default();
        *w = (*w).max(c.key.window);
    }
    let mut selected: Vec<&Configuration> = configs
        .iter()
        .filter(at_load)
        .filter(|c| c.key.backend == backend && c.key.handler_work == 0)
        .filter(|c| widest.get(&c.key.protocol) == Some(&c.key.window))
        .copied()
        .collect();
    selected.sort_by_key(|c| {
        (
            // Page order: arknet's order of the protocols.
            Protocol::ALL.iter().position(|p| *p == c.key.protocol),
            c.key.implementation.clone(),
        )
    });
    selected
}
