//! The normalised run model every format is read into: one [`Run`] per repetition, the
//! [`ArchiveFile`] it came from and the [`Dataset`] that groups them.

use std::collections::BTreeSet;
use std::path::PathBuf;

use echomark_archive::{AddressFamily, CaseKey, Metric, Protocol};
use serde::Serialize;

/// Which program wrote a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Program {
    /// `echomark-runner once`.
    Echomark,
    /// arknet's `arknet_loopback_benchmark` (the callback program).
    ArknetLoopback,
    /// arknet's `arknet_coroutine_benchmark` (the native program).
    ArknetCoroutine,
    /// Another load generator, imported by `echomark import` (the file names which).
    Imported,
}

/// The archive layout a file uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Echomark,
    ArknetSchema1,
    ArknetSchema2,
    /// `echomark import`: another load generator's output.
    Imported,
}

/// One repetition of one configuration, normalised.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    /// Index of the file in [`Dataset::files`].
    pub file: usize,
    /// Index in that file's `results`.
    pub index: usize,
    pub key: CaseKey,
    pub repetition: u64,
    pub program: Program,
    pub address_family: AddressFamily,
    /// echomark's strict verdict.
    pub passed: bool,
    /// Why the run failed; empty when it passed.
    pub reasons: Vec<String>,
    /// arknet's dimensions-rule verdict, for comparison.
    pub arknet_passed: bool,
    pub roundtrips_per_second: Option<f64>,
    pub payload_mib_per_second: Option<f64>,
    pub rtt_p50_us: Option<f64>,
    pub rtt_p95_us: Option<f64>,
    pub rtt_p99_us: Option<f64>,
    pub rtt_p999_us: Option<f64>,
    pub peak_rss_bytes: Option<f64>,
    /// CPU seconds as the program reported them (interval differs by program).
    pub cpu_seconds: Option<f64>,
    /// Percent of one logical CPU (arknet-reports.md §3.1).
    pub cpu_percent: Option<f64>,
    /// The CPU interval was not reported and had to be estimated.
    pub cpu_estimated: bool,
    pub messages: Option<u64>,
    pub messages_sent: Option<u64>,
    /// Verified echoes of measured-phase messages (echomark), else `messages`.
    pub messages_received: Option<u64>,
    pub server_messages_received: Option<u64>,
    pub content_errors: u64,
    pub order_errors: u64,
    pub udp_lost_messages: u64,
    /// Datagram echoes that came back after their timeout (received, not lost); `None`
    /// where the archive predates the count.
    pub udp_late_messages: Option<u64>,
    pub kernel_udp_rcvbuf_errors_delta: Option<u64>,
    /// The kernel's own readings behind the UDP loss (echomark archives since they record
    /// them).
    pub kernel_readings: Option<KernelReadings>,
    pub udp_server_receive_buffer_bytes: Option<u64>,
    pub udp_server_receive_buffer_requested_bytes: Option<u64>,
    pub udp_send_buffer_requested_bytes: Option<u64>,
    /// The child's argv joined with spaces.
    pub command: String,
    /// Open-loop runs: what the schedule achieved.
    pub open_loop: Option<RunOpenLoop>,
    /// How the run was measured beyond its key and figures, as echomark's own archives
    /// record it (none of it in arknet's or an imported archive).
    #[serde(flatten)]
    pub instruments: RunInstruments,
    /// Imported runs: what the other tool measured that echomark's runs do not have.
    pub imported: Option<Box<ImportedFigures>>,
}

