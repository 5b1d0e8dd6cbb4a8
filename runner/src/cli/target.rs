//! The flags that aim a client at a server echomark did not start, and the resolution of
//! its address and machine description.

use std::net::{SocketAddr, ToSocketAddrs};

use clap::Args;
use echomark_runner::case::{AddressFamily, StreamFraming, Target, TlsTrust};

use super::FlagError;

/// The flags that point a client at a server echomark did not start.
#[derive(Debug, Clone, Args)]
pub struct TargetArgs {
    /// Measure the server at HOST:PORT instead of echomark's own (client side only; the
    /// address family is the address's).
    #[arg(long, value_name = "HOST:PORT")]
    pub target: Option<String>,
    /// tcp, tcps: `prefix` (arknet's length prefix, echomark's own server) or `raw`
    /// (messages of exactly --payload bytes on any server that writes back what it reads).
    #[arg(long, value_enum, default_value = "prefix", requires = "target")]
    pub framing: StreamFraming,
    /// TLS protocols: accept the server's certificate without checking it.
    #[arg(long, requires = "target", conflicts_with = "tls_ca")]
    pub tls_insecure: bool,
    /// TLS protocols: check the server's certificate against the CAs in this PEM file.
    #[arg(long, value_name = "FILE", requires = "target")]
    pub tls_ca: Option<std::path::PathBuf>,
    /// TLS protocols: the name the certificate must carry (default: the target's host).
    #[arg(long, value_name = "NAME", requires = "target")]
    pub tls_server_name: Option<String>,
    /// QUIC protocols: the application protocol (ALPN) to offer the server (default
    /// `echomark`); recorded with the run.
    #[arg(long, value_name = "NAME", requires = "target", value_parser = alpn)]
    pub alpn: Option<String>,
    /// The server implementation's name, recorded as the run's `backend` (default: the
    /// client's runtime).
    #[arg(long, value_name = "NAME", requires = "target")]
    pub server_name: Option<String>,
    /// http, https: the server does not answer pipelined requests, so each of the
    /// clients × window requests in flight gets a connection of its own (window 1 each).
    #[arg(long, requires = "target")]
    pub no_pipelining: bool,
    /// The machine the server runs on, for the record: the JSON `echomark-runner
    /// describe-host` prints there (or `serve`'s listening line, which carries it).
    #[arg(long, value_name = "FILE", requires = "target")]
    pub server_machine: Option<std::path::PathBuf>,
}

impl TargetArgs {
    /// The target these flags name, resolved (preferring `family` when the name has
    /// addresses of both), or none.
    pub fn resolve(&self, family: AddressFamily) -> Result<Option<Target>, FlagError> {
        let Some(authority) = &self.target else {
            return Ok(None);
        };
        let addr = resolve(authority, family)?;
        let host = authority
            .rsplit_once(':')
            .map_or(authority.as_str(), |(h, _)| h)
            .trim_start_matches('[')
            .trim_end_matches(']');
        let trust = tls_trust(&self.tls_ca, self.tls_insecure);
        Ok(Some(Target {
            addr,
            authority: authority.clone(),
            framing: self.framing,
            tls: trust.map(|t| {
                (
                    t,
                    self.tls_server_name
                        .clone()
                        .unwrap_or_else(|| host.to_string()),
                )
            }),
            server_name: self.server_name.clone(),
            alpn: self.alpn.clone(),
            http_pipelining: !self.no_pipelining,
            server_machine: match &self.server_machine {
                Some(file) => Some((file.clone(), read_machine(file)?)),
                None => None,
            },
        }))
    }
}

/// An ALPN protocol name: 1 to 255 bytes (RFC 7301), printable ASCII here so that the
/// archive and the command line show it as it went on the wire.
fn alpn(text: &str) -> Result<String, NotAlpn> {
    if text.is_empty() || text.len() > 255 || !text.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(NotAlpn {
            text: text.to_string(),
        });
    }
    Ok(text.to_string())
}

/// An `--alpn` that is not an ALPN protocol name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{text}' is not an ALPN name (1 to 255 printable ASCII characters)")]
pub struct NotAlpn {
    pub text: String,
}

/// How `--tls-ca FILE` / `--tls-insecure` say the server's certificate is checked, if at
/// all.
pub fn tls_trust(ca: &Option<std::path::PathBuf>, insecure: bool) -> Option<TlsTrust> {
    match (ca, insecure) {
        (Some(path), _) => Some(TlsTrust::Ca(path.clone())),
        (None, true) => Some(TlsTrust::Insecure),
        (None, false) => None,
    }
}

/// The machine description in `file`: a host as `describe-host` prints it, or an object
/// that carries one under `machine` (`serve`'s listening line).
pub fn read_machine(file: &std::path::Path) -> Result<echomark_archive::Host, FlagError> {
    let text =
        std::fs::read_to_string(file).map_err(|source| FlagError::ServerMachineUnreadable {
            file: file.to_path_buf(),
            source,
        })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| FlagError::ServerMachineNotJson {
            file: file.to_path_buf(),
            source,
        })?;
    let (value, at) = match value.get("machine") {
        Some(machine) => (machine.clone(), "machine"),
        None => (value, "the top level"),
    };
    serde_json::from_value(value).map_err(|source| FlagError::ServerMachineNotHost {
        file: file.to_path_buf(),
        at,
        source,
    })
}

/// The socket address of `HOST:PORT`, of `family` when the name has both kinds.
pub fn resolve(authority: &str, family: AddressFamily) -> Result<SocketAddr, FlagError> {
    let addrs: Vec<SocketAddr> = authority
        .to_socket_addrs()
        .map_err(|source| FlagError::TargetUnresolved {
            authority: authority.to_string(),
            source,
        })?
        .collect();
    let wanted = |a: &&SocketAddr| a.is_ipv6() == (family == AddressFamily::Ipv6);
    addrs
        .iter()
        .find(wanted)
        .or(addrs.first())
        .copied()
        .ok_or_else(|| FlagError::TargetNoAddress {
            authority: authority.to_string(),
        })
}

/// The address family of `addr`.
pub fn family_of(addr: &SocketAddr) -> AddressFamily {
    if addr.is_ipv6() {
        AddressFamily::Ipv6
    } else {
        AddressFamily::Ipv4
    }
}
