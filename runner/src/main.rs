//! The `echomark-runner` binary: argument parsing, dispatch and exit codes only; the work is
//! in the library.

mod cli;
mod exit_codes;

use std::process::ExitCode;

use clap::Parser;
use cli::{Cli, Command};
use echomark_runner::matrix::{self, MatrixOutcome};
use echomark_runner::{calibrate, case, measure, soak};

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
                Ok(outcome) => matrix_code(outcome),
                Err(e) => usage("matrix", e),
            },
            Err(e) => usage("matrix", e),
        },
        Command::Soak(args) => match args.to_case() {
            Ok(case) => {
                let report = soak::run(&case, args.seconds, args.rounds);
                println!("{}", serde_json::to_string(&report).expect("plain data"));
                verdict(report.passed)
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
                verdict(v.passed)
            }
            Err(e) => usage("verify", e),
        },
        Command::DescribeHost => match serde_json::to_string_pretty(&matrix::host::describe()) {
            Ok(json) => {
                println!("{json}");
                exit_codes::OK
            }
            Err(e) => usage("describe-host", e.to_string()),
        },
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
        Command::Calibrate(args) if args.serve.is_some() || args.target.is_some() => {
            calibrate_apart(&args)
        }
        Command::Calibrate(args) => {
            let ip = case::loopback(args.address_family);
            match calibrate::run(ip, args.payload as usize, args.seconds) {
                Ok(c) => {
                    println!("{}", serde_json::to_string(&c).expect("plain data"));
                    exit_codes::OK
                }
                Err(e) => {
                    eprintln!("echomark-runner calibrate: {e}");
                    exit_codes::FAILED
                }
            }
        }
    })
}

/// `calibrate --serve` or `--target`: the blocking server or client alone.
fn calibrate_apart(args: &cli::CalibrateArgs) -> u8 {
    use std::io::Write as _;
    let udp = match args.protocol {
        case::Protocol::Tcp => false,
        case::Protocol::Udp => true,
        other => return usage("calibrate", format!("--protocol {other}: tcp or udp only")),
    };
    let result = if let Some(addr) = args.serve {
        let stop = match stop_on_signals("calibrate") {
            Ok(stop) => stop,
            Err(code) => return code,
        };
        calibrate::serve(addr, udp, &stop, |bound| {
            println!("{}", serde_json::json!({ "listening": bound.to_string() }));
            let _ = std::io::stdout().flush();
        })
    } else if let Some(addr) = args.target {
        calibrate::client(addr, udp, args.payload as usize, args.seconds).map(|floor| {
            println!("{}", serde_json::to_string(&floor).expect("plain data"));
        })
    } else {
        Ok(())
    };
    match result {
        Ok(()) => exit_codes::OK,
        Err(e) => {
            eprintln!("echomark-runner calibrate: {e}");
            exit_codes::FAILED
        }
    }
}

/// A flag that SIGTERM or SIGINT sets, for a command that runs until told to stop; the
/// exit code to return when the handlers cannot be installed.
fn stop_on_signals(command: &str) -> Result<std::sync::Arc<std::sync::atomic::AtomicBool>, u8> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        if let Err(e) = signal_hook::flag::register(signal, stop.clone()) {
            eprintln!("echomark-runner {command}: cannot handle signal {signal}: {e}");
            return Err(exit_codes::FAILED);
        }
    }
    Ok(stop)
}

/// Prints a usage problem of `command` and returns its exit code.
fn usage(command: &str, e: impl std::fmt::Display) -> u8 {
    eprintln!("echomark-runner {command}: {e}");
    exit_codes::USAGE
}

fn verdict(ok: bool) -> u8 {
    if ok {
        exit_codes::OK
    } else {
        exit_codes::FAILED
    }
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
            verdict(metrics.ok)
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
    let stop = match stop_on_signals("serve") {
        Ok(stop) => stop,
        Err(code) => return code,
    };
    let announce = |listening: &echomark_runner::serve::Listening| {
        println!("{}", serde_json::to_string(listening).expect("plain data"));
        // The parent reads the address before it connects: never leave it in a buffer.
        let _ = std::io::stdout().flush();
    };
    match echomark_runner::serve::run(options, &stop, announce) {
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

fn matrix_code(outcome: MatrixOutcome) -> u8 {
    match outcome {
        MatrixOutcome::Finished {
            failed_runs,
            soak_failed,
        } => verdict(failed_runs == 0 && !soak_failed),
        MatrixOutcome::Interrupted { signal } if signal == signal_hook::consts::SIGTERM => {
            exit_codes::SIGTERM
        }
        MatrixOutcome::Interrupted { .. } => exit_codes::SIGINT,
        MatrixOutcome::Paused { .. } => exit_codes::OK,
    }
}
