//! What each of echomark's own backends can do: the one place the runner (`once`, `serve`,
//! the matrix) and the validator learn which roles, IO models, protocols and options a
//! backend supports.
//!
//! tokio runs every model, protocol and option. monoio is thread-per-core: one runtime per
//! thread, no work stealing, so `shared N` with N > 1 (one runtime driven by N threads) does
//! not exist there; `shared 1` and `sharded N` do. The io_uring event loop (`io-uring`)
//! runs one ring per thread too, and measures (in process, or against a target) as well as
//! serves, but neither TLS nor QUIC. Backends this crate does not know (arknet's stacks, an external server) are
//! not restricted.

use crate::backend::Backend;
use crate::key::{IoModel, Protocol};

/// What a backend is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Client and server in one process (`once`, `matrix`).
    InProcess,
    /// echomark's client against another server (`once --target`, `matrix --server-*`).
    Client,
    /// echomark's server for clients elsewhere (`serve`).
    Server,
}

impl Role {
    /// The command that asks for it, for refusals.
    fn command(self) -> &'static str {
        match self {
            Role::InProcess => "an in-process measurement (once, matrix)",
            Role::Client => "a client (once --target)",
            Role::Server => "serve",
        }
    }
}

/// Whether a backend supports something: `Err` holds why not, as refusals say it.
pub type Support = Result<(), &'static str>;

/// What one of echomark's own backends can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// The roles it plays.
    pub roles: &'static [Role],
    /// One runtime driven by several threads (`shared N`, N > 1).
    pub shared_threads: Support,
    /// TLS protocols: tcps, wss, https.
    pub tls: Support,
    /// The QUIC protocols (quinn).
    pub quic: Support,
    /// Open loop (`--rate`).
    pub open_loop: Support,
    /// UDP batching (`--udp-batch`, `--udp-gso`: recvmmsg/sendmmsg).
    pub udp_batch: Support,
    /// The `stall` fault (`--inject-fault stall`).
    pub stall_fault: Support,
}

const TOKIO: Capabilities = Capabilities {
    roles: &[Role::InProcess, Role::Client, Role::Server],
    shared_threads: Ok(()),
    tls: Ok(()),
    quic: Ok(()),
    open_loop: Ok(()),
    udp_batch: Ok(()),
    stall_fault: Ok(()),
};

const MONOIO: Capabilities = Capabilities {
    roles: &[Role::InProcess, Role::Client, Role::Server],
    shared_threads: Err(
        "monoio is thread-per-core: a runtime is driven by one thread, so a shared runtime \
         with several threads does not exist (use sharded N)",
    ),
    tls: Ok(()),
    quic: Err("quinn runs on tokio"),
    open_loop: Err("measured on tokio only"),
    udp_batch: Err("recvmmsg/sendmmsg run on tokio's sockets"),
    stall_fault: Ok(()),
};

const IO_URING: Capabilities = Capabilities {
    roles: &[Role::InProcess, Role::Client, Role::Server],
    shared_threads: Err(
        "io-uring runs one ring per thread: use --io-model shared with 1 thread or \
         --io-model sharded N",
    ),
    tls: Err("TCP, UDP, HTTP and WebSocket are"),
    quic: Err("quinn runs on tokio"),
    open_loop: Ok(()),
    udp_batch: Err(
        "io-uring's multishot receive takes every queued datagram without a call per datagram",
    ),
    stall_fault: Err("the event loop has no task to stall"),
};

