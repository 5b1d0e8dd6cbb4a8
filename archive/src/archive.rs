//! The raw archive: one JSON file per matrix run, keeping every repetition and its provenance.
//!
//! Top-level keys are arknet's schema 2 (`schema_version` 2, `recorded_at_utc`, `backend`,
//! `git_head`, `git_status`, `source_sha256`, `executable_sha256`, `runner_sha256`, `host`,
//! `settings`, `results`, `complete`, `failed_measurements`) plus an `echomark` object that
//! names the tool and the format version.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::host::Host;
use crate::key::{AddressFamily, Arrival, CaseKey, IoModel, OfferedLoad, Protocol, RunId};
use crate::metrics::Metrics;
use crate::soak::SoakReport;

/// arknet's archive schema this layout extends.
pub const ARCHIVE_SCHEMA_VERSION: u32 = 2;
/// Version of echomark's additions to the layout; bumped on any incompatible change.
pub const FORMAT_VERSION: u32 = 1;
/// The producer named in the `echomark` object.
pub const TOOL_NAME: &str = "echomark-runner";

/// Identifies the producer and the version of echomark's additions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EchomarkInfo {
    pub tool: String,
    pub tool_version: String,
    pub format_version: u32,
    /// How `source_sha256` was computed, so anyone can recompute it.
    pub source_hash_rule: String,
}

/// How the measuring binary was built: the compiler, the target, the profile and the
/// versions of the measured stack (absent in older archives).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Toolchain {
    /// `rustc -V`, e.g. `rustc 1.95.0 (59807616e 2026-04-14)`.
    pub rustc: String,
    /// The target triple.
    pub target: String,
    /// `release` or `debug`.
    pub profile: String,
    pub opt_level: String,
    pub debug_info: String,
    /// Name → version of the crates that do the measured work (from `Cargo.lock`); a crate
    /// locked at several versions lists them all, joined with " + ".
    pub dependencies: std::collections::BTreeMap<String, String>,
}

/// A named starting point for a matrix; explicit flags override its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Preset {
    /// Everything in well under a minute: for the README and CI.
    #[serde(rename = "quick")]
    Quick,
    /// arknet's baseline: 64/1024/16384 B; 1 × 1 and 16 × 16 (UDP window 1); shared 1/2/4,
    /// sharded 2/4; 3 repetitions of 1 s.
    #[serde(rename = "baseline")]
    Baseline,
    /// arknet's dimensions matrix: 16 clients × windows 1/4/16/64; shared 1, shared 4,
    /// sharded 4.
    #[serde(rename = "dimensions")]
    Dimensions,
    /// The UDP receive-buffer isolation experiment: 16 clients, shared 1, no warmup;
    /// 16,384 B × windows 1/16/64 × server receive buffers 1/2/4 MiB, plus 1,472 B at
    /// window 64 and 1,024 B at window 1,024 (4 MiB).
    #[serde(rename = "udp-buffers")]
    #[cfg_attr(feature = "clap", value(name = "udp-buffers"))]
    UdpBuffers,
    /// Latency against offered load: TCP, UDP and HTTP at 1,024 B, 16 clients × window 1,
    /// shared 1 and sharded 2; the closed-loop maximum first, then open loop at 10, 30, 50,
    /// 70, 80, 90, 95 and 100% of it; 3 repetitions of 2 s.
    #[serde(rename = "latency-curve")]
    #[cfg_attr(feature = "clap", value(name = "latency-curve"))]
    LatencyCurve,
    /// QUIC under receive-buffer pressure: `udp`, `quic`, `quic-streams` and `quic-datagram`
    /// at 1,024 B, 16 clients × window 16, shared 1, with the server's UDP receive buffer
    /// requested at 8 KiB, 256 KiB and 4 MiB.
    #[serde(rename = "quic-buffers")]
    #[cfg_attr(feature = "clap", value(name = "quic-buffers"))]
    QuicBuffers,
    /// QUIC on the baseline's loads: `quic`, `quic-streams` and `quic-datagram` beside the
    /// protocols they are weighed against (`tcp`, `tcps`, `udp`), with the baseline's
    /// payloads (datagrams up to what fits one), profiles, IO models and repetitions. Its own
    /// preset rather than part of `baseline`, which stays arknet's matrix, so that baseline
    /// datasets stay comparable with arknet's and with each other.
    #[serde(rename = "quic")]
    Quic,
}

