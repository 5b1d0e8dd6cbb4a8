//! `matrix --server-cmd`: an external server, started fresh for every run (as echomark's own
//! server is, inside each `once` process) and for its verification. The command runs under
//! `sh -c 'exec CMD'` (one program; write a script for more) in its own process group with
//! `{port}` replaced by a free port (and `{protocol}`, `{framing}` by the run's protocol and
//! stream framing, so one command can serve them all); the matrix waits
//! until it accepts (TCP) or echoes (UDP), measures, then stops it with SIGTERM, and with
//! SIGKILL when it ignores that, and records how it ended and what it cost (wait4).

use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use echomark_archive::{ExternalServer, Protocol, ServerProcess};

use crate::placement::CpuList;

/// How long a server gets to exit after SIGTERM.
pub const STOP_GRACE: Duration = Duration::from_secs(3);
/// How much of the server's stderr is kept.
const STDERR_TAIL: usize = 2048;
/// Bytes of a server's stdout kept: enough for the report `serve` prints last.
const STDOUT_TAIL: usize = 8192;

/// A started server.
pub struct Started {
    child: Child,
    command: String,
    started: Instant,
    stderr: mpsc::Receiver<Vec<u8>>,
    /// The tail of its stdout, where echomark's `serve` prints its report last.
    stdout: mpsc::Receiver<Vec<u8>>,
    /// Where clients reach it.
    pub address: SocketAddr,
    /// Seconds until it was ready; `None` when it never was.
    pub ready_seconds: Option<f64>,
    /// Whether it was in another network namespace than this process once ready.
    separate_network_namespace: Option<bool>,
    /// Whether `--server-cpus` pinned it.
    pinned: bool,
}

/// The CPUs `settings` pin every external server to (`--server-cpus`), if any.
pub fn pinned_cpus(
    settings: &echomark_archive::Settings,
) -> Result<Option<CpuList>, super::MatrixError> {
    crate::placement::recorded(settings.server_cpus.as_deref())
        .map_err(|e| super::Refusal::ServerCpus(e).into())
}

