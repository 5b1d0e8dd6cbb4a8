//! The `echomark` binary: argument parsing, dispatch and exit codes; the work is in the
//! library.

mod exit_codes;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use echomark::analysis::Analysis;
use echomark::error::printable;
use echomark::model::Dataset;
use echomark::{output, read, site, summary, Error};

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
struct ImportArgs {
    /// The tool that wrote the files.
    #[arg(long = "from", value_name = "TOOL", value_parser = parse_tool)]
    tool: echomark_archive::Tool,
    /// The tool's output files, one run each.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// The dataset folder to write TOOL.json into (created when missing; an archive there
    /// is never replaced).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// `echomark-runner describe-host` output for the machine the tool ran on; without it
    /// the pages say the host was not recorded.
    #[arg(long, value_name = "FILE")]
    host: Option<PathBuf>,
    /// The command that produced the files (once for all, or once per file in order);
    /// needed where the output does not say its load (oha, autocannon, Locust).
    #[arg(long = "command", value_name = "CMD")]
    commands: Vec<String>,
    /// The tool's version, where its output does not say it (all but iperf3).
    #[arg(long, value_name = "VERSION")]
    tool_version: Option<String>,
    /// The request body's length in bytes, where the output does not say it.
    #[arg(long, value_name = "BYTES")]
    payload: Option<u64>,
}

fn parse_tool(name: &str) -> Result<echomark_archive::Tool, String> {
    echomark_archive::Tool::named(name).ok_or_else(|| {
        let known: Vec<&str> = echomark_archive::Tool::ALL
            .iter()
            .map(|t| t.as_str())
            .collect();
        format!(
            "{name:?} is not a tool echomark imports ({})",
            known.join(", ")
        )
    })
}

/// The flags of `compare`.
#[derive(Debug, clap::Args)]
struct CompareArgs {
    /// The dataset folder or archive to compare against.
    base: PathBuf,
    /// The dataset folder or archive to judge.
    new: PathBuf,
    /// Print the comparison as JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Also write the report as Markdown (for a pull-request comment or job summary).
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Exit 1 when the comparison finds this.
    #[arg(long, value_name = "WHAT")]
    fail_on: Option<FailOn>,
    /// The equivalence margin for throughput, in percent: a change whose interval lies
    /// within it is "equivalent".
    #[arg(
        long,
        visible_alias = "min-effect",
        value_name = "PERCENT",
        default_value_t = 5.0
    )]
    margin: f64,
    /// The equivalence margin for latency percentiles, in percent.
    #[arg(long, value_name = "PERCENT", default_value_t = 10.0)]
    latency_margin: f64,
    /// Two datasets of one build (an A/A pair): changes smaller than theirs do not count.
    #[arg(long, num_args = 2, value_names = ["A1", "A2"])]
    noise: Vec<PathBuf>,
}

/// What `compare --fail-on` fails on.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum FailOn {
    Regression,
}

/// The flags of `build` and `check`.
#[derive(Debug, clap::Args)]
struct SiteArgs {
    /// Archives to read (files or folders); repeatable.
    #[arg(long = "raw", value_name = "PATH")]
    raw: Vec<PathBuf>,
    #[arg(long, value_name = "DIR", default_value = "site")]
    out: PathBuf,
    /// Absolute URL the site is published at (for hreflang links).
    #[arg(long, value_name = "URL", default_value = echomark::site::DEFAULT_BASE_URL)]
    base_url: String,
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
        Command::Build { site, force } => {
            run_build(&default_paths(site.raw), &site.out, &site.base_url, force)
        }
        Command::Check(a) => run_check(&default_paths(a.raw), &a.out, &a.base_url),
        Command::Compare(args) => return run_compare(&args),
        Command::Import(args) => return run_import(args),
    };
    match result {
        Ok(()) => ExitCode::from(exit_codes::OK),
        Err(e) => {
            match e.downcast_ref::<Error>() {
                Some(Error::Invalid(_)) => eprintln!("echomark: invalid input:\n{e}"),
                _ => eprintln!("echomark: {e:#}"),
            }
            let refused = e
                .downcast_ref::<site::WriteError>()
                .is_some_and(site::WriteError::is_refusal);
            ExitCode::from(if refused {
                exit_codes::USAGE
            } else {
                exit_codes::FAILED
            })
        }
    }
}

