//! Setting up a measurement's sockets and tasks on monoio before any phase. Sockets are
//! made on the orchestrator thread as for tokio; stream handshakes (TLS, WebSocket upgrade)
//! run on a setup-only tokio runtime with tokio's code and are then detached; each shard
//! receives its sockets in a job and builds its tasks there. Nothing here is timed.

use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use echomark_archive::Protocol;
use monoio::io::{AsyncReadRent, AsyncWriteRent, Splitable};

use super::report::UdpBuffers;
use super::rig::{guarded, Rig};
use super::shards::{self, MonoioRuntimes, OpenSocket, TaskCount};
use crate::case::{loopback, Case};
use crate::framing::codecs::{self, ClientFraming, ServerFraming};
use crate::framing::Framing;
use crate::traffic::client::ClientShape;
use crate::traffic::connect::{self, Detached};
use crate::traffic::phase;
use crate::traffic::sockets;
use crate::traffic::stream::Session;
use crate::traffic::tls::Tls;
use crate::traffic::uring::{datagram, stream};

/// How long one connection's handshakes, or a shard's answer, may take.
pub(super) const SETUP_LIMIT: Duration = Duration::from_secs(10);

/// Starts a stream client's reader and writer on the two halves of `conn` (plain or TLS),
/// counted in `tasks`; the reader holds the socket's listing until it ends.
fn spawn_halves<T, F>(conn: T, link: &Rc<stream::Link<F>>, open: OpenSocket, tasks: &TaskCount)
where
    T: monoio::io::Split + AsyncReadRent + AsyncWriteRent + 'static,
    F: Framing,
{
    let (rd, wr) = conn.into_split();
    let reader = link.clone();
    shards::spawn_counted(tasks, async move {
        let _open = open;
        stream::read_echoes(rd, reader).await
    });
    shards::spawn_counted(tasks, stream::write_queued(wr, link.clone()));
}

/// A stream client's connection and what it reports to, for its shard to start.
pub(super) struct UringClient {
    pub index: usize,
    pub socket: std::net::TcpStream,
    pub tls: Option<rustls::ClientConnection>,
    /// The counts of phase drivers and of other tasks.
    pub tasks: (TaskCount, TaskCount),
    pub channels: (
        tokio::sync::watch::Receiver<phase::Command>,
        std::sync::mpsc::Sender<phase::ClientReport>,
    ),
}

impl UringClient {
    /// Starts the client on the current shard (call inside a shard's job): its reader and
    /// writer on the socket (plain or TLS), and its phase driver around `session`.
    pub(super) fn start<F: Framing>(self, session: Session<F>) -> std::io::Result<()> {
        let (clients, helpers) = self.tasks;
        let (commands, reports) = self.channels;
        let open = OpenSocket::of(&self.socket);
        let socket = monoio::net::TcpStream::from_std(self.socket)?;
        let link = stream::Link::new(session);
        match self.tls {
            None => spawn_halves(socket, &link, open, &helpers),
            Some(tls) => {
                let tls = monoio_rustls::ClientTlsStream::new(socket, tls);
                spawn_halves(tls, &link, open, &helpers)
            }
        }
        let client = stream::UringStreamClient::new(link);
        shards::spawn_counted(
            &clients,
            phase::drive_local(self.index, client, commands, reports),
        );
        Ok(())
    }
}

impl Rig<MonoioRuntimes> {
    /// The runtimes of `case` on monoio, no sockets or tasks yet; the IO driver they run
    /// on is recorded.
    pub(super) fn empty_uring(case: &Case) -> std::io::Result<Self> {
        let runtimes = MonoioRuntimes::start(
            case.io_model,
            case.io_threads,
            case.client_cpus.as_ref(),
            case.server_cpus.as_ref(),
        )
        .map_err(std::io::Error::other)?;
        let driver = runtimes.ask(0, SETUP_LIMIT, || async {
            Ok(shards::current_driver().to_string())
        })?;
        let mut rig = Rig::empty(case, runtimes);
        rig.io_driver = Some(driver);
        Ok(rig)
    }

    /// Builds the runtimes, sockets and tasks for `case` on monoio.
    pub(super) fn start_uring(case: &Case) -> std::io::Result<Self> {
        let mut rig = Self::empty_uring(case)?;
        match case.protocol {
            Protocol::Udp => rig.start_datagrams(case)?,
            _ => rig.start_streams(case)?,
        }
        Ok(rig)
    }

    fn start_streams(&mut self, case: &Case) -> std::io::Result<()> {
        let ip = loopback(case.address_family);
        let tls = Tls::when_needed(case.protocol, ip)?;
        let handshakes = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        for (i, pair) in sockets::tcp_pairs(ip, case.clients)?
            .into_iter()
            .enumerate()
        {
            let host = pair.client.peer_addr()?.to_string();
            let websocket_host = codecs::upgrades(case.protocol).then(|| host.clone());
            let detached = handshakes.block_on(async {
                let client = tokio::net::TcpStream::from_std(pair.client)?;
                let server = tokio::net::TcpStream::from_std(pair.server)?;
                let setup =
                    connect::establish(client, server, tls.as_ref(), websocket_host.as_deref());
                tokio::time::timeout(SETUP_LIMIT, setup)
                    .await
                    .map_err(|_| std::io::Error::other("connection handshake timed out"))??
                    .detach()
            })?;
            if detached.tls.is_some() {
                self.tls = detached.tls.clone();
            }
            self.start_stream(
                case,
                i,
                detached,
                ClientFraming::in_process(case.protocol, &host)?,
                ServerFraming::of(case.protocol),
            )?;
        }
        Ok(())
    }

