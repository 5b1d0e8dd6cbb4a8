//! `echomark import`: other load generators' output files read strictly into one imported
//! archive ([`echomark_archive::ImportedArchive`]) per tool.
//!
//! One reader per tool ([`oha`], [`autocannon`], [`wrk`], [`locust`], [`iperf3`]) turns one
//! output file into one [`ImportedRun`]; anything that is not that tool's format, a field of
//! another version, a missing percentile or a negative or non-finite value is an error that
//! names the file and the JSON path (or the line), and nothing is written. A run the tool
//! itself marks as failed (errors, answers outside 2xx) is kept, marked failed.
//!
//! What an output does not say (oha names neither its connections nor its rate) comes from
//! the command that produced it ([`crate::command_line`]), given with `--command`.

pub mod autocannon;
pub mod iperf3;
pub mod locust;
pub mod oha;
mod out_folder;
pub mod wrk;

use std::path::{Path, PathBuf};

use echomark_archive::{
    Host, ImportInfo, ImportedArchive, ImportedLatency, ImportedLoad, ImportedRun, Percentile,
    Tool, IMPORT_FORMAT_VERSION,
};

use crate::command_line::Words;
use crate::error::{printable, Problem};
use crate::read::bounded;

/// What `echomark import` was asked to do.
#[derive(Debug, Clone)]
pub struct ImportRequest {
    pub tool: Tool,
    /// The tool's output files, one run each.
    pub files: Vec<PathBuf>,
    /// The dataset folder the archive goes into (created when missing).
    pub out: PathBuf,
    /// `echomark-runner describe-host` output for the machine the tool ran on.
    pub host: Option<PathBuf>,
    /// The command lines that produced the files: one for every file, or one per file.
    pub commands: Vec<String>,
    /// The tool's version, where its output does not say it.
    pub tool_version: Option<String>,
    /// The request body's length, where the output does not say it.
    pub payload_bytes: Option<u64>,
}

/// Why an import wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The request cannot be carried out as asked (exit 2).
    #[error(transparent)]
    Usage(UsageError),
    /// An input file could not be read, or was not what the tool writes (exit 1).
    #[error("{0}")]
    Input(Problem),
    /// The archive could not be written.
    #[error("{path}: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// Why an import request cannot be carried out as asked; paths are shown with their control
/// characters escaped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UsageError {
    #[error("no files to import")]
    NoFiles,
    /// Neither one `--command` for every file nor one per file.
    #[error(
        "{commands} --command for {files} files: give one for all of them or one per file, in \
         order"
    )]
    CommandCount { commands: usize, files: usize },
    /// The archive to write is there already.
    #[error(
        "{} already exists; import into another --out folder (an archive is never replaced)",
        shown(.archive)
    )]
    ArchiveExists { archive: PathBuf },
    /// `--tool-version` names another version than the files do.
    #[error("--tool-version {given:?}, but the files say {found:?}")]
    ToolVersion { given: String, found: String },
    /// The files name more than one version of the tool (in order).
    #[error(
        "the files were written by different versions of {tool} ({}): import each version \
         into its own dataset",
        .versions.join(", ")
    )]
    MixedVersions { tool: Tool, versions: Vec<String> },
    /// A `--command` cannot be split into words.
    #[error("--command {}: {error}", printable(.command))]
    Command {
        command: String,
        error: crate::command_line::CommandLineError,
    },
    /// `--out`, or the part of it that exists (`file`), is a file.
    #[error(
        "--out {}: {}, not a folder; give the dataset folder to write the archive into (made \
         when missing); nothing was written",
        shown(.out),
        blocking(.out, .file)
    )]
    OutIsAFile { out: PathBuf, file: PathBuf },
    /// `--out` holds `file`, JSON that is not an archive.
    #[error(
        "--out {given} holds {}, which is not an archive (a tool's output?): validate and \
         build read every *.json in a dataset folder as an archive, so the dataset would no \
         longer validate. Keep the tool's outputs in a folder of their own (such as \
         {given}/outputs/) and import them from there; nothing was written",
        shown(.file),
        given = shown(.out)
    )]
    OutHoldsOtherJson { out: PathBuf, file: PathBuf },
}

