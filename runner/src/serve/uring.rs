//! `serve` on monoio (io_uring): one runtime per shard (`shared 1` or `sharded N`). A
//! thread of its own accepts connections and runs their handshakes (TLS, the WebSocket
//! upgrade) on tokio, as an in-process monoio measurement does, then hands connection `i`,
//! socket and TLS session, to shard `i mod N`, where the same echo as the in-process
//! monoio server serves it. UDP binds one socket per shard on one port (SO_REUSEPORT).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use echomark_archive::Protocol;
use monoio::io::{AsyncReadRent, AsyncWriteRent, AsyncWriteRentExt};

use super::{handshake, Echo, Registry, ServeOptions, Started, RAW_CHUNK};
use crate::framing::codecs::ServerFraming;
use crate::measure::shards::{self, JobQueues, MonoioRuntimes, OpenSocket, TaskCount};
use crate::traffic::sockets;
use crate::traffic::stream::{within_idle, IdleLimit, ServerDuty};
use crate::traffic::tls::TlsServer;
use crate::traffic::uring::{datagram, stream};

/// How long a shard may take to take a UDP socket.
const SETUP_LIMIT: Duration = Duration::from_secs(10);

/// Starts the listener (or UDP sockets) and the echo tasks on monoio runtimes.
pub fn start(
    o: &ServeOptions,
    tls: Option<TlsServer>,
    registry: &Arc<Registry>,
    closing: &Arc<AtomicBool>,
) -> std::io::Result<Started> {
    let runtimes = MonoioRuntimes::start(o.io_model, o.io_threads, o.server_cpus.as_ref(), None)
        .map_err(std::io::Error::other)?;
    if o.protocol == Protocol::Udp {
        let address = start_datagrams(o, &runtimes, registry, closing)?;
        return Ok(Started {
            address,
            stop: Box::new(move || runtimes.shut_down()),
        });
    }
    let listener = std::net::TcpListener::bind(o.listen)?;
    listener.set_nonblocking(true)?;
    let address = listener.local_addr()?;
    let acceptor = Acceptor {
        options: o.clone(),
        tls,
        registry: registry.clone(),
        closing: closing.clone(),
        queues: runtimes.queues(),
        servers: runtimes.servers.clone(),
    };
    let (stop_accepting, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("echomark-serve-accept".into())
        .spawn(move || acceptor.run(listener, stopped))?;
    Ok(Started {
        address,
        stop: Box::new(move || {
            // The acceptor's job queues must be gone before the runtimes can stop.
            let _ = stop_accepting.send(());
            let _ = thread.join();
            runtimes.shut_down();
        }),
    })
}

/// What the accepting thread needs.
struct Acceptor {
    options: ServeOptions,
    tls: Option<TlsServer>,
    registry: Arc<Registry>,
    closing: Arc<AtomicBool>,
    queues: JobQueues,
    servers: TaskCount,
}

impl Acceptor {
    /// Accepts until told to stop; each connection's handshakes run as a task of their own.
    fn run(self, listener: std::net::TcpListener, mut stop: tokio::sync::oneshot::Receiver<()>) {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        let me = Arc::new(self);
        runtime.block_on(async move {
            let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                return;
            };
            let mut next = 0usize;
            loop {
                tokio::select! {
                    _ = &mut stop => return,
                    accepted = listener.accept() => {
                        let (stream, _) = match accepted {
                            Ok(accepted) => accepted,
                            Err(e) => {
                                super::pause_after_accept_error(&e).await;
                                continue;
                            }
                        };
                        me.registry.connections.fetch_add(1, Ordering::Relaxed);
                        let shard = next;
                        next += 1;
                        tokio::spawn(me.clone().hand_over(stream, shard));
                    }
                }
            }
        });
    }

    /// Runs one connection's handshakes, then moves it to `shard`'s runtime to be echoed.
    async fn hand_over(self: Arc<Self>, stream: tokio::net::TcpStream, shard: usize) {
        let o = &self.options;
        let Some(conn) = handshake(stream, o, self.tls.clone(), &self.registry).await else {
            return;
        };
        let Ok((socket, session)) = conn.detach() else {
            return;
        };
        let how = Echo::of(o);
        let duty = self.registry.duty(o.work, &self.closing);
        let (registry, servers) = (self.registry.clone(), self.servers.clone());
        let _ = self.queues.run(
            shard,
            Box::new(move || {
                let open = OpenSocket::of(&socket);
                let Ok(socket) = monoio::net::TcpStream::from_std(socket) else {
                    return;
                };
                shards::spawn_counted(&servers, async move {
                    let _open = open;
                    match session {
                        None => echo(socket, how, duty, &registry.raw_bytes).await,
                        Some(session) => {
                            let tls = monoio_rustls::ServerTlsStream::new(socket, session);
                            echo(tls, how, duty, &registry.raw_bytes).await
                        }
                    }
                });
            }),
        );
    }
}

/// Echoes one connection on its shard until the peer closes or the shard stops.
async fn echo<S>(socket: S, how: Echo, duty: ServerDuty, raw_bytes: &AtomicU64)
where
    S: AsyncReadRent + AsyncWriteRent,
{
    match how {
        Echo::Framed(protocol) => stream::serve(socket, duty, ServerFraming::of(protocol)).await,
        Echo::Bytes => echo_bytes(socket, raw_bytes, duty.idle.as_ref()).await,
    }
}

/// `--framing raw`: writes back whatever arrives (the buffer goes to the kernel and back,
/// as io_uring wants), until the peer closes, stays silent past `idle`, or the shard stops.
async fn echo_bytes<S>(mut socket: S, echoed: &AtomicU64, idle: Option<&IdleLimit>)
where
    S: AsyncReadRent + AsyncWriteRent,
{
    let mut buf: Vec<u8> = Vec::with_capacity(RAW_CHUNK);
    loop {
        buf.clear();
        let Some((read, filled)) = within_idle(idle, socket.read(buf), monoio::time::sleep).await
        else {
            return;
        };
        buf = filled;
        match read {
            Ok(n) if n > 0 && !shards::stopping() => {}
            _ => return,
        }
        let n = buf.len() as u64;
        let (written, sent) = socket.write_all(buf).await;
        buf = sent;
        if written.is_err() || socket.flush().await.is_err() {
            return;
        }
        echoed.fetch_add(n, Ordering::Relaxed);
    }
}

/// One UDP socket per shard on the same port.
fn start_datagrams(
    o: &ServeOptions,
    runtimes: &MonoioRuntimes,
    registry: &Arc<Registry>,
    closing: &Arc<AtomicBool>,
) -> std::io::Result<SocketAddr> {
    let mut address = o.listen;
    for k in 0..runtimes.len() {
        let socket = sockets::udp_listener(address, o.udp_send_buffer, o.udp_recv_buffer)?;
        address = socket.local_addr()?;
        let duty = registry.duty(o.work, closing);
        let servers = runtimes.servers.clone();
        runtimes.ask(k, SETUP_LIMIT, move || async move {
            let open = OpenSocket::of(&socket);
            let socket = monoio::net::udp::UdpSocket::from_std(socket)?;
            shards::spawn_counted(&servers, async move {
                let _open = open;
                datagram::serve(socket, duty).await
            });
            Ok(())
        })?;
    }
    Ok(address)
}
