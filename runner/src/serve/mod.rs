//! `echomark-runner serve`: echomark's server alone, on a chosen backend and IO model, for
//! clients in another process, namespace or host (`once --target`), or any ordinary client.
//!
//! It prints one JSON line with the address it listens on, echoes until SIGTERM or SIGINT,
//! then prints one JSON report of what its server side counted. Messages are echoed as by
//! the in-process server (same framings, same synthetic work), except that a message
//! without echomark's 16-byte header is echoed too and counted as foreign, so curl, a
//! WebSocket client or a load generator work against it. With `--framing raw` a TCP
//! connection is a plain byte echo.
//!
//! This module holds what both backends share: the options, the lines printed, the
//! counters, the TLS certificate and each connection's handshakes (on tokio, as for an
//! in-process measurement); [`tokio`] and [`uring`] (monoio) start the listeners and the
//! echo tasks on their runtimes, and [`ring`] serves on io_uring directly, without a runtime.

pub mod limits;
pub mod ring;
pub mod tokio;
pub mod uring;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use echomark_archive::{IoModel, Protocol, StreamFraming};
use serde::Serialize;

use echomark_archive::Role;

use crate::case::{Backend, Fault, UsageError};
use crate::instruments::counters::ServerStats;
use crate::message::{PHASE_MEASURED, PHASE_WARMUP};
use crate::traffic::connect::{self, ServerConn};
use crate::traffic::quic::limits::{ServerLimits, DEFAULT_MAX_CONNECTIONS};
use crate::traffic::stream::{IdleLimit, ServerDuty};
use crate::traffic::tls::TlsServer;

/// How long a stopping server waits for its tasks before it lets them go.
const STOP_GRACE: Duration = Duration::from_millis(500);
/// How often the main thread looks for a stop signal.
const POLL: Duration = Duration::from_millis(20);
/// Bytes a raw echo reads at a time.
const RAW_CHUNK: usize = 64 * 1024;

/// What `serve` runs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// One that plays [`Role::Server`]: tokio, monoio or io-uring.
    pub backend: Backend,
    /// `--backend io-uring`: which of its techniques are on.
    pub ring: ring::Tuning,
    /// Test only (`--inject-fault`): make the server misbehave, to show clients catch it.
    pub fault: Option<Fault>,
    pub protocol: Protocol,
    pub listen: SocketAddr,
    pub framing: StreamFraming,
    pub io_model: IoModel,
    pub io_threads: usize,
    pub work: u64,
    pub udp_send_buffer: u64,
    pub udp_recv_buffer: u64,
    /// TLS protocols: where to write the self-signed certificate (PEM) for clients' `--tls-ca`.
    pub tls_certificate_out: Option<PathBuf>,
    /// `--server-cpus`: the CPUs the runtime threads are pinned to, one CPU each (the whole
    /// process is narrowed to the list first); `None` leaves placement to the scheduler.
    pub server_cpus: Option<crate::placement::CpuList>,
    /// `--count-syscalls`: count the process's system calls from start to stop.
    pub count_syscalls: bool,
    /// UDP, `--udp-batch N`: up to N datagrams per `recvmmsg`/`sendmmsg` (tokio only).
    pub udp_batch: Option<usize>,
    /// UDP, `--udp-gso` (with `--udp-batch`): GRO on the sockets, echoes sent as GSO runs.
    pub udp_gso: bool,
    /// `--idle-timeout`: how long a TCP connection may send nothing before it is closed;
    /// `None` keeps silent connections open.
    pub idle_timeout: Option<Duration>,
    /// QUIC protocols: the endpoints' transport settings (`--quic-*`).
    pub quic: echomark_archive::QuicTransport,
    /// QUIC protocols: `--quic-max-connections`, connections served at once (`None`:
    /// [`DEFAULT_MAX_CONNECTIONS`]).
    pub quic_max_connections: Option<usize>,
}

