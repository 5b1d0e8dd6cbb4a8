//! What the coordinator and a generator say to each other: one JSON object per line over
//! one TCP connection that lasts the whole fleet (every case of a matrix).
//!
//! A generator says hello, then for each case: clock exchanges, `ready` once warmed up,
//! clock exchanges again after the measured phase, and its `result` (or why it failed).
//! The coordinator answers every exchange, sends the case, the release (or an abort), and
//! `done` when the fleet is dismissed.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use echomark_archive::Metrics;
use serde::{Deserialize, Serialize};

use super::FleetError;

/// The protocol's version, in every hello: both sides must speak the same.
pub const VERSION: u32 = 1;
/// The longest line either side accepts (a result carries histograms).
const MAX_LINE: usize = 64 << 20;

/// What a generator sends.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum FromGenerator {
    Hello {
        version: u32,
        /// Its place in the fleet (`JOB_COMPLETION_INDEX`), if it has one.
        index: Option<u64>,
        host: String,
        logical_cpus: u64,
    },
    /// A clock exchange: sent at `t1` (its clock).
    Ping { t1: i64 },
    /// Connected, verified and warmed up: waiting for the release.
    Ready,
    /// What it measured, its clock before and after, and its start.
    Result { result: Box<GeneratorResult> },
    /// Why it cannot run the case.
    Failed { reason: String },
}

/// What a generator reports after a case.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorResult {
    pub clock: echomark_archive::ClockRecord,
    /// Its start minus the release, in the coordinator's clock, ns.
    pub start_skew_ns: f64,
    pub metrics: Metrics,
}

/// What the coordinator sends.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ToGenerator {
    /// The answer to a ping: `t2` when it arrived, `t3` when this left (coordinator's clock).
    Pong { t1: i64, t2: i64, t3: i64 },
    /// Measure this: `once`'s arguments.
    Case { args: Vec<String> },
    /// Start the measured phase at `start_unix_ns` and end it at `end_unix_ns` (the
    /// coordinator's clock).
    Release {
        start_unix_ns: i64,
        end_unix_ns: i64,
    },
    /// The case is off (another generator failed); wait for the next message.
    Abort { reason: String },
    /// The fleet is dismissed: exit.
    Done,
}

/// One end of the connection, reading and writing whole lines.
pub struct Line {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    buffer: String,
}

impl Line {
    pub fn new(stream: TcpStream) -> std::io::Result<Line> {
        stream.set_nodelay(true)?;
        Ok(Line {
            writer: stream.try_clone()?,
            reader: BufReader::new(stream),
            buffer: String::new(),
        })
    }

    /// How long a read may wait before it fails (`None`: forever).
    pub fn set_patience(&self, patience: Option<Duration>) -> std::io::Result<()> {
        self.writer.set_read_timeout(patience)
    }

    pub fn send<T: Serialize>(&mut self, message: &T) -> Result<(), FleetError> {
        let mut line = serde_json::to_vec(message).map_err(FleetError::Encode)?;
        line.push(b'\n');
        self.writer.write_all(&line).map_err(FleetError::Io)
    }

    /// The next message; [`FleetError::Closed`] at the end of the stream.
    pub fn receive<T: for<'de> Deserialize<'de>>(&mut self) -> Result<T, FleetError> {
        self.buffer.clear();
        let read = std::io::Read::take(&mut self.reader, MAX_LINE as u64)
            .read_line(&mut self.buffer)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => FleetError::Silent,
                _ => FleetError::Io(e),
            })?;
        if read == 0 {
            return Err(FleetError::Closed);
        }
        if !self.buffer.ends_with('\n') {
            return Err(FleetError::Malformed("a line without its end".into()));
        }
        serde_json::from_str(&self.buffer).map_err(|e| FleetError::Malformed(e.to_string()))
    }

    /// The peer's address.
    pub fn peer(&self) -> String {
        self.writer
            .peer_addr()
            .map_or_else(|_| "?".to_string(), |a| a.to_string())
    }
}
