//! `once --backend io-uring`: the clients on [`crate::iouring`]'s rings, one thread per ring
//! (`shared 1`, or `sharded N`). In process each ring carries its clients and the server
//! they measure (its own listener or UDP socket), so a round trip runs on one thread as in
//! the blocking floor; against `--target` it carries only clients. Sockets are connected
//! and WebSocket upgrades done here, on the orchestrator thread (the upgrades on a
//! setup-only tokio runtime, as for monoio), then handed to their ring. Nothing here is
//! timed.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use echomark_archive::{IoModel, Protocol, RingCounters};

use super::report::UdpBuffers;
use super::rig::Rig;
use super::runtimes::Runtimes;
use super::setup::HANDSHAKE_LIMIT;
use crate::case::{loopback, Case, Target};
use crate::framing::codecs::{self, ClientFraming, ServerFraming};
use crate::instruments::counters::ServerStats;
use crate::iouring::client::datagram::DatagramClient;
use crate::iouring::client::stream::StreamClient;
use crate::iouring::client::Clients;
use crate::iouring::{self, server, Guest, Hooks, ShardContext, Tuning};
use crate::traffic::client::{ClientShape, OrderRule};
use crate::traffic::connect;
use crate::traffic::sockets;
use crate::traffic::stream::{ServerDuty, Session};

/// The ring threads of one measurement.
pub struct RingRuntimes {
    threads: Vec<JoinHandle<RingCounters>>,
    stop: Arc<AtomicBool>,
}

impl Runtimes for RingRuntimes {
    fn stop(mut self) -> Option<RingCounters> {
        self.stop.store(true, Ordering::Relaxed);
        let mut total = RingCounters::default();
        for thread in std::mem::take(&mut self.threads) {
            if let Ok(counters) = thread.join() {
                total.add(&counters);
            }
        }
        Some(total)
    }
}

