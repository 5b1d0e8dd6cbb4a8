//! Reading: find the archives, parse each one (streaming, typed), normalise it into runs.
//!
//! A path may be a file or a folder. A folder that holds `*.json` files directly is one
//! dataset; a folder that holds only sub-folders (like `raw-results/`) holds one dataset per
//! sub-folder. A file on its own belongs to the dataset named after its folder.
//!
//! Each format has its reader: [`echomark`] parses with the contract's own types, [`arknet`]
//! with lenient shapes for arknet's two schemas. Both hand every entry to [`FileRead`], which
//! classifies it with the one rule ([`crate::validate::rules`]) and keeps the run.

pub mod arknet;
pub mod bounded;
pub mod counters;
pub mod echomark;
pub mod imported;
pub mod parse;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use echomark_archive::AddressFamily;

use crate::error::{printable, Error, Problem, Refusal};
use crate::measurement::Measurement;
pub use crate::model::EntryFacts;
use crate::model::{ArchiveFile, Dataset, Format, HostInfo, Run};
use crate::validate::{self, rules};

/// Dataset name → its archive files, sorted by path.
pub type Layout = BTreeMap<String, Vec<PathBuf>>;

fn json_files(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut files = Vec::new();
    let entries = fs::read_dir(dir).map_err(|e| Error::Io {
        path: dir.display().to_string(),
        source: e,
    })?;
    for entry in entries {
        let path = entry
            .map_err(|e| Error::Io {
                path: dir.display().to_string(),
                source: e,
            })?
            .path();
        if path.is_file() && is_archive_name(&path) {
            refuse_escaping_link(dir, &path)?;
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Refuses an archive that is a symlink to a file outside its dataset's folder: the site
/// would publish a copy of something the dataset does not hold.
fn refuse_escaping_link(dir: &Path, path: &Path) -> Result<(), Error> {
    let is_link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if !is_link {
        return Ok(());
    }
    let (Ok(target), Ok(folder)) = (path.canonicalize(), dir.canonicalize()) else {
        return Ok(());
    };
    if target.parent() == Some(folder.as_path()) {
        return Ok(());
    }
    Err(Error::Refused(Refusal::EscapingLink {
        link: path.to_path_buf(),
        target,
    }))
}

/// Whether a file name is an archive's: `*.json`, or `*.json.gz` as the site publishes them.
pub fn is_archive_name(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    name.ends_with(".json") || name.ends_with(".json.gz")
}

/// The JSON text of an archive file, decompressed when its name ends in `.gz`; a file that
/// holds (or inflates to) more than [`MAX_ARCHIVE_BYTES`], or a gzip stream that is broken,
/// is `InvalidData`.
pub fn archive_bytes(path: &Path) -> std::io::Result<Vec<u8>> {
    let invalid = |e: bounded::ReadError| match e {
        bounded::ReadError::Io(e) => e,
        too_large => std::io::Error::new(std::io::ErrorKind::InvalidData, too_large.to_string()),
    };
    let bytes = bounded::read_at_most(path, MAX_ARCHIVE_BYTES).map_err(invalid)?;
    if path.extension().is_none_or(|x| x != "gz") {
        return Ok(bytes);
    }
    bounded::read_to_end_at_most(
        flate2::read::GzDecoder::new(bytes.as_slice()),
        MAX_ARCHIVE_BYTES,
        bytes
            .len()
            .saturating_mul(8)
            .min(MAX_ARCHIVE_BYTES as usize),
    )
    .map_err(|e| match e {
        bounded::ReadError::Io(e) => std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not a readable gzip file: {e}"),
        ),
        bounded::ReadError::TooLarge { .. } => std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "inflates past {} MiB, more than any archive (a gzip bomb?)",
                MAX_ARCHIVE_BYTES >> 20
            ),
        ),
    })
}

/// The most an archive may hold, plain or inflated from gzip: the limit of every input.
pub const MAX_ARCHIVE_BYTES: u64 = bounded::MAX_INPUT_BYTES;

/// A dataset's name (its folder's) and the folder itself, canonical.
fn folder(dir: &Path) -> (String, PathBuf) {
    let canonical = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let name = canonical
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "dataset".to_string());
    (name, canonical)
}

/// Datasets being discovered: name → (folder, files). A name stands for one folder.
#[derive(Default)]
struct Found {
    datasets: BTreeMap<String, (PathBuf, Vec<PathBuf>)>,
}

impl Found {
    fn add(&mut self, dir: &Path, files: impl IntoIterator<Item = PathBuf>) -> Result<(), Error> {
        let (name, canonical) = folder(dir);
        let (known, list) = self
            .datasets
            .entry(name.clone())
            .or_insert_with(|| (canonical.clone(), Vec::new()));
        if *known != canonical {
            return Err(Error::Refused(Refusal::SameName {
                name,
                first: known.clone(),
                second: canonical,
            }));
        }
        list.extend(files);
        Ok(())
    }
}

