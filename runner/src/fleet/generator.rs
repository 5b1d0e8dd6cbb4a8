//! A generator: connects to the coordinator, then measures every case it is sent as
//! `once --target` would, its measured phase started at the fleet's barrier.

use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use echomark_archive::ClockRecord;

use super::clock::{self, Exchange, Offset, WallClock};
use super::wire::{FromGenerator, GeneratorResult, Line, ToGenerator, VERSION};
use super::FleetError;
use crate::case::Case;
use crate::measure::{self, Release, Window};

/// How long a generator waits for the coordinator's next word: the matrix may restart a
/// server between cases.
const BETWEEN_CASES: Duration = Duration::from_secs(600);
/// How long it waits at the barrier for the release, once warmed up.
const AT_THE_BARRIER: Duration = Duration::from_secs(300);

/// Where a generator finds its coordinator, and who it is.
#[derive(Debug, Clone)]
pub struct GeneratorOptions {
    /// `HOST:PORT`, resolved afresh on every attempt (a headless Service's name appears
    /// once the coordinator's pod is ready).
    pub coordinator: String,
    /// Its index in the fleet (`JOB_COMPLETION_INDEX`), if it has one.
    pub index: Option<u64>,
    /// How long to keep trying to reach the coordinator.
    pub patience: Duration,
    /// The clock it reads (shifted only in tests).
    pub clock: WallClock,
}

/// Runs every case the coordinator sends until it dismisses the fleet; the cases run.
pub fn generate(
    options: &GeneratorOptions,
    to_case: &dyn Fn(&[String]) -> Result<Case, String>,
) -> Result<u64, FleetError> {
    let mut line = Line::new(connect(options)?)?;
    line.send(&FromGenerator::Hello {
        version: VERSION,
        index: options.index,
        host: super::host_name(),
        logical_cpus: super::logical_cpus(),
    })?;
    let mut cases = 0;
    loop {
        line.set_patience(Some(BETWEEN_CASES))?;
        match line.receive::<ToGenerator>()? {
            ToGenerator::Case { args } => {
                cases += 1;
                match to_case(&args) {
                    Ok(case) => run_case(&mut line, options.clock, &case)?,
                    Err(reason) => line.send(&FromGenerator::Failed { reason })?,
                }
            }
            ToGenerator::Done => return Ok(cases),
            // Late words about a case that is over.
            ToGenerator::Abort { .. } | ToGenerator::Release { .. } | ToGenerator::Pong { .. } => {}
        }
    }
}

