//! The `echomark` binary: argument parsing and dispatch; the work is in the library.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use echomark::{aggregate, output, rank, read, summary, validate, Error};

/// Validate echo-benchmark archives and turn them into ranked summaries.
#[derive(Debug, Parser)]
#[command(name = "echomark", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check archives (files or folders; default raw-results/) and count what passed.
    Validate {
        paths: Vec<PathBuf>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write DIR/<dataset>/summary.json and summary.csv (every configuration, unrounded).
    Summary {
        paths: Vec<PathBuf>,
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
}

fn default_paths(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    if paths.is_empty() {
        vec![PathBuf::from("raw-results")]
    } else {
        paths
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Validate { paths, json } => run_validate(&default_paths(paths), json),
        Command::Summary { paths, out } => run_summary(&default_paths(paths), &out),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            match e.downcast_ref::<Error>() {
                Some(Error::Invalid(_)) => eprintln!("echomark: invalid input:\n{e}"),
                _ => eprintln!("echomark: {e:#}"),
            }
            ExitCode::FAILURE
        }
    }
}

fn run_validate(paths: &[PathBuf], json: bool) -> anyhow::Result<()> {
    let datasets = read::load(paths)?;
    let reports: Vec<_> = datasets.iter().map(validate::report).collect();
    if json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
        return Ok(());
    }
    for r in &reports {
        println!(
            "{}: {} files; runs {} passed of {}; configurations {} valid of {}",
            r.dataset, r.files, r.runs_passed, r.runs, r.configurations_valid, r.configurations
        );
        for f in &r.failed_configurations {
            let k = &f.key;
            println!(
                "  failed: {} {} {} {} B, {} clients × window {}, {} {}, work {} ({} of {} runs passed)",
                k.backend, k.implementation, k.protocol, k.payload_bytes, k.clients, k.window,
                k.io_model, k.io_threads, k.handler_work, f.runs_passed, f.runs
            );
            for run in &f.failures {
                println!(
                    "    {} results[{}] repetition {}: {}",
                    run.file,
                    run.index,
                    run.repetition,
                    run.reasons.join("; ")
                );
            }
        }
        for w in r.warnings.iter().take(echomark::error::PROBLEM_CAP) {
            println!("  warning: {w}");
        }
    }
    Ok(())
}

fn run_summary(paths: &[PathBuf], out: &std::path::Path) -> anyhow::Result<()> {
    let datasets = read::load(paths)?;
    let configurations =
        aggregate::configurations(&datasets).context("aggregating the run table")?;
    let rankings = rank::rankings(&configurations);
    for d in &datasets {
        let report = validate::report(d);
        let repetitions = d.files.first().map_or(0, |f| f.repetitions);
        let rows: Vec<_> = configurations
            .iter()
            .filter(|c| c.dataset == d.name)
            .map(|c| summary::row(c, repetitions))
            .collect();
        let csv = summary::csv(&rows);
        let count = rows.len();
        let doc = summary::SummaryDocument {
            dataset: d.name.clone(),
            source_sha256: d.files.first().and_then(|f| f.source_sha256.clone()),
            host: serde_json::to_value(d.files.first().map(|f| &f.host))?,
            runs: report.runs,
            runs_passed: report.runs_passed,
            configurations: report.configurations,
            configurations_valid: report.configurations_valid,
            profiles: rows,
            rankings: rankings
                .iter()
                .filter(|r| r.group.dataset == d.name)
                .cloned()
                .collect(),
            failed_configurations: report.failed_configurations,
        };
        let dir = out.join(output::safe_name(&d.name));
        let mut json = serde_json::to_vec_pretty(&doc)?;
        json.push(b'\n');
        output::write_atomically(&dir.join("summary.json"), &json)
            .with_context(|| format!("writing {}", dir.join("summary.json").display()))?;
        output::write_atomically(&dir.join("summary.csv"), csv.as_bytes())
            .with_context(|| format!("writing {}", dir.join("summary.csv").display()))?;
        println!("{}: {count} configurations → {}", d.name, dir.display());
    }
    Ok(())
}
