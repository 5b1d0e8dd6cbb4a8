//! The IO models on monoio: thread-per-core runtimes on io_uring.
//!
//! * `shared 1`: one runtime on one thread;
//! * `sharded N`: N runtimes, one thread each.
//!
//! (`shared N > 1` does not exist on monoio: [`echomark_archive::unsupported`].) Placement is
//! tokio's: client `i` and the server side of its connection live on shard `i mod N`, or
//! apart (`--server-cpus`) the server side on server shard `i mod N`.
//!
//! A monoio task is not `Send`, so nothing is spawned from the orchestrator thread: it sends
//! each shard a [`Job`], a `Send` closure that runs on the shard's thread, inside its runtime,
//! and builds the task there from `Send` parts (std sockets, `Arc`s, channels). Every task
//! is counted while it lives, which is how stopping the runtimes knows when clients and servers
//! have ended.
//!
//! Each runtime is built with monoio's `IoUringDriver` directly, never the fusion driver that
//! falls back to epoll: without io_uring the build fails, and the run fails with that
//! reason, so nothing is ever measured on epoll under the io_uring name.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use echomark_archive::IoModel;

use super::runtimes::io_uring_disabled_sysctl;
use super::runtimes::{Runtimes, CLIENT_STOP_GRACE, SERVER_STOP_GRACE};
use crate::placement::{self, CpuList};
use crate::traffic::uring::shut_down_open_sockets;
pub use crate::traffic::uring::{stopping, OpenSocket};

/// Submission queue entries of each ring (monoio's default is 1,024).
const RING_ENTRIES: u32 = 1024;

/// Work for a shard, run on its thread inside its runtime.
pub type Job = Box<dyn FnOnce() + Send>;

/// Tasks of one kind that are still alive.
#[derive(Debug, Clone, Default)]
pub struct TaskCount(Arc<AtomicUsize>);

/// Decrements its count when the task it lives in ends or is dropped.
struct Alive(Arc<AtomicUsize>);

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl TaskCount {
    fn start(&self) -> Alive {
        self.0.fetch_add(1, Ordering::AcqRel);
        Alive(self.0.clone())
    }

    fn is_zero(&self) -> bool {
        self.0.load(Ordering::Acquire) == 0
    }

    /// Waits until no task of this kind lives or `grace` has passed.
    fn wait(&self, grace: Duration) {
        let deadline = Instant::now() + grace;
        while !self.is_zero() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Why monoio cannot run here.
#[derive(Debug, thiserror::Error)]
pub enum UringError {
    #[error(
        "--backend monoio needs io_uring, and this kernel does not offer the operations monoio \
         uses ({detail}); nothing was measured (it would have been epoll under the io_uring name)"
    )]
    Unavailable { detail: String },
    #[error("cannot start a monoio runtime thread: {0}")]
    Thread(std::io::Error),
    #[error(transparent)]
    Pin(crate::placement::PlacementError),
}

/// monoio's own probe: a ring can be created and supports every operation monoio uses.
/// `MONOIO_FORCE_LEGACY_DRIVER=1` makes it answer no (how tests simulate a kernel without
/// io_uring).
pub fn probe() -> Result<(), UringError> {
    if monoio::utils::detect_uring() {
        return Ok(());
    }
    let sysctl = match io_uring_disabled_sysctl() {
        Some(v) => format!("kernel.io_uring_disabled = {v}"),
        None => "kernel.io_uring_disabled unreadable".to_string(),
    };
    let forced = std::env::var_os("MONOIO_FORCE_LEGACY_DRIVER").is_some();
    let detail = if forced {
        format!("MONOIO_FORCE_LEGACY_DRIVER is set; {sysctl}")
    } else {
        format!("monoio's probe failed; {sysctl}")
    };
    Err(UringError::Unavailable { detail })
}

/// One runtime thread.
struct Shard {
    jobs: Option<tokio::sync::mpsc::UnboundedSender<Job>>,
    thread: Option<JoinHandle<()>>,
}

