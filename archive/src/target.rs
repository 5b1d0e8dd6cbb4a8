//! What `once --target` measured: a server echomark did not start, reached over the network
//! (loopback, a namespace's veth or a real link), and the echo contract it was held to.

use serde::{Deserialize, Serialize};

/// How messages are delimited on a TCP stream (`tcp`, `tcps`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum StreamFraming {
    /// arknet's length prefix before every message (echomark's own server).
    #[default]
    Prefix,
    /// No head: messages of exactly the payload size on a plain byte echo (any server that
    /// writes back what it reads).
    Raw,
    /// Messages of the payload size, each ended by `\n`, for a newline-delimited echo (a
    /// server that writes back each line it reads).
    Line,
}

impl StreamFraming {
    /// The spelling on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            StreamFraming::Prefix => "prefix",
            StreamFraming::Raw => "raw",
            StreamFraming::Line => "line",
        }
    }

    /// Why `protocol` cannot be spoken with this framing, or `None` when it can: every
    /// framing but the default is for TCP and TCP+TLS, the other protocols have their own.
    pub fn refuse(self, protocol: crate::key::Protocol) -> Option<String> {
        (self != StreamFraming::Prefix
            && !matches!(
                protocol,
                crate::key::Protocol::Tcp | crate::key::Protocol::Tcps
            ))
        .then(|| {
            format!(
                "--framing {} is for tcp and tcps; the other protocols have their own framing",
                self.as_str()
            )
        })
    }
}

/// How the server's TLS certificate was checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TlsVerification {
    /// Not checked (`--tls-insecure`): the handshake and encryption were measured, not trust.
    Insecure,
    /// Checked against the certificate authority of `--tls-ca`.
    Ca,
}

/// The external server of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetInfo {
    /// The socket address the clients connected to (`127.0.0.1:8080`, `[::1]:8080`).
    pub address: String,
    /// `tcp` and `tcps`: the stream framing; absent for the other protocols, whose framing
    /// the protocol fixes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub framing: Option<StreamFraming>,
    /// TLS protocols: how the certificate was checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_verification: Option<TlsVerification>,
    /// HTTP protocols: whether requests were pipelined (window > 1 on one connection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_pipelined: Option<bool>,
    /// Stream protocols: the connections the clients opened: one per client, or, for an
    /// HTTP server that does not answer pipelined requests, one per request in flight
    /// (clients × window, each with a window of 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<u64>,
    /// The way from the client to the server, as the client's host routed it (absent in
    /// older archives, or where the host could not tell).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<NetworkPath>,
    /// The machine the server ran on, where the user described it (`--server-machine`);
    /// absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_machine: Option<crate::host::Host>,
    /// QUIC protocols: the application protocol (ALPN) the client offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpn: Option<String>,
}

/// What kind of link carried the traffic between client and server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathKind {
    /// The loopback interface: the server's address is one of the client's own.
    Loopback,
    /// A virtual Ethernet pair: the other end is another network namespace of the same
    /// host (or the same namespace), never a wire.
    Veth,
    /// Any other interface: a network card, a bridge, a tunnel; the server may be on
    /// another host.
    Network,
}

impl PathKind {
    /// The spelling in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            PathKind::Loopback => "loopback",
            PathKind::Veth => "veth",
            PathKind::Network => "network",
        }
    }
}

/// The client's side of the way to the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkPath {
    pub kind: PathKind,
    /// The client's interface toward the server (`lo`, `veth-cli`, `eth0`).
    pub interface: String,
    /// That interface's MTU in bytes, where Linux reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u64>,
    /// The client's own address on that way.
    pub client_address: String,
}

