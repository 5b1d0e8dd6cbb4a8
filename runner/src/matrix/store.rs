//! Reading and atomically replacing the archive file.

use std::fs::{self, File};
use std::io;
use std::path::Path;

use echomark_archive::Archive;

/// Writes `archive` to `path` so that a reader (or a crash) only ever sees the old file or
/// the new one: write a sibling temporary file, flush it to disk, rename it over `path`,
/// then flush the directory entry.
pub fn write_atomically(path: &Path, archive: &Archive) -> io::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(archive).map_err(io::Error::other)?;
    bytes.push(b'\n');
    write_bytes_atomically(path, &bytes)
}

/// Writes `bytes` to `path` so that a reader (or a crash) only ever sees the old file or the
/// new one (see [`write_atomically`]).
pub fn write_bytes_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    echomark_archive::files::write_atomically(path, bytes)
}

/// An exclusive lock on an archive for as long as a matrix (or a child it started) writes
/// it: a `.NAME.lock` file beside the archive, held with `flock`, removed at the end.
pub struct ArchiveLock {
    file: File,
    path: std::path::PathBuf,
}

/// How long a matrix waits for the previous holder of an archive's lock (a child that its
/// killed matrix left is killed by the kernel within moments).
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

impl ArchiveLock {
    /// Locks the archive at `archive`, waiting a few seconds for a previous holder.
    pub fn take(archive: &Path) -> io::Result<Self> {
        let name = archive
            .file_name()
            .ok_or_else(|| io::Error::other("archive path has no file name"))?;
        let path = archive.with_file_name(format!(".{}.lock", name.to_string_lossy()));
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)?;
        let start = std::time::Instant::now();
        loop {
            if echomark_archive::files::lock_exclusive(&file, false)? {
                return Ok(Self { file, path });
            }
            if start.elapsed() >= LOCK_PATIENCE {
                return Err(io::Error::other(format!(
                    "{} is being written by another matrix or by a measurement it started; \
                     wait for it to end (or stop it) and try again",
                    archive.display()
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// The descriptor children inherit, so the lock lasts as long as any of them.
    pub fn fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.file.as_raw_fd()
    }
}

impl Drop for ArchiveLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// Why an archive could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("{path}: not an echomark archive (line {line}, column {column}): {source}")]
    Malformed {
        path: String,
        line: usize,
        column: usize,
        #[source]
        source: serde_json::Error,
    },
}

/// Reads an echomark archive strictly; the error names the file and where parsing failed.
pub fn read(path: &Path) -> Result<Archive, ReadError> {
    let shown = || path.display().to_string();
    let text = fs::read_to_string(path).map_err(|source| ReadError::Io {
        path: shown(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| ReadError::Malformed {
        path: shown(),
        line: source.line(),
        column: source.column(),
        source,
    })
}
