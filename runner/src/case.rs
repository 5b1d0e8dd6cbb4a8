//! One measured configuration ("case"), validated before any socket is opened.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use echomark_archive::Role;

use crate::message::{HEADER_LEN, MAX_PAYLOAD};

mod usage;

pub use usage::UsageError;

/// UDP socket-buffer requests and loss timeout when none are given (arknet's buffers).
pub const DEFAULT_UDP_SEND_BUFFER: u64 = 65_536;
pub const DEFAULT_UDP_RECV_BUFFER: u64 = 4 << 20;
pub use echomark_archive::DEFAULT_UDP_TIMEOUT_MS;

/// Largest `clients × window × payload` (arknet's limit).
pub const MAX_OUTSTANDING_BYTES: u64 = 256 * 1024 * 1024;

pub use echomark_archive::{AddressFamily, Arrival, IoModel, Protocol};

pub use echomark_archive::StreamFraming;

/// `once --target`: a server echomark did not start, measured instead of its own.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// The address the clients connect to.
    pub addr: SocketAddr,
    /// `host:port` as given: the HTTP and WebSocket `Host` header.
    pub authority: String,
    /// `tcp`, `tcps`: how messages are delimited on the stream.
    pub framing: StreamFraming,
    /// TLS protocols: how the certificate is checked, and the name it must carry.
    pub tls: Option<(TlsTrust, String)>,
    /// The implementation's name for `backend` in the metrics (`--server-name`); without
    /// it, `backend` names the client's runtime.
    pub server_name: Option<String>,
    /// QUIC: the ALPN offered instead of `echomark` (`--alpn`).
    pub alpn: Option<String>,
    /// HTTP: whether the server answers pipelined requests; when it does not
    /// (`--no-pipelining`), every request in flight gets its own connection.
    pub http_pipelining: bool,
    /// `--server-machine FILE`: the file and the machine it describes.
    pub server_machine: Option<(std::path::PathBuf, echomark_archive::Host)>,
}

impl Target {
    /// What the archive records about the target of `case`.
    pub fn info(&self, case: &Case) -> echomark_archive::TargetInfo {
        echomark_archive::TargetInfo {
            address: self.addr.to_string(),
            framing: matches!(case.protocol, Protocol::Tcp | Protocol::Tcps)
                .then_some(self.framing),
            tls_verification: self.tls.as_ref().map(|(trust, _)| trust.verification()),
            http_pipelined: matches!(case.protocol, Protocol::Http | Protocol::Https)
                .then_some(case.connections().1 > 1),
            connections: (case.protocol != Protocol::Udp).then_some(case.connections().0 as u64),
            path: None,
            server_machine: self.server_machine.as_ref().map(|(_, host)| host.clone()),
            alpn: case.protocol.is_quic().then(|| {
                self.alpn
                    .clone()
                    .unwrap_or_else(|| String::from_utf8_lossy(crate::message::ALPN).into())
            }),
        }
    }
}

/// The loopback address of `family`: 127.0.0.1 or ::1.
pub fn loopback(family: AddressFamily) -> IpAddr {
    match family {
        AddressFamily::Ipv4 => IpAddr::V4(Ipv4Addr::LOCALHOST),
        AddressFamily::Ipv6 => IpAddr::V6(Ipv6Addr::LOCALHOST),
    }
}

/// A deliberate fault, for tests that prove the checks catch what they claim to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Fault {
    /// The server flips one filler byte of every 97th echo.
    Corrupt,
    /// The server swaps the order of two echoes now and then (TCP) or echoes one datagram
    /// twice (UDP).
    Reorder,
    /// The server silently drops every 97th message.
    Drop,
    /// The server stops answering for [`STALL`] once every [`STALL_EVERY`] (each server
    /// task on its own clock): the coordinated-omission demonstration.
    Stall,
}

/// How long a `stall` fault stops the server.
pub const STALL: Duration = Duration::from_millis(50);
/// How often a `stall` fault strikes.
pub const STALL_EVERY: Duration = Duration::from_millis(1000);

