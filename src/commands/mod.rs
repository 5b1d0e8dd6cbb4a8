//! What each `echomark` subcommand does, as library functions the binary calls: they read,
//! validate, analyse and write, and return what the binary prints (or the typed error it
//! prints and turns into an exit code, [`CommandError::exit_code`]).
//!
//! - [`validate`]: the per-dataset report, as text or JSON.
//! - [`summary`]: `summary.json` and `summary.csv` per dataset, staged so bad input writes
//!   nothing.
//! - [`site`]: `build` (with the weight of what it wrote) and `check`.
//! - [`compare`]: the comparison of two datasets, its report file and its gate.

pub mod compare;
pub mod site;
pub mod summary;
pub mod validate;

use std::path::{Path, PathBuf};

use crate::analysis::Analysis;
use crate::error::printable;
use crate::exit_codes;
use crate::model::Dataset;

/// Why a subcommand stopped. Every variant names what the user gave.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The input could not be read or is invalid (the problems are listed).
    #[error(transparent)]
    Input(#[from] crate::Error),
    /// The output folder cannot be written as asked.
    #[error(transparent)]
    Write(#[from] crate::site::WriteError),
    /// A page could not be rendered.
    #[error(transparent)]
    Render(#[from] crate::site::SiteError),
    /// The run table could not be aggregated.
    #[error("aggregating the run table: {0}")]
    Aggregate(#[from] polars::error::PolarsError),
    /// A report could not be serialised.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A file or folder could not be made, read or written: `doing` what, to `path`.
    #[error("{doing} {path}: {source}")]
    Io {
        doing: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// `compare` could not carry out the request.
    #[error(transparent)]
    Compare(#[from] compare::CompareError),
    /// `check`: the site on disk is not what the archives produce.
    #[error(
        "{out} differs from what the archives produce in {} files; run `echomark build`",
        differences.len()
    )]
    OutOfDate {
        out: String,
        /// The first differences, one line each.
        differences: Vec<String>,
    },
}

impl CommandError {
    /// The exit code of this failure: a request that cannot be carried out as asked (an
    /// `--out` that is a file, overlaps an input, or holds things echomark did not write)
    /// is a usage error; everything else a failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            CommandError::Write(w) if w.is_refusal() => exit_codes::USAGE,
            _ => exit_codes::FAILED,
        }
    }

    /// `doing` to `path` failed with `source`.
    pub fn io(doing: &'static str, path: &Path, source: std::io::Error) -> Self {
        CommandError::Io {
            doing,
            path: printable(&path.display().to_string()),
            source,
        }
    }
}

/// Reads, validates and analyses the datasets under `paths`, once for every output.
pub fn analyse(paths: &[PathBuf]) -> Result<(Vec<Dataset>, Analysis), CommandError> {
    let datasets = crate::read::load(paths)?;
    let analysis = Analysis::of(&datasets)?;
    Ok((datasets, analysis))
}
