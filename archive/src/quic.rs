//! QUIC's transport settings: what a QUIC run was configured with (recorded per run in its
//! metrics), the part of its configuration key that says so when it is not quinn's default,
//! and the matrix axes that vary them.

use std::fmt;

use serde::{Deserialize, Serialize};

/// quinn's congestion controllers.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Congestion {
    /// CUBIC (RFC 9438), quinn's default.
    #[default]
    Cubic,
    /// BBR (quinn's experimental BBRv1).
    Bbr,
    /// NewReno (RFC 9002's example controller).
    NewReno,
}

impl Congestion {
    /// Every controller, in the order pages list them.
    pub const ALL: [Congestion; 3] = [Congestion::Cubic, Congestion::Bbr, Congestion::NewReno];

    /// The name, as archives and flags spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Congestion::Cubic => "cubic",
            Congestion::Bbr => "bbr",
            Congestion::NewReno => "newreno",
        }
    }
}

impl fmt::Display for Congestion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Congestion {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Congestion::ALL
            .into_iter()
            .find(|c| c.as_str() == text)
            .ok_or_else(|| format!("unknown congestion controller '{text}' (cubic, bbr, newreno)"))
    }
}

/// QUIC's smallest MTU (RFC 9000 §14), quinn's initial and least MTU.
pub const QUIC_MIN_MTU: u16 = 1200;
/// The largest MTU a QUIC path can have: the largest UDP payload of an IPv4 datagram
/// (65,535 − 8 bytes of UDP header), which `--quic-initial-mtu` allows at most.
pub const QUIC_MAX_MTU: u16 = 65_527;
/// quinn's stream receive window: 12.5 MB/s over an expected 100 ms round trip.
pub const QUINN_STREAM_WINDOW: u64 = 1_250_000;
/// quinn's connection receive window: the largest variable-length integer, no limit.
pub const QUINN_CONNECTION_WINDOW: u64 = (1 << 62) - 1;

/// The transport settings of one QUIC run, the same on its client and its server
/// endpoints. The default is quinn's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuicTransport {
    pub congestion: Congestion,
    /// Generic segmentation offload: several datagrams handed to the kernel in one send
    /// call, where the kernel has it (quinn falls back when it does not).
    pub gso: bool,
    /// The MTU a connection starts with before path MTU discovery raises it, in bytes.
    pub initial_mtu: u16,
    /// How many bytes a peer may send on one stream before it is read (flow control).
    pub stream_window: u64,
    /// How many bytes a peer may send over all streams of a connection before they are read;
    /// [`QUINN_CONNECTION_WINDOW`] is no limit.
    pub connection_window: u64,
}

impl Default for QuicTransport {
    fn default() -> Self {
        QuicTransport {
            congestion: Congestion::Cubic,
            gso: true,
            initial_mtu: QUIC_MIN_MTU,
            stream_window: QUINN_STREAM_WINDOW,
            connection_window: QUINN_CONNECTION_WINDOW,
        }
    }
}

impl QuicTransport {
    /// The settings as a configuration key holds them: `None` for quinn's defaults, so runs
    /// with the defaults are the same configuration whether or not they name them.
    pub fn keyed(self) -> Option<QuicTransport> {
        (self != QuicTransport::default()).then_some(self)
    }

    /// What a message or setting check must refuse: an MTU below QUIC's least, or a window
    /// of zero bytes.
    pub fn problem(&self) -> Option<String> {
        if self.initial_mtu < QUIC_MIN_MTU {
            return Some(format!(
                "the initial MTU must be at least {QUIC_MIN_MTU} bytes (QUIC's smallest), got {}",
                self.initial_mtu
            ));
        }
        if self.initial_mtu > QUIC_MAX_MTU {
            return Some(format!(
                "the initial MTU must be at most {QUIC_MAX_MTU} bytes (the largest UDP payload), \
                 got {}",
                self.initial_mtu
            ));
        }
        if self.stream_window == 0 || self.connection_window == 0 {
            return Some("QUIC flow-control windows must be at least 1 byte".into());
        }
        if self.stream_window > QUINN_CONNECTION_WINDOW
            || self.connection_window > QUINN_CONNECTION_WINDOW
        {
            return Some(format!(
                "QUIC flow-control windows are at most {QUINN_CONNECTION_WINDOW} bytes"
            ));
        }
        None
    }
}

/// One transport setting that differs from quinn's default, with its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuicSetting {
    Congestion(Congestion),
    Gso(bool),
    InitialMtu(u16),
    StreamWindow(u64),
    ConnectionWindow(u64),
}

impl QuicSetting {
    /// The `once` flag that sets it, and its value.
    pub fn flag(self) -> (&'static str, String) {
        match self {
            QuicSetting::Congestion(c) => ("--quic-congestion", c.to_string()),
            QuicSetting::Gso(on) => ("--quic-gso", on_off(on).to_string()),
            QuicSetting::InitialMtu(bytes) => ("--quic-initial-mtu", bytes.to_string()),
            QuicSetting::StreamWindow(bytes) => ("--quic-stream-window", bytes.to_string()),
            QuicSetting::ConnectionWindow(bytes) => ("--quic-connection-window", bytes.to_string()),
        }
    }
}

/// A switch's value as the flags spell it: `on` or `off`.
pub fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

