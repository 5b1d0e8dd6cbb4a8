//! One repetition in a fresh `echomark-runner once` process: spawn, time out, judge.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use echomark_archive::{check_echo, AddressFamily, CaseParameters, Metrics, RequestedTiming};

use super::plan::PlannedRun;

/// The `returncode` of a run killed at its case timeout, as `timeout(1)` reports it.
pub const TIMED_OUT: i32 = 124;
/// The status a child gives itself when its matrix died before it could exec: what
/// SIGKILL would have reported (128 + 9).
pub const KILLED: i32 = 128 + libc::SIGKILL;

/// The most of a child's stdout kept: far more than any metrics object.
const STDOUT_LIMIT: usize = 16 << 20;
/// The most of a child's stderr kept (its end).
const STDERR_LIMIT: usize = 64 << 10;

/// Which part of a stream [`read_bounded`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// The first N bytes.
    Head(usize),
    /// The last N bytes.
    Tail(usize),
}

/// Reads `pipe` to its end, keeping at most the part `keep` names: memory stays bounded
/// however much a process writes, and the writer is never blocked on a full pipe.
pub fn read_bounded(mut pipe: impl Read, keep: Keep) -> Vec<u8> {
    let mut kept: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = match pipe.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        match keep {
            Keep::Head(limit) => {
                let room = limit.saturating_sub(kept.len());
                kept.extend_from_slice(&chunk[..n.min(room)]);
            }
            Keep::Tail(limit) => {
                kept.extend_from_slice(&chunk[..n]);
                // Trimmed in batches, so the cost stays linear in what was read.
                if kept.len() > 2 * limit {
                    kept.drain(..kept.len() - limit);
                }
            }
        }
    }
    if let Keep::Tail(limit) = keep {
        if kept.len() > limit {
            kept.drain(..kept.len() - limit);
        }
    }
    kept
}

/// What the child process did.
#[derive(Debug, Clone)]
pub struct ChildOutcome {
    /// Exit code; 124 after our timeout (as GNU `timeout`), 128 + N when killed by signal N.
    pub returncode: i32,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
    pub signal: Option<i32>,
    pub wall: Duration,
}

/// The matrix was interrupted while the child ran; the child was killed and not recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupted;

/// Runs `exe args…` with `timeout`, killing it on timeout or when `interrupted` is set.
///
/// The child gets its own process group, so a terminal's Ctrl-C reaches only the matrix,
/// which then stops the child itself and saves the archive. It dies with the matrix (Linux
/// `PR_SET_PDEATHSIG`), so a `kill -9` of the matrix leaves no measurement running, and it
/// inherits `lock_fd` (the archive's lock), so a resumed matrix waits until it is gone.
pub fn run(
    exe: &Path,
    args: &[String],
    timeout: Duration,
    interrupted: &AtomicBool,
    lock_fd: Option<i32>,
) -> std::io::Result<Result<ChildOutcome, Interrupted>> {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let start = Instant::now();
    let parent = std::process::id() as i32;
    let mut command = Command::new(exe);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: the closure runs in the forked child before exec and calls only
    // async-signal-safe functions (prctl, getppid, fcntl, _exit).
    unsafe {
        command.pre_exec(move || {
            #[cfg(target_os = "linux")]
            {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                // The matrix may have died between fork and prctl.
                if libc::getppid() != parent {
                    libc::_exit(KILLED);
                }
            }
            if let Some(fd) = lock_fd {
                libc::fcntl(fd, libc::F_SETFD, 0);
            }
            Ok(())
        });
    }
    let mut child = command.spawn()?;
    let drain = |pipe: Box<dyn Read + Send>, keep: Keep| {
        thread::spawn(move || String::from_utf8_lossy(&read_bounded(pipe, keep)).into_owned())
    };
    // The metrics are one JSON object on stdout (a few hundred KiB at most); stderr is
    // diagnostics, of which the end matters.
    let stdout = drain(
        Box::new(child.stdout.take().expect("piped")),
        Keep::Head(STDOUT_LIMIT),
    );
    let stderr = drain(
        Box::new(child.stderr.take().expect("piped")),
        Keep::Tail(STDERR_LIMIT),
    );
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if interrupted.load(Ordering::Relaxed) {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(Err(Interrupted));
        }
        if !timed_out && start.elapsed() >= timeout {
            timed_out = true;
            let _ = child.kill();
        }
        thread::sleep(Duration::from_millis(2));
    };
    let signal = status.signal();
    let returncode = match (timed_out, status.code(), signal) {
        (true, _, _) => TIMED_OUT,
        (_, Some(code), _) => code,
        (_, None, Some(sig)) => 128 + sig,
        _ => -1,
    };
    Ok(Ok(ChildOutcome {
        returncode,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
        timed_out,
        signal,
        wall: start.elapsed(),
    }))
}