/// `matrix --server-cmd`: the external server a matrix measured, started fresh for every
/// run (and for its verification) by the command, with `{port}` replaced by a free port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExternalServer {
    /// The implementation's name, which the archive's `backend` and every run carry.
    pub name: String,
    /// The command line as given, run by `sh -c`; `{port}` is replaced per start, and
    /// `{protocol}` by the run's protocol. Empty for a server already running at
    /// [`Self::address`].
    pub command: String,
    /// `--server-address`: `HOST:PORT` of a server already running (a Kubernetes Service,
    /// another team's host): the matrix neither starts nor stops it, verifies it once per
    /// protocol, and resolves the name again for every run. Absent when `command` starts it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// The address the server listens on and the clients connect to.
    pub host: String,
    /// `tcp`, `tcps`: the framing the server speaks.
    pub framing: StreamFraming,
    /// TLS protocols: how the certificate is checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_verification: Option<TlsVerification>,
    /// `--tls-ca`: the PEM file of certificate authorities the server's certificate was
    /// checked against, as given on the command line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_ca: Option<String>,
    /// The machine the server ran on: this one (the command runs here) unless
    /// `--server-machine` described another (absent in older archives).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<crate::host::Host>,
    /// `--server-version-cmd`: the command that prints the server's version, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_command: Option<String>,
    /// What the server is, as the matrix found it before measuring (absent in older
    /// archives).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<ServerIdentity>,
    /// `--server-ready-timeout`: how long a started server may take to accept or echo, in
    /// milliseconds; absent for [`DEFAULT_SERVER_READY_MS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_timeout_ms: Option<u64>,
    /// `--verify-idle`: the pause before the verification's idle check used its connection
    /// again, in milliseconds; absent for [`DEFAULT_VERIFY_IDLE_MS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_idle_ms: Option<u64>,
}

/// How long a started external server may take to accept or echo unless
/// `--server-ready-timeout` says otherwise, in milliseconds.
pub const DEFAULT_SERVER_READY_MS: u64 = 10_000;

/// How long the verification of an external server leaves a connection idle before using it
/// again unless `--verify-idle` says otherwise, in milliseconds.
pub const DEFAULT_VERIFY_IDLE_MS: u64 = 2_000;

impl ExternalServer {
    /// How long a start of this server may take to be ready.
    pub fn ready_limit(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.ready_timeout_ms.unwrap_or(DEFAULT_SERVER_READY_MS))
    }

    /// How long the verification's idle check leaves its connection idle.
    pub fn verify_idle(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.verify_idle_ms.unwrap_or(DEFAULT_VERIFY_IDLE_MS))
    }
}

/// What an external server is: its version as it reports it, the executable its command
/// starts, that file's hash and the Debian package that installed it. Each is absent where
/// it could not be found out (a script has no package; a server may print no version).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerIdentity {
    /// The command whose output is `version`: `--server-version-cmd`, or the executable with
    /// `--version` when it answered that within a moment and with exit status 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_command: Option<String>,
    /// Its output, trimmed (first 512 bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The executable the command starts, resolved through `PATH`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executable: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executable_sha256: Option<String>,
    /// The Debian package and version that own the executable (`dpkg -S`, `dpkg-query`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
}

impl ExternalServer {
    /// The framing of `protocol` against this server: its own for `tcp` and `tcps`, the
    /// protocol's for the rest.
    pub fn framing_for(&self, protocol: crate::key::Protocol) -> StreamFraming {
        match protocol {
            crate::key::Protocol::Tcp | crate::key::Protocol::Tcps => self.framing,
            _ => StreamFraming::Prefix,
        }
    }
}

/// How the server process of one run went: what was started, how it ended, what it cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerProcess {
    /// The command with its port filled in.
    pub command: String,
    /// Seconds from start until it accepted (TCP) or echoed (UDP); absent if it never did.
    pub ready_seconds: Option<f64>,
    /// Exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    /// True when it had exited on its own before it was told to stop.
    pub exited_early: bool,
    /// True when it ignored SIGTERM and was killed.
    pub killed: bool,
    /// User + system CPU of the server (and the children it waited for), from wait4.
    pub cpu_seconds: Option<f64>,
    /// Its peak resident set size, from wait4.
    pub peak_rss_bytes: Option<u64>,
    /// The last lines it wrote to stderr (at most 2 KiB).
    pub stderr_tail: String,
    /// Whether it ran in another network namespace than the client, read from
    /// `/proc/PID/ns/net` once it was ready (absent in older archives, or when it never was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub separate_network_namespace: Option<bool>,
    /// Processes the server left behind (a daemon it forked that outlived its process group),
    /// found reparented to the matrix once the server was stopped, and killed (absent when
    /// none were, and in older archives).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub left_behind: u64,
    /// The CPUs the server's threads were allowed on once it was ready (the union of every
    /// thread's `Cpus_allowed_list`), as `taskset -c` writes a list (absent in older
    /// archives, or when it never was ready).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<String>,
    /// Whether `matrix --server-cpus` pinned the server process to them before it started.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
    /// What the server's io_uring rings did during the run, from the report it printed when
    /// it stopped: present when the server is echomark's `serve --backend io-uring`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ring: Option<RingCounters>,
    /// The server's system calls over its whole run, every thread, from the report it
    /// printed when it stopped: present when it is echomark's `serve --count-syscalls`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscalls: Option<u64>,
}

