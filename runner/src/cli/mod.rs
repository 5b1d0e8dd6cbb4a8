//! Command-line definitions, and their translation into the library's requests. Flag names
//! and ranges follow arknet's loopback benchmark. The flags that aim a client at another
//! server are in [`target`], those of `matrix` in [`matrix`].

mod error;
mod fleet;
mod matrix;
mod quic;
#[cfg(test)]
mod reproduction_tests;
mod target;

pub use error::FlagError;
pub use fleet::FleetArgs;
pub use matrix::MatrixArgs;
pub use target::{family_of, TargetArgs};

use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use std::net::SocketAddr;

use echomark_archive::Role;
use echomark_runner::case::{
    self, AddressFamily, Arrival, Backend, Case, Fault, IoModel, OpenLoop, Protocol, StreamFraming,
    Target, UsageError,
};
use echomark_runner::case::{
    DEFAULT_UDP_RECV_BUFFER, DEFAULT_UDP_SEND_BUFFER, DEFAULT_UDP_TIMEOUT_MS,
};
use echomark_runner::placement::{CpuList, PlacementError};
use echomark_runner::verify;

// The command line's ranges are the contract's: an archive's settings are held to the same.
use echomark_archive::limits::{
    BUFFER as BUFFER_RANGE, COUNT as COUNT_RANGE, PAYLOAD as PAYLOAD_RANGE, RATE as RATE_RANGE,
    THREADS as THREADS_RANGE, UDP_TIMEOUT_MS as UDP_TIMEOUT_RANGE, WORK as WORK_RANGE,
};

/// Loopback echo benchmark on tokio and monoio (io_uring), and the matrix driver that writes
/// raw archives.
#[derive(Debug, Parser)]
#[command(name = "echomark-runner", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The runner's subcommands.
// Parsed once per process, so the size gap between variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure one configuration in this process and print one JSON metrics object.
    Once(OnceArgs),
    /// Measure this host's loopback floor with a blocking single-thread ping-pong.
    Calibrate(CalibrateArgs),
    /// Run every case × repetition in a fresh `once` process and write a raw archive.
    Matrix(MatrixArgs),
    /// A sustained test across topologies with restarts; prints one JSON report.
    Soak(SoakArgs),
    /// Run only echomark's server until SIGTERM or SIGINT: one JSON line with its address
    /// first, one with its counters last.
    Serve(ServeArgs),
    /// Check a server against the echo contract before measuring it: a table of checks,
    /// exit 0 when none failed.
    Verify(VerifyArgs),
    /// Several generator hosts measure one target together, released at one barrier, their
    /// histograms merged exactly (coordinate, generate, or a Kubernetes Job's entrypoint).
    Fleet(FleetArgs),
    /// Print this machine's description as archives record it (one JSON object), for
    /// `--server-machine` on the client's host.
    DescribeHost,
    /// Print the `source_sha256` of a workspace (the rule archives record).
    #[command(hide = true)]
    SourceHash {
        /// Workspace root (default: the one this binary was built from).
        dir: Option<std::path::PathBuf>,
    },
}

fn seconds(text: &str) -> Result<f64, case::SecondsError> {
    case::parse_seconds(text, false)
}

fn warmup_seconds(text: &str) -> Result<f64, case::SecondsError> {
    case::parse_seconds(text, true)
}

/// A CPU list this process may run on: naming a CPU the host (or its container) lacks is
/// a usage error (exit 2).
/// `--backend`'s values: echomark's own backends that play `role`, as their capabilities
/// declare ([`echomark_runner::case::Backend::playing`]).
pub(crate) fn playing(role: Role) -> impl clap::builder::TypedValueParser<Value = Backend> {
    let names: Vec<&'static str> = Backend::playing(role).map(Backend::as_str).collect();
    clap::builder::TypedValueParser::map(
        clap::builder::PossibleValuesParser::new(names),
        |name: String| Backend::named(&name),
    )
}

pub(crate) fn available_cpus(text: &str) -> Result<CpuList, PlacementError> {
    echomark_runner::placement::available(text)
}