/// What echomark's archives record about how a run was measured, beyond its key and its
/// figures: where its threads ran, how UDP datagrams moved, the system calls and server
/// counters behind an echo, QUIC's statistics. Runs of other formats have none of it
/// ([`Default`]).
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunInstruments {
    /// Where the run's client and server threads ran (echomark archives that record it).
    pub placement: Option<RunPlacement>,
    /// UDP, `--udp-batch`: datagrams per system call on both sides (absent for one).
    pub udp_batch: Option<u64>,
    /// UDP, `--udp-gso`: those batches segmented (GSO) and coalesced (GRO) by the kernel.
    pub udp_gso: bool,
    /// `serve --backend io-uring`: the `io_uring_enter` calls its rings counted over the
    /// run's echoes (warmup and measured messages sent); absent for every other server.
    pub server_enters_per_echo: Option<f64>,
    /// `serve --backend io-uring --uring-busy-poll`: the looks for completions its loops made
    /// without waiting, over the run's echoes; absent where the loops slept when idle.
    pub server_busy_polls_per_echo: Option<f64>,
    /// `--count-syscalls`: the system calls of the measuring process per measured echo
    /// (clients and, in process, the server), counted by the kernel.
    pub syscalls_per_echo: Option<f64>,
    /// `serve --count-syscalls` under `matrix --server-cmd`: the server process's system
    /// calls over its whole run, over the run's echoes (warmup and measured).
    pub server_syscalls_per_echo: Option<f64>,
    /// `matrix --server-cmd`: the server process's CPU time (wait4, its whole life) over
    /// the run's echoes, in microseconds.
    pub server_cpu_us_per_echo: Option<f64>,
    /// QUIC runs: quinn's connection statistics, summed over the clients.
    pub quic: Option<echomark_archive::QuicCounters>,
    /// A fleet run: how its generators were released, their clocks and where each ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fleet: Option<Box<RunFleet>>,
}

/// What a fleet run records beside its merged figures, as the pages use it: the release's
/// start skew and each generator's host, clock and CPUs (its own full metrics stay in the
/// archive).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunFleet {
    /// The host the coordinator ran on.
    pub coordinator_host: String,
    /// The generators' start skews (start minus the release, in the coordinator's clock):
    /// their median and the one farthest from zero, with the largest uncertainty, in µs.
    pub start_skew_median_us: f64,
    pub start_skew_worst_us: f64,
    pub start_skew_uncertainty_us: f64,
    /// Each generator, in index order.
    pub generators: Vec<RunGenerator>,
}

/// One generator of a fleet run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunGenerator {
    pub index: u64,
    pub host: String,
    pub logical_cpus: u64,
    /// Its clock against the coordinator's, before and after the run.
    pub clock: echomark_archive::ClockRecord,
    /// Its start minus the release instant and that skew's uncertainty, in µs.
    pub start_skew_us: f64,
    pub start_skew_uncertainty_us: f64,
    /// The CPUs its client's threads were allowed on, as its own metrics record them
    /// (`None` where they do not), and whether echomark pinned them there.
    pub client_cpus: Option<echomark_archive::cpus::CpuList>,
    pub client_pinned: bool,
    /// The kind of path its client's host routed it to the server over, where recorded: a
    /// loopback or veth path keeps it on the server's machine.
    pub path: Option<echomark_archive::PathKind>,
}

/// What an imported run says beyond the figures every run has: how its latency was kept,
/// what the tool counts as latency, its errors and iperf3's stream figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImportedFigures {
    /// `None` when the run recorded no latency (no request answered, or iperf3).
    pub fidelity: Option<echomark_archive::LatencyFidelity>,
    /// The tool's latency unit, microseconds.
    pub resolution_us: f64,
    pub loop_kind: echomark_archive::Loop,
    pub latency_correction: bool,
    pub errors: u64,
    pub non_2xx: u64,
    /// Requests cut off in flight when the run's time ended.
    pub unfinished: Option<u64>,
    pub stream: Option<echomark_archive::StreamFigures>,
}

/// Where one run's threads ran, as the runner and the matrix read it back from the kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunPlacement {
    /// The CPUs the client's threads were allowed on.
    pub client: echomark_archive::cpus::CpuList,
    /// Whether `--client-cpus` pinned them.
    pub client_pinned: bool,
    /// In process: echomark's own server ran in the client's process.
    pub server_in_process: bool,
    /// In process with `--server-cpus`: the server had runtimes of its own, apart from the
    /// client's threads; false where each runtime thread ran clients and the server side of
    /// their connections.
    pub server_own_runtimes: bool,
    /// The server's CPUs: the client's in process (its own runtimes' apart), an external
    /// server's as the matrix read them; `None` where nobody recorded them.
    pub server: Option<echomark_archive::cpus::CpuList>,
    /// Whether the server was pinned (`--client-cpus` in process on shared threads,
    /// `--server-cpus` otherwise).
    pub server_pinned: bool,
}

