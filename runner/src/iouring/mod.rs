//! echomark on io_uring directly (the `io-uring` crate, no runtime): one ring per thread
//! ("shard"), tuned as far as the kernel allows, each technique a switch of its own:
//!
//! * **multishot receive** with a **provided-buffer ring**: one receive request per
//!   connection or socket stays armed and the kernel fills buffers it takes from a ring the
//!   shard hands them back to, instead of one request (and one buffer held) per read;
//! * **zero-copy echo** (with multishot): a server's echo of a whole message that filled a
//!   provided buffer is sent from that buffer, which goes back to the kernel when the send
//!   completes, instead of being copied out first;
//! * **one `io_uring_enter` per event-loop turn**: every submission a turn queued goes in
//!   with the wait for the next completions, instead of a system call per operation;
//! * **registered file descriptors**: operations name a slot of the ring's file table, so
//!   the kernel skips the descriptor lookup and its reference counting;
//! * **deferred task work** (`IORING_SETUP_DEFER_TASKRUN` with `SINGLE_ISSUER`): the
//!   kernel finishes completions only when the loop enters to wait for them, instead of
//!   interrupting the thread whenever a socket becomes ready;
//! * **SQPOLL** (off by default): a kernel thread polls the submission queue, so submitting
//!   takes no system call at all; the thread's CPU time is the process's, so the CPU a
//!   run's server used includes it;
//! * **busy polling** (off by default): the loop never sleeps, it looks for completions
//!   without waiting for them, so a request is seen without a wakeup; the shard's CPU is busy
//!   whether or not there is work (with SQPOLL the loop makes no system call at all).
//!
//! [`server`] is the echo server's half of a shard (`serve --backend io-uring`, and the
//! server of an in-process `once --backend io-uring`), [`client`] the client's half
//! (`once --backend io-uring`, in process or against `--target`). A shard runs either half
//! alone or both on one ring ([`Guest`]): in process, a client and the server it measures
//! share their thread, so one `io_uring_enter` carries a client's send, the server's
//! receive of it, and the next wait.
//!
//! The echo and the checks are the other backends' sans-IO halves
//! ([`ServerSide`](crate::traffic::stream::ServerSide),
//! [`DatagramServer`](crate::traffic::datagram::DatagramServer),
//! [`Session`](crate::traffic::stream::Session), [`ClientCore`](crate::traffic::client::ClientCore)):
//! the same framings, checks and counters. TCP (prefix and raw framing), UDP, HTTP and
//! WebSocket; the TLS protocols are refused, never served another way.

pub mod buffers;
pub mod client;
pub mod driver;
pub mod server;

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use echomark_archive::Protocol;
use serde::Serialize;

pub use driver::RingCounters;

use crate::traffic::stream::{IdleLimit, ServerDuty};

/// How long a shard may take to build its ring.
pub const SETUP_LIMIT: Duration = Duration::from_secs(10);

/// How the io_uring backend is tuned: each technique on or off, recorded in the listening
/// line and the report so its effect can be measured alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Tuning {
    /// Multishot receive into a provided-buffer ring (off: one single-shot receive per read,
    /// into the connection's own buffer).
    pub multishot: bool,
    /// A server echoes a message that filled a provided buffer straight from it, and gives
    /// the buffer back when the send completes (off: the echo is copied out first). Only
    /// with `multishot`, and only where the framing echoes a message's bytes unchanged.
    pub zero_copy: bool,
    /// IO through registered file slots (off: plain descriptors).
    pub fixed_files: bool,
    /// A turn's submissions entered together with its wait (off: one enter per submission).
    pub batched_submit: bool,
    /// Completions' task work deferred to the loop's wait (off: the kernel interrupts the
    /// thread to run it). Never with SQPOLL, which the kernel does not combine with it.
    pub defer_taskrun: bool,
    /// A kernel thread polls the submission queue.
    pub sqpoll: bool,
    /// The loop never sleeps: it looks for completions without waiting for them, and so
    /// keeps its CPU busy whether or not there is work.
    pub busy_poll: bool,
}

impl Default for Tuning {
    fn default() -> Self {
        Self {
            multishot: true,
            zero_copy: true,
            fixed_files: true,
            batched_submit: true,
            defer_taskrun: true,
            sqpoll: false,
            busy_poll: false,
        }
    }
}

