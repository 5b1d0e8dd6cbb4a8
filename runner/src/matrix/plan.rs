//! What a matrix measures: presets, flag overrides, the case list and its order.

use std::time::Duration;

use echomark_archive::{
    Arrival, CaseKey, Entry, ExplicitCase, IoProfile, OpenLoopPlan, Preset, QuicAxes, RunId,
    Settings, Shard, TrafficProfile,
};

use crate::case::{
    AddressFamily, Backend, Case, IoModel, OpenLoop, Protocol, UsageError, DEFAULT_UDP_RECV_BUFFER,
    DEFAULT_UDP_SEND_BUFFER, DEFAULT_UDP_TIMEOUT_MS,
};

/// Settings that do not describe a matrix this build can run; each names the JSON path of
/// the setting at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// `io_profiles` lists other profiles than every model × threads × work.
    #[error("settings.io_profiles is not a models × threads × work product")]
    NotAProduct,
    /// A count, size or list outside the command line's range, as the contract
    /// ([`echomark_archive::limits::settings_problem`]) words it.
    #[error("settings.{path}: {problem}")]
    Limit { path: String, problem: String },
    /// `case_timeout_seconds` not above 0 and at most [`MAX_CASE_TIMEOUT_SECONDS`].
    #[error(
        "settings.case_timeout_seconds: must be a number of seconds above 0 and at most {}, got {seconds}",
        MAX_CASE_TIMEOUT_SECONDS
    )]
    CaseTimeout { seconds: f64 },
    /// A QUIC transport of `quic_axes` that no endpoint may use, as the contract words it.
    #[error("settings.quic_axes: {problem}")]
    QuicAxes { problem: String },
    /// `seconds` or `soak_seconds` not above 0 and at most 3600.
    #[error("settings.{field}: must be above 0 and at most 3600, got {seconds}")]
    Duration { field: &'static str, seconds: f64 },
    /// `warmup` not 0 to 3600.
    #[error("settings.warmup: must be 0 to 3600, got {seconds}")]
    Warmup { seconds: f64 },
    /// `client_cpus` or `server_cpus` not a list of CPUs this process may use.
    #[error("settings.{field}: {source}")]
    Cpus {
        field: &'static str,
        #[source]
        source: crate::placement::PlacementError,
    },
}

/// The matrix-defining values, after preset and flags are combined.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixSpec {
    pub protocols: Vec<Protocol>,
    pub payloads: Vec<u64>,
    pub profiles: Vec<TrafficProfile>,
    pub udp_throughput_window: Option<u64>,
    pub io_models: Vec<IoModel>,
    pub io_threads: Vec<u64>,
    pub work: Vec<u64>,
    pub repetitions: u64,
    pub seconds: f64,
    pub warmup: f64,
    pub address_family: AddressFamily,
    /// An explicit case list that replaces the product (presets only).
    pub cases: Option<Vec<ExplicitCase>>,
    /// Open loop: fixed rates or a sweep; `None` measures closed-loop only.
    pub open_loop: Option<OpenLoopPlan>,
    /// QUIC's transport axes (empty: quinn's defaults).
    pub quic_axes: QuicAxes,
}

mod presets;

use presets::product;
pub use presets::LATENCY_CURVE_PERCENT;

/// Flag values that override a preset (all optional).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub protocols: Option<Vec<Protocol>>,
    pub payloads: Option<Vec<u64>>,
    pub clients: Option<Vec<u64>>,
    pub windows: Option<Vec<u64>>,
    pub udp_window: Option<u64>,
    pub io_models: Option<Vec<IoModel>>,
    pub io_threads: Option<Vec<u64>>,
    pub work: Option<Vec<u64>>,
    pub repetitions: Option<u64>,
    pub seconds: Option<f64>,
    pub warmup: Option<f64>,
    pub address_family: Option<AddressFamily>,
    /// `--rates`: fixed open-loop rates.
    pub rates: Option<Vec<u64>>,
    /// `--rate-sweep`: percentages of each case's closed-loop maximum.
    pub rate_sweep: Option<Vec<u64>>,
    pub arrival: Option<Arrival>,
    pub arrival_seed: Option<u64>,
    /// `--quic-congestion`, `--quic-gso`, …: each axis given replaces the preset's.
    pub quic_axes: QuicAxes,
}

