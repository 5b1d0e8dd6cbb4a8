//! `serve --backend io-uring` against what hostile or careless clients do to it (#53):
//! peers that reset their connections (`SO_LINGER 0`) right after sending must each be
//! counted as a disconnect and leave no descriptor behind (on every backend).
use crate::common::*;
use std::io::Write;
use std::time::{Duration, Instant};

/// How many socket descriptors `pid` holds (its listeners and connections; the rings and
/// event descriptors a runtime may open after it prints its listening line are not counted).
fn sockets_held(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter(|l| l.to_string_lossy().starts_with("socket:"))
                .count()
        })
        .unwrap_or(0)
}

/// Raises this test process's soft open-file limit to its hard one, and returns it: the
/// test holds many sockets at once.
fn raise_own_open_file_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct it is given, which lives on this stack.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    limit.rlim_cur = limit.rlim_max;
    // SAFETY: setrlimit reads the struct it is given; raising the soft limit to the hard one
    // is always allowed.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) };
    limit.rlim_cur
}

/// Opens `n` connections to `address`, `batch` at a time, writes one message on each,
/// then closes each with `SO_LINGER 0`, so the server sees the message and then a reset
/// (the reset often failing the echo's send before the receive sees it).
fn send_then_reset(address: &str, n: usize, batch: usize) {
    let room = usize::try_from(raise_own_open_file_limit()).unwrap_or(usize::MAX);
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
        // Every reset socket is closed (no idle timeout would ever close a forgotten one).
        let deadline = Instant::now() + Duration::from_secs(20);
        while sockets_held(pid) > baseline && Instant::now() < deadline {
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
