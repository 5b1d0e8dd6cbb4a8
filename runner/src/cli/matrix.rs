//! The flags of `matrix`, and the request they make of the library.

use std::net::SocketAddr;

use clap::Args;
use echomark_archive::Preset;
use echomark_runner::case::{
    self, AddressFamily, Arrival, Backend, IoModel, Protocol, StreamFraming,
};
use echomark_runner::matrix::plan::Overrides;
use echomark_runner::matrix::{ArchiveTarget, MatrixRequest, RunOptions};
use echomark_runner::placement::{self, CpuList};

use super::target::{family_of, read_machine, tls_trust};
use super::FlagError;
use super::{
    seconds, warmup_seconds, BUFFER_RANGE, COUNT_RANGE, PAYLOAD_RANGE, RATE_RANGE, THREADS_RANGE,
    UDP_TIMEOUT_RANGE, WORK_RANGE,
};

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
        "udp_server_recv_buffer", "udp_timeout_ms", "udp_batch", "udp_gso", "count_syscalls", "soak", "shard", "rates", "rate_sweep",
        "arrival", "arrival_seed", "backends", "client_cpus", "server_cpus", "together",
        "quic_congestion", "quic_gso", "quic_initial_mtu", "quic_stream_window",
        "quic_connection_window", "until_decided", "max_repetitions", "budget", "margin",
        "level", "host_name",
    ])]
    pub resume: Option<std::path::PathBuf>,
    /// Async runtimes to measure, each into its own archive; with more than one, --out is a
    /// folder (one BACKEND.json each) and their runs are shuffled together. IO models a
    /// backend cannot run (monoio: shared N > 1) are left out of its archive.
    #[arg(long, value_delimiter = ',', value_parser = super::playing(echomark_archive::Role::InProcess))]
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
    #[arg(long, value_parser = clap::value_parser!(u64).range(echomark_archive::limits::REPETITIONS))]
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
    /// UDP on tokio: up to N datagrams per system call on every socket (2 to 64).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(echomark_archive::limits::UDP_BATCH))]
    pub udp_batch: Option<u64>,
    /// With --udp-batch: every UDP run's batches also segmented (GSO) and coalesced (GRO) by
    /// the kernel, each datagram still checked alone.
    #[arg(long, requires = "udp_batch")]
    pub udp_gso: bool,
    /// Every run counts its process's system calls over the measured interval (see once
    /// --count-syscalls); recorded in the settings and each run's metrics.
    #[arg(long)]
    pub count_syscalls: bool,
    #[command(flatten)]
    pub quic: super::quic::QuicAxesArgs,
    /// After the cases, run `soak` for this many seconds per protocol and record it.
    #[arg(long, value_name = "S", value_parser = seconds, conflicts_with = "server_cmd")]
    pub soak: Option<f64>,
    /// After the planned repetitions, add more (interleaved between the sides) to every
    /// comparison the rule leaves undecided, look by look, until it is decided, reaches
    /// --max-repetitions or --budget is spent. The sides are the archives (backends or
    /// servers: each against the first), or with one archive the IO models of each load.
    #[arg(long)]
    pub until_decided: bool,
    /// A short name for this machine on the pages (ASCII letters, digits, '.', '_', '-';
    /// at most 32), in place of the one derived from its CPU and kernel. Never read from
    /// the system: the archive records only what is given here.
    #[arg(long, value_name = "NAME", value_parser = host_name)]
    pub host_name: Option<String>,
    /// --until-decided: the most repetitions a side (default 30).
    #[arg(long, value_name = "N", requires = "until_decided",
          value_parser = clap::value_parser!(u64).range(echomark_archive::limits::REPETITIONS))]
    pub max_repetitions: Option<u64>,
    /// --until-decided: the most time the added repetitions may take (90s, 20m, 2h).
    #[arg(long, value_name = "DURATION", requires = "until_decided", value_parser = duration)]
    pub budget: Option<f64>,
    /// --until-decided: the equivalence margin for throughput, in percent (default 5).
    #[arg(long, value_name = "PERCENT", requires = "until_decided", value_parser = margin_percent)]
    pub margin: Option<f64>,
    /// --until-decided: the confidence level over all looks, in percent (default 95).
    #[arg(long, value_name = "PERCENT", requires = "until_decided", value_parser = margin_percent)]
    pub level: Option<f64>,
    /// Measure an external server instead of echomark's own: this command (run by `sh -c`,
    /// `{port}` replaced by a free port) is started fresh for every run and verified first.
    /// Repeat it (with one --server-name each) to measure several servers with their runs
    /// interleaved, one archive each in the --out folder.
    #[arg(long, value_name = "CMD", requires = "server_name", group = "server", conflicts_with_all = ["backends", "resume"])]
    pub server_cmd: Vec<String>,
    /// Measure a server that is already running at HOST:PORT (a Kubernetes Service, a host
    /// of its own): the matrix neither starts nor stops it, verifies it first for every
    /// protocol, and resolves the name again for every run. With one --server-name.
    #[arg(long, value_name = "HOST:PORT", requires = "server_name", group = "server",
          conflicts_with_all = ["server_cmd", "backends", "resume", "server_host", "server_cpus"])]
    pub server_address: Option<String>,
    /// Measure every run by a fleet of N generator hosts (`fleet generate --coordinator`
    /// this host's --fleet-listen, or the pods of `deploy/kubernetes`), released at one
    /// barrier, their histograms merged exactly; this matrix coordinates them.
    #[arg(long, value_name = "N", requires_all = ["fleet_listen", "server"],
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub fleet_size: Option<u64>,
    /// Where the fleet's generators connect to this matrix (port 0 picks one, said on
    /// stderr).
    #[arg(long, value_name = "ADDR:PORT", requires = "fleet_size")]
    pub fleet_listen: Option<SocketAddr>,
    /// How many of the fleet's generators measure each case together, each count a load of
    /// its own (default: all of them), e.g. 1,2,4 for a scaling curve.
    #[arg(long, value_delimiter = ',', value_name = "LIST", requires = "fleet_size",
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub fleet_generators: Option<Vec<u64>>,
    /// How long to wait for every generator of the fleet to connect (default 300 s).
    #[arg(long, value_name = "S", value_parser = seconds, requires = "fleet_size")]
    pub fleet_wait: Option<f64>,
    /// The name the pages give the external server (its `backend`), one per --server-cmd.
    #[arg(long, value_name = "NAME", requires = "server")]
    pub server_name: Vec<String>,
    /// A command that prints the server's version (`nginx -v`), recorded in its archive; one
    /// per --server-cmd when given. Without it the matrix asks the server's executable for
    /// `--version` and keeps the answer when it comes at once.
    #[arg(long, value_name = "CMD", requires = "server")]
    pub server_version_cmd: Vec<String>,
    /// The address the external server listens on (default: the address family's loopback).
    #[arg(long, value_name = "IP", requires = "server")]
    pub server_host: Option<std::net::IpAddr>,
    /// How long a started server may take to accept or echo (default 10 s): more for servers
    /// that start slowly, such as a JVM's.
    #[arg(long, value_name = "S", value_parser = seconds, requires = "server")]
    pub server_ready_timeout: Option<f64>,
    /// How long the verification leaves a connection idle before it checks the server
    /// still echoes on it (default 2 s): less for a server that closes idle connections
    /// sooner, more to check it keeps them longer.
    #[arg(long, value_name = "S", value_parser = seconds, requires = "server")]
    pub verify_idle: Option<f64>,
    /// tcp, tcps against --server-cmd: `prefix` or `raw`.
    #[arg(long, value_enum, default_value = "prefix", requires = "server")]
    pub framing: StreamFraming,
    /// TLS protocols against --server-cmd: accept its certificate without checking it.
    #[arg(long, requires = "server", conflicts_with = "tls_ca")]
    pub tls_insecure: bool,
    /// TLS protocols against --server-cmd: check its certificate against the CAs in this
    /// PEM file (for the name of --server-host).
    #[arg(long, value_name = "FILE", requires = "server")]
    pub tls_ca: Option<std::path::PathBuf>,
    /// The machine the server runs on, when --server-cmd starts it on another one (through
    /// ssh, say): the JSON `describe-host` prints there. Default: this machine.
    #[arg(long, value_name = "FILE", requires = "server")]
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
          value_parser = clap::value_parser!(u64).range(echomark_archive::limits::SWEEP_PERCENT))]
    pub rate_sweep: Option<Vec<u64>>,
    /// Open loop: evenly spaced messages or a Poisson process (default uniform).
    #[arg(long, value_enum)]
    pub arrival: Option<Arrival>,
    /// Open loop: the seed of every Poisson schedule (default 1).
    #[arg(long, value_name = "SEED")]
    pub arrival_seed: Option<u64>,
    /// Pin every run's client runtime threads to these CPUs, one CPU each in turn (`0`,
    /// `0-1`); recorded in the archive and in every run.
    #[arg(long, value_name = "LIST", value_parser = super::available_cpus)]
    pub client_cpus: Option<CpuList>,
    /// Pin the server to these CPUs: a --server-cmd server process before it starts (all
    /// its threads inherit them), or in process echomark's own server, on runtimes of its
    /// own apart from the client's; recorded in the archive and in every run.
    #[arg(long, value_name = "LIST", value_parser = super::available_cpus)]
    pub server_cpus: Option<CpuList>,
    /// In process, unpinned, as arknet measures: every runtime thread runs clients and the
    /// server side of their connections. Without it (and without --client-cpus and
    /// --server-cpus) `--preset baseline` places client and server apart, on two halves of
    /// the CPUs this process may use, wherever there are at least two.
    #[arg(long, conflicts_with_all = ["client_cpus", "server_cpus", "server_cmd"])]
    pub together: bool,
    /// Workspace whose sources `source_sha256` covers (default: the one this binary was
    /// built from).
    #[arg(long, value_name = "DIR")]
    pub source_dir: Option<std::path::PathBuf>,
    /// Measure at most N runs now, then stop with the archive saved (complete: false) and
    /// exit 0; `--resume` takes the next N. Lets another tool take its turn between slices
    /// of one matrix (scripts/measure-agreement interleaves rounds so).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub pause_after: Option<u64>,
}

