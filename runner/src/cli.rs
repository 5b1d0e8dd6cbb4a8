//! Command-line definitions, and their translation into the library's requests. Flag names
//! and ranges follow arknet's loopback benchmark.

use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use echomark_archive::Preset;
use std::net::{SocketAddr, ToSocketAddrs};

use echomark_runner::case::{
    self, AddressFamily, Arrival, Backend, Case, Fault, IoModel, OpenLoop, Protocol, StreamFraming,
    Target, TlsTrust, UsageError,
};
use echomark_runner::case::{
    DEFAULT_UDP_RECV_BUFFER, DEFAULT_UDP_SEND_BUFFER, DEFAULT_UDP_TIMEOUT_MS,
};
use echomark_runner::matrix::plan::Overrides;
use echomark_runner::matrix::{ArchiveTarget, MatrixRequest, RunOptions};
use echomark_runner::message::{HEADER_LEN, MAX_PAYLOAD};

/// Payloads on the command line: a header, up to the largest UDP datagram.
const PAYLOAD_RANGE: std::ops::RangeInclusive<u64> = HEADER_LEN as u64..=MAX_PAYLOAD as u64;
/// Clients and windows: 1 to 1,024 (arknet's range).
const COUNT_RANGE: std::ops::RangeInclusive<u64> = 1..=1024;
/// IO threads: 1 to 64.
const THREADS_RANGE: std::ops::RangeInclusive<u64> = 1..=64;
/// Synthetic work per echo: 0 to 10,000,000 rounds.
const WORK_RANGE: std::ops::RangeInclusive<u64> = 0..=10_000_000;
/// Socket buffer requests: 1 B to 2 GiB.
const BUFFER_RANGE: std::ops::RangeInclusive<u64> = 1..=(1 << 31);
/// Open-loop rates: 1 to 100 million messages per second.
const RATE_RANGE: std::ops::RangeInclusive<u64> = 1..=100_000_000;
/// The UDP loss timeout: 1 ms to 60 s.
const UDP_TIMEOUT_RANGE: std::ops::RangeInclusive<u64> = 1..=60_000;

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

/// The flags of `once`.
#[derive(Debug, Clone, Args)]
pub struct OnceArgs {
    /// Async runtime: tokio (epoll) or monoio (io_uring, thread-per-core).
    #[arg(long, value_enum, default_value = "tokio")]
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
    /// Test only: make the server misbehave so the checks can be shown to catch it.
    #[arg(long, value_enum, hide = true)]
    pub inject_fault: Option<Fault>,
    #[command(flatten)]
    pub target: TargetArgs,
}

/// The flags that point a client at a server echomark did not start.
#[derive(Debug, Clone, Args)]
pub struct TargetArgs {
    /// Measure the server at HOST:PORT instead of echomark's own (client side only; the
    /// address family is the address's).
    #[arg(long, value_name = "HOST:PORT")]
    pub target: Option<String>,
    /// tcp, tcps: `prefix` (arknet's length prefix, echomark's own server) or `raw`
    /// (messages of exactly --payload bytes on any server that writes back what it reads).
    #[arg(long, value_enum, default_value = "prefix", requires = "target")]
    pub framing: StreamFraming,
    /// TLS protocols: accept the server's certificate without checking it.
    #[arg(long, requires = "target", conflicts_with = "tls_ca")]
    pub tls_insecure: bool,
    /// TLS protocols: check the server's certificate against the CAs in this PEM file.
    #[arg(long, value_name = "FILE", requires = "target")]
    pub tls_ca: Option<std::path::PathBuf>,
    /// TLS protocols: the name the certificate must carry (default: the target's host).
    #[arg(long, value_name = "NAME", requires = "target")]
    pub tls_server_name: Option<String>,
    /// The server implementation's name, recorded as the run's `backend` (default: the
    /// client's runtime).
    #[arg(long, value_name = "NAME", requires = "target")]
    pub server_name: Option<String>,
    /// http, https: the server does not answer pipelined requests, so each of the
    /// clients × window requests in flight gets a connection of its own (window 1 each).
    #[arg(long, requires = "target")]
    pub no_pipelining: bool,
    /// The machine the server runs on, for the record: the JSON `echomark-runner
    /// describe-host` prints there (or `serve`'s listening line, which carries it).
    #[arg(long, value_name = "FILE", requires = "target")]
    pub server_machine: Option<std::path::PathBuf>,
}