/// The flags of `once`.
#[derive(Debug, Clone, Args)]
pub struct OnceArgs {
    /// Async runtime: tokio (epoll) or monoio (io_uring, thread-per-core).
    #[arg(long, default_value = "tokio", value_parser = playing(Role::InProcess))]
    pub backend: Backend,
    /// Transport and framing.
    #[arg(long, value_enum, default_value = "tcp")]
    pub protocol: Protocol,
    /// Loopback host: 127.0.0.1 or ::1.
    #[arg(long, value_enum, default_value = "ipv4")]
    pub address_family: AddressFamily,
    /// Application payload of every message, header included (16 to 65,507 bytes).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(PAYLOAD_RANGE))]
    pub payload: u64,
    /// Client connections (UDP: client sockets), 1 to 1,024.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(COUNT_RANGE))]
    pub clients: u64,
    /// Messages each client keeps in flight, 1 to 1,024.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(COUNT_RANGE))]
    pub window: u64,
    /// Measured phase length in seconds (> 0, ≤ 3600).
    #[arg(long, default_value = "1", value_parser = seconds)]
    pub seconds: f64,
    /// Warmup length in seconds on the same connections; 0 skips warmup.
    #[arg(long, default_value = "0.25", value_parser = warmup_seconds)]
    pub warmup: f64,
    /// Thread and runtime topology.
    #[arg(long, value_enum, default_value = "shared")]
    pub io_model: IoModel,
    /// Threads (shared) or single-thread runtimes (sharded), 1 to 64.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(THREADS_RANGE))]
    pub io_threads: u64,
    /// Synthetic xorshift rounds per echo in the server handler, 0 to 10,000,000.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(WORK_RANGE))]
    pub work: u64,
    /// UDP: SO_SNDBUF request for every socket, bytes.
    #[arg(long, default_value_t = DEFAULT_UDP_SEND_BUFFER, value_parser = clap::value_parser!(u64).range(BUFFER_RANGE))]
    pub udp_send_buffer: u64,
    /// UDP: SO_RCVBUF request for every socket (client and server), bytes.
    #[arg(long, default_value_t = DEFAULT_UDP_RECV_BUFFER, value_parser = clap::value_parser!(u64).range(BUFFER_RANGE))]
    pub udp_recv_buffer: u64,
    /// UDP: SO_RCVBUF request for the server socket only, overriding --udp-recv-buffer.
    #[arg(long, value_parser = clap::value_parser!(u64).range(BUFFER_RANGE))]
    pub udp_server_recv_buffer: Option<u64>,
    /// UDP: an unanswered datagram counts as lost after this many milliseconds.
    #[arg(long, default_value_t = DEFAULT_UDP_TIMEOUT_MS, value_parser = clap::value_parser!(u64).range(UDP_TIMEOUT_RANGE))]
    pub udp_timeout_ms: u64,
    /// Do not record round trips into the latency histogram (to measure its cost).
    #[arg(long)]
    pub no_latency: bool,
    /// Count this process's system calls over the measured interval (clients and, in
    /// process, the server), with the kernel's raw_syscalls:sys_enter tracepoint as a
    /// counter: needs root or CAP_PERFMON, and costs a few percent at the highest rates.
    #[arg(long)]
    pub count_syscalls: bool,
    /// Open loop: send on a schedule at this many messages per second over all clients,
    /// whether or not echoes have come back (--window caps the messages in flight per
    /// client). Latency is measured from each message's due time.
    #[arg(long, value_parser = clap::value_parser!(u64).range(RATE_RANGE))]
    pub rate: Option<u64>,
    /// Open loop: evenly spaced messages or a Poisson process.
    #[arg(long, value_enum, default_value = "uniform", requires = "rate")]
    pub arrival: Arrival,
    /// Open loop: the seed of the Poisson schedule.
    #[arg(long, default_value_t = 1, requires = "rate")]
    pub seed: u64,
    /// Open loop: how many microseconds before a due message a client stops sleeping and
    /// spins (yielding to the runtime); 0 sleeps on the timer alone.
    #[arg(long, default_value_t = 1000, requires = "rate", value_parser = clap::value_parser!(u64).range(0..=100_000))]
    pub spin_us: u64,
    /// Pin the client's runtime threads to these CPUs, one CPU each in turn (`0`, `0-3`,
    /// `0,2`). In-process without --server-cpus, each runtime thread also runs the server
    /// side of its clients' connections.
    #[arg(long, value_name = "LIST", value_parser = available_cpus)]
    pub client_cpus: Option<CpuList>,
    /// In process: give echomark's server runtimes of its own (as many as the client's,
    /// the same IO model), pinned to these CPUs one each, so client and server run apart.
    /// Against --target, pin that server where it starts instead.
    #[arg(long, value_name = "LIST", value_parser = available_cpus)]
    pub server_cpus: Option<CpuList>,
    /// UDP on tokio: send and receive up to N datagrams per system call (recvmmsg and
    /// sendmmsg, 2 to 64) on every client socket and the server's; recorded in the metrics.
    #[arg(long, value_name = "N")]
    pub udp_batch: Option<u64>,
    /// With --udp-batch: UDP segmentation offload, consecutive datagrams of one size to one
    /// peer as one GSO send and receives coalesced by GRO, each datagram still checked
    /// alone; recorded in the metrics.
    #[arg(long, requires = "udp_batch")]
    pub udp_gso: bool,
    #[command(flatten)]
    pub quic: quic::QuicTransportArgs,
    /// Test only: make the server misbehave so the checks can be shown to catch it.
    #[arg(long, value_enum, hide = true)]
    pub inject_fault: Option<Fault>,
    #[command(flatten)]
    pub target: TargetArgs,
}