/// The first line `serve` prints.
#[derive(Debug, Serialize)]
pub struct Listening {
    pub listening: String,
    pub protocol: Protocol,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub framing: Option<StreamFraming>,
    pub backend: String,
    pub io_model: IoModel,
    pub io_threads: usize,
    pub work: u64,
    /// `--backend io-uring`: its techniques, each on or off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uring: Option<ring::Tuning>,
    /// `--server-cpus` as pinned; absent when the scheduler places the threads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<String>,
    /// UDP: `--udp-batch`, when the server receives and answers several datagrams per call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub udp_batch: Option<usize>,
    /// UDP: `--udp-gso`, when the kernel coalesces and segments those datagrams.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub udp_gso: bool,
    /// `--idle-timeout` in seconds; absent when silent connections stay open.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_timeout_seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_certificate: Option<String>,
    /// QUIC protocols: the endpoints' transport settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quic_transport: Option<echomark_archive::QuicTransport>,
    /// QUIC protocols: what the server lets a client make it hold (its receive windows and
    /// streams within `quic_transport`), and the connections it takes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quic_limits: Option<ServerLimits>,
    pub pid: u32,
    /// This machine, as archives describe it: a client on another host records it with
    /// `--server-machine` (this line saved to a file).
    pub machine: echomark_archive::Host,
}

/// The last line `serve` prints: everything its server side counted.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ServeReport {
    pub seconds: f64,
    /// TCP connections accepted (0 for UDP).
    pub connections: u64,
    /// Messages with echomark's header, by the phase their header names.
    pub warmup_messages_received: u64,
    pub measured_messages_received: u64,
    /// Messages without echomark's header, echoed all the same.
    pub foreign_messages: u64,
    /// `--framing raw`: bytes echoed.
    pub raw_bytes_echoed: u64,
    pub content_errors: u64,
    pub send_rejections: u64,
    pub send_completion_errors: u64,
    pub disconnect_errors: u64,
    /// Connections whose TLS handshake or WebSocket upgrade failed.
    pub handshake_failures: u64,
    /// Connections closed because they sent nothing for `--idle-timeout`.
    pub idle_closed: u64,
    /// QUIC connections refused because `--quic-max-connections` were open.
    #[serde(skip_serializing_if = "is_zero")]
    pub refused_connections: u64,
    /// `--backend io-uring`: what its rings did (system calls, multishot completions, buffers
    /// taken from the ring), summed over the shards.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ring: Option<ring::RingCounters>,
    /// `--count-syscalls`: the process's system calls from start to stop, every thread.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub syscalls: Option<u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Why `serve` could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Usage(#[from] ServeUsage),
    /// The stop flag's signal handlers could not be installed.
    #[error(transparent)]
    Signals(#[from] crate::signals::SignalError),
}

/// Options `serve` refuses: exit 2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServeUsage {
    /// A rule `serve` shares with `once`: what the backend supports (its role, protocols,
    /// IO models and options), the QUIC transport, `--udp-batch`.
    #[error(transparent)]
    Case(#[from] crate::case::UsageError),
    /// A `--quic-*` transport flag with a protocol that is not QUIC.
    #[error("the --quic-* transport flags are for the QUIC protocols")]
    QuicFlagsNotQuic,
    /// `--quic-max-connections` with a protocol that is not QUIC.
    #[error("--quic-max-connections is for the QUIC protocols")]
    MaxConnectionsNotQuic,
    /// `--quic-max-connections 0`.
    #[error("--quic-max-connections must be at least 1")]
    NoConnections,
    /// `--tls-certificate-out` with a protocol without TLS.
    #[error("--tls-certificate-out is for tcps, wss, https and the QUIC protocols")]
    CertificateWithoutTls,
    /// A `--uring-*` switch on another backend than io-uring.
    #[error("the --uring-* switches are for --backend io-uring")]
    UringSwitchesNotUring,
    /// UDP with several threads on a shared runtime, where one task serves the one socket.
    #[error(
        "UDP on a shared runtime serves one socket from one task; use --io-model sharded for more threads"
    )]
    SharedUdpThreads,
}

/// How long the accept loop waits after the process ran out of file descriptors (or the
/// kernel of memory for sockets): retrying at once would spin a core while nothing frees.
pub(crate) const ACCEPT_BACKOFF: std::time::Duration = crate::iouring::server::ACCEPT_BACKOFF;

