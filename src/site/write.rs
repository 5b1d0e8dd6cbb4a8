//! Writing a rendered site to disk and comparing it with what is there.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::Site;

/// Writes `site` to `out` by building a complete sibling tree and swapping it in, so a
/// failure never leaves a half-written site (the old one stays until the swap).
pub fn write(site: &Site, out: &Path) -> io::Result<()> {
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(parent)?;
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "site".into());
    let staging = tempfile::Builder::new()
        .prefix(&format!(".{name}.new-"))
        .tempdir_in(parent)?;
    for (rel, bytes) in &site.files {
        let path = staging.path().join(rel);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir)?;
        }
        fs::write(&path, bytes)?;
    }
    let staged = staging.keep();
    if out.exists() {
        let old = parent.join(format!(".{name}.old-{}", std::process::id()));
        fs::rename(out, &old)?;
        if let Err(e) = fs::rename(&staged, out) {
            let _ = fs::rename(&old, out);
            return Err(e);
        }
        fs::remove_dir_all(&old)?;
    } else {
        fs::rename(&staged, out)?;
    }
    Ok(())
}

/// Differences between `site` and the tree at `out`: missing, extra and changed files.
pub fn differences(site: &Site, out: &Path) -> io::Result<Vec<String>> {
    let mut on_disk = BTreeMap::new();
    collect(out, out, &mut on_disk)?;
    let mut diffs = Vec::new();
    for (rel, bytes) in &site.files {
        match on_disk.get(rel) {
            None => diffs.push(format!("missing: {rel}")),
            Some(path) if &fs::read(path)? != bytes => diffs.push(format!("changed: {rel}")),
            _ => {}
        }
    }
    for rel in on_disk.keys().filter(|r| !site.files.contains_key(*r)) {
        diffs.push(format!("not generated: {rel}"));
    }
    Ok(diffs)
}

fn collect(root: &Path, dir: &Path, out: &mut BTreeMap<String, PathBuf>) -> io::Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect(root, &path, out)?;
        } else {
            let rel = path
                .strip_prefix(root)
                .expect("under root")
                .to_string_lossy()
                .replace('\\', "/");
            out.insert(rel, path);
        }
    }
    Ok(())
}