/// The default case with this traffic.
fn traffic(
    protocol: Protocol,
    address_family: AddressFamily,
    payload: u64,
    clients: u64,
    window: u64,
) -> Case {
    let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    Case {
        protocol,
        address_family,
        payload: size(payload),
        clients: size(clients),
        window: size(window),
        ..Case::default()
    }
}

/// `traffic()` for the flag sets that choose protocol, family, payload, clients and window.
macro_rules! traffic_flags {
    ($($args:ty),+) => {$(
        impl $args {
            /// The default case with these flags' traffic.
            fn traffic(&self) -> Case {
                traffic(self.protocol, self.address_family, self.payload, self.clients, self.window)
            }
        }
    )+};
}

traffic_flags!(OnceArgs, SoakArgs);

impl OnceArgs {
    /// The validated case these flags describe.
    pub fn to_case(&self) -> Result<Case, FlagError> {
        let mut case = Case {
            backend: self.backend.clone(),
            seconds: self.seconds,
            warmup: self.warmup,
            io_model: self.io_model,
            io_threads: self.io_threads as usize,
            work: self.work,
            udp_send_buffer: self.udp_send_buffer,
            udp_recv_buffer: self.udp_recv_buffer,
            udp_server_recv_buffer: self.udp_server_recv_buffer,
            udp_timeout: Duration::from_millis(self.udp_timeout_ms),
            record_latency: !self.no_latency,
            count_syscalls: self.count_syscalls,
            fault: self.inject_fault,
            open_loop: self.rate.map(|rate| OpenLoop {
                rate,
                arrival: self.arrival,
                seed: self.seed,
            }),
            spin: Duration::from_micros(self.spin_us),
            client_cpus: self.client_cpus.clone(),
            server_cpus: self.server_cpus.clone(),
            udp_batch: self
                .udp_batch
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            udp_gso: self.udp_gso,
            quic: self.quic.transport(),
            ..self.traffic()
        };
        case.target = self.target.resolve(case.address_family)?;
        if let Some(t) = &case.target {
            case.address_family = family_of(&t.addr);
        }
        Ok(case.validate()?)
    }
}