/// Waits before the next accept after `e`: [`ACCEPT_BACKOFF`] when descriptors or memory
/// ran out (EMFILE, ENFILE, ENOBUFS, ENOMEM), a moment after any other error.
pub(crate) async fn pause_after_accept_error(e: &std::io::Error) {
    let exhausted = matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    );
    ::tokio::time::sleep(if exhausted {
        ACCEPT_BACKOFF
    } else {
        std::time::Duration::from_millis(1)
    })
    .await;
}

/// What every connection and socket reports into. The counters of open connections are
/// kept one by one; those of closed ones are folded into totals, so a server that has
/// served a million connections holds the counters of the open ones only.
#[derive(Default)]
pub struct Registry {
    stats: Mutex<Live>,
    raw_bytes: AtomicU64,
    connections: AtomicU64,
    handshake_failures: AtomicU64,
    refused_connections: AtomicU64,
    idle_closed: Arc<AtomicU64>,
    /// `--idle-timeout`, set before the first connection.
    idle_after: Option<Duration>,
    /// `--backend io-uring`: its shards' figures, once they stopped.
    ring: Mutex<Option<ring::RingCounters>>,
    /// `--inject-fault`, given to every connection and socket.
    fault: Option<Fault>,
}

/// The open connections' counters and the closed ones' totals.
#[derive(Default)]
struct Live {
    open: Vec<Arc<ServerStats>>,
    /// Connections still open at the last fold (what the next fold waits to double).
    open_at_fold: usize,
    closed: ServeReport,
}

/// Adds one connection's counters to `r`.
fn add_counters(r: &mut ServeReport, s: &ServerStats) {
    r.warmup_messages_received += s.received(PHASE_WARMUP);
    r.measured_messages_received += s.received(PHASE_MEASURED);
    r.foreign_messages += s.foreign();
    for phase in [PHASE_WARMUP, PHASE_MEASURED] {
        let c = s.counters(phase);
        r.content_errors += c.content_errors;
        r.send_rejections += c.server_send_rejections;
        r.send_completion_errors += c.server_send_completion_errors;
        r.disconnect_errors += c.disconnect_errors;
    }
}

impl Live {
    /// Folds the counters of connections nobody else holds (closed) into the totals, once
    /// the list has doubled since the last fold: amortised constant work per connection.
    fn fold_closed(&mut self) {
        if self.open.len() < 2 * self.open_at_fold.max(64) {
            return;
        }
        let closed = &mut self.closed;
        self.open.retain(|s| {
            let done = Arc::strong_count(s) == 1;
            if done {
                add_counters(closed, s);
            }
            !done
        });
        self.open_at_fold = self.open.len();
    }
}

impl Registry {
    /// How many connections' counters are held one by one (open, or closed since the last
    /// fold).
    pub fn held(&self) -> usize {
        self.stats.lock().map_or(0, |s| s.open.len())
    }

    /// The duty of a new connection or socket, whose counters join the report.
    fn duty(&self, work: u64, closing: &Arc<AtomicBool>) -> ServerDuty {
        let stats = Arc::new(ServerStats::default());
        if let Ok(mut live) = self.stats.lock() {
            live.fold_closed();
            live.open.push(stats.clone());
        }
        ServerDuty {
            work_rounds: work,
            stats,
            fault: self.fault,
            closing: closing.clone(),
            echo_foreign: true,
            idle: self.idle_limit(),
        }
    }

    /// The idle limit of every connection, sharing one count.
    fn idle_limit(&self) -> Option<IdleLimit> {
        self.idle_after.map(|after| IdleLimit {
            after,
            closed: self.idle_closed.clone(),
        })
    }

    /// Records what the io_uring shards counted.
    fn set_ring_stats(&self, stats: ring::RingCounters) {
        if let Ok(mut slot) = self.ring.lock() {
            *slot = Some(stats);
        }
    }

