//! Why a case cannot be measured: one variant per rule of [`super::Case::validate`].

use echomark_archive::{Backend, IoModel, Protocol};

use crate::message::{HEADER_LEN, MAX_PAYLOAD};
use crate::placement::CpuListError;

/// A request that cannot be measured; the binary prints it and exits 2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UsageError {
    /// `--payload` outside what the message format carries.
    #[error(
        "--payload must be {} to {} bytes, got {payload}",
        HEADER_LEN,
        MAX_PAYLOAD
    )]
    Payload { payload: usize },
    /// The backend cannot play the role, speak the protocol or take the option asked for;
    /// `reason` is the contract's ([`Backend::refuse_role`], [`Backend::refuse_protocol`],
    /// [`Backend::refuse`]).
    #[error("{reason}")]
    Unsupported { reason: String },
    /// The backend cannot run this IO model with this many threads, for the contract's
    /// `reason` ([`Backend::refuse_model`]).
    #[error("--backend {backend} cannot run {io_model} {io_threads}: {reason}")]
    Model {
        backend: Backend,
        io_model: IoModel,
        io_threads: usize,
        reason: &'static str,
    },
    /// `--rate` on a backend that measures closed loop only, for the contract's `reason`.
    #[error("--rate (open loop) is {reason}; --backend {backend} runs closed loop")]
    ClosedLoopOnly {
        backend: Backend,
        reason: &'static str,
    },
    /// `--udp-batch` with another protocol than UDP.
    #[error("--udp-batch is for udp, not {protocol}")]
    UdpBatchProtocol { protocol: Protocol },
    /// `--udp-batch` outside the contract's range
    /// ([`echomark_archive::limits::UDP_BATCH`]).
    #[error("--udp-batch must be {min} to {max}, got {batch}")]
    UdpBatchRange { batch: usize, min: u64, max: u64 },
    /// `--udp-gso` without `--udp-batch`.
    #[error("--udp-gso rides on --udp-batch N: give both")]
    GsoWithoutBatch,
    /// A `--quic-*` transport flag with a protocol that is not QUIC.
    #[error("the --quic-* transport flags are for the QUIC protocols, not --protocol {protocol}")]
    QuicFlagsNotQuic { protocol: Protocol },
    /// A QUIC transport no endpoint may use, as the contract words it
    /// ([`echomark_archive::QuicTransport::problem`]).
    #[error("{problem}")]
    QuicTransport { problem: String },
    /// `--inject-fault` with a protocol whose every message has a connection of its own.
    #[error(
        "--inject-fault has no effect with --protocol {protocol}: every message has a connection of its own (quic-streams has the same client and takes faults)"
    )]
    FaultPerMessage { protocol: Protocol },
    /// More than [`super::MAX_OUTSTANDING_BYTES`] of payload in flight.
    #[error(
        "requested outstanding payloads exceed 256 MiB ({clients} clients × {window} window × {payload} bytes = {bytes} bytes)"
    )]
    Outstanding {
        clients: usize,
        window: usize,
        payload: usize,
        bytes: u64,
    },
    /// `--work` against `--target`: the work is done in echomark's own server.
    #[error("--work runs in echomark's own server; an external server does its own work")]
    WorkWithTarget,
    /// `--udp-server-recv-buffer` against `--target`.
    #[error(
        "--udp-server-recv-buffer sets echomark's own server socket; it has no effect with --target"
    )]
    ServerRecvBufferWithTarget,
    /// `--inject-fault` against `--target`.
    #[error(
        "--inject-fault makes echomark's own server misbehave; it has no effect with --target"
    )]
    FaultWithTarget,
    /// `--server-cpus` against `--target`.
    #[error(
        "--server-cpus places echomark's own server; against --target, pin that server where it starts (serve --server-cpus, or matrix --server-cpus with --server-cmd)"
    )]
    ServerCpusWithTarget,
    /// A `--framing` other than the prefix against `--target` with a protocol that frames
    /// its own messages ([`echomark_archive::StreamFraming::refuse`]).
    #[error(
        "--framing {} is for tcp and tcps; the other protocols have their own framing",
        .framing.as_str()
    )]
    FramingNotTcp {
        framing: echomark_archive::StreamFraming,
    },
    /// `--alpn` with a protocol that is not QUIC.
    #[error("--alpn is for the QUIC protocols")]
    AlpnNotQuic,
    /// `--no-pipelining` with a protocol that is not HTTP.
    #[error("--no-pipelining is for http and https")]
    NoPipeliningNotHttp,
    /// A TLS or QUIC protocol against `--target` without a way to trust the server.
    #[error("a TLS or QUIC protocol against --target needs --tls-ca FILE or --tls-insecure")]
    TrustMissing,
    /// `--tls-ca` or `--tls-insecure` with a protocol without TLS.
    #[error("--tls-ca and --tls-insecure are for tcps, wss, https and the QUIC protocols")]
    TrustWithoutTls,
    /// A recorded CPU list (a matrix's `client_cpus`, `server_cpus`) that does not parse.
    #[error(transparent)]
    CpuList(#[from] CpuListError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_refusals_read_as_the_flags_were_refused() {
        let said = |e: UsageError| e.to_string();
        assert_eq!(
            said(UsageError::Payload { payload: 15 }),
            "--payload must be 16 to 65507 bytes, got 15"
        );
        assert_eq!(
            said(UsageError::Unsupported {
                reason: "why not".into()
            }),
            "why not"
        );
        assert_eq!(
            said(UsageError::Model {
                backend: Backend::Monoio,
                io_model: IoModel::Shared,
                io_threads: 2,
                reason: "one thread"
            }),
            "--backend monoio cannot run shared 2: one thread"
        );
        assert_eq!(
            said(UsageError::ClosedLoopOnly {
                backend: Backend::Monoio,
                reason: "measured on tokio only"
            }),
            "--rate (open loop) is measured on tokio only; --backend monoio runs closed loop"
        );
        assert_eq!(
            said(UsageError::UdpBatchProtocol {
                protocol: Protocol::Tcp
            }),
            "--udp-batch is for udp, not tcp"
        );
        assert_eq!(
            said(UsageError::UdpBatchRange {
                batch: 65,
                min: 2,
                max: 64
            }),
            "--udp-batch must be 2 to 64, got 65"
        );
        assert_eq!(
            said(UsageError::GsoWithoutBatch),
            "--udp-gso rides on --udp-batch N: give both"
        );
        assert_eq!(
            said(UsageError::QuicFlagsNotQuic {
                protocol: Protocol::Udp
            }),
            "the --quic-* transport flags are for the QUIC protocols, not --protocol udp"
        );
        assert_eq!(
            said(UsageError::QuicTransport {
                problem: "QUIC flow-control windows must be at least 1 byte".into()
            }),
            "QUIC flow-control windows must be at least 1 byte"
        );
        assert_eq!(
            said(UsageError::FaultPerMessage {
                protocol: Protocol::Http
            }),
            "--inject-fault has no effect with --protocol http: every message has a connection \
             of its own (quic-streams has the same client and takes faults)"
        );
        assert_eq!(
            said(UsageError::Outstanding {
                clients: 1024,
                window: 1024,
                payload: 1024,
                bytes: 1 << 30
            }),
            "requested outstanding payloads exceed 256 MiB (1024 clients × 1024 window × 1024 \
             bytes = 1073741824 bytes)"
        );
    }

    #[test]
    fn target_refusals_name_the_flag_that_has_no_effect() {
        let said = |e: UsageError| e.to_string();
        for (e, text) in [
            (
                UsageError::WorkWithTarget,
                "--work runs in echomark's own server; an external server does its own work",
            ),
            (
                UsageError::ServerRecvBufferWithTarget,
                "--udp-server-recv-buffer sets echomark's own server socket; it has no effect \
                 with --target",
            ),
            (
                UsageError::FaultWithTarget,
                "--inject-fault makes echomark's own server misbehave; it has no effect with \
                 --target",
            ),
            (
                UsageError::ServerCpusWithTarget,
                "--server-cpus places echomark's own server; against --target, pin that server \
                 where it starts (serve --server-cpus, or matrix --server-cpus with --server-cmd)",
            ),
            (
                UsageError::FramingNotTcp {
                    framing: echomark_archive::StreamFraming::Line,
                },
                "--framing line is for tcp and tcps; the other protocols have their own framing",
            ),
            (UsageError::AlpnNotQuic, "--alpn is for the QUIC protocols"),
            (
                UsageError::NoPipeliningNotHttp,
                "--no-pipelining is for http and https",
            ),
            (
                UsageError::TrustMissing,
                "a TLS or QUIC protocol against --target needs --tls-ca FILE or --tls-insecure",
            ),
            (
                UsageError::TrustWithoutTls,
                "--tls-ca and --tls-insecure are for tcps, wss, https and the QUIC protocols",
            ),
        ] {
            assert_eq!(said(e), text);
        }
        let list = "x".parse::<crate::placement::CpuList>().unwrap_err();
        assert_eq!(said(UsageError::CpuList(list.clone())), list.to_string());
    }
}
