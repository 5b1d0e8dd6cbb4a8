//! The presets: arknet's runner defaults and the named matrices (`quick`, `baseline`,
//! `dimensions`, `udp-buffers`, `latency-curve`, `quic-buffers`, `quic`) as starting values of a
//! [`MatrixSpec`].

use echomark_archive::{Arrival, ExplicitCase, OpenLoopPlan, Preset, QuicAxes, TrafficProfile};

use super::{dedup, MatrixSpec};
use crate::case::{AddressFamily, IoModel, Protocol};

/// The `latency-curve` preset's sweep: these percentages of the closed-loop maximum.
pub const LATENCY_CURVE_PERCENT: [u64; 8] = [10, 30, 50, 70, 80, 90, 95, 100];

/// Every client count with every window, each once.
pub(super) fn product(clients: &[u64], windows: &[u64]) -> Vec<TrafficProfile> {
    let windows = dedup(windows.iter().copied());
    dedup(clients.iter().copied())
        .into_iter()
        .flat_map(|c| {
            windows.iter().map(move |&w| TrafficProfile {
                clients: c,
                window: w,
            })
        })
        .collect()
}

impl MatrixSpec {
    /// arknet's `benchmark_matrix.sh` defaults: the matrix without a preset.
    fn arknet_defaults() -> Self {
        Self {
            protocols: Protocol::CLASSIC.to_vec(),
            payloads: vec![64, 1024, 16384],
            profiles: [product(&[1], &[1]), product(&[16], &[16])].concat(),
            udp_throughput_window: Some(1),
            io_models: vec![IoModel::Shared, IoModel::Sharded],
            io_threads: vec![1, 2, 4],
            work: vec![0],
            repetitions: 3,
            seconds: 3.0,
            warmup: 1.0,
            address_family: AddressFamily::Ipv4,
            cases: None,
            open_loop: None,
            quic_axes: QuicAxes::default(),
        }
    }

    /// The values of `preset` (or arknet's runner defaults without one).
    pub fn preset(preset: Option<Preset>) -> Self {
        let arknet = Self::arknet_defaults();
        let one_second = Self {
            seconds: 1.0,
            warmup: 0.25,
            ..arknet.clone()
        };
        match preset {
            None => arknet,
            Some(Preset::Baseline) => one_second,
            Some(Preset::Quick) => Self {
                payloads: vec![1024],
                profiles: [product(&[1], &[1]), product(&[4], &[4])].concat(),
                udp_throughput_window: None,
                io_threads: vec![1, 2],
                repetitions: 2,
                seconds: 0.2,
                warmup: 0.05,
                ..arknet
            },
            Some(Preset::Dimensions) => Self {
                profiles: product(&[16], &[1, 4, 16, 64]),
                udp_throughput_window: None,
                io_threads: vec![1, 4],
                ..one_second
            },
            Some(Preset::UdpBuffers) => Self::udp_buffers(one_second),
            Some(Preset::QuicBuffers) => Self::quic_buffers(one_second),
            Some(Preset::Quic) => Self {
                protocols: vec![
                    Protocol::Tcp,
                    Protocol::Tcps,
                    Protocol::Udp,
                    Protocol::Quic,
                    Protocol::QuicStreams,
                    Protocol::QuicDatagram,
                ],
                ..one_second
            },
            Some(Preset::LatencyCurve) => Self {
                protocols: vec![Protocol::Tcp, Protocol::Udp, Protocol::Http],
                payloads: vec![1024],
                // Window 1: the closed-loop maximum and the open-loop cap then both allow
                // 16 messages in flight. With larger windows the closed loop batches
                // (16 × 16 reaches ~12× the rate of 16 × 1 here) and an evenly spaced open
                // loop cannot, so most of the sweep would be saturated.
                profiles: product(&[16], &[1]),
                udp_throughput_window: None,
                io_threads: vec![1, 2],
                io_models: vec![IoModel::Shared, IoModel::Sharded],
                seconds: 2.0,
                open_loop: Some(OpenLoopPlan {
                    rates: Vec::new(),
                    sweep_percent: LATENCY_CURVE_PERCENT.to_vec(),
                    arrival: Arrival::Uniform,
                    seed: 1,
                }),
                ..one_second
            },
        }
    }

