//! The IO models on tokio: where tasks run.
//!
//! * `shared N`: one runtime. N = 1 is a current-thread runtime driven by one dedicated
//!   thread; N > 1 is a multi-thread runtime with N workers, which may move tasks between
//!   threads.
//! * `sharded N`: N current-thread runtimes, each driven by its own OS thread.
//!
//! Placement (the orchestrator decides it, not the scheduler): client `i` runs on shard
//! `i mod N`, and the server side of its TCP connection is spawned on the same shard, so a
//! sharded connection never crosses threads. For UDP every shard has its own server socket
//! and its clients send to that socket; `shared` has one server socket.
//!
//! Apart (`--server-cpus`): the server gets a second topology of the same model and size,
//! pinned to its own CPUs, and the server side of client `i`'s connection (or its UDP
//! socket, or QUIC endpoint) runs on server runtime `i mod N` instead: every echo then
//! crosses from a client thread to a server thread and back.

use std::future::Future;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::runtime::{Builder, Handle, Runtime};
use tokio::sync::oneshot;

use echomark_archive::IoModel;

use super::runtimes::{
    Runtimes, ThreadNames, CLIENT_STOP_GRACE, RUNTIME_STOP_GRACE, SERVER_STOP_GRACE, SERVER_THREADS,
};
use crate::placement::{self, CpuList};
use crate::traffic::pacing::SendClock;

/// tokio's runtimes for one measurement and the tasks spawned on them.
pub struct TokioRuntimes {
    pub topology: Topology,
    /// In process with `--server-cpus`: the server's own runtimes, where the server side of
    /// every connection runs; `None` when it runs on its client's runtime.
    pub server_topology: Option<Topology>,
    pub server_tasks: Vec<tokio::task::JoinHandle<()>>,
    pub client_tasks: Vec<tokio::task::JoinHandle<()>>,
    /// Open loop: one send clock per runtime that has open-loop clients, and its task.
    pub clocks: Vec<Option<Arc<SendClock>>>,
    pub clock_tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl TokioRuntimes {
    /// The runtimes of `model` with `threads` threads, each pinned to its CPU of `cpus`
    /// when a list is given, no tasks yet; with `server_cpus`, as many again for the server,
    /// pinned there (threads named `echomark-server`).
    pub fn start(
        model: IoModel,
        threads: usize,
        cpus: Option<&CpuList>,
        server_cpus: Option<&CpuList>,
    ) -> std::io::Result<Self> {
        Ok(Self {
            topology: Topology::start(model, threads, cpus)?,
            server_topology: server_cpus
                .map(|cpus| Topology::named(model, threads, Some(cpus), SERVER_THREADS))
                .transpose()?,
            server_tasks: Vec::new(),
            client_tasks: Vec::new(),
            clocks: Vec::new(),
            clock_tasks: Vec::new(),
        })
    }
}

impl TokioRuntimes {
    /// The runtime that hosts the server side of client `index`'s connection (its own
    /// runtime unless the server has runtimes of its own).
    pub fn server_handle_for(&self, index: usize) -> Handle {
        self.server_topology
            .as_ref()
            .unwrap_or(&self.topology)
            .handle_for(index)
    }
}

impl Runtimes for TokioRuntimes {
    fn stop(self) -> Option<echomark_archive::RingCounters> {
        let all_done =
            |tasks: &[tokio::task::JoinHandle<()>]| tasks.iter().all(|t| t.is_finished());
        let deadline = Instant::now() + CLIENT_STOP_GRACE;
        while !all_done(&self.client_tasks) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        // TCP servers end on their client's close; give them a moment, then abort the rest.
        let deadline = Instant::now() + SERVER_STOP_GRACE;
        while !all_done(&self.server_tasks) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        for task in self.server_tasks.iter().chain(&self.clock_tasks) {
            task.abort();
        }
        self.topology.shutdown(RUNTIME_STOP_GRACE);
        if let Some(server) = self.server_topology {
            server.shutdown(RUNTIME_STOP_GRACE);
        }
        None
    }
}

/// The names of the client's runtimes in process, and of `serve`'s.
const RUNTIME_THREADS: ThreadNames = ThreadNames {
    shard: "echomark-shard",
    pool: "echomark-shared",
};

/// The runtimes of one measurement.
pub struct Topology {
    shards: Vec<Shard>,
}

enum Shard {
    /// A current-thread runtime parked in `block_on` on its own thread until told to stop.
    Dedicated {
        handle: Handle,
        stop: Option<oneshot::Sender<()>>,
        thread: Option<JoinHandle<()>>,
    },
    /// A multi-thread runtime (shared with N > 1).
    Pool { runtime: Option<Runtime> },
}

impl Topology {
    /// Builds the runtimes for `model` with `threads` threads; with `cpus`, runtime thread
    /// `i` is pinned to the list's `i mod len`-th CPU (a pool's workers in the order they
    /// start).
    pub fn start(model: IoModel, threads: usize, cpus: Option<&CpuList>) -> std::io::Result<Self> {
        Self::named(model, threads, cpus, RUNTIME_THREADS)
    }

