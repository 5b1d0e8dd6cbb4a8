//! The `echomark-runner` binary: argument parsing and dispatch only.

use std::process::ExitCode;

use clap::Parser;
use echomark_runner::cli::{Cli, Command};
use echomark_runner::{bench, calibrate, matrix, soak};

/// Exit code for a request that cannot be run.
const USAGE: u8 = 2;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout with 0; real usage errors exit 2.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { USAGE } else { 0 });
        }
    };
    match cli.command {
        Command::Once(args) => {
            let case = match args.to_case() {
                Ok(case) => case,
                Err(e) => {
                    eprintln!("echomark-runner once: {e}");
                    return ExitCode::from(USAGE);
                }
            };
            let metrics = bench::measure(&case);
            match serde_json::to_string(&metrics) {
                Ok(json) => println!("{json}"),
                Err(e) => {
                    eprintln!("echomark-runner once: cannot encode metrics: {e}");
                    return ExitCode::from(1);
                }
            }
            ExitCode::from(u8::from(!metrics.ok))
        }
        Command::Matrix(args) => match matrix::run(&args) {
            Ok(code) => ExitCode::from(code),
            Err(e) => {
                eprintln!("echomark-runner matrix: {e}");
                ExitCode::from(matrix::exit::USAGE)
            }
        },
        Command::Soak(args) => {
            let case = match args.to_case() {
                Ok(case) => case,
                Err(e) => {
                    eprintln!("echomark-runner soak: {e}");
                    return ExitCode::from(USAGE);
                }
            };
            let report = soak::run(&case, args.seconds, args.rounds);
            println!("{}", serde_json::to_string(&report).expect("plain data"));
            ExitCode::from(u8::from(!report.passed))
        }
        Command::SourceHash { dir } => {
            let dir = dir.unwrap_or_else(matrix::provenance::default_source_dir);
            match matrix::provenance::source_sha256(&dir) {
                Ok(hash) => {
                    println!("{hash}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("echomark-runner source-hash: {}: {e}", dir.display());
                    ExitCode::from(USAGE)
                }
            }
        }
        Command::Calibrate(args) => {
            match calibrate::run(
                args.address_family.loopback(),
                args.payload as usize,
                args.seconds,
            ) {
                Ok(c) => {
                    println!("{}", serde_json::to_string(&c).expect("plain data"));
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("echomark-runner calibrate: {e}");
                    ExitCode::from(1)
                }
            }
        }
    }
}