/// The flags of `serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Transport and framing.
    #[arg(long, value_enum, default_value = "tcp")]
    pub protocol: Protocol,
    /// Address to listen on; port 0 picks a free one (printed on the first line).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// tokio (epoll), monoio (io_uring through a runtime; shared 1 or sharded N) or
    /// io-uring (an io_uring event loop of its own; tcp, udp, http, websocket; shared 1 or
    /// sharded N).
    #[arg(long, default_value = "tokio", value_parser = playing(Role::Server))]
    pub backend: Backend,
    /// --backend io-uring: multishot receive into a provided-buffer ring (off: a single-shot
    /// receive per read into the connection's buffer).
    #[arg(long, value_name = "on|off", default_value = "on", action = clap::ArgAction::Set, value_parser = clap::builder::BoolishValueParser::new())]
    pub uring_multishot: bool,
    /// --backend io-uring, with multishot: a message echoed unchanged (tcp's prefix framing,
    /// raw bytes) is sent straight from the provided buffer it arrived in, which goes back to
    /// the kernel when the send completes (off: copied out first).
    #[arg(long, value_name = "on|off", default_value = "on", action = clap::ArgAction::Set, value_parser = clap::builder::BoolishValueParser::new())]
    pub uring_zero_copy: bool,
    /// --backend io-uring: IO through registered file slots (off: plain descriptors).
    #[arg(long, value_name = "on|off", default_value = "on", action = clap::ArgAction::Set, value_parser = clap::builder::BoolishValueParser::new())]
    pub uring_fixed_files: bool,
    /// --backend io-uring: a turn's submissions entered together with its wait (off: one
    /// io_uring_enter per submission).
    #[arg(long, value_name = "on|off", default_value = "on", action = clap::ArgAction::Set, value_parser = clap::builder::BoolishValueParser::new())]
    pub uring_batched_submit: bool,
    /// --backend io-uring: completions' task work deferred until the loop waits for them
    /// (DEFER_TASKRUN; off: the kernel interrupts the thread to run it). Always off with
    /// --uring-sqpoll, which the kernel does not combine with it.
    #[arg(long, value_name = "on|off", default_value = "on", action = clap::ArgAction::Set, value_parser = clap::builder::BoolishValueParser::new())]
    pub uring_defer_taskrun: bool,
    /// --backend io-uring: a kernel thread polls each ring's submission queue (SQPOLL), on
    /// its shard's CPU when --server-cpus pins them; its CPU time counts as the server's.
    #[arg(long)]
    pub uring_sqpoll: bool,
    /// --backend io-uring: each shard's loop never sleeps; it looks for completions without
    /// waiting for them and keeps its CPU busy (counted in the server's CPU time).
    #[arg(long)]
    pub uring_busy_poll: bool,
    /// tcp, tcps: `prefix` (echomark's framing) or `raw` (a plain byte echo).
    #[arg(long, value_enum, default_value = "prefix")]
    pub framing: StreamFraming,
    /// Thread and runtime topology.
    #[arg(long, value_enum, default_value = "shared")]
    pub io_model: IoModel,
    /// Threads (shared) or single-thread runtimes (sharded), 1 to 64.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(THREADS_RANGE))]
    pub io_threads: u64,
    /// Synthetic xorshift rounds per echo, 0 to 10,000,000.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(WORK_RANGE))]
    pub work: u64,
    /// UDP: SO_SNDBUF request for every server socket, bytes.
    #[arg(long, default_value_t = DEFAULT_UDP_SEND_BUFFER, value_parser = clap::value_parser!(u64).range(BUFFER_RANGE))]
    pub udp_send_buffer: u64,
    /// UDP: SO_RCVBUF request for every server socket, bytes.
    #[arg(long, default_value_t = DEFAULT_UDP_RECV_BUFFER, value_parser = clap::value_parser!(u64).range(BUFFER_RANGE))]
    pub udp_recv_buffer: u64,
    /// TLS protocols: write the server's self-signed certificate (PEM) here, for a client's
    /// --tls-ca.
    #[arg(long, value_name = "FILE")]
    pub tls_certificate_out: Option<std::path::PathBuf>,
    /// Pin the server's runtime threads to these CPUs, one CPU each in turn (`1`, `2-3`),
    /// after narrowing the whole process to the list.
    #[arg(long, value_name = "LIST", value_parser = available_cpus)]
    pub server_cpus: Option<CpuList>,
    /// Count the server process's system calls from start to stop (the kernel's
    /// raw_syscalls:sys_enter tracepoint as a counter; needs root or CAP_PERFMON) and report
    /// them as `syscalls` in the last line; a matrix records them per run.
    #[arg(long)]
    pub count_syscalls: bool,
    /// UDP on tokio: receive and answer up to N datagrams per system call (recvmmsg and
    /// sendmmsg, 2 to 64).
    #[arg(long, value_name = "N")]
    pub udp_batch: Option<u64>,
    /// With --udp-batch: receive one client's datagrams coalesced by GRO and answer them as
    /// one GSO send each, every datagram still checked alone.
    #[arg(long, requires = "udp_batch")]
    pub udp_gso: bool,
    /// Close a TCP connection that sends nothing for this many seconds (counted in the
    /// report as `idle_closed`); 0 keeps silent connections open.
    #[arg(long, value_name = "S", default_value = "60", value_parser = warmup_seconds)]
    pub idle_timeout: f64,
    #[command(flatten)]
    pub quic: quic::QuicTransportArgs,
    /// QUIC: connections served at once, over every endpoint; more are refused (default
    /// 1,024, the most clients a run has).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub quic_max_connections: Option<u64>,
    /// Test only: make the server misbehave, to show clients catch it.
    #[arg(long, value_enum, hide = true)]
    pub inject_fault: Option<Fault>,
}