    fn report(&self, seconds: f64) -> ServeReport {
        let (closed, open) = self
            .stats
            .lock()
            .map(|s| (s.closed.clone(), s.open.clone()))
            .unwrap_or_default();
        let mut r = ServeReport {
            seconds,
            connections: self.connections.load(Ordering::Relaxed),
            raw_bytes_echoed: self.raw_bytes.load(Ordering::Relaxed),
            handshake_failures: self.handshake_failures.load(Ordering::Relaxed),
            refused_connections: self.refused_connections.load(Ordering::Relaxed),
            idle_closed: self.idle_closed.load(Ordering::Relaxed),
            ring: self.ring.lock().ok().and_then(|r| r.clone()),
            ..closed
        };
        for s in &open {
            add_counters(&mut r, s);
        }
        r
    }
}

/// Checks the combinations the flags cannot express.
pub fn validate(o: &ServeOptions) -> Result<(), ServeUsage> {
    let unsupported = |reason| ServeUsage::Case(UsageError::Unsupported { reason });
    if o.framing.refuse(o.protocol).is_some() {
        return Err(ServeUsage::Case(UsageError::FramingNotTcp {
            framing: o.framing,
        }));
    }
    if let Some(reason) = o.backend.refuse_role(Role::Server) {
        return Err(unsupported(reason));
    }
    if o.protocol.is_quic() {
        if let Some(reason) = o.backend.refuse_protocol(o.protocol) {
            return Err(unsupported(reason));
        }
    }
    if !o.protocol.is_quic() && o.quic != echomark_archive::QuicTransport::default() {
        return Err(ServeUsage::QuicFlagsNotQuic);
    }
    if !o.protocol.is_quic() && o.quic_max_connections.is_some() {
        return Err(ServeUsage::MaxConnectionsNotQuic);
    }
    if o.quic_max_connections == Some(0) {
        return Err(ServeUsage::NoConnections);
    }
    if let Some(problem) = o.quic.problem() {
        return Err(UsageError::QuicTransport { problem }.into());
    }
    if o.tls_certificate_out.is_some() && !o.protocol.needs_trust() {
        return Err(ServeUsage::CertificateWithoutTls);
    }
    if let Some(reason) = o.backend.refuse_protocol(o.protocol) {
        return Err(unsupported(reason));
    }
    if let Some(reason) = o.backend.refuse_model(o.io_model, o.io_threads as u64) {
        return Err(UsageError::Model {
            backend: o.backend.clone(),
            io_model: o.io_model,
            io_threads: o.io_threads,
            reason,
        }
        .into());
    }
    if o.fault == Some(Fault::Stall) {
        if let Some(reason) = o.backend.refuse(|c| c.stall_fault, "--inject-fault stall") {
            return Err(unsupported(reason));
        }
    }
    if o.backend != Backend::IoUring && o.ring != ring::Tuning::default() {
        return Err(ServeUsage::UringSwitchesNotUring);
    }
    if let Some(refusal) = o
        .udp_batch
        .and_then(|batch| crate::case::udp_batch_refusal(o.protocol, &o.backend, batch))
    {
        return Err(refusal.into());
    }
    if o.io_model == IoModel::Shared && o.io_threads > 1 && o.protocol == Protocol::Udp {
        // One socket served by one task: more threads would only idle.
        return Err(ServeUsage::SharedUdpThreads);
    }
    Ok(())
}

/// A server listening on its backend: where, and how to stop it.
pub struct Started {
    pub address: SocketAddr,
    /// Stops the listeners and the echo tasks (the counters stay in the registry).
    pub stop: Box<dyn FnOnce()>,
}