/// The backend a measurement runs on: the contract's one backend type, whose
/// capabilities ([`echomark_archive::Capabilities`]) say which roles, models, protocols and
/// options it supports; every other part (framing, verification, counters, latency
/// recording) is the same code on every runtime.
pub use echomark_archive::Backend;

/// A validated configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub backend: Backend,
    pub protocol: Protocol,
    pub address_family: AddressFamily,
    pub payload: usize,
    pub clients: usize,
    pub window: usize,
    pub seconds: f64,
    pub warmup: f64,
    pub io_model: IoModel,
    pub io_threads: usize,
    pub work: u64,
    pub udp_send_buffer: u64,
    pub udp_recv_buffer: u64,
    pub udp_server_recv_buffer: Option<u64>,
    pub udp_timeout: Duration,
    pub record_latency: bool,
    pub fault: Option<Fault>,
    /// Open loop: the offered load; `None` for closed loop.
    pub open_loop: Option<OpenLoop>,
    /// Open loop: how long before a due message a client spins instead of sleeping.
    pub spin: Duration,
    /// An external server to measure instead of echomark's own (client side only).
    pub target: Option<Target>,
    /// `--client-cpus`: the CPUs the client's runtime threads are pinned to, one CPU each
    /// (in-process without [`Self::server_cpus`], the server side shares those threads);
    /// `None` leaves placement to the scheduler.
    pub client_cpus: Option<crate::placement::CpuList>,
    /// `--server-cpus`, in process only: echomark's server gets runtimes of its own (as
    /// many as the client's, the same IO model), pinned to these CPUs one each, and the
    /// server side of every connection runs there instead of on its client's thread.
    pub server_cpus: Option<crate::placement::CpuList>,
    /// UDP, `--udp-batch N`: up to N datagrams per system call (`recvmmsg`/`sendmmsg`) on
    /// every client socket and the server's; `None` for one per call.
    pub udp_batch: Option<usize>,
    /// UDP, `--udp-gso` (with `--udp-batch`): runs of one size to one peer leave as one GSO
    /// send, and sockets receive with GRO ([`crate::traffic::mmsg`]).
    pub udp_gso: bool,
    /// `--count-syscalls`: count the process's system calls over the measured interval.
    pub count_syscalls: bool,
    /// QUIC: the transport settings of the client's and the server's endpoints (`--quic-*`).
    pub quic: echomark_archive::QuicTransport,
}

/// The `once` defaults: tokio, TCP over IPv4, 1,024 B, 1 client × window 1, 1 s after 0.25 s of
/// warmup, one runtime on one thread, no work, latency recorded.
impl Default for Case {
    fn default() -> Self {
        Case {
            backend: Backend::Tokio,
            protocol: Protocol::Tcp,
            address_family: AddressFamily::Ipv4,
            payload: 1024,
            clients: 1,
            window: 1,
            seconds: 1.0,
            warmup: 0.25,
            io_model: IoModel::Shared,
            io_threads: 1,
            work: 0,
            udp_send_buffer: DEFAULT_UDP_SEND_BUFFER,
            udp_recv_buffer: DEFAULT_UDP_RECV_BUFFER,
            udp_server_recv_buffer: None,
            udp_timeout: Duration::from_millis(DEFAULT_UDP_TIMEOUT_MS),
            record_latency: true,
            fault: None,
            open_loop: None,
            client_cpus: None,
            server_cpus: None,
            udp_batch: None,
            udp_gso: false,
            count_syscalls: false,
            quic: echomark_archive::QuicTransport::default(),
            spin: DEFAULT_SPIN,
            target: None,
        }
    }
}

impl Case {
    /// The client connections (or UDP sockets) and the window of each: one per client with
    /// the case's window, except against an HTTP server that does not answer pipelined
    /// requests, where each of the clients × window requests in flight has a connection of
    /// its own. The load, messages in flight, is the same either way.
    pub fn connections(&self) -> (usize, usize) {
        match &self.target {
            Some(t) if !t.http_pipelining => (self.clients * self.window, 1),
            _ => (self.clients, self.window),
        }
    }

