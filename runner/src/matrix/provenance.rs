//! Where an archive came from: time, git state, hashes of the measured sources and binary.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

/// The rule `source_sha256` follows, recorded in every archive.
pub const SOURCE_HASH_RULE: &str = "sha256 over Cargo.toml, Cargo.lock and every *.rs and \
Cargo.toml under archive/ and runner/ (paths relative to the workspace root, '/'-separated, \
sorted component-wise; no path with a component named 'target' or 'results'); each file adds \
its path bytes, a NUL, its bytes, a NUL. Reproduce with `echomark-runner source-hash`.";

/// The current UTC time as ISO-8601 with microseconds and `+00:00`, like arknet's archives.
pub fn utc_now() -> String {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    format_utc(d.as_secs(), d.subsec_micros())
}

/// Formats seconds since the epoch (proleptic Gregorian, UTC).
pub fn format_utc(secs: u64, micros: u32) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{micros:06}+00:00",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// `git rev-parse HEAD` and `git status --porcelain` in `dir`; `None` when git fails.
///
/// The folder of the archive being written (`own_output`'s parent) is left out of the
/// status: an archive inside the repository would otherwise always mark its own build
/// "dirty" as an untracked folder.
pub fn git_state(dir: &Path, own_output: &Path) -> (Option<String>, Option<String>) {
    let run = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
    };
    let head = run(&["rev-parse", "HEAD"]).map(|s| s.trim().to_string());
    let own_folder = run(&["rev-parse", "--show-toplevel"]).and_then(|top| {
        let top = fs::canonicalize(top.trim()).ok()?;
        let parent = own_output.parent().filter(|p| !p.as_os_str().is_empty());
        let folder = fs::canonicalize(parent.unwrap_or(Path::new("."))).ok()?;
        let rel = folder.strip_prefix(&top).ok()?.to_str()?.to_string();
        (!rel.is_empty()).then(|| format!("{rel}/"))
    });
    let status = run(&["status", "--porcelain"]).map(|s| {
        s.lines()
            // Porcelain lines are "XY path"; paths are relative to the repository's top.
            .filter(|line| match (&own_folder, line.get(3..)) {
                (Some(own), Some(path)) => !path.starts_with(own.as_str()),
                _ => true,
            })
            .collect::<Vec<_>>()
            .join("\n")
    });
    (head, status)
}

/// SHA-256 of a file, hex.
pub fn file_sha256(path: &Path) -> io::Result<String> {
    let mut file = fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(echomark_archive::files::hex(&hasher.finalize()))
}

/// The measured source files under `root`, as relative '/'-separated paths in hash order.
pub fn source_files(root: &Path) -> io::Result<Vec<String>> {
    let mut files = Vec::new();
    for top in ["Cargo.toml", "Cargo.lock"] {
        if root.join(top).is_file() {
            files.push(vec![top.to_string()]);
        }
    }
    for dir in ["archive", "runner"] {
        walk(&root.join(dir), &mut vec![dir.to_string()], &mut files)?;
    }
    // Component-wise order: "a/b" sorts before "a-b".
    files.sort();
    Ok(files.into_iter().map(|c| c.join("/")).collect())
}

fn walk(dir: &Path, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) -> io::Result<()> {
    if !dir.is_dir() {
        return Ok(());
    }
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "target" || name == "results" || name.starts_with('.') {
            continue;
        }
        let kind = entry.file_type()?;
        prefix.push(name.clone());
        if kind.is_dir() {
            walk(&entry.path(), prefix, out)?;
        } else if kind.is_file() && (name.ends_with(".rs") || name == "Cargo.toml") {
            out.push(prefix.clone());
        }
        prefix.pop();
    }
    Ok(())
}

/// `source_sha256` of the workspace at `root` (see [`SOURCE_HASH_RULE`]).
pub fn source_sha256(root: &Path) -> io::Result<String> {
    let files = source_files(root)?;
    if !files.iter().any(|f| f.starts_with("runner/src/")) {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no runner sources under {}", root.display()),
        ));
    }
    let mut hasher = Sha256::new();
    for rel in files {
        hasher.update(rel.as_bytes());
        hasher.update([0]);
        hasher.update(fs::read(root.join(&rel))?);
        hasher.update([0]);
    }
    Ok(echomark_archive::files::hex(&hasher.finalize()))
}

/// The workspace this binary was built from, if it is still there.
pub fn default_source_dir() -> PathBuf {
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    if built.join("runner").is_dir() {
        built
    } else {
        PathBuf::from(".")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formatting_matches_known_instants() {
        assert_eq!(format_utc(0, 0), "1970-01-01T00:00:00.000000+00:00");
        assert_eq!(
            format_utc(1_760_074_196, 838_785),
            "2025-10-10T05:29:56.838785+00:00"
        );
        assert_eq!(
            format_utc(951_782_400, 1),
            "2000-02-29T00:00:00.000001+00:00"
        );
    }

    #[test]
    fn source_hash_is_stable_and_sensitive() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("runner/src")).unwrap();
        fs::create_dir_all(root.join("runner/target")).unwrap();
        fs::write(root.join("Cargo.toml"), "[workspace]").unwrap();
        fs::write(root.join("runner/src/main.rs"), "fn main() {}").unwrap();
        fs::write(root.join("runner/target/junk.rs"), "ignored").unwrap();
        fs::write(root.join("runner/README.md"), "not measured").unwrap();
        let a = source_sha256(root).unwrap();
        assert_eq!(
            source_files(root).unwrap(),
            ["Cargo.toml", "runner/src/main.rs"]
        );
        assert_eq!(a, source_sha256(root).unwrap());
        fs::write(root.join("runner/README.md"), "still not measured").unwrap();
        assert_eq!(a, source_sha256(root).unwrap());
        fs::write(root.join("runner/src/main.rs"), "fn main() { }").unwrap();
        assert_ne!(a, source_sha256(root).unwrap());
    }

    #[test]
    fn component_order_puts_a_slash_before_a_dash() {
        let mut v = [
            vec!["a-b".to_string()],
            vec!["a".to_string(), "b".to_string()],
        ];
        v.sort();
        assert_eq!(v[0], ["a", "b"]);
    }
}
