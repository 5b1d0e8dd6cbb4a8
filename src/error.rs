//! Problems with the input: each names the file and the JSON path it concerns.

use std::fmt;

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
    #[error("{0}")]
    Refused(String),
    /// The archives are malformed or inconsistent; every problem is listed (up to the cap).
    #[error("{}", render(.0))]
    Invalid(Vec<Problem>),
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