/// The open-loop figures of one run that the pages show.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RunOpenLoop {
    /// Messages sent per second of the measured interval.
    pub achieved_rate: f64,
    /// Fewer than 99% of the scheduled messages went out: not a point on a curve.
    pub saturated: bool,
    pub late_sends: u64,
    /// Latency from the actual send time.
    pub service_p99_us: f64,
    /// How late the sender wrote its messages.
    pub schedule_lag_p99_us: f64,
}

impl Run {
    /// The value of one aggregated metric.
    pub fn metric(&self, m: Metric) -> Option<f64> {
        match m {
            Metric::RoundtripsPerSecond => self.roundtrips_per_second,
            Metric::PayloadMibPerSecond => self.payload_mib_per_second,
            Metric::RttP50Us => self.rtt_p50_us,
            Metric::RttP95Us => self.rtt_p95_us,
            Metric::RttP99Us => self.rtt_p99_us,
            Metric::RttP999Us => self.rtt_p999_us,
            Metric::PeakRssBytes => self.peak_rss_bytes,
            Metric::CpuPercent => self.cpu_percent,
        }
    }
}

/// The `RcvbufErrors` counter before and after a UDP run, and the IP fragmentation and
/// reassembly deltas over it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct KernelReadings {
    pub rcvbuf_errors_before: u64,
    pub rcvbuf_errors_after: u64,
    pub frag_creates: Option<u64>,
    pub reasm_reqds: Option<u64>,
    pub reasm_oks: Option<u64>,
    pub reasm_fails: Option<u64>,
}

/// What a file says about itself.
#[derive(Debug, Clone, Serialize)]
pub struct ArchiveFile {
    #[serde(skip)]
    pub path: PathBuf,
    /// File name, used on pages and in links.
    pub name: String,
    pub format: Format,
    pub backend: Option<String>,
    pub recorded_at_utc: Option<String>,
    pub git_head: Option<String>,
    pub dirty: bool,
    pub source_sha256: Option<String>,
    pub executable_sha256: Option<String>,
    pub runner_sha256: Option<String>,
    pub host: HostInfo,
    pub seconds: f64,
    pub warmup: f64,
    pub repetitions: u64,
    pub address_family: AddressFamily,
    pub complete: bool,
    pub runs: usize,
    pub shuffle_seed: Option<u64>,
    pub preset: Option<echomark_archive::Preset>,
    /// The protocols the matrix requested.
    pub protocols: Vec<Protocol>,
    /// echomark: `--keep-going` and `--soak` of the matrix.
    pub keep_going: bool,
    pub soak_seconds: Option<f64>,
    /// echomark archives: the UDP loss timeout of the matrix.
    pub udp_timeout_ms: Option<u64>,
    /// Sustained tests recorded with the matrix.
    pub soak: Vec<SoakResult>,
    /// echomark archives: how the runner was built (absent in older archives).
    pub toolchain: Option<echomark_archive::Toolchain>,
    /// echomark archives of `matrix --server-cmd`: the external server they measured.
    pub external_server: Option<echomark_archive::ExternalServer>,
    /// echomark archives: the part of a split matrix this file holds (`--shard I/N`).
    pub shard: Option<echomark_archive::Shard>,
    /// echomark archives of runs against a target: how the client reached the server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reach: Option<Reach>,
    /// echomark archives: when the first and the last run started (UTC, RFC 3339, as the
    /// archive writes them, so they compare as text).
    #[serde(skip)]
    pub run_span: Option<(String, String)>,
    /// Imported archives: the tool that measured and its version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub imported: Option<ImportedSource>,
    /// echomark archives: the matrix settings as recorded, from which the reproduction
    /// commands are derived.
    #[serde(skip)]
    pub matrix: Option<Box<echomark_archive::Settings>>,
}

/// Who measured an imported archive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImportedSource {
    pub tool: echomark_archive::Tool,
    /// As the tool or the import said it; `None` when neither did.
    pub version: Option<String>,
    /// Whether the host was recorded (`--host`).
    pub host_recorded: bool,
}