impl TargetArgs {
    /// The target these flags name, resolved (preferring `family` when the name has
    /// addresses of both), or none.
    pub fn resolve(&self, family: AddressFamily) -> Result<Option<Target>, UsageError> {
        let Some(authority) = &self.target else {
            return Ok(None);
        };
        let addr = resolve(authority, family)?;
        let host = authority
            .rsplit_once(':')
            .map_or(authority.as_str(), |(h, _)| h)
            .trim_start_matches('[')
            .trim_end_matches(']');
        let trust = match (&self.tls_ca, self.tls_insecure) {
            (Some(path), _) => Some(TlsTrust::Ca(path.clone())),
            (None, true) => Some(TlsTrust::Insecure),
            (None, false) => None,
        };
        Ok(Some(Target {
            addr,
            authority: authority.clone(),
            framing: self.framing,
            tls: trust.map(|t| {
                (
                    t,
                    self.tls_server_name
                        .clone()
                        .unwrap_or_else(|| host.to_string()),
                )
            }),
            server_name: self.server_name.clone(),
            http_pipelining: !self.no_pipelining,
            server_machine: match &self.server_machine {
                Some(file) => Some((file.clone(), read_machine(file)?)),
                None => None,
            },
        }))
    }
}

/// The machine description in `file`: a host as `describe-host` prints it, or an object
/// that carries one under `machine` (`serve`'s listening line).
pub fn read_machine(file: &std::path::Path) -> Result<echomark_archive::Host, UsageError> {
    let fail = |why: String| UsageError(format!("--server-machine {}: {why}", file.display()));
    let text = std::fs::read_to_string(file).map_err(|e| fail(e.to_string()))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| fail(e.to_string()))?;
    let (value, at) = match value.get("machine") {
        Some(machine) => (machine.clone(), "machine"),
        None => (value, "the top level"),
    };
    serde_json::from_value(value).map_err(|e| fail(format!("{at} is not a host description: {e}")))
}

/// The socket address of `HOST:PORT`, of `family` when the name has both kinds.
pub fn resolve(authority: &str, family: AddressFamily) -> Result<SocketAddr, UsageError> {
    let addrs: Vec<SocketAddr> = authority
        .to_socket_addrs()
        .map_err(|e| UsageError(format!("--target {authority:?}: {e}")))?
        .collect();
    let wanted = |a: &&SocketAddr| a.is_ipv6() == (family == AddressFamily::Ipv6);
    addrs
        .iter()
        .find(wanted)
        .or(addrs.first())
        .copied()
        .ok_or_else(|| UsageError(format!("--target {authority:?} has no address")))
}