/// The counters of `serve --backend io-uring`, summed over its rings: the proof that each
/// technique ran (multishot receives, buffers taken from the provided-buffer ring,
/// registered files) and the system calls its event loops made.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RingCounters {
    /// `io_uring_enter` calls made by the event loops (submitting, waiting or both).
    pub enters: u64,
    /// Submission queue entries handed to the kernel.
    pub submissions: u64,
    /// Completion queue entries reaped.
    pub completions: u64,
    /// Receive completions of a multishot receive that stayed armed (`IORING_CQE_F_MORE`).
    pub multishot_receives: u64,
    /// Receive completions whose bytes came in a buffer the kernel took from the provided
    /// buffer ring (`IORING_CQE_F_BUFFER`).
    pub ring_buffers_used: u64,
    /// Receives that found the buffer ring empty (`ENOBUFS`) and were armed again.
    pub ring_buffers_exhausted: u64,
    /// Receives armed: once per connection or socket with multishot receive (again after
    /// one ended), once per read without.
    pub receives_armed: u64,
    /// Connections (or sockets) whose IO went through a registered file slot.
    pub registered_files: u64,
    /// Other system calls the loops made for connections: `setsockopt`, slot updates,
    /// `shutdown`.
    pub other_syscalls: u64,
    /// Looks for completions that did not wait for one (`--uring-busy-poll`; each is an
    /// `io_uring_enter` too, except with SQPOLL, where the loop reads the queue itself).
    /// Zero, and absent, when the loops slept while there was nothing to do.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub busy_polls: u64,
    /// Echoes sent straight from the provided buffer their message arrived in
    /// (`--uring-zero-copy`), the buffer given back when the send completed. Zero, and
    /// absent, when every echo was copied out first.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub zero_copy_sends: u64,
}

impl RingCounters {
    /// Adds another ring's counters.
    pub fn add(&mut self, o: &RingCounters) {
        self.enters += o.enters;
        self.submissions += o.submissions;
        self.completions += o.completions;
        self.multishot_receives += o.multishot_receives;
        self.ring_buffers_used += o.ring_buffers_used;
        self.ring_buffers_exhausted += o.ring_buffers_exhausted;
        self.receives_armed += o.receives_armed;
        self.registered_files += o.registered_files;
        self.other_syscalls += o.other_syscalls;
        self.busy_polls += o.busy_polls;
        self.zero_copy_sends += o.zero_copy_sends;
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl VerificationRecord {
    /// Whether the server answered pipelined requests in order; `false` for an HTTP server
    /// whose `pipelined-window` check came out `unsupported`, which is then measured with
    /// one request in flight per connection.
    pub fn pipelines(&self) -> bool {
        !self
            .checks
            .iter()
            .any(|c| c.name == "pipelined-window" && c.outcome == "unsupported")
    }
}

/// One check of `verify`, as the archive keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerificationCheck {
    pub name: String,
    /// `passed`, `failed`, `skipped`, or `unsupported` (an optional part of the contract
    /// the server lacks, measured without: HTTP pipelining).
    pub outcome: String,
    pub detail: String,
}

/// The verification of an external server for one protocol, before it was measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerificationRecord {
    pub protocol: crate::key::Protocol,
    pub passed: bool,
    pub checks: Vec<VerificationCheck>,
}
