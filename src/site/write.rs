//! Writing a rendered site to disk without losing anything that is there, and comparing it
//! with what is there.
//!
//! A build writes each file into a sibling tree (`.NAME.new-*`) as it is rendered, so the
//! site is never held in memory, and once the tree is complete swaps it in with one atomic
//! exchange (Linux `renameat2(RENAME_EXCHANGE)`; elsewhere two renames, which a kill between
//! them can leave with nothing at `--out`). Only a folder an earlier build wrote is replaced:
//! the build leaves [`MARKER`], the list of the files it wrote, and a folder that holds
//! anything else (a folder that is not a site, or a site with files the build did not write)
//! is refused unless `--force`. `--out` may not be, contain or lie inside an input. Builds
//! into one folder take turns on a lock of its parent folder, and each build first removes
//! the staging folders a killed build left behind.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use super::{Sink, SiteError};

/// The file every build writes at the root of its site: the list of the files it wrote.
pub const MARKER: &str = ".echomark-site";

/// Test only: the environment variable that makes a build kill itself (SIGKILL) at a named
/// point of the swap (`staged`: the new tree is complete; `exchanged`: it is in place and the
/// old one not yet removed), so tests can show that nothing is lost at either point.
pub const CRASH_HOOK: &str = "ECHOMARK_TEST_CRASH";

/// Why a site was not written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// `--out` names a regular file (or another non-folder).
    #[error("{0} is a file, not a folder; choose another --out")]
    NotAFolder(PathBuf),
    /// `--out` holds things an echomark build did not write.
    #[error("{path} is not empty and was not written by `echomark build` ({what}); choose another --out, or pass --force to replace it")]
    NotASite { path: PathBuf, what: String },
    /// `--out` is, contains or lies inside an input.
    #[error("--out {out} overlaps the input {input}: echomark never writes where it reads")]
    OverlapsInput { out: PathBuf, input: PathBuf },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The site could not be rendered (or a rendered file not staged).
    #[error(transparent)]
    Render(Box<SiteError>),
}

impl WriteError {
    /// Whether the request itself is wrong (exit 2) rather than the disk failing.
    pub fn is_refusal(&self) -> bool {
        !matches!(self, WriteError::Io { .. } | WriteError::Render(_))
    }
}

fn at(path: &Path) -> impl FnOnce(io::Error) -> WriteError + '_ {
    move |source| WriteError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The marker's bytes for `files` (site-relative paths).
pub fn marker(files: impl IntoIterator<Item = String>) -> Vec<u8> {
    let files: BTreeSet<String> = files.into_iter().collect();
    let mut bytes = serde_json::to_vec_pretty(&serde_json::json!({
        "written_by": "echomark build",
        "files": files,
    }))
    .expect("plain data serialises");
    bytes.push(b'\n');
    bytes
}

/// What a build may do with an existing folder.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// Replace a folder even when echomark did not write it.
    pub force: bool,
    /// The build's inputs, which `--out` must not overlap.
    pub inputs: Vec<PathBuf>,
}

/// Refuses an `out` that is a file, or that is, contains or lies inside an input: checked
/// before anything is read or written.
pub fn check_target(out: &Path, inputs: &[PathBuf]) -> Result<(), WriteError> {
    if let Ok(meta) = fs::symlink_metadata(out) {
        if !meta.is_dir() {
            return Err(WriteError::NotAFolder(out.to_path_buf()));
        }
    }
    match crate::output::overlapping_input(out, inputs) {
        Some(input) => Err(WriteError::OverlapsInput {
            out: out.to_path_buf(),
            input: input.clone(),
        }),
        None => Ok(()),
    }
}

/// Every file under `root`, site-relative with `/`.
fn files_under(root: &Path) -> io::Result<BTreeMap<String, PathBuf>> {
    let mut out = BTreeMap::new();
    collect(root, root, &mut out)?;
    Ok(out)
}

