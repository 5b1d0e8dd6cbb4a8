//! TLS for `tcps`, `wss` and `https`: rustls with the ring provider.
//!
//! In process (`once` without `--target`), a certificate is generated at start (rcgen), the
//! client trusts exactly that certificate and verifies it against the loopback IP address.
//! `serve` generates one the same way and can write it out as PEM for its clients' `--tls-ca`.
//! Against an external server (`once --target`, `verify`) the client checks the server's
//! certificate against `--tls-ca`, or not at all with `--tls-insecure` (the handshake
//! signatures are still verified; only trust in the certificate is skipped). Handshakes
//! happen during setup, before any phase, and are never timed.

use std::net::IpAddr;
use std::sync::Arc;

use base64::Engine as _;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig,
    SignatureScheme,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::{client, server, TlsAcceptor, TlsConnector};

pub use crate::case::TlsTrust;

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
    /// The builder of the certificate checks refused the roots.
    #[error("TLS configuration: unexpected error: {0}")]
    Verifier(#[source] rustls::client::VerifierBuilderError),
    /// The `--tls-ca` file could not be read.
    #[error("--tls-ca {}: {source}", .path.display())]
    CaRead {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The `--tls-ca` file holds a PEM section that is not a certificate.
    #[error("--tls-ca {}: {source}", .path.display())]
    CaPem {
        path: std::path::PathBuf,
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    /// The `--tls-ca` file holds no certificate.
    #[error("--tls-ca {}: no certificate in the file", .path.display())]
    CaEmpty { path: std::path::PathBuf },
    #[error("{0:?} is not a TLS server name (a DNS name or an IP address)")]
    ServerName(String),
    /// rustls's configuration has no cipher suite QUIC can start with.
    #[error("QUIC configuration: {0}")]
    Quic(#[from] quinn::crypto::rustls::NoInitialCipherSuite),
}

/// The crypto provider of every TLS and QUIC configuration: ring.
pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The server side: a certificate and its key.
#[derive(Clone)]
pub struct TlsServer {
    acceptor: TlsAcceptor,
    certificate: CertificateDer<'static>,
}

impl TlsServer {
    /// A fresh self-signed certificate for `names` (IP addresses or DNS names).
    pub fn self_signed(names: Vec<String>) -> Result<Self, TlsError> {
        let certified = rcgen::generate_simple_self_signed(names)?;
        let certificate = certified.cert.der().clone();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            certified.signing_key.serialize_der(),
        ));
        let config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(vec![certificate.clone()], key)?;
        Ok(Self {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            certificate,
        })
    }

    /// The certificate as PEM, for a client's `--tls-ca`.
    pub fn certificate_pem(&self) -> String {
        certificate_pem(&self.certificate)
    }

    /// The server's half of a handshake.
    pub async fn accept<S: AsyncRead + AsyncWrite + Unpin>(
        &self,
        stream: S,
    ) -> std::io::Result<server::TlsStream<S>> {
        self.acceptor.accept(stream).await.map_err(handshake_error)
    }
}

/// `certificate` as PEM, for a client's `--tls-ca`.
pub fn certificate_pem(certificate: &CertificateDer<'_>) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(certificate.as_ref());
    let mut pem = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in b64.as_bytes().chunks(64) {
        pem.push_str(&String::from_utf8_lossy(line));
        pem.push('\n');
    }
    pem.push_str("-----END CERTIFICATE-----\n");
    pem
}

/// The client side: whom it trusts and the name it expects.
#[derive(Clone)]
pub struct TlsClient {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
}

/// A client TLS stream after its handshake, with what was negotiated.
pub struct Connected<S> {
    pub stream: client::TlsStream<S>,
    pub version: String,
    pub cipher_suite: String,
}

impl TlsClient {
    /// A client that trusts exactly `certificate`, for a server named `name`.
    fn trusting(
        certificate: CertificateDer<'static>,
        name: ServerName<'static>,
    ) -> Result<Self, TlsError> {
        let mut roots = RootCertStore::empty();
        roots.add(certificate)?;
        Self::with_roots(roots, name)
    }

    fn with_roots(roots: RootCertStore, name: ServerName<'static>) -> Result<Self, TlsError> {
        let provider = provider();
        let checks = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(TlsError::Verifier)?;
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Explained(checks)))
            .with_no_client_auth();
        Ok(Self {
            config: Arc::new(config),
            name,
        })
    }

    /// A client for an external server called `server_name` (a DNS name or an IP address),
    /// checking its certificate as `trust` says.
    pub fn for_target(trust: &TlsTrust, server_name: &str) -> Result<Self, TlsError> {
        let name = ServerName::try_from(server_name.to_string())
            .map_err(|_| TlsError::ServerName(server_name.to_string()))?;
        match trust {
            TlsTrust::Ca(path) => {
                let pem = std::fs::read(path).map_err(|source| TlsError::CaRead {
                    path: path.clone(),
                    source,
                })?;
                let mut roots = RootCertStore::empty();
                for cert in CertificateDer::pem_slice_iter(&pem) {
                    let cert = cert.map_err(|source| TlsError::CaPem {
                        path: path.clone(),
                        source,
                    })?;
                    roots.add(cert)?;
                }
                if roots.is_empty() {
                    return Err(TlsError::CaEmpty { path: path.clone() });
                }
                Self::with_roots(roots, name)
            }
            TlsTrust::Insecure => {
                let provider = provider();
                let config = ClientConfig::builder_with_provider(provider.clone())
                    .with_safe_default_protocol_versions()?
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
                    .with_no_client_auth();
                Ok(Self {
                    config: Arc::new(config),
                    name,
                })
            }
        }
    }

    /// The rustls configuration (trust and protocol versions), for QUIC's TLS 1.3 inside.
    pub fn rustls_config(&self) -> &ClientConfig {
        &self.config
    }

    /// The name the certificate is checked against, as text.
    pub fn server_name(&self) -> String {
        self.name.to_str().into_owned()
    }

    /// A blocking session for `verify`, which drives it over a std stream.
    pub fn blocking(&self) -> Result<rustls::ClientConnection, rustls::Error> {
        rustls::ClientConnection::new(self.config.clone(), self.name.clone())
    }

    /// The client's half of a handshake.
    pub async fn connect<S: AsyncRead + AsyncWrite + Unpin>(
        &self,
        stream: S,
    ) -> std::io::Result<Connected<S>> {
        let stream = TlsConnector::from(self.config.clone())
            .connect(self.name.clone(), stream)
            .await
            .map_err(handshake_error)?;
        let session = stream.get_ref().1;
        let version = session
            .protocol_version()
            .map_or("unknown".to_string(), |v| format!("{v:?}"));
        let cipher_suite = session
            .negotiated_cipher_suite()
            .map_or("unknown".to_string(), |s| format!("{:?}", s.suite()));
        Ok(Connected {
            stream,
            version,
            cipher_suite,
        })
    }
}