    /// The receive-buffer isolation experiment: 16 clients on one thread, no warmup,
    /// 16,384 B × windows 1/16/64 × server receive requests 1/2/4 MiB, then 1,472 B at
    /// window 64 and 1,024 B at window 1,024 (4 MiB).
    fn udp_buffers(base: Self) -> Self {
        const MIB: u64 = 1 << 20;
        let case = |payload: u64, window: u64, buffer: u64| ExplicitCase {
            protocol: Protocol::Udp,
            payload_bytes: payload,
            clients: 16,
            window,
            io_model: IoModel::Shared,
            io_threads: 1,
            handler_work: 0,
            udp_server_recv_buffer: Some(buffer),
        };
        let mut cases = Vec::new();
        for window in [1, 16, 64] {
            for buffer in [MIB, 2 * MIB, 4 * MIB] {
                cases.push(case(16_384, window, buffer));
            }
        }
        cases.push(case(1_472, 64, 4 * MIB));
        cases.push(case(1_024, 1_024, 4 * MIB));
        Self {
            protocols: vec![Protocol::Udp],
            payloads: vec![16_384, 1_472, 1_024],
            profiles: product(&[16], &[1, 16, 64, 1024]),
            udp_throughput_window: None,
            io_models: vec![IoModel::Shared],
            io_threads: vec![1],
            warmup: 0.0,
            cases: Some(cases),
            ..base
        }
    }

