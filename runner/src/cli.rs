//! Command-line definitions. Flag names and ranges follow arknet's loopback benchmark.

use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::case::{self, AddressFamily, Case, Fault, IoModel, Protocol, UsageError};
use crate::matrix::plan::Preset;

/// Loopback echo benchmark on tokio, and the matrix driver that writes raw archives.
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
    /// Print the `source_sha256` of a workspace (the rule archives record).
    #[command(hide = true)]
    SourceHash {
        /// Workspace root (default: the one this binary was built from).
        dir: Option<std::path::PathBuf>,
    },
}

fn seconds(text: &str) -> Result<f64, String> {
    case::parse_seconds(text, false)
}

fn warmup_seconds(text: &str) -> Result<f64, String> {
    case::parse_seconds(text, true)
}

/// The flags of `once`.
#[derive(Debug, Clone, Args)]
pub struct OnceArgs {
    /// Transport and framing.
    #[arg(long, value_enum, default_value = "tcp")]
    pub protocol: Protocol,
    /// Loopback host: 127.0.0.1 or ::1.
    #[arg(long, value_enum, default_value = "ipv4")]
    pub address_family: AddressFamily,
    /// Application payload of every message, header included (16 to 65,507 bytes).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(16..=65_507))]
    pub payload: u32,
    /// Client connections (UDP: client sockets), 1 to 1,024.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub clients: u32,
    /// Messages each client keeps in flight, 1 to 1,024.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub window: u32,
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
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub io_threads: u32,
    /// Synthetic xorshift rounds per echo in the server handler, 0 to 10,000,000.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=10_000_000))]
    pub work: u64,
    /// UDP: SO_SNDBUF request for every socket, bytes.
    #[arg(long, default_value_t = 65_536, value_parser = clap::value_parser!(u64).range(1..=(1 << 31)))]
    pub udp_send_buffer: u64,
    /// UDP: SO_RCVBUF request for every socket (client and server), bytes.
    #[arg(long, default_value_t = 4_194_304, value_parser = clap::value_parser!(u64).range(1..=(1 << 31)))]
    pub udp_recv_buffer: u64,
    /// UDP: SO_RCVBUF request for the server socket only, overriding --udp-recv-buffer.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=(1 << 31)))]
    pub udp_server_recv_buffer: Option<u64>,
    /// UDP: an unanswered datagram counts as lost after this many milliseconds.
    #[arg(long, default_value_t = 250, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub udp_timeout_ms: u64,
    /// Do not record round trips into the latency histogram (to measure its cost).
    #[arg(long)]
    pub no_latency: bool,
    /// Test only: make the server misbehave so the checks can be shown to catch it.
    #[arg(long, value_enum, hide = true)]
    pub inject_fault: Option<Fault>,
}

impl OnceArgs {
    /// The validated case these flags describe.
    pub fn to_case(&self) -> Result<Case, UsageError> {
        Case {
            protocol: self.protocol,
            address_family: self.address_family,
            payload: self.payload as usize,
            clients: self.clients as usize,
            window: self.window as usize,
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
        }
        .validate()
    }
}

/// The flags of `calibrate`.
#[derive(Debug, Clone, Args)]
pub struct CalibrateArgs {
    /// Payload of every ping, bytes.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(16..=65_507))]
    pub payload: u32,
    /// Seconds per protocol.
    #[arg(long, default_value = "1", value_parser = seconds)]
    pub seconds: f64,
    /// Loopback host.
    #[arg(long, value_enum, default_value = "ipv4")]
    pub address_family: AddressFamily,
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
        "udp_server_recv_buffer", "udp_timeout_ms", "soak",
    ])]
    pub resume: Option<std::path::PathBuf>,
    /// Starting values: quick, baseline or dimensions.
    #[arg(long, value_enum)]
    pub preset: Option<Preset>,
    #[arg(long, value_enum, value_delimiter = ',')]
    pub protocols: Option<Vec<Protocol>>,
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(16..=65_507))]
    pub payloads: Option<Vec<u64>>,
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub clients: Option<Vec<u64>>,
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub windows: Option<Vec<u64>>,
    #[arg(long, value_enum, value_delimiter = ',')]
    pub io_models: Option<Vec<IoModel>>,
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..=64))]
    pub io_threads: Option<Vec<u64>>,
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(0..=10_000_000))]
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
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub udp_window: Option<u64>,
    /// Record failed runs and go on; the exit code is still 1.
    #[arg(long)]
    pub keep_going: bool,
    /// Run the cases in an order shuffled with this seed (recorded in the archive).
    #[arg(long, value_name = "SEED")]
    pub shuffle: Option<u64>,
    /// Kill a run after this many seconds (default: seconds + warmup + 30).
    #[arg(long, value_name = "S", value_parser = seconds)]
    pub case_timeout: Option<f64>,
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=(1 << 31)))]
    pub udp_send_buffer: Option<u64>,
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=(1 << 31)))]
    pub udp_recv_buffer: Option<u64>,
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=(1 << 31)))]
    pub udp_server_recv_buffer: Option<u64>,
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub udp_timeout_ms: Option<u64>,
    /// After the cases, run `soak` for this many seconds per protocol and record it.
    #[arg(long, value_name = "S", value_parser = seconds)]
    pub soak: Option<f64>,
    /// Workspace whose sources `source_sha256` covers (default: the one this binary was
    /// built from).
    #[arg(long, value_name = "DIR")]
    pub source_dir: Option<std::path::PathBuf>,
}

/// The flags of `soak`.
#[derive(Debug, Clone, Args)]
pub struct SoakArgs {
    /// Total length, split over rounds × topologies (shared 1, shared 4, sharded 4).
    #[arg(long, default_value = "60", value_parser = seconds)]
    pub seconds: f64,
    #[arg(long, value_enum, default_value = "udp")]
    pub protocol: Protocol,
    #[arg(long, value_enum, default_value = "ipv4")]
    pub address_family: AddressFamily,
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub clients: u32,
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub window: u32,
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(16..=65_507))]
    pub payload: u32,
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
            protocol: self.protocol,
            address_family: self.address_family,
            payload: self.payload as usize,
            clients: self.clients as usize,
            window: self.window as usize,
            seconds: 1.0,
            warmup: 0.0,
            io_model: IoModel::Shared,
            io_threads: 1,
            work: 0,
            udp_send_buffer: 65_536,
            udp_recv_buffer: 4_194_304,
            udp_server_recv_buffer: None,
            udp_timeout: Duration::from_millis(250),
            record_latency: true,
            fault: self.inject_fault,
        }
        .validate()
    }
}