impl ServeArgs {
    /// The options these flags describe.
    pub fn to_options(&self) -> Result<echomark_runner::serve::ServeOptions, FlagError> {
        let options = echomark_runner::serve::ServeOptions {
            backend: self.backend.clone(),
            ring: echomark_runner::serve::ring::Tuning {
                multishot: self.uring_multishot,
                zero_copy: self.uring_zero_copy && self.uring_multishot,
                fixed_files: self.uring_fixed_files,
                batched_submit: self.uring_batched_submit,
                defer_taskrun: self.uring_defer_taskrun && !self.uring_sqpoll,
                sqpoll: self.uring_sqpoll,
                busy_poll: self.uring_busy_poll,
            },
            fault: self.inject_fault,
            protocol: self.protocol,
            listen: self.listen,
            framing: self.framing,
            io_model: self.io_model,
            io_threads: self.io_threads as usize,
            work: self.work,
            udp_send_buffer: self.udp_send_buffer,
            udp_recv_buffer: self.udp_recv_buffer,
            tls_certificate_out: self.tls_certificate_out.clone(),
            server_cpus: self.server_cpus.clone(),
            count_syscalls: self.count_syscalls,
            udp_batch: self
                .udp_batch
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            udp_gso: self.udp_gso,
            idle_timeout: (self.idle_timeout > 0.0)
                .then(|| Duration::from_secs_f64(self.idle_timeout)),
            quic: self.quic.transport(),
            quic_max_connections: self
                .quic_max_connections
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        };
        echomark_runner::serve::validate(&options)?;
        Ok(options)
    }
}

/// The flags of `verify`.
#[derive(Debug, Clone, Args)]
pub struct VerifyArgs {
    /// The protocol the server speaks.
    #[arg(long, value_enum, default_value = "tcp")]
    pub protocol: Protocol,
    /// Preferred address family when the target's name has both.
    #[arg(long, value_enum, default_value = "ipv4")]
    pub address_family: AddressFamily,
    /// Print the checks as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// How long one connect, read or write may take before its check fails (default 3 s):
    /// more for a server across a slow link.
    #[arg(long, value_name = "S", value_parser = seconds)]
    pub io_timeout: Option<f64>,
    /// How long a whole TLS handshake, WebSocket upgrade or QUIC handshake may take
    /// (default 10 s).
    #[arg(long, value_name = "S", value_parser = seconds)]
    pub handshake_timeout: Option<f64>,
    /// The pause before the idle check uses its connection again (default 2 s): the server
    /// must keep a connection open at least this long without traffic.
    #[arg(long, value_name = "S", value_parser = seconds)]
    pub idle: Option<f64>,
    #[command(flatten)]
    pub target: TargetArgs,
}

impl VerifyArgs {
    /// The target to verify (required here).
    pub fn to_target(&self) -> Result<Target, FlagError> {
        let target = self
            .target
            .resolve(self.address_family)?
            .ok_or(FlagError::VerifyNeedsTarget)?;
        let probe = Case {
            protocol: self.protocol,
            address_family: family_of(&target.addr),
            target: Some(target.clone()),
            ..Case::default()
        };
        probe.validate()?;
        Ok(target)
    }

    /// How long the checks wait: the defaults, with what the flags change.
    pub fn limits(&self) -> verify::Limits {
        let given = |s: Option<f64>, default| s.map_or(default, Duration::from_secs_f64);
        let defaults = verify::Limits::default();
        verify::Limits {
            io: given(self.io_timeout, defaults.io),
            handshake: given(self.handshake_timeout, defaults.handshake),
            idle: given(self.idle, defaults.idle),
        }
    }
}

/// The flags of `calibrate`.
#[derive(Debug, Clone, Args)]
pub struct CalibrateArgs {
    /// Payload of every ping, bytes.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(PAYLOAD_RANGE))]
    pub payload: u64,
    /// Seconds per protocol.
    #[arg(long, default_value = "1", value_parser = seconds)]
    pub seconds: f64,
    /// Loopback host.
    #[arg(long, value_enum, default_value = "ipv4")]
    pub address_family: AddressFamily,
    /// Run only the blocking echo server at this address (port 0 picks one) until SIGTERM
    /// or SIGINT; prints {"listening": ADDR} first.
    #[arg(long, value_name = "ADDR", conflicts_with = "target")]
    pub serve: Option<SocketAddr>,
    /// Run only the blocking client against the echo server at this address; prints its
    /// floor as JSON.
    #[arg(long, value_name = "ADDR")]
    pub target: Option<SocketAddr>,
    /// With --serve or --target: tcp or udp.
    #[arg(long, value_enum, default_value = "tcp")]
    pub protocol: Protocol,
}