/// `path` as the user sees it, control characters escaped.
fn shown(path: &Path) -> String {
    printable(&path.display().to_string())
}

/// What makes `--out` (`out`) unusable: it, or the part of it that exists (`file`), is a file.
fn blocking(out: &Path, file: &Path) -> String {
    if file == out {
        "it is a file".to_string()
    } else {
        format!("{} is a file", shown(file))
    }
}

impl From<UsageError> for ImportError {
    fn from(u: UsageError) -> Self {
        ImportError::Usage(u)
    }
}

impl From<Problem> for ImportError {
    fn from(p: Problem) -> Self {
        ImportError::Input(p)
    }
}

/// What one reader gives back for one file: the run, and the tool's version where the file
/// names it.
pub struct Read {
    pub run: ImportedRun,
    pub version: Option<String>,
}

/// What a reader knows besides the file's bytes.
pub struct Source<'a> {
    /// The file as the user named it, for errors.
    pub file: &'a str,
    pub bytes: &'a [u8],
    /// The command line that produced it, split into words.
    pub command: Option<Words>,
    pub payload_bytes: Option<u64>,
}

impl Source<'_> {
    /// A problem at `json_path` of this file.
    pub fn problem(&self, json_path: impl Into<String>, message: impl Into<String>) -> Problem {
        Problem::new(self.file, json_path, message)
    }

    /// The file's text, which must be UTF-8.
    pub fn text(&self) -> Result<&str, Problem> {
        std::str::from_utf8(self.bytes).map_err(|e| self.problem("", format!("not text: {e}")))
    }

    /// The file parsed as `tool`'s JSON output; any mismatch names the JSON path and says
    /// whose format was expected.
    pub fn json<T: serde::de::DeserializeOwned>(&self, tool: Tool) -> Result<T, Problem> {
        crate::read::parse::typed(self.file, self.bytes).map_err(|p| Problem {
            message: format!(
                "not {tool}'s JSON output as echomark reads it: {}",
                p.message
            ),
            ..p
        })
    }

    /// The command line, which this tool's output needs because it does not say `what`.
    pub fn command_for(&self, tool: Tool, what: &str) -> Result<&Words, Problem> {
        self.command.as_ref().ok_or_else(|| {
            self.problem(
                "",
                format!(
                    "{tool}'s output does not say {what}: give the command that produced it \
                     with --command"
                ),
            )
        })
    }
}

/// Reads every file, then writes `OUT/TOOL.json` atomically; returns its path. Nothing is
/// written when any file fails, and an existing archive is never replaced.
pub fn import(request: &ImportRequest) -> Result<PathBuf, ImportError> {
    if request.files.is_empty() {
        return Err(UsageError::NoFiles.into());
    }
    if request.commands.len() > 1 && request.commands.len() != request.files.len() {
        return Err(UsageError::CommandCount {
            commands: request.commands.len(),
            files: request.files.len(),
        }
        .into());
    }
    let target = request.out.join(format!("{}.json", request.tool));
    if target.exists() {
        return Err(UsageError::ArchiveExists { archive: target }.into());
    }
    out_folder::check(&request.out)?;
    let host = request.host.as_deref().map(read_host).transpose()?;
    let mut runs = Vec::new();
    let mut versions = std::collections::BTreeSet::new();
    for (i, path) in request.files.iter().enumerate() {
        let command = match request.commands.as_slice() {
            [] => None,
            [one] => Some(one.as_str()),
            many => Some(many[i].as_str()),
        };
        let read = read_file(request.tool, path, command, request.payload_bytes)?;
        versions.extend(read.version);
        runs.push(read.run);
    }
    let tool_version = match (versions.len(), &request.tool_version) {
        (0, given) => given.clone(),
        (1, given) => {
            let found = versions.into_iter().next();
            if let (Some(given), Some(found)) = (given, &found) {
                if given != found {
                    return Err(UsageError::ToolVersion {
                        given: given.clone(),
                        found: found.clone(),
                    }
                    .into());
                }
            }
            found
        }
        _ => {
            return Err(UsageError::MixedVersions {
                tool: request.tool,
                versions: versions.into_iter().collect(),
            }
            .into())
        }
    };
    let archive = ImportedArchive {
        echomark_import: ImportInfo {
            format_version: IMPORT_FORMAT_VERSION,
            importer: format!("echomark {}", env!("CARGO_PKG_VERSION")),
        },
        tool: request.tool,
        tool_version,
        host,
        runs,
    };
    let mut json = serde_json::to_vec_pretty(&archive).expect("plain data");
    json.push(b'\n');
    let write_error = |source| ImportError::Write {
        path: printable(&target.display().to_string()),
        source,
    };
    std::fs::create_dir_all(&request.out).map_err(|source| ImportError::Write {
        path: printable(&request.out.display().to_string()),
        source,
    })?;
    crate::output::write_new_atomically(&target, &json).map_err(write_error)?;
    Ok(target)
}

