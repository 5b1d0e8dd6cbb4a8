//! Setting up a measurement's sockets and tasks on tokio before any phase: connected stream
//! pairs with their handshakes, or UDP sockets with their buffer requests. Nothing here is
//! timed.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use echomark_archive::Protocol;
use tokio::runtime::Handle;

use super::report::UdpBuffers;
use super::rig::{guarded, Rig};
use super::topology::TokioRuntimes;
use crate::case::{loopback, Case};
use crate::framing::codecs::{self, ClientFraming, ServerFraming};
use crate::framing::prefix::LengthPrefix;
use crate::framing::Framing;
use crate::traffic::client::ClientShape;
use crate::traffic::connect;
use crate::traffic::datagram::{self, UdpClient};
use crate::traffic::pacing::{Pacer, SendClock};
use crate::traffic::phase;
use crate::traffic::quic;
use crate::traffic::quic::per_message::{HandshakeCounts, PerMessageClient};
use crate::traffic::sockets::{self, TcpPair};
use crate::traffic::stream::{self, StreamClient};
use crate::traffic::tls::Tls;

/// A QUIC client after its handshake: with its long-lived stream open (`quic`), or the
/// connection alone (`quic-streams`, `quic-datagram`).
enum Connected {
    Stream(quic::QuicStream),
    Connection(quic::QuicClient),
}

/// How long one connection's handshakes may take.
pub(super) const HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);

impl Rig<TokioRuntimes> {
    /// Builds the runtimes, sockets and tasks for `case`.
    pub(super) fn start(case: &Case) -> std::io::Result<Self> {
        let runtimes = TokioRuntimes::start(
            case.io_model,
            case.io_threads,
            case.client_cpus.as_ref(),
            case.server_cpus.as_ref(),
        )?;
        let mut rig = Rig::empty(case, runtimes);
        // tokio's IO driver is mio, which is epoll on Linux.
        rig.io_driver = Some("epoll".to_string());
        match case.protocol {
            Protocol::Udp => rig.start_datagrams(case)?,
            p if p.is_quic() => rig.start_quic(case)?,
            _ => rig.start_streams(case)?,
        }
        Ok(rig)
    }

    fn start_streams(&mut self, case: &Case) -> std::io::Result<()> {
        let ip = loopback(case.address_family);
        let tls = Tls::when_needed(case.protocol, ip)?;
        for (i, pair) in sockets::tcp_pairs(ip, case.clients)?
            .into_iter()
            .enumerate()
        {
            // The Host header of HTTP requests and the WebSocket upgrade: `127.0.0.1:port`
            // or `[::1]:port`.
            let host = pair.client.peer_addr()?.to_string();
            let websocket_host = codecs::upgrades(case.protocol).then(|| host.clone());
            self.start_stream(
                case,
                i,
                pair,
                tls.as_ref(),
                websocket_host,
                ClientFraming::in_process(case.protocol, &host)?,
                ServerFraming::of(case.protocol),
            )?;
        }
        Ok(())
    }

