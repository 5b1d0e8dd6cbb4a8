//! The `echomark` command line: its subcommands and flags (clap). The binary parses them
//! and hands them to [`crate::commands`]; nothing here reads or writes.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Validate echo-benchmark archives and turn them into ranked summaries.
#[derive(Debug, Parser)]
#[command(name = "echomark", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check archives (files or folders; default raw-results/) and count what passed.
    Validate {
        paths: Vec<PathBuf>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write DIR/DATASET/summary.json and summary.csv (every configuration, unrounded).
    Summary {
        paths: Vec<PathBuf>,
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Render the bilingual site (default raw-results/ → site/); the old site stays until the
    /// new one is complete.
    Build {
        #[command(flatten)]
        site: SiteArgs,
        /// Replace --out even when an echomark build did not write everything in it.
        #[arg(long)]
        force: bool,
    },
    /// Fail when DIR differs from what the archives produce.
    Check(SiteArgs),
    /// Did NEW get faster or slower than BASE? A verdict per configuration and metric that
    /// the repetitions and histograms support (exit 1 on a regression with --fail-on
    /// regression, 2 on bad input).
    Compare(CompareArgs),
    /// Read another load generator's output files (oha, autocannon, wrk, Locust, iperf3)
    /// into OUT/TOOL.json, an archive the site, compare and history read beside echomark's.
    Import(ImportArgs),
}

/// The flags of `import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The tool that wrote the files.
    #[arg(long = "from", value_name = "TOOL", value_parser = parse_tool)]
    pub tool: echomark_archive::Tool,
    /// The tool's output files, one run each.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The dataset folder to write TOOL.json into (created when missing; an archive there
    /// is never replaced).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// `echomark-runner describe-host` output for the machine the tool ran on; without it
    /// the pages say the host was not recorded.
    #[arg(long, value_name = "FILE")]
    pub host: Option<PathBuf>,
    /// The command that produced the files (once for all, or once per file in order);
    /// needed where the output does not say its load (oha, autocannon, Locust).
    #[arg(long = "command", value_name = "CMD")]
    pub commands: Vec<String>,
    /// The tool's version, where its output does not say it (all but iperf3).
    #[arg(long, value_name = "VERSION")]
    pub tool_version: Option<String>,
    /// The request body's length in bytes, where the output does not say it.
    #[arg(long, value_name = "BYTES")]
    pub payload: Option<u64>,
}

pub fn parse_tool(name: &str) -> Result<echomark_archive::Tool, UnknownTool> {
    echomark_archive::Tool::named(name).ok_or_else(|| UnknownTool {
        name: name.to_string(),
    })
}

/// A `--from` that names no tool echomark imports.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name:?} is not a tool echomark imports ({known})", known = known_tools())]
pub struct UnknownTool {
    pub name: String,
}

fn known_tools() -> String {
    let known: Vec<&str> = echomark_archive::Tool::ALL
        .iter()
        .map(|t| t.as_str())
        .collect();
    known.join(", ")
}

/// The flags of `compare`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The dataset folder or archive to compare against.
    pub base: PathBuf,
    /// The dataset folder or archive to judge.
    pub new: PathBuf,
    /// Print the comparison as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also write the report as Markdown (for a pull-request comment or job summary).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Exit 1 when the comparison finds this.
    #[arg(long, value_name = "WHAT")]
    pub fail_on: Option<FailOn>,
    /// The equivalence margin for throughput, in percent: a change whose interval lies
    /// within it is "equivalent".
    #[arg(
        long,
        visible_alias = "min-effect",
        value_name = "PERCENT",
        default_value_t = 5.0
    )]
    pub margin: f64,
    /// The equivalence margin for latency percentiles, in percent.
    #[arg(long, value_name = "PERCENT", default_value_t = 10.0)]
    pub latency_margin: f64,
    /// Two datasets of one build (an A/A pair): changes smaller than theirs do not count.
    #[arg(long, num_args = 2, value_names = ["A1", "A2"])]
    pub noise: Vec<PathBuf>,
}

/// What `compare --fail-on` fails on.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum FailOn {
    Regression,
}

/// The flags of `build` and `check`.
#[derive(Debug, clap::Args)]
pub struct SiteArgs {
    /// Archives to read (files or folders); repeatable.
    #[arg(long = "raw", value_name = "PATH")]
    pub raw: Vec<PathBuf>,
    #[arg(long, value_name = "DIR", default_value = "site")]
    pub out: PathBuf,
    /// Absolute URL the site is published at (for hreflang links).
    #[arg(long, value_name = "URL", default_value = crate::site::DEFAULT_BASE_URL)]
    pub base_url: String,
}

/// The archives to read: those given, else `raw-results/`.
pub fn default_paths(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    if paths.is_empty() {
        vec![PathBuf::from("raw-results")]
    } else {
        paths
    }
}