fn read_host(path: &Path) -> Result<Host, ImportError> {
    let file = printable(&path.display().to_string());
    let bytes = bounded::read_at_most(path, bounded::MAX_INPUT_BYTES)
        .map_err(|e| Problem::new(&file, "", format!("the host description: {e}")))?;
    Ok(crate::read::parse::typed::<Host>(&file, &bytes)?)
}

/// Reads one output file of `tool`.
pub fn read_file(
    tool: Tool,
    path: &Path,
    command: Option<&str>,
    payload_bytes: Option<u64>,
) -> Result<Read, ImportError> {
    let file = printable(&path.display().to_string());
    // Bounded: the file is held whole while it is parsed, so its size is its memory.
    let bytes = bounded::read_at_most(path, bounded::MAX_INPUT_BYTES)
        .map_err(|e| Problem::new(&file, "", e.to_string()))?;
    let source = Source {
        file: &file,
        bytes: &bytes,
        command: command
            .map(Words::split)
            .transpose()
            .map_err(|error| UsageError::Command {
                command: command.unwrap_or("").to_string(),
                error,
            })?,
        payload_bytes,
    };
    let mut read = match tool {
        Tool::Oha => oha::read(&source)?,
        Tool::Autocannon => autocannon::read(&source)?,
        Tool::Wrk => wrk::read(&source)?,
        Tool::Locust => locust::read(&source)?,
        Tool::Iperf3 => iperf3::read(&source)?,
    };
    read.run.source_file = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    read.run.source_sha256 = sha256_hex(&bytes);
    if read.run.command.is_none() {
        read.run.command = command.map(str::to_string);
    }
    check_run(tool, &source, &read.run)?;
    Ok(read)
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    echomark_archive::files::hex(&sha2::Sha256::digest(bytes))
}

/// The checks every reader's run must pass: every figure one a real run can have and the
/// tool's own rate in agreement with its counts ([`ImportedRun::implausible`], which the
/// archive's reader checks too), every figure finite and not negative
/// ([`ImportedRun::figures`]), percentiles in order. A problem is named at the tool's own
/// JSON path where the reader knows it ([`json_path`]).
fn check_run(tool: Tool, source: &Source, run: &ImportedRun) -> Result<(), Problem> {
    if let Some((field, why)) = run.implausible(tool).into_iter().next() {
        return Err(match json_path(tool, &field) {
            Some(path) => source.problem(path, why.to_string()),
            None => source.problem("", format!("the run's {field}: {why}")),
        });
    }
    for (field, value) in run.figures() {
        finite_non_negative(source, &field, value)?;
    }
    if let Some(latency) = &run.latency {
        percentiles_rise(source, &latency.percentiles)?;
    }
    Ok(())
}

