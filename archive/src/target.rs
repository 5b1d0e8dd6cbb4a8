//! What `once --target` measured: a server echomark did not start, reached over the network
//! (loopback, a namespace's veth or a real link), and the echo contract it was held to.

use serde::{Deserialize, Serialize};

/// How messages are delimited on a TCP stream (`tcp`, `tcps`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum StreamFraming {
    /// arknet's length prefix before every message (echomark's own server).
    #[default]
    Prefix,
    /// No head: messages of exactly the payload size on a plain byte echo (any server that
    /// writes back what it reads).
    Raw,
}

impl StreamFraming {
    /// The spelling on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            StreamFraming::Prefix => "prefix",
            StreamFraming::Raw => "raw",
        }
    }
}

/// How the server's TLS certificate was checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TlsVerification {
    /// Not checked (`--tls-insecure`): the handshake and encryption were measured, not trust.
    Insecure,
    /// Checked against the certificate authority of `--tls-ca`.
    Ca,
}

/// The external server of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetInfo {
    /// The socket address the clients connected to (`127.0.0.1:8080`, `[::1]:8080`).
    pub address: String,
    /// `tcp` and `tcps`: the stream framing; absent for the other protocols, whose framing
    /// the protocol fixes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub framing: Option<StreamFraming>,
    /// TLS protocols: how the certificate was checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_verification: Option<TlsVerification>,
    /// HTTP protocols: whether requests were pipelined (window > 1 on one connection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_pipelined: Option<bool>,
}