impl MatrixSpec {
    /// Applies explicit flags. As in arknet, explicit `--windows` switch the UDP window-1
    /// rule off unless `--udp-window` is also given; `--clients`/`--windows` replace the
    /// profiles with their product.
    pub fn apply(mut self, o: Overrides) -> Self {
        if o.clients.is_some() || o.windows.is_some() {
            let clients = o
                .clients
                .unwrap_or_else(|| dedup(self.profiles.iter().map(|p| p.clients)));
            let windows = o
                .windows
                .clone()
                .unwrap_or_else(|| dedup(self.profiles.iter().map(|p| p.window)));
            self.profiles = product(&clients, &windows);
        }
        if o.windows.is_some() {
            self.udp_throughput_window = None;
        }
        if let Some(w) = o.udp_window {
            self.udp_throughput_window = Some(w);
        }
        macro_rules! take {
            ($($field:ident <- $flag:ident),*) => { $(if let Some(v) = o.$flag { self.$field = v; })* };
        }
        take!(protocols <- protocols, payloads <- payloads, io_models <- io_models,
              io_threads <- io_threads, work <- work, repetitions <- repetitions,
              seconds <- seconds, warmup <- warmup, address_family <- address_family);
        self.quic_axes = std::mem::take(&mut self.quic_axes).overridden_by(o.quic_axes);
        let wants_open = o.rates.is_some() || o.rate_sweep.is_some();
        if wants_open || o.arrival.is_some() || o.arrival_seed.is_some() {
            let mut open = self.open_loop.take().unwrap_or(OpenLoopPlan {
                rates: Vec::new(),
                sweep_percent: Vec::new(),
                arrival: Arrival::Uniform,
                seed: 1,
            });
            if let Some(rates) = o.rates {
                open.rates = dedup(rates);
                open.sweep_percent.clear();
            }
            if let Some(percent) = o.rate_sweep {
                let mut percent = dedup(percent);
                percent.sort_unstable();
                open.sweep_percent = percent;
                open.rates.clear();
            }
            if let Some(arrival) = o.arrival {
                open.arrival = arrival;
            }
            if let Some(seed) = o.arrival_seed {
                open.seed = seed;
            }
            self.open_loop = Some(open);
        }
        self
    }

    /// arknet's `io_profiles` rule: models × threads × work, model-major, without `sharded 1`
    /// when `shared` is also requested (one runtime on one thread either way).
    pub fn io_profiles(&self) -> Vec<IoProfile> {
        let has_shared = self.io_models.contains(&IoModel::Shared);
        let mut out = Vec::new();
        for model in dedup(self.io_models.iter().copied()) {
            for &threads in &dedup(self.io_threads.iter().copied()) {
                if model == IoModel::Sharded && threads == 1 && has_shared {
                    continue;
                }
                for &work in &dedup(self.work.iter().copied()) {
                    out.push(IoProfile {
                        io_model: model,
                        io_threads: threads,
                        handler_work: work,
                    });
                }
            }
        }
        out
    }

    /// Every (case, repetition) of the matrix, or of one shard of it, in execution order
    /// before any shuffle, as far as it is known before anything ran (a rate sweep adds
    /// its open-loop runs once the closed-loop ones are measured: [`planned`]).
    pub fn runs(&self, shard: Option<Shard>, backend: Backend) -> Vec<PlannedRun> {
        let settings = self.settings(SettingsExtra {
            shard,
            ..SettingsExtra::default()
        });
        planned(&settings, &[], backend)
    }

    /// The archive's `settings` for this spec.
    pub fn settings(&self, extra: SettingsExtra) -> Settings {
        Settings {
            seconds: self.seconds,
            warmup: self.warmup,
            repetitions: self.repetitions,
            payloads: self.payloads.clone(),
            profiles: self.profiles.clone(),
            udp_throughput_window: self.udp_throughput_window,
            io_profiles: self.io_profiles(),
            protocols: self.protocols.clone(),
            execution_modes: None,
            address_family: self.address_family,
            preset: extra.preset,
            shuffle_seed: extra.shuffle_seed,
            case_timeout_seconds: extra.case_timeout_seconds,
            udp_timeout_ms: extra.udp_timeout_ms,
            udp_send_buffer: extra.udp_send_buffer,
            udp_recv_buffer: extra.udp_recv_buffer,
            udp_server_recv_buffer: extra.udp_server_recv_buffer,
            keep_going: extra.keep_going,
            cases: self.cases.clone(),
            soak_seconds: extra.soak_seconds,
            shard: extra.shard,
            open_loop: self.open_loop.clone(),
            unsupported_io_profiles: Vec::new(),
            external_server: None,
            client_cpus: None,
            server_cpus: None,
            udp_batch: None,
            udp_gso: false,
            count_syscalls: false,
            quic_axes: self.quic_axes.clone(),
            until_decided: None,
            fleet: None,
        }
    }

