//! Where an import may write: `--out` is a dataset folder, or a path one can be made at.
//! Refused before anything is read or written, by the path the user gave.

use std::path::Path;

use super::ImportError;
use crate::error::printable;

/// Refuses an `--out` that is a file or lies under one.
pub fn check(out: &Path) -> Result<(), ImportError> {
    let given = printable(&out.display().to_string());
    // The nearest part of the path that exists must be a folder for the rest to be made.
    if let Some(existing) = out.ancestors().find(|p| p.exists()) {
        if !existing.is_dir() {
            let blocking = if existing == out {
                "it is a file".to_string()
            } else {
                format!("{} is a file", printable(&existing.display().to_string()))
            };
            return Err(ImportError::Usage(format!(
                "--out {given}: {blocking}, not a folder; give the dataset folder to write \
                 the archive into (made when missing); nothing was written"
            )));
        }
    }
    Ok(())
}