impl ImportedSource {
    /// `oha 1.16.0`, or the tool's name alone.
    pub fn label(&self) -> String {
        match &self.version {
            Some(v) => format!("{} {v}", self.tool),
            None => self.tool.to_string(),
        }
    }
}

/// How the clients of a file's runs reached an external server: the path their host routed
/// them over, and where the server ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reach {
    /// The path every run of the file took (the validator insists they agree).
    pub path: echomark_archive::NetworkPath,
    /// Whether the server ran in another network namespace than the client, where the
    /// archive records it (`--server-cmd` does, per run).
    pub separate_namespace: Option<bool>,
    /// The server's machine, where the archive describes it.
    pub server_machine: Option<HostInfo>,
}

/// The machine a file was measured on, as any format describes it (every field optional).
/// Fields are in name order, which is how `summary.json` lists them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HostInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    /// The CPU frequency governor (echomark).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_governor: Option<String>,
    /// CPU family, model and stepping (echomark).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_signature: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logical_cpus: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// macOS machine model (arknet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The name the user gave the machine (`matrix --host-name`, echomark).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os_build: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub physical_cpus: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processor: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub release: Option<String>,
    /// Whether simultaneous multithreading was on (echomark).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub smt_active: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
}

/// The outcome of one sustained test.
#[derive(Debug, Clone, Serialize)]
pub struct SoakResult {
    pub protocol: Protocol,
    pub seconds: f64,
    pub passed: bool,
    pub verified_echoes: u64,
    pub rounds: u64,
    /// The first failure, when it failed.
    pub failure: Option<String>,
}

/// Whether two time spans (first and last start, RFC 3339 text, which compares as time)
/// share a moment.
pub fn spans_overlap(a: (&str, &str), b: (&str, &str)) -> bool {
    a.0 <= b.1 && b.0 <= a.1
}

/// The runtime of an external server that is `echomark-runner serve` (its `--backend`,
/// tokio when the command names none); `None` for any other server.
pub fn serve_runtime(server: &echomark_archive::ExternalServer) -> Option<String> {
    let words: Vec<&str> = server.command.split_whitespace().collect();
    let at = words.iter().position(|w| {
        std::path::Path::new(w).file_name() == Some(std::ffi::OsStr::new("echomark-runner"))
    })?;
    if words.get(at + 1) != Some(&"serve") {
        return None;
    }
    let rest = &words[at..];
    let backend = rest
        .windows(2)
        .find(|w| w[0] == "--backend")
        .map(|w| w[1])
        .or_else(|| rest.iter().find_map(|w| w.strip_prefix("--backend=")))
        .unwrap_or("tokio");
    Some(backend.to_string())
}

/// A folder of archives measured together.
#[derive(Debug, Clone, Serialize)]
pub struct Dataset {
    /// The folder name.
    pub name: String,
    pub files: Vec<ArchiveFile>,
    pub runs: Vec<Run>,
    /// Things worth knowing that do not change any verdict.
    pub warnings: Vec<crate::error::Problem>,
}

impl Dataset {
    /// The machine the dataset was measured on, as its first archive describes it (a
    /// dataset is one campaign on one host); `None` for a dataset without archives.
    pub fn host(&self) -> Option<&HostInfo> {
        self.files.first().map(|f| &f.host)
    }

    /// Repetitions per configuration, as the first archive's settings give them (0 without one).
    pub fn repetitions(&self) -> u64 {
        self.files.first().map_or(0, |f| f.repetitions)
    }

    /// Whether the dataset measured servers echomark did not start (`--server-cmd`): each
    /// in its own process, only the client is echomark's.
    pub fn measures_external_servers(&self) -> bool {
        self.files.iter().any(|f| f.external_server.is_some())
    }

    /// Whether every server the dataset measured was already running (`--server-address`):
    /// no run has the server's own CPU, only the measuring clients'.
    pub fn measures_running_servers(&self) -> bool {
        !self.files.is_empty()
            && self.files.iter().all(|f| {
                f.external_server
                    .as_ref()
                    .is_some_and(|s| s.address.is_some())
            })
    }