impl MatrixArgs {
    /// The external servers the `--server-cmd` / `--server-name` pairs name, in order.
    fn external_servers(&self) -> Result<Vec<echomark_archive::ExternalServer>, FlagError> {
        if let Some(address) = &self.server_address {
            return Ok(vec![self.running_server(address)?]);
        }
        if self.server_cmd.len() != self.server_name.len() {
            return Err(FlagError::ServerNameCount {
                commands: self.server_cmd.len(),
                names: self.server_name.len(),
            });
        }
        if self.server_cmd.is_empty() {
            return Ok(Vec::new());
        }
        if !self.server_version_cmd.is_empty()
            && self.server_version_cmd.len() != self.server_cmd.len()
        {
            return Err(FlagError::VersionCommandCount {
                commands: self.server_cmd.len(),
                versions: self.server_version_cmd.len(),
            });
        }
        // What every server shares, read and checked once.
        let shared = self.shared_server_settings()?;
        let mut servers: Vec<echomark_archive::ExternalServer> = Vec::new();
        for (index, (command, name)) in self.server_cmd.iter().zip(&self.server_name).enumerate() {
            if !command.contains("{port}") {
                return Err(FlagError::ServerCmdWithoutPort);
            }
            check_server_name(name)?;
            if servers.iter().any(|s| &s.name == name) {
                return Err(FlagError::DuplicateServerName { name: name.clone() });
            }
            servers.push(echomark_archive::ExternalServer {
                name: name.clone(),
                command: command.clone(),
                version_command: self.server_version_cmd.get(index).cloned(),
                ..shared.clone()
            });
        }
        Ok(servers)
    }