/// Starts `server` for `protocol` on a free port, pinned to `cpus` when given (before it
/// execs, so every thread it makes inherits them), and waits until it is ready (or exited,
/// or its ready limit passed; see [`Started::ready_seconds`]).
pub fn start(
    server: &ExternalServer,
    protocol: Protocol,
    cpus: Option<&CpuList>,
) -> std::io::Result<Started> {
    use std::os::unix::process::CommandExt;
    let ip: std::net::IpAddr = server
        .host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .map_err(|_| {
            std::io::Error::other(format!(
                "--server-host {:?} is not an IP address",
                server.host
            ))
        })?;
    let port = free_port(SocketAddr::new(ip, 0), protocol)?;
    let address = SocketAddr::new(ip, port);
    let command = server
        .command
        .replace("{port}", &port.to_string())
        .replace("{protocol}", protocol.as_str())
        .replace("{framing}", server.framing_for(protocol).as_str());
    let parent = std::process::id() as i32;
    let affinity = cpus.map(crate::placement::to_set);
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(format!("exec {command}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: only async-signal-safe calls between fork and exec (prctl, getppid, _exit,
    // sched_setaffinity on a set made before the fork).
    unsafe {
        c.pre_exec(move || {
            #[cfg(target_os = "linux")]
            {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if libc::getppid() != parent {
                    libc::_exit(super::child::KILLED);
                }
                if let Some(set) = &affinity {
                    if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                }
            }
            Ok(())
        });
    }
    let started = Instant::now();
    let mut child = c.spawn()?;
    // A chatty server's output is read to its end but only its tail is kept.
    let stderr = tail_of(child.stderr.take(), STDERR_TAIL * 2);
    let stdout = tail_of(child.stdout.take(), STDOUT_TAIL);
    let mut s = Started {
        child,
        command,
        started,
        stderr,
        stdout,
        address,
        ready_seconds: None,
        separate_network_namespace: None,
        pinned: cpus.is_some(),
    };
    let limit = server.ready_limit();
    while s.started.elapsed() < limit {
        // Looked at, not reaped: `stop` reads its status and resource usage with wait4.
        if has_exited(s.child.id()) {
            break;
        }
        if ready(address, protocol) {
            s.ready_seconds = Some(s.started.elapsed().as_secs_f64());
            s.separate_network_namespace = separate_network_namespace(s.child.id());
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(s)
}

/// Reads `pipe` to its end on a thread of its own; the receiver gets its last `keep` bytes.
fn tail_of(
    pipe: Option<impl std::io::Read + Send + 'static>,
    keep: usize,
) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    if let Some(mut pipe) = pipe {
        std::thread::spawn(move || {
            let bytes = super::child::read_bounded(&mut pipe, super::child::Keep::Tail(keep));
            let _ = tx.send(bytes);
        });
    }
    rx
}

/// A figure of the report echomark's `serve` prints as its last line (its io_uring
/// counters, its system calls), if the server printed one (any other server's output is
/// ignored).
fn report_field<T: serde::de::DeserializeOwned>(stdout: &[u8], field: &str) -> Option<T> {
    let text = String::from_utf8_lossy(stdout);
    let last = text.lines().rev().find(|l| !l.trim().is_empty())?;
    let report: serde_json::Value = serde_json::from_str(last).ok()?;
    serde_json::from_value(report.get(field)?.clone()).ok()
}

/// Whether child `pid` has exited, leaving it waitable (`WNOWAIT`): `Child::try_wait`
/// would reap it, and the exit code, the resource usage and the reason would be lost.
fn has_exited(pid: u32) -> bool {
    // SAFETY: a zeroed siginfo_t is a valid value for waitid to fill.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: asking about our own child with a valid pointer; nothing is reaped.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    // SAFETY: waitid filled `info`; si_pid is 0 when the child has not exited yet.
    r == 0 && unsafe { info.si_pid() } != 0
}

/// A port nothing listens on now (the kernel's choice for port 0). When the server's
/// address is not one of this namespace's (the server runs in another namespace or on
/// another host), the kernel's choice for the unspecified address is the best guess.
fn free_port(at: SocketAddr, protocol: Protocol) -> std::io::Result<u16> {
    let bind = |a: SocketAddr| -> std::io::Result<u16> {
        Ok(if protocol.rides_udp() {
            UdpSocket::bind(a)?.local_addr()?.port()
        } else {
            TcpListener::bind(a)?.local_addr()?.port()
        })
    };
    bind(at).or_else(|e| match e.kind() {
        std::io::ErrorKind::AddrNotAvailable => bind(SocketAddr::new(
            crate::traffic::sockets::unspecified_for(&at),
            0,
        )),
        _ => Err(e),
    })
}

/// Whether process `pid` is in another network namespace than this process: the two
/// `/proc/…/ns/net` links name the namespaces' inodes.
fn separate_network_namespace(pid: u32) -> Option<bool> {
    let theirs = std::fs::read_link(format!("/proc/{pid}/ns/net")).ok()?;
    let ours = std::fs::read_link("/proc/self/ns/net").ok()?;
    Some(theirs != ours)
}

/// Whether the server accepts (TCP), echoes a datagram (UDP) or speaks QUIC at `address`
/// now.
fn ready(address: SocketAddr, protocol: Protocol) -> bool {
    if !protocol.rides_udp() {
        return TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_ok();
    }
    let any = SocketAddr::new(crate::traffic::sockets::unspecified_for(&address), 0);
    let probe = || -> std::io::Result<bool> {
        let s = UdpSocket::bind(any)?;
        s.connect(address)?;
        s.set_read_timeout(Some(Duration::from_millis(100)))?;
        let mut buf = [0u8; 1500];
        if protocol.is_quic() {
            s.send(&version_probe())?;
            return Ok(s
                .recv(&mut buf)
                .is_ok_and(|n| is_version_negotiation(&buf[..n])));
        }
        // Not an echomark message: an echomark server counts it as foreign.
        s.send(b"echomark readiness probe")?;
        Ok(s.recv(&mut buf).is_ok_and(|n| n > 0))
    };
    probe().unwrap_or(false)
}

/// A QUIC long-header packet of a version no server speaks (RFC 9000 §15 reserves versions
/// of the form 0x?a?a?a?a for this), padded to QUIC's least datagram size of 1,200 bytes:
/// every QUIC server answers it with a Version Negotiation packet (§6) and starts no
/// connection, so the probe needs no certificate and leaves the server's counts alone.
fn version_probe() -> Vec<u8> {
    let mut packet = vec![0xc0];
    packet.extend_from_slice(&[0x1a, 0x2a, 0x3a, 0x4a]);
    for _ in 0..2 {
        // A destination and a source connection ID of 8 bytes each.
        packet.push(8);
        packet.extend_from_slice(b"echomark");
    }
    packet.resize(1200, 0);
    packet
}

/// A Version Negotiation packet: a long header whose version is 0 (RFC 9000 §17.2.1).
fn is_version_negotiation(packet: &[u8]) -> bool {
    packet.len() >= 7 && packet[0] & 0x80 != 0 && packet[1..5] == [0, 0, 0, 0]
}

impl Started {
    /// Stops the server (SIGTERM to its process group, SIGKILL after [`STOP_GRACE`]),
    /// removes what is left of its group, and says how it went.
    pub fn stop(mut self) -> ServerProcess {
        let pid = self.child.id() as i32;
        // Read while every thread it started is alive.
        let cpus = crate::placement::threads_allowed(&pid.to_string()).map(|c| c.to_string());
        let mut killed = false;
        let mut outcome = self.wait(false);
        let exited_early = outcome.is_some();
        if outcome.is_none() {
            // SAFETY: signalling the process group we created for this child.
            unsafe { libc::kill(-pid, libc::SIGTERM) };
            let deadline = Instant::now() + STOP_GRACE;
            while outcome.is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
                outcome = self.wait(false);
            }
            if outcome.is_none() {
                killed = true;
                // SAFETY: as above.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
                outcome = self.wait(true);
            }
        }
        // Workers the server forked may outlive it; none may outlive the run.
        // SAFETY: as above; ESRCH when the group is already empty is fine.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
        let stderr = self
            .stderr
            .recv_timeout(Duration::from_secs(1))
            .unwrap_or_default();
        let stdout = self
            .stdout
            .recv_timeout(Duration::from_secs(1))
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&stderr);
        let mut from = text.len().saturating_sub(STDERR_TAIL);
        while !text.is_char_boundary(from) {
            from += 1;
        }
        let (status, usage) = outcome.unwrap_or((0, None));
        let exited = libc::WIFEXITED(status);
        ServerProcess {
            command: self.command,
            ready_seconds: self.ready_seconds,
            exit_code: exited.then(|| libc::WEXITSTATUS(status)),
            signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
            exited_early,
            killed,
            cpu_seconds: usage.map(|u| seconds(u.ru_utime) + seconds(u.ru_stime)),
            peak_rss_bytes: usage.map(|u| u.ru_maxrss.max(0) as u64 * 1024),
            stderr_tail: text[from..].to_string(),
            separate_network_namespace: self.separate_network_namespace,
            left_behind: kill_left_behind(),
            cpus,
            pinned: self.pinned,
            ring: report_field(&stdout, "ring"),
            syscalls: report_field(&stdout, "syscalls"),
        }
    }

    /// `wait4` on the server: its status and resource usage once it has exited.
    fn wait(&mut self, block: bool) -> Option<(i32, Option<libc::rusage>)> {
        let pid = self.child.id() as i32;
        let mut status = 0;
        // SAFETY: a zeroed rusage is a valid value for wait4 to fill.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let flags = if block { 0 } else { libc::WNOHANG };
        // SAFETY: waiting for our own child with valid pointers.
        let r = unsafe { libc::wait4(pid, &mut status, flags, &mut usage) };
        (r == pid).then_some((status, Some(usage)))
    }
}

/// Makes this process the reaper of every orphan among its descendants (Linux), so that a
/// daemon an external server forks (`setsid`, a double fork) is reparented here, not to
/// init, and [`Started::stop`] can kill it.
pub fn adopt_orphans() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with an integer argument has no memory effects.
    let adopted = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } == 0;
    #[cfg(not(target_os = "linux"))]
    let adopted = false;
    ADOPTING.store(adopted, std::sync::atomic::Ordering::Relaxed);
}

