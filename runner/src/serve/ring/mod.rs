//! `serve --backend io-uring`: echomark's server on io_uring directly (the `io-uring` crate,
//! no runtime), tuned as far as the kernel allows, each technique a switch of its own:
//!
//! * **multishot receive** with a **provided-buffer ring**: one receive request per
//!   connection or socket stays armed and the kernel fills buffers it takes from a ring the
//!   shard hands them back to, instead of one request (and one buffer held) per read;
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
//! One thread per shard (`shared 1` or `sharded N`), each with its own ring and its own
//! listener (TCP) or socket (UDP) on one port (`SO_REUSEPORT`). The echo itself is the other
//! backends' sans-IO server side ([`ServerSide`](crate::traffic::stream::ServerSide),
//! [`DatagramServer`](crate::traffic::datagram::DatagramServer)): the same framings, checks
//! and counters. TCP (prefix and raw framing), UDP, HTTP and WebSocket; the TLS protocols
//! are refused ("not supported by this backend"), never served another way.

pub mod buffers;
mod datagram;
pub mod driver;
mod stream;

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread::JoinHandle;

use echomark_archive::{IoModel, Protocol};
use serde::Serialize;

pub use driver::RingCounters;

use super::{Echo, Registry, ServeOptions, Started};

/// How long a shard may take to build its ring.
const SETUP_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);
use crate::framing::codecs::ServerFraming;
use crate::framing::prefix::LengthPrefix;

/// How the io_uring backend is tuned: each technique on or off, recorded in the listening
/// line and the report so its effect can be measured alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Tuning {
    /// Multishot receive into a provided-buffer ring (off: one single-shot receive per read,
    /// into the connection's own buffer).
    pub multishot: bool,
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
fn probe() -> std::io::Result<()> {
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

/// The fewest registered file slots a ring serves with: fewer connections is no server.
const MIN_SLOTS: u64 = 64;

/// The registered file slots of each of `shards` rings: as many as connections the soft
/// open-file limit leaves room for besides the process's own descriptors, shared among the
/// rings, at most [`stream::SLOTS`] each (none without `--uring-fixed-files`). A limit too
/// low for even [`MIN_SLOTS`] is an error that says how to raise it.
fn file_slots(tuning: Tuning, shards: usize) -> std::io::Result<u32> {
    use super::limits::{soft_open_files, RESERVED_DESCRIPTORS};
    if !tuning.fixed_files {
        return Ok(0);
    }
    let limit = soft_open_files()?;
    let shards = shards.max(1) as u64;
    let each = limit.saturating_sub(RESERVED_DESCRIPTORS) / shards;
    if each < MIN_SLOTS {
        let wanted = RESERVED_DESCRIPTORS + shards * u64::from(stream::SLOTS);
        return Err(std::io::Error::other(format!(
            "the open-file limit is {limit} descriptors, too few for io-uring's registered \
             files ({MIN_SLOTS} per ring at least, on {shards} ring(s), besides \
             {RESERVED_DESCRIPTORS} for the process): raise it with `ulimit -n {wanted}` \
             (as root if the hard limit, `ulimit -Hn`, is lower) before starting serve, or \
             serve with --uring-fixed-files off"
        )));
    }
    Ok(u32::try_from(each).unwrap_or(u32::MAX).min(stream::SLOTS))
}

/// Starts one shard thread per ring, each pinned like the other backends' runtime threads.
pub fn start(
    o: &ServeOptions,
    registry: &Arc<Registry>,
    closing: &Arc<AtomicBool>,
) -> std::io::Result<Started> {
    probe()?;
    let shards = match o.io_model {
        IoModel::Shared => 1,
        IoModel::Sharded => o.io_threads,
    };
    let slots = if o.protocol == Protocol::Udp {
        1
    } else {
        file_slots(o.ring, shards)?
    };
    let stop = Arc::new(AtomicBool::new(false));
    let mut address = o.listen;
    let mut threads: Vec<JoinHandle<RingCounters>> = Vec::with_capacity(shards);
    for index in 0..shards {
        let shard = ShardContext {
            index,
            options: o.clone(),
            registry: registry.clone(),
            closing: closing.clone(),
            stop: stop.clone(),
            slots,
            ready: None,
        };
        let (ready, started) = std::sync::mpsc::channel();
        let failed = ready.clone();
        let shard = ShardContext {
            ready: Some(ready),
            ..shard
        };
        let thread = if o.protocol == Protocol::Udp {
            let socket = crate::traffic::sockets::udp_listener(
                address,
                o.udp_send_buffer,
                o.udp_recv_buffer,
            )?;
            address = socket.local_addr()?;
            spawn(index, failed, move || datagram::serve(shard, socket))?
        } else {
            let listener = crate::traffic::sockets::tcp_listener(address)?;
            address = listener.local_addr()?;
            let how = Echo::of(o);
            spawn(index, failed, move || match how {
                Echo::Framed(protocol) => {
                    stream::serve(shard, listener, ServerFraming::of(protocol), false)
                }
                Echo::Bytes => stream::serve(shard, listener, LengthPrefix, true),
            })?
        };
        threads.push(thread);
        // The ring and its buffers exist before the listening line is printed, or `serve`
        // fails with the reason.
        match started.recv_timeout(SETUP_LIMIT) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(std::io::Error::other(e)),
            Err(why) => return Err(std::io::Error::other(ShardSilent { index, why })),
        }
    }
    let registry = registry.clone();
    Ok(Started {
        address,
        stop: Box::new(move || {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let mut total = RingCounters::default();
            for thread in threads {
                if let Ok(stats) = thread.join() {
                    total.add(&stats);
                }
            }
            registry.set_ring_stats(total);
        }),
    })
}

