//! Where an import may write: `--out` is a dataset folder, or a path one can be made at,
//! and it holds archives only. `validate` and `build` read every `*.json` and `*.json.gz`
//! directly in a dataset folder as an archive, so an import next to a tool's own output
//! (`import --from oha run.json --out dir/` with `dir/run.json`) would leave a dataset that
//! no longer validates: the import is refused instead, before anything is read or written,
//! saying which file is in the way and what to do.

use std::path::Path;

use super::{ImportError, UsageError};
use crate::error::printable;
use crate::read;

/// Refuses an `--out` that is a file, lies under one, or holds JSON that is not an archive.
pub fn check(out: &Path) -> Result<(), ImportError> {
    let given = printable(&out.display().to_string());
    // The nearest part of the path that exists must be a folder for the rest to be made.
    if let Some(existing) = out.ancestors().find(|p| p.exists()) {
        if !existing.is_dir() {
            return Err(UsageError::OutIsAFile {
                out: out.to_path_buf(),
                file: existing.to_path_buf(),
            }
            .into());
        }
    }
    if !out.is_dir() {
        return Ok(());
    }
    let entries = std::fs::read_dir(out).map_err(|source| ImportError::Write {
        path: given.clone(),
        source,
    })?;
    let mut names: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && read::is_archive_name(p))
        .collect();
    names.sort();
    for path in names {
        // A file that cannot be read here is validate's to report, as it reports any.
        let Ok(bytes) = read::archive_bytes(&path) else {
            continue;
        };
        if read::parse::is_other_json(&bytes) {
            return Err(UsageError::OutHoldsOtherJson {
                out: out.to_path_buf(),
                file: path,
            }
            .into());
        }
    }
    Ok(())
}
