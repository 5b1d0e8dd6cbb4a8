//! One entrypoint for every pod of a Kubernetes Indexed Job: the role comes from the
//! index. Index 0 runs the coordinator's command (a `matrix` with `--fleet-listen`, or
//! `fleet coordinate`) and one generator beside it; every other index is a generator.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Begins the archive on index 0's standard output (`--print-archive`).
pub const ARCHIVE_BEGIN: &str = "--- echomark archive begin ---";
/// Ends it.
pub const ARCHIVE_END: &str = "--- echomark archive end ---";
/// How long the local generator may take to leave once its coordinator has.
const GENERATOR_EXIT: Duration = Duration::from_secs(30);

/// Why the job's index cannot be known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    #[error("no --index and no JOB_COMPLETION_INDEX: which pod of the Job is this?")]
    Missing,
    #[error("JOB_COMPLETION_INDEX is {0:?}, not a number")]
    NotANumber(String),
}

/// This pod's index: `--index`, else `JOB_COMPLETION_INDEX` (Kubernetes sets it in every
/// pod of an Indexed Job).
pub fn index(flag: Option<u64>) -> Result<u64, IndexError> {
    if let Some(i) = flag {
        return Ok(i);
    }
    let text = std::env::var("JOB_COMPLETION_INDEX").map_err(|_| IndexError::Missing)?;
    text.trim()
        .parse()
        .map_err(|_| IndexError::NotANumber(text))
}

/// The coordinator's port in `HOST:PORT`.
pub fn port_of(coordinator: &str) -> Option<u16> {
    coordinator.rsplit_once(':')?.1.parse().ok()
}

/// Index 0: the coordinator's command and a generator beside it (on loopback), both this
/// executable; the command's exit code. The command's standard output goes to standard
/// error when `archive` is to be printed, so standard output carries only the archive.
pub fn lead(
    exe: &Path,
    coordinator: &str,
    command: &[String],
    archive: Option<&Path>,
) -> std::io::Result<i32> {
    let port = port_of(coordinator).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("--coordinator {coordinator}: not HOST:PORT"),
        )
    })?;
    let mut coordinating = Command::new(exe);
    coordinating.args(command);
    if archive.is_some() {
        coordinating.stdout(std::io::stderr());
    }
    let mut coordinating = coordinating.spawn()?;
    let mut generating = Command::new(exe)
        .args(["fleet", "generate", "--index", "0", "--coordinator"])
        .arg(format!("127.0.0.1:{port}"))
        .stdout(std::io::stderr())
        .spawn()?;
    let status = coordinating.wait()?;
    // Dismissed by a coordinator that finished, the generator is gone already; after one
    // that died it waits for nothing.
    let until = Instant::now() + GENERATOR_EXIT;
    while generating.try_wait()?.is_none() {
        if Instant::now() >= until {
            let _ = generating.kill();
            let _ = generating.wait();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if let (Some(path), true) = (archive, status.success()) {
        let text = std::fs::read_to_string(path)?;
        println!("{ARCHIVE_BEGIN}");
        print!("{text}");
        if !text.ends_with('\n') {
            println!();
        }
        println!("{ARCHIVE_END}");
    }
    Ok(status.code().unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_comes_from_the_flag_first() {
        assert_eq!(index(Some(3)), Ok(3));
        assert_eq!(port_of("echomark-fleet-0.echomark-fleet:7700"), Some(7700));
        assert_eq!(port_of("[::1]:80"), Some(80));
        assert_eq!(port_of("nohost"), None);
    }
}