    /// Checks the cross-field rules that single flags cannot express.
    pub fn validate(self) -> Result<Self, UsageError> {
        if !(HEADER_LEN..=MAX_PAYLOAD).contains(&self.payload) {
            return Err(UsageError::Payload {
                payload: self.payload,
            });
        }
        let role = if self.target.is_some() {
            Role::Client
        } else {
            Role::InProcess
        };
        if let Some(reason) = self.backend.refuse_role(role) {
            return Err(UsageError::Unsupported { reason });
        }
        if let Some(reason) = self
            .backend
            .refuse_model(self.io_model, self.io_threads as u64)
        {
            return Err(UsageError::Model {
                backend: self.backend,
                io_model: self.io_model,
                io_threads: self.io_threads,
                reason,
            });
        }
        if let (Some(_), Some(Err(reason))) = (
            self.open_loop,
            self.backend.capabilities().map(|c| c.open_loop),
        ) {
            return Err(UsageError::ClosedLoopOnly {
                backend: self.backend,
                reason,
            });
        }
        if let Some(refusal) = self
            .udp_batch
            .and_then(|batch| udp_batch_refusal(self.protocol, &self.backend, batch))
        {
            return Err(refusal);
        }
        if self.udp_gso && self.udp_batch.is_none() {
            return Err(UsageError::GsoWithoutBatch);
        }
        if let Some(reason) = self.backend.refuse_protocol(self.protocol) {
            return Err(UsageError::Unsupported { reason });
        }
        if !self.protocol.is_quic() && self.quic != echomark_archive::QuicTransport::default() {
            return Err(UsageError::QuicFlagsNotQuic {
                protocol: self.protocol,
            });
        }
        if let Some(problem) = self.quic.problem() {
            return Err(UsageError::QuicTransport { problem });
        }
        if self.fault.is_some() && self.protocol.is_connection_per_message() {
            // A fault acts on a connection's later messages, and these carry one each.
            return Err(UsageError::FaultPerMessage {
                protocol: self.protocol,
            });
        }
        if let Some(target) = &self.target {
            self.validate_target(target)?;
        }
        let outstanding = self.clients as u64 * self.window as u64 * self.payload as u64;
        if outstanding > MAX_OUTSTANDING_BYTES {
            return Err(UsageError::Outstanding {
                clients: self.clients,
                window: self.window,
                payload: self.payload,
                bytes: outstanding,
            });
        }
        Ok(self)
    }

    /// `--udp-batch` and `--udp-gso` as the datagram code takes them.
    pub fn udp_batching(&self) -> Option<Batching> {
        Batching::of(self.udp_batch, self.udp_gso)
    }

    /// The rules of `--target`: only the client runs here, so nothing may ask for the
    /// server's side, and a TLS protocol needs to know how to trust the server.
    fn validate_target(&self, target: &Target) -> Result<(), UsageError> {
        if self.work > 0 {
            return Err(UsageError::WorkWithTarget);
        }
        if self.udp_server_recv_buffer.is_some() {
            return Err(UsageError::ServerRecvBufferWithTarget);
        }
        if self.fault.is_some() {
            return Err(UsageError::FaultWithTarget);
        }
        if self.server_cpus.is_some() {
            return Err(UsageError::ServerCpusWithTarget);
        }
        if target.framing.refuse(self.protocol).is_some() {
            return Err(UsageError::FramingNotTcp {
                framing: target.framing,
            });
        }
        if target.alpn.is_some() && !self.protocol.is_quic() {
            return Err(UsageError::AlpnNotQuic);
        }
        if !target.http_pipelining && !matches!(self.protocol, Protocol::Http | Protocol::Https) {
            return Err(UsageError::NoPipeliningNotHttp);
        }
        if self.protocol.needs_trust() != target.tls.is_some() {
            return Err(if self.protocol.needs_trust() {
                UsageError::TrustMissing
            } else {
                UsageError::TrustWithoutTls
            });
        }
        Ok(())
    }

    /// The server socket's receive-buffer request.
    pub fn server_recv_buffer(&self) -> u64 {
        self.udp_server_recv_buffer.unwrap_or(self.udp_recv_buffer)
    }