impl Backend {
    /// What it can do; `None` for a backend this crate does not know (not restricted).
    pub fn capabilities(&self) -> Option<&'static Capabilities> {
        match self {
            Backend::Tokio => Some(&TOKIO),
            Backend::Monoio => Some(&MONOIO),
            Backend::IoUring => Some(&IO_URING),
            Backend::Named(_) => None,
        }
    }

    /// The own backends that play `role`: what a command's `--backend` accepts.
    pub fn playing(role: Role) -> impl Iterator<Item = &'static Backend> {
        Self::OWN.iter().filter(move |b| b.plays(role))
    }

    /// Whether it plays `role` (a backend this crate does not know plays none).
    pub fn plays(&self, role: Role) -> bool {
        self.capabilities().is_some_and(|c| c.roles.contains(&role))
    }

    /// Why it cannot play `role`, or `None` when it can.
    pub fn refuse_role(&self, role: Role) -> Option<String> {
        (!self.plays(role)).then(|| {
            let names: Vec<&str> = Self::playing(role).map(Backend::as_str).collect();
            format!(
                "--backend {self} cannot run {}; {} can",
                role.command(),
                names.join(", ")
            )
        })
    }

    /// Why it cannot run `io_model` with `io_threads` threads, or `None` when it can.
    pub fn refuse_model(&self, io_model: IoModel, io_threads: u64) -> Option<&'static str> {
        let c = self.capabilities()?;
        (io_model == IoModel::Shared && io_threads > 1)
            .then_some(c.shared_threads.err())
            .flatten()
    }

    /// Why it cannot measure or serve `protocol`, or `None` when it can.
    pub fn refuse_protocol(&self, protocol: Protocol) -> Option<String> {
        let c = self.capabilities()?;
        let why = if protocol.is_quic() {
            c.quic.err()
        } else if protocol.uses_tls() {
            c.tls.err()
        } else {
            None
        }?;
        Some(format!(
            "--protocol {protocol} is not supported by --backend {self} ({why})"
        ))
    }

    /// Why it cannot run with `support` (one of its capabilities' fields), named `what`
    /// in the refusal, or `None` when it can.
    pub fn refuse(&self, support: fn(&Capabilities) -> Support, what: &str) -> Option<String> {
        let why = support(self.capabilities()?).err()?;
        Some(format!(
            "{what} is not supported by --backend {self} ({why})"
        ))
    }
}

/// Why `backend` (by name) cannot run `io_model` with `io_threads` threads, or `None`
/// when it can: what the matrix drops and the validator expects an archive to lack.
pub fn unsupported(backend: &str, io_model: IoModel, io_threads: u64) -> Option<&'static str> {
    Backend::named(backend).refuse_model(io_model, io_threads)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_own_backend_declares_its_roles_and_limits_in_one_place() {
        let servers: Vec<&str> = Backend::playing(Role::Server)
            .map(Backend::as_str)
            .collect();
        assert_eq!(servers, ["tokio", "monoio", "io-uring"]);
        let in_process: Vec<&str> = Backend::playing(Role::InProcess)
            .map(Backend::as_str)
            .collect();
        assert_eq!(in_process, ["tokio", "monoio", "io-uring"]);
        let refused = Backend::named("nginx")
            .refuse_role(Role::InProcess)
            .unwrap();
        assert!(refused.contains("tokio, monoio, io-uring can"), "{refused}");
        assert!(Backend::named("nginx").refuse_role(Role::Server).is_some());
        assert!(Backend::Tokio
            .refuse_protocol(Protocol::QuicStreams)
            .is_none());
        let quic = Backend::Monoio
            .refuse_protocol(Protocol::QuicStreams)
            .unwrap();
        assert!(quic.contains("quinn runs on tokio"), "{quic}");
        assert!(Backend::IoUring.refuse_protocol(Protocol::Https).is_some());
        assert!(Backend::IoUring
            .refuse_protocol(Protocol::Websocket)
            .is_none());
        assert!(Backend::Monoio
            .refuse(|c| c.open_loop, "--rate")
            .is_some_and(|m| m.contains("tokio only")));
        assert!(Backend::IoUring
            .refuse(|c| c.stall_fault, "--inject-fault stall")
            .is_some());
        assert!(Backend::Tokio
            .refuse(|c| c.udp_batch, "--udp-batch")
            .is_none());
        assert!(Backend::named("socat")
            .refuse(|c| c.udp_batch, "--udp-batch")
            .is_none());
    }

    #[test]
    fn only_shared_runtimes_with_several_threads_are_refused_where_unsupported() {
        assert!(unsupported("monoio", IoModel::Shared, 2).is_some());
        assert!(unsupported("io-uring", IoModel::Shared, 2).is_some());
        assert!(unsupported("monoio", IoModel::Shared, 1).is_none());
        assert!(unsupported("monoio", IoModel::Sharded, 4).is_none());
        assert!(unsupported("tokio", IoModel::Shared, 4).is_none());
        assert!(unsupported("boost-asio", IoModel::Shared, 4).is_none());
    }
}