/// Refuses to replace `out` unless an echomark build wrote everything in it.
fn check_replaceable(out: &Path, force: bool) -> Result<(), WriteError> {
    let Ok(mut entries) = fs::read_dir(out) else {
        return Ok(());
    };
    if force || entries.next().is_none() {
        return Ok(());
    }
    let not_a_site = |what: String| WriteError::NotASite {
        path: out.to_path_buf(),
        what,
    };
    let marker_path = out.join(MARKER);
    let listed: BTreeSet<String> = match fs::read(&marker_path) {
        Ok(bytes) => serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|v| {
                v.get("files")?
                    .as_array()?
                    .iter()
                    .map(|f| f.as_str().map(str::to_string))
                    .collect()
            })
            .ok_or_else(|| not_a_site(format!("{MARKER} is not a list of files")))?,
        Err(_) => return Err(not_a_site(format!("it has no {MARKER}"))),
    };
    let present = files_under(out).map_err(at(out))?;
    let foreign: Vec<&String> = present
        .keys()
        .filter(|f| f.as_str() != MARKER && !listed.contains(*f))
        .collect();
    match foreign.as_slice() {
        [] => Ok(()),
        some => {
            let shown: Vec<&str> = some.iter().take(5).map(|s| s.as_str()).collect();
            Err(not_a_site(format!(
                "{} file(s) the build did not write, such as {}",
                some.len(),
                shown.join(", ")
            )))
        }
    }
}

/// Holds an exclusive lock on a folder for as long as it lives (the lock goes with the
/// descriptor).
struct FolderLock {
    _held: File,
}

impl FolderLock {
    /// Locks `dir`, saying so when another build holds it and waiting for it.
    fn take(dir: &Path) -> Result<Self, WriteError> {
        use echomark_archive::files::lock_exclusive;
        let file = File::open(dir).map_err(at(dir))?;
        if !lock_exclusive(&file, false).map_err(at(dir))? {
            eprintln!(
                "echomark: another build is writing into {}; waiting for it",
                dir.display()
            );
            lock_exclusive(&file, true).map_err(at(dir))?;
        }
        Ok(Self { _held: file })
    }
}

/// Removes staging folders (`.NAME.new-*`, `.NAME.old-*`) that a killed build left.
fn remove_leftovers(parent: &Path, name: &str) -> Result<(), WriteError> {
    let prefixes = [format!(".{name}.new-"), format!(".{name}.old-")];
    for entry in fs::read_dir(parent).map_err(at(parent))? {
        let entry = entry.map_err(at(parent))?;
        let file_name = entry.file_name().to_string_lossy().into_owned();
        let ours = prefixes.iter().any(|p| file_name.starts_with(p.as_str()));
        if ours && entry.file_type().is_ok_and(|t| t.is_dir()) {
            fs::remove_dir_all(entry.path()).map_err(at(&entry.path()))?;
        }
    }
    Ok(())
}

/// Kills this process when the crash hook names `point` (tests only).
fn crash_point(point: &str) {
    if std::env::var(CRASH_HOOK).is_ok_and(|v| v == point) {
        // SAFETY: kill with this process's own id; the process ends here.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}

/// Swaps the folders `a` and `b` atomically where the kernel can.
fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt;
        let c = |p: &Path| {
            std::ffi::CString::new(p.as_os_str().as_bytes())
                .map_err(|_| io::Error::other("path holds a NUL byte"))
        };
        let (a, b) = (c(a)?, c(b)?);
        // SAFETY: two NUL-terminated paths that live across the call.
        let r = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                a.as_ptr(),
                libc::AT_FDCWD,
                b.as_ptr(),
                libc::RENAME_EXCHANGE,
            )
        };
        if r == 0 {
            return Ok(());
        }
        Err(io::Error::last_os_error())
    }
    #[cfg(not(target_os = "linux"))]
    {
        // Two renames: a kill between them leaves the old site at `.NAME.old-*`.
        let aside = b.with_extension("old-swap");
        fs::rename(b, &aside)?;
        fs::rename(a, b)?;
        fs::rename(&aside, a)
    }
}

/// Writes each file into a staging folder as it is rendered.
struct Staging {
    root: PathBuf,
    /// Folders made so far, so each is made once.
    made: BTreeSet<PathBuf>,
}

impl Sink for Staging {
    fn put(&mut self, rel: &str, bytes: &[u8]) -> io::Result<()> {
        let path = self.root.join(rel);
        if let Some(dir) = path.parent() {
            if !self.made.contains(dir) {
                fs::create_dir_all(dir)?;
                self.made.insert(dir.to_path_buf());
            }
        }
        fs::write(&path, bytes)
    }
}