/// Finds the datasets under `paths`.
pub fn discover(paths: &[PathBuf]) -> Result<Layout, Error> {
    let mut found = Found::default();
    for path in paths {
        // The real reason a path cannot be used (a symlink loop, a permission), not a guess.
        let meta = fs::metadata(path).map_err(|e| Error::Io {
            path: printable(&path.display().to_string()),
            source: e,
        })?;
        if meta.is_file() {
            let dir = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            found.add(dir, [path.clone()])?;
        } else if meta.is_dir() {
            let direct = json_files(path)?;
            if !direct.is_empty() {
                found.add(path, direct)?;
                continue;
            }
            let mut subdirs: Vec<PathBuf> = fs::read_dir(path)
                .map_err(|e| Error::Io {
                    path: path.display().to_string(),
                    source: e,
                })?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_dir())
                .collect();
            subdirs.sort();
            for sub in subdirs {
                let files = json_files(&sub)?;
                if !files.is_empty() {
                    found.add(&sub, files)?;
                }
            }
        } else {
            return Err(Error::Refused(Refusal::NeitherFileNorFolder {
                path: path.clone(),
            }));
        }
    }
    let mut layout: Layout = found
        .datasets
        .into_iter()
        .map(|(name, (_, files))| (name, files))
        .collect();
    for files in layout.values_mut() {
        files.sort();
        files.dedup();
    }
    if layout.is_empty() {
        return Err(Error::Refused(Refusal::NoArchives {
            paths: paths.to_vec(),
        }));
    }
    Ok(layout)
}

/// Reads and validates every dataset under `paths`. Malformed or inconsistent input is an
/// error listing every problem; failed runs are data and come back classified.
pub fn load(paths: &[PathBuf]) -> Result<Vec<Dataset>, Error> {
    let layout = discover(paths)?;
    let mut problems = Vec::new();
    let mut datasets = Vec::new();
    for (name, files) in layout {
        let (dataset, found) = read_dataset(name, &files);
        problems.extend(found);
        datasets.push(dataset);
    }
    if problems.is_empty() {
        Ok(datasets)
    } else {
        Err(Error::Invalid(problems))
    }
}

/// Reads and validates one dataset of a [`Layout`]: for commands that handle datasets one at
/// a time, so that memory holds one dataset's runs, not every dataset's.
pub fn load_one(name: &str, files: &[PathBuf]) -> Result<Dataset, Error> {
    let (dataset, problems) = read_dataset(name.to_string(), files);
    if problems.is_empty() {
        Ok(dataset)
    } else {
        Err(Error::Invalid(problems))
    }
}

fn read_dataset(name: String, files: &[PathBuf]) -> (Dataset, Vec<Problem>) {
    let mut problems = Vec::new();
    let mut dataset = Dataset {
        name,
        files: Vec::new(),
        runs: Vec::new(),
        warnings: Vec::new(),
    };
    for read in read_all(files) {
        problems.extend(read.problems);
        dataset.warnings.extend(read.warnings);
        if let Some(file) = read.file {
            let index = dataset.files.len();
            dataset.files.push(file);
            dataset.runs.extend(read.runs.into_iter().map(|mut r| {
                r.file = index;
                r
            }));
        }
    }
    validate::check_dataset(&dataset, &mut problems);
    (dataset, problems)
}

/// Reads files on all cores; the order of results matches `files`.
fn read_all(files: &[PathBuf]) -> Vec<FileRead> {
    crate::parallel::map_in_order(files, |path| read_file(path))
}

/// One file, parsed and normalised on its own (so files can be read in parallel and each
/// raw archive is dropped as soon as its runs exist).
#[derive(Default)]
pub struct FileRead {
    file: Option<ArchiveFile>,
    runs: Vec<Run>,
    /// Every backend an entry or its metrics named (F8: one per file).
    backends: std::collections::BTreeSet<String>,
    problems: Vec<Problem>,
    warnings: Vec<Problem>,
}

