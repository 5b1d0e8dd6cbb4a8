//! `echomark-runner serve`: echomark's server alone, on a chosen IO model, for clients in
//! another process, namespace or host (`once --target`), or any ordinary client.
//!
//! It prints one JSON line with the address it listens on, echoes until SIGTERM or SIGINT,
//! then prints one JSON report of what its server side counted. Messages are echoed as by
//! the in-process server (same framings, same synthetic work), except that a message
//! without echomark's 16-byte header is echoed too and counted as foreign, so curl, a
//! WebSocket client or a load generator work against it. With `--framing raw` a TCP
//! connection is a plain byte echo.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use echomark_archive::{IoModel, Protocol, StreamFraming};
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::framing::http1::Http1;
use crate::framing::prefix::LengthPrefix;
use crate::framing::websocket::WebSocket;
use crate::framing::Framing;
use crate::instruments::counters::ServerStats;
use crate::measure::topology::Topology;
use crate::message::{PHASE_MEASURED, PHASE_WARMUP};
use crate::traffic::connect;
use crate::traffic::sockets;
use crate::traffic::stream::{self, ServerDuty};
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
}

/// The first line `serve` prints.
#[derive(Debug, Serialize)]
pub struct Listening {
    pub listening: String,
    pub protocol: Protocol,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub framing: Option<StreamFraming>,
    pub backend: &'static str,
    pub io_model: IoModel,
    pub io_threads: usize,
    pub work: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_certificate: Option<String>,
    pub pid: u32,
    /// This machine, as archives describe it: a client on another host records it with
    /// `--server-machine` (this line saved to a file).
    pub machine: echomark_archive::Host,
}

/// The last line `serve` prints: everything its server side counted.
#[derive(Debug, Default, Serialize)]
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
}

/// Why `serve` could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Usage(String),
}

/// What every connection and socket reports into.
#[derive(Default)]
struct Registry {
    stats: Mutex<Vec<Arc<ServerStats>>>,
    raw_bytes: AtomicU64,
    connections: AtomicU64,
    handshake_failures: AtomicU64,
}

impl Registry {
    fn duty(&self, work: u64, closing: &Arc<AtomicBool>) -> ServerDuty {
        let stats = Arc::new(ServerStats::default());
        if let Ok(mut all) = self.stats.lock() {
            all.push(stats.clone());
        }
        ServerDuty {
            work_rounds: work,
            stats,
            fault: None,
            closing: closing.clone(),
            echo_foreign: true,
        }
    }

    fn report(&self, seconds: f64) -> ServeReport {
        let mut r = ServeReport {
            seconds,
            connections: self.connections.load(Ordering::Relaxed),
            raw_bytes_echoed: self.raw_bytes.load(Ordering::Relaxed),
            handshake_failures: self.handshake_failures.load(Ordering::Relaxed),
            ..ServeReport::default()
        };
        let all = self.stats.lock().map(|s| s.clone()).unwrap_or_default();
        for s in &all {
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
        r
    }
}

/// Checks the combinations the flags cannot express.
pub fn validate(o: &ServeOptions) -> Result<(), ServeError> {
    let usage = |m: &str| Err(ServeError::Usage(m.to_string()));
    if o.framing == StreamFraming::Raw && !matches!(o.protocol, Protocol::Tcp | Protocol::Tcps) {
        return usage("--framing raw is for tcp and tcps");
    }
    if o.tls_certificate_out.is_some() && !o.protocol.uses_tls() {
        return usage("--tls-certificate-out is for tcps, wss and https");
    }
    if o.io_model == IoModel::Shared && o.io_threads > 1 && o.protocol == Protocol::Udp {
        // One socket served by one task: more threads would only idle.
        return usage("UDP on a shared runtime serves one socket from one task; use --io-model sharded for more threads");
    }
    Ok(())
}

/// Serves until `stop` is set, printing the listening line through `announce` first.
pub fn run(
    o: &ServeOptions,
    stop: &AtomicBool,
    announce: impl FnOnce(&Listening),
) -> Result<ServeReport, ServeError> {
    validate(o)?;
    let topology = Topology::start(o.io_model, o.io_threads)?;
    let registry = Arc::new(Registry::default());
    let closing = Arc::new(AtomicBool::new(false));
    let tls = if o.protocol.uses_tls() {
        let server = TlsServer::self_signed(vec![o.listen.ip().to_string(), "localhost".into()])
            .map_err(std::io::Error::other)?;
        if let Some(path) = &o.tls_certificate_out {
            crate::matrix::store::write_bytes_atomically(
                path,
                server.certificate_pem().as_bytes(),
            )?;
        }
        Some(server)
    } else {
        None
    };
    let (address, tasks) = match o.protocol {
        Protocol::Udp => start_datagrams(o, &topology, &registry, &closing)?,
        _ => start_streams(o, &topology, &registry, &closing, tls)?,
    };
    announce(&Listening {
        listening: address.to_string(),
        protocol: o.protocol,
        framing: matches!(o.protocol, Protocol::Tcp | Protocol::Tcps).then_some(o.framing),
        backend: "tokio",
        io_model: o.io_model,
        io_threads: o.io_threads,
        work: o.work,
        tls_certificate: o
            .tls_certificate_out
            .as_ref()
            .map(|p| p.display().to_string()),
        pid: std::process::id(),
        machine: crate::matrix::host::describe(),
    });
    let started = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(POLL);
    }
    closing.store(true, Ordering::Relaxed);
    for task in &tasks {
        task.abort();
    }
    topology.shutdown(STOP_GRACE);
    Ok(registry.report(started.elapsed().as_secs_f64()))
}