/// Renders a site into `out` with `render`, which passes each file to the sink it is given
/// as soon as it is made (see the module notes for what is refused and why). Nothing at
/// `out` changes unless every file was rendered. Returns how many files were written.
pub fn write(
    out: &Path,
    options: &WriteOptions,
    render: impl FnOnce(&mut dyn Sink) -> Result<usize, SiteError>,
) -> Result<usize, WriteError> {
    check_target(out, &options.inputs)?;
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(parent).map_err(at(parent))?;
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| WriteError::NotAFolder(out.to_path_buf()))?;
    let _lock = FolderLock::take(parent)?;
    remove_leftovers(parent, &name)?;
    check_replaceable(out, options.force)?;
    let staging = tempfile::Builder::new()
        .prefix(&format!(".{name}.new-"))
        .tempdir_in(parent)
        .map_err(at(parent))?;
    let mut sink = Staging {
        root: staging.path().to_path_buf(),
        made: BTreeSet::new(),
    };
    // A failed render drops `staging`, and the folder with it.
    let written = render(&mut sink).map_err(|e| WriteError::Render(Box::new(e)))?;
    let staged = staging.keep();
    crash_point("staged");
    if out.exists() {
        exchange(&staged, out).map_err(at(out))?;
        crash_point("exchanged");
        // `staged` now holds the old site.
        fs::remove_dir_all(&staged).map_err(at(&staged))?;
    } else {
        fs::rename(&staged, out).map_err(at(out))?;
    }
    Ok(written)
}

/// Compares each rendered file with the tree at a folder as it comes, and keeps only the
/// differences: missing, extra and changed files.
pub struct Differences {
    on_disk: BTreeMap<String, PathBuf>,
    seen: BTreeSet<String>,
    found: Vec<String>,
}

impl Differences {
    /// A comparison with the tree at `out` (empty when there is none).
    pub fn with(out: &Path) -> io::Result<Self> {
        Ok(Self {
            on_disk: files_under(out)?,
            seen: BTreeSet::new(),
            found: Vec::new(),
        })
    }

    /// The differences: what was rendered and is missing or changed, in the order rendered,
    /// then what is on disk and was not rendered.
    pub fn finish(mut self) -> Vec<String> {
        for rel in self.on_disk.keys().filter(|r| !self.seen.contains(*r)) {
            self.found.push(format!("not generated: {rel}"));
        }
        self.found
    }
}

impl Sink for Differences {
    fn put(&mut self, rel: &str, bytes: &[u8]) -> io::Result<()> {
        match self.on_disk.get(rel) {
            None => self.found.push(format!("missing: {rel}")),
            Some(path) if fs::read(path)? != bytes => self.found.push(format!("changed: {rel}")),
            _ => {}
        }
        self.seen.insert(rel.to_string());
        Ok(())
    }
}

fn collect(root: &Path, dir: &Path, out: &mut BTreeMap<String, PathBuf>) -> io::Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect(root, &path, out)?;
        } else if let Ok(rel) = path.strip_prefix(root) {
            out.insert(rel.to_string_lossy().replace('\\', "/"), path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_is_found_in_every_direction() {
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path().join("raw");
        fs::create_dir_all(raw.join("ds")).unwrap();
        let inputs = vec![raw.join("ds")];
        for out in [raw.join("ds"), raw.join("ds/site"), raw.clone()] {
            assert!(
                matches!(
                    check_target(&out, &inputs),
                    Err(WriteError::OverlapsInput { .. })
                ),
                "{}",
                out.display()
            );
        }
        assert!(check_target(&dir.path().join("site"), &inputs).is_ok());
        assert!(check_target(&dir.path().join("x/../raw/ds"), &inputs).is_err());
    }

    #[test]
    fn the_marker_lists_files_in_order() {
        let m = marker(["b".to_string(), "a".to_string()]);
        let v: serde_json::Value = serde_json::from_slice(&m).unwrap();
        assert_eq!(v["files"], serde_json::json!(["a", "b"]));
    }
}
