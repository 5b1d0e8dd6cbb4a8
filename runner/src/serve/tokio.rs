//! `serve` on tokio: one listener whose accept loop hands connection `i` to runtime
//! `i mod N`, and one UDP socket per runtime on one port.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use echomark_archive::Protocol;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::{handshake, Echo, Registry, ServeOptions, Started, RAW_CHUNK, STOP_GRACE};
use crate::framing::codecs::ServerFraming;
use crate::measure::topology::Topology;
use crate::traffic::connect::ServerConn;
use crate::traffic::quic::server::Event;
use crate::traffic::sockets;
use crate::traffic::stream::{self, within_idle, IdleLimit, ServerDuty};
use crate::traffic::tls::TlsServer;

/// Starts the listener (or UDP sockets, or QUIC endpoints with `quic`'s configuration)
/// and the echo tasks on tokio runtimes.
pub fn start(
    o: &ServeOptions,
    (tls, quic): (Option<TlsServer>, Option<quinn::ServerConfig>),
    registry: &Arc<Registry>,
    closing: &Arc<AtomicBool>,
) -> std::io::Result<Started> {
    let topology = Topology::start(o.io_model, o.io_threads, o.server_cpus.as_ref())?;
    let (address, tasks) = match (o.protocol, quic) {
        (Protocol::Udp, _) => start_datagrams(o, &topology, registry, closing)?,
        (_, Some(quic)) => start_quic(o, &topology, quic, registry, closing)?,
        _ => start_streams(o, &topology, registry, closing, tls)?,
    };
    Ok(Started {
        address,
        stop: Box::new(move || {
            for task in &tasks {
                task.abort();
            }
            topology.shutdown(STOP_GRACE);
        }),
    })
}

type Tasks = Vec<tokio::task::JoinHandle<()>>;

fn start_streams(
    o: &ServeOptions,
    topology: &Topology,
    registry: &Arc<Registry>,
    closing: &Arc<AtomicBool>,
    tls: Option<TlsServer>,
) -> std::io::Result<(SocketAddr, Tasks)> {
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
            let (stream, _) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    super::pause_after_accept_error(&e).await;
                    continue;
                }
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
                match handshake(stream, &o, tls, &registry).await {
                    Some(ServerConn::Plain(s)) => echo(s, Echo::of(&o), duty, &registry).await,
                    Some(ServerConn::Tls(s)) => echo(*s, Echo::of(&o), duty, &registry).await,
                    None => {}
                }
            });
        }
    });
    Ok((address, vec![accept]))
}

/// Echoes one connection, after its handshakes, until the peer closes.
async fn echo<S>(stream: S, how: Echo, duty: ServerDuty, registry: &Registry)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    match how {
        Echo::Framed(protocol) => stream::serve(stream, duty, ServerFraming::of(protocol)).await,
        Echo::Bytes => echo_bytes(stream, &registry.raw_bytes, duty.idle.as_ref()).await,
    }
}

/// `--framing raw`: writes back whatever arrives, until the peer closes or stays silent
/// past `idle`.
async fn echo_bytes<S>(mut stream: S, echoed: &AtomicU64, idle: Option<&IdleLimit>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; RAW_CHUNK];
    loop {
        let n = match within_idle(idle, stream.read(&mut buf), tokio::time::sleep).await {
            None | Some(Ok(0) | Err(_)) => return,
            Some(Ok(n)) => n,
        };
        if stream.write_all(&buf[..n]).await.is_err() || stream.flush().await.is_err() {
            return;
        }
        echoed.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// QUIC: one endpoint (UDP socket) per runtime on the same port (SO_REUSEPORT spreads
/// clients over them by address, so each connection stays on one), each accepting and
/// serving connections on its runtime.
fn start_quic(
    o: &ServeOptions,
    topology: &Topology,
    config: quinn::ServerConfig,
    registry: &Arc<Registry>,
    closing: &Arc<AtomicBool>,
) -> std::io::Result<(SocketAddr, Tasks)> {
    // One cap over every endpoint: the connections of the whole server.
    let cap = super::quic_limits(o).map(|limits| limits.cap());
    per_runtime_udp_socket(o, topology, |handle, socket| {
        let endpoint = crate::traffic::quic::server_endpoint(socket, config.clone())?;
        let (work, closing) = (o.work, closing.clone());
        let duties = registry.clone();
        let next_duty = move || Some(duties.duty(work, &closing));
        let counters = registry.clone();
        let events = move |event| {
            let counter = match event {
                Event::Accepted => &counters.connections,
                Event::HandshakeFailed => &counters.handshake_failures,
                Event::Refused => &counters.refused_connections,
            };
            counter.fetch_add(1, Ordering::Relaxed);
        };
        Ok(handle.spawn(crate::traffic::quic::server::serve_endpoint(
            endpoint,
            o.protocol,
            (next_duty, cap.clone()),
            events,
        )))
    })
}

/// One UDP socket per runtime on the same port (SO_REUSEPORT spreads senders over them).
fn start_datagrams(
    o: &ServeOptions,
    topology: &Topology,
    registry: &Arc<Registry>,
    closing: &Arc<AtomicBool>,
) -> std::io::Result<(SocketAddr, Tasks)> {
    per_runtime_udp_socket(o, topology, |handle, socket| {
        let duty = registry.duty(o.work, closing);
        let socket = tokio::net::UdpSocket::from_std(socket)?;
        let batching = crate::traffic::mmsg::Batching::of(o.udp_batch, o.udp_gso);
        let serve = crate::traffic::datagram::server_task(socket, duty, batching)?;
        Ok(handle.spawn(serve))
    })
}

/// Binds one UDP socket per runtime on one port (the first picks it when `--listen` says
/// port 0) with the buffer requests, and starts `serve` on each inside its runtime.
fn per_runtime_udp_socket(
    o: &ServeOptions,
    topology: &Topology,
    mut serve: impl FnMut(
        &tokio::runtime::Handle,
        std::net::UdpSocket,
    ) -> std::io::Result<tokio::task::JoinHandle<()>>,
) -> std::io::Result<(SocketAddr, Tasks)> {
    let mut address = o.listen;
    let mut tasks = Vec::new();
    for k in 0..topology.len() {
        let socket = sockets::udp_listener(address, o.udp_send_buffer, o.udp_recv_buffer)?;
        address = socket.local_addr()?;
        let handle = topology.handle_for(k);
        let _in_runtime = handle.enter();
        tasks.push(serve(&handle, socket)?);
    }
    Ok((address, tasks))
}
