//! Writing files safely: atomic replacement, and file names that data cannot subvert.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

/// FNV-1a over `text`: a short, stable fingerprint (not a security hash).
fn fingerprint(text: &str) -> u32 {
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

/// Writes `bytes` to `path` through a sibling temporary file and a rename, so a reader sees
/// the old file or the new one, never half of one.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::safe_name;

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