/// Set once [`adopt_orphans`] made this process a subreaper: only then is every child found
/// after a server stopped one it left behind (a test process has children of its own).
static ADOPTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Kills and reaps every process that is this process's child once the server is stopped,
/// and theirs: the matrix has no other child then, so each is something the server left
/// behind. Returns how many there were.
pub(super) fn kill_left_behind() -> u64 {
    if !ADOPTING.load(std::sync::atomic::Ordering::Relaxed) {
        return 0;
    }
    // Killing an orphan hands its own children to this process in turn: repeat until a pass
    // finds none (bounded, in case something keeps forking).
    let mut killed = 0;
    for _ in 0..16 {
        let found = kill_children();
        if found == 0 {
            break;
        }
        killed += found;
    }
    killed
}

/// One pass of [`kill_left_behind`]: kills and reaps this process's current children.
fn kill_children() -> u64 {
    let me = std::process::id() as i32;
    let orphans: Vec<i32> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| {
                    // "pid (comm) state ppid …": the comm may hold spaces and parentheses.
                    let after = stat.rsplit_once(") ")?.1;
                    after.split_whitespace().nth(1)?.parse::<i32>().ok()
                })
                == Some(me)
        })
        .collect();
    for &pid in &orphans {
        // SAFETY: signalling and reaping our own child.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
    }
    orphans.len() as u64
}

