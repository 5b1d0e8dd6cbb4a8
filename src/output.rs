//! Writing files safely: atomic replacement, and file names that data cannot subvert.

use std::io;
use std::path::{Path, PathBuf};

/// FNV-1a over `text`: a short, stable fingerprint (not a security hash).
pub fn fingerprint(text: &str) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h ^ (h >> 32)) as u32
}

/// A file or folder name derived from data. Letters and digits of any script, `.`, `-` and
/// `_` survive; anything else becomes `_`. A name that had to change, or that could climb out
/// of a folder (`.`, `..`, empty), gets a short fingerprint of the original appended, so two
/// different names never share a folder (`a b` → `a_b-…`, while `a_b` stays `a_b`).
pub fn safe_name(raw: &str) -> String {
    let mut name: String = raw
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let climbs = name.is_empty() || name.chars().all(|c| c == '.');
    if climbs {
        name.insert_str(0, "dataset_");
    }
    if climbs || name != raw {
        name.push_str(&format!("-{:08x}", fingerprint(raw)));
    }
    name
}

/// The longest name [`bounded_name`] keeps before its fingerprint: far below the 255 bytes
/// a file name may have, with room for `.gz` and the fingerprint.
const NAME_BYTES: usize = 160;

/// [`safe_name`] at most 160 bytes long (a longer one is cut on a character
/// boundary and fingerprinted), so that a name from data always fits in a file system.
pub fn bounded_name(raw: &str) -> String {
    let name = safe_name(raw);
    if name.len() <= NAME_BYTES {
        return name;
    }
    let mut cut = NAME_BYTES;
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}-{:08x}", &name[..cut], fingerprint(raw))
}

/// The folder a dataset's pages and data go in: [`bounded_name`], fingerprinted when it
/// would be a name the site itself uses beside it (`index.html`, `methodology.md`,
/// `charts`, …), so no dataset can stand where a site page does.
pub fn dataset_folder(raw: &str) -> String {
    let name = bounded_name(raw);
    let lower = name.to_ascii_lowercase();
    let site_file = [".html", ".md", ".svg", ".css", ".json", ".gz", ".csv"]
        .iter()
        .any(|ext| lower.ends_with(ext));
    let site_folder = matches!(
        lower.as_str(),
        "charts" | "assets" | "data" | "en" | "zh" | "datasets"
    );
    if site_file || site_folder {
        format!("{name}-{:08x}", fingerprint(raw))
    } else {
        name
    }
}

/// An absolute, normalised form of `path`: `.` and `..` resolved, then symlinks resolved as
/// far as the path exists.
pub fn absolute(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut lexical = PathBuf::new();
    for c in std::env::current_dir()
        .unwrap_or_default()
        .join(path)
        .components()
    {
        match c {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::CurDir => {}
            other => lexical.push(other.as_os_str()),
        }
    }
    let mut existing = lexical.as_path();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => break,
        }
    }
    let mut out = existing
        .canonicalize()
        .unwrap_or_else(|_| existing.to_path_buf());
    out.extend(rest.into_iter().rev());
    out
}

/// The first of `inputs` that `out` is, contains or lies inside (after `.`, `..` and
/// symlinks are resolved): an output there could overwrite what it was made from.
pub fn overlapping_input<'a>(out: &Path, inputs: &'a [PathBuf]) -> Option<&'a PathBuf> {
    let target = absolute(out);
    inputs.iter().find(|input| {
        let source = absolute(input);
        target.starts_with(&source) || source.starts_with(&target)
    })
}

/// Writes `bytes` to `path` through a sibling temporary file, flushed, renamed and the
/// folder flushed, so a reader sees the old file or the new one, never half of one. The
/// folder must exist.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    echomark_archive::files::write_atomically(path, bytes)
}

/// Writes `bytes` to a new file at `path` as [`write_atomically`] does; an existing file is
/// an `AlreadyExists` error, never replaced.
pub fn write_new_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    echomark_archive::files::write_new_atomically(path, bytes)
}

#[cfg(test)]
mod tests {
    use super::safe_name;

    #[test]
    fn no_dataset_folder_stands_where_a_site_page_does_or_outgrows_a_file_name() {
        use super::{bounded_name, dataset_folder};
        for taken in [
            "index.html",
            "methodology.md",
            "udp-report.html",
            "charts",
            "Data",
        ] {
            let folder = dataset_folder(taken);
            assert_ne!(folder, taken);
            assert!(folder.starts_with(taken), "{folder}");
        }
        assert_eq!(
            dataset_folder("epyc2-20261201-baseline"),
            "epyc2-20261201-baseline"
        );
        let long = "ä".repeat(200);
        assert!(bounded_name(&long).len() <= 170);
        assert_ne!(bounded_name(&long), bounded_name(&"ä".repeat(201)));
        assert_eq!(bounded_name("archive.json"), "archive.json");
    }

    #[test]
    fn data_cannot_escape_the_output_folder() {
        assert_eq!(
            safe_name("epyc2-20261201-baseline"),
            "epyc2-20261201-baseline"
        );
        for climbing in ["../../etc/passwd", "..", "", "a b/c<script>"] {
            let name = safe_name(climbing);
            assert!(
                !name.contains('/') && !name.contains('<') && name != "." && name != "..",
                "{climbing:?} → {name}"
            );
        }
        assert!(safe_name("..").starts_with("dataset_..-"));
    }

    #[test]
    fn different_names_never_share_a_folder() {
        let names = ["a b", "a_b", "a/b", "数据", "测试", "ab", "", ".", ".."];
        let mut seen = std::collections::BTreeSet::new();
        for n in names {
            assert!(seen.insert(safe_name(n)), "{n:?} collides");
        }
        assert_eq!(safe_name("数据"), "数据", "letters of any script are kept");
        assert_eq!(safe_name("a_b"), "a_b");
        assert_ne!(safe_name("a b"), "a_b");
    }
}