    /// The spec an archive's settings describe (for `--resume`).
    pub fn from_settings(s: &Settings) -> Result<Self, PlanError> {
        let spec = Self {
            protocols: s.protocols.clone(),
            payloads: s.payloads.clone(),
            profiles: s.profiles.clone(),
            udp_throughput_window: s.udp_throughput_window,
            io_models: dedup(s.io_profiles.iter().map(|p| p.io_model)),
            io_threads: dedup(s.io_profiles.iter().map(|p| p.io_threads)),
            work: dedup(s.io_profiles.iter().map(|p| p.handler_work)),
            repetitions: s.repetitions,
            seconds: s.seconds,
            warmup: s.warmup,
            address_family: s.address_family,
            cases: s.cases.clone(),
            open_loop: s.open_loop.clone(),
            quic_axes: s.quic_axes.clone(),
        };
        if spec.io_profiles() != s.io_profiles {
            return Err(PlanError::NotAProduct);
        }
        Ok(spec)
    }

    /// The validated case one planned run measures; a UDP case takes the matrix's UDP
    /// options, any other case keeps the `once` defaults (it has no use for them).
    pub fn case(&self, run: &PlannedRun, settings: &Settings) -> Result<Case, UsageError> {
        let payload = usize::try_from(run.case().payload_bytes).unwrap_or(usize::MAX);
        let udp = run.case().protocol == Protocol::Udp;
        // QUIC endpoints are UDP sockets: they take the buffer requests too; only the
        // datagram protocols have a per-message timeout.
        let rides_udp = run.case().protocol.rides_udp();
        let s = if rides_udp {
            settings.clone()
        } else {
            Settings {
                udp_send_buffer: None,
                udp_recv_buffer: None,
                udp_server_recv_buffer: None,
                udp_timeout_ms: DEFAULT_UDP_TIMEOUT_MS,
                ..settings.clone()
            }
        };
        let udp_server_recv_buffer = run
            .case()
            .udp_server_recv_buffer
            .filter(|_| rides_udp)
            .or(s.udp_server_recv_buffer);
        let udp_timeout_ms = if run.case().protocol.is_datagram() {
            s.udp_timeout_ms
        } else {
            DEFAULT_UDP_TIMEOUT_MS
        };
        Case {
            backend: run.backend.clone(),
            protocol: run.case().protocol,
            address_family: self.address_family,
            payload,
            clients: usize::try_from(run.case().clients).unwrap_or(usize::MAX),
            window: usize::try_from(run.case().window).unwrap_or(usize::MAX),
            seconds: self.seconds,
            warmup: self.warmup,
            io_model: run.case().io_model,
            io_threads: usize::try_from(run.case().io_threads).unwrap_or(usize::MAX),
            work: run.case().handler_work,
            udp_send_buffer: s.udp_send_buffer.unwrap_or(DEFAULT_UDP_SEND_BUFFER),
            udp_recv_buffer: s.udp_recv_buffer.unwrap_or(DEFAULT_UDP_RECV_BUFFER),
            udp_server_recv_buffer,
            udp_timeout: Duration::from_millis(udp_timeout_ms),
            record_latency: true,
            count_syscalls: settings.count_syscalls,
            fault: None,
            open_loop: run.case().load.map(|load| OpenLoop {
                rate: load.rate,
                arrival: load.arrival,
                seed: settings.open_loop.as_ref().map_or(1, |o| o.seed),
            }),
            spin: crate::traffic::pacing::DEFAULT_SPIN,
            target: None,
            quic: run.case().quic_transport.unwrap_or_default(),
            udp_batch: settings
                .udp_batch
                .filter(|_| udp)
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            udp_gso: settings.udp_gso && udp,
            client_cpus: cpu_list(&settings.client_cpus)?,
            // With --server-cmd the list pins the server process the matrix starts; in
            // process it gives echomark's own server runtimes of its own.
            server_cpus: match settings.external_server {
                Some(_) => None,
                None => cpu_list(&settings.server_cpus)?,
            },
        }
        .validate()
    }
}

/// A recorded CPU list, parsed.
fn cpu_list(text: &Option<String>) -> Result<Option<crate::placement::CpuList>, UsageError> {
    Ok(crate::placement::recorded(text.as_deref())?)
}

/// The longest per-run timeout a matrix accepts, in seconds (a day).
pub const MAX_CASE_TIMEOUT_SECONDS: f64 = 86_400.0;

