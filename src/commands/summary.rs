//! `echomark summary`: `OUT/<dataset>/summary.json` and `summary.csv` for every dataset.
//!
//! One dataset at a time (a dataset's summary depends on that dataset alone), so memory
//! holds one dataset's runs however many there are. The summaries are staged inside `out`
//! and moved into place only when every dataset was valid: bad input writes nothing.

use std::path::{Path, PathBuf};

use super::CommandError;
use crate::analysis::Analysis;
use crate::{output, read, summary, Error};

/// One dataset's summaries, written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The dataset's name, as its folder is named.
    pub dataset: String,
    /// The folder its two files are in.
    pub folder: PathBuf,
    pub configurations: usize,
}

/// Writes the summaries of the datasets under `paths` into `out`.
pub fn run(paths: &[PathBuf], out: &Path) -> Result<Vec<Written>, CommandError> {
    // The summaries would become input of the next run (and fail it).
    crate::site::write::check_target(out, paths)?;
    let layout = read::discover(paths)?;
    let created = !out.exists();
    std::fs::create_dir_all(out).map_err(|e| CommandError::io("creating", out, e))?;
    let staging = tempfile::Builder::new()
        .prefix(".echomark-summary-")
        .tempdir_in(out)
        .map_err(|e| CommandError::io("staging in", out, e))?;
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
        let analysis = Analysis::of(std::slice::from_ref(&d))?;
        let doc = summary::SummaryDocument::of(&d, &analysis, &analysis.datasets[0]);
        let slug = output::dataset_folder(&d.name);
        let dir = staging.path().join(&slug);
        std::fs::create_dir_all(&dir).map_err(|e| CommandError::io("creating", &dir, e))?;
        for (file, text) in [
            ("summary.json", doc.json()),
            ("summary.csv", doc.csv().into_bytes()),
        ] {
            let path = dir.join(file);
            std::fs::write(&path, text).map_err(|e| CommandError::io("writing", &path, e))?;
        }
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
    let mut written = Vec::new();
    for (dataset, slug, configurations) in staged {
        let folder = out.join(&slug);
        std::fs::create_dir_all(&folder).map_err(|e| CommandError::io("creating", &folder, e))?;
        for file in ["summary.json", "summary.csv"] {
            let to = folder.join(file);
            std::fs::rename(staging.path().join(&slug).join(file), &to)
                .map_err(|e| CommandError::io("writing", &to, e))?;
        }
        written.push(Written {
            dataset,
            folder,
            configurations,
        });
    }
    Ok(written)
}