    /// Whether every server the dataset measured is echomark's own `serve` (`--backend` and
    /// its options), each in its own process: the runtime comparison with one client for
    /// every server. The servers' names, one per file, when so (two servers may share a
    /// runtime with different options, as io-uring with and without busy polling).
    pub fn own_servers_apart(&self) -> Option<BTreeSet<String>> {
        let names: Vec<String> = self
            .files
            .iter()
            .map(|f| {
                let server = f.external_server.as_ref()?;
                serve_runtime(server).map(|_| server.name.clone())
            })
            .collect::<Option<_>>()?;
        let distinct: BTreeSet<String> = names.iter().cloned().collect();
        (distinct.len() == names.len() && distinct.len() >= 2).then_some(distinct)
    }

    /// The kind of path between clients and servers: the first file's that recorded one;
    /// loopback when none did (echomark's own server in the client's process, arknet).
    pub fn path_kind(&self) -> echomark_archive::PathKind {
        self.files
            .iter()
            .find_map(|f| f.reach.as_ref())
            .map_or(echomark_archive::PathKind::Loopback, |r| r.path.kind)
    }

    /// Whether the backends that measured `protocol` here had their runs interleaved in time
    /// (one matrix shuffling them together): `Some(true)` when every two backends' spans of
    /// runs overlap, `Some(false)` when none do (measured one after another), `None` with
    /// fewer than two backends, unknown spans or a mix.
    pub fn backends_interleaved(&self, protocol: Protocol) -> Option<bool> {
        let mut spans: std::collections::BTreeMap<&str, (&str, &str)> = Default::default();
        for f in self
            .files
            .iter()
            .filter(|f| f.protocols.contains(&protocol))
        {
            let (first, last) = f.run_span.as_ref()?;
            let span = spans
                .entry(f.backend.as_deref()?)
                .or_insert((first.as_str(), last.as_str()));
            *span = (span.0.min(first.as_str()), span.1.max(last.as_str()));
        }
        let spans: Vec<(&str, &str)> = spans.into_values().collect();
        let mut pairs = 0;
        let mut overlapping = 0;
        for (i, a) in spans.iter().enumerate() {
            for b in &spans[i + 1..] {
                pairs += 1;
                overlapping += usize::from(spans_overlap(*a, *b));
            }
        }
        match overlapping {
            _ if pairs == 0 => None,
            n if n == pairs => Some(true),
            0 => Some(false),
            _ => None,
        }
    }

    /// When the dataset was recorded: its earliest archive's time, if any archive says.
    /// Whether any run of the dataset was measured by another load generator.
    pub fn has_imported(&self) -> bool {
        self.files.iter().any(|f| f.imported.is_some())
    }

    /// Whether every run of the dataset was measured by another load generator.
    pub fn only_imported(&self) -> bool {
        !self.files.is_empty() && self.files.iter().all(|f| f.imported.is_some())
    }

    /// Whether every archive is complete and was measured by a build of a clean tree: the
    /// better witness when datasets are chosen between.
    pub fn is_sound(&self) -> bool {
        self.files.iter().all(|f| f.complete && !f.dirty)
    }

    /// The first and last run start over every archive (RFC 3339 text), when recorded.
    pub fn run_span(&self) -> Option<(&str, &str)> {
        let spans = || self.files.iter().filter_map(|f| f.run_span.as_ref());
        Some((
            spans().map(|s| s.0.as_str()).min()?,
            spans().map(|s| s.1.as_str()).max()?,
        ))
    }

    pub fn recorded_at(&self) -> Option<&str> {
        self.files
            .iter()
            .filter_map(|f| f.recorded_at_utc.as_deref())
            .min()
    }
}

/// What a reader knows about one entry, whatever its format.
pub struct EntryFacts<'a> {
    pub index: usize,
    pub key: CaseKey,
    pub repetition: u64,
    pub program: Program,
    pub address_family: AddressFamily,
    pub returncode: Option<i64>,
    /// The runner's verdict text, when it judged the run failed.
    pub runner_error: Option<&'a str>,
    /// The case as requested, for the echo check.
    pub request: echomark_archive::CaseParameters,
    /// The child's argv joined with spaces.
    pub command: String,
    /// How the run was measured, as echomark's archives record it (default for others).
    pub instruments: RunInstruments,
}

