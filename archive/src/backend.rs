//! Which IO models each backend can run: the one rule the runner uses to drop models from a
//! matrix and the validator uses to know what a complete archive holds.
//!
//! tokio runs every model. monoio is thread-per-core: one runtime per thread, no work
//! stealing, so `shared N` with N > 1 (one runtime driven by N threads) does not exist there;
//! `shared 1` and `sharded N` do. Backends this crate does not know (arknet's stacks, an
//! external server) are not restricted.

use crate::key::IoModel;

/// Why `backend` cannot run `io_model` with `io_threads` threads, or `None` when it can.
pub fn unsupported(backend: &str, io_model: IoModel, io_threads: u64) -> Option<&'static str> {
    match (backend, io_model) {
        ("monoio", IoModel::Shared) if io_threads > 1 => Some(
            "monoio is thread-per-core: a runtime is driven by one thread, so a shared runtime \
             with several threads does not exist (use sharded N)",
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_monoio_shared_with_several_threads_is_dropped() {
        assert!(unsupported("monoio", IoModel::Shared, 2).is_some());
        assert!(unsupported("monoio", IoModel::Shared, 1).is_none());
        assert!(unsupported("monoio", IoModel::Sharded, 4).is_none());
        assert!(unsupported("tokio", IoModel::Shared, 4).is_none());
        assert!(unsupported("boost-asio", IoModel::Shared, 4).is_none());
    }
}
