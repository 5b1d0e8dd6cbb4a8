//! Reading and atomically replacing the archive file.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

use echomark_archive::Archive;

/// Writes `archive` to `path` so that a reader (or a crash) only ever sees the old file or
/// the new one: write a sibling temporary file, flush it to disk, rename it over `path`,
/// then flush the directory entry.
pub fn write_atomically(path: &Path, archive: &Archive) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("archive path has no file name"))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut file = File::create(&tmp)?;
        let mut bytes = serde_json::to_vec_pretty(archive).map_err(io::Error::other)?;
        bytes.push(b'\n');
        file.write_all(&bytes)?;
        file.sync_all()?;
        fs::rename(&tmp, path)?;
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
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
