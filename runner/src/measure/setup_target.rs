//! Setting up a measurement against an external server (`once --target`) on tokio: the
//! clients connect to the target, complete TLS and the WebSocket upgrade there, and run the
//! same client code as against echomark's own server. No server task runs here, so the
//! server-side counters are unknown (the orchestrator records them as absent). Nothing here
//! is timed.

use std::net::SocketAddr;

use echomark_archive::Protocol;

use super::report::UdpBuffers;
use super::rig::Rig;
use super::setup::{on_runtime, HANDSHAKE_LIMIT};
use super::topology::TokioRuntimes;
use crate::case::{Case, Target};
use crate::framing::codecs::ClientFraming;
use crate::framing::Framing;
use crate::traffic::client::ClientShape;
use crate::traffic::connect;
use crate::traffic::connect::Conn;
use crate::traffic::sockets;
use crate::traffic::stream::StreamClient;
use crate::traffic::tls::TlsClient;

/// The TLS client a target asks for (`--tls-ca` or `--tls-insecure`), if its protocol
/// uses TLS.
pub(super) fn target_tls(target: &Target) -> std::io::Result<Option<TlsClient>> {
    match &target.tls {
        Some((trust, name)) => Ok(Some(
            TlsClient::for_target(trust, name).map_err(std::io::Error::other)?,
        )),
        None => Ok(None),
    }
}

impl Rig<TokioRuntimes> {
    /// Builds the runtimes and the clients of `case` against `target`.
    pub(super) fn start_target(case: &Case, target: &Target) -> std::io::Result<Self> {
        let runtimes = TokioRuntimes::start(
            case.io_model,
            case.io_threads,
            case.client_cpus.as_ref(),
            None,
        )?;
        let mut rig = Rig::empty(case, runtimes);
        rig.io_driver = Some("epoll".to_string());
        match case.protocol {
            Protocol::Udp => rig.target_datagrams(case, target)?,
            p if p.is_quic() => rig.target_quic(case, target)?,
            _ => rig.target_streams(case, target)?,
        }
        Ok(rig)
    }

    fn target_streams(&mut self, case: &Case, target: &Target) -> std::io::Result<()> {
        let tls = target_tls(target)?;
        let host = target.authority.clone();
        let shape = ClientShape::per_connection(case);
        let websocket = crate::framing::codecs::upgrades(case.protocol);
        for i in 0..shape.clients {
            // The connection, and the bytes the server sent right after its `101`.
            let conn = self.connect(i, target.addr, tls.as_ref(), websocket.then_some(&host))?;
            let framing =
                ClientFraming::for_target(case.protocol, target.framing, &host, case.payload)?;
            self.start_target_client((case, shape), i, conn, framing);
        }
        Ok(())
    }

    /// Client `index`'s connection to `addr`, with its TLS handshake and WebSocket upgrade
    /// done on the client's own runtime, and the bytes the server sent right after its `101`.
    fn connect(
        &mut self,
        index: usize,
        addr: SocketAddr,
        tls: Option<&TlsClient>,
        websocket_host: Option<&String>,
    ) -> std::io::Result<(Conn, Vec<u8>)> {
        let stream = connect::connect_std(addr, HANDSHAKE_LIMIT)?;
        let handle = self.runtimes.topology.handle_for(index);
        let _in_runtime = handle.enter();
        let stream = tokio::net::TcpStream::from_std(stream)?;
        let (tls, host) = (tls.cloned(), websocket_host.cloned());
        let established = on_runtime(&handle, async move {
            connect::establish_client(stream, tls.as_ref(), host.as_deref()).await
        })
        .wait(
            std::time::Instant::now() + HANDSHAKE_LIMIT,
            format_args!("handshake with {addr}"),
        )?;
        if established.negotiated.is_some() {
            self.tls = established.negotiated.clone();
        }
        Ok(established.into_conn())
    }

    fn start_target_client<F: Framing>(
        &mut self,
        (case, shape): (&Case, ClientShape),
        index: usize,
        (conn, early): (Conn, Vec<u8>),
        framing: F,
    ) {
        let handle = self.runtimes.topology.handle_for(index);
        let mut client = StreamClient::new(
            conn,
            index,
            shape,
            framing,
            (self.alarm_for_new_client(), self.pacer_for(case, index)),
        );
        client.received_early(&early);
        self.spawn_client(&handle, index, client);
    }

    /// One QUIC connection per client, each on its own UDP socket bound to the unspecified
    /// address of the target's family, checking the server's certificate as `--tls-ca` or
    /// `--tls-insecure` says.
    fn target_quic(&mut self, case: &Case, target: &Target) -> std::io::Result<()> {
        let tls = target_tls(target)?.ok_or_else(|| {
            std::io::Error::other("a QUIC target needs --tls-ca FILE or --tls-insecure")
        })?;
        let config = crate::traffic::quic::target_client_config(&tls, target.alpn.as_deref())
            .map_err(std::io::Error::other)?;
        let name = tls.server_name();
        let any = sockets::unspecified_for(&target.addr);
        self.start_quic_clients(
            case,
            any,
            |_| (target.addr, name.as_str()),
            &config,
            UdpBuffers::default(),
        )
    }

    /// One connected UDP socket per client, bound to the unspecified address of the
    /// target's family so the kernel picks the route.
    fn target_datagrams(&mut self, case: &Case, target: &Target) -> std::io::Result<()> {
        let any = sockets::unspecified_for(&target.addr);
        self.start_udp_clients(case, any, |_| target.addr, UdpBuffers::default())
    }
}