    /// Number of runtimes (`io_contexts` in the metrics).
    pub fn io_contexts(&self) -> usize {
        match self.io_model {
            IoModel::Shared => 1,
            IoModel::Sharded => self.io_threads,
        }
    }
}

impl Case {
    /// The `once` flags that measure this case in a child process (what the matrix runs and
    /// records as the run's command; the binary's tests check that they parse back to it).
    pub fn to_args(&self) -> Vec<String> {
        let mut a = Argv(vec!["once".into()]);
        self.shape_args(&mut a);
        self.udp_args(&mut a);
        if self.protocol.is_quic() {
            for setting in self.quic.differences() {
                let (flag, value) = setting.flag();
                a.value(flag, value);
            }
        }
        self.open_loop_args(&mut a);
        self.switch_args(&mut a);
        if let Some(t) = &self.target {
            self.target_args(t, &mut a);
        }
        a.0
    }

    /// Backend, protocol, address family, payload, topology, durations, IO model and work.
    fn shape_args(&self, a: &mut Argv) {
        a.value("--backend", &self.backend);
        a.value("--protocol", self.protocol);
        a.value("--address-family", self.address_family);
        a.value("--payload", self.payload);
        a.value("--clients", self.clients);
        a.value("--window", self.window);
        a.value("--seconds", self.seconds);
        a.value("--warmup", self.warmup);
        a.value("--io-model", self.io_model);
        a.value("--io-threads", self.io_threads);
        a.value("--work", self.work);
    }

    /// The datagram protocols' loss timeout; the socket buffers and batching of the
    /// protocols on UDP.
    fn udp_args(&self, a: &mut Argv) {
        if self.protocol.is_datagram() {
            a.value("--udp-timeout-ms", self.udp_timeout.as_millis());
        }
        if self.protocol.rides_udp() {
            a.value("--udp-send-buffer", self.udp_send_buffer);
            a.value("--udp-recv-buffer", self.udp_recv_buffer);
            if let Some(b) = self.udp_server_recv_buffer {
                a.value("--udp-server-recv-buffer", b);
            }
            if let Some(batch) = self.udp_batch {
                a.value("--udp-batch", batch);
            }
        }
    }

    /// Open loop: the rate, its arrival, seed and spin.
    fn open_loop_args(&self, a: &mut Argv) {
        if let Some(open) = &self.open_loop {
            a.value("--rate", open.rate);
            a.value("--arrival", open.arrival);
            a.value("--seed", open.seed);
            a.value("--spin-us", self.spin.as_micros());
        }
    }

    /// The switches, then the CPUs of client and server.
    fn switch_args(&self, a: &mut Argv) {
        if !self.record_latency {
            a.switch("--no-latency");
        }
        if self.count_syscalls {
            a.switch("--count-syscalls");
        }
        if self.udp_gso {
            a.switch("--udp-gso");
        }
        for (flag, cpus) in [
            ("--client-cpus", &self.client_cpus),
            ("--server-cpus", &self.server_cpus),
        ] {
            if let Some(cpus) = cpus {
                a.value(flag, cpus);
            }
        }
    }

    /// The external server `t`: its address, framing, TLS trust, names and machine.
    fn target_args(&self, t: &Target, a: &mut Argv) {
        a.value("--target", &t.authority);
        if matches!(self.protocol, Protocol::Tcp | Protocol::Tcps) {
            a.value("--framing", t.framing.as_str());
        }
        match &t.tls {
            Some((TlsTrust::Insecure, _)) => a.switch("--tls-insecure"),
            Some((TlsTrust::Ca(path), _)) => a.value("--tls-ca", path.display()),
            None => {}
        }
        if let Some((_, name)) = &t.tls {
            a.value("--tls-server-name", name);
        }
        if let Some(name) = &t.server_name {
            a.value("--server-name", name);
        }
        if let Some(alpn) = &t.alpn {
            a.value("--alpn", alpn);
        }
        if !t.http_pipelining {
            a.switch("--no-pipelining");
        }
        if let Some((file, _)) = &t.server_machine {
            a.value("--server-machine", file.display());
        }
    }
}