    /// [`Self::start`] with threads named `names`.
    pub fn named(
        model: IoModel,
        threads: usize,
        cpus: Option<&CpuList>,
        names: ThreadNames,
    ) -> std::io::Result<Self> {
        let shards = match (model, threads) {
            (IoModel::Shared, 1) => vec![Shard::dedicated(0, cpus, names)?],
            (IoModel::Shared, n) => {
                let mut builder = Builder::new_multi_thread();
                builder
                    .worker_threads(n)
                    .thread_name(names.pool)
                    .enable_all();
                if let Some(cpus) = cpus.cloned() {
                    let started = std::sync::atomic::AtomicUsize::new(0);
                    builder.on_thread_start(move || {
                        let index = started.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        // A client's process is already narrowed to the list, so a worker
                        // that cannot take its one CPU still runs inside it; a server's
                        // CPUs were checked available before it started.
                        let _ = placement::pin_runtime_thread(Some(&cpus), index);
                    });
                }
                let runtime = builder.build()?;
                vec![Shard::Pool {
                    runtime: Some(runtime),
                }]
            }
            (IoModel::Sharded, n) => (0..n)
                .map(|i| Shard::dedicated(i, cpus, names))
                .collect::<Result<_, _>>()?,
        };
        Ok(Self { shards })
    }

    /// Number of independent runtimes.
    pub fn len(&self) -> usize {
        self.shards.len()
    }

    /// Always false: a topology has at least one runtime.
    pub fn is_empty(&self) -> bool {
        self.shards.is_empty()
    }

    /// The position of the runtime that hosts client `index`.
    pub fn runtime_index(&self, index: usize) -> usize {
        index % self.shards.len()
    }

    /// The runtime that hosts client `index` (and its server side).
    pub fn handle_for(&self, index: usize) -> Handle {
        match &self.shards[index % self.shards.len()] {
            Shard::Dedicated { handle, .. } => handle.clone(),
            Shard::Pool { runtime } => runtime.as_ref().expect("running").handle().clone(),
        }
    }

    /// Spawns `future` on the runtime of client `index`.
    pub fn spawn<F>(&self, index: usize, future: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.handle_for(index).spawn(future)
    }

    /// Stops every runtime, giving remaining tasks `grace` to finish, and joins its threads.
    pub fn shutdown(mut self, grace: Duration) {
        for shard in &mut self.shards {
            match shard {
                Shard::Dedicated { stop, thread, .. } => {
                    if let Some(stop) = stop.take() {
                        let _ = stop.send(());
                    }
                    if let Some(thread) = thread.take() {
                        let _ = thread.join();
                    }
                }
                Shard::Pool { runtime } => {
                    if let Some(rt) = runtime.take() {
                        rt.shutdown_timeout(grace);
                    }
                }
            }
        }
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        for shard in &mut self.shards {
            if let Shard::Dedicated { stop, .. } = shard {
                if let Some(stop) = stop.take() {
                    let _ = stop.send(());
                }
            }
        }
    }
}

impl Shard {
    fn dedicated(
        index: usize,
        cpus: Option<&CpuList>,
        names: ThreadNames,
    ) -> std::io::Result<Self> {
        let runtime = Builder::new_current_thread().enable_all().build()?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let (pinned, pin_result) = std::sync::mpsc::channel();
        let cpus = cpus.cloned();
        let thread = std::thread::Builder::new()
            .name(format!("{}-{index}", names.shard))
            .spawn(move || {
                let pin = placement::pin_runtime_thread(cpus.as_ref(), index);
                let failed = pin.is_err();
                let _ = pinned.send(pin);
                if failed {
                    return;
                }
                runtime.block_on(async {
                    let _ = stopped.await;
                });
                // Dropping the runtime cancels whatever is still spawned on it.
                runtime.shutdown_timeout(Duration::from_millis(500));
            })?;
        pin_result
            .recv()
            .map_err(|_| std::io::Error::other("a runtime thread ended before it was pinned"))?
            .map_err(std::io::Error::other)?;
        Ok(Shard::Dedicated {
            handle,
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}
