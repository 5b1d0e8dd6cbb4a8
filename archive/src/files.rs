//! Writing a file so that a reader, or a crash, only ever sees the old content or the new,
//! and holding a file lock: the helpers the runner (archives, certificates) and the
//! generator (reports, the site folder) share.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Distinguishes the temporary files of one process.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` to `path`: a sibling temporary file, flushed to disk, renamed over `path`,
/// then the directory entry flushed too. The folder must exist (nothing is created but the
/// file); an existing file keeps its permissions, a new one gets the process's default.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_through_temporary(path, bytes, true)
}

/// Writes `bytes` to `path` as [`write_atomically`] does, but only when nothing is there:
/// the finished file is linked into place, which fails with `AlreadyExists` instead of
/// replacing a file that appeared meanwhile.
pub fn write_new_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_through_temporary(path, bytes, false)
}

fn write_through_temporary(path: &Path, bytes: &[u8], replace: bool) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other(format!("{} has no file name", path.display())))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}-{}",
        name.to_string_lossy(),
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let permissions = fs::metadata(path).ok().map(|m| m.permissions());
    let result = (|| {
        let mut file = File::create(&tmp)?;
        file.write_all(bytes)?;
        if let Some(p) = permissions {
            file.set_permissions(p)?;
        }
        file.sync_all()?;
        if replace {
            fs::rename(&tmp, path)?;
        } else {
            fs::hard_link(&tmp, path)?;
            fs::remove_file(&tmp)?;
        }
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// `bytes` (a digest) as lowercase hexadecimal, as archives record every SHA-256.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Takes an exclusive `flock` on `file`: without waiting, `Ok(false)` when another holder
/// has it; with `wait`, once it is free. The lock lasts as long as the descriptor (and any
/// copy a child inherited).
pub fn lock_exclusive(file: &File, wait: bool) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    let how = if wait {
        libc::LOCK_EX
    } else {
        libc::LOCK_EX | libc::LOCK_NB
    };
    // SAFETY: flock on a descriptor `file` owns for the whole call.
    if unsafe { libc::flock(file.as_raw_fd(), how) } == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.kind() == io::ErrorKind::WouldBlock {
        Ok(false)
    } else {
        Err(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_replaced_whole_and_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("echomark-files-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("report.md");
        write_atomically(&path, b"one").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        write_atomically(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o640
        );
        let left: Vec<_> = fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left behind");
        assert!(write_atomically(&dir.join("missing/report.md"), b"x").is_err());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_second_lock_on_one_file_waits_for_the_first() {
        let dir = std::env::temp_dir().join(format!("emk-lock-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("lock");
        let first = File::create(&path).unwrap();
        let second = File::open(&path).unwrap();
        assert!(super::lock_exclusive(&first, false).unwrap());
        // flock locks belong to open file descriptions: another open of the file waits.
        assert!(!super::lock_exclusive(&second, false).unwrap());
        drop(first);
        assert!(super::lock_exclusive(&second, false).unwrap());
        fs::remove_dir_all(&dir).unwrap();
    }
}