/// Why io_uring cannot run here, if it cannot (the kernel refuses rings, or lacks the
/// multishot receive of Linux 6.0).
pub fn probe() -> std::io::Result<()> {
    let ring = io_uring::IoUring::new(8)?;
    let mut probe = io_uring::Probe::new();
    ring.submitter().register_probe(&mut probe)?;
    for (code, name) in [
        (io_uring::opcode::RecvMulti::CODE, "recv"),
        (io_uring::opcode::SendMsg::CODE, "sendmsg"),
        (io_uring::opcode::AcceptMulti::CODE, "accept"),
    ] {
        if !probe.is_supported(code) {
            return Err(std::io::Error::other(format!(
                "this kernel's io_uring lacks {name}"
            )));
        }
    }
    Ok(())
}

/// What a server shard reports into: `serve`'s registry, or an in-process measurement's
/// server counters.
pub trait Hooks: Send + Sync {
    /// The duty of a new connection or socket.
    fn duty(&self) -> ServerDuty;
    /// A connection was accepted.
    fn connected(&self) {}
    /// `--framing raw`: bytes echoed.
    fn raw_echoed(&self, _bytes: u64) {}
    /// A WebSocket upgrade was refused.
    fn handshake_failed(&self) {}
    /// How long a connection may stay silent, if there is a limit.
    fn idle_limit(&self) -> Option<IdleLimit> {
        None
    }
}

/// What a shard thread needs.
pub struct ShardContext {
    pub index: usize,
    pub tuning: Tuning,
    pub protocol: Protocol,
    /// The CPUs the shard threads are pinned to, one each; `None` leaves placement to the
    /// scheduler.
    pub cpus: Option<crate::placement::CpuList>,
    /// Where the server half reports.
    pub hooks: Arc<dyn Hooks>,
    /// Set when the shard must stop.
    pub stop: Arc<AtomicBool>,
    /// Registered file slots of the shard's ring.
    pub slots: u32,
    /// In process, the server half shares the ring with the clients it serves: every
    /// receive is issued right after the other half's sends, without waiting (so it finds
    /// its bytes already there), and the ring waits only when nothing is left to submit.
    pub paired: bool,
    /// Told once the shard is set up (or why it could not be).
    pub ready: Option<std::sync::mpsc::Sender<Result<(), ShardFailed>>>,
}

impl ShardContext {
    /// Pins this thread and builds its ring (its SQPOLL thread, if any, on the same CPU).
    pub fn driver(&self) -> std::io::Result<driver::Driver> {
        let cpus = self.cpus.as_ref();
        crate::placement::pin_runtime_thread(cpus, self.index).map_err(std::io::Error::other)?;
        driver::Driver::new(
            self.tuning,
            self.slots,
            cpus.map(|c| c.for_runtime(self.index)),
        )
    }

    /// Tells the starter the shard is serving.
    pub fn serving(&mut self) {
        if let Some(ready) = self.ready.take() {
            let _ = ready.send(Ok(()));
        }
    }