/// Where in `tool`'s output (or on its command line) the run's field `field` came from.
fn json_path(tool: Tool, field: &str) -> Option<&'static str> {
    let table = match tool {
        Tool::Oha => oha::JSON_PATHS,
        Tool::Autocannon => autocannon::JSON_PATHS,
        Tool::Locust => locust::JSON_PATHS,
        Tool::Iperf3 => iperf3::JSON_PATHS,
        // Its figures come from lines of text or its JSON line, whichever it printed.
        Tool::Wrk => &[],
    };
    table
        .iter()
        .find(|(f, _)| *f == field)
        .map(|(_, path)| *path)
}

/// Refuses percentiles that fall as they rise (`p99` below `p50`).
fn percentiles_rise(source: &Source, percentiles: &[Percentile]) -> Result<(), Problem> {
    for pair in percentiles.windows(2) {
        let (before, p) = (&pair[0], &pair[1]);
        if p.us < before.us {
            return Err(source.problem(
                "",
                format!(
                    "latency p{} ({} µs) is below p{} ({} µs): percentiles must not decrease",
                    p.at, p.us, before.at, before.us
                ),
            ));
        }
    }
    Ok(())
}

/// `value` at `json_path` of the file, refused outside `bound` (with the bound's words).
pub fn within(
    source: &Source,
    json_path: &str,
    value: f64,
    bound: &echomark_archive::Bound,
) -> Result<f64, Problem> {
    bound
        .check(value)
        .map_err(|e| source.problem(json_path, e.to_string()))
}

/// `value` of the field named `what`, refused when negative or not finite.
pub fn finite_non_negative(source: &Source, what: &str, value: f64) -> Result<f64, Problem> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(source.problem(
            "",
            format!("{what} is {value}: a measurement is finite and not negative"),
        ))
    }
}

/// Percentiles from `(name, value)` pairs such as `("p99.9", 0.0027)`, in increasing order,
/// each value scaled to microseconds by `to_us`; `json_path` names where they were.
pub fn percentiles(
    source: &Source,
    json_path: &str,
    pairs: impl IntoIterator<Item = (String, Option<f64>)>,
    to_us: f64,
) -> Result<Vec<Percentile>, Problem> {
    let mut out = Vec::new();
    for (name, value) in pairs {
        let at_text = name.trim_start_matches('p').replace('_', ".");
        let at: f64 = at_text.parse().map_err(|_| {
            source.problem(
                format!("{json_path}.{name}"),
                "not a percentile's name (p50, p99.9)",
            )
        })?;
        let Some(value) = value else {
            return Err(source.problem(
                format!("{json_path}.{name}"),
                "missing: the tool printed no value for this percentile",
            ));
        };
        if !(value.is_finite() && value >= 0.0 && (0.0..=100.0).contains(&at)) {
            return Err(source.problem(
                format!("{json_path}.{name}"),
                format!("{value}: a latency is finite and not negative"),
            ));
        }
        if let Err(e) = echomark_archive::limits::LATENCY_US.check(value * to_us) {
            return Err(source.problem(format!("{json_path}.{name}"), format!("{e} (in µs)")));
        }
        out.push(Percentile {
            at,
            us: value * to_us,
        });
    }
    out.sort_by(|a, b| a.at.total_cmp(&b.at));
    Ok(out)
}