fn handshake_error(e: std::io::Error) -> std::io::Error {
    std::io::Error::other(format!("TLS handshake: {e}"))
}

/// The standard certificate checks, with the one refusal users meet most often explained:
/// a self-signed certificate made as a CA (`openssl req -x509` does by default) presented
/// by the server itself, which the checks report as `Other(OtherError(CaUsedAsEndEntity))`.
#[derive(Debug)]
struct Explained(Arc<WebPkiServerVerifier>);

/// What a CA certificate presented as a server's own means, and the two ways out.
#[derive(Debug, thiserror::Error)]
#[error(
    "the server presented a CA certificate as its own (basicConstraints CA:TRUE, what      `openssl req -x509` makes by default), which TLS refuses from a server: give it a      server certificate (for example `openssl req -x509 … -addext      basicConstraints=critical,CA:FALSE`, trusted with --tls-ca), or measure with --tls-insecure"
)]
pub struct CaUsedAsServer;

impl ServerCertVerifier for Explained {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
            .map_err(|e| match &e {
                rustls::Error::InvalidCertificate(CertificateError::Other(other))
                    if format!("{other:?}").contains("CaUsedAsEndEntity") =>
                {
                    rustls::Error::Other(rustls::OtherError(Arc::new(CaUsedAsServer)))
                }
                _ => e,
            })
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `--tls-insecure`: any certificate is accepted; the handshake's signatures are still
/// checked, so the session is a real TLS session with a key the server holds.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Both ends' TLS configuration for one in-process measurement.
#[derive(Clone)]
pub struct Tls {
    /// The server's certificate and key.
    pub server: TlsServer,
    /// A client that trusts exactly that certificate.
    pub client: TlsClient,
}

impl Tls {
    /// A fresh self-signed certificate for `ip` and configurations that use it.
    pub fn new(ip: IpAddr) -> Result<Self, TlsError> {
        let server = TlsServer::self_signed(vec![ip.to_string()])?;
        let client =
            TlsClient::trusting(server.certificate.clone(), ServerName::IpAddress(ip.into()))?;
        Ok(Self { server, client })
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `--tls-ca` file that cannot be used says which and why, with the cause as source.
    #[test]
    fn a_ca_file_that_cannot_be_used_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let said = |path: &std::path::Path| {
            let e = TlsClient::for_target(&TlsTrust::Ca(path.to_path_buf()), "localhost")
                .err()
                .expect("refused");
            (e.to_string(), std::error::Error::source(&e).is_some(), e)
        };
        let missing = dir.path().join("missing.pem");
        let (text, caused, e) = said(&missing);
        assert!(matches!(e, TlsError::CaRead { .. }), "{text}");
        let not_found = std::io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(text, format!("--tls-ca {}: {not_found}", missing.display()));
        assert!(caused);
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "").unwrap();
        let (text, _, e) = said(&empty);
        assert!(matches!(e, TlsError::CaEmpty { .. }), "{text}");
        assert_eq!(
            text,
            format!("--tls-ca {}: no certificate in the file", empty.display())
        );
        let bad = dir.path().join("bad.pem");
        std::fs::write(
            &bad,
            "-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let (text, caused, e) = said(&bad);
        let TlsError::CaPem { source, .. } = &e else {
            panic!("{text}")
        };
        assert_eq!(text, format!("--tls-ca {}: {source}", bad.display()));
        assert!(caused);
    }

