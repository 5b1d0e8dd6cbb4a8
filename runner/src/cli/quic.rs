//! The QUIC transport flags: one value each on `once` (and `serve`), a list each on
//! `matrix`, where every QUIC case is measured at every combination.

use clap::Args;
use echomark_archive::{Congestion, QuicAxes, QuicTransport};

/// `on` or `off`.
fn on_off(text: &str) -> Result<bool, NotOnOff> {
    match text {
        "on" => Ok(true),
        "off" => Ok(false),
        other => Err(NotOnOff {
            text: other.to_string(),
        }),
    }
}

/// A switch that is neither `on` nor `off`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{text}' is not on or off")]
pub struct NotOnOff {
    pub text: String,
}

/// The archive's own bounds, which `validate` holds every run to.
const MTU_RANGE: std::ops::RangeInclusive<i64> =
    echomark_archive::quic::QUIC_MIN_MTU as i64..=echomark_archive::quic::QUIC_MAX_MTU as i64;
const WINDOW_RANGE: std::ops::RangeInclusive<u64> =
    1..=echomark_archive::quic::QUINN_CONNECTION_WINDOW;

/// One transport for every QUIC connection of the run (both endpoints).
#[derive(Debug, Clone, Default, Args)]
pub struct QuicTransportArgs {
    /// QUIC: congestion controller of both endpoints (cubic, quinn's default; bbr; newreno).
    #[arg(long, value_name = "NAME")]
    pub quic_congestion: Option<Congestion>,
    /// QUIC: generic segmentation offload, on (quinn's default, where the kernel has it) or off.
    #[arg(long, value_name = "on|off", value_parser = on_off)]
    pub quic_gso: Option<bool>,
    /// QUIC: the MTU connections start with before path MTU discovery, bytes (default 1,200).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u16).range(MTU_RANGE))]
    pub quic_initial_mtu: Option<u16>,
    /// QUIC: flow-control window of each stream, bytes (quinn's default 1,250,000).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(WINDOW_RANGE))]
    pub quic_stream_window: Option<u64>,
    /// QUIC: flow-control window of a whole connection, bytes (quinn's default: no limit).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(WINDOW_RANGE))]
    pub quic_connection_window: Option<u64>,
}

impl QuicTransportArgs {
    /// The transport: what the flags give, quinn's default for the rest.
    pub fn transport(&self) -> QuicTransport {
        let d = QuicTransport::default();
        QuicTransport {
            congestion: self.quic_congestion.unwrap_or(d.congestion),
            gso: self.quic_gso.unwrap_or(d.gso),
            initial_mtu: self.quic_initial_mtu.unwrap_or(d.initial_mtu),
            stream_window: self.quic_stream_window.unwrap_or(d.stream_window),
            connection_window: self.quic_connection_window.unwrap_or(d.connection_window),
        }
    }
}

/// The transport axes of a matrix.
#[derive(Debug, Clone, Default, Args)]
pub struct QuicAxesArgs {
    /// QUIC: congestion controllers to measure each QUIC case with (cubic,bbr,newreno).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub quic_congestion: Vec<Congestion>,
    /// QUIC: segmentation offload settings to measure (on,off).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = on_off)]
    pub quic_gso: Vec<bool>,
    /// QUIC: initial MTUs to measure, bytes.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = clap::value_parser!(u16).range(MTU_RANGE))]
    pub quic_initial_mtu: Vec<u16>,
    /// QUIC: stream flow-control windows to measure, bytes.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = clap::value_parser!(u64).range(WINDOW_RANGE))]
    pub quic_stream_window: Vec<u64>,
    /// QUIC: connection flow-control windows to measure, bytes.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = clap::value_parser!(u64).range(WINDOW_RANGE))]
    pub quic_connection_window: Vec<u64>,
}

impl QuicAxesArgs {
    /// The axes the flags give (an axis not given stays the preset's).
    pub fn axes(&self) -> QuicAxes {
        QuicAxes {
            congestion: self.quic_congestion.clone(),
            gso: self.quic_gso.clone(),
            initial_mtu: self.quic_initial_mtu.clone(),
            stream_window: self.quic_stream_window.clone(),
            connection_window: self.quic_connection_window.clone(),
        }
    }
}