/// The address family of `addr`.
pub fn family_of(addr: &SocketAddr) -> AddressFamily {
    if addr.is_ipv6() {
        AddressFamily::Ipv6
    } else {
        AddressFamily::Ipv4
    }
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
    pub fn to_case(&self) -> Result<Case, UsageError> {
        let mut case = Case {
            backend: self.backend,
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
            fault: self.inject_fault,
            open_loop: self.rate.map(|rate| OpenLoop {
                rate,
                arrival: self.arrival,
                seed: self.seed,
            }),
            spin: Duration::from_micros(self.spin_us),
            ..self.traffic()
        };
        case.target = self.target.resolve(case.address_family)?;
        if let Some(t) = &case.target {
            case.address_family = family_of(&t.addr);
        }
        case.validate()
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
    /// Async runtime: tokio (epoll) or monoio (io_uring; shared 1 or sharded N).
    #[arg(long, value_enum, default_value = "tokio")]
    pub backend: Backend,
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
}

impl ServeArgs {
    /// The options these flags describe.
    pub fn to_options(&self) -> Result<echomark_runner::serve::ServeOptions, UsageError> {
        let options = echomark_runner::serve::ServeOptions {
            backend: self.backend,
            protocol: self.protocol,
            listen: self.listen,
            framing: self.framing,
            io_model: self.io_model,
            io_threads: self.io_threads as usize,
            work: self.work,
            udp_send_buffer: self.udp_send_buffer,
            udp_recv_buffer: self.udp_recv_buffer,
            tls_certificate_out: self.tls_certificate_out.clone(),
        };
        echomark_runner::serve::validate(&options).map_err(|e| UsageError(e.to_string()))?;
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
    #[command(flatten)]
    pub target: TargetArgs,
}

impl VerifyArgs {
    /// The target to verify (required here).
    pub fn to_target(&self) -> Result<Target, UsageError> {
        let target = self
            .target
            .resolve(self.address_family)?
            .ok_or_else(|| UsageError("verify needs --target HOST:PORT".into()))?;
        let probe = Case {
            protocol: self.protocol,
            address_family: family_of(&target.addr),
            target: Some(target.clone()),
            ..Case::default()
        };
        probe.validate()?;
        Ok(target)
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

/// The flags of `matrix`. Lists are comma-separated; explicit flags override the preset.
#[derive(Debug, Clone, Args)]
pub struct MatrixArgs {
    /// The archive to write; must not exist yet.
    #[arg(long, value_name = "FILE", required_unless_present = "resume")]
    pub out: Option<std::path::PathBuf>,
    /// Finish an interrupted archive: its own settings, no completed run repeated.
    #[arg(long, value_name = "FILE", conflicts_with_all = [
        "preset", "protocols", "payloads", "clients", "windows", "io_models", "io_threads",
        "work", "repetitions", "seconds", "warmup", "address_family", "udp_window",
        "shuffle", "case_timeout", "udp_send_buffer", "udp_recv_buffer",
        "udp_server_recv_buffer", "udp_timeout_ms", "soak", "shard", "rates", "rate_sweep",
        "arrival", "arrival_seed", "backends",
    ])]
    pub resume: Option<std::path::PathBuf>,
    /// Async runtimes to measure, each into its own archive; with more than one, --out is a
    /// folder (one BACKEND.json each) and their runs are shuffled together. IO models a
    /// backend cannot run (monoio: shared N > 1) are left out of its archive.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub backends: Option<Vec<Backend>>,
    /// Starting values: quick, baseline or dimensions.
    #[arg(long, value_enum)]
    pub preset: Option<Preset>,
    #[arg(long, value_enum, value_delimiter = ',')]
    pub protocols: Option<Vec<Protocol>>,
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(PAYLOAD_RANGE))]
    pub payloads: Option<Vec<u64>>,
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(COUNT_RANGE))]
    pub clients: Option<Vec<u64>>,
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(COUNT_RANGE))]
    pub windows: Option<Vec<u64>>,
    #[arg(long, value_enum, value_delimiter = ',')]
    pub io_models: Option<Vec<IoModel>>,
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(THREADS_RANGE))]
    pub io_threads: Option<Vec<u64>>,
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(WORK_RANGE))]
    pub work: Option<Vec<u64>>,
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub repetitions: Option<u64>,
    #[arg(long, value_parser = seconds)]
    pub seconds: Option<f64>,
    #[arg(long, value_parser = warmup_seconds)]
    pub warmup: Option<f64>,
    #[arg(long, value_enum)]
    pub address_family: Option<AddressFamily>,
    /// Force every UDP case to this window (arknet's `udp_throughput_window`).
    #[arg(long, value_parser = clap::value_parser!(u64).range(COUNT_RANGE))]
    pub udp_window: Option<u64>,
    /// Record failed runs and go on; the exit code is still 1.
    #[arg(long)]
    pub keep_going: bool,
    /// Run the cases in an order shuffled with this seed (recorded in the archive).
    #[arg(long, value_name = "SEED")]
    pub shuffle: Option<u64>,
    /// Measure only part I of N of the matrix (every repetition of every N-th configuration,
    /// recorded in the archive); the N archives of one build on one host form one dataset.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<echomark_archive::Shard>,
    /// Kill a run after this many seconds (default: seconds + warmup + 30).
    #[arg(long, value_name = "S", value_parser = seconds)]
    pub case_timeout: Option<f64>,
    #[arg(long, value_parser = clap::value_parser!(u64).range(BUFFER_RANGE))]
    pub udp_send_buffer: Option<u64>,
    #[arg(long, value_parser = clap::value_parser!(u64).range(BUFFER_RANGE))]
    pub udp_recv_buffer: Option<u64>,
    #[arg(long, value_parser = clap::value_parser!(u64).range(BUFFER_RANGE))]
    pub udp_server_recv_buffer: Option<u64>,
    #[arg(long, value_parser = clap::value_parser!(u64).range(UDP_TIMEOUT_RANGE))]
    pub udp_timeout_ms: Option<u64>,
    /// After the cases, run `soak` for this many seconds per protocol and record it.
    #[arg(long, value_name = "S", value_parser = seconds, conflicts_with = "server_cmd")]
    pub soak: Option<f64>,
    /// Measure an external server instead of echomark's own: this command (run by `sh -c`,
    /// `{port}` replaced by a free port) is started fresh for every run and verified first.
    /// Repeat it (with one --server-name each) to measure several servers with their runs
    /// interleaved, one archive each in the --out folder.
    #[arg(long, value_name = "CMD", requires = "server_name", conflicts_with_all = ["backends", "resume"])]
    pub server_cmd: Vec<String>,
    /// The name the pages give the external server (its `backend`), one per --server-cmd.
    #[arg(long, value_name = "NAME", requires = "server_cmd")]
    pub server_name: Vec<String>,
    /// The address the external server listens on (default: the address family's loopback).
    #[arg(long, value_name = "IP", requires = "server_cmd")]
    pub server_host: Option<std::net::IpAddr>,
    /// tcp, tcps against --server-cmd: `prefix` or `raw`.
    #[arg(long, value_enum, default_value = "prefix", requires = "server_cmd")]
    pub framing: StreamFraming,
    /// TLS protocols against --server-cmd: accept its certificate without checking it.
    #[arg(long, requires = "server_cmd", conflicts_with = "tls_ca")]
    pub tls_insecure: bool,
    /// TLS protocols against --server-cmd: check its certificate against the CAs in this
    /// PEM file (for the name of --server-host).
    #[arg(long, value_name = "FILE", requires = "server_cmd")]
    pub tls_ca: Option<std::path::PathBuf>,
    /// The machine the server runs on, when --server-cmd starts it on another one (through
    /// ssh, say): the JSON `describe-host` prints there. Default: this machine.
    #[arg(long, value_name = "FILE", requires = "server_cmd")]
    pub server_machine: Option<std::path::PathBuf>,
    /// Open loop: measure every case at each of these offered rates (messages per second
    /// over all clients) instead of closed-loop; --windows cap the messages in flight.
    #[arg(long, value_delimiter = ',', value_name = "LIST", conflicts_with = "rate_sweep",
          value_parser = clap::value_parser!(u64).range(RATE_RANGE))]
    pub rates: Option<Vec<u64>>,
    /// Open loop: measure every case closed-loop first, then at these percentages of its
    /// median closed-loop throughput (default 10,30,50,70,80,90,95,100).
    #[arg(long, value_delimiter = ',', value_name = "PERCENTS", num_args = 0..,
          default_missing_value = "10,30,50,70,80,90,95,100",
          value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub rate_sweep: Option<Vec<u64>>,
    /// Open loop: evenly spaced messages or a Poisson process (default uniform).
    #[arg(long, value_enum)]
    pub arrival: Option<Arrival>,
    /// Open loop: the seed of every Poisson schedule (default 1).
    #[arg(long, value_name = "SEED")]
    pub arrival_seed: Option<u64>,
    /// Workspace whose sources `source_sha256` covers (default: the one this binary was
    /// built from).
    #[arg(long, value_name = "DIR")]
    pub source_dir: Option<std::path::PathBuf>,
}

