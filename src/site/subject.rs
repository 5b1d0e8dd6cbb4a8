//! What a protocol page covers. Runs are split by protocol, except arknet's native Asio TCP
//! program, which has a page of its own.

use echomark_archive::{CaseKey, Protocol};

/// Whether `implementation` is arknet's native Asio TCP program (`arknet_coroutine_benchmark`),
/// whose RTT with a window above 1 is per batch.
pub fn is_native_program(implementation: &str) -> bool {
    matches!(implementation, "asio-coroutine" | "asio-callback")
}

/// Page order of the protocols: arknet's order.
pub fn protocol_rank(p: Protocol) -> usize {
    Protocol::ALL
        .iter()
        .position(|x| *x == p)
        .unwrap_or(usize::MAX)
}

/// What one protocol page covers: a protocol as the dataset's echo programs measure it, or
/// arknet's native Asio TCP program, which gets its own page because with a window above 1
/// its RTT is that of a whole batch, not comparable with a per-message RTT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Subject {
    Protocol(Protocol),
    NativeTcp,
}

impl Subject {
    /// The page a configuration belongs on.
    pub fn of(key: &CaseKey) -> Self {
        Self::of_program(key.protocol, &key.implementation)
    }

    /// The page of runs of `protocol` by `implementation`.
    pub fn of_program(protocol: Protocol, implementation: &str) -> Self {
        if is_native_program(implementation) {
            Subject::NativeTcp
        } else {
            Subject::Protocol(protocol)
        }
    }

    /// The page's file stem and chart prefix (`tcp`, `coroutine`).
    pub fn slug(self) -> &'static str {
        match self {
            Subject::Protocol(p) => p.as_str(),
            Subject::NativeTcp => "coroutine",
        }
    }

    /// The protocol the subject's runs used.
    pub fn protocol(self) -> Protocol {
        match self {
            Subject::Protocol(p) => p,
            Subject::NativeTcp => Protocol::Tcp,
        }
    }

    /// Page order: the protocols in arknet's order, then the native program.
    pub fn rank(self) -> usize {
        match self {
            Subject::Protocol(p) => protocol_rank(p),
            Subject::NativeTcp => usize::MAX,
        }
    }
}