/// A command line being written: flags with their values, and switches.
struct Argv(Vec<String>);

impl Argv {
    fn value(&mut self, flag: &str, value: impl fmt::Display) {
        self.0.push(flag.to_string());
        self.0.push(value.to_string());
    }

    fn switch(&mut self, flag: &str) {
        self.0.push(flag.to_string());
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} B, {} clients × window {}, {} {}, work {}",
            self.backend,
            self.protocol,
            self.payload,
            self.clients,
            self.window,
            self.io_model,
            self.io_threads,
            self.work
        )?;
        match &self.open_loop {
            Some(open) => write!(f, ", open loop {} msg/s {}", open.rate, open.arrival),
            None => Ok(()),
        }
    }
}

/// The longest phase, in seconds (arknet's limit).
pub const MAX_SECONDS: f64 = 3600.0;

/// A duration that is not a number of seconds in range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecondsError {
    #[error("'{0}' is not a number of seconds")]
    NotANumber(String),
    #[error("'{0}' must be finite, {1} and ≤ 3600")]
    OutOfRange(String, &'static str),
}

/// Parses a duration in seconds: a finite decimal in `(0, 3600]`, or `[0, 3600]` with
/// `allow_zero`.
pub fn parse_seconds(text: &str, allow_zero: bool) -> Result<f64, SecondsError> {
    let v: f64 = text
        .parse()
        .map_err(|_| SecondsError::NotANumber(text.to_string()))?;
    let low_ok = if allow_zero { v >= 0.0 } else { v > 0.0 };
    if !v.is_finite() || !low_ok || v > MAX_SECONDS {
        let low = if allow_zero { "≥ 0" } else { "> 0" };
        return Err(SecondsError::OutOfRange(text.to_string(), low));
    }
    Ok(v)
}

/// Why `--udp-batch batch` cannot run for `protocol` on `backend` (`once` and `serve` alike);
/// `None` when it can.
pub fn udp_batch_refusal(
    protocol: echomark_archive::Protocol,
    backend: &Backend,
    batch: usize,
) -> Option<UsageError> {
    if protocol != echomark_archive::Protocol::Udp {
        return Some(UsageError::UdpBatchProtocol { protocol });
    }
    if let Some(reason) = backend.refuse(|c| c.udp_batch, "--udp-batch") {
        return Some(UsageError::Unsupported { reason });
    }
    let range = echomark_archive::limits::UDP_BATCH;
    (!range.contains(&(batch as u64))).then(|| UsageError::UdpBatchRange {
        batch,
        min: *range.start(),
        max: *range.end(),
    })
}

/// How a UDP socket batches: up to `datagrams` per system call (`--udp-batch`), and with
/// `segmented` the kernel's segmentation offload too (`--udp-gso`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batching {
    pub datagrams: usize,
    pub segmented: bool,
}

impl Batching {
    /// `--udp-batch` and `--udp-gso` as the datagram code takes them (`once` and `serve`).
    pub fn of(udp_batch: Option<usize>, udp_gso: bool) -> Option<Self> {
        udp_batch.map(|datagrams| Self {
            datagrams,
            segmented: udp_gso,
        })
    }
}

/// The open-loop load of a case: the offered rate over all clients and how it arrives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpenLoop {
    /// Messages per second over all clients.
    pub rate: u64,
    pub arrival: echomark_archive::Arrival,
    /// Poisson: client `i` draws from SplitMix64 seeded with `seed` mixed with `i`.
    pub seed: u64,
}

/// How a client checks an external server's certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsTrust {
    /// Accept any certificate (`--tls-insecure`).
    Insecure,
    /// Trust the certificate authorities in this PEM file (`--tls-ca`).
    Ca(std::path::PathBuf),
}

impl TlsTrust {
    /// What the archive records.
    pub fn verification(&self) -> echomark_archive::TlsVerification {
        match self {
            TlsTrust::Insecure => echomark_archive::TlsVerification::Insecure,
            TlsTrust::Ca(_) => echomark_archive::TlsVerification::Ca,
        }
    }
}

