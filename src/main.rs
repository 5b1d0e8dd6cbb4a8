//! The `echomark` binary: parses the command line ([`echomark::cli`]), calls the library
//! ([`echomark::commands`], [`echomark::import`]), prints what they return and exits with
//! its code ([`echomark::exit_codes`]).

use std::process::ExitCode;

use clap::Parser;
use echomark::cli::{default_paths, Cli, Command, ImportArgs};
use echomark::commands::{self, CommandError};
use echomark::error::printable;
use echomark::exit_codes;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Validate { paths, json } => {
            commands::validate::run(&default_paths(paths), json).map(|text| print!("{text}"))
        }
        Command::Summary { paths, out } => {
            commands::summary::run(&default_paths(paths), &out).map(|written| {
                for w in written {
                    println!(
                        "{}: {} configurations → {}",
                        printable(&w.dataset),
                        w.configurations,
                        w.folder.display()
                    );
                }
            })
        }
        Command::Build { site, force } => {
            commands::site::build(&default_paths(site.raw), &site.out, &site.base_url, force)
                .map(|built| print!("{built}"))
        }
        Command::Check(a) => commands::site::check(&default_paths(a.raw), &a.out, &a.base_url)
            .map(|files| println!("{} is up to date ({files} files)", a.out.display())),
        Command::Compare(args) => return compare(&args),
        Command::Import(args) => return import(args),
    };
    match result {
        Ok(()) => ExitCode::from(exit_codes::OK),
        Err(e) => {
            report(&e);
            ExitCode::from(e.exit_code())
        }
    }
}

/// Prints a failure on standard error, input problems under their own heading.
fn report(e: &CommandError) {
    match e {
        CommandError::Input(echomark::Error::Invalid(_)) => {
            eprintln!("echomark: invalid input:\n{e}")
        }
        CommandError::OutOfDate { differences, .. } => {
            for d in differences {
                eprintln!("{d}");
            }
            eprintln!("echomark: {e}");
        }
        _ => eprintln!("echomark: {e}"),
    }
}

/// `compare` has its own exit codes: CI gates on them (any usage or input error is 2).
fn compare(args: &echomark::cli::CompareArgs) -> ExitCode {
    match commands::compare::run(args) {
        Ok((comparison, text)) => {
            print!("{text}");
            let (code, line) = commands::compare::outcome(&comparison, args.fail_on.is_some());
            if let Some(line) = line {
                eprintln!("{line}");
            }
            ExitCode::from(code)
        }
        Err(e) => {
            eprintln!("echomark compare: {e}");
            ExitCode::from(exit_codes::USAGE)
        }
    }
}

/// `import`: 0 with the archive written, 1 for an input file that is not the tool's, 2 for
/// a request that cannot be carried out.
fn import(args: ImportArgs) -> ExitCode {
    use echomark::import::{import, ImportError, ImportRequest};
    let request = ImportRequest {
        tool: args.tool,
        files: args.files,
        out: args.out,
        host: args.host,
        commands: args.commands,
        tool_version: args.tool_version,
        payload_bytes: args.payload,
    };
    match import(&request) {
        Ok(path) => {
            println!(
                "{}: {} runs of {} imported",
                printable(&path.display().to_string()),
                request.files.len(),
                request.tool
            );
            ExitCode::from(exit_codes::OK)
        }
        Err(e) => {
            eprintln!("echomark import: {e}");
            ExitCode::from(match e {
                ImportError::Usage(_) => exit_codes::USAGE,
                ImportError::Input(_) | ImportError::Write { .. } => exit_codes::FAILED,
            })
        }
    }
}