    /// Drives a client and a server session against each other in memory until the client
    /// fails or both are done (a handshake takes a few flights).
    fn handshake(
        client: &mut rustls::ClientConnection,
        server: &mut rustls::ServerConnection,
    ) -> Result<(), rustls::Error> {
        for _ in 0..16 {
            let mut wire = Vec::new();
            while client.wants_write() {
                client.write_tls(&mut wire).expect("to memory");
            }
            server.read_tls(&mut wire.as_slice()).expect("from memory");
            server.process_new_packets()?;
            wire.clear();
            while server.wants_write() {
                server.write_tls(&mut wire).expect("to memory");
            }
            client.read_tls(&mut wire.as_slice()).expect("from memory");
            client.process_new_packets()?;
            if !client.is_handshaking() && !server.is_handshaking() {
                return Ok(());
            }
        }
        panic!("no end to the handshake");
    }

    /// A self-signed certificate for 127.0.0.1, as a CA (`ca`) or as a server's own.
    fn certificate(ca: bool) -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
        let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
        if ca {
            params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        }
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        (cert.der().clone(), key)
    }

    fn connect(ca: bool) -> Result<(), rustls::Error> {
        let (der, key) = certificate(ca);
        let name = ServerName::try_from("127.0.0.1").unwrap();
        let client = TlsClient::trusting(der.clone(), name).unwrap();
        let config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![der], key)
            .unwrap();
        let mut server = rustls::ServerConnection::new(Arc::new(config)).unwrap();
        handshake(&mut client.blocking().unwrap(), &mut server)
    }

    #[test]
    fn a_ca_certificate_presented_by_the_server_is_refused_with_what_to_do() {
        // Before: "invalid peer certificate: Other(OtherError(CaUsedAsEndEntity))".
        let e = connect(true)
            .expect_err("a CA certificate is not a server's")
            .to_string();
        assert!(e.contains("CA certificate as its own"), "{e}");
        assert!(e.contains("basicConstraints=critical,CA:FALSE"), "{e}");
        assert!(e.contains("--tls-insecure"), "{e}");
        // The same trust with a server certificate is a handshake like any other.
        connect(false).expect("a server certificate is accepted");
    }
}