impl Preset {
    /// Every preset.
    pub const ALL: [Preset; 7] = [
        Preset::Quick,
        Preset::Baseline,
        Preset::Dimensions,
        Preset::UdpBuffers,
        Preset::LatencyCurve,
        Preset::QuicBuffers,
        Preset::Quic,
    ];

    /// The spelling used in JSON and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Preset::Quick => "quick",
            Preset::Baseline => "baseline",
            Preset::Dimensions => "dimensions",
            Preset::UdpBuffers => "udp-buffers",
            Preset::LatencyCurve => "latency-curve",
            Preset::QuicBuffers => "quic-buffers",
            Preset::Quic => "quic",
        }
    }
}

/// `settings.udp_timeout_ms` when `--udp-timeout-ms` is not given: how long a UDP client
/// waits for an echo before it counts the datagram lost.
pub const DEFAULT_UDP_TIMEOUT_MS: u64 = 250;

/// `settings.case_timeout_seconds` without `--case-timeout` is `seconds + warmup` plus this
/// margin: setup, two drains and the client barrier fit well inside it.
pub const CASE_TIMEOUT_MARGIN_SECONDS: f64 = 30.0;

/// One traffic profile of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrafficProfile {
    pub clients: u64,
    pub window: u64,
}

/// One topology × work combination of the matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IoProfile {
    pub io_model: IoModel,
    pub io_threads: u64,
    pub handler_work: u64,
}

/// The requested matrix, as in arknet's schema 2 plus echomark's run options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub seconds: f64,
    pub warmup: f64,
    pub repetitions: u64,
    pub payloads: Vec<u64>,
    pub profiles: Vec<TrafficProfile>,
    /// When 1, every UDP case uses window 1 whatever the profile says.
    pub udp_throughput_window: Option<u64>,
    pub io_profiles: Vec<IoProfile>,
    pub protocols: Vec<Protocol>,
    /// Always null: echomark has one execution mode.
    pub execution_modes: Option<Vec<String>>,
    pub address_family: AddressFamily,
    /// The preset the matrix started from, if any.
    pub preset: Option<Preset>,
    /// Seed of the case-order shuffle; null when cases run in arknet's nested order.
    pub shuffle_seed: Option<u64>,
    /// Per-run limit after which the child is killed.
    pub case_timeout_seconds: f64,
    pub udp_timeout_ms: u64,
    pub udp_send_buffer: Option<u64>,
    pub udp_recv_buffer: Option<u64>,
    pub udp_server_recv_buffer: Option<u64>,
    /// Whether the matrix continued after a failed run.
    pub keep_going: bool,
    /// An explicit case list (presets such as `udp-buffers`); when set it replaces the
    /// product of the lists above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cases: Option<Vec<ExplicitCase>>,
    /// Length of the sustained test run after the cases, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak_seconds: Option<f64>,
    /// The part of the matrix this archive measures, when the matrix is split over several
    /// runners (`--shard I/N`); absent for a whole matrix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// Open loop (`--rates`, `--rate-sweep`); absent for a closed-loop matrix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<OpenLoopPlan>,
    /// IO profiles of the matrix that this archive's backend cannot run, left out of its
    /// plan by [`crate::capabilities::unsupported`], with the reason (absent when none are).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unsupported_io_profiles: Vec<UnsupportedProfile>,
    /// `--server-cmd`: the external server measured instead of echomark's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_server: Option<crate::target::ExternalServer>,
    /// `--client-cpus`: the CPUs every run's client runtime threads were pinned to, one CPU
    /// each, as `taskset -c` writes a list (absent when the scheduler placed them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cpus: Option<String>,
    /// `--server-cpus`: the CPUs every external server process was pinned to before it
    /// started, or in process the CPUs echomark's server had runtimes of its own on (absent
    /// when the server ran where the scheduler or the client's threads put it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpus: Option<String>,
    /// `--udp-batch`: every UDP run's sockets moved up to this many datagrams per system
    /// call (absent for one per call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_batch: Option<u64>,
    /// `--udp-gso`: every UDP run's batches were also segmented (GSO) and coalesced (GRO) by
    /// the kernel.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub udp_gso: bool,
    /// `--count-syscalls`: every run counted its process's system calls over the measured
    /// interval (`metrics.syscalls`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub count_syscalls: bool,
    /// QUIC: the transport axes; every QUIC case is measured at each combination. Absent
    /// when every QUIC case runs with quinn's defaults.
    #[serde(default, skip_serializing_if = "crate::quic::QuicAxes::is_empty")]
    pub quic_axes: crate::quic::QuicAxes,
    /// `--until-decided`: repetitions are added to the comparisons still undecided, by
    /// this rule, up to its last look; absent for a fixed number of repetitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_decided: Option<crate::decided::UntilDecided>,
    /// `--fleet-size`: the matrix was measured by a fleet of generator hosts, each case at
    /// each generator count; absent for one client process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<crate::fleet::FleetPlan>,
}