/// One listener; its accept loop hands connection `i` to runtime `i mod N`.
fn start_streams(
    o: &ServeOptions,
    topology: &Topology,
    registry: &Arc<Registry>,
    closing: &Arc<AtomicBool>,
    tls: Option<TlsServer>,
) -> std::io::Result<(SocketAddr, Vec<tokio::task::JoinHandle<()>>)> {
    let listener = std::net::TcpListener::bind(o.listen)?;
    listener.set_nonblocking(true)?;
    let address = listener.local_addr()?;
    let handles: Vec<tokio::runtime::Handle> = (0..topology.len())
        .map(|k| topology.handle_for(k))
        .collect();
    let (o, registry, closing) = (o.clone(), registry.clone(), closing.clone());
    let accept = topology.spawn(0, async move {
        let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
            return;
        };
        let mut next = 0usize;
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            registry.connections.fetch_add(1, Ordering::Relaxed);
            let Ok(stream) = stream.into_std() else {
                continue;
            };
            let handle = &handles[next % handles.len()];
            next += 1;
            let duty = registry.duty(o.work, &closing);
            let (o, tls, registry) = (o.clone(), tls.clone(), registry.clone());
            handle.spawn(async move {
                let Ok(stream) = tokio::net::TcpStream::from_std(stream) else {
                    return;
                };
                let _ = stream.set_nodelay(true);
                if serve_connection(stream, &o, tls, duty, &registry)
                    .await
                    .is_err()
                {
                    registry.handshake_failures.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    Ok((address, vec![accept]))
}

/// One accepted connection: its handshakes, then the echo until the peer closes.
async fn serve_connection(
    stream: tokio::net::TcpStream,
    o: &ServeOptions,
    tls: Option<TlsServer>,
    duty: ServerDuty,
    registry: &Registry,
) -> std::io::Result<()> {
    match tls {
        None => serve_stream(stream, o, duty, registry).await,
        Some(tls) => serve_stream(tls.accept(stream).await?, o, duty, registry).await,
    }
}

async fn serve_stream<S>(
    mut stream: S,
    o: &ServeOptions,
    duty: ServerDuty,
    registry: &Registry,
) -> std::io::Result<()>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    match (o.protocol, o.framing) {
        (Protocol::Http | Protocol::Https, _) => echo(stream, duty, Http1::Server).await,
        (Protocol::Websocket | Protocol::Wss, _) => {
            connect::server_upgrade(&mut stream).await?;
            echo(stream, duty, WebSocket::Server).await
        }
        (_, StreamFraming::Raw) => {
            echo_bytes(stream, &registry.raw_bytes).await;
        }
        _ => echo(stream, duty, LengthPrefix).await,
    }
    Ok(())
}

async fn echo<S, F>(stream: S, duty: ServerDuty, framing: F)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    F: Framing,
{
    stream::serve(stream, duty, framing).await;
}

/// `--framing raw`: writes back whatever arrives, until the peer closes.
async fn echo_bytes<S>(mut stream: S, echoed: &AtomicU64)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; RAW_CHUNK];
    loop {
        let n = match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if stream.write_all(&buf[..n]).await.is_err() || stream.flush().await.is_err() {
            return;
        }
        echoed.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// One UDP socket per runtime on the same port (SO_REUSEPORT spreads senders over them).
fn start_datagrams(
    o: &ServeOptions,
    topology: &Topology,
    registry: &Arc<Registry>,
    closing: &Arc<AtomicBool>,
) -> std::io::Result<(SocketAddr, Vec<tokio::task::JoinHandle<()>>)> {
    let mut address = o.listen;
    let mut tasks = Vec::new();
    for k in 0..topology.len() {
        let socket = sockets::udp_listener(address, o.udp_send_buffer, o.udp_recv_buffer)?;
        address = socket.local_addr()?;
        let duty = registry.duty(o.work, closing);
        let handle = topology.handle_for(k);
        let _in_runtime = handle.enter();
        let socket = tokio::net::UdpSocket::from_std(socket)?;
        tasks.push(handle.spawn(crate::traffic::datagram::serve(socket, duty)));
    }
    Ok((address, tasks))
}