    /// `--fleet-size` and its generator counts, each at most the fleet.
    fn fleet_plan(&self) -> Result<Option<echomark_archive::FleetPlan>, FlagError> {
        let (Some(size), Some(listen)) = (self.fleet_size, self.fleet_listen) else {
            return Ok(None);
        };
        let generators = self.fleet_generators.clone().unwrap_or(vec![size]);
        if let Some(&n) = generators.iter().find(|&&n| n > size) {
            return Err(FlagError::FleetGenerators { asked: n, size });
        }
        Ok(Some(echomark_archive::FleetPlan {
            size,
            generators,
            listen: listen.to_string(),
            launcher: std::env::var(echomark_archive::fleet::LAUNCHER_ENV)
                .ok()
                .filter(|l| !l.trim().is_empty()),
        }))
    }

    /// `--server-address`: the one running server, named by its --server-name.
    fn running_server(&self, address: &str) -> Result<echomark_archive::ExternalServer, FlagError> {
        let [name] = self.server_name.as_slice() else {
            return Err(FlagError::ServerNameCount {
                commands: 1,
                names: self.server_name.len(),
            });
        };
        check_server_name(name)?;
        let host = match address.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0) => {
                host.trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_string()
            }
            _ => {
                return Err(FlagError::ServerAddress {
                    address: address.to_string(),
                })
            }
        };
        Ok(echomark_archive::ExternalServer {
            name: name.clone(),
            address: Some(address.to_string()),
            host,
            // Not this machine's: whoever runs it may describe it with --server-machine.
            machine: match &self.server_machine {
                Some(file) => Some(read_machine(file)?),
                None => None,
            },
            ..self.shared_server_settings()?
        })
    }

    /// The settings every `--server-cmd` server shares (its name and command left empty):
    /// address, framing, TLS trust and machine.
    fn shared_server_settings(&self) -> Result<echomark_archive::ExternalServer, FlagError> {
        let family = self.address_family.unwrap_or(AddressFamily::Ipv4);
        let host = self.server_host.unwrap_or_else(|| case::loopback(family));
        if family_of(&SocketAddr::new(host, 0)) != family {
            return Err(FlagError::ServerHostFamily { host, family });
        }
        Ok(echomark_archive::ExternalServer {
            name: String::new(),
            command: String::new(),
            host: host.to_string(),
            framing: self.framing,
            tls_verification: tls_trust(&self.tls_ca, self.tls_insecure).map(|t| t.verification()),
            tls_ca: self.tls_ca.as_ref().map(|p| p.display().to_string()),
            machine: Some(match &self.server_machine {
                Some(file) => read_machine(file)?,
                None => echomark_runner::matrix::host::describe(),
            }),
            version_command: None,
            identity: None,
            ready_timeout_ms: self.server_ready_timeout.map(milliseconds),
            verify_idle_ms: self.verify_idle.map(milliseconds),
            address: None,
        })
    }

    /// The CPUs of client and server: as given, or the baseline's default (apart, on two
    /// halves of this process's CPUs) for an in-process baseline that names neither.
    fn placement(&self) -> Result<(Option<CpuList>, Option<CpuList>), FlagError> {
        let defaulted = self.preset == Some(Preset::Baseline)
            && !self.together
            && self.resume.is_none()
            && self.server_cmd.is_empty()
            && self.client_cpus.is_none()
            && self.server_cpus.is_none();
        if !defaulted {
            return Ok((self.client_cpus.clone(), self.server_cpus.clone()));
        }
        let allowed = placement::allowed_for_thread()?;
        Ok(match placement::halves(&allowed) {
            Some((client, server)) => (Some(client), Some(server)),
            None => (None, None),
        })
    }

    /// The library's request for these flags.
    pub fn to_request(&self) -> Result<MatrixRequest, FlagError> {
        let archive = match (&self.resume, &self.out) {
            (Some(resume), Some(out)) if resume != out => return Err(FlagError::ResumeWithOut),
            (Some(resume), _) => ArchiveTarget::Resume(resume.clone()),
            (None, Some(out)) => ArchiveTarget::New(out.clone()),
            (None, None) => return Err(FlagError::NoArchive),
        };
        let placement = self.placement()?;
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
                quic_axes: self.quic.axes(),
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
                udp_batch: self.udp_batch,
                udp_gso: self.udp_gso,
                count_syscalls: self.count_syscalls,
                soak: self.soak,
                until_decided: self.until_decided.then(|| {
                    echomark_runner::matrix::UntilDecidedOptions {
                        max_repetitions: self.max_repetitions.unwrap_or(30),
                        budget_seconds: self.budget,
                        margin: self.margin.unwrap_or(5.0) / 100.0,
                        level: self.level.unwrap_or(95.0) / 100.0,
                    }
                }),
                external_servers: self.external_servers()?,
                host_name: self.host_name.clone(),
                client_cpus: placement.0,
                server_cpus: placement.1,
                fleet: self.fleet_plan()?,
                fleet_wait: self.fleet_wait.map(std::time::Duration::from_secs_f64),
            },
            backends: {
                let mut list = self.backends.clone().unwrap_or(vec![Backend::Tokio]);
                list.sort();
                list.dedup();
                list
            },
            source_dir: self.source_dir.clone(),
            pause_after: self.pause_after,
        })
    }
}