/// The file-level rules both formats share: a source hash (every archive names its measured
/// sources), `failed_measurements` where the schema has it (F6), and completeness (a
/// warning). `failed_measurements` is `None` for schema 1, `Some(None)` when it is missing.
pub fn check_file(
    out: &mut FileRead,
    file: &ArchiveFile,
    failed_measurements: Option<Option<u64>>,
    with_error: u64,
) {
    let path = &file.path;
    if file.source_sha256.as_deref().is_none_or(str::is_empty) {
        out.problem(
            path,
            "source_sha256",
            "missing: every archive must name its measured sources",
        );
    }
    match failed_measurements {
        None => {}
        Some(Some(n)) if n == with_error => {}
        Some(Some(n)) => out.problem(
            path,
            "failed_measurements",
            format!("says {n} but {with_error} entries carry an error"),
        ),
        Some(None) => out.problem(
            path,
            "failed_measurements",
            "missing (required in schema 2)",
        ),
    }
    if !file.complete {
        out.warnings.push(Problem::new(
            path.display().to_string(),
            "complete",
            "the matrix did not finish (complete is not true)",
        ));
    }
}

impl FileRead {
    /// Records a problem at `json_path` of `path`.
    pub fn problem(
        &mut self,
        path: &Path,
        json_path: impl Into<String>,
        message: impl Into<String>,
    ) {
        self.problems
            .push(Problem::new(path.display().to_string(), json_path, message));
    }

    /// Classifies one entry (E5 included) and keeps it as a run.
    pub fn add_run(
        &mut self,
        file: &ArchiveFile,
        facts: EntryFacts,
        metrics: Option<&Measurement>,
    ) {
        // Measured until decided, a configuration may have repetitions up to the maximum.
        let most = file
            .matrix
            .as_ref()
            .and_then(|m| m.until_decided.as_ref())
            .map_or(file.repetitions, |u| {
                u.max_repetitions().max(file.repetitions)
            });
        if facts.repetition < 1 || facts.repetition > most {
            self.problem(
                &file.path,
                format!("results[{}].repetition", facts.index),
                format!("{} is outside 1..={most}", facts.repetition),
            );
        }
        self.backends.insert(facts.key.backend.to_string());
        self.backends
            .extend(metrics.and_then(|m| m.backend.clone()));
        let verdict = rules::classify(&facts, metrics);
        let (cpu_percent, cpu_estimated) = metrics.map_or((None, false), rules::cpu_percent);
        self.runs.push(Run {
            file: 0, // set when the file joins its dataset
            index: facts.index,
            key: facts.key,
            repetition: facts.repetition,
            program: facts.program,
            address_family: facts.address_family,
            passed: verdict.passed,
            reasons: verdict.reasons,
            arknet_passed: verdict.arknet_passed,
            roundtrips_per_second: metrics.and_then(|m| m.roundtrips_per_second),
            payload_mib_per_second: metrics.and_then(|m| m.payload_mib_per_second),
            rtt_p50_us: metrics.and_then(|m| m.rtt_p50_us),
            rtt_p95_us: metrics.and_then(|m| m.rtt_p95_us),
            rtt_p99_us: metrics.and_then(|m| m.rtt_p99_us),
            rtt_p999_us: metrics.and_then(|m| m.rtt_p999_us),
            peak_rss_bytes: metrics.and_then(|m| m.peak_rss_bytes).map(|b| b as f64),
            cpu_seconds: metrics.and_then(|m| m.cpu_seconds.or(m.total_cpu_seconds)),
            cpu_percent,
            cpu_estimated,
            messages: metrics.and_then(|m| m.messages),
            messages_sent: metrics.and_then(|m| m.messages_sent),
            messages_received: metrics.and_then(|m| m.messages_received.or(m.messages)),
            server_messages_received: metrics.and_then(|m| m.server_messages_received),
            content_errors: metrics.and_then(|m| m.content_errors).unwrap_or(0),
            order_errors: metrics.and_then(|m| m.order_errors).unwrap_or(0),
            udp_lost_messages: metrics.and_then(|m| m.udp_lost_messages).unwrap_or(0),
            udp_late_messages: metrics.and_then(|m| m.udp_late_messages),
            kernel_udp_rcvbuf_errors_delta: metrics.and_then(|m| m.kernel_udp_rcvbuf_errors_delta),
            kernel_readings: metrics.and_then(|m| {
                Some(crate::model::KernelReadings {
                    rcvbuf_errors_before: m.kernel_udp_rcvbuf_errors_before?,
                    rcvbuf_errors_after: m.kernel_udp_rcvbuf_errors_after?,
                    frag_creates: m.kernel_ip_frag_creates_delta,
                    reasm_reqds: m.kernel_ip_reasm_reqds_delta,
                    reasm_oks: m.kernel_ip_reasm_oks_delta,
                    reasm_fails: m.kernel_ip_reasm_fails_delta,
                })
            }),
            udp_server_receive_buffer_bytes: metrics
                .and_then(|m| m.udp_server_receive_buffer_bytes),
            udp_server_receive_buffer_requested_bytes: metrics
                .and_then(|m| m.udp_server_receive_buffer_requested_bytes),
            udp_send_buffer_requested_bytes: metrics
                .and_then(|m| m.udp_send_buffer_requested_bytes),
            command: facts.command,
            instruments: facts.instruments,
            imported: None,
            open_loop: metrics.and_then(|m| m.open_loop.as_ref()).map(|o| {
                crate::model::RunOpenLoop {
                    achieved_rate: o.achieved_rate,
                    saturated: o.saturated,
                    late_sends: o.late_sends,
                    service_p99_us: o.service_p99_us,
                    schedule_lag_p99_us: o.schedule_lag_p99_us,
                }
            }),
        });
    }

