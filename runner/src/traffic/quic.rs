//! QUIC for `--protocol quic` (RFC 9000) on quinn, in process on tokio: a self-signed
//! certificate made at start (the same rcgen and rustls, ring provider, as the TLS
//! protocols, TLS 1.3 only as QUIC requires, ALPN `echomark`), one server endpoint (UDP
//! socket) per runtime, and per client its own endpoint and connection with one long-lived
//! bidirectional stream carrying TCP's length-prefixed messages. The handshake and the
//! stream's opening happen during setup, untimed; the stream is announced to the server by
//! the first message, so the server accepts it in the warmup.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

use super::stream::{self, ServerDuty};
use super::tls::TlsError;
use crate::framing::prefix::LengthPrefix;

/// The ALPN both ends offer.
pub const ALPN: &[u8] = b"echomark";
/// The name the client checks the certificate against (the certificate also names the IP).
const SERVER_NAME: &str = "localhost";

/// The server's and the client's configuration around one fresh certificate.
#[derive(Clone)]
pub struct QuicConfigs {
    pub server: quinn::ServerConfig,
    pub client: quinn::ClientConfig,
}

impl QuicConfigs {
    /// A self-signed certificate for `ip` and `localhost`, trusted by the client alone.
    pub fn self_signed(ip: IpAddr) -> Result<Self, TlsError> {
        let certified =
            rcgen::generate_simple_self_signed(vec![ip.to_string(), SERVER_NAME.into()])?;
        let certificate = certified.cert.der().clone();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            certified.signing_key.serialize_der(),
        ));
        let tls13 = [&rustls::version::TLS13];
        let mut server = rustls::ServerConfig::builder_with_provider(super::tls::provider())
            .with_protocol_versions(&tls13)?
            .with_no_client_auth()
            .with_single_cert(vec![certificate.clone()], key)?;
        server.alpn_protocols = vec![ALPN.to_vec()];
        let mut roots = rustls::RootCertStore::empty();
        roots.add(certificate)?;
        let mut client = rustls::ClientConfig::builder_with_provider(super::tls::provider())
            .with_protocol_versions(&tls13)?
            .with_root_certificates(roots)
            .with_no_client_auth();
        client.alpn_protocols = vec![ALPN.to_vec()];
        let quic = |e: &dyn std::fmt::Display| TlsError::Quic(e.to_string());
        Ok(Self {
            server: quinn::ServerConfig::with_crypto(Arc::new(
                QuicServerConfig::try_from(server).map_err(|e| quic(&e))?,
            )),
            client: quinn::ClientConfig::new(Arc::new(
                QuicClientConfig::try_from(client).map_err(|e| quic(&e))?,
            )),
        })
    }
}

/// A client's QUIC connection: its endpoint (its UDP socket), the connection, and the
/// stream's two directions.
pub struct QuicStream {
    pub recv: quinn::RecvStream,
    pub send: quinn::SendStream,
    /// The connection (also what its statistics are read from).
    pub connection: quinn::Connection,
    _endpoint: quinn::Endpoint,
}

/// Connects a new client endpoint on `ip` to `server` and opens the bidirectional stream
/// (call inside the client's runtime).
pub async fn connect(
    ip: IpAddr,
    server: SocketAddr,
    config: quinn::ClientConfig,
) -> std::io::Result<QuicStream> {
    let mut endpoint = quinn::Endpoint::client(SocketAddr::new(ip, 0))?;
    endpoint.set_default_client_config(config);
    let connection = endpoint
        .connect(server, SERVER_NAME)
        .map_err(std::io::Error::other)?
        .await
        .map_err(std::io::Error::other)?;
    let (send, recv) = connection.open_bi().await.map_err(std::io::Error::other)?;
    Ok(QuicStream {
        recv,
        send,
        connection,
        _endpoint: endpoint,
    })
}

/// quinn's statistics of `connections`, summed (averaged where a sum means nothing).
pub fn counters(connections: &[quinn::Connection]) -> Option<echomark_archive::QuicCounters> {
    if connections.is_empty() {
        return None;
    }
    let mut c = echomark_archive::QuicCounters {
        connections: connections.len() as u64,
        current_mtu: u64::MAX,
        ..Default::default()
    };
    for connection in connections {
        let s = connection.stats();
        c.sent_packets += s.path.sent_packets;
        c.lost_packets += s.path.lost_packets;
        c.lost_bytes += s.path.lost_bytes;
        c.congestion_events += s.path.congestion_events;
        c.udp_tx_datagrams += s.udp_tx.datagrams;
        c.udp_tx_ios += s.udp_tx.ios;
        c.udp_rx_datagrams += s.udp_rx.datagrams;
        c.smoothed_rtt_us += s.path.rtt.as_secs_f64() * 1e6;
        c.cwnd_bytes += s.path.cwnd as f64;
        c.current_mtu = c.current_mtu.min(u64::from(s.path.current_mtu));
    }
    let n = connections.len() as f64;
    c.smoothed_rtt_us /= n;
    c.cwnd_bytes /= n;
    Some(c)
}

/// Accepts one connection per duty on `endpoint` and echoes its first bidirectional
/// stream with the length-prefix framing, each on a task of its own on this runtime.
pub async fn serve_endpoint(endpoint: quinn::Endpoint, duties: Vec<ServerDuty>) {
    let mut tasks = Vec::with_capacity(duties.len());
    for duty in duties {
        let Some(incoming) = endpoint.accept().await else {
            break;
        };
        tasks.push(tokio::spawn(async move {
            let Ok(connection) = incoming.await else {
                return;
            };
            let Ok((send, recv)) = connection.accept_bi().await else {
                return;
            };
            stream::serve(tokio::io::join(recv, send), duty, LengthPrefix).await;
            drop(connection);
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
}
