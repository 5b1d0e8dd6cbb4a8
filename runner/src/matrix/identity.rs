//! What an external server is, found out before it is measured: the executable its command
//! starts (resolved through `PATH`), that file's SHA-256, the Debian package that owns it,
//! and its version, from `--server-version-cmd` or, where it answers at once, the
//! executable's `--version`. Everything is best effort: what cannot be found is left out,
//! and nothing here can hang the matrix (each command has a deadline and is killed after).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use echomark_archive::ServerIdentity;

use super::child::{read_bounded, Keep};
use super::provenance::file_sha256;

/// How long a version command may take.
const VERSION_DEADLINE: Duration = Duration::from_secs(3);
/// How much of its output is kept.
const VERSION_BYTES: usize = 512;

/// The identity of the server `command` starts; `version_command` is the user's
/// `--server-version-cmd`, if any.
pub fn identify(command: &str, version_command: Option<&str>) -> ServerIdentity {
    let executable = executable_of(command);
    let version_command = version_command.map(str::to_string).or_else(|| {
        executable.as_ref().map(|exe| {
            format!(
                "{} --version",
                echomark_archive::shell::quote(&exe.display().to_string())
            )
        })
    });
    let version = version_command
        .as_deref()
        .and_then(|c| run_for_output(c, VERSION_DEADLINE));
    ServerIdentity {
        // A guess that printed nothing is not recorded as the way to ask.
        version_command: version_command.filter(|_| version.is_some()),
        version,
        executable_sha256: executable.as_deref().and_then(|e| file_sha256(e).ok()),
        package: executable.as_deref().and_then(debian_package),
        executable: executable.map(|e| e.display().to_string()),
    }
}

/// The program a `sh -c` command line starts: its first word after `ip netns exec NAME`,
/// `env` and `VAR=value` prefixes, resolved through `PATH` (a word with a `/` as a path).
fn executable_of(command: &str) -> Option<PathBuf> {
    let words: Vec<&str> = command.split_whitespace().collect();
    let mut rest = words.as_slice();
    loop {
        match rest {
            ["ip", "netns", "exec", _, tail @ ..] => rest = tail,
            ["env", tail @ ..] | ["exec", tail @ ..] => rest = tail,
            [word, tail @ ..] if word.contains('=') && !word.starts_with('=') => rest = tail,
            _ => break,
        }
    }
    let program = rest.first()?.trim_matches(|c| c == '\'' || c == '"');
    if program.contains('/') {
        let path = PathBuf::from(program);
        return path.is_file().then(|| path.canonicalize().unwrap_or(path));
    }
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .map(|found| found.canonicalize().unwrap_or(found))
}

