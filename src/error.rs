//! Problems with the input: each names the file and the JSON path it concerns.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// How many problems are reported before the rest are only counted.
pub const PROBLEM_CAP: usize = 100;

/// One thing wrong with an input file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The file, as given or found.
    pub file: String,
    /// The JSON path inside the file (`results[17].metrics.rtt_p99_us`); empty for the file
    /// as a whole.
    pub path: String,
    pub message: String,
}

impl Problem {
    pub fn new(
        file: impl Into<String>,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            file: file.into(),
            path: path.into(),
            message: message.into(),
        }
    }
}

/// `text` with control characters shown as escapes (`\n`, `\u{1b}`), so a file name or
/// message from data cannot split a line of output or drive a terminal.
pub fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (file, message) = (printable(&self.file), printable(&self.message));
        if self.path.is_empty() {
            write!(f, "{file}: {message}")
        } else {
            write!(f, "{file}: {}: {message}", printable(&self.path))
        }
    }
}

/// Why a command could not use its input.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file or folder could not be read; `path` as the user sees it (control characters
    /// escaped).
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The paths given cannot be read as asked (not an archive, a folder of folders, …).
    #[error(transparent)]
    Refused(Refusal),
    /// The archives are malformed or inconsistent; every problem is listed (up to the cap).
    #[error("{}", render(.0))]
    Invalid(Vec<Problem>),
}

/// Why the paths given cannot be read as asked; every path is shown with its control
/// characters escaped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// An archive is a symbolic link to a file outside its dataset's folder: the site would
    /// publish a copy of something the dataset does not hold.
    #[error(
        "{} is a symbolic link to {}, outside its dataset's folder; copy the archive in instead",
        shown(.link),
        shown(.target)
    )]
    EscapingLink { link: PathBuf, target: PathBuf },
    /// Two folders would be datasets of one name.
    #[error(
        "{} and {} are both datasets named {name:?}; a dataset is one folder, so rename one",
        shown(.first),
        shown(.second)
    )]
    SameName {
        name: String,
        first: PathBuf,
        second: PathBuf,
    },
    /// A path given is neither a file nor a folder (a socket, a device).
    #[error("{}: neither a file nor a folder", shown(.path))]
    NeitherFileNorFolder { path: PathBuf },
    /// No archive was found under any of the paths given.
    #[error("no archives (*.json, *.json.gz) found in {}", shown_all(.paths))]
    NoArchives { paths: Vec<PathBuf> },
    /// A path that must hold one dataset (a side of `compare`) holds these.
    #[error(
        "{} holds {} datasets ({}); compare takes one dataset folder or archive a side",
        shown(.path),
        .datasets.len(),
        printable(&.datasets.join(", "))
    )]
    SeveralDatasets {
        path: PathBuf,
        datasets: Vec<String>,
    },
}

/// `path` as the user sees it, control characters escaped.
fn shown(path: &Path) -> String {
    printable(&path.display().to_string())
}

/// `paths` as the user sees them, separated by commas.
fn shown_all(paths: &[PathBuf]) -> String {
    let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    printable(&shown.join(", "))
}

fn render(problems: &[Problem]) -> String {
    let mut out = String::new();
    for p in problems.iter().take(PROBLEM_CAP) {
        out.push_str(&p.to_string());
        out.push('\n');
    }
    if problems.len() > PROBLEM_CAP {
        out.push_str(&format!(
            "… and {} more problems\n",
            problems.len() - PROBLEM_CAP
        ));
    }
    out.push_str(&format!(
        "{} problem(s); nothing was written",
        problems.len()
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_their_paths_escaped() {
        let p = PathBuf::from;
        let said = |r: Refusal| Error::Refused(r).to_string();
        assert_eq!(
            said(Refusal::EscapingLink {
                link: p("d/a\n.json"),
                target: p("/x/a.json")
            }),
            "d/a\\n.json is a symbolic link to /x/a.json, outside its dataset's folder; copy \
             the archive in instead"
        );
        assert_eq!(
            said(Refusal::SameName {
                name: "d".into(),
                first: p("/a/d"),
                second: p("/b/d")
            }),
            "/a/d and /b/d are both datasets named \"d\"; a dataset is one folder, so rename one"
        );
        assert_eq!(
            said(Refusal::NeitherFileNorFolder {
                path: p("/dev/null")
            }),
            "/dev/null: neither a file nor a folder"
        );
        assert_eq!(
            said(Refusal::NoArchives {
                paths: vec![p("a"), p("b")]
            }),
            "no archives (*.json, *.json.gz) found in a, b"
        );
        assert_eq!(
            said(Refusal::SeveralDatasets {
                path: p("r"),
                datasets: vec!["x".into(), "y".into()]
            }),
            "r holds 2 datasets (x, y); compare takes one dataset folder or archive a side"
        );
    }
}
