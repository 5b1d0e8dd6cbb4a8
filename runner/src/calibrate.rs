//! The host's loopback floor: a blocking ping-pong on one thread, no event loop.
//!
//! The one thread plays both ends in turn (client send, server receive, server send, client
//! receive), so a round trip costs four system calls and the kernel's loopback path, and
//! nothing else: no wakeups, no scheduler, no verification. A `shared 1` echo run does the
//! same work plus the runtime, so the ratio between the two is the event loop's overhead.
//!
//! Apart (`--serve`, `--target`), the same blocking loops make a C-style echo server and
//! client, so that echomark's client against an external server can be set beside the
//! simplest client there is against the same server (`scripts/bench-client`).

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::instruments::latency;
use crate::traffic::sockets;

/// One protocol's floor.
#[derive(Debug, Clone, Serialize)]
pub struct Floor {
    pub roundtrips_per_second: f64,
    pub messages: u64,
    pub elapsed_seconds: f64,
    pub rtt_p50_us: f64,
    pub rtt_p99_us: f64,
    pub rtt_mean_us: f64,
}

/// The output of `echomark-runner calibrate`.
#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    pub backend: &'static str,
    pub method: &'static str,
    pub address_family: String,
    pub payload_bytes: u64,
    pub requested_seconds: f64,
    pub tcp: Floor,
    pub udp: Floor,
}

/// Measures both floors for `seconds` each.
pub fn run(ip: IpAddr, payload: usize, seconds: f64) -> std::io::Result<Calibration> {
    let duration = Duration::from_secs_f64(seconds);
    Ok(Calibration {
        backend: "blocking",
        method: "one thread, blocking std sockets, client and server in turn",
        address_family: if ip.is_ipv6() { "ipv6" } else { "ipv4" }.to_string(),
        payload_bytes: payload as u64,
        requested_seconds: seconds,
        tcp: tcp_floor(ip, payload, duration)?,
        udp: udp_floor(ip, payload, duration)?,
    })
}

fn ping_pong(
    duration: Duration,
    mut once: impl FnMut() -> std::io::Result<()>,
) -> std::io::Result<Floor> {
    let mut hist = latency::new_histogram();
    let start = Instant::now();
    let deadline = start + duration;
    let mut messages = 0u64;
    let mut now = start;
    while now < deadline {
        let sent = now;
        once()?;
        now = Instant::now();
        latency::record(&mut hist, now - sent);
        messages += 1;
    }
    let elapsed = now.duration_since(start).as_secs_f64();
    let s = latency::summarize(&hist);
    Ok(Floor {
        roundtrips_per_second: messages as f64 / elapsed,
        messages,
        elapsed_seconds: elapsed,
        rtt_p50_us: s.p50_us,
        rtt_p99_us: s.p99_us,
        rtt_mean_us: s.mean_us,
    })
}

fn tcp_floor(ip: IpAddr, payload: usize, duration: Duration) -> std::io::Result<Floor> {
    let pair = sockets::tcp_pairs(ip, 1)?.pop().expect("one pair");
    let (mut client, mut server) = (pair.client, pair.server);
    for s in [&client, &server] {
        s.set_nonblocking(false)?;
    }
    let message = vec![0xA5u8; payload];
    let mut buf = vec![0u8; payload];
    ping_pong(duration, || {
        client.write_all(&message)?;
        server.read_exact(&mut buf)?;
        server.write_all(&buf)?;
        client.read_exact(&mut buf)
    })
}

fn udp_floor(ip: IpAddr, payload: usize, duration: Duration) -> std::io::Result<Floor> {
    let server = UdpSocket::bind(SocketAddr::new(ip, 0))?;
    let client = UdpSocket::bind(SocketAddr::new(ip, 0))?;
    client.connect(server.local_addr()?)?;
    for s in [&client, &server] {
        s.set_read_timeout(Some(Duration::from_secs(1)))?;
    }
    let message = vec![0xA5u8; payload];
    let mut buf = vec![0u8; 65_536];
    ping_pong(duration, || {
        client.send(&message)?;
        let (n, peer) = server.recv_from(&mut buf)?;
        server.send_to(&buf[..n], peer)?;
        client.recv(&mut buf).map(|_| ())
    })
}