/// Serves until `stop` is set, printing the listening line through `announce` first.
pub fn run(
    o: &ServeOptions,
    stop: &AtomicBool,
    announce: impl FnOnce(&Listening),
) -> Result<ServeReport, ServeError> {
    validate(o)?;
    // Every connection is a descriptor: the hard limit is what the host allows.
    limits::raise_open_files()?;
    let registry = Arc::new(Registry {
        idle_after: o.idle_timeout,
        fault: o.fault,
        ..Registry::default()
    });
    let closing = Arc::new(AtomicBool::new(false));
    if let Some(cpus) = &o.server_cpus {
        // Before any thread starts: they all inherit the list.
        crate::placement::pin_current_thread(cpus).map_err(std::io::Error::other)?;
    }
    // Before any runtime thread starts: they inherit it.
    let mut syscalls = crate::instruments::syscalls::SyscallCounter::open_if(o.count_syscalls)
        .map_err(std::io::Error::other)?;
    let tls = tls_server(o)?;
    let started = match o.backend {
        Backend::Tokio => tokio::start(o, (tls, quic_server(o)?), &registry, &closing)?,
        Backend::Monoio => uring::start(o, tls, &registry, &closing)?,
        Backend::IoUring => ring::start(o, &registry, &closing)?,
        // validate() refused every backend that does not serve.
        Backend::Named(_) => {
            let reason = o.backend.refuse_role(Role::Server).unwrap_or_default();
            return Err(ServeUsage::Case(UsageError::Unsupported { reason }).into());
        }
    };
    announce(&Listening {
        listening: started.address.to_string(),
        protocol: o.protocol,
        framing: matches!(o.protocol, Protocol::Tcp | Protocol::Tcps).then_some(o.framing),
        backend: o.backend.to_string(),
        io_model: o.io_model,
        io_threads: o.io_threads,
        work: o.work,
        uring: (o.backend == Backend::IoUring).then_some(o.ring),
        cpus: o.server_cpus.as_ref().map(ToString::to_string),
        idle_timeout_seconds: o.idle_timeout.map(|d| d.as_secs_f64()),
        udp_batch: o.udp_batch,
        udp_gso: o.udp_gso,
        tls_certificate: o
            .tls_certificate_out
            .as_ref()
            .map(|p| p.display().to_string()),
        quic_transport: o.protocol.is_quic().then_some(o.quic),
        quic_limits: quic_limits(o),
        pid: std::process::id(),
        machine: crate::matrix::host::describe(),
    });
    let since = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(POLL);
    }
    closing.store(true, Ordering::Relaxed);
    (started.stop)();
    let mut report = registry.report(since.elapsed().as_secs_f64());
    // The runtime threads have ended: their counts are folded into the counter.
    if let Some(counter) = syscalls.as_mut() {
        report.syscalls = Some(counter.read().map_err(std::io::Error::other)?);
    }
    Ok(report)
}

/// TLS protocols: a fresh self-signed certificate for the listening address and
/// `localhost`, written where `--tls-certificate-out` asks.
fn tls_server(o: &ServeOptions) -> Result<Option<TlsServer>, ServeError> {
    if !o.protocol.uses_tls() {
        return Ok(None);
    }
    let server = TlsServer::self_signed(vec![o.listen.ip().to_string(), "localhost".into()])
        .map_err(std::io::Error::other)?;
    if let Some(path) = &o.tls_certificate_out {
        crate::matrix::store::write_bytes_atomically(path, server.certificate_pem().as_bytes())?;
    }
    Ok(Some(server))
}

/// QUIC protocols: what the server lets a client make it hold, from the transport, the
/// protocol and `--quic-max-connections`.
fn quic_limits(o: &ServeOptions) -> Option<ServerLimits> {
    o.protocol.is_quic().then(|| {
        let connections = o.quic_max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS);
        ServerLimits::of(&o.quic, o.protocol, connections)
    })
}

/// QUIC protocols: a server configuration within [`quic_limits`] around a fresh self-signed
/// certificate for the listening address and `localhost`, written where
/// `--tls-certificate-out` asks.
fn quic_server(o: &ServeOptions) -> Result<Option<quinn::ServerConfig>, ServeError> {
    let Some(limits) = quic_limits(o) else {
        return Ok(None);
    };
    let names = vec![o.listen.ip().to_string(), "localhost".into()];
    let (mut config, certificate) =
        crate::traffic::quic::self_signed_server(names).map_err(std::io::Error::other)?;
    config.transport_config(Arc::new(limits.transport(&o.quic)));
    if let Some(path) = &o.tls_certificate_out {
        let pem = crate::traffic::tls::certificate_pem(&certificate);
        crate::matrix::store::write_bytes_atomically(path, pem.as_bytes())?;
    }
    Ok(Some(config))
}

