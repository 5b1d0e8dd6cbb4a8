//! `serve --backend io-uring` against what hostile or careless clients and hosts do to it
//! (#53): peers that reset their connections (`SO_LINGER 0`) right after sending must each
//! be counted as a disconnect and leave no descriptor behind (on every backend), and the
//! server must start under Debian's default open-file limit and say what to do when the
//! limit is too small.
use crate::common::*;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How many socket descriptors `pid` holds (its listeners and connections; the rings and
/// event descriptors a runtime may open after it prints its listening line are not counted).
/// Reading the list can fail for a moment (this test process may itself be out of
/// descriptors while other tests hold theirs): it is read again, never taken as none.
fn sockets_held(pid: u32) -> usize {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) {
            return fds
                .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter(|l| l.to_string_lossy().starts_with("socket:"))
                .count();
        }
        assert!(Instant::now() < deadline, "cannot read /proc/{pid}/fd");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How many connections wait in the accept queue of the TCP listener on `port`, as the
/// kernel shows it (`/proc/net/tcp`: a listening socket's receive queue is its backlog).
fn waiting_to_be_accepted(port: u16) -> usize {
    let port = format!("{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|text| {
            text.lines()
                .skip(1)
                .filter_map(|line| {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    let local_port = fields.get(1)?.rsplit(':').next()?;
                    let listening = fields.get(3) == Some(&"0A");
                    let queue = fields.get(4)?.rsplit(':').next()?;
                    (listening && local_port == port)
                        .then(|| usize::from_str_radix(queue, 16).ok())
                        .flatten()
                })
                .collect::<Vec<_>>()
        })
        .sum()
}

/// Opens `n` connections to `address`, `batch` at a time, writes one message on each,
/// then closes each with `SO_LINGER 0`, so the server sees the message and then a reset
/// (the reset often failing the echo's send before the receive sees it).
fn send_then_reset(address: &str, n: usize, batch: usize) {
    // The test holds many sockets at once: its soft open-file limit is raised as serve's is.
    let limit = echomark_runner::serve::limits::raise_open_files().expect("the open-file limit");
    let room = usize::try_from(limit).unwrap_or(usize::MAX);
    let batch = batch.min(room.saturating_sub(64)).max(16);
    let mut message = vec![64u8];
    message.extend_from_slice(&[b'x'; 64]);
    let mut left = n;
    while left > 0 {
        let count = left.min(batch);
        let sockets: Vec<std::net::TcpStream> = (0..count)
            .map(|_| std::net::TcpStream::connect(address).expect("connects"))
            .collect();
        for mut socket in &sockets {
            socket.write_all(&message).expect("writes");
        }
        for socket in &sockets {
            socket2::SockRef::from(socket)
                .set_linger(Some(Duration::ZERO))
                .expect("SO_LINGER 0");
        }
        drop(sockets);
        left -= count;
    }
}

#[test]
fn every_reset_connection_is_counted_and_its_socket_released() {
    // io-uring's listener queues a thousand connections at once (the more arrive in one
    // turn, the likelier a reset beats an echo's send); the runtimes' listeners queue 128,
    // and they only show that every backend counts a reset alike.
    let backends: [(&[&str], usize, usize); 4] = [
        (&["--backend", "io-uring"], 2_000, 1_000),
        (
            &["--backend", "io-uring", "--uring-multishot", "off"],
            2_000,
            1_000,
        ),
        (&["--backend", "tokio"], 500, 50),
        (&["--backend", "monoio"], 500, 50),
    ];
    for (flags, n, batch) in backends {
        let mut args = vec!["--protocol", "tcp", "--idle-timeout", "0"];
        args.extend_from_slice(flags);
        let server = Server::echomark(&args);
        let pid = server.child.id();
        let baseline = sockets_held(pid);
        send_then_reset(&server.address, n, batch);
        // Every reset socket is accepted and closed (no idle timeout would ever close a
        // forgotten one). A server starved of CPU may not have accepted any yet: it is done
        // only once none waits in its listener's queue and none is held.
        let port: u16 = server.address.rsplit(':').next().unwrap().parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while (sockets_held(pid) > baseline || waiting_to_be_accepted(port) > 0)
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        let held = sockets_held(pid);
        let report = server.stop();
        assert_eq!(
            held, baseline,
            "{flags:?}: {held} sockets held, {baseline} before the connections: {report}"
        );
        assert_eq!(report["connections"], n, "{flags:?}: {report}");
        // Each reset is one disconnect, whichever operation saw it first.
        assert_eq!(report["disconnect_errors"], n, "{flags:?}: {report}");
        assert_eq!(report["send_rejections"], 0, "{flags:?}: {report}");
    }
}

/// `serve --backend io-uring` with `args`, its open-file limit set to `soft` and `hard`
/// before it starts.
fn serve_limited(soft: u64, hard: u64, args: &[&str]) -> Command {
    let mut command = Command::new(RUNNER);
    command
        .args(["serve", "--backend", "io-uring", "--listen", "127.0.0.1:0"])
        .args(args);
    let limit = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: between fork and exec the closure only calls setrlimit, which is
    // async-signal-safe, on a struct copied into it.
    unsafe {
        command.pre_exec(move || {
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command
}

/// The soft open-file limit of process `pid`.
fn soft_open_files(pid: u32) -> u64 {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .expect("Max open files");
    line.split_whitespace().nth(3).unwrap().parse().unwrap()
}

#[test]
fn io_uring_starts_under_the_default_open_file_limit_and_says_what_to_do_under_a_tiny_one() {
    for protocol in ["tcp", "http", "websocket"] {
        // Debian's default: 1,024 soft and hard.
        let server = Server::start(
            serve_limited(1024, 1024, &["--protocol", protocol]),
            listening_address,
        );
        let (code, m, _) = once(&server.address, &["--protocol", protocol]);
        assert_eq!(code, 0, "{protocol}: {:?}", m.error);
        let report = server.stop();
        assert_eq!(
            report["measured_messages_received"], m.messages_sent,
            "{report}"
        );
    }
    // A soft limit below the hard one is raised to it, as servers do.
    let server = Server::start(serve_limited(1024, 4096, &[]), listening_address);
    assert_eq!(soft_open_files(server.child.id()), 4096);
    let (code, m, _) = once(&server.address, &["--protocol", "tcp"]);
    assert_eq!(code, 0, "{:?}", m.error);
    drop(server);
    // Too few descriptors for the registered file table: the error says how to raise them.
    let out = serve_limited(64, 64, &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("ulimit -n"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Without registered files the limit is only the connections'.
    let server = Server::start(
        serve_limited(64, 64, &["--uring-fixed-files", "off"]),
        listening_address,
    );
    let (code, m, _) = once(&server.address, &["--protocol", "tcp"]);
    assert_eq!(code, 0, "{:?}", m.error);
}