    /// One stream connection: each end's handshakes on the runtime it will run on, then its
    /// server task and client.
    #[allow(clippy::too_many_arguments)]
    fn start_stream<C: Framing, S: Framing>(
        &mut self,
        case: &Case,
        index: usize,
        pair: TcpPair,
        tls: Option<&Tls>,
        websocket_host: Option<String>,
        client_framing: C,
        server_framing: S,
    ) -> std::io::Result<()> {
        let handle = self.runtimes.topology.handle_for(index);
        let server_handle = self.runtimes.server_handle_for(index);
        // Each socket joins the IO driver of the runtime that will drive it; the handshakes
        // run there, before any phase, untimed.
        let client = {
            let _in_runtime = handle.enter();
            tokio::net::TcpStream::from_std(pair.client)?
        };
        let server = {
            let _in_runtime = server_handle.enter();
            tokio::net::TcpStream::from_std(pair.server)?
        };
        let (client_tls, server_tls) =
            (tls.map(|t| t.client.clone()), tls.map(|t| t.server.clone()));
        let websocket = websocket_host.is_some();
        let server = on_runtime(&server_handle, async move {
            connect::establish_server(server, server_tls.as_ref(), websocket).await
        });
        let client = on_runtime(&handle, async move {
            connect::establish_client(client, client_tls.as_ref(), websocket_host.as_deref()).await
        });
        let deadline = Instant::now() + HANDSHAKE_LIMIT;
        let what = "connection handshake";
        let pair = connect::Pair::of(client.wait(deadline, what)?, server.wait(deadline, what)?)?;
        if pair.tls.is_some() {
            self.tls = pair.tls;
        }
        let duty = self.duty(case);
        let serve = stream::serve_conn(pair.server, duty, server_framing);
        self.runtimes
            .server_tasks
            .push(server_handle.spawn(guarded(self.panics.clone(), serve)));
        let client = StreamClient::new(
            pair.client,
            index,
            ClientShape::of(case),
            client_framing,
            (self.alarm_for_new_client(), self.pacer_for(case, index)),
        );
        self.spawn_client(&handle, index, client);
        Ok(())
    }

    /// Open loop: client `index`'s place on its runtime's send clock (started on first use).
    pub(super) fn pacer_for(&mut self, case: &Case, index: usize) -> Option<Pacer> {
        case.open_loop?;
        let runtime = self.runtimes.topology.runtime_index(index);
        if self.runtimes.clocks.len() <= runtime {
            self.runtimes.clocks.resize(runtime + 1, None);
        }
        let clock = self.runtimes.clocks[runtime].get_or_insert_with(|| {
            let clock = SendClock::new(case.spin);
            let run = clock.clone().run();
            let panics = self.panics.clone();
            self.runtimes
                .clock_tasks
                .push(self.runtimes.topology.spawn(index, async move {
                    // A clock that cannot arm its timer stops; its clients then drain and the
                    // run fails with drain timeouts, which names the problem.
                    let _ = guarded(panics, async {
                        let _ = run.await;
                    })
                    .await;
                }));
            clock
        });
        Some(clock.join())
    }

    pub(super) fn spawn_client(
        &mut self,
        handle: &Handle,
        index: usize,
        client: impl phase::PhaseClient,
    ) {
        self.runtimes.client_tasks.push(handle.spawn(phase::drive(
            index,
            client,
            self.commands_rx.clone(),
            self.reports_tx.clone(),
        )));
    }

    /// QUIC: one server endpoint per runtime (the server's own when apart), each accepting
    /// the connections of the clients on the runtime of the same index. Every endpoint is a UDP socket opened with the case's buffer
    /// requests, read back as for `udp`.
    fn start_quic(&mut self, case: &Case) -> std::io::Result<()> {
        let ip = loopback(case.address_family);
        let mut configs = quic::QuicConfigs::self_signed(ip).map_err(std::io::Error::other)?;
        configs
            .server
            .transport_config(Arc::new(quic::transport_config(&case.quic)));
        let shards = self.runtimes.topology.len();
        let mut buffers = UdpBuffers::default();
        let mut servers: Vec<SocketAddr> = Vec::with_capacity(shards);
        let per_connection = case.protocol.is_connection_per_message();
        let counts = Arc::new(HandshakeCounts::default());
        if per_connection {
            self.handshakes = Some(counts.clone());
        }
        for k in 0..shards {
            let ep = sockets::udp_endpoint(ip, case.udp_send_buffer, case.server_recv_buffer())?;
            buffers.server_send = ep.send_buffer;
            buffers.server_recv = ep.recv_buffer;
            servers.push(ep.socket.local_addr()?);
            let handle = self.runtimes.server_handle_for(k);
            let _in_runtime = handle.enter();
            let endpoint = quic::server_endpoint(ep.socket, configs.server.clone())?;
            // One duty per client's connection; a connection per message shares one.
            let next_duty: Box<dyn FnMut() -> Option<_> + Send> = if per_connection {
                let shared = self.duty(case);
                Box::new(move || Some(shared.clone()))
            } else {
                let mut duties = (0..case.clients)
                    .filter(|i| i % shards == k)
                    .map(|_| self.duty(case))
                    .collect::<Vec<_>>()
                    .into_iter();
                Box::new(move || duties.next())
            };
            let counts = counts.clone();
            let events = move |event| {
                if event == quic::server::Event::Accepted {
                    counts.server_accepted.fetch_add(1, Ordering::Relaxed);
                }
            };
            // In process the server faces its own clients alone: no cap.
            let serve =
                quic::server::serve_endpoint(endpoint, case.protocol, (next_duty, None), events);
            self.runtimes
                .server_tasks
                .push(handle.spawn(guarded(self.panics.clone(), serve)));
        }
        let server_of = |i: usize| (servers[i % shards], quic::SERVER_NAME);
        self.start_quic_clients(case, ip, server_of, &configs.client, buffers)
    }