fn seconds(t: libc::timeval) -> f64 {
    t.tv_sec as f64 + t.tv_usec as f64 / 1e6
}

/// Why a run against an external server could not be measured, from its server's record,
/// if the server is to blame.
pub fn failure(p: &ServerProcess, ran: bool, ready_limit: Duration) -> Option<String> {
    failure_reason(p, ran, ready_limit).map(|reason| {
        // What the server said last is most often why it gave up.
        let said = p.stderr_tail.trim();
        if p.exited_early && !said.is_empty() {
            let mut from = said.len().saturating_sub(240);
            while !said.is_char_boundary(from) {
                from += 1;
            }
            format!("{reason}; its stderr ends: {}", &said[from..])
        } else {
            reason
        }
    })
}

fn failure_reason(p: &ServerProcess, ran: bool, ready_limit: Duration) -> Option<String> {
    if p.ready_seconds.is_none() {
        return Some(match (p.exited_early, p.exit_code, p.signal) {
            (true, Some(code), _) => {
                format!("the server exited with code {code} before it was ready")
            }
            (true, _, Some(sig)) => format!("the server died of signal {sig} before it was ready"),
            _ => format!(
                "the server was not ready within {} s",
                ready_limit.as_secs_f64()
            ),
        });
    }
    if p.killed {
        return Some(format!(
            "the server ignored SIGTERM for {} s and was killed",
            STOP_GRACE.as_secs()
        ));
    }
    if ran && p.exited_early {
        // Exiting before it was told to is a crash, whatever the client saw.
        return Some(match (p.exit_code, p.signal) {
            (Some(code), _) => format!("the server exited with code {code} during the run"),
            (_, Some(sig)) => format!("the server died of signal {sig} during the run"),
            _ => "the server ended during the run".to_string(),
        });
    }
    None
}