/// The trimmed output (stdout, else stderr: `nginx -v` writes there) of `command` run by
/// `sh -c`, when it exits with status 0 before `deadline`.
///
/// It runs as the servers do: in a process group of its own, its output read to the end but
/// kept only up to [`VERSION_BYTES`], and whatever it started is killed when it is done or
/// out of time: the group (`sleep 1000 &`), and, when the matrix adopts orphans, every
/// process that left the group and was reparented here (a daemon). A server script that
/// ignores `--version` and starts serving is the common case of such a command.
fn run_for_output(command: &str, deadline: Duration) -> Option<String> {
    use std::os::unix::process::CommandExt;
    let mut child = Command::new("sh")
        .args(["-c", command])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .ok()?;
    let group = child.id() as i32;
    // Read on threads of their own and collected with a deadline: a process that escaped
    // both the group and adoption may hold a pipe open for ever.
    let read = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        let (sender, receiver) = std::sync::mpsc::channel();
        if let Some(p) = pipe {
            std::thread::spawn(move || sender.send(read_bounded(p, Keep::Head(VERSION_BYTES))));
        }
        receiver
    };
    let stdout = read(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = read(child.stderr.take().map(|p| Box::new(p) as _));
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            // A command that does not answer at once is probably the server itself.
            _ => break None,
        }
    };
    // SAFETY: signalling the process group created for this command; ESRCH when it is
    // already empty is fine.
    unsafe { libc::kill(-group, libc::SIGKILL) };
    let _ = child.wait();
    super::server::kill_left_behind();
    // The pipes close once every process that held them is gone.
    let collect = |r: std::sync::mpsc::Receiver<Vec<u8>>| {
        r.recv_timeout(Duration::from_secs(1)).unwrap_or_default()
    };
    let (stdout, stderr) = (collect(stdout), collect(stderr));
    if !status?.success() {
        return None;
    }
    let text = if stdout.iter().any(|b| !b.is_ascii_whitespace()) {
        stdout
    } else {
        stderr
    };
    let text = String::from_utf8_lossy(&text);
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// "PACKAGE VERSION" of the Debian package that owns `path`, where `dpkg` knows it.
fn debian_package(path: &Path) -> Option<String> {
    let owner = Command::new("dpkg")
        .args(["-S", &path.display().to_string()])
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let line = String::from_utf8_lossy(&owner.stdout);
    let package = line.lines().next()?.split(':').next()?.trim().to_string();
    let version = Command::new("dpkg-query")
        .args(["-W", "-f", "${Version}", &package])
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|v| !v.is_empty());
    Some(match version {
        Some(v) => format!("{package} {v}"),
        None => package,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_is_found_behind_namespaces_and_variables() {
        let sh = executable_of("sh -c 'exit 0'").expect("sh is on PATH");
        assert!(sh.is_file());
        assert_eq!(
            executable_of("ip netns exec em-srv FOO=1 sh -c x"),
            Some(sh.clone())
        );
        assert_eq!(executable_of("env sh"), Some(sh));
        assert_eq!(executable_of("/no/such/server {port}"), None);
        assert_eq!(executable_of(""), None);
    }

    #[test]
    fn a_version_command_that_answers_is_recorded_and_one_that_hangs_is_not() {
        let id = identify("sh -c 'serve {port}'", Some("echo 'server 1.2.3'"));
        assert_eq!(id.version.as_deref(), Some("server 1.2.3"));
        assert_eq!(id.version_command.as_deref(), Some("echo 'server 1.2.3'"));
        assert_eq!(id.executable_sha256.as_ref().map(String::len), Some(64));
        // A command that does not answer by the deadline is killed and gives nothing (a
        // shorter deadline than identify's 3 s, to wait less).
        let started = Instant::now();
        assert_eq!(run_for_output("sleep 30", Duration::from_millis(300)), None);
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(identify("sh", Some("false")).version.is_none());
    }

    /// Whether a process whose command line holds `tag` is alive.
    fn alive(tag: &str) -> bool {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| {
                std::fs::read(e.path().join("cmdline"))
                    .is_ok_and(|c| c.windows(tag.len()).any(|w| w == tag.as_bytes()))
            })
    }

    #[test]
    fn a_version_command_leaves_no_process_behind() {
        // Before: `sh` was killed and both sleeps lived on with parent 1.
        let tag = format!("99{}", std::process::id());
        let hanging = format!("sleep {tag}1 & sleep {tag}2");
        assert_eq!(run_for_output(&hanging, Duration::from_millis(300)), None);
        // One that answers, leaving a child in the background (a server script that
        // ignores --version and starts serving).
        let answering = format!("sleep {tag}3 & echo 'server 2.0'");
        assert_eq!(
            run_for_output(&answering, Duration::from_secs(3)).as_deref(),
            Some("server 2.0")
        );
        let deadline = Instant::now() + Duration::from_secs(5);
        while alive(&format!("sleep {tag}")) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            !alive(&format!("sleep {tag}")),
            "a probe's process outlived it"
        );
    }

    #[test]
    fn a_version_command_that_prints_without_end_is_read_bounded() {
        let text = run_for_output("yes version | head -c 100000000", Duration::from_secs(10));
        assert_eq!(text.map(|t| t.len() <= VERSION_BYTES), Some(true));
    }
}
