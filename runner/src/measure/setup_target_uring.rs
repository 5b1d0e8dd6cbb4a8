//! Setting up a measurement against an external server (`once --target`) on monoio: each
//! client connects, completes TLS and the WebSocket upgrade on a setup-only tokio runtime
//! (as an in-process monoio measurement does), and is then moved, socket and TLS session,
//! to its shard, where the same client tasks as against echomark's own server run. No
//! server task runs here. Nothing here is timed.

use echomark_archive::Protocol;

use super::report::UdpBuffers;
use super::rig::Rig;
use super::setup::HANDSHAKE_LIMIT;
use super::setup_target::target_tls;
use super::setup_uring::{UringClient, SETUP_LIMIT};
use super::shards::MonoioRuntimes;
use crate::case::{Case, Target};
use crate::framing::codecs::ClientFraming;
use crate::framing::Framing;
use crate::traffic::client::ClientShape;
use crate::traffic::connect::{self, DetachedClient};
use crate::traffic::sockets;
use crate::traffic::stream::Session;

impl Rig<MonoioRuntimes> {
    /// Builds the runtimes and the clients of `case` against `target` on monoio.
    pub(super) fn start_target_uring(case: &Case, target: &Target) -> std::io::Result<Self> {
        let mut rig = Self::empty_uring(case)?;
        match case.protocol {
            Protocol::Udp => {
                let any = sockets::unspecified_for(&target.addr);
                rig.start_uring_udp_clients(case, any, |_| target.addr, UdpBuffers::default())?
            }
            _ => rig.uring_target_streams(case, target)?,
        }
        Ok(rig)
    }

    fn uring_target_streams(&mut self, case: &Case, target: &Target) -> std::io::Result<()> {
        let tls = target_tls(target)?;
        let handshakes = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let websocket = crate::framing::codecs::upgrades(case.protocol);
        let host = target.authority.clone();
        let shape = ClientShape::per_connection(case);
        for i in 0..shape.clients {
            let socket = connect::connect_std(target.addr, HANDSHAKE_LIMIT)?;
            let websocket_host = websocket.then_some(host.as_str());
            let detached = handshakes.block_on(async {
                let stream = tokio::net::TcpStream::from_std(socket)?;
                let setup = connect::establish_client(stream, tls.as_ref(), websocket_host);
                let established = tokio::time::timeout(SETUP_LIMIT, setup)
                    .await
                    .map_err(|_| std::io::Error::other("connection handshake timed out"))??;
                if established.negotiated.is_some() {
                    self.tls = established.negotiated.clone();
                }
                established.detach()
            })?;
            let c = (shape, i, detached);
            let framing =
                ClientFraming::for_target(case.protocol, target.framing, &host, case.payload)?;
            self.uring_target_client(c, framing)?;
        }
        Ok(())
    }

    /// Client `index` on its shard: its session (starting with the bytes that came early),
    /// its reader and writer, and its phase driver.
    fn uring_target_client<F: Framing>(
        &mut self,
        (shape, index, established): (ClientShape, usize, DetachedClient),
        framing: F,
    ) -> std::io::Result<()> {
        let mut session = Session::new(index, shape, framing, (self.alarm_for_new_client(), None));
        session.recv.preload(&established.early);
        let client = UringClient {
            index,
            socket: established.socket,
            tls: established.tls,
            tasks: (self.runtimes.clients.clone(), self.runtimes.helpers.clone()),
            channels: (self.commands_rx.clone(), self.reports_tx.clone()),
        };
        self.runtimes.ask(
            index,
            SETUP_LIMIT,
            move || async move { client.start(session) },
        )
    }
}