#[cfg(test)]
pub(crate) mod tests {
    use echomark_archive::IoModel;

    use super::*;

    /// A passing run of `protocol` (1,024 B, 16 clients × window 1, shared 1) for unit tests.
    pub(crate) fn run(protocol: Protocol, repetition: u64) -> Run {
        Run {
            file: 0,
            index: 0,
            key: CaseKey {
                backend: "tokio".into(),
                implementation: "echomark".into(),
                protocol,
                payload_bytes: 1024,
                clients: 16,
                window: 1,
                io_model: IoModel::Shared,
                io_threads: 1,
                handler_work: 0,
                udp_server_recv_buffer: None,
                load: None,
                quic_transport: None,
                generators: None,
            },
            repetition,
            program: Program::Echomark,
            address_family: AddressFamily::Ipv4,
            passed: true,
            reasons: Vec::new(),
            arknet_passed: true,
            roundtrips_per_second: Some(1000.0),
            payload_mib_per_second: Some(2.0),
            rtt_p50_us: Some(10.0),
            rtt_p95_us: Some(11.0),
            rtt_p99_us: Some(12.0),
            rtt_p999_us: Some(13.0),
            peak_rss_bytes: Some(1e6),
            cpu_seconds: Some(0.5),
            cpu_percent: Some(50.0),
            cpu_estimated: false,
            messages: Some(1000),
            messages_sent: Some(1000),
            messages_received: Some(1000),
            server_messages_received: Some(1000),
            content_errors: 0,
            order_errors: 0,
            udp_lost_messages: 0,
            udp_late_messages: None,
            kernel_udp_rcvbuf_errors_delta: None,
            kernel_readings: None,
            udp_server_receive_buffer_bytes: None,
            udp_server_receive_buffer_requested_bytes: None,
            udp_send_buffer_requested_bytes: None,
            command: String::new(),
            open_loop: None,
            instruments: RunInstruments::default(),
            imported: None,
        }
    }

    /// A passing fleet run of TCP (1,024 B, 4 generators × 16 clients × window 1, …) by
    /// `generators` generators at `rate` merged round trips/s: generator `i` on host
    /// `gen-i`, its client on CPU 0 over a veth pair, its clock `i` µs off (±10 µs) and
    /// drifting `i` ppm (±5 ppm), starting `100 + 10 i + repetition` µs late (±10 µs).
    pub(crate) fn fleet_run(generators: u64, repetition: u64, rate: f64) -> Run {
        let mut r = run(Protocol::Tcp, repetition);
        r.key.window = 1;
        r.key.generators = Some(generators);
        r.roundtrips_per_second = Some(rate);
        let one = |i: u64| RunGenerator {
            index: i,
            host: format!("gen-{i}"),
            logical_cpus: 1,
            clock: echomark_archive::ClockRecord {
                offset_us: i as f64,
                uncertainty_us: 10.0,
                delay_us: 20.0,
                exchanges: 32,
                offset_end_us: -(i as f64),
                uncertainty_end_us: 10.0,
                drift_ppm: i as f64,
                drift_uncertainty_ppm: 5.0,
            },
            start_skew_us: (100 + 10 * i + repetition) as f64,
            start_skew_uncertainty_us: 10.0,
            client_cpus: Some("0".parse().expect("a CPU list")),
            client_pinned: false,
            path: Some(echomark_archive::PathKind::Veth),
        };
        let all: Vec<RunGenerator> = (0..generators).map(one).collect();
        let skews: Vec<f64> = all.iter().map(|g| g.start_skew_us).collect();
        r.instruments.fleet = Some(Box::new(RunFleet {
            coordinator_host: "gen-0".into(),
            start_skew_median_us: echomark_archive::plan::median(&skews).unwrap_or(0.0),
            start_skew_worst_us: skews.iter().copied().fold(0.0, f64::max),
            start_skew_uncertainty_us: 10.0,
            generators: all,
        }));
        r
    }
}
