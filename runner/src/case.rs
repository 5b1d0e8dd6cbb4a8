//! One measured configuration ("case"), validated before any socket is opened.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use crate::wire::{HEADER_LEN, MAX_PAYLOAD};

/// A request that cannot be measured; the binary prints it and exits 2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Largest `clients × window × payload` (arknet's limit).
pub const MAX_OUTSTANDING_BYTES: u64 = 256 * 1024 * 1024;

/// The echo protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, clap::ValueEnum)]
pub enum Protocol {
    /// TCP with TCP_NODELAY and a length prefix per message.
    Tcp,
    /// One datagram per message on connected client sockets.
    Udp,
    /// RFC 6455 binary frames on `/echo` after an HTTP/1.1 upgrade.
    Websocket,
    /// TCP's framing inside TLS (rustls).
    Tcps,
    /// WebSocket inside TLS.
    Wss,
    /// HTTP/1.1 keep-alive `POST /echo`, pipelined up to the window on one connection.
    Http,
    /// HTTP/1.1 inside TLS.
    Https,
}

impl Protocol {
    /// The name used in JSON and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
            Protocol::Websocket => "websocket",
            Protocol::Tcps => "tcps",
            Protocol::Wss => "wss",
            Protocol::Http => "http",
            Protocol::Https => "https",
        }
    }

    /// Whether the protocol runs inside TLS.
    pub fn uses_tls(self) -> bool {
        matches!(self, Protocol::Tcps | Protocol::Wss | Protocol::Https)
    }

    /// Every protocol, in the order arknet's reports list them.
    pub const ALL: [Protocol; 7] = [
        Protocol::Tcp,
        Protocol::Udp,
        Protocol::Websocket,
        Protocol::Tcps,
        Protocol::Wss,
        Protocol::Http,
        Protocol::Https,
    ];
}

/// Loopback address family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum AddressFamily {
    /// 127.0.0.1
    Ipv4,
    /// ::1
    Ipv6,
}

impl AddressFamily {
    pub fn as_str(self) -> &'static str {
        match self {
            AddressFamily::Ipv4 => "ipv4",
            AddressFamily::Ipv6 => "ipv6",
        }
    }

    /// The loopback address of this family.
    pub fn loopback(self) -> IpAddr {
        match self {
            AddressFamily::Ipv4 => IpAddr::V4(Ipv4Addr::LOCALHOST),
            AddressFamily::Ipv6 => IpAddr::V6(Ipv6Addr::LOCALHOST),
        }
    }
}

/// How runtimes and threads are arranged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, clap::ValueEnum)]
pub enum IoModel {
    /// One runtime driven by N threads (N = 1: a current-thread runtime).
    Shared,
    /// N current-thread runtimes, one OS thread each.
    Sharded,
}

impl IoModel {
    pub fn as_str(self) -> &'static str {
        match self {
            IoModel::Shared => "shared",
            IoModel::Sharded => "sharded",
        }
    }
}

/// A deliberate fault, for tests that prove the checks catch what they claim to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Fault {
    /// The server flips one filler byte of every 97th echo.
    Corrupt,
    /// The server swaps the order of two echoes now and then (TCP) or echoes one datagram
    /// twice (UDP).
    Reorder,
    /// The server silently drops every 97th message.
    Drop,
}

/// A validated configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub protocol: Protocol,
    pub address_family: AddressFamily,
    pub payload: usize,
    pub clients: usize,
    pub window: usize,
    pub seconds: f64,
    pub warmup: f64,
    pub io_model: IoModel,
    pub io_threads: usize,
    pub work: u64,
    pub udp_send_buffer: u64,
    pub udp_recv_buffer: u64,
    pub udp_server_recv_buffer: Option<u64>,
    pub udp_timeout: Duration,
    pub record_latency: bool,
    pub fault: Option<Fault>,
}

impl Case {
    /// Checks the cross-field rules that single flags cannot express.
    pub fn validate(self) -> Result<Self, UsageError> {
        let err = |m: String| Err(UsageError(m));
        if !(HEADER_LEN..=MAX_PAYLOAD).contains(&self.payload) {
            return err(format!(
                "--payload must be {HEADER_LEN} to {MAX_PAYLOAD} bytes, got {}",
                self.payload
            ));
        }
        let outstanding = self.clients as u64 * self.window as u64 * self.payload as u64;
        if outstanding > MAX_OUTSTANDING_BYTES {
            return err(format!(
                "requested outstanding payloads exceed 256 MiB ({} clients × {} window × {} bytes = {outstanding} bytes)",
                self.clients, self.window, self.payload
            ));
        }
        Ok(self)
    }

    /// The server socket's receive-buffer request.
    pub fn server_recv_buffer(&self) -> u64 {
        self.udp_server_recv_buffer.unwrap_or(self.udp_recv_buffer)
    }

    /// Number of runtimes (`io_contexts` in the metrics).
    pub fn io_contexts(&self) -> usize {
        match self.io_model {
            IoModel::Shared => 1,
            IoModel::Sharded => self.io_threads,
        }
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} B, {} clients × window {}, {} {}, work {}",
            self.protocol.as_str(),
            self.payload,
            self.clients,
            self.window,
            self.io_model.as_str(),
            self.io_threads,
            self.work
        )
    }
}

/// Parses a duration in seconds: a finite decimal in `[min, 3600]`.
pub fn parse_seconds(text: &str, allow_zero: bool) -> Result<f64, String> {
    let v: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number of seconds"))?;
    let low_ok = if allow_zero { v >= 0.0 } else { v > 0.0 };
    if !v.is_finite() || !low_ok || v > 3600.0 {
        let low = if allow_zero { "≥ 0" } else { "> 0" };
        return Err(format!("'{text}' must be finite, {low} and ≤ 3600"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> Case {
        Case {
            protocol: Protocol::Tcp,
            address_family: AddressFamily::Ipv4,
            payload: 1024,
            clients: 1,
            window: 1,
            seconds: 1.0,
            warmup: 0.25,
            io_model: IoModel::Shared,
            io_threads: 1,
            work: 0,
            udp_send_buffer: 65_536,
            udp_recv_buffer: 4 << 20,
            udp_server_recv_buffer: None,
            udp_timeout: Duration::from_millis(250),
            record_latency: true,
            fault: None,
        }
    }

    #[test]
    fn outstanding_payload_is_capped() {
        let c = Case {
            clients: 1024,
            window: 1024,
            payload: 1024,
            ..sample()
        };
        assert!(c.validate().unwrap_err().0.contains("256 MiB"));
        let c = Case {
            clients: 256,
            window: 1024,
            payload: 1024,
            ..sample()
        };
        assert!(c.validate().is_ok());
    }

    #[test]
    fn payload_range_is_enforced() {
        assert!(Case {
            payload: 15,
            ..sample()
        }
        .validate()
        .is_err());
        assert!(Case {
            payload: 65_508,
            ..sample()
        }
        .validate()
        .is_err());
        assert!(Case {
            payload: 16,
            ..sample()
        }
        .validate()
        .is_ok());
    }

    #[test]
    fn seconds_parse_strictly() {
        assert_eq!(parse_seconds("0.25", false), Ok(0.25));
        assert!(parse_seconds("0", false).is_err());
        assert_eq!(parse_seconds("0", true), Ok(0.0));
        for bad in ["NaN", "inf", "-1", "3601", "1s", ""] {
            assert!(parse_seconds(bad, true).is_err(), "{bad}");
        }
    }
}