/// monoio's runtimes for one measurement and the count of tasks on them.
pub struct MonoioRuntimes {
    shards: Vec<Shard>,
    /// In process with `--server-cpus`: the server's own runtimes (as many as the client's),
    /// where the server side of every connection runs; empty when it runs on its client's.
    server_shards: Vec<Shard>,
    pub clients: TaskCount,
    pub servers: TaskCount,
    /// Every other task (a client's reader and writer).
    pub helpers: TaskCount,
}

impl MonoioRuntimes {
    /// The runtimes of `model` with `threads` threads, each on io_uring, no tasks yet.
    /// With `cpus`, runtime thread `i` is pinned to the list's `i mod len`-th CPU; with
    /// `server_cpus`, as many again for the server, pinned there (threads named
    /// `echomark-server`).
    pub fn start(
        model: IoModel,
        threads: usize,
        cpus: Option<&CpuList>,
        server_cpus: Option<&CpuList>,
    ) -> Result<Self, UringError> {
        probe()?;
        let count = match model {
            IoModel::Shared => 1,
            IoModel::Sharded => threads,
        };
        let side = |name: &str, cpus: Option<&CpuList>| {
            (0..count)
                .map(|index| Shard::start(format!("{name}-{index}"), index, cpus))
                .collect::<Result<Vec<_>, _>>()
        };
        let shards = side("echomark-uring", cpus)?;
        let server_shards = match server_cpus {
            Some(cpus) => side(super::runtimes::SERVER_THREADS.shard, Some(cpus))?,
            None => Vec::new(),
        };
        Ok(Self {
            shards,
            server_shards,
            clients: TaskCount::default(),
            servers: TaskCount::default(),
            helpers: TaskCount::default(),
        })
    }

    /// Number of runtimes.
    pub fn len(&self) -> usize {
        self.shards.len()
    }

    /// Always false: there is at least one runtime.
    pub fn is_empty(&self) -> bool {
        self.shards.is_empty()
    }

    /// Runs `job` on the runtime of client `index`.
    pub fn run(&self, index: usize, job: Job) -> std::io::Result<()> {
        run_on(&self.shards, index, job)
    }

    /// The runtimes the server side of the connections runs on: its own when apart.
    fn server_side(&self) -> &[Shard] {
        if self.server_shards.is_empty() {
            &self.shards
        } else {
            &self.server_shards
        }
    }

    /// A handle that sends jobs to these runtimes from another thread. A runtime stops only
    /// once every such handle is gone, so drop them before [`Self::shut_down`].
    pub fn queues(&self) -> JobQueues {
        JobQueues(self.shards.iter().filter_map(|s| s.jobs.clone()).collect())
    }

    /// Lets the tasks end (clients first, then servers, their sockets shut down) and joins
    /// every runtime thread, as at the end of a measurement.
    pub fn shut_down(self) {
        Runtimes::stop(self);
    }

    /// Runs `make` on the runtime of client `index` and waits up to `limit` for its answer.
    pub fn ask<T, F, Fut>(&self, index: usize, limit: Duration, make: F) -> std::io::Result<T>
    where
        T: Send + 'static,
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = std::io::Result<T>> + 'static,
    {
        ask_on(&self.shards, index, limit, make)
    }

    /// [`Self::ask`] on the runtime of the server side of client `index`'s connection.
    pub fn ask_server<T, F, Fut>(
        &self,
        index: usize,
        limit: Duration,
        make: F,
    ) -> std::io::Result<T>
    where
        T: Send + 'static,
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = std::io::Result<T>> + 'static,
    {
        ask_on(self.server_side(), index, limit, make)
    }
}

/// Runs `job` on runtime `index mod N` of `shards`.
fn run_on(shards: &[Shard], index: usize, job: Job) -> std::io::Result<()> {
    let shard = &shards[index % shards.len()];
    shard
        .jobs
        .as_ref()
        .and_then(|jobs| jobs.send(job).ok())
        .ok_or_else(stopped)
}