/// The runner's verdict on one child.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub metrics: Option<Metrics>,
    /// Raw stdout, kept only when it could not be parsed.
    pub stdout: Option<String>,
    pub error: Option<String>,
}

/// Why a run's standard output is not the metrics it owes.
#[derive(Debug, thiserror::Error)]
enum MetricsError {
    /// Not one JSON object (also: a number JSON cannot hold, such as NaN).
    #[error("benchmark did not return valid finite JSON")]
    NotJson,
    /// A JSON object that is not the metrics record.
    #[error("benchmark returned malformed metrics: {0}")]
    Malformed(#[source] serde_json::Error),
}

/// The metrics a run printed on its standard output.
fn parse_metrics(stdout: &str) -> Result<Metrics, MetricsError> {
    let value: serde_json::Value =
        serde_json::from_str(stdout.trim()).map_err(|_| MetricsError::NotJson)?;
    if !value.is_object() {
        return Err(MetricsError::NotJson);
    }
    serde_json::from_value(value).map_err(MetricsError::Malformed)
}

/// Judges a child's outcome against its request. Error texts are arknet's schema-2 texts;
/// a process-level failure (timeout, signal, exit code) names itself first, as in arknet.
pub fn judge(
    run: &PlannedRun,
    backend: &echomark_archive::Backend,
    seconds: f64,
    warmup: f64,
    address_family: AddressFamily,
    out: &ChildOutcome,
) -> Judged {
    let timing = RequestedTiming {
        seconds,
        warmup_seconds: warmup,
    };
    let request = CaseParameters::requested(
        run.case(),
        Some(backend.clone()),
        Some(address_family),
        Some(timing),
    );
    let parsed = parse_metrics(&out.stdout);
    let (metrics, stdout, parse_error) = match parsed {
        Ok(m) => (Some(m), None, None),
        Err(e) => (None, Some(out.stdout.clone()), Some(e.to_string())),
    };
    let metrics_error = metrics.as_ref().and_then(|m| {
        let differs = check_echo(&request, &m.parameters());
        if differs.contains(&"backend") {
            Some("benchmark returned a different backend")
        } else if !differs.is_empty() {
            Some("benchmark returned different case parameters")
        } else if !m.ok {
            Some("benchmark reported a failed measurement")
        } else if m.messages == 0 || m.elapsed_seconds <= 0.0 {
            Some("benchmark did not measure completed traffic")
        } else {
            None
        }
    });
    let process_error = if out.timed_out {
        Some(format!(
            "benchmark timed out after {} seconds",
            out.wall.as_secs()
        ))
    } else if out.signal == Some(9) {
        Some("benchmark received SIGKILL (signal 9)".to_string())
    } else if let Some(sig) = out.signal {
        Some(format!("benchmark received signal {sig}"))
    } else if out.returncode != 0 {
        Some(format!(
            "benchmark failed with exit code {}",
            out.returncode
        ))
    } else {
        None
    };
    let error = process_error
        .or(parse_error)
        .or(metrics_error.map(str::to_string));
    Judged {
        metrics,
        stdout,
        error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_of_any_length_keeps_only_its_head_or_its_tail() {
        let data: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
        let tail = read_bounded(&data[..], Keep::Tail(2048));
        assert_eq!(tail, data[data.len() - 2048..]);
        let head = read_bounded(&data[..], Keep::Head(4096));
        assert_eq!(head, data[..4096]);
        assert_eq!(read_bounded(&b"short"[..], Keep::Tail(2048)), b"short");
    }
}