/// An IO profile a backend cannot run, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnsupportedProfile {
    pub io_model: IoModel,
    pub io_threads: u64,
    pub reason: String,
}

impl Settings {
    /// The settings without what is particular to one archive of a matrix (the IO profiles
    /// its backend cannot run, the external server it measured): what every archive one
    /// `matrix` invocation wrote has in common.
    pub fn shared_matrix(&self) -> Settings {
        Settings {
            unsupported_io_profiles: Vec::new(),
            external_server: None,
            ..self.clone()
        }
    }

    /// The matrix's IO profiles (or explicit cases' models) that `backend` cannot run, each
    /// once, in matrix order: what `unsupported_io_profiles` must say.
    pub fn unsupported_for(&self, backend: &str) -> Vec<UnsupportedProfile> {
        let models: Vec<(IoModel, u64)> = match &self.cases {
            Some(cases) => cases.iter().map(|c| (c.io_model, c.io_threads)).collect(),
            None => self
                .io_profiles
                .iter()
                .map(|p| (p.io_model, p.io_threads))
                .collect(),
        };
        let mut out: Vec<UnsupportedProfile> = Vec::new();
        for (io_model, io_threads) in models {
            let Some(reason) = crate::capabilities::unsupported(backend, io_model, io_threads)
            else {
                continue;
            };
            if !out
                .iter()
                .any(|u| u.io_model == io_model && u.io_threads == io_threads)
            {
                out.push(UnsupportedProfile {
                    io_model,
                    io_threads,
                    reason: reason.to_string(),
                });
            }
        }
        out
    }
}

/// How a matrix measures open-loop load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenLoopPlan {
    /// Fixed offered rates (messages per second over all clients): every case of the
    /// matrix is measured at each, open-loop only.
    pub rates: Vec<u64>,
    /// A sweep: every case is first measured closed-loop; once all its repetitions
    /// passed, it is measured open-loop at these percentages of the median closed-loop
    /// throughput (rounded to whole messages per second).
    pub sweep_percent: Vec<u64>,
    pub arrival: Arrival,
    /// Seed of every Poisson schedule of the matrix.
    pub seed: u64,
}

/// One of `count` deterministic parts of a matrix: the configurations at positions
/// `index − 1`, `index − 1 + count`, … of the plan's first-seen order, with every repetition
/// of each, so a configuration is measured whole by one runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shard {
    /// 1-based.
    pub index: u64,
    pub count: u64,
}

impl Shard {
    /// Whether `1 ≤ index ≤ count`.
    pub fn is_valid(&self) -> bool {
        self.count >= 1 && (1..=self.count).contains(&self.index)
    }
}

impl std::str::FromStr for Shard {
    type Err = String;

