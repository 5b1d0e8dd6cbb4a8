//! A matrix measured by a fleet (`--fleet-size`): this process coordinates the generators
//! (`fleet generate`, or a Kubernetes Job's pods), gathered once; each run is one fleet run
//! of its generator count against the external server, recorded as a child's would be.

use std::cell::RefCell;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use echomark_archive::FleetPlan;

use super::child::ChildOutcome;
use super::MatrixError;
use crate::fleet::{Fleet, FleetTiming};

/// How long the matrix waits for its fleet to connect when `--fleet-wait` is not given
/// (and on `--resume`).
pub const DEFAULT_WAIT: Duration = Duration::from_secs(300);

/// The fleet of a matrix, gathered before its first run.
pub(super) struct MatrixFleet {
    fleet: RefCell<Fleet>,
    timing: FleetTiming,
}

/// Listens where `plan` says and waits for its generators; `None` without a plan.
pub(super) fn gather(
    plan: Option<&FleetPlan>,
    timing: FleetTiming,
    wait: Duration,
) -> Result<Option<MatrixFleet>, MatrixError> {
    let Some(plan) = plan else {
        return Ok(None);
    };
    let system = |what: String| move |e| MatrixError::system(what, e);
    let listener = TcpListener::bind(&plan.listen)
        .map_err(system(format!("--fleet-listen {}", plan.listen)))?;
    let address = listener
        .local_addr()
        .map_or_else(|_| plan.listen.clone(), |a| a.to_string());
    eprintln!(
        "matrix: waiting up to {} s for {} generators on {address}",
        wait.as_secs(),
        plan.size
    );
    let fleet = Fleet::gather(&listener, plan.size as usize, wait).map_err(|e| {
        MatrixError::system(
            "the fleet did not gather",
            std::io::Error::other(e.to_string()),
        )
    })?;
    Ok(Some(MatrixFleet {
        fleet: RefCell::new(fleet),
        timing,
    }))
}

impl MatrixFleet {
    /// One run by `generators` of the fleet with `once`'s `args`: what a child running it
    /// would have left (the merged metrics on stdout), and the fleet's reason when it
    /// failed.
    pub(super) fn measure(
        &self,
        args: &[String],
        generators: u64,
    ) -> (ChildOutcome, Option<String>) {
        // `once`'s flags, without the subcommand's name.
        let args = args.strip_prefix(&["once".to_string()]).unwrap_or(args);
        let started = Instant::now();
        let measured = self
            .fleet
            .borrow_mut()
            .run_case(args, generators as usize, self.timing);
        let (returncode, stdout, error) = match measured {
            Ok(m) => {
                let code = i32::from(!m.ok);
                (code, serde_json::to_string(&m).unwrap_or_default(), None)
            }
            Err(e) => (1, String::new(), Some(format!("fleet: {e}"))),
        };
        let outcome = ChildOutcome {
            returncode,
            stdout,
            stderr: error.clone().unwrap_or_default(),
            timed_out: false,
            signal: None,
            wall: started.elapsed(),
        };
        (outcome, error)
    }
}

/// The command a fleet run records: the coordinator's, as `fleet coordinate` takes it.
pub(super) fn command(exe: &std::path::Path, generators: u64, args: &[String]) -> Vec<String> {
    let mut command = vec![
        exe.display().to_string(),
        "fleet".into(),
        "coordinate".into(),
        "--generators".into(),
        generators.to_string(),
        "--".into(),
    ];
    let args = args.strip_prefix(&["once".to_string()]).unwrap_or(args);
    command.extend(args.iter().cloned());
    command
}