/// Reads, validates and analyses the datasets under `paths`, once for every output.
fn analyse(paths: &[PathBuf]) -> anyhow::Result<(Vec<Dataset>, Analysis)> {
    let datasets = read::load(paths)?;
    let analysis = Analysis::of(&datasets).context("aggregating the run table")?;
    Ok((datasets, analysis))
}

/// `import`: 0 with the archive written, 1 for an input file that is not the tool's, 2 for
/// a request that cannot be carried out.
fn run_import(args: ImportArgs) -> ExitCode {
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

/// `compare` has its own exit codes: CI gates on them. Sides that share no configuration
/// fail a gate (`--fail-on`) with their own code, and are warned of without one.
fn run_compare(args: &CompareArgs) -> ExitCode {
    match compare(args) {
        Ok(c) if c.configurations.is_empty() => {
            let gate = args.fail_on.is_some();
            eprintln!(
                "echomark compare: {}{} and {} share no configuration: nothing was compared \
                 ({} configurations only in base, {} only in new); compare datasets of the \
                 same matrix{}",
                if gate { "" } else { "warning: " },
                printable(&c.base.dataset),
                printable(&c.new.dataset),
                c.only_in_base.len(),
                c.only_in_new.len(),
                if gate {
                    ", or point the gate at the right folders"
                } else {
                    ""
                }
            );
            ExitCode::from(if gate {
                exit_codes::NOTHING_COMPARED
            } else {
                exit_codes::OK
            })
        }
        Ok(c) if c.has_regression() && args.fail_on.is_some() => {
            ExitCode::from(exit_codes::REGRESSION)
        }
        Ok(_) => ExitCode::from(exit_codes::OK),
        Err(e) => {
            eprintln!("echomark compare: {e:#}");
            ExitCode::from(exit_codes::USAGE)
        }
    }
}

/// Runs the comparison and reports it.
fn compare(args: &CompareArgs) -> anyhow::Result<echomark::analysis::compare::Comparison> {
    use echomark::analysis::compare::{self, side};
    for (flag, value) in [
        ("--margin", args.margin),
        ("--latency-margin", args.latency_margin),
    ] {
        if !(value.is_finite() && value > 0.0 && value < 100.0) {
            anyhow::bail!("{flag} must be a percentage above 0 and below 100, not {value}");
        }
    }
    if let Some(path) = &args.markdown {
        // Before anything is read: a report must never replace what it reports on.
        check_report_target(path, &compare_inputs(args))?;
    }
    let load = |path: &PathBuf| -> anyhow::Result<echomark::model::Dataset> {
        side::load_dataset(path)
            .with_context(|| format!("reading {}", printable(&path.display().to_string())))
    };
    fn sides(d: &echomark::model::Dataset) -> anyhow::Result<side::Side<'_>> {
        side::Side::of(d)
            .with_context(|| format!("reading the histograms of {}", printable(&d.name)))
    }
    let (base_data, new_data) = (load(&args.base)?, load(&args.new)?);
    let (base, new) = (sides(&base_data)?, sides(&new_data)?);
    let noise = match args.noise.as_slice() {
        [a1, a2] => {
            let (one, two) = (load(a1)?, load(a2)?);
            let band = compare::NoiseBand::of(&sides(&one)?, &sides(&two)?);
            if band.is_empty() {
                anyhow::bail!(
                    "--noise {} {}: the two datasets share no configuration, so they show no noise band",
                    printable(&a1.display().to_string()),
                    printable(&a2.display().to_string())
                );
            }
            Some(band)
        }
        _ => None,
    };
    let defaults = echomark::analysis::decision::Rules::default();
    let options = compare::Options {
        rules: echomark::analysis::decision::Rules {
            throughput: echomark_decide::Rule {
                margin: args.margin / 100.0,
                ..defaults.throughput
            },
            latency: echomark_decide::Rule {
                margin: args.latency_margin / 100.0,
                ..defaults.latency
            },
        },
        noise,
    };
    let comparison = compare::Comparison::of(&base, &new, &options);
    if let Some(path) = &args.markdown {
        write_report(
            path,
            &compare_inputs(args),
            &echomark::site::comparison::render(&comparison),
        )?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&comparison)?);
    } else {
        print!("{}", compare::text::render(&comparison));
    }
    Ok(comparison)
}