    /// `I/N`, for example `2/5`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (i, n) = text
            .split_once('/')
            .ok_or_else(|| format!("{text:?} is not I/N (for example 2/5)"))?;
        let parse = |t: &str| {
            t.trim()
                .parse::<u64>()
                .map_err(|_| format!("{text:?} is not I/N (for example 2/5)"))
        };
        let shard = Shard {
            index: parse(i)?,
            count: parse(n)?,
        };
        if shard.is_valid() {
            Ok(shard)
        } else {
            Err(format!("shard {text}: I must be from 1 to N"))
        }
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// One case of an explicit case list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplicitCase {
    pub protocol: Protocol,
    pub payload_bytes: u64,
    pub clients: u64,
    pub window: u64,
    pub io_model: IoModel,
    pub io_threads: u64,
    pub handler_work: u64,
    /// UDP: the server socket's receive-buffer request for this case.
    pub udp_server_recv_buffer: Option<u64>,
}

impl ExplicitCase {
    /// The closed-loop configuration this case stands for when `backend` measures it.
    pub fn case_key(&self, backend: crate::backend::Backend) -> CaseKey {
        CaseKey {
            backend,
            implementation: IMPLEMENTATION.to_string(),
            protocol: self.protocol,
            payload_bytes: self.payload_bytes,
            clients: self.clients,
            window: self.window,
            io_model: self.io_model,
            io_threads: self.io_threads,
            handler_work: self.handler_work,
            udp_server_recv_buffer: self.udp_server_recv_buffer,
            load: None,
            quic_transport: None,
            generators: None,
        }
    }
}

/// The sustained test recorded with a matrix: the child's command, exit code and report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SoakRecord {
    pub protocol: Protocol,
    pub seconds: f64,
    pub command: Vec<String>,
    pub returncode: Option<i32>,
    pub passed: bool,
    /// The report `echomark-runner soak` printed; null when it printed none.
    pub report: Option<SoakReport>,
    pub stderr: String,
}

/// One repetition of one case: the configuration it measured, the process facts and the
/// parsed metrics.
///
/// The configuration is the contract's one [`RunId`] (its [`CaseKey`] and repetition); in
/// the JSON its fields stay flat beside the others, as arknet writes them (see
/// `EntryRecord`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(from = "EntryRecord<'static>")]
pub struct Entry {
    /// The configuration and the repetition: unique within an archive.
    pub run: RunId,
    pub address_family: AddressFamily,
    /// Full argv of the child process.
    pub command: Vec<String>,
    /// Exit code; 124 after the case timeout, 128 + signal when killed by a signal.
    pub returncode: Option<i32>,
    pub stderr: String,
    /// Parsed stdout; absent when stdout was not one strict, finite JSON metrics object.
    pub metrics: Option<Metrics>,
    /// Raw stdout, kept only when it could not be parsed.
    pub stdout: Option<String>,
    /// The runner's verdict when the run failed (arknet's schema-2 texts).
    pub error: Option<String>,
    /// Position of this run in the execution order (0-based, after any shuffle; a rate
    /// sweep's open-loop runs come after the closed-loop runs they derive from).
    pub order: u64,
    /// UTC time the child was started.
    pub started_at_utc: String,
    /// Wall time of the child process, seconds.
    pub wall_seconds: f64,
    /// `--server-cmd`: the server process of this run.
    pub server: Option<crate::target::ServerProcess>,
}

/// An [`Entry`] as the archive's JSON lays it out: the case key's fields flat, in arknet's
/// order, without the implementation (every entry of an echomark archive is
/// [`IMPLEMENTATION`]). Read owned; written borrowed from the entry, so saving an archive
/// copies nothing.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryRecord<'a> {
    repetition: u64,
    protocol: Protocol,
    payload_bytes: u64,
    clients: u64,
    window: u64,
    io_model: IoModel,
    io_threads: u64,
    handler_work: u64,
    /// UDP: the server socket's receive-buffer request when the case sets its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    udp_server_recv_buffer: Option<u64>,
    /// Open loop: the offered load this run was measured at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    load: Option<OfferedLoad>,
    /// QUIC: the transport settings, when they are not quinn's defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    quic_transport: Option<crate::quic::QuicTransport>,
    /// A fleet run: the generator hosts that measured it together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    generators: Option<u64>,
    backend: Cow<'a, crate::backend::Backend>,
    address_family: AddressFamily,
    command: Cow<'a, [String]>,
    returncode: Option<i32>,
    stderr: Cow<'a, str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metrics: Option<Cow<'a, Metrics>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stdout: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<Cow<'a, str>>,
    order: u64,
    started_at_utc: Cow<'a, str>,
    wall_seconds: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    server: Option<Cow<'a, crate::target::ServerProcess>>,
}

