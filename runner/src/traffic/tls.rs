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

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
}

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
    pub fn new(ip: IpAddr) -> Result<Self, TlsError> {
        let certified = rcgen::generate_simple_self_signed(vec![ip.to_string()])?;
        let cert = certified.cert.der().clone();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            certified.signing_key.serialize_der(),
        ));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(vec![cert.clone()], key)?;
        let mut roots = RootCertStore::empty();
        roots.add(cert)?;
        let client = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Self {
            acceptor: TlsAcceptor::from(Arc::new(server)),
            connector: TlsConnector::from(Arc::new(client)),
            name: ServerName::IpAddress(ip.into()),
        })
    }

    /// A configuration for `ip` when `protocol` runs over TLS, else none.
    pub fn when_needed(
        protocol: echomark_archive::Protocol,
        ip: IpAddr,
    ) -> std::io::Result<Option<Self>> {
        if !protocol.uses_tls() {
            return Ok(None);
        }
        Self::new(ip).map(Some).map_err(std::io::Error::other)
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
        let tls_error = |e: std::io::Error| std::io::Error::other(format!("TLS handshake: {e}"));
        let (client, server) = (client.map_err(tls_error)?, server.map_err(tls_error)?);
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
