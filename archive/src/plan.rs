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
    pub fn planned_runs(&self, backend: &str) -> Vec<RunId> {
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
