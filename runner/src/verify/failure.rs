//! Why a verification check failed: the server broke the contract, went quiet, or the
//! socket under it failed, each with its cause kept as the error's source.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use crate::framing::websocket::HandshakeError;
use crate::framing::FrameError;
use crate::traffic::tls::TlsError;

/// A failed check. The message is the check's detail line; the cause, where there is one,
/// is also the error's [`source`](std::error::Error::source).
#[derive(Debug, thiserror::Error)]
pub(super) enum Failure {
    /// A connect, read or write failed; `what` names which.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    /// A connect, read or write timed out: the server said nothing for `limit`.
    #[error("{what}: no answer within {}", seconds(*limit))]
    Silent {
        what: String,
        limit: Duration,
        #[source]
        source: io::Error,
    },
    /// The server kept answering but never finished `what` within `limit`.
    #[error("{what} within {}", seconds(*limit))]
    Deadline { what: String, limit: Duration },
    /// The client's TLS could not be set up (trust file, server name).
    #[error(transparent)]
    TlsSetup(Arc<TlsError>),
    /// A TLS session could not be started with the configuration.
    #[error("TLS: {0}")]
    TlsSession(#[source] rustls::Error),
    /// The WebSocket upgrade was refused or answered wrongly.
    #[error("WebSocket upgrade: {0}")]
    Upgrade(#[source] HandshakeError),
    /// What arrived is not a frame of the protocol; `expected` says what was awaited.
    #[error("{expected}: {source}")]
    Framing {
        expected: &'static str,
        #[source]
        source: FrameError,
    },
    /// The server did something the echo contract does not allow.
    #[error("{0}")]
    Contract(String),
    /// `failure`, seen in `context` (a connection, a pause, a step of the check).
    #[error("{context}: {failure}")]
    In {
        context: String,
        #[source]
        failure: Box<Failure>,
    },
}

impl Failure {
    /// `what` failed with `source`.
    pub(super) fn io(what: impl Into<String>, source: io::Error) -> Self {
        Self::Io {
            what: what.into(),
            source,
        }
    }

    /// The closure that wraps a failure of `what` as an [`io`](Self::io) failure.
    pub(super) fn io_in(what: &str) -> impl FnOnce(io::Error) -> Self + '_ {
        move |source| Self::io(what, source)
    }

    /// `what`, a connect, read or write bounded by `limit`, failed with `source`: the
    /// server's silence when it timed out, an [`io`](Self::io) failure otherwise.
    pub(super) fn exchange(what: impl Into<String>, limit: Duration, source: io::Error) -> Self {
        match source.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Self::Silent {
                what: what.into(),
                limit,
                source,
            },
            _ => Self::io(what, source),
        }
    }

    /// A breach of the contract, worded as the detail line says it.
    pub(super) fn contract(words: impl Into<String>) -> Self {
        Self::Contract(words.into())
    }

    /// The closure that places a failure in `context`.
    pub(super) fn within(context: impl Into<String>) -> impl FnOnce(Failure) -> Self {
        let context = context.into();
        move |failure| Self::In {
            context,
            failure: Box::new(failure),
        }
    }
}

/// A limit in the words of a detail line, as the matrix words its own: `3 s`, `0.5 s`.
pub(super) fn seconds(limit: Duration) -> String {
    format!("{} s", limit.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error;

    #[test]
    fn a_timed_out_read_says_the_server_was_silent_for_the_limit_and_keeps_the_cause() {
        let limit = Duration::from_secs(3);
        let f = Failure::exchange("echo", limit, io::Error::from(io::ErrorKind::WouldBlock));
        assert_eq!(f.to_string(), "echo: no answer within 3 s");
        let source = f.source().expect("the io::Error is the source");
        assert!(source.downcast_ref::<io::Error>().is_some());
        let f = Failure::exchange(
            "echo",
            limit,
            io::Error::from(io::ErrorKind::ConnectionReset),
        );
        assert!(matches!(f, Failure::Io { .. }), "{f:?}");
    }

    #[test]
    fn limits_read_as_seconds_without_trailing_zeros() {
        assert_eq!(seconds(Duration::from_secs(10)), "10 s");
        assert_eq!(seconds(Duration::from_millis(500)), "0.5 s");
        assert_eq!(seconds(Duration::from_millis(250)), "0.25 s");
        assert_eq!(seconds(Duration::from_millis(1)), "0.001 s");
    }

    #[test]
    fn a_failure_in_context_names_both_and_chains_to_the_inner_one() {
        let inner = Failure::contract("echo 0 has 3 bytes, 4 were sent");
        let f = Failure::within("connection 2")(inner);
        assert_eq!(
            f.to_string(),
            "connection 2: echo 0 has 3 bytes, 4 were sent"
        );
        let source = f.source().expect("the inner failure is the source");
        assert_eq!(source.to_string(), "echo 0 has 3 bytes, 4 were sent");
    }
}