    /// QUIC under receive-buffer pressure: the server's UDP receive buffer small enough to
    /// overflow (8 KiB), in between (256 KiB) and the default request (4 MiB), for UDP and
    /// each QUIC protocol that keeps a connection, at 1,024 B, 16 clients × window 16 on one
    /// thread. The stream protocols retransmit what the kernel drops; the datagram ones lose it.
    fn quic_buffers(base: Self) -> Self {
        const KIB: u64 = 1 << 10;
        let protocols = vec![
            Protocol::Udp,
            Protocol::Quic,
            Protocol::QuicStreams,
            Protocol::QuicDatagram,
        ];
        let mut cases = Vec::new();
        for &protocol in &protocols {
            for buffer in [8 * KIB, 256 * KIB, 4096 * KIB] {
                cases.push(ExplicitCase {
                    protocol,
                    payload_bytes: 1024,
                    clients: 16,
                    window: 16,
                    io_model: IoModel::Shared,
                    io_threads: 1,
                    handler_work: 0,
                    udp_server_recv_buffer: Some(buffer),
                });
            }
        }
        Self {
            protocols,
            payloads: vec![1024],
            profiles: product(&[16], &[16]),
            udp_throughput_window: None,
            io_models: vec![IoModel::Shared],
            io_threads: vec![1],
            cases: Some(cases),
            ..base
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Backend;
    use crate::matrix::plan::{PlannedRun, SettingsExtra};

    #[test]
    fn baseline_matches_arknet_counts() {
        let spec = MatrixSpec::preset(Some(Preset::Baseline));
        let io: Vec<_> = spec
            .io_profiles()
            .iter()
            .map(|p| format!("{}/{}", p.io_model, p.io_threads))
            .collect();
        assert_eq!(
            io,
            ["shared/1", "shared/2", "shared/4", "sharded/2", "sharded/4"]
        );
        // Per protocol: 5 topologies × 3 payloads × 2 profiles × 3 repetitions = 90.
        let runs = spec.runs(None, Backend::Tokio);
        assert_eq!(runs.len(), 7 * 90);
        assert!(runs
            .iter()
            .filter(|r| r.case().protocol == Protocol::Udp)
            .all(|r| r.case().window == 1));
        assert_eq!(
            runs.iter()
                .filter(|r| r.case().protocol == Protocol::Udp && r.case().clients == 16)
                .count(),
            45
        );
    }

    #[test]
    fn udp_buffers_is_the_isolation_experiment() {
        let spec = MatrixSpec::preset(Some(Preset::UdpBuffers));
        let runs = spec.runs(None, Backend::Tokio);
        assert_eq!(runs.len(), 11 * 3);
        assert!(runs.iter().all(|r| r.case().protocol == Protocol::Udp
            && r.case().clients == 16
            && r.case().io_threads == 1));
        let keys: std::collections::BTreeSet<_> = runs.iter().map(PlannedRun::key).collect();
        assert_eq!(keys.len(), runs.len(), "the buffer is part of the key");
        assert!(runs.iter().any(|r| (
            r.case().payload_bytes,
            r.case().window,
            r.case().udp_server_recv_buffer
        ) == (1024, 1024, Some(4 << 20))));
        assert_eq!(spec.warmup, 0.0);
    }

    #[test]
    fn quic_buffers_presses_udp_and_every_quic_connection_with_the_servers_receive_buffer() {
        let spec = MatrixSpec::preset(Some(Preset::QuicBuffers));
        let runs = spec.runs(None, Backend::Tokio);
        assert_eq!(
            runs.len(),
            4 * 3 * 3,
            "four protocols, three buffers, three repetitions"
        );
        let settings = spec.settings(SettingsExtra::default());
        for run in &runs {
            // The QUIC endpoints are UDP sockets: the case's buffer reaches them too.
            let case = spec.case(run, &settings).expect("a valid case");
            assert_eq!(
                case.udp_server_recv_buffer,
                run.case().udp_server_recv_buffer
            );
            assert!(case.udp_server_recv_buffer.is_some());
            assert!(case.protocol.rides_udp());
        }
        assert!(runs
            .iter()
            .any(|r| r.case().protocol == Protocol::QuicStreams
                && r.case().udp_server_recv_buffer == Some(8 << 10)));
    }

    #[test]
    fn quic_is_the_baseline_for_the_quic_protocols_and_what_they_are_weighed_against() {
        let quic = MatrixSpec::preset(Some(Preset::Quic));
        let baseline = MatrixSpec::preset(Some(Preset::Baseline));
        let runs = quic.runs(None, Backend::Tokio);
        // Five protocols at three payloads, datagrams at the two that fit one; 2 profiles,
        // 5 IO profiles, 3 repetitions (the size of the committed quic-protocols dataset).
        assert_eq!(runs.len(), (5 * 3 + 2) * 2 * 5 * 3);
        assert_eq!(runs.len(), 510);
        assert!(runs
            .iter()
            .all(|r| r.case().protocol != Protocol::QuicDatagram
                || r.case().payload_bytes <= echomark_archive::plan::QUIC_DATAGRAM_FITS));
        // The baseline's loads, timing and placements; the baseline itself keeps arknet's
        // seven protocols and gains none.
        assert_eq!(
            (&quic.payloads, &quic.profiles, quic.io_profiles()),
            (
                &baseline.payloads,
                &baseline.profiles,
                baseline.io_profiles()
            )
        );
        assert_eq!((quic.seconds, quic.repetitions), (baseline.seconds, 3));
        assert_eq!(baseline.protocols, Protocol::CLASSIC.to_vec());
    }

    #[test]
    fn dimensions_has_three_topologies_and_four_windows() {
        let spec = MatrixSpec::preset(Some(Preset::Dimensions));
        assert_eq!(spec.io_profiles().len(), 3);
        // 7 protocols × 3 payloads × 4 windows × 3 topologies × 3 repetitions.
        assert_eq!(spec.runs(None, Backend::Tokio).len(), 756);
    }
}