/// Runs `make` on runtime `index mod N` of `shards` and waits up to `limit` for its answer.
fn ask_on<T, F, Fut>(shards: &[Shard], index: usize, limit: Duration, make: F) -> std::io::Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = std::io::Result<T>> + 'static,
{
    let (answer, answered) = mpsc::channel();
    run_on(
        shards,
        index,
        Box::new(move || {
            monoio::spawn(async move {
                let _ = answer.send(make().await);
            });
        }),
    )?;
    answered
        .recv_timeout(limit)
        .map_err(|_| std::io::Error::other("a monoio runtime did not answer in time"))?
}

fn stopped() -> std::io::Error {
    std::io::Error::other("a monoio runtime thread has stopped")
}

/// The job queues of a set of runtimes, for a thread other than the one that owns them.
#[derive(Clone)]
pub struct JobQueues(Vec<tokio::sync::mpsc::UnboundedSender<Job>>);

impl JobQueues {
    /// Runs `job` on runtime `index mod N`.
    pub fn run(&self, index: usize, job: Job) -> std::io::Result<()> {
        match self.0.get(index % self.0.len().max(1)) {
            Some(jobs) => jobs.send(job).map_err(|_| stopped()),
            None => Err(stopped()),
        }
    }
}

/// Spawns `task` on the current monoio runtime, counted in `count` while it lives. Called
/// from inside a [`Job`].
pub fn spawn_counted(count: &TaskCount, task: impl Future<Output = ()> + 'static) {
    let alive = count.start();
    monoio::spawn(async move {
        let _alive = alive;
        task.await;
    });
}

/// The IO driver the current runtime runs on: `"io_uring"` or `"epoll"` (monoio's legacy
/// driver). Called from inside a runtime.
pub fn current_driver() -> &'static str {
    if monoio::utils::is_legacy() {
        "epoll"
    } else {
        "io_uring"
    }
}

impl Shard {
    fn start(name: String, index: usize, cpus: Option<&CpuList>) -> Result<Self, UringError> {
        let (jobs, mut queue) = tokio::sync::mpsc::unbounded_channel::<Job>();
        let (built, build_result) = mpsc::channel::<Result<(), UringError>>();
        let cpus = cpus.cloned();
        let thread = std::thread::Builder::new()
            .name(name)
            .spawn(move || {
                if let Err(e) = placement::pin_runtime_thread(cpus.as_ref(), index) {
                    let _ = built.send(Err(UringError::Pin(e)));
                    return;
                }
                let runtime = monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
                    .with_entries(RING_ENTRIES)
                    .enable_timer()
                    .build();
                let mut runtime = match runtime {
                    Ok(rt) => {
                        let _ = built.send(Ok(()));
                        rt
                    }
                    Err(e) => {
                        let _ = built.send(Err(UringError::Unavailable {
                            detail: format!("building an io_uring runtime failed: {e}"),
                        }));
                        return;
                    }
                };
                runtime.block_on(async move {
                    while let Some(job) = queue.recv().await {
                        job();
                    }
                });
                // Dropping the runtime drops every task still on it.
            })
            .map_err(UringError::Thread)?;
        match build_result.recv() {
            Ok(Ok(())) => Ok(Shard {
                jobs: Some(jobs),
                thread: Some(thread),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(UringError::Unavailable {
                    detail: "the runtime thread ended while building its ring".into(),
                })
            }
        }
    }

    fn stop(&mut self) {
        // Closing the job queue ends the runtime's `block_on`.
        self.jobs.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Runtimes for MonoioRuntimes {
    fn stop(mut self) -> Option<echomark_archive::RingCounters> {
        self.clients.wait(CLIENT_STOP_GRACE);
        for side in [&self.shards, &self.server_shards] {
            for index in 0..side.len() {
                let _ = run_on(side, index, Box::new(shut_down_open_sockets));
            }
        }
        self.servers.wait(SERVER_STOP_GRACE);
        self.helpers.wait(SERVER_STOP_GRACE);
        for shard in self.shards.iter_mut().chain(&mut self.server_shards) {
            shard.stop();
        }
        None
    }
}

impl Drop for MonoioRuntimes {
    fn drop(&mut self) {
        for shard in self.shards.iter_mut().chain(&mut self.server_shards) {
            shard.stop();
        }
    }
}
