//! Writing files safely: atomic replacement and file names that data cannot subvert.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

/// A file or folder name derived from data: only ASCII letters, digits, `.`, `-` and `_`
/// survive; anything else becomes `_`, and names that could climb out of a folder (`.`,
/// `..`, empty) are prefixed.
pub fn safe_name(raw: &str) -> String {
    let mut name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() || name.chars().all(|c| c == '.') {
        name.insert_str(0, "dataset_");
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
        assert_eq!(safe_name("../../etc/passwd"), ".._.._etc_passwd");
        assert_eq!(safe_name(".."), "dataset_..");
        assert_eq!(safe_name(""), "dataset_");
        assert_eq!(safe_name("a b/c<script>"), "a_b_c_script_");
        assert_eq!(safe_name("数据"), "__");
    }
}