    /// One QUIC client per client, each on its own UDP socket bound to `local` (port 0),
    /// client `i` connecting to `server_of(i)` (its address and certificate name); the
    /// handshakes (and, for `quic`, the stream's opening) happen here, before any phase,
    /// untimed, and the sockets' read-back buffer sizes join `buffers`.
    pub(super) fn start_quic_clients<'a>(
        &mut self,
        case: &Case,
        local: IpAddr,
        server_of: impl Fn(usize) -> (SocketAddr, &'a str),
        config: &quinn::ClientConfig,
        mut buffers: UdpBuffers,
    ) -> std::io::Result<()> {
        let mut config = config.clone();
        config.transport_config(Arc::new(quic::transport_config(&case.quic)));
        for i in 0..case.clients {
            let ep = sockets::udp_endpoint(local, case.udp_send_buffer, case.udp_recv_buffer)?;
            buffers.add_client(ep.send_buffer, ep.recv_buffer);
            let handle = self.runtimes.topology.handle_for(i);
            let (server, name) = server_of(i);
            let name = name.to_string();
            let (for_task, config) = (name.clone(), config.clone());
            let long_stream = case.protocol == Protocol::Quic;
            let connected = on_runtime(&handle, async move {
                let client = quic::connect(ep.socket, (server, &for_task), config).await?;
                Ok(if long_stream {
                    Connected::Stream(quic::open_stream(client).await?)
                } else {
                    Connected::Connection(client)
                })
            })
            .wait(
                Instant::now() + HANDSHAKE_LIMIT,
                format_args!("QUIC handshake with {server}"),
            )?;
            let shape = ClientShape::of(case);
            let waits = (self.alarm_for_new_client(), self.pacer_for(case, i));
            match connected {
                Connected::Stream(stream) => {
                    self.quic
                        .push(quic::Tap::streams(stream.connection.clone()));
                    let conn = crate::traffic::connect::Conn::Quic(Box::new(stream));
                    let client = StreamClient::new(conn, i, shape, LengthPrefix, waits);
                    self.spawn_client(&handle, i, client);
                }
                Connected::Connection(client) if case.protocol.is_connection_per_message() => {
                    // The setup connection stays open (it proved the server reachable and
                    // trusted, and brings the session ticket 0-RTT resumes); every message
                    // then makes a connection of its own from the same endpoint.
                    let counts = self
                        .handshakes
                        .get_or_insert_with(|| Arc::new(HandshakeCounts::default()))
                        .clone();
                    let connections = client.new_connections(
                        (server, name.clone()),
                        case.protocol == Protocol::Quic0rtt,
                        counts,
                    );
                    let client = PerMessageClient::connecting(connections, i, shape, waits);
                    self.spawn_client(&handle, i, client);
                }
                Connected::Connection(client) if case.protocol == Protocol::QuicStreams => {
                    self.quic
                        .push(quic::Tap::streams(client.connection.clone()));
                    let client = PerMessageClient::new(client, i, shape, waits);
                    self.spawn_client(&handle, i, client);
                }
                Connected::Connection(client) => {
                    client.check_datagram_fits(case.payload)?;
                    self.quic.push(client.datagram_tap());
                    let client = UdpClient::new(client, i, shape, case.udp_timeout, waits);
                    self.spawn_client(&handle, i, client);
                }
            }
        }
        self.udp = Some(buffers);
        Ok(())
    }