/// Checks the settings an archive carries before a matrix runs them (a resumed archive may
/// have been edited): every count, size and list within the command line's ranges
/// ([`echomark_archive::limits`]), every duration finite and in range. Each problem names
/// its JSON path.
pub fn check_settings(s: &Settings) -> Result<(), PlanError> {
    // Counts, sizes and lists first: nothing below may expand a list an edit made huge.
    if let Some((path, problem)) = echomark_archive::limits::settings_problem(s) {
        return Err(PlanError::Limit { path, problem });
    }
    let in_range = |v: f64, low: f64, high: f64, zero: bool| {
        v.is_finite() && (v > low || (zero && v == low)) && v <= high
    };
    if !in_range(s.case_timeout_seconds, 0.0, MAX_CASE_TIMEOUT_SECONDS, false) {
        return Err(PlanError::CaseTimeout {
            seconds: s.case_timeout_seconds,
        });
    }
    if let Some(problem) = s.quic_axes.transports().iter().find_map(|t| t.problem()) {
        return Err(PlanError::QuicAxes { problem });
    }
    if !in_range(s.seconds, 0.0, crate::case::MAX_SECONDS, false) {
        return Err(PlanError::Duration {
            field: "seconds",
            seconds: s.seconds,
        });
    }
    if !in_range(s.warmup, 0.0, crate::case::MAX_SECONDS, true) {
        return Err(PlanError::Warmup { seconds: s.warmup });
    }
    if let Some(soak) = s.soak_seconds {
        if !in_range(soak, 0.0, crate::case::MAX_SECONDS, false) {
            return Err(PlanError::Duration {
                field: "soak_seconds",
                seconds: soak,
            });
        }
    }
    for (field, list) in [
        ("client_cpus", &s.client_cpus),
        ("server_cpus", &s.server_cpus),
    ] {
        if let Some(list) = list {
            if let Err(source) = crate::placement::available(list) {
                return Err(PlanError::Cpus { field, source });
            }
        }
    }
    Ok(())
}

/// Run options recorded in `settings` beside the matrix itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct SettingsExtra {
    pub preset: Option<Preset>,
    pub shuffle_seed: Option<u64>,
    pub case_timeout_seconds: f64,
    pub udp_timeout_ms: u64,
    pub udp_send_buffer: Option<u64>,
    pub udp_recv_buffer: Option<u64>,
    pub udp_server_recv_buffer: Option<u64>,
    pub keep_going: bool,
    pub soak_seconds: Option<f64>,
    /// `--shard I/N`: the part of the matrix this archive measures.
    pub shard: Option<Shard>,
}

/// One planned child process: the run an archive will hold (its case key and repetition),
/// the runtime that measures it, and which of the matrix's archives it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedRun {
    /// Which of the matrix's archives it belongs to (set when several are measured at once).
    pub target: usize,
    /// The runtime that measures it (the client's, against an external server).
    pub backend: Backend,
    /// The run as the contract plans it; its key's backend is the runtime's name.
    pub id: RunId,
}

/// The runs `settings` plan given the results so far, in execution order before any
/// shuffle (the contract's [`Settings::planned_runs`]).
pub fn planned(settings: &Settings, results: &[Entry], backend: Backend) -> Vec<PlannedRun> {
    settings
        .planned_runs(backend.as_str(), results)
        .into_iter()
        .map(|run| PlannedRun::of(run, backend.clone()))
        .collect()
}

impl PlannedRun {
    /// The run `r` of an archive of `backend`.
    fn of(r: RunId, backend: Backend) -> Self {
        Self {
            target: 0,
            backend,
            id: r,
        }
    }

    /// The configuration measured: protocol, load, topology, work.
    pub fn case(&self) -> &CaseKey {
        &self.id.case
    }

    /// Which repetition of its case it is.
    pub fn repetition(&self) -> u64 {
        self.id.repetition
    }

    /// Same as [`echomark_archive::Entry::run_id`] of the entry this run will write.
    pub fn key(&self) -> RunId {
        self.id.clone()
    }

    /// The run's identity in an archive whose `backend` is `backend` (an external server's
    /// name, where the runtime only drives the client).
    pub fn key_as(&self, backend: &echomark_archive::Backend) -> RunId {
        let mut id = self.id.clone();
        id.case.backend = backend.clone();
        id
    }
}

/// Shuffles `runs` with a seeded Fisher–Yates (splitmix64), so the order is reproducible from
/// the seed recorded in the archive.
pub fn shuffle(runs: &mut [PlannedRun], seed: u64) {
    let mut random = crate::random::SplitMix64::new(seed);
    for i in (1..runs.len()).rev() {
        let j = (random.next_u64() % (i as u64 + 1)) as usize;
        runs.swap(i, j);
    }
}

