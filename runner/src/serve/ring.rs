//! `serve --backend io-uring`: the server half of [`crate::iouring`]'s shards, one thread
//! per ring (`shared 1` or `sharded N`), each with its own listener (TCP) or socket (UDP)
//! on one port (`SO_REUSEPORT`), reporting into `serve`'s [`Registry`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use echomark_archive::{IoModel, Protocol};

use crate::iouring::{self, server, Alone, Hooks, ShardContext};
pub use crate::iouring::{RingCounters, Tuning};
use crate::traffic::stream::{IdleLimit, ServerDuty};

use super::{Echo, Registry, ServeOptions, Started};
use crate::framing::codecs::ServerFraming;
use crate::framing::prefix::LengthPrefix;

/// The fewest registered file slots a ring serves with: fewer connections is no server.
const MIN_SLOTS: u64 = 64;

/// The registered file slots of each of `shards` rings: as many as connections the soft
/// open-file limit leaves room for besides the process's own descriptors, shared among the
/// rings, at most [`server::SLOTS`] each (none without `--uring-fixed-files`). A limit too
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
        let wanted = RESERVED_DESCRIPTORS + shards * u64::from(server::SLOTS);
        return Err(std::io::Error::other(format!(
            "the open-file limit is {limit} descriptors, too few for io-uring's registered \
             files ({MIN_SLOTS} per ring at least, on {shards} ring(s), besides \
             {RESERVED_DESCRIPTORS} for the process): raise it with `ulimit -n {wanted}` \
             (as root if the hard limit, `ulimit -Hn`, is lower) before starting serve, or \
             serve with --uring-fixed-files off"
        )));
    }
    Ok(u32::try_from(each).unwrap_or(u32::MAX).min(server::SLOTS))
}

/// `serve`'s registry as a shard's [`Hooks`]: every connection's counters join the report.
struct ServeHooks {
    registry: Arc<Registry>,
    work: u64,
    closing: Arc<AtomicBool>,
}

impl Hooks for ServeHooks {
    fn duty(&self) -> ServerDuty {
        self.registry.duty(self.work, &self.closing)
    }
    fn connected(&self) {
        self.registry.connections.fetch_add(1, Ordering::Relaxed);
    }
    fn raw_echoed(&self, bytes: u64) {
        self.registry.raw_bytes.fetch_add(bytes, Ordering::Relaxed);
    }
    fn handshake_failed(&self) {
        self.registry
            .handshake_failures
            .fetch_add(1, Ordering::Relaxed);
    }
    fn idle_limit(&self) -> Option<IdleLimit> {
        self.registry.idle_limit()
    }
}

/// Starts one shard thread per ring, each pinned like the other backends' runtime threads.
pub fn start(
    o: &ServeOptions,
    registry: &Arc<Registry>,
    closing: &Arc<AtomicBool>,
) -> std::io::Result<Started> {
    iouring::probe()?;
    let shards = match o.io_model {
        IoModel::Shared => 1,
        IoModel::Sharded => o.io_threads,
    };
    let slots = if o.protocol == Protocol::Udp {
        1
    } else {
        file_slots(o.ring, shards)?
    };
    let hooks: Arc<dyn Hooks> = Arc::new(ServeHooks {
        registry: registry.clone(),
        work: o.work,
        closing: closing.clone(),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let mut address = o.listen;
    let mut threads: Vec<JoinHandle<RingCounters>> = Vec::with_capacity(shards);
    for index in 0..shards {
        let (ready, started) = std::sync::mpsc::channel();
        let failed = ready.clone();
        let shard = ShardContext {
            index,
            tuning: o.ring,
            protocol: o.protocol,
            cpus: o.server_cpus.clone(),
            hooks: hooks.clone(),
            stop: stop.clone(),
            slots,
            paired: false,
            ready: Some(ready),
        };
        let name = format!("echomark-ring-{index}");
        let thread = if o.protocol == Protocol::Udp {
            let socket = crate::traffic::sockets::udp_listener(
                address,
                o.udp_send_buffer,
                o.udp_recv_buffer,
            )?;
            address = socket.local_addr()?;
            iouring::spawn(name, index, failed, move || {
                server::datagram::serve(shard, socket, Alone)
            })?
        } else {
            let listener = crate::traffic::sockets::tcp_listener(address)?;
            address = listener.local_addr()?;
            let how = Echo::of(o);
            iouring::spawn(name, index, failed, move || match how {
                Echo::Framed(protocol) => server::stream::serve(
                    shard,
                    Some(listener),
                    ServerFraming::of(protocol),
                    false,
                    Alone,
                ),
                Echo::Bytes => {
                    server::stream::serve(shard, Some(listener), LengthPrefix, true, Alone)
                }
            })?
        };
        threads.push(thread);
        // The ring and its buffers exist before the listening line is printed, or `serve`
        // fails with the reason.
        iouring::started(index, &started)?;
    }
    let registry = registry.clone();
    Ok(Started {
        address,
        stop: Box::new(move || {
            stop.store(true, Ordering::Relaxed);
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
