//! `fleet`: one measurement by several generator hosts released at one barrier
//! ([`echomark_runner::fleet`]); the flags and the translation to the library only.

use std::net::TcpListener;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use echomark_runner::case::Case;
use echomark_runner::exit_codes;
use echomark_runner::fleet::{self, clock::WallClock, Fleet, FleetTiming, GeneratorOptions};

use super::{Cli, Command};

/// The flags of `fleet`.
#[derive(Debug, Args)]
pub struct FleetArgs {
    #[command(subcommand)]
    pub role: FleetRole,
}

/// A process's part in a fleet.
#[derive(Debug, Subcommand)]
pub enum FleetRole {
    /// Gather N generators, release them at one barrier against `once`'s --target, and
    /// print the merged metrics (one JSON object, as `once` prints) with every generator's
    /// record in `fleet`.
    Coordinate(CoordinateArgs),
    /// Connect to a coordinator and measure every case it sends until it dismisses the
    /// fleet.
    Generate(GenerateArgs),
    /// The entrypoint of a Kubernetes Indexed Job's pods: index 0 (JOB_COMPLETION_INDEX)
    /// runs the command after `--` (the coordinator) and a generator beside it; every other
    /// index is a generator.
    Job(JobArgs),
}

/// The flags of `fleet coordinate`.
#[derive(Debug, Args)]
pub struct CoordinateArgs {
    /// Generators to wait for; all of them measure.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub generators: u64,
    /// Address the generators connect to; port 0 picks a free one (said on stderr).
    #[arg(long, default_value = "0.0.0.0:7700")]
    pub listen: std::net::SocketAddr,
    /// Seconds to wait for every generator to connect.
    #[arg(long, default_value_t = 120)]
    pub wait: u64,
    /// `once`'s flags for every generator (--target required).
    #[arg(last = true, required = true)]
    pub once: Vec<String>,
}

/// The flags of `fleet generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// The coordinator, HOST:PORT (a name is resolved again on every attempt).
    #[arg(long)]
    pub coordinator: String,
    /// This generator's index in the fleet (default: JOB_COMPLETION_INDEX, else the order
    /// in which generators connect).
    #[arg(long)]
    pub index: Option<u64>,
    /// Seconds to keep trying to reach the coordinator.
    #[arg(long, default_value_t = 300)]
    pub wait: u64,
    /// Test only: read a wall clock this many µs ahead of the real one, to play a host
    /// whose clock is off.
    #[arg(long, hide = true, default_value_t = 0, allow_negative_numbers = true)]
    pub test_clock_shift_us: i64,
}