fn dedup<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_flags_override_the_preset() {
        let spec = MatrixSpec::preset(Some(Preset::Baseline)).apply(Overrides {
            windows: Some(vec![1, 8]),
            clients: Some(vec![2]),
            protocols: Some(vec![Protocol::Udp]),
            repetitions: Some(1),
            ..Default::default()
        });
        assert_eq!(spec.udp_throughput_window, None);
        let windows: Vec<_> = spec
            .runs(None, Backend::Tokio)
            .iter()
            .map(|r| r.case().window)
            .collect();
        assert!(windows.contains(&8));
        assert_eq!(spec.runs(None, Backend::Tokio).len(), 5 * 3 * 2);
    }

    #[test]
    fn sharded_one_is_kept_without_shared() {
        let spec = MatrixSpec::preset(Some(Preset::Quick)).apply(Overrides {
            io_models: Some(vec![IoModel::Sharded]),
            ..Default::default()
        });
        assert_eq!(spec.io_profiles().len(), 2);
    }

    #[test]
    fn order_is_repetition_major_and_shuffle_is_seeded() {
        let spec = MatrixSpec::preset(Some(Preset::Quick));
        let runs = spec.runs(None, Backend::Tokio);
        assert!(runs
            .windows(2)
            .all(|w| w[0].repetition() <= w[1].repetition()));
        let (mut a, mut b) = (runs.clone(), runs.clone());
        shuffle(&mut a, 7);
        shuffle(&mut b, 7);
        assert_eq!(a, b);
        assert_ne!(a, runs);
        let mut keys: Vec<_> = a.iter().map(PlannedRun::key).collect();
        keys.sort();
        let mut orig: Vec<_> = runs.iter().map(PlannedRun::key).collect();
        orig.sort();
        assert_eq!(keys, orig, "a shuffle is a permutation");
    }

    #[test]
    fn settings_roundtrip_to_the_same_spec() {
        let spec = MatrixSpec::preset(Some(Preset::Baseline));
        let extra = SettingsExtra {
            preset: Some(Preset::Baseline),
            shuffle_seed: None,
            case_timeout_seconds: 30.0,
            udp_timeout_ms: 250,
            udp_send_buffer: None,
            udp_recv_buffer: None,
            udp_server_recv_buffer: None,
            keep_going: false,
            soak_seconds: None,
            shard: None,
        };
        let back = MatrixSpec::from_settings(&spec.settings(extra)).unwrap();
        assert_eq!(
            back.runs(None, Backend::Tokio),
            spec.runs(None, Backend::Tokio)
        );
    }

    #[test]
    fn plan_errors_name_the_setting_at_fault() {
        let said = |e: PlanError| e.to_string();
        assert_eq!(
            said(PlanError::NotAProduct),
            "settings.io_profiles is not a models × threads × work product"
        );
        assert_eq!(
            said(PlanError::Limit {
                path: "payloads[0]".into(),
                problem: "must be 16 to 65507, got 1".into()
            }),
            "settings.payloads[0]: must be 16 to 65507, got 1"
        );
        assert_eq!(
            said(PlanError::CaseTimeout { seconds: 0.0 }),
            "settings.case_timeout_seconds: must be a number of seconds above 0 and at most 86400, got 0"
        );
        assert_eq!(
            said(PlanError::QuicAxes {
                problem: "QUIC flow-control windows must be at least 1 byte".into()
            }),
            "settings.quic_axes: QUIC flow-control windows must be at least 1 byte"
        );
        assert_eq!(
            said(PlanError::Duration {
                field: "soak_seconds",
                seconds: 3600.5
            }),
            "settings.soak_seconds: must be above 0 and at most 3600, got 3600.5"
        );
        assert_eq!(
            said(PlanError::Warmup { seconds: -1.0 }),
            "settings.warmup: must be 0 to 3600, got -1"
        );
        let mut s = MatrixSpec::preset(Some(Preset::Baseline)).settings(SettingsExtra {
            case_timeout_seconds: 30.0,
            udp_timeout_ms: 250,
            ..SettingsExtra::default()
        });
        assert_eq!(check_settings(&s), Ok(()));
        s.seconds = 0.0;
        assert_eq!(
            check_settings(&s),
            Err(PlanError::Duration {
                field: "seconds",
                seconds: 0.0
            })
        );
    }
}