impl MatrixArgs {
    /// The external servers the `--server-cmd` / `--server-name` pairs name, in order.
    fn external_servers(&self) -> Result<Vec<echomark_archive::ExternalServer>, UsageError> {
        if self.server_cmd.len() != self.server_name.len() {
            return Err(UsageError(format!(
                "{} --server-cmd but {} --server-name: give each server a name",
                self.server_cmd.len(),
                self.server_name.len()
            )));
        }
        let mut servers = Vec::with_capacity(self.server_cmd.len());
        for (command, name) in self.server_cmd.iter().zip(&self.server_name) {
            if servers
                .iter()
                .any(|s: &echomark_archive::ExternalServer| &s.name == name)
            {
                return Err(UsageError(format!(
                    "--server-name {name:?} names two servers"
                )));
            }
            servers.push(self.external_server(command, name)?);
        }
        Ok(servers)
    }

    /// The external server `command` starts, named `name`.
    fn external_server(
        &self,
        command: &str,
        name: &str,
    ) -> Result<echomark_archive::ExternalServer, UsageError> {
        if !command.contains("{port}") {
            return Err(UsageError(
                "--server-cmd must contain {port}, where the server's port goes".into(),
            ));
        }
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            || name.starts_with('.')
        {
            // The name becomes a file name (NAME.json) and the pages' backend.
            return Err(UsageError(format!(
                "--server-name {name:?}: use letters, digits, '-', '_' and '.' (not first)"
            )));
        }
        let family = self.address_family.unwrap_or(AddressFamily::Ipv4);
        let host = self.server_host.unwrap_or_else(|| case::loopback(family));
        if family_of(&SocketAddr::new(host, 0)) != family {
            return Err(UsageError(format!(
                "--server-host {host} is not an address of --address-family {family}"
            )));
        }
        Ok(echomark_archive::ExternalServer {
            name: name.to_string(),
            command: command.to_string(),
            host: host.to_string(),
            framing: self.framing,
            tls_verification: match (&self.tls_ca, self.tls_insecure) {
                (Some(_), _) => Some(echomark_archive::TlsVerification::Ca),
                (None, true) => Some(echomark_archive::TlsVerification::Insecure),
                (None, false) => None,
            },
            tls_ca: self.tls_ca.as_ref().map(|p| p.display().to_string()),
            machine: Some(match &self.server_machine {
                Some(file) => read_machine(file)?,
                None => crate::matrix::host::describe(),
            }),
        })
    }