/// What a shard thread needs from `serve`.
pub(crate) struct ShardContext {
    pub index: usize,
    pub options: ServeOptions,
    pub registry: Arc<Registry>,
    pub closing: Arc<AtomicBool>,
    /// Set when the shard must stop.
    pub stop: Arc<AtomicBool>,
    /// Registered file slots of the shard's ring.
    pub slots: u32,
    /// Told once the shard is set up (or why it could not be).
    pub ready: Option<std::sync::mpsc::Sender<Result<(), ShardFailed>>>,
}

impl ShardContext {
    /// Pins this thread and builds its ring (its SQPOLL thread, if any, on the same CPU).
    fn driver(&self, slots: u32) -> std::io::Result<driver::Driver> {
        let cpus = self.options.server_cpus.as_ref();
        crate::placement::pin_runtime_thread(cpus, self.index).map_err(std::io::Error::other)?;
        driver::Driver::new(
            self.options.ring,
            slots,
            cpus.map(|c| c.for_runtime(self.index)),
        )
    }

    /// Tells `start` the shard is serving.
    fn serving(&mut self) {
        if let Some(ready) = self.ready.take() {
            let _ = ready.send(Ok(()));
        }
    }

    fn stopping(&self) -> bool {
        self.stop.load(std::sync::atomic::Ordering::Relaxed)
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

/// Why `start` heard nothing from a shard: it did not report within `SETUP_LIMIT`
/// (`Timeout`), or its thread ended without a word (`Disconnected`: it panicked).
#[derive(Debug, thiserror::Error)]
#[error("an io_uring shard did not start")]
pub struct ShardSilent {
    pub index: usize,
    #[source]
    pub why: std::sync::mpsc::RecvTimeoutError,
}

/// Runs a shard on a thread of its own; a shard that fails before it serves tells `start`
/// why, one that fails later says so on stderr.
fn spawn(
    index: usize,
    failed: std::sync::mpsc::Sender<Result<(), ShardFailed>>,
    serve: impl FnOnce() -> std::io::Result<RingCounters> + Send + 'static,
) -> std::io::Result<JoinHandle<RingCounters>> {
    std::thread::Builder::new()
        .name(format!("echomark-ring-{index}"))
        .spawn(move || match serve() {
            Ok(stats) => stats,
            Err(source) => {
                // Before serving, `start` hears why; later nobody listens, so stderr does.
                if let Err(unheard) = failed.send(Err(ShardFailed { index, source })) {
                    if let Err(why) = unheard.0 {
                        eprintln!("echomark-runner serve: {why}");
                    }
                }
                RingCounters::default()
            }
        })
}

/// The peer address a kernel wrote into `name` (a `sockaddr_in` or `sockaddr_in6`), if it
/// is one.
fn peer_of(name: &[u8]) -> Option<SocketAddr> {
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

    /// A shard that says nothing is reported as before, with why it was not heard as the
    /// source.
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
