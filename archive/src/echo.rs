//! "The program measured what was asked for": the one comparison of a measurement's echoed
//! case parameters with the request, used by the matrix runner when it judges a child and
//! by the validator (invariant E1) when it reads any archive.

use crate::key::{AddressFamily, CaseKey, IoModel, Protocol};

/// A case's parameters, as requested or as a measurement reports them. A field that a format
/// does not record is `None` and is not compared.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CaseParameters {
    pub protocol: Option<Protocol>,
    pub payload_bytes: Option<u64>,
    pub clients: Option<u64>,
    pub window: Option<u64>,
    pub io_model: Option<IoModel>,
    pub io_threads: Option<u64>,
    pub handler_work: Option<u64>,
    pub backend: Option<crate::backend::Backend>,
    pub address_family: Option<AddressFamily>,
    pub requested_seconds: Option<f64>,
    pub warmup_seconds: Option<f64>,
    /// QUIC: the transport settings in full (quinn's defaults included).
    pub quic_transport: Option<crate::quic::QuicTransport>,
}

impl CaseParameters {
    /// What a run of `key` asked for: every field of the key a measurement echoes, and what
    /// else the request records (`None` is not compared). `backend` is separate from the
    /// key's because a format may name its stack in the key and its runtime in the metrics
    /// (arknet's `standalone` runs report no backend of their own).
    pub fn requested(
        key: &CaseKey,
        backend: Option<crate::backend::Backend>,
        address_family: Option<AddressFamily>,
        timing: Option<RequestedTiming>,
    ) -> Self {
        CaseParameters {
            protocol: Some(key.protocol),
            payload_bytes: Some(key.payload_bytes),
            clients: Some(key.clients),
            window: Some(key.window),
            io_model: Some(key.io_model),
            io_threads: Some(key.io_threads),
            handler_work: Some(key.handler_work),
            backend,
            address_family,
            requested_seconds: timing.map(|t| t.seconds),
            warmup_seconds: timing.map(|t| t.warmup_seconds),
            quic_transport: key
                .protocol
                .is_quic()
                .then(|| key.quic_transport.unwrap_or_default()),
        }
    }
}

/// How long a run was asked to measure, after how long a warmup.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestedTiming {
    pub seconds: f64,
    pub warmup_seconds: f64,
}

/// The names of the parameters whose echo differs from the request, in field order; empty
/// when the measurement measured what was asked for.
pub fn check_echo(request: &CaseParameters, echoed: &CaseParameters) -> Vec<&'static str> {
    fn differs<T: PartialEq>(a: &Option<T>, b: &Option<T>) -> bool {
        matches!((a, b), (Some(a), Some(b)) if a != b)
    }
    let r = request;
    let e = echoed;
    [
        ("protocol", differs(&r.protocol, &e.protocol)),
        ("payload_bytes", differs(&r.payload_bytes, &e.payload_bytes)),
        ("clients", differs(&r.clients, &e.clients)),
        ("window", differs(&r.window, &e.window)),
        ("io_model", differs(&r.io_model, &e.io_model)),
        ("io_threads", differs(&r.io_threads, &e.io_threads)),
        ("handler_work", differs(&r.handler_work, &e.handler_work)),
        ("backend", differs(&r.backend, &e.backend)),
        (
            "address_family",
            differs(&r.address_family, &e.address_family),
        ),
        (
            "requested_seconds",
            differs(&r.requested_seconds, &e.requested_seconds),
        ),
        (
            "warmup_seconds",
            differs(&r.warmup_seconds, &e.warmup_seconds),
        ),
        (
            "quic_transport",
            differs(&r.quic_transport, &e.quic_transport),
        ),
    ]
    .into_iter()
    .filter_map(|(name, d)| d.then_some(name))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_fields_both_sides_know_are_compared() {
        let request = CaseParameters {
            protocol: Some(Protocol::Udp),
            window: Some(1),
            backend: Some("tokio".into()),
            requested_seconds: Some(1.0),
            ..Default::default()
        };
        let mut echoed = request.clone();
        echoed.backend = None;
        echoed.clients = Some(16);
        assert!(check_echo(&request, &echoed).is_empty());
        echoed.window = Some(16);
        echoed.requested_seconds = Some(1.5);
        assert_eq!(
            check_echo(&request, &echoed),
            ["window", "requested_seconds"]
        );
    }
}
