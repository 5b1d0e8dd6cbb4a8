//! TLS for `tcps`, `wss` and `https`: rustls with the ring provider, and a certificate generated in
//! process at start (rcgen), so no files or flags are needed. The client trusts exactly that
//! certificate and verifies it against the loopback IP address. The handshake happens during
//! setup, before any phase, and is never timed.

use std::net::IpAddr;
use std::sync::Arc;

use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio::net::TcpStream;
use tokio_rustls::{client, server, TlsAcceptor, TlsConnector};

/// Both ends' TLS configuration for one measurement.
#[derive(Clone)]
pub struct Tls {
    acceptor: TlsAcceptor,
    connector: TlsConnector,
    name: ServerName<'static>,
}

/// A connected pair after the handshake, with what was negotiated.
pub struct Established {
    pub client: client::TlsStream<TcpStream>,
    pub server: server::TlsStream<TcpStream>,
    pub version: String,
    pub cipher_suite: String,
}

impl Tls {
    /// A fresh self-signed certificate for `ip` and configurations that use it.
    pub fn new(ip: IpAddr) -> Result<Self, String> {
        let certified = rcgen::generate_simple_self_signed(vec![ip.to_string()])
            .map_err(|e| format!("certificate: {e}"))?;
        let cert = certified.cert.der().clone();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            certified.signing_key.serialize_der(),
        ));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_no_client_auth()
            .with_single_cert(vec![cert.clone()], key)
            .map_err(|e| format!("server certificate: {e}"))?;
        let mut roots = RootCertStore::empty();
        roots.add(cert).map_err(|e| format!("trust anchor: {e}"))?;
        let client = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Self {
            acceptor: TlsAcceptor::from(Arc::new(server)),
            connector: TlsConnector::from(Arc::new(client)),
            name: ServerName::IpAddress(ip.into()),
        })
    }

    /// Runs both sides of the handshake on the current runtime.
    pub async fn handshake(
        &self,
        client: TcpStream,
        server: TcpStream,
    ) -> std::io::Result<Established> {
        let (client, server) = tokio::join!(
            self.connector.connect(self.name.clone(), client),
            self.acceptor.accept(server)
        );
        let (client, server) = (client?, server?);
        let session = client.get_ref().1;
        let version = session
            .protocol_version()
            .map_or("unknown".to_string(), |v| format!("{v:?}"));
        let cipher_suite = session
            .negotiated_cipher_suite()
            .map_or("unknown".to_string(), |s| format!("{:?}", s.suite()));
        Ok(Established {
            client,
            server,
            version,
            cipher_suite,
        })
    }
}