    /// One stream connection: its server task on the shard of its server side, then its
    /// client's reader, writer and driver on the client's shard (the same one unless
    /// apart).
    fn start_stream<C: Framing, S: Framing>(
        &mut self,
        case: &Case,
        index: usize,
        pair: Detached,
        client_framing: C,
        server_framing: S,
    ) -> std::io::Result<()> {
        let duty = self.duty(case);
        let session = Session::new(
            index,
            ClientShape::of(case),
            client_framing,
            (self.alarm_for_new_client(), None),
        );
        let (commands, reports) = (self.commands_rx.clone(), self.reports_tx.clone());
        let (servers, clients, helpers) = (
            self.runtimes.servers.clone(),
            self.runtimes.clients.clone(),
            self.runtimes.helpers.clone(),
        );
        let panics = self.panics.clone();
        let (server_socket, server_tls) = (pair.server, pair.server_tls);
        self.runtimes
            .ask_server(index, SETUP_LIMIT, move || async move {
                let open = OpenSocket::of(&server_socket);
                let server = monoio::net::TcpStream::from_std(server_socket)?;
                let serving = async move {
                    let _open = open;
                    match server_tls {
                        None => stream::serve(server, duty, server_framing).await,
                        Some(session) => {
                            let server = monoio_rustls::ServerTlsStream::new(server, session);
                            stream::serve(server, duty, server_framing).await
                        }
                    }
                };
                shards::spawn_counted(&servers, guarded(panics, serving));
                Ok(())
            })?;
        self.runtimes.ask(index, SETUP_LIMIT, move || async move {
            let client = UringClient {
                index,
                socket: pair.client,
                tls: pair.client_tls,
                tasks: (clients, helpers),
                channels: (commands, reports),
            };
            client.start(session)
        })
    }

    /// One server socket per runtime (the server's own when apart); client `i` sends to
    /// runtime `i mod N`'s socket.
    fn start_datagrams(&mut self, case: &Case) -> std::io::Result<()> {
        let ip = loopback(case.address_family);
        let mut buffers = UdpBuffers::default();
        let mut server_addrs: Vec<SocketAddr> = Vec::new();
        for k in 0..self.runtimes.len() {
            let ep = sockets::udp_endpoint(ip, case.udp_send_buffer, case.server_recv_buffer())?;
            buffers.server_send = ep.send_buffer;
            buffers.server_recv = ep.recv_buffer;
            server_addrs.push(ep.socket.local_addr()?);
            let duty = self.duty(case);
            let (servers, panics) = (self.runtimes.servers.clone(), self.panics.clone());
            let socket = ep.socket;
            self.runtimes
                .ask_server(k, SETUP_LIMIT, move || async move {
                    let open = OpenSocket::of(&socket);
                    let socket = monoio::net::udp::UdpSocket::from_std(socket)?;
                    let serving = async move {
                        let _open = open;
                        datagram::serve(socket, duty).await
                    };
                    shards::spawn_counted(&servers, guarded(panics, serving));
                    Ok(())
                })?;
        }
        self.start_uring_udp_clients(case, ip, |i| server_addrs[i % server_addrs.len()], buffers)
    }

    /// One connected UDP socket per client, bound to `local`, sending to `server_of(i)`:
    /// its receiver, sender and driver on the client's shard.
    pub(super) fn start_uring_udp_clients(
        &mut self,
        case: &Case,
        local: std::net::IpAddr,
        server_of: impl Fn(usize) -> SocketAddr,
        mut buffers: UdpBuffers,
    ) -> std::io::Result<()> {
        for i in 0..case.clients {
            let ep = sockets::udp_endpoint(local, case.udp_send_buffer, case.udp_recv_buffer)?;
            ep.socket.connect(server_of(i))?;
            buffers.add_client(ep.send_buffer, ep.recv_buffer);
            let (shape, timeout, alarm) = (
                ClientShape::of(case),
                case.udp_timeout,
                self.alarm_for_new_client(),
            );
            let (commands, reports) = (self.commands_rx.clone(), self.reports_tx.clone());
            let (clients, helpers) = (self.runtimes.clients.clone(), self.runtimes.helpers.clone());
            let socket = ep.socket;
            self.runtimes.ask(i, SETUP_LIMIT, move || async move {
                let open = OpenSocket::of(&socket);
                let socket = monoio::net::udp::UdpSocket::from_std(socket)?;
                let link = datagram::DatagramLink::new(socket, i, shape, timeout, alarm);
                let receiver = link.clone();
                shards::spawn_counted(&helpers, async move {
                    let _open = open;
                    datagram::receive_echoes(receiver).await
                });
                shards::spawn_counted(&helpers, datagram::send_queued(link.clone()));
                let client = datagram::UringUdpClient::new(link);
                shards::spawn_counted(&clients, phase::drive_local(i, client, commands, reports));
                Ok(())
            })?;
        }
        self.udp = Some(buffers);
        Ok(())
    }
}