    /// One server socket per runtime (the server's own when apart); client `i` sends to
    /// runtime `i mod N`'s socket.
    fn start_datagrams(&mut self, case: &Case) -> std::io::Result<()> {
        let ip = loopback(case.address_family);
        let shards = self.runtimes.topology.len();
        let mut buffers = UdpBuffers::default();
        let mut server_addrs: Vec<SocketAddr> = Vec::new();
        for k in 0..shards {
            let ep = sockets::udp_endpoint(ip, case.udp_send_buffer, case.server_recv_buffer())?;
            buffers.server_send = ep.send_buffer;
            buffers.server_recv = ep.recv_buffer;
            server_addrs.push(ep.socket.local_addr()?);
            let handle = self.runtimes.server_handle_for(k);
            let _in_runtime = handle.enter();
            let socket = tokio::net::UdpSocket::from_std(ep.socket)?;
            let duty = self.duty(case);
            let serve = datagram::server_task(socket, duty, case.udp_batching())?;
            let task = handle.spawn(guarded(self.panics.clone(), serve));
            self.runtimes.server_tasks.push(task);
        }
        self.start_udp_clients(case, ip, |i| server_addrs[i % shards], buffers)
    }

    /// One connected UDP client socket per client, bound to `local` (port 0), client `i`
    /// sending to `server_of(i)`; the read-back buffer sizes join `buffers`.
    pub(super) fn start_udp_clients(
        &mut self,
        case: &Case,
        local: IpAddr,
        server_of: impl Fn(usize) -> SocketAddr,
        mut buffers: UdpBuffers,
    ) -> std::io::Result<()> {
        for i in 0..case.clients {
            let ep = sockets::udp_endpoint(local, case.udp_send_buffer, case.udp_recv_buffer)?;
            ep.socket.connect(server_of(i))?;
            buffers.add_client(ep.send_buffer, ep.recv_buffer);
            let handle = self.runtimes.topology.handle_for(i);
            let _in_runtime = handle.enter();
            let socket = tokio::net::UdpSocket::from_std(ep.socket)?;
            let batching = case.udp_batching();
            if let Some(batching) = &batching {
                batching.prepare(&socket)?;
            }
            let client = UdpClient::new(
                socket,
                i,
                ClientShape::of(case),
                case.udp_timeout,
                (self.alarm_for_new_client(), self.pacer_for(case, i)),
            );
            let client = match batching {
                Some(batching) => client.batched(batching),
                None => client,
            };
            self.spawn_client(&handle, i, client);
        }
        self.udp = Some(buffers);
        Ok(())
    }
}

/// The answer of a setup task running on a runtime.
pub(super) struct Pending<T>(mpsc::Receiver<std::io::Result<T>>);

/// Runs `task` on `handle`'s runtime (untimed setup: a handshake, a connection); its answer
/// is waited for with [`Pending::wait`].
pub(super) fn on_runtime<T: Send + 'static>(
    handle: &Handle,
    task: impl std::future::Future<Output = std::io::Result<T>> + Send + 'static,
) -> Pending<T> {
    let (done, answer) = mpsc::channel();
    handle.spawn(async move {
        let _ = done.send(task.await);
    });
    Pending(answer)
}

impl<T> Pending<T> {
    /// The task's answer, or "`what` timed out" once `deadline` has passed.
    pub(super) fn wait(
        self,
        deadline: Instant,
        what: impl std::fmt::Display,
    ) -> std::io::Result<T> {
        let left = deadline.saturating_duration_since(Instant::now());
        self.0
            .recv_timeout(left)
            .map_err(|_| std::io::Error::other(format!("{what} timed out")))?
    }
}