/// How long before a due instant the clock stops sleeping and starts spinning, unless the
/// case says otherwise.
pub const DEFAULT_SPIN: Duration = Duration::from_millis(1);

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> Case {
        Case::default()
    }

    #[test]
    fn outstanding_payload_is_capped() {
        let c = Case {
            clients: 1024,
            window: 1024,
            payload: 1024,
            ..sample()
        };
        assert!(matches!(
            c.validate(),
            Err(UsageError::Outstanding {
                bytes: 1_073_741_824,
                ..
            })
        ));
        let c = Case {
            clients: 256,
            window: 1024,
            payload: 1024,
            ..sample()
        };
        assert!(c.validate().is_ok());
    }

    #[test]
    fn payload_range_is_enforced() {
        assert!(Case {
            payload: 15,
            ..sample()
        }
        .validate()
        .is_err());
        assert!(Case {
            payload: 65_508,
            ..sample()
        }
        .validate()
        .is_err());
        assert!(Case {
            payload: 16,
            ..sample()
        }
        .validate()
        .is_ok());
    }

    /// Every flag a case can carry, in the order the matrix records them.
    #[test]
    fn to_args_writes_every_flag_of_a_case() {
        let udp = Case {
            protocol: Protocol::Udp,
            udp_server_recv_buffer: Some(1 << 20),
            udp_batch: Some(8),
            udp_gso: true,
            open_loop: Some(OpenLoop {
                rate: 1000,
                arrival: Arrival::Poisson,
                seed: 7,
            }),
            record_latency: false,
            count_syscalls: true,
            client_cpus: Some("0-1".parse().unwrap()),
            server_cpus: Some("2".parse().unwrap()),
            ..sample()
        };
        assert_eq!(
            udp.to_args().join(" "),
            "once --backend tokio --protocol udp --address-family ipv4 --payload 1024 \
             --clients 1 --window 1 --seconds 1 --warmup 0.25 --io-model shared \
             --io-threads 1 --work 0 --udp-timeout-ms 250 --udp-send-buffer 65536 \
             --udp-recv-buffer 4194304 --udp-server-recv-buffer 1048576 --udp-batch 8 \
             --rate 1000 --arrival poisson --seed 7 --spin-us 1000 --no-latency \
             --count-syscalls --udp-gso --client-cpus 0-1 --server-cpus 2"
        );
        let target = |protocol, tls| Case {
            protocol,
            target: Some(Target {
                addr: "127.0.0.1:9".parse().unwrap(),
                authority: "localhost:9".into(),
                framing: StreamFraming::Raw,
                tls: Some((tls, "echo.test".into())),
                server_name: Some("nginx".into()),
                alpn: Some("h3".into()),
                http_pipelining: false,
                server_machine: Some(("/m.json".into(), crate::matrix::host::describe())),
            }),
            ..sample()
        };
        let tcps = target(Protocol::Tcps, TlsTrust::Ca("/ca.pem".into())).to_args();
        assert_eq!(
            tcps[23..].join(" "),
            "--target localhost:9 --framing raw --tls-ca /ca.pem --tls-server-name echo.test \
             --server-name nginx --alpn h3 --no-pipelining --server-machine /m.json"
        );
        let https = target(Protocol::Https, TlsTrust::Insecure).to_args();
        assert_eq!(
            https[23..].join(" "),
            "--target localhost:9 --tls-insecure --tls-server-name echo.test --server-name \
             nginx --alpn h3 --no-pipelining --server-machine /m.json"
        );
    }

    #[test]
    fn seconds_parse_strictly() {
        assert_eq!(parse_seconds("0.25", false), Ok(0.25));
        assert_eq!(
            parse_seconds("x", false),
            Err(SecondsError::NotANumber("x".into()))
        );
        assert!(parse_seconds("0", false).is_err());
        assert_eq!(parse_seconds("0", true), Ok(0.0));
        for bad in ["NaN", "inf", "-1", "3601", "1s", ""] {
            assert!(parse_seconds(bad, true).is_err(), "{bad}");
        }
    }
}