impl From<EntryRecord<'_>> for Entry {
    fn from(r: EntryRecord<'_>) -> Self {
        Entry {
            run: RunId {
                case: CaseKey {
                    backend: r.backend.into_owned(),
                    implementation: IMPLEMENTATION.to_string(),
                    protocol: r.protocol,
                    payload_bytes: r.payload_bytes,
                    clients: r.clients,
                    window: r.window,
                    io_model: r.io_model,
                    io_threads: r.io_threads,
                    handler_work: r.handler_work,
                    udp_server_recv_buffer: r.udp_server_recv_buffer,
                    load: r.load,
                    quic_transport: r.quic_transport,
                    generators: r.generators,
                },
                repetition: r.repetition,
            },
            address_family: r.address_family,
            command: r.command.into_owned(),
            returncode: r.returncode,
            stderr: r.stderr.into_owned(),
            metrics: r.metrics.map(Cow::into_owned),
            stdout: r.stdout.map(Cow::into_owned),
            error: r.error.map(Cow::into_owned),
            order: r.order,
            started_at_utc: r.started_at_utc.into_owned(),
            wall_seconds: r.wall_seconds,
            server: r.server.map(Cow::into_owned),
        }
    }
}

impl Serialize for Entry {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let case = &self.run.case;
        EntryRecord {
            repetition: self.run.repetition,
            protocol: case.protocol,
            payload_bytes: case.payload_bytes,
            clients: case.clients,
            window: case.window,
            io_model: case.io_model,
            io_threads: case.io_threads,
            handler_work: case.handler_work,
            udp_server_recv_buffer: case.udp_server_recv_buffer,
            load: case.load,
            quic_transport: case.quic_transport,
            generators: case.generators,
            backend: Cow::Borrowed(&case.backend),
            address_family: self.address_family,
            command: Cow::Borrowed(&self.command),
            returncode: self.returncode,
            stderr: Cow::Borrowed(&self.stderr),
            metrics: self.metrics.as_ref().map(Cow::Borrowed),
            stdout: self.stdout.as_deref().map(Cow::Borrowed),
            error: self.error.as_deref().map(Cow::Borrowed),
            order: self.order,
            started_at_utc: Cow::Borrowed(&self.started_at_utc),
            wall_seconds: self.wall_seconds,
            server: self.server.as_ref().map(Cow::Borrowed),
        }
        .serialize(serializer)
    }
}

/// The implementation name of every echomark run in a [`CaseKey`].
pub const IMPLEMENTATION: &str = "echomark";

impl Entry {
    /// The configuration this entry measured.
    pub fn case_key(&self) -> &CaseKey {
        &self.run.case
    }

    /// The configuration and the repetition: unique within an archive.
    pub fn run_id(&self) -> &RunId {
        &self.run
    }
}

/// A whole raw archive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Archive {
    pub schema_version: u32,
    pub echomark: EchomarkInfo,
    /// When the matrix started, ISO-8601 UTC with microseconds.
    pub recorded_at_utc: String,
    pub backend: crate::backend::Backend,
    pub git_head: Option<String>,
    pub git_status: Option<String>,
    pub source_sha256: String,
    pub executable_sha256: String,
    /// SHA-256 of the binary that drove the matrix (the runner is its own executable).
    pub runner_sha256: String,
    pub host: Host,
    pub settings: Settings,
    pub results: Vec<Entry>,
    pub complete: bool,
    /// Number of entries that carry an `error`.
    pub failed_measurements: u64,
    /// The sustained tests run after the cases (`--soak`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub soak: Vec<SoakRecord>,
    /// How the binary was built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolchain: Option<Toolchain>,
    /// `--server-cmd`: the external server's verification per protocol, before any run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verification: Vec<crate::target::VerificationRecord>,
    /// `--until-decided`: what the added repetitions took and why each comparison stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_decided: Option<crate::decided::UntilDecidedRecord>,
}