impl Drop for RingRuntimes {
    fn drop(&mut self) {
        // A setup that failed half-way leaves no ring running.
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// An in-process server half's counters: every connection of a shard reports into its
/// shard's duty (a client's shard with no server half has one nobody reads).
struct ShardDuty(ServerDuty);

impl Hooks for ShardDuty {
    fn duty(&self) -> ServerDuty {
        self.0.clone()
    }
}

/// Where shard `k`'s clients go, and what it serves in process.
struct Shard<C> {
    clients: mpsc::Sender<C>,
    /// In process: the address its server half listens on.
    server: Option<SocketAddr>,
}

/// What a shard thread runs: its server half (if any) and its clients.
enum Serving {
    Streams(Option<std::net::TcpListener>),
    Datagrams(std::net::UdpSocket),
}

impl Rig<RingRuntimes> {
    /// The clients of `case` (and in process its server) on io_uring rings.
    pub(super) fn start_ring(case: &Case) -> std::io::Result<Self> {
        iouring::probe()?;
        if case.server_cpus.is_some() {
            return Err(std::io::Error::other(
                "--backend io-uring runs each client beside the server it measures, on one \
                 ring and one thread: --server-cpus does not apply (pin both with \
                 --client-cpus)",
            ));
        }
        let runtimes = RingRuntimes {
            threads: Vec::new(),
            stop: Arc::new(AtomicBool::new(false)),
        };
        let mut rig = Rig::empty(case, runtimes);
        rig.io_driver = Some("io_uring".into());
        match (&case.target, case.protocol) {
            (None, Protocol::Udp) => rig.in_process_datagrams(case)?,
            (None, _) => rig.in_process_streams(case)?,
            (Some(target), Protocol::Udp) => rig.target_datagrams(case, target)?,
            (Some(target), _) => rig.target_streams(case, target)?,
        }
        Ok(rig)
    }

    /// How many rings `case` runs on.
    fn rings(case: &Case) -> usize {
        match case.io_model {
            IoModel::Shared => 1,
            IoModel::Sharded => case.io_threads.max(1),
        }
    }

    /// Registered file slots per ring: every connection of its server half and of its
    /// clients (from the top of the table down).
    fn slots(case: &Case) -> u32 {
        let per_ring = case.connections().0.div_ceil(Self::rings(case));
        u32::try_from(2 * per_ring + 16)
            .unwrap_or(server::SLOTS)
            .min(server::SLOTS)
    }

    /// The registered file slot of the `n`th client of a ring.
    fn client_slot(case: &Case, n: usize) -> usize {
        (Self::slots(case) as usize).saturating_sub(1 + n)
    }

    /// Starts ring `k` serving `serving` (in process, with `duty`) and carrying the clients
    /// sent to the returned channel.
    fn start_shard<C>(
        &mut self,
        case: &Case,
        k: usize,
        serving: Serving,
        duty: ServerDuty,
    ) -> std::io::Result<mpsc::Sender<C>>
    where
        C: iouring::client::RingClient + Send + 'static,
    {
        // In process the server half shares the ring: receives follow the other half's
        // sends into the connections' own buffers (no multishot, so no zero-copy echo).
        let paired = !matches!(serving, Serving::Streams(None));
        let tuning = if paired {
            Tuning {
                multishot: false,
                zero_copy: false,
                ..Tuning::default()
            }
        } else {
            Tuning::default()
        };
        let (clients, incoming) = mpsc::channel();
        let channels = (self.commands_rx.clone(), self.reports_tx.clone());
        let (ready, started) = mpsc::channel();
        let failed = ready.clone();
        let ctx = ShardContext {
            index: k,
            tuning,
            protocol: case.protocol,
            cpus: case.client_cpus.clone(),
            hooks: Arc::new(ShardDuty(duty)),
            stop: self.runtimes.stop.clone(),
            slots: Self::slots(case),
            paired,
            ready: Some(ready),
        };
        let (protocol, spin) = (case.protocol, case.spin);
        let thread = iouring::spawn(format!("echomark-ring-{k}"), k, failed, move || {
            // Made on its thread: its buffer ring is the ring's, and stays there.
            let guest = Clients::<C>::new(incoming, channels, (tuning.multishot, paired), spin);
            run_shard(ctx, serving, protocol, guest)
        })?;
        self.runtimes.threads.push(thread);
        iouring::started(k, &started)?;
        Ok(clients)
    }

    fn in_process_streams(&mut self, case: &Case) -> std::io::Result<()> {
        let ip = loopback(case.address_family);
        let mut shards = Vec::new();
        for k in 0..Self::rings(case) {
            let listener = sockets::tcp_listener(SocketAddr::new(ip, 0))?;
            let server = Some(listener.local_addr()?);
            let duty = self.duty(case);
            let clients = self.start_shard(case, k, Serving::Streams(Some(listener)), duty)?;
            shards.push(Shard { clients, server });
        }
        let shape = ClientShape::of(case);
        let handshakes = upgrade_runtime(case)?;
        for i in 0..case.clients {
            let shard = &shards[i % shards.len()];
            let addr = shard.server.expect("in process, every ring serves");
            let host = addr.to_string();
            let framing = ClientFraming::in_process(case.protocol, &host)?;
            let client = self.stream_client(
                case,
                (i, shape),
                addr,
                (&host, handshakes.as_ref()),
                framing,
            )?;
            send(&shard.clients, client)?;
        }
        Ok(())
    }

    fn target_streams(&mut self, case: &Case, target: &Target) -> std::io::Result<()> {
        let mut shards = Vec::new();
        for k in 0..Self::rings(case) {
            let clients = self.start_shard(case, k, Serving::Streams(None), unread_duty(case))?;
            shards.push(clients);
        }
        let shape = ClientShape::per_connection(case);
        let host = target.authority.clone();
        let handshakes = upgrade_runtime(case)?;
        for i in 0..shape.clients {
            let framing =
                ClientFraming::for_target(case.protocol, target.framing, &host, case.payload)?;
            let client = self.stream_client(
                case,
                (i, shape),
                target.addr,
                (&host, handshakes.as_ref()),
                framing,
            )?;
            send(&shards[i % shards.len()], client)?;
        }
        Ok(())
    }

    /// Client `index`, connected to `addr` (upgraded to WebSocket on `handshakes` when
    /// there is one), with its session.
    fn stream_client(
        &mut self,
        case: &Case,
        (index, shape): (usize, ClientShape),
        addr: SocketAddr,
        (host, handshakes): (&str, Option<&tokio::runtime::Runtime>),
        framing: ClientFraming,
    ) -> std::io::Result<StreamClient<ClientFraming>> {
        let socket = connect::connect_std(addr, HANDSHAKE_LIMIT)?;
        let (socket, early) = if let Some(handshakes) = handshakes {
            let detached = handshakes.block_on(async {
                let stream = tokio::net::TcpStream::from_std(socket)?;
                let setup = connect::establish_client(stream, None, Some(host));
                tokio::time::timeout(HANDSHAKE_LIMIT, setup)
                    .await
                    .map_err(|_| std::io::Error::other("WebSocket upgrade timed out"))??
                    .detach()
            })?;
            (detached.socket, detached.early)
        } else {
            (socket, Vec::new())
        };
        let mut session = Session::new(index, shape, framing, (self.alarm_for_new_client(), None));
        session.recv.preload(&early);
        let rings = Self::rings(case);
        Ok(StreamClient::new(
            socket,
            session,
            Self::client_slot(case, index / rings),
        ))
    }

    fn in_process_datagrams(&mut self, case: &Case) -> std::io::Result<()> {
        let ip = loopback(case.address_family);
        let mut buffers = UdpBuffers::default();
        let mut shards = Vec::new();
        for k in 0..Self::rings(case) {
            let ep = sockets::udp_endpoint(ip, case.udp_send_buffer, case.server_recv_buffer())?;
            buffers.server_send = ep.send_buffer;
            buffers.server_recv = ep.recv_buffer;
            let server = Some(ep.socket.local_addr()?);
            let duty = self.duty(case);
            let clients = self.start_shard(case, k, Serving::Datagrams(ep.socket), duty)?;
            shards.push(Shard { clients, server });
        }
        self.datagram_clients(case, ip, &shards, buffers)
    }

    fn target_datagrams(&mut self, case: &Case, target: &Target) -> std::io::Result<()> {
        let mut shards = Vec::new();
        for k in 0..Self::rings(case) {
            let clients = self.start_shard(case, k, Serving::Streams(None), unread_duty(case))?;
            shards.push(Shard {
                clients,
                server: Some(target.addr),
            });
        }
        let local = sockets::unspecified_for(&target.addr);
        self.datagram_clients(case, local, &shards, UdpBuffers::default())
    }

    /// One connected UDP socket per client, bound to `local`, sending to its ring's server.
    fn datagram_clients(
        &mut self,
        case: &Case,
        local: std::net::IpAddr,
        shards: &[Shard<DatagramClient>],
        mut buffers: UdpBuffers,
    ) -> std::io::Result<()> {
        let shape = ClientShape::of(case);
        for i in 0..case.clients {
            let shard = &shards[i % shards.len()];
            let ep = sockets::udp_endpoint(local, case.udp_send_buffer, case.udp_recv_buffer)?;
            ep.socket
                .connect(shard.server.expect("every ring sends to a server"))?;
            buffers.add_client(ep.send_buffer, ep.recv_buffer);
            let _ = self.alarm_for_new_client();
            let client = DatagramClient::new(
                ep.socket,
                shape.core(i, OrderRule::Increasing),
                (case.udp_timeout, self.tick),
                Self::client_slot(case, i / shards.len()),
            );
            send(&shard.clients, client)?;
        }
        self.udp = Some(buffers);
        Ok(())
    }
}

/// The setup-only tokio runtime every WebSocket upgrade of `case` runs on (none for the
/// other protocols), built once for all its clients.
fn upgrade_runtime(case: &Case) -> std::io::Result<Option<tokio::runtime::Runtime>> {
    if !codecs::upgrades(case.protocol) {
        return Ok(None);
    }
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map(Some)
}

/// Hands `client` to its ring.
fn send<C>(ring: &mpsc::Sender<C>, client: C) -> std::io::Result<()> {
    ring.send(client)
        .map_err(|_| std::io::Error::other("an io_uring shard stopped during setup"))
}

/// The duty of a ring with no server half: nothing reports into it.
fn unread_duty(case: &Case) -> ServerDuty {
    ServerDuty {
        work_rounds: case.work,
        stats: Arc::new(ServerStats::default()),
        fault: None,
        closing: Arc::new(AtomicBool::new(false)),
        echo_foreign: false,
        idle: None,
    }
}

/// One ring's loop: its server half as `serving` says, and `guest`.
fn run_shard<G: Guest>(
    ctx: ShardContext,
    serving: Serving,
    protocol: Protocol,
    guest: G,
) -> std::io::Result<RingCounters> {
    match serving {
        Serving::Streams(listener) => {
            server::stream::serve(ctx, listener, ServerFraming::of(protocol), false, guest)
        }
        Serving::Datagrams(socket) => server::datagram::serve(ctx, socket, guest),
    }
}
