//! The coordinator: gathers the generators, then runs cases on them, each released at one
//! barrier and merged exactly.

use std::net::TcpListener;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use echomark_archive::{FleetRecord, GeneratorRecord, Metrics};

use super::clock::WallClock;
use super::wire::{FromGenerator, GeneratorResult, Line, ToGenerator, VERSION};
use super::FleetError;

/// How long before the start the release is sent: enough for it to cross any network a
/// fleet runs on, and for each generator to map it to its own clock.
const RELEASE_LEAD: Duration = Duration::from_millis(250);
/// How long a generator may take to say hello once connected.
const HELLO_LIMIT: Duration = Duration::from_secs(10);
/// Setup, verification and the drain around a case's warmup and measured phase.
const MARGIN: Duration = Duration::from_secs(60);

/// A generator of the fleet.
struct Member {
    line: Line,
    index: u64,
    host: String,
    logical_cpus: u64,
}

/// The generators a coordinator gathered, in index order.
pub struct Fleet {
    members: Vec<Member>,
    clock: WallClock,
}

/// A case's phases, which bound how long the coordinator waits for each step.
#[derive(Debug, Clone, Copy)]
pub struct FleetTiming {
    pub warmup: f64,
    pub seconds: f64,
}

impl Fleet {
    /// Waits for `size` generators to connect to `listener` and say hello.
    pub fn gather(
        listener: &TcpListener,
        size: usize,
        patience: Duration,
    ) -> Result<Fleet, FleetError> {
        let until = Instant::now() + patience;
        listener.set_nonblocking(true)?;
        let mut members: Vec<(Option<u64>, Member)> = Vec::new();
        while members.len() < size {
            match listener.accept() {
                Ok((stream, peer)) => {
                    stream.set_nonblocking(false)?;
                    match hello(Line::new(stream)?) {
                        Ok(member) => members.push(member),
                        // Another protocol's generator is one of the fleet that cannot run.
                        Err(e @ FleetError::Version { .. }) => return Err(e),
                        // Whatever else knocked (a port scan, a health check) is not one.
                        Err(e) => eprintln!("fleet: {peer} is not a generator ({e}); ignored"),
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if Instant::now() >= until {
                        return Err(FleetError::Incomplete {
                            have: members.len(),
                            want: size,
                            waited_seconds: patience.as_secs(),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(e.into()),
            }
        }
        // Generators that know their index (a Job's) keep it; the others follow in the
        // order they came.
        members.sort_by_key(|(declared, _)| declared.unwrap_or(u64::MAX));
        let mut seen = std::collections::BTreeSet::new();
        for (declared, _) in &members {
            if let Some(i) = declared {
                if !seen.insert(*i) {
                    return Err(FleetError::DuplicateIndex(*i));
                }
            }
        }
        let members = members
            .into_iter()
            .enumerate()
            .map(|(i, (_, mut m))| {
                m.index = i as u64;
                m
            })
            .collect();
        Ok(Fleet {
            members,
            clock: WallClock::real(),
        })
    }

    /// How many generators the fleet has.
    pub fn size(&self) -> usize {
        self.members.len()
    }

    /// Runs `once`'s `args` on the first `count` generators, released together, and merges
    /// what they measured. Any generator's failure fails the case, with its reason.
    pub fn run_case(
        &mut self,
        args: &[String],
        count: usize,
        timing: FleetTiming,
    ) -> Result<Metrics, FleetError> {
        if count == 0 || count > self.members.len() {
            return Err(FleetError::TooFew {
                have: self.members.len(),
                want: count,
            });
        }
        let gate = Gate::new(count);
        let clock = self.clock;
        let limits = Limits::of(timing);
        let members = &mut self.members[..count];
        let results: Vec<Result<GeneratorResult, FleetError>> = std::thread::scope(|s| {
            let drivers: Vec<_> = members
                .iter_mut()
                .map(|m| s.spawn(|| drive(m, args, &gate, clock, limits)))
                .collect();
            gate.decide(clock, timing, limits.ready);
            drivers
                .into_iter()
                .map(|d| d.join().unwrap_or(Err(FleetError::Closed)))
                .collect()
        });
        if let Some(reason) = gate.failure() {
            return Err(reason);
        }
        let mut parts = Vec::with_capacity(count);
        for r in results {
            parts.push(r?);
        }
        let release = gate.release().expect("released when no generator failed");
        self.merge(parts, release)
    }

    /// The merged metrics, with each generator's record beside them.
    fn merge(
        &self,
        parts: Vec<GeneratorResult>,
        (start, end): (i64, i64),
    ) -> Result<Metrics, FleetError> {
        let metrics: Vec<Metrics> = parts.iter().map(|p| p.metrics.clone()).collect();
        let mut merged = super::merge::merge(&metrics)?;
        let generators: Vec<GeneratorRecord> = parts
            .into_iter()
            .zip(&self.members)
            .map(|(p, m)| GeneratorRecord {
                index: m.index,
                host: m.host.clone(),
                logical_cpus: m.logical_cpus,
                start_skew_us: p.start_skew_ns / 1_000.0,
                start_skew_uncertainty_us: p.clock.uncertainty_us,
                clock: p.clock,
                metrics: p.metrics,
            })
            .collect();
        let mut skews: Vec<f64> = generators.iter().map(|g| g.start_skew_us).collect();
        skews.sort_by(f64::total_cmp);
        let worst = skews
            .iter()
            .copied()
            .max_by(|a, b| a.abs().total_cmp(&b.abs()));
        merged.fleet = Some(Box::new(FleetRecord {
            generator_count: generators.len() as u64,
            coordinator_host: super::host_name(),
            start_unix_ns: start.max(0) as u64,
            end_unix_ns: end.max(0) as u64,
            release_lead_ms: RELEASE_LEAD.as_secs_f64() * 1e3,
            start_skew_median_us: median(&skews),
            start_skew_worst_us: worst.unwrap_or(0.0),
            start_skew_uncertainty_us: generators
                .iter()
                .map(|g| g.start_skew_uncertainty_us)
                .fold(0.0, f64::max),
            generators,
        }));
        Ok(merged)
    }

    /// Dismisses every generator: they exit (dropping the fleet does the same).
    pub fn dismiss(self) {}
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for m in &mut self.members {
            let _ = m.line.send(&ToGenerator::Done);
        }
    }
}

fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// A new connection's hello.
fn hello(mut line: Line) -> Result<(Option<u64>, Member), FleetError> {
    line.set_patience(Some(HELLO_LIMIT))?;
    match line.receive::<FromGenerator>()? {
        FromGenerator::Hello {
            version,
            index,
            host,
            logical_cpus,
        } => {
            if version != VERSION {
                return Err(FleetError::Version {
                    theirs: version,
                    ours: VERSION,
                });
            }
            let member = Member {
                line,
                index: 0,
                host,
                logical_cpus,
            };
            Ok((index, member))
        }
        other => Err(FleetError::Malformed(format!(
            "{}: expected a hello, got {other:?}",
            line.peer()
        ))),
    }
}

/// How long each step of a case may take.
#[derive(Debug, Clone, Copy)]
struct Limits {
    /// From the case to `ready`: setup, verification, warmup.
    ready: Duration,
    /// From the release to the result: the measured phase, the drain, the clocks.
    result: Duration,
}

impl Limits {
    fn of(t: FleetTiming) -> Limits {
        Limits {
            ready: Duration::from_secs_f64(t.warmup.max(0.0)) + MARGIN,
            result: Duration::from_secs_f64(t.seconds.max(0.0)) + RELEASE_LEAD + MARGIN,
        }
    }
}

/// The barrier: how many generators are ready, the release once every one is, or the
/// first failure.
struct Gate {
    want: usize,
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Default)]
struct GateState {
    ready: usize,
    release: Option<(i64, i64)>,
    failure: Option<FleetError>,
    /// Set once the release or the failure is decided.
    decided: bool,
}

impl Gate {
    fn new(want: usize) -> Gate {
        Gate {
            want,
            state: Mutex::new(GateState::default()),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A generator is ready: waits for the decision, the release or why there is none.
    fn ready(&self) -> Result<(i64, i64), String> {
        let mut s = self.lock();
        s.ready += 1;
        self.changed.notify_all();
        while !s.decided {
            s = self.changed.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        match (s.release, &s.failure) {
            (Some(release), None) => Ok(release),
            (_, Some(f)) => Err(f.to_string()),
            (None, None) => Err("no release".to_string()),
        }
    }

    /// A generator failed: the first failure is the case's.
    fn fail(&self, e: FleetError) {
        let mut s = self.lock();
        if s.failure.is_none() && s.release.is_none() {
            s.decided = true;
        }
        s.failure.get_or_insert(e);
        self.changed.notify_all();
    }

    /// Waits until every generator is ready (then sets the release) or one failed, or the
    /// limit passed.
    fn decide(&self, clock: WallClock, t: FleetTiming, limit: Duration) {
        let until = Instant::now() + limit;
        let mut s = self.lock();
        while !s.decided && s.ready < self.want {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                s.failure = Some(FleetError::NotReady {
                    missing: self.want - s.ready,
                    want: self.want,
                    waited_seconds: limit.as_secs(),
                });
                s.decided = true;
                self.changed.notify_all();
                return;
            }
            s = self
                .changed
                .wait_timeout(s, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        if !s.decided {
            let start = clock.now_ns() + RELEASE_LEAD.as_nanos() as i64;
            let end = start + (t.seconds * 1e9) as i64;
            s.release = Some((start, end));
            s.decided = true;
            self.changed.notify_all();
        }
    }

    fn failure(&self) -> Option<FleetError> {
        self.lock().failure.take()
    }

    fn release(&self) -> Option<(i64, i64)> {
        self.lock().release
    }
}

/// One generator through one case, on a thread of its own: the case out, clock exchanges
/// answered, `ready` to the gate, the release or the abort out, the result in. Its failure
/// is the gate's too, so the others are called off.
fn drive(
    m: &mut Member,
    args: &[String],
    gate: &Gate,
    clock: WallClock,
    limits: Limits,
) -> Result<GeneratorResult, FleetError> {
    let (index, host) = (m.index, m.host.clone());
    let named = |reason: String| FleetError::Generator {
        index,
        host: host.clone(),
        reason,
    };
    let reason = match drive_steps(m, args, gate, clock, limits) {
        Ok(result) => return Ok(result),
        Err((_, Step::Aborted(why))) => return Err(named(format!("was called off: {why}"))),
        Err((_, Step::Said(reason))) => reason,
        Err((step, Step::Fleet(FleetError::Closed))) => format!("closed the connection {step}"),
        Err((step, Step::Fleet(FleetError::Silent))) => format!("said nothing in time {step}"),
        Err((step, Step::Fleet(e))) => format!("{step}: {e}"),
    };
    gate.fail(named(reason.clone()));
    Err(named(reason))
}

/// What went wrong in a step of [`drive`].
enum Step {
    /// The generator said why.
    Said(String),
    /// The connection failed.
    Fleet(FleetError),
    /// Another generator failed first.
    Aborted(String),
}

fn drive_steps(
    m: &mut Member,
    args: &[String],
    gate: &Gate,
    clock: WallClock,
    limits: Limits,
) -> Result<GeneratorResult, (&'static str, Step)> {
    let before = "before the barrier";
    let fleet = |step: &'static str| move |e: FleetError| (step, Step::Fleet(e));
    m.line
        .send(&ToGenerator::Case {
            args: args.to_vec(),
        })
        .map_err(fleet(before))?;
    m.line
        .set_patience(Some(limits.ready))
        .map_err(|e| (before, Step::Fleet(e.into())))?;
    match answer(&mut m.line, clock).map_err(fleet(before))? {
        FromGenerator::Ready => {}
        FromGenerator::Failed { reason } => return Err((before, Step::Said(reason))),
        FromGenerator::Result { result } => {
            let why = result.metrics.error.unwrap_or_else(|| "no reason".into());
            return Err((
                before,
                Step::Said(format!("failed before the barrier: {why}")),
            ));
        }
        other => {
            let e = FleetError::Malformed(format!("expected ready, got {other:?}"));
            return Err((before, Step::Fleet(e)));
        }
    }
    match gate.ready() {
        Ok((start_unix_ns, end_unix_ns)) => m
            .line
            .send(&ToGenerator::Release {
                start_unix_ns,
                end_unix_ns,
            })
            .map_err(fleet(before))?,
        Err(reason) => {
            let _ = m.line.send(&ToGenerator::Abort {
                reason: reason.clone(),
            });
            return Err((before, Step::Aborted(reason)));
        }
    }
    let during = "during the run";
    m.line
        .set_patience(Some(limits.result))
        .map_err(|e| (during, Step::Fleet(e.into())))?;
    match answer(&mut m.line, clock).map_err(fleet(during))? {
        FromGenerator::Result { result } => Ok(*result),
        FromGenerator::Failed { reason } => Err((during, Step::Said(reason))),
        other => Err((
            during,
            Step::Fleet(FleetError::Malformed(format!(
                "expected a result, got {other:?}"
            ))),
        )),
    }
}

/// The generator's next word that is not a clock exchange (those are answered on the way).
fn answer(line: &mut Line, clock: WallClock) -> Result<FromGenerator, FleetError> {
    loop {
        match line.receive::<FromGenerator>()? {
            FromGenerator::Ping { t1 } => {
                let t2 = clock.now_ns();
                line.send(&ToGenerator::Pong {
                    t1,
                    t2,
                    t3: clock.now_ns(),
                })?;
            }
            other => return Ok(other),
        }
    }
}