/// `calibrate --serve ADDR`: a blocking echo server, one thread per TCP connection (a plain
/// byte echo) or one thread for a UDP socket, until `stop` is set: the C-style server the
/// client benchmark measures both clients against. Calls `announce` with the bound address.
pub fn serve(
    addr: SocketAddr,
    udp: bool,
    stop: &std::sync::atomic::AtomicBool,
    announce: impl FnOnce(SocketAddr),
) -> std::io::Result<()> {
    use std::sync::atomic::Ordering;
    if udp {
        let socket = UdpSocket::bind(addr)?;
        socket.set_read_timeout(Some(Duration::from_millis(50)))?;
        announce(socket.local_addr()?);
        let mut buf = vec![0u8; 65_536];
        while !stop.load(Ordering::Relaxed) {
            if let Ok((n, peer)) = socket.recv_from(&mut buf) {
                socket.send_to(&buf[..n], peer)?;
            }
        }
        return Ok(());
    }
    let listener = std::net::TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    announce(listener.local_addr()?);
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false)?;
                stream.set_nodelay(true)?;
                std::thread::spawn(move || {
                    let mut stream = stream;
                    let mut buf = vec![0u8; 65_536];
                    while let Ok(n) = stream.read(&mut buf) {
                        if n == 0 || stream.write_all(&buf[..n]).is_err() {
                            return;
                        }
                    }
                });
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
    Ok(())
}

/// `calibrate --target ADDR`: the blocking client alone against a server elsewhere, one
/// message of `payload` bytes in flight, for `seconds`.
pub fn client(addr: SocketAddr, udp: bool, payload: usize, seconds: f64) -> std::io::Result<Floor> {
    let duration = Duration::from_secs_f64(seconds);
    let message = vec![0xA5u8; payload];
    let mut buf = vec![0u8; 65_536];
    if udp {
        let any = SocketAddr::new(sockets::unspecified_for(&addr), 0);
        let socket = UdpSocket::bind(any)?;
        socket.connect(addr)?;
        socket.set_read_timeout(Some(Duration::from_secs(1)))?;
        return ping_pong(duration, || {
            socket.send(&message)?;
            socket.recv(&mut buf).map(|_| ())
        });
    }
    let mut stream = std::net::TcpStream::connect(addr)?;
    stream.set_nodelay(true)?;
    ping_pong(duration, || {
        stream.write_all(&message)?;
        stream.read_exact(&mut buf[..payload])
    })
}
/// What `calibrate` is asked to do: the floor in process, or one blocking end alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Both ends on one thread over loopback at `ip` ([`run`]).
    InProcess(IpAddr),
    /// `--serve ADDR` until SIGTERM or SIGINT ([`serve`]).
    Serve(SocketAddr),
    /// `--target ADDR` ([`client`]).
    Target(SocketAddr),
}

/// Why `calibrate` could not run.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    #[error("--protocol {0}: tcp or udp only")]
    Protocol(crate::case::Protocol),
    #[error(transparent)]
    Signals(#[from] crate::signals::SignalError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl CalibrateError {
    /// A protocol the blocking loops do not speak is a usage error; the rest failures.
    pub fn exit_code(&self) -> u8 {
        match self {
            CalibrateError::Protocol(_) => crate::exit_codes::USAGE,
            _ => crate::exit_codes::FAILED,
        }
    }
}

/// Runs `calibrate` in `mode` (apart, over `protocol`: TCP or UDP), handing each JSON line
/// it prints to `print`: the calibration, the server's listening address, or the client's
/// floor.
pub fn command(
    mode: Mode,
    protocol: crate::case::Protocol,
    payload: usize,
    seconds: f64,
    mut print: impl FnMut(String),
) -> Result<(), CalibrateError> {
    let udp = || match protocol {
        crate::case::Protocol::Tcp => Ok(false),
        crate::case::Protocol::Udp => Ok(true),
        other => Err(CalibrateError::Protocol(other)),
    };
    match mode {
        Mode::InProcess(ip) => {
            let c = run(ip, payload, seconds)?;
            print(serde_json::to_string(&c).expect("plain data"));
        }
        Mode::Serve(addr) => {
            let udp = udp()?;
            let stop = crate::signals::stop_flag()?;
            serve(addr, udp, &stop, |bound| {
                print(serde_json::json!({ "listening": bound.to_string() }).to_string());
            })?;
        }
        Mode::Target(addr) => {
            let floor = client(addr, udp()?, payload, seconds)?;
            print(serde_json::to_string(&floor).expect("plain data"));
        }
    }
    Ok(())
}
