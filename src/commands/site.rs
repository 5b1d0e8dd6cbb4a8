//! `echomark build` and `echomark check`: the site rendered from the archives, written (the
//! old site stays until the new one is complete) or held against what is on disk.

use std::fmt;
use std::path::{Path, PathBuf};

use super::{analyse, CommandError};
use crate::analysis::Analysis;
use crate::model::Dataset;
use crate::site;

/// The datasets under `paths`, validated, analysed and with their history: what a site is
/// rendered from.
pub fn data(paths: &[PathBuf]) -> Result<(Vec<Dataset>, Analysis), CommandError> {
    let (datasets, analysis) = analyse(paths)?;
    let analysis = analysis.with_history(&datasets)?;
    Ok((datasets, analysis))
}

/// What `build` wrote, and how heavy it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Built {
    pub out: PathBuf,
    pub files: usize,
    pub weight: Weight,
}

/// Renders the site of the archives under `paths` into `out`.
pub fn build(
    paths: &[PathBuf],
    out: &Path,
    base_url: &str,
    force: bool,
) -> Result<Built, CommandError> {
    let options = site::WriteOptions {
        force,
        inputs: paths.to_vec(),
    };
    // Refuse a bad --out before reading anything.
    site::write::check_target(out, &options.inputs)?;
    let (datasets, analysis) = data(paths)?;
    let files = site::write(out, &options, |sink| {
        site::render_into(&datasets, &analysis, base_url, sink)
    })?;
    Ok(Built {
        out: out.to_path_buf(),
        files,
        weight: Weight::of(out),
    })
}

/// Holds `out` against what the archives under `paths` produce: the number of files when
/// they are the same.
pub fn check(paths: &[PathBuf], out: &Path, base_url: &str) -> Result<usize, CommandError> {
    let (datasets, analysis) = data(paths)?;
    let mut check =
        site::write::Differences::with(out).map_err(|e| CommandError::io("reading", out, e))?;
    let rendered = site::render_into(&datasets, &analysis, base_url, &mut check)?;
    let differences = check.finish();
    if differences.is_empty() {
        return Ok(rendered);
    }
    Err(CommandError::OutOfDate {
        out: out.display().to_string(),
        differences: differences.iter().take(50).map(|d| d.to_string()).collect(),
    })
}

/// How heavy a written site is: every file's bytes, its five largest HTML pages, and the
/// explorer's data file raw and gzipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Weight {
    pub total: u64,
    /// (bytes, path relative to the site), largest first.
    pub largest: Vec<(u64, String)>,
    /// `data/explore.js`: (bytes, gzipped bytes), when the site has one.
    pub explorer: Option<(u64, u64)>,
}

impl Weight {
    /// The weight of the site in `dir`; files that cannot be read are left out.
    pub fn of(dir: &Path) -> Self {
        let (mut total, mut largest) = (0u64, Vec::new());
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                let path = e.path();
                let Ok(meta) = e.metadata() else { continue };
                if meta.is_dir() {
                    stack.push(path);
                    continue;
                }
                total += meta.len();
                if path.extension().is_some_and(|x| x == "html") {
                    let rel = path.strip_prefix(dir).unwrap_or(&path);
                    largest.push((meta.len(), rel.display().to_string()));
                }
            }
        }
        largest.sort_by(|a, b| b.cmp(a));
        largest.truncate(5);
        let explorer = std::fs::read(dir.join("data/explore.js"))
            .ok()
            .map(|data| (data.len() as u64, site::gzip(&data).len() as u64));
        Self {
            total,
            largest,
            explorer,
        }
    }
}

/// "1,234 KiB".
fn kib(bytes: u64) -> String {
    format!("{} KiB", crate::format::count(bytes.div_ceil(1024)))
}

impl fmt::Display for Built {
    /// The build summary: files, the site's weight and its largest pages, the explorer's
    /// data (one line each).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let out = self.out.display();
        writeln!(f, "{out}: {} files", self.files)?;
        let pages: Vec<String> = self
            .weight
            .largest
            .iter()
            .map(|(bytes, page)| format!("{page} {}", kib(*bytes)))
            .collect();
        writeln!(
            f,
            "{out}: {} in all; largest pages: {}",
            kib(self.weight.total),
            pages.join(", ")
        )?;
        if let Some((raw, gzipped)) = self.weight.explorer {
            writeln!(
                f,
                "{out}: the explorer's data, data/explore.js, {} ({} gzipped)",
                kib(raw),
                kib(gzipped)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_weight_counts_every_file_and_names_the_largest_pages() {
        let dir = tempfile::tempdir().unwrap();
        let write = |p: &str, n: usize| {
            let p = dir.path().join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, vec![b'x'; n]).unwrap();
        };
        for i in 0..7 {
            write(&format!("en/p{i}.html"), 100 * (i + 1));
        }
        write("assets/site.css", 50);
        write("data/explore.js", 4096);
        let w = Weight::of(dir.path());
        assert_eq!(w.total, (1..=7).map(|i| 100 * i).sum::<u64>() + 50 + 4096);
        assert_eq!(w.largest.len(), 5);
        assert_eq!(w.largest[0], (700, "en/p6.html".to_string()));
        assert_eq!(w.explorer.map(|e| e.0), Some(4096));
        assert!(w.explorer.unwrap().1 < 4096, "repeated bytes gzip small");
        let built = Built {
            out: PathBuf::from("site"),
            files: 9,
            weight: w,
        };
        let text = built.to_string();
        assert!(
            text.starts_with("site: 9 files\nsite: 7 KiB in all; largest pages: en/p6.html 1 KiB"),
            "{text}"
        );
        assert!(text.contains("data/explore.js, 4 KiB ("), "{text}");
        assert_eq!(kib(1025), "2 KiB");
    }
}