    /// The library's request for these flags.
    pub fn to_request(&self) -> Result<MatrixRequest, UsageError> {
        let archive = match (&self.resume, &self.out) {
            (Some(resume), Some(out)) if resume != out => {
                return Err(UsageError(
                    "--resume writes to the archive it resumes; drop --out".into(),
                ))
            }
            (Some(resume), _) => ArchiveTarget::Resume(resume.clone()),
            (None, Some(out)) => ArchiveTarget::New(out.clone()),
            (None, None) => {
                return Err(UsageError("--out FILE or --resume FILE is required".into()))
            }
        };
        Ok(MatrixRequest {
            archive,
            preset: self.preset,
            overrides: Overrides {
                protocols: self.protocols.clone(),
                payloads: self.payloads.clone(),
                clients: self.clients.clone(),
                windows: self.windows.clone(),
                udp_window: self.udp_window,
                io_models: self.io_models.clone(),
                io_threads: self.io_threads.clone(),
                work: self.work.clone(),
                repetitions: self.repetitions,
                seconds: self.seconds,
                warmup: self.warmup,
                address_family: self.address_family,
                rates: self.rates.clone(),
                rate_sweep: self.rate_sweep.clone(),
                arrival: self.arrival,
                arrival_seed: self.arrival_seed,
            },
            options: RunOptions {
                keep_going: self.keep_going,
                shuffle: self.shuffle,
                shard: self.shard,
                case_timeout: self.case_timeout,
                udp_send_buffer: self.udp_send_buffer,
                udp_recv_buffer: self.udp_recv_buffer,
                udp_server_recv_buffer: self.udp_server_recv_buffer,
                udp_timeout_ms: self.udp_timeout_ms,
                soak: self.soak,
                external_servers: self.external_servers()?,
            },
            backends: {
                let mut list = self.backends.clone().unwrap_or(vec![Backend::Tokio]);
                list.sort();
                list.dedup();
                list
            },
            source_dir: self.source_dir.clone(),
        })
    }
}

/// The flags of `soak`.
#[derive(Debug, Clone, Args)]
pub struct SoakArgs {
    /// Async runtime (its unsupported topologies are skipped).
    #[arg(long, value_enum, default_value = "tokio")]
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
            backend: self.backend,
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
    use echomark_runner::matrix::plan::MatrixSpec;

    /// What the matrix hands a child is exactly what `once` measures: every planned case of
    /// every preset survives the round trip through its argv.
    #[test]
    fn every_preset_case_parses_back_from_its_child_arguments() {
        for preset in [
            Preset::Quick,
            Preset::Baseline,
            Preset::Dimensions,
            Preset::UdpBuffers,
        ] {
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