/// `YYYY-MM-DDTHH:MM:SSZ` for seconds since the Unix epoch.
pub fn utc_from_unix(seconds: i64) -> String {
    let days = seconds.div_euclid(86_400);
    let rem = seconds.rem_euclid(86_400);
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// What a request tool's output says of one HTTP run, for [`request_run`].
pub struct RequestRun {
    pub started_at_utc: Option<String>,
    pub target: Option<String>,
    pub load: ImportedLoad,
    /// Requests answered, any status.
    pub responses: u64,
    pub reported_rate: Option<f64>,
    pub bytes_per_second: Option<f64>,
    pub latency: Option<ImportedLatency>,
    pub unfinished: Option<u64>,
    pub errors: std::collections::BTreeMap<String, u64>,
    pub status_codes: std::collections::BTreeMap<String, u64>,
}

/// A request tool's HTTP run: answers per second of its duration, failed when a request
/// ended in an error, an answer was outside 2xx or nothing was answered. The source file's
/// name, hash and command are filled in by [`read_file`].
pub fn request_run(r: RequestRun) -> ImportedRun {
    let mut run = ImportedRun {
        source_file: String::new(),
        source_sha256: String::new(),
        command: None,
        started_at_utc: r.started_at_utc,
        protocol: echomark_archive::Protocol::Http,
        target: r.target,
        responses_per_second: Some(r.responses as f64 / r.load.duration_seconds),
        load: r.load,
        responses: Some(r.responses),
        reported_rate: r.reported_rate,
        bytes_per_second: r.bytes_per_second,
        latency: r.latency,
        unfinished: r.unfinished,
        errors: r.errors,
        status_codes: r.status_codes,
        stream: None,
        failed: false,
        failure: Vec::new(),
    };
    run.failure = request_failures(&run);
    run.failed = !run.failure.is_empty();
    run
}

/// Open loop when the tool was given a rate, closed loop otherwise.
pub fn loop_of(rate: Option<f64>) -> echomark_archive::Loop {
    match rate {
        Some(_) => echomark_archive::Loop::Open,
        None => echomark_archive::Loop::Closed,
    }
}

/// The failure reasons of a request tool's run: errors and answers outside 2xx.
fn request_failures(run: &ImportedRun) -> Vec<String> {
    let mut out = Vec::new();
    for (kind, n) in &run.errors {
        out.push(format!("{n} requests ended in an error: {kind}"));
    }
    for (code, n) in &run.status_codes {
        if !code.starts_with('2') {
            out.push(format!("{n} answers with status {code}"));
        }
    }
    if run.responses == Some(0) && out.is_empty() {
        out.push("no request was answered".into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_errors_say_what_to_do() {
        let p = PathBuf::from;
        let said = |u: UsageError| ImportError::Usage(u).to_string();
        assert_eq!(said(UsageError::NoFiles), "no files to import");
        assert_eq!(
            said(UsageError::CommandCount {
                commands: 2,
                files: 3
            }),
            "2 --command for 3 files: give one for all of them or one per file, in order"
        );
        assert_eq!(
            said(UsageError::ArchiveExists {
                archive: p("out/oha.json")
            }),
            "out/oha.json already exists; import into another --out folder (an archive is \
             never replaced)"
        );
        assert_eq!(
            said(UsageError::ToolVersion {
                given: "1".into(),
                found: "2".into()
            }),
            "--tool-version \"1\", but the files say \"2\""
        );
        assert_eq!(
            said(UsageError::MixedVersions {
                tool: Tool::Oha,
                versions: vec!["1.0".into(), "1.1".into()]
            }),
            "the files were written by different versions of oha (1.0, 1.1): import each \
             version into its own dataset"
        );
        assert_eq!(
            said(UsageError::Command {
                command: "oha 'x\n".into(),
                error: crate::command_line::CommandLineError::UnclosedSingleQuote
            }),
            "--command oha 'x\\n: a single quote is not closed"
        );
        let out_is_a_file = |file: &str| {
            said(UsageError::OutIsAFile {
                out: p("f/d"),
                file: PathBuf::from(file),
            })
        };
        assert_eq!(
            out_is_a_file("f/d"),
            "--out f/d: it is a file, not a folder; give the dataset folder to write the \
             archive into (made when missing); nothing was written"
        );
        assert!(out_is_a_file("f").starts_with("--out f/d: f is a file, not a folder; "));
        assert_eq!(
            said(UsageError::OutHoldsOtherJson {
                out: p("d"),
                file: p("d/run.json")
            }),
            "--out d holds d/run.json, which is not an archive (a tool's output?): validate and \
             build read every *.json in a dataset folder as an archive, so the dataset would no \
             longer validate. Keep the tool's outputs in a folder of their own (such as \
             d/outputs/) and import them from there; nothing was written"
        );
    }

    #[test]
    fn unix_seconds_become_utc_dates() {
        assert_eq!(utc_from_unix(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_from_unix(1_796_445_476), "2026-12-05T04:37:56Z");
        assert_eq!(utc_from_unix(951_782_400), "2000-02-29T00:00:00Z");
    }
}
