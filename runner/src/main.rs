//! The `echomark-runner` binary: argument parsing, dispatch and exit codes only; the work is
//! in the library.

mod cli;

use std::process::ExitCode;

use clap::Parser;
use cli::{Cli, Command};
use echomark_runner::matrix;
use echomark_runner::{calibrate, case, exit_codes, measure, soak};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout with 0; real usage errors exit 2.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                exit_codes::USAGE
            } else {
                exit_codes::OK
            });
        }
    };
    ExitCode::from(match cli.command {
        Command::Once(args) => match args.to_case() {
            Ok(case) => once(&case),
            Err(e) => usage("once", e),
        },
        Command::Matrix(args) => match args.to_request() {
            Ok(request) => match matrix::run(&request) {
                Ok(outcome) => outcome.exit_code(),
                Err(e) => usage("matrix", e),
            },
            Err(e) => usage("matrix", e),
        },
        Command::Soak(args) => match args.to_case() {
            Ok(case) => {
                let report = soak::run(&case, args.seconds, args.rounds);
                println!("{}", serde_json::to_string(&report).expect("plain data"));
                exit_codes::verdict(report.passed)
            }
            Err(e) => usage("soak", e),
        },
        Command::Serve(args) => match args.to_options() {
            Ok(options) => serve(&options),
            Err(e) => usage("serve", e),
        },
        Command::Verify(args) => match args.to_target() {
            Ok(target) => {
                let v = echomark_runner::verify::verify(args.protocol, &target, args.limits());
                if args.json {
                    println!("{}", serde_json::to_string_pretty(&v).expect("plain data"));
                } else {
                    print!("{}", v.table());
                }
                exit_codes::verdict(v.passed)
            }
            Err(e) => usage("verify", e),
        },
        Command::Fleet(args) => args.run(),
        Command::DescribeHost => {
            let host = serde_json::to_string_pretty(&matrix::host::describe());
            println!("{}", host.expect("plain data"));
            exit_codes::OK
        }
        Command::SourceHash { dir } => {
            let dir = dir.unwrap_or_else(matrix::provenance::default_source_dir);
            match matrix::provenance::source_sha256(&dir) {
                Ok(hash) => {
                    println!("{hash}");
                    exit_codes::OK
                }
                Err(e) => usage("source-hash", format!("{}: {e}", dir.display())),
            }
        }
        Command::Calibrate(args) => {
            let mode = args.mode();
            let print = |line: String| {
                println!("{line}");
                // A parent reads the listening address before it connects.
                let _ = std::io::Write::flush(&mut std::io::stdout());
            };
            let (payload, seconds) = (args.payload as usize, args.seconds);
            match calibrate::command(mode, args.protocol, payload, seconds, print) {
                Ok(()) => exit_codes::OK,
                Err(e) => {
                    eprintln!("echomark-runner calibrate: {e}");
                    e.exit_code()
                }
            }
        }
    })
}

/// Prints a usage problem of `command` and returns its exit code.
fn usage(command: &str, e: impl std::fmt::Display) -> u8 {
    eprintln!("echomark-runner {command}: {e}");
    exit_codes::USAGE
}

/// `once`: one JSON metrics object on stdout; why a run failed also on stderr, for a reader
/// at a terminal (the matrix keeps it in the run's `stderr`).
fn once(case: &case::Case) -> u8 {
    let metrics = measure::measure(case);
    if let Some(error) = &metrics.error {
        eprintln!("echomark-runner once: {error}");
    }
    match serde_json::to_string(&metrics) {
        Ok(json) => {
            println!("{json}");
            exit_codes::verdict(metrics.ok)
        }
        Err(e) => {
            eprintln!("echomark-runner once: cannot encode metrics: {e}");
            exit_codes::FAILED
        }
    }
}

/// `serve`: the listening line, then, once SIGTERM or SIGINT arrives, the counters.
fn serve(options: &echomark_runner::serve::ServeOptions) -> u8 {
    use std::io::Write as _;
    let announce = |listening: &echomark_runner::serve::Listening| {
        println!("{}", serde_json::to_string(listening).expect("plain data"));
        // The parent reads the address before it connects: never leave it in a buffer.
        let _ = std::io::stdout().flush();
    };
    let served = echomark_runner::signals::stop_flag()
        .map_err(echomark_runner::serve::ServeError::from)
        .and_then(|stop| echomark_runner::serve::run(options, &stop, announce));
    match served {
        Ok(report) => {
            println!("{}", serde_json::to_string(&report).expect("plain data"));
            exit_codes::OK
        }
        Err(echomark_runner::serve::ServeError::Usage(e)) => usage("serve", e),
        Err(e) => {
            eprintln!("echomark-runner serve: {e}");
            exit_codes::FAILED
        }
    }
}