/// Every path `compare` reads.
fn compare_inputs(args: &CompareArgs) -> Vec<PathBuf> {
    let mut inputs = vec![args.base.clone(), args.new.clone()];
    inputs.extend(args.noise.iter().cloned());
    inputs
}

/// Refuses a report path that is, holds or lies inside an input, that is a symlink or not a
/// file, or whose folder does not exist.
fn check_report_target(path: &std::path::Path, inputs: &[PathBuf]) -> anyhow::Result<()> {
    let shown = printable(&path.display().to_string());
    if let Some(input) = output::overlapping_input(path, inputs) {
        anyhow::bail!(
            "refusing to write {shown}: it would overwrite the input {}",
            printable(&input.display().to_string())
        );
    }
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.is_file() {
            anyhow::bail!("refusing to write {shown}: it exists and is not a plain file");
        }
    }
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(folder) = folder.filter(|f| !f.is_dir()) {
        anyhow::bail!(
            "cannot write {shown}: no folder {}",
            printable(&folder.display().to_string())
        );
    }
    Ok(())
}

/// Writes a report atomically after [`check_report_target`], saying when it replaces a file.
fn write_report(path: &std::path::Path, inputs: &[PathBuf], text: &str) -> anyhow::Result<()> {
    check_report_target(path, inputs)?;
    if path.exists() {
        eprintln!(
            "echomark: replacing {}",
            printable(&path.display().to_string())
        );
    }
    output::write_atomically(path, text.as_bytes())
        .with_context(|| format!("writing {}", printable(&path.display().to_string())))
}

fn run_validate(paths: &[PathBuf], json: bool) -> anyhow::Result<()> {
    let (_, analysis) = analyse(paths)?;
    let reports: Vec<_> = analysis.datasets.iter().map(|d| &d.report).collect();
    if json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
        return Ok(());
    }
    let p = |text: &str| printable(text);
    for r in &reports {
        println!(
            "{}: {} files; runs {} passed of {}; configurations {} valid of {}",
            p(&r.dataset),
            r.files,
            r.runs_passed,
            r.runs,
            r.configurations_valid,
            r.configurations
        );
        for f in &r.failed_configurations {
            let k = &f.key;
            println!(
                "  failed: {} {} {} {} B, {} client{} × window {}, {} {}, work {} ({} of {} runs passed)",
                p(k.backend.as_str()), p(&k.implementation), k.protocol, k.payload_bytes, k.clients,
                if k.clients == 1 { "" } else { "s" }, k.window,
                k.io_model, k.io_threads, k.handler_work, f.runs_passed, f.runs
            );
            if let Some(buffer) = k.udp_server_recv_buffer {
                println!("    server receive buffer request: {buffer} bytes");
            }
            for run in &f.failures {
                println!(
                    "    {} results[{}] repetition {}: {}",
                    p(&run.file),
                    run.index,
                    run.repetition,
                    p(&run.reasons.join("; "))
                );
            }
        }
        for w in r.warnings.iter().take(echomark::error::PROBLEM_CAP) {
            println!("  warning: {w}");
        }
    }
    Ok(())
}