impl QuicTransport {
    /// The settings that differ from quinn's defaults, in field order; empty for the
    /// defaults.
    pub fn differences(&self) -> Vec<QuicSetting> {
        let d = QuicTransport::default();
        [
            (self.congestion != d.congestion).then_some(QuicSetting::Congestion(self.congestion)),
            (self.gso != d.gso).then_some(QuicSetting::Gso(self.gso)),
            (self.initial_mtu != d.initial_mtu)
                .then_some(QuicSetting::InitialMtu(self.initial_mtu)),
            (self.stream_window != d.stream_window)
                .then_some(QuicSetting::StreamWindow(self.stream_window)),
            (self.connection_window != d.connection_window)
                .then_some(QuicSetting::ConnectionWindow(self.connection_window)),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// `bbr, GSO off, initial MTU 1452 B`: the settings that differ from quinn's defaults, or
/// `quinn defaults`.
impl fmt::Display for QuicTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .differences()
            .into_iter()
            .map(|s| match s {
                QuicSetting::Congestion(c) => c.to_string(),
                QuicSetting::Gso(on) => format!("GSO {}", on_off(on)),
                QuicSetting::InitialMtu(bytes) => format!("initial MTU {bytes} B"),
                QuicSetting::StreamWindow(bytes) => format!("stream window {bytes} B"),
                QuicSetting::ConnectionWindow(bytes) => format!("connection window {bytes} B"),
            })
            .collect();
        if parts.is_empty() {
            f.write_str("quinn defaults")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}

/// The matrix axes of QUIC's transport: every QUIC case is measured at each combination of
/// the values listed; an empty axis is quinn's default alone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuicAxes {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub congestion: Vec<Congestion>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gso: Vec<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub initial_mtu: Vec<u16>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stream_window: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connection_window: Vec<u64>,
}

impl QuicAxes {
    /// Whether no axis is set (every QUIC case runs with quinn's defaults).
    pub fn is_empty(&self) -> bool {
        *self == QuicAxes::default()
    }

    /// These axes with each axis `given` lists replacing its own (flags over a preset).
    pub fn overridden_by(self, given: QuicAxes) -> QuicAxes {
        fn pick<T>(given: Vec<T>, own: Vec<T>) -> Vec<T> {
            if given.is_empty() {
                own
            } else {
                given
            }
        }
        QuicAxes {
            congestion: pick(given.congestion, self.congestion),
            gso: pick(given.gso, self.gso),
            initial_mtu: pick(given.initial_mtu, self.initial_mtu),
            stream_window: pick(given.stream_window, self.stream_window),
            connection_window: pick(given.connection_window, self.connection_window),
        }
    }

    /// Every combination, in axis order (congestion slowest), each listed once.
    pub fn transports(&self) -> Vec<QuicTransport> {
        fn or_default<T: Copy + PartialEq>(values: &[T], default: T) -> Vec<T> {
            let mut out: Vec<T> = Vec::new();
            for &v in values {
                if !out.contains(&v) {
                    out.push(v);
                }
            }
            if out.is_empty() {
                out.push(default);
            }
            out
        }
        let d = QuicTransport::default();
        let mut out = Vec::new();
        for &congestion in &or_default(&self.congestion, d.congestion) {
            for &gso in &or_default(&self.gso, d.gso) {
                for &initial_mtu in &or_default(&self.initial_mtu, d.initial_mtu) {
                    for &stream_window in &or_default(&self.stream_window, d.stream_window) {
                        for &connection_window in
                            &or_default(&self.connection_window, d.connection_window)
                        {
                            out.push(QuicTransport {
                                congestion,
                                gso,
                                initial_mtu,
                                stream_window,
                                connection_window,
                            });
                        }
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quinn_defaults_key_as_none_and_name_themselves() {
        assert_eq!(QuicTransport::default().keyed(), None);
        let bbr = QuicTransport {
            congestion: Congestion::Bbr,
            gso: false,
            ..QuicTransport::default()
        };
        assert_eq!(bbr.keyed(), Some(bbr));
        assert_eq!(bbr.to_string(), "bbr, GSO off");
        assert_eq!(QuicTransport::default().to_string(), "quinn defaults");
        assert_eq!("newreno".parse::<Congestion>(), Ok(Congestion::NewReno));
        assert!("reno"
            .parse::<Congestion>()
            .unwrap_err()
            .contains("cubic, bbr, newreno"));
    }

    #[test]
    fn axes_multiply_and_an_empty_axis_is_the_default() {
        assert_eq!(QuicAxes::default().transports(), [QuicTransport::default()]);
        let axes = QuicAxes {
            congestion: vec![Congestion::Cubic, Congestion::Bbr, Congestion::Cubic],
            gso: vec![true, false],
            ..QuicAxes::default()
        };
        let all = axes.transports();
        assert_eq!(all.len(), 4);
        assert_eq!(all[0], QuicTransport::default());
        assert_eq!(all[3].congestion, Congestion::Bbr);
        assert!(!all[3].gso);
    }

    #[test]
    fn an_mtu_below_quics_least_or_an_empty_window_is_refused() {
        let low = QuicTransport {
            initial_mtu: 1199,
            ..QuicTransport::default()
        };
        assert!(low.problem().unwrap().contains("at least 1200"));
        let empty = QuicTransport {
            stream_window: 0,
            ..QuicTransport::default()
        };
        assert!(empty.problem().is_some());
        let high = QuicTransport {
            initial_mtu: QUIC_MAX_MTU + 1,
            ..QuicTransport::default()
        };
        assert!(high.problem().unwrap().contains("at most 65527"));
        assert_eq!(QuicTransport::default().problem(), None);
    }
}