/// Tries to connect until the patience runs out.
fn connect(options: &GeneratorOptions) -> Result<TcpStream, FleetError> {
    let until = Instant::now() + options.patience;
    loop {
        let attempt = options.coordinator.to_socket_addrs().and_then(|mut addrs| {
            let addr = addrs
                .next()
                .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no address"))?;
            TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        });
        match attempt {
            Ok(stream) => return Ok(stream),
            Err(e) if Instant::now() >= until => {
                return Err(FleetError::Unreachable {
                    address: options.coordinator.clone(),
                    waited_seconds: options.patience.as_secs(),
                    last: e.to_string(),
                })
            }
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// Clock exchanges with the coordinator: the offset of the best.
fn exchange(line: &mut Line, clock: WallClock) -> Result<Offset, FleetError> {
    let mut exchanges = Vec::with_capacity(clock::EXCHANGES);
    line.set_patience(Some(Duration::from_secs(10)))?;
    for _ in 0..clock::EXCHANGES {
        let t1 = clock.now_ns();
        line.send(&FromGenerator::Ping { t1 })?;
        match line.receive::<ToGenerator>()? {
            ToGenerator::Pong { t1: echoed, t2, t3 } if echoed == t1 => {
                let t4 = clock.now_ns();
                exchanges.push(Exchange { t1, t2, t3, t4 });
            }
            other => {
                return Err(FleetError::Malformed(format!(
                    "expected the answer to a clock exchange, got {other:?}"
                )))
            }
        }
    }
    Offset::of(&exchanges).ok_or(FleetError::Silent)
}

/// One case: clocks, the measurement released at the barrier, clocks again, the result.
fn run_case(line: &mut Line, clock: WallClock, case: &Case) -> Result<(), FleetError> {
    let before = exchange(line, clock)?;
    let mut barrier = Barrier {
        line,
        clock,
        offset_ns: before.offset_ns.round() as i64,
        skew_ns: None,
        aborted: false,
        broken: None,
    };
    let metrics = measure::measure_released(case, &mut barrier);
    let (skew_ns, aborted, broken) = (barrier.skew_ns, barrier.aborted, barrier.broken);
    if let Some(e) = broken {
        return Err(e);
    }
    if aborted {
        return Ok(());
    }
    let after = exchange(line, clock)?;
    let us = |ns: f64| ns / 1_000.0;
    let (drift_ppm, drift_uncertainty_ppm) = before.drift_ppm(&after);
    let result = GeneratorResult {
        clock: ClockRecord {
            offset_us: us(before.offset_ns),
            uncertainty_us: us(before.uncertainty_ns),
            delay_us: us(before.delay_ns as f64),
            exchanges: before.exchanges + after.exchanges,
            offset_end_us: us(after.offset_ns),
            uncertainty_end_us: us(after.uncertainty_ns),
            drift_ppm,
            drift_uncertainty_ppm,
        },
        start_skew_ns: skew_ns.unwrap_or(0) as f64,
        metrics,
    };
    line.send(&FromGenerator::Result {
        result: Box::new(result),
    })
}

/// The fleet's barrier, as the measurement sees it: say ready, wait for the release, wait
/// for its instant.
struct Barrier<'a> {
    line: &'a mut Line,
    clock: WallClock,
    /// Coordinator minus this clock, ns.
    offset_ns: i64,
    /// This generator's start minus the release, in the coordinator's clock.
    skew_ns: Option<i64>,
    /// The coordinator called the case off.
    aborted: bool,
    /// The connection failed: the generator cannot go on.
    broken: Option<FleetError>,
}

/// Why the measured phase did not start.
#[derive(Debug, thiserror::Error)]
enum NotReleased {
    #[error("the coordinator called the case off: {0}")]
    Aborted(String),
    #[error("the coordinator could not be heard: {0}")]
    Lost(String),
}

impl Release for Barrier<'_> {
    fn release(&mut self, _: &Case) -> Result<Window, Box<dyn std::error::Error>> {
        let answer = self
            .line
            .send(&FromGenerator::Ready)
            .and_then(|()| {
                self.line
                    .set_patience(Some(AT_THE_BARRIER))
                    .map_err(FleetError::Io)
            })
            .and_then(|()| self.line.receive::<ToGenerator>());
        match answer {
            Ok(ToGenerator::Release {
                start_unix_ns,
                end_unix_ns,
            }) => {
                let start = self.clock.instant_at(start_unix_ns - self.offset_ns);
                let end = self.clock.instant_at(end_unix_ns - self.offset_ns);
                let woke = self.clock.wait_until(start);
                self.skew_ns = Some(woke.unix_ns + self.offset_ns - start_unix_ns);
                let started = woke.at;
                Ok(Window {
                    start: started,
                    deadline: Some(end.max(started)),
                })
            }
            Ok(ToGenerator::Abort { reason }) => {
                self.aborted = true;
                Err(Box::new(NotReleased::Aborted(reason)))
            }
            Ok(other) => {
                let e = FleetError::Malformed(format!("expected the release, got {other:?}"));
                let text = e.to_string();
                self.broken = Some(e);
                Err(Box::new(NotReleased::Lost(text)))
            }
            Err(e) => {
                let text = e.to_string();
                self.broken = Some(e);
                Err(Box::new(NotReleased::Lost(text)))
            }
        }
    }
}