/// The flags of `fleet job`.
#[derive(Debug, Args)]
pub struct JobArgs {
    /// The coordinator, HOST:PORT (in a Job: `<job>-0.<headless service>:PORT`).
    #[arg(long)]
    pub coordinator: String,
    /// This pod's index (default: JOB_COMPLETION_INDEX).
    #[arg(long)]
    pub index: Option<u64>,
    /// Index 0: once the command succeeded, print this file (the archive it wrote) on
    /// stdout between two marker lines; everything else goes to stderr.
    #[arg(long)]
    pub print_archive: Option<PathBuf>,
    /// Seconds a generator keeps trying to reach the coordinator.
    #[arg(long, default_value_t = 300)]
    pub wait: u64,
    /// Index 0's command: `echomark-runner`'s arguments (`matrix … --fleet-listen …` or
    /// `fleet coordinate …`).
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// `once`'s flags as a case; the parser's message when they are not.
pub fn once_case(args: &[String]) -> Result<Case, String> {
    let argv = ["echomark-runner", "once"]
        .into_iter()
        .map(String::from)
        .chain(args.iter().cloned());
    match Cli::try_parse_from(argv) {
        Ok(Cli {
            command: Command::Once(once),
        }) => once.to_case().map_err(|e| e.to_string()),
        Ok(_) => Err("not once's flags".to_string()),
        Err(e) => Err(e.to_string().trim().to_string()),
    }
}

impl FleetArgs {
    /// Runs this process's part; its exit code.
    pub fn run(&self) -> u8 {
        match &self.role {
            FleetRole::Coordinate(a) => a.run(),
            FleetRole::Generate(a) => {
                let options = GeneratorOptions {
                    coordinator: a.coordinator.clone(),
                    index: a.index.or_else(|| fleet::job::index(None).ok()),
                    patience: Duration::from_secs(a.wait),
                    clock: WallClock::shifted(a.test_clock_shift_us * 1_000),
                };
                generate(&options)
            }
            FleetRole::Job(a) => a.run(),
        }
    }
}

/// A generator's life: its exit code.
fn generate(options: &GeneratorOptions) -> u8 {
    match fleet::generator::generate(options, &once_case) {
        Ok(_) => exit_codes::OK,
        Err(e) => {
            eprintln!("echomark-runner fleet generate: {e}");
            exit_codes::FAILED
        }
    }
}

impl CoordinateArgs {
    fn run(&self) -> u8 {
        let fail = |e: &dyn std::fmt::Display, code| {
            eprintln!("echomark-runner fleet coordinate: {e}");
            code
        };
        let case = match once_case(&self.once).and_then(|c| fleet_case(&c).map(|()| c)) {
            Ok(case) => case,
            Err(e) => return fail(&e, exit_codes::USAGE),
        };
        let listener = match TcpListener::bind(self.listen) {
            Ok(l) => l,
            Err(e) => return fail(&format!("--listen {}: {e}", self.listen), exit_codes::USAGE),
        };
        let address = listener
            .local_addr()
            .map_or_else(|_| self.listen.to_string(), |a| a.to_string());
        eprintln!(
            "echomark-runner fleet coordinate: listening on {address} for {} generators",
            self.generators
        );
        let mut fleet = match Fleet::gather(
            &listener,
            self.generators as usize,
            Duration::from_secs(self.wait),
        ) {
            Ok(f) => f,
            Err(e) => return fail(&e, exit_codes::FAILED),
        };
        let timing = FleetTiming {
            warmup: case.warmup,
            seconds: case.seconds,
        };
        let outcome = fleet.run_case(&self.once, self.generators as usize, timing);
        fleet.dismiss();
        match outcome {
            Ok(metrics) => {
                if let Some(error) = &metrics.error {
                    eprintln!("echomark-runner fleet coordinate: {error}");
                }
                println!("{}", serde_json::to_string(&metrics).expect("plain data"));
                exit_codes::verdict(metrics.ok)
            }
            Err(e) => fail(&e, exit_codes::FAILED),
        }
    }
}

/// Whether a fleet runs `case`: against a target, closed loop, no QUIC (whose per-connection
/// figures are averages, not sums).
pub fn fleet_case(case: &Case) -> Result<(), String> {
    if case.target.is_none() {
        return Err("a fleet measures a server of its own: give once's flags a --target".into());
    }
    if case.open_loop.is_some() {
        return Err("a fleet measures closed loop (--rate is not supported)".into());
    }
    if case.protocol.is_quic() {
        return Err(format!(
            "--protocol {} is not supported by a fleet",
            case.protocol
        ));
    }
    Ok(())
}

impl JobArgs {
    fn run(&self) -> u8 {
        let index = match fleet::job::index(self.index) {
            Ok(i) => i,
            Err(e) => {
                eprintln!("echomark-runner fleet job: {e}");
                return exit_codes::USAGE;
            }
        };
        if index > 0 {
            return generate(&GeneratorOptions {
                coordinator: self.coordinator.clone(),
                index: Some(index),
                patience: Duration::from_secs(self.wait),
                clock: WallClock::real(),
            });
        }
        let exe = match std::env::current_exe() {
            Ok(p) => p,
            Err(e) => {
                eprintln!("echomark-runner fleet job: cannot find this executable: {e}");
                return exit_codes::FAILED;
            }
        };
        match fleet::job::lead(
            &exe,
            &self.coordinator,
            &self.command,
            self.print_archive.as_deref(),
        ) {
            Ok(code) => u8::try_from(code).unwrap_or(exit_codes::FAILED),
            Err(e) => {
                eprintln!("echomark-runner fleet job: {e}");
                exit_codes::FAILED
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fleet container's `args` in `deploy/kubernetes/fleet.yaml`, one per `- ` line.
    fn job_args() -> Vec<String> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../deploy/kubernetes/fleet.yaml");
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines = text.lines().skip_while(|l| l.trim() != "args:").skip(1);
        let mut args = Vec::new();
        for line in lines.by_ref() {
            let Some(item) = line.trim().strip_prefix("- ") else {
                break;
            };
            args.push(item.trim_matches('"').to_string());
        }
        args
    }

    #[test]
    fn the_kubernetes_job_runs_a_fleet_matrix_this_binary_accepts() {
        let args = job_args();
        let argv = std::iter::once("echomark-runner".to_string()).chain(args);
        let cli = Cli::try_parse_from(argv).expect("the Job's args parse");
        let Command::Fleet(FleetArgs {
            role: FleetRole::Job(job),
        }) = cli.command
        else {
            panic!("the Job runs fleet job");
        };
        assert_eq!(job.coordinator, "echomark-fleet-0.echomark-fleet:7700");
        let argv = std::iter::once("echomark-runner".to_string()).chain(job.command.clone());
        let Command::Matrix(matrix) = Cli::try_parse_from(argv)
            .expect("pod 0's command parses")
            .command
        else {
            panic!("pod 0 runs a matrix");
        };
        let request = matrix.to_request().expect("a matrix request");
        let fleet = request.options.fleet.as_ref().expect("a fleet matrix");
        assert_eq!((fleet.size, fleet.generators.clone()), (4, vec![1, 2, 4]));
        assert_eq!(fleet.listen, "0.0.0.0:7700");
        let server = &request.options.external_servers[0];
        assert_eq!(server.address.as_deref(), Some("echomark-server:7000"));
        let planned = request.planned_archives().expect("its archives");
        assert_eq!(planned.len(), 1);
        assert!(!planned[0].1.planned_runs(&planned[0].0, &[]).is_empty());
    }
}
