//! QUIC (RFC 9000) on quinn, in process on tokio: a self-signed certificate made at start
//! (the same rcgen and rustls, ring provider, as the TLS protocols, TLS 1.3 only as QUIC
//! requires, ALPN `echomark`), one server endpoint per runtime and per client its own
//! endpoint, each on a UDP socket echomark opens with the buffer sizes the case asks for.
//! Handshakes happen during setup, untimed. Three ways to carry messages:
//!
//! - `quic`: one long-lived bidirectional stream per client carrying TCP's length-prefixed
//!   messages (announced to the server by the first message, so it is accepted in the
//!   warmup);
//! - `quic-streams`: a new bidirectional stream per message ([`per_message`]);
//! - `quic-datagram`: one unreliable datagram per message ([`datagram`]), through the UDP
//!   client.

pub mod datagram;
pub mod limits;
pub mod per_message;
pub mod server;

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::tls::TlsError;

pub use crate::message::ALPN;
/// The name the client checks the certificate against in process (the certificate also
/// names the IP).
pub const SERVER_NAME: &str = "localhost";

/// The server's and the client's configuration around one fresh certificate.
#[derive(Clone)]
pub struct QuicConfigs {
    pub server: quinn::ServerConfig,
    pub client: quinn::ClientConfig,
}

impl QuicConfigs {
    /// A self-signed certificate for `ip` and `localhost`, trusted by the client alone.
    pub fn self_signed(ip: IpAddr) -> Result<Self, TlsError> {
        let (server, certificate) = self_signed_server(vec![ip.to_string(), SERVER_NAME.into()])?;
        let mut roots = rustls::RootCertStore::empty();
        roots.add(certificate)?;
        let client = rustls::ClientConfig::builder_with_provider(super::tls::provider())
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Self {
            server,
            client: client_config(client)?,
        })
    }
}

/// A server configuration (TLS 1.3, ALPN `echomark`) around a fresh self-signed
/// certificate for `names`, and the certificate (for `serve --tls-certificate-out`).
pub fn self_signed_server(
    names: Vec<String>,
) -> Result<(quinn::ServerConfig, CertificateDer<'static>), TlsError> {
    let certified = rcgen::generate_simple_self_signed(names)?;
    let certificate = certified.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        certified.signing_key.serialize_der(),
    ));
    let mut server = rustls::ServerConfig::builder_with_provider(super::tls::provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(vec![certificate.clone()], key)?;
    server.alpn_protocols = vec![ALPN.to_vec()];
    // 0-RTT (`quic-0rtt`): quinn takes early data of any size or none.
    server.max_early_data_size = u32::MAX;
    let crypto = QuicServerConfig::try_from(server)?;
    Ok((
        quinn::ServerConfig::with_crypto(Arc::new(crypto)),
        certificate,
    ))
}

/// A QUIC client configuration from a rustls one (its trust), with ALPN `echomark`.
pub fn client_config(client: rustls::ClientConfig) -> Result<quinn::ClientConfig, TlsError> {
    client_config_offering(client, ALPN)
}

/// A QUIC client configuration from a rustls one (its trust), offering `alpn`.
fn client_config_offering(
    mut client: rustls::ClientConfig,
    alpn: &[u8],
) -> Result<quinn::ClientConfig, TlsError> {
    client.alpn_protocols = vec![alpn.to_vec()];
    // Sessions are resumed (rustls keeps tickets in memory); early data is sent only where
    // a protocol asks for 0-RTT.
    client.enable_early_data = true;
    let crypto = QuicClientConfig::try_from(client)?;
    Ok(quinn::ClientConfig::new(Arc::new(crypto)))
}

/// The client configuration for an external server (`once --target`, `verify`): the trust
/// and server name `tls` was built with, offering `alpn` (`echomark` when `None`).
pub fn target_client_config(
    tls: &super::tls::TlsClient,
    alpn: Option<&str>,
) -> Result<quinn::ClientConfig, TlsError> {
    let alpn = alpn.map_or(ALPN, str::as_bytes);
    client_config_offering(tls.rustls_config().clone(), alpn)
}

/// quinn's transport configuration for `t` (the rest quinn's defaults), the same for a
/// run's client and server endpoints.
pub fn transport_config(t: &echomark_archive::QuicTransport) -> quinn::TransportConfig {
    use echomark_archive::Congestion;
    use quinn::congestion::{BbrConfig, CubicConfig, NewRenoConfig};
    let mut config = quinn::TransportConfig::default();
    let window = |bytes: u64| quinn::VarInt::from_u64(bytes).unwrap_or(quinn::VarInt::MAX);
    config
        .enable_segmentation_offload(t.gso)
        .initial_mtu(t.initial_mtu)
        .stream_receive_window(window(t.stream_window))
        .receive_window(window(t.connection_window));
    match t.congestion {
        Congestion::Cubic => config.congestion_controller_factory(Arc::new(CubicConfig::default())),
        Congestion::Bbr => config.congestion_controller_factory(Arc::new(BbrConfig::default())),
        Congestion::NewReno => {
            config.congestion_controller_factory(Arc::new(NewRenoConfig::default()))
        }
    };
    config
}

/// A server endpoint on `socket` (call inside the runtime that will drive it).
pub fn server_endpoint(
    socket: std::net::UdpSocket,
    config: quinn::ServerConfig,
) -> std::io::Result<quinn::Endpoint> {
    quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        Some(config),
        socket,
        Arc::new(quinn::TokioRuntime),
    )
}