/// One accepted connection's handshakes on tokio: TLS, then the WebSocket upgrade. A
/// connection whose handshakes fail is counted and dropped.
async fn handshake(
    stream: ::tokio::net::TcpStream,
    o: &ServeOptions,
    tls: Option<TlsServer>,
    registry: &Registry,
) -> Option<ServerConn> {
    let _ = stream.set_nodelay(true);
    let websocket = crate::framing::codecs::upgrades(o.protocol);
    let conn = async {
        Ok::<_, std::io::Error>(match tls {
            None => {
                let mut stream = stream;
                if websocket {
                    connect::server_upgrade(&mut stream).await?;
                }
                ServerConn::Plain(stream)
            }
            Some(tls) => {
                let mut stream = tls.accept(stream).await?;
                if websocket {
                    connect::server_upgrade(&mut stream).await?;
                }
                ServerConn::Tls(Box::new(stream))
            }
        })
    };
    match ::tokio::time::timeout(HANDSHAKE_LIMIT, conn).await {
        Ok(Ok(conn)) => Some(conn),
        _ => {
            registry.handshake_failures.fetch_add(1, Ordering::Relaxed);
            None
        }
    }
}

/// How long one connection's handshakes may take.
const HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);

/// How the echo of a stream connection is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Echo {
    /// Message by message, in the framing echomark's server speaks for the protocol
    /// ([`crate::framing::codecs::ServerFraming`]).
    Framed(Protocol),
    /// A framing with no head (`--framing raw`, `line`): bytes back as they come.
    Bytes,
}

impl Echo {
    fn of(o: &ServeOptions) -> Self {
        if crate::framing::codecs::echoes_bytes(o.protocol, o.framing) {
            Echo::Bytes
        } else {
            Echo::Framed(o.protocol)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instruments::counters::ServerEvent;

    #[test]
    fn closed_connections_are_folded_into_totals_and_nothing_is_lost() {
        let registry = Registry::default();
        let closing = Arc::new(AtomicBool::new(false));
        let open: Vec<ServerDuty> = (0..10).map(|_| registry.duty(0, &closing)).collect();
        for _ in 0..200_000 {
            let duty = registry.duty(0, &closing);
            duty.stats.count(PHASE_MEASURED, ServerEvent::Received);
            duty.stats.count(PHASE_WARMUP, ServerEvent::Disconnected);
            // The connection ends: its duty is dropped.
        }
        for duty in &open {
            duty.stats.count(PHASE_MEASURED, ServerEvent::Received);
        }
        assert!(
            registry.held() < 200,
            "{} counter records held",
            registry.held()
        );
        let r = registry.report(1.0);
        assert_eq!(r.measured_messages_received, 200_010);
        assert_eq!(r.disconnect_errors, 200_000);
    }

    #[test]
    fn serve_refusals_read_as_before() {
        for (e, text) in [
            (
                ServeUsage::Case(crate::case::UsageError::FramingNotTcp {
                    framing: StreamFraming::Raw,
                }),
                "--framing raw is for tcp and tcps; the other protocols have their own framing",
            ),
            (
                ServeUsage::QuicFlagsNotQuic,
                "the --quic-* transport flags are for the QUIC protocols",
            ),
            (
                ServeUsage::MaxConnectionsNotQuic,
                "--quic-max-connections is for the QUIC protocols",
            ),
            (
                ServeUsage::NoConnections,
                "--quic-max-connections must be at least 1",
            ),
            (
                ServeUsage::CertificateWithoutTls,
                "--tls-certificate-out is for tcps, wss, https and the QUIC protocols",
            ),
            (
                ServeUsage::UringSwitchesNotUring,
                "the --uring-* switches are for --backend io-uring",
            ),
            (
                ServeUsage::SharedUdpThreads,
                "UDP on a shared runtime serves one socket from one task; use --io-model \
                 sharded for more threads",
            ),
            (
                ServeUsage::Case(UsageError::GsoWithoutBatch),
                "--udp-gso rides on --udp-batch N: give both",
            ),
        ] {
            assert_eq!(ServeError::Usage(e).to_string(), text);
        }
    }
}