impl CalibrateArgs {
    /// In process, or the server or the client alone.
    pub fn mode(&self) -> echomark_runner::calibrate::Mode {
        use echomark_runner::calibrate::Mode;
        match (self.serve, self.target) {
            (Some(addr), _) => Mode::Serve(addr),
            (None, Some(addr)) => Mode::Target(addr),
            (None, None) => Mode::InProcess(echomark_runner::case::loopback(self.address_family)),
        }
    }
}

/// The flags of `soak`.
#[derive(Debug, Clone, Args)]
pub struct SoakArgs {
    /// Async runtime (its unsupported topologies are skipped).
    #[arg(long, default_value = "tokio", value_parser = playing(Role::InProcess))]
    pub backend: Backend,
    /// Total length, split over rounds × topologies (shared 1, shared 4, sharded 4).
    #[arg(long, default_value = "60", value_parser = seconds)]
    pub seconds: f64,
    #[arg(long, value_enum, default_value = "udp")]
    pub protocol: Protocol,
    #[arg(long, value_enum, default_value = "ipv4")]
    pub address_family: AddressFamily,
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(COUNT_RANGE))]
    pub clients: u64,
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(COUNT_RANGE))]
    pub window: u64,
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(PAYLOAD_RANGE))]
    pub payload: u64,
    /// Restarts per topology.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub rounds: u64,
    /// Test only: make the server misbehave, to show the soak fails.
    #[arg(long, value_enum, hide = true)]
    pub inject_fault: Option<Fault>,
}

impl SoakArgs {
    /// The base case of every round (topology and durations are set per round).
    pub fn to_case(&self) -> Result<Case, UsageError> {
        Case {
            backend: self.backend.clone(),
            warmup: 0.0,
            fault: self.inject_fault,
            ..self.traffic()
        }
        .validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use echomark_archive::Preset;
    use echomark_runner::matrix::plan::MatrixSpec;

    /// A value a parser refuses is reported with the parser's own error, typed.
    #[test]
    fn value_parsers_refuse_with_typed_errors() {
        fn refused<E: std::error::Error + 'static>(args: &[&str]) -> (String, bool) {
            let e = Cli::try_parse_from(args).unwrap_err();
            let typed = std::error::Error::source(&e).is_some_and(|s| s.is::<E>());
            (e.to_string(), typed)
        }
        let (said, typed) = refused::<quic::NotOnOff>(&["r", "once", "--quic-gso", "maybe"]);
        assert!(said.contains("'maybe' is not on or off"), "{said}");
        assert!(typed, "{said}");
        let (said, typed) = refused::<target::NotAlpn>(&[
            "r",
            "once",
            "--target",
            "127.0.0.1:1",
            "--alpn",
            "two words",
        ]);
        assert!(
            said.contains("'two words' is not an ALPN name (1 to 255 printable ASCII characters)"),
            "{said}"
        );
        assert!(typed, "{said}");
        let (said, typed) =
            refused::<matrix::HostNameError>(&["r", "matrix", "--host-name", "two words"]);
        assert!(said.contains("is not a host name"), "{said}");
        assert!(typed, "{said}");
    }

    /// What the matrix hands a child is exactly what `once` measures: every planned case of
    /// every preset survives the round trip through its argv.
    #[test]
    fn every_preset_case_parses_back_from_its_child_arguments() {
        for preset in Preset::ALL {
            let spec = MatrixSpec::preset(Some(preset));
            let settings = spec.settings(echomark_runner::matrix::plan::SettingsExtra {
                preset: Some(preset),
                shuffle_seed: None,
                case_timeout_seconds: 30.0,
                udp_timeout_ms: 100,
                udp_send_buffer: Some(1 << 17),
                udp_recv_buffer: None,
                udp_server_recv_buffer: None,
                keep_going: false,
                soak_seconds: None,
                shard: None,
            });
            for run in spec.runs(None, Backend::Tokio) {
                let case = spec.case(&run, &settings).unwrap();
                let argv = std::iter::once("echomark-runner".to_string()).chain(case.to_args());
                let Command::Once(args) = Cli::try_parse_from(argv).unwrap().command else {
                    panic!("once")
                };
                assert_eq!(args.to_case().unwrap(), case, "{preset:?}");
            }
        }
    }
}