    /// Ends the file: one backend per file (F8), and the file's own record.
    pub fn finish(&mut self, mut file: ArchiveFile) {
        self.backends.extend(file.backend.clone());
        if self.backends.len() > 1 {
            let list: Vec<&str> = self.backends.iter().map(String::as_str).collect();
            let message = format!("one file holds one backend, found {}", list.join(", "));
            self.problem(&file.path.clone(), "backend", message);
        }
        file.backend = self.backends.iter().next().cloned();
        self.file = Some(file);
    }
}

/// The file record a reader starts from: its path, name and format; the reader fills in
/// the rest.
pub fn file_record(path: &Path, format: Format, git_status: Option<&str>) -> ArchiveFile {
    ArchiveFile {
        path: path.to_path_buf(),
        name: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        format,
        backend: None,
        recorded_at_utc: None,
        git_head: None,
        dirty: git_status.is_some_and(|g| !g.trim().is_empty()),
        source_sha256: None,
        executable_sha256: None,
        runner_sha256: None,
        host: HostInfo::default(),
        seconds: 0.0,
        warmup: 0.0,
        repetitions: 0,
        address_family: AddressFamily::Ipv4,
        complete: false,
        runs: 0,
        shuffle_seed: None,
        preset: None,
        protocols: Vec::new(),
        keep_going: false,
        soak_seconds: None,
        udp_timeout_ms: None,
        soak: Vec::new(),
        toolchain: None,
        external_server: None,
        shard: None,
        reach: None,
        run_span: None,
        imported: None,
        matrix: None,
    }
}

fn read_file(path: &Path) -> FileRead {
    let mut out = FileRead::default();
    let bytes = match archive_bytes(path) {
        Ok(b) => b,
        Err(e) => {
            out.problem(path, "", e.to_string());
            return out;
        }
    };
    let file = path.display().to_string();
    match parse::parse(&file, &bytes) {
        Ok(parse::Parsed::Echomark(a)) => echomark::normalise(&mut out, path, *a),
        Ok(parse::Parsed::Arknet(a)) => arknet::normalise(&mut out, path, *a),
        Ok(parse::Parsed::Imported(a)) => imported::normalise(&mut out, path, *a),
        Err(p) => out.problems.push(p),
    }
    out
}

#[cfg(test)]
mod own_servers {
    use std::path::Path;

    use super::file_record;
    use crate::model::{ArchiveFile, Dataset, Format};

    fn served_by(name: &str, command: &str) -> ArchiveFile {
        let mut f = file_record(Path::new(&format!("{name}.json")), Format::Echomark, None);
        f.external_server = Some(
            serde_json::from_value(serde_json::json!({
                "name": name, "command": command, "host": "127.0.0.1", "framing": "prefix"
            }))
            .expect("an external server"),
        );
        f
    }

    fn dataset(files: Vec<ArchiveFile>) -> Dataset {
        Dataset {
            name: "d".into(),
            files,
            runs: Vec::new(),
            warnings: Vec::new(),
        }
    }

    #[test]
    fn one_runtime_with_two_option_sets_is_two_servers_apart() {
        let serve = "echomark-runner serve --listen 127.0.0.1:{port} --backend";
        let d = dataset(vec![
            served_by("serve-tokio", &format!("{serve} tokio")),
            served_by("serve-io-uring", &format!("{serve} io-uring")),
            served_by(
                "serve-io-uring-busy",
                &format!("{serve} io-uring --uring-busy-poll"),
            ),
        ]);
        assert_eq!(d.own_servers_apart().map(|s| s.len()), Some(3));
    }

    #[test]
    fn another_server_among_them_is_not_echomark_apart() {
        let d = dataset(vec![
            served_by("serve-tokio", "echomark-runner serve --backend tokio"),
            served_by("socat", "socat TCP-LISTEN:{port},fork EXEC:cat"),
        ]);
        assert_eq!(d.own_servers_apart(), None);
        let alone = dataset(vec![served_by("serve-tokio", "echomark-runner serve")]);
        assert_eq!(alone.own_servers_apart(), None);
    }
}