/// Summarises one dataset at a time (a dataset's summary depends on that dataset alone), so
/// memory holds one dataset's runs however many there are. The summaries are staged inside
/// `out` and moved into place only when every dataset was valid: bad input writes nothing.
fn run_summary(paths: &[PathBuf], out: &std::path::Path) -> anyhow::Result<()> {
    // The summaries would become input of the next run (and fail it).
    site::write::check_target(out, paths)?;
    let layout = read::discover(paths)?;
    let created = !out.exists();
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".echomark-summary-")
        .tempdir_in(out)
        .with_context(|| format!("staging in {}", out.display()))?;
    let mut problems = Vec::new();
    let mut staged = Vec::new();
    for (name, files) in &layout {
        let d = match read::load_one(name, files) {
            Ok(d) => d,
            Err(Error::Invalid(found)) => {
                problems.extend(found);
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let analysis =
            Analysis::of(std::slice::from_ref(&d)).context("aggregating the run table")?;
        let doc = summary::SummaryDocument::of(&d, &analysis, &analysis.datasets[0]);
        let slug = output::dataset_folder(&d.name);
        let dir = staging.path().join(&slug);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("summary.json"), doc.json())?;
        std::fs::write(dir.join("summary.csv"), doc.csv())?;
        staged.push((d.name.clone(), slug, doc.profiles.len()));
    }
    if !problems.is_empty() {
        drop(staging);
        if created {
            // Only the folder this call made, and only while it is empty.
            let _ = std::fs::remove_dir(out);
        }
        return Err(Error::Invalid(problems).into());
    }
    for (name, slug, configurations) in staged {
        let dir = out.join(&slug);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        for file in ["summary.json", "summary.csv"] {
            std::fs::rename(staging.path().join(&slug).join(file), dir.join(file))
                .with_context(|| format!("writing {}", dir.join(file).display()))?;
        }
        println!(
            "{}: {configurations} configurations → {}",
            printable(&name),
            dir.display()
        );
    }
    Ok(())
}

/// The datasets under `paths`, validated, analysed and with their history: what a site is
/// rendered from.
fn site_data(paths: &[PathBuf]) -> anyhow::Result<(Vec<Dataset>, Analysis)> {
    let (datasets, analysis) = analyse(paths)?;
    let analysis = analysis.with_history(&datasets)?;
    Ok((datasets, analysis))
}

fn run_build(
    paths: &[PathBuf],
    out: &std::path::Path,
    base_url: &str,
    force: bool,
) -> anyhow::Result<()> {
    let options = site::WriteOptions {
        force,
        inputs: paths.to_vec(),
    };
    // Refuse a bad --out before reading anything.
    site::write::check_target(out, &options.inputs)?;
    let (datasets, analysis) = site_data(paths)?;
    let written = site::write(out, &options, |sink| {
        site::render_into(&datasets, &analysis, base_url, sink)
    })?;
    println!("{}: {written} files", out.display());
    let (total, largest) = site_sizes(out);
    let pages: Vec<String> = largest
        .iter()
        .map(|(bytes, page)| format!("{page} {}", kib(*bytes)))
        .collect();
    println!(
        "{}: {} in all; largest pages: {}",
        out.display(),
        kib(total),
        pages.join(", ")
    );
    if let Ok(data) = std::fs::read(out.join("data/explore.js")) {
        println!(
            "{}: the explorer's data, data/explore.js, {} ({} gzipped)",
            out.display(),
            kib(data.len() as u64),
            kib(site::gzip(&data).len() as u64)
        );
    }
    Ok(())
}

/// "1,234 KiB".
fn kib(bytes: u64) -> String {
    format!("{} KiB", echomark::format::count(bytes.div_ceil(1024)))
}

/// The bytes of every file under `dir`, and its five largest HTML pages (relative paths),
/// largest first: what the build says of the site's weight.
fn site_sizes(dir: &std::path::Path) -> (u64, Vec<(u64, String)>) {
    let (mut total, mut pages) = (0u64, Vec::new());
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            let Ok(meta) = e.metadata() else { continue };
            if meta.is_dir() {
                stack.push(path);
                continue;
            }
            total += meta.len();
            if path.extension().is_some_and(|x| x == "html") {
                let rel = path.strip_prefix(dir).unwrap_or(&path);
                pages.push((meta.len(), rel.display().to_string()));
            }
        }
    }
    pages.sort_by(|a, b| b.cmp(a));
    pages.truncate(5);
    (total, pages)
}

fn run_check(paths: &[PathBuf], out: &std::path::Path, base_url: &str) -> anyhow::Result<()> {
    let (datasets, analysis) = site_data(paths)?;
    let reading = || format!("reading {}", out.display());
    let mut check = site::write::Differences::with(out).with_context(reading)?;
    let rendered = site::render_into(&datasets, &analysis, base_url, &mut check)?;
    let diffs = check.finish();
    if diffs.is_empty() {
        println!("{} is up to date ({rendered} files)", out.display());
        return Ok(());
    }
    for d in diffs.iter().take(50) {
        eprintln!("{d}");
    }
    anyhow::bail!(
        "{} differs from what the archives produce in {} files; run `echomark build`",
        out.display(),
        diffs.len()
    )
}