/// A client's QUIC connection and the endpoint (UDP socket) it runs on.
pub struct QuicClient {
    /// The connection (also what its statistics are read from).
    pub connection: quinn::Connection,
    endpoint: quinn::Endpoint,
    /// `quic-datagram`: the datagrams handed to quinn, to set against the DATAGRAM frames
    /// it sent.
    datagrams_handed: Arc<AtomicU64>,
}

/// What a run reads of one client connection at its end: quinn's statistics, and the
/// datagrams the client handed it (`quic-datagram`).
#[derive(Clone)]
pub struct Tap {
    connection: quinn::Connection,
    datagrams_handed: Option<Arc<AtomicU64>>,
}

impl Tap {
    /// A connection whose client sends no datagrams.
    pub fn streams(connection: quinn::Connection) -> Self {
        Self {
            connection,
            datagrams_handed: None,
        }
    }
}

/// A client endpoint on `socket` connecting with `config` (call inside the client's
/// runtime).
pub fn client_endpoint(
    socket: std::net::UdpSocket,
    config: quinn::ClientConfig,
) -> std::io::Result<quinn::Endpoint> {
    let mut endpoint = quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        None,
        socket,
        Arc::new(quinn::TokioRuntime),
    )?;
    endpoint.set_default_client_config(config);
    Ok(endpoint)
}

/// Connects a client endpoint on `socket` to `server`, whose certificate must name
/// `server_name` (call inside the client's runtime).
pub async fn connect(
    socket: std::net::UdpSocket,
    (server, server_name): (SocketAddr, &str),
    config: quinn::ClientConfig,
) -> std::io::Result<QuicClient> {
    let endpoint = client_endpoint(socket, config)?;
    let connection = endpoint
        .connect(server, server_name)
        .map_err(std::io::Error::other)?
        .await
        .map_err(std::io::Error::other)?;
    Ok(QuicClient {
        connection,
        endpoint,
        datagrams_handed: Arc::default(),
    })
}

impl QuicClient {
    /// `quic-handshake`, `quic-0rtt`: a connection per message from this client's endpoint
    /// to `server`, this connection staying open beside them.
    pub fn new_connections(
        self,
        server: (SocketAddr, String),
        zero_rtt: bool,
        counts: Arc<per_message::HandshakeCounts>,
    ) -> per_message::NewConnections {
        per_message::NewConnections {
            endpoint: self.endpoint.clone(),
            server,
            zero_rtt,
            counts,
            setup: Arc::new(self.connection),
        }
    }

    /// What the run reads of this client's connection at its end, datagrams handed included.
    pub fn datagram_tap(&self) -> Tap {
        Tap {
            connection: self.connection.clone(),
            datagrams_handed: Some(self.datagrams_handed.clone()),
        }
    }

    /// Counts one datagram handed to quinn.
    fn handed_datagram(&self) {
        self.datagrams_handed.fetch_add(1, Ordering::Relaxed);
    }

    /// `quic-datagram`: fails unless the peer accepts datagrams and a message of
    /// `payload` bytes fits in one.
    pub fn check_datagram_fits(&self, payload: usize) -> std::io::Result<()> {
        match self.connection.max_datagram_size() {
            None => Err(std::io::Error::other(
                "the QUIC peer does not accept datagrams (RFC 9221)",
            )),
            Some(limit) if payload > limit => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "--payload {payload} does not fit in one QUIC datagram: this connection takes at most {limit} bytes"
                ),
            )),
            Some(_) => Ok(()),
        }
    }
}

pub use crate::traffic::connect::QuicStream;

/// Opens `client`'s one long-lived bidirectional stream (`quic`); the stream keeps the
/// client, and so its connection, open.
pub async fn open_stream(client: QuicClient) -> std::io::Result<QuicStream> {
    let (send, recv) = client
        .connection
        .open_bi()
        .await
        .map_err(std::io::Error::other)?;
    Ok(QuicStream {
        recv,
        send,
        connection: client.connection.clone(),
        _keep: Box::new(client),
    })
}

/// quinn's statistics of `connections`, summed (averaged where a sum means nothing), and
/// what the connection-per-message protocols counted.
pub fn counters(
    connections: &[Tap],
    handshakes: Option<(&per_message::HandshakeCounts, bool)>,
) -> Option<echomark_archive::QuicCounters> {
    use Ordering::Relaxed;
    // The connection-per-message protocols: `bool` says whether the server ran in process.
    if let Some((h, in_process)) = handshakes {
        return Some(echomark_archive::QuicCounters {
            handshakes: Some(h.completed.load(Relaxed)),
            zero_rtt_accepted: Some(h.zero_rtt_accepted.load(Relaxed)),
            server_connections: in_process.then(|| h.server_accepted.load(Relaxed)),
            ..Default::default()
        });
    }
    if connections.is_empty() {
        return None;
    }
    let mut c = echomark_archive::QuicCounters {
        connections: connections.len() as u64,
        current_mtu: u64::MAX,
        ..Default::default()
    };
    for Tap {
        connection,
        datagrams_handed,
    } in connections
    {
        let s = connection.stats();
        if let Some(handed) = datagrams_handed {
            let add = |total: &mut Option<u64>, n: u64| *total = Some(total.unwrap_or(0) + n);
            add(&mut c.datagrams_handed, handed.load(Relaxed));
            add(&mut c.datagram_frames_sent, s.frame_tx.datagram);
        }
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
        if let Some(limit) = connection.max_datagram_size() {
            let limit = limit as u64;
            c.datagram_size_limit = Some(c.datagram_size_limit.map_or(limit, |l| l.min(limit)));
        }
    }
    let n = connections.len() as f64;
    c.smoothed_rtt_us /= n;
    c.cwnd_bytes /= n;
    Some(c)
}