    pub fn stopping(&self) -> bool {
        self.stop.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// What else a shard's ring carries besides its server half: an in-process measurement's
/// clients, whose operations carry [`GUEST`] in their `user_data`.
pub trait Guest {
    /// Before the turn's wait: queue what is due (new connections, a phase's first sends).
    fn before_turn(&mut self, driver: &mut driver::Driver) -> std::io::Result<()>;
    /// One of the guest's completions.
    fn complete(
        &mut self,
        driver: &mut driver::Driver,
        c: driver::Completion,
    ) -> std::io::Result<()>;
    /// After the turn's completions: send what they freed.
    fn after_turn(&mut self, driver: &mut driver::Driver) -> std::io::Result<()>;
    /// How long the next turn may wait at most.
    fn wait(&self) -> Duration;
    /// A paired ring, after the server half's sends (`peer_sending`: it has sends not yet
    /// completed): the guest's receives, issued now so they find what was just sent.
    fn arm_receives(
        &mut self,
        _driver: &mut driver::Driver,
        _peer_sending: bool,
    ) -> std::io::Result<()> {
        Ok(())
    }
    /// A paired ring about to sleep: a receive that waits for its bytes on every client
    /// that has none armed, so bytes the kernel delivers late (from its softirq thread,
    /// on a busy machine) still wake the ring.
    fn arm_blocking(&mut self, _driver: &mut driver::Driver) -> std::io::Result<()> {
        Ok(())
    }
}

/// The bit a guest's operations carry in their `user_data`.
pub const GUEST: u64 = 1 << 63;

/// A shard with no guest.
pub struct Alone;

impl Guest for Alone {
    fn before_turn(&mut self, _: &mut driver::Driver) -> std::io::Result<()> {
        Ok(())
    }
    fn complete(&mut self, _: &mut driver::Driver, _: driver::Completion) -> std::io::Result<()> {
        Ok(())
    }
    fn after_turn(&mut self, _: &mut driver::Driver) -> std::io::Result<()> {
        Ok(())
    }
    fn wait(&self) -> Duration {
        server::TURN
    }
}

/// Why a shard stopped: the error of its setup or of its serving.
#[derive(Debug, thiserror::Error)]
#[error("io-uring shard {index}: {source}")]
pub struct ShardFailed {
    pub index: usize,
    #[source]
    pub source: std::io::Error,
}

/// Why a starter heard nothing from a shard: it did not report within [`SETUP_LIMIT`]
/// (`Timeout`), or its thread ended without a word (`Disconnected`: it panicked).
#[derive(Debug, thiserror::Error)]
#[error("an io_uring shard did not start")]
pub struct ShardSilent {
    pub index: usize,
    #[source]
    pub why: std::sync::mpsc::RecvTimeoutError,
}

/// Waits for a shard started with `ready` to say it is serving, or why not.
pub fn started(
    index: usize,
    ready: &std::sync::mpsc::Receiver<Result<(), ShardFailed>>,
) -> std::io::Result<()> {
    match ready.recv_timeout(SETUP_LIMIT) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(std::io::Error::other(e)),
        Err(why) => Err(std::io::Error::other(ShardSilent { index, why })),
    }
}

/// Runs a shard on a thread named `name`; a shard that fails before it serves tells its
/// starter why, one that fails later says so on stderr.
pub fn spawn<T: Default + Send + 'static>(
    name: String,
    index: usize,
    failed: std::sync::mpsc::Sender<Result<(), ShardFailed>>,
    serve: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<T>> {
    std::thread::Builder::new()
        .name(name)
        .spawn(move || match serve() {
            Ok(stats) => stats,
            Err(source) => {
                // Before serving, the starter hears why; later nobody listens, so stderr does.
                if let Err(unheard) = failed.send(Err(ShardFailed { index, source })) {
                    if let Err(why) = unheard.0 {
                        eprintln!("echomark-runner: {why}");
                    }
                }
                T::default()
            }
        })
}

/// The peer address a kernel wrote into `name` (a `sockaddr_in` or `sockaddr_in6`), if it
/// is one.
pub fn peer_of(name: &[u8]) -> Option<SocketAddr> {
    let family = u16::from_ne_bytes([*name.first()?, *name.get(1)?]);
    match i32::from(family) {
        libc::AF_INET if name.len() >= 8 => {
            let port = u16::from_be_bytes([name[2], name[3]]);
            let ip = std::net::Ipv4Addr::new(name[4], name[5], name[6], name[7]);
            Some(SocketAddr::from((ip, port)))
        }
        libc::AF_INET6 if name.len() >= 28 => {
            let port = u16::from_be_bytes([name[2], name[3]]);
            let flow = u32::from_be_bytes([name[4], name[5], name[6], name[7]]);
            let ip: [u8; 16] = name[8..24].try_into().ok()?;
            let scope = u32::from_ne_bytes([name[24], name[25], name[26], name[27]]);
            Some(SocketAddr::V6(std::net::SocketAddrV6::new(
                ip.into(),
                port,
                flow,
                scope,
            )))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A silent shard is reported as before, with why it was not heard as the source.
    #[test]
    fn a_silent_shard_says_it_did_not_start() {
        use std::error::Error as _;
        let silent = ShardSilent {
            index: 1,
            why: std::sync::mpsc::RecvTimeoutError::Disconnected,
        };
        assert_eq!(silent.to_string(), "an io_uring shard did not start");
        assert!(silent.source().is_some());
    }

    /// The addresses the kernel writes are the ones socket2 lays out for the same peer.
    #[test]
    fn a_peer_address_reads_back_from_its_sockaddr_bytes() {
        for peer in ["127.0.0.1:4242", "[::1]:65535", "[fe80::1%3]:9"] {
            let peer: SocketAddr = peer.parse().unwrap();
            let raw = socket2::SockAddr::from(peer);
            // SAFETY: `as_ptr` points to `len` initialised bytes.
            let bytes = unsafe {
                std::slice::from_raw_parts(raw.as_ptr().cast::<u8>(), raw.len() as usize)
            };
            assert_eq!(peer_of(bytes), Some(peer));
        }
        assert_eq!(peer_of(&[]), None);
        assert_eq!(peer_of(&[1, 0, 0, 0]), None, "AF_UNIX is no peer");
    }
}