/// A server's name becomes a file name (NAME.json) and the pages' backend: letters,
/// digits, `-`, `_` and `.`, not first.
fn check_server_name(name: &str) -> Result<(), FlagError> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        || name.starts_with('.')
    {
        return Err(FlagError::ServerName {
            name: name.to_string(),
        });
    }
    Ok(())
}

/// Seconds from the command line as the archive records them: whole milliseconds, at least 1.
fn milliseconds(seconds: f64) -> u64 {
    (seconds * 1000.0).round().max(1.0) as u64
}

/// `--host-name`: a short, safe name.
fn host_name(text: &str) -> Result<String, HostNameError> {
    match echomark_archive::limits::host_name_problem(text) {
        Some(reason) => Err(HostNameError {
            name: text.to_string(),
            reason,
        }),
        None => Ok(text.to_string()),
    }
}

/// A `--host-name` that is not a short, safe name, for the contract's `reason`
/// ([`echomark_archive::limits::host_name_problem`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct HostNameError {
    pub name: String,
    pub reason: String,
}

/// `--budget`: a duration (`90s`, `20m`, `2h`, or plain seconds).
fn duration(text: &str) -> Result<f64, echomark_runner::matrix::DurationError> {
    echomark_runner::matrix::parse_duration(text)
}

/// `--margin`: a percentage above 0 and below 100.
fn margin_percent(text: &str) -> Result<f64, echomark_runner::matrix::DurationError> {
    echomark_runner::matrix::parse_percent(text)
}
