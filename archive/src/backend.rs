//! What measured a run: one of echomark's own backends, or a stack or server known by its
//! name. What each own backend can do is declared in [`crate::capabilities`].

use std::fmt;

use serde::{Deserialize, Serialize};

/// What measured a run (an archive's `backend`, a case key's, a metrics record's): one of
/// echomark's own backends, or a stack or server known only by its name. In JSON it is
/// that name, so archives read and write as before.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub enum Backend {
    /// echomark-runner on tokio (epoll).
    #[default]
    Tokio,
    /// echomark-runner on monoio (io_uring through a runtime).
    Monoio,
    /// echomark-runner's io_uring event loop, without a runtime (`serve` only).
    IoUring,
    /// An external server, by its `--server-name`, or another program's stack (arknet's
    /// `standalone`, `boost`).
    Named(String),
}

impl Backend {
    /// echomark's own backends, in the order listings show them.
    pub const OWN: &'static [Backend] = &[Backend::Tokio, Backend::Monoio, Backend::IoUring];

    /// The backend a name stands for: an own backend's name is that backend.
    pub fn named(name: &str) -> Self {
        match name {
            "tokio" => Backend::Tokio,
            "monoio" => Backend::Monoio,
            "io-uring" => Backend::IoUring,
            other => Backend::Named(other.to_string()),
        }
    }

    /// The name, as archives and the command line spell it.
    pub fn as_str(&self) -> &str {
        match self {
            Backend::Tokio => "tokio",
            Backend::Monoio => "monoio",
            Backend::IoUring => "io-uring",
            Backend::Named(name) => name,
        }
    }

    /// Whether it is one of echomark's own backends.
    pub fn is_runtime(&self) -> bool {
        !matches!(self, Backend::Named(_))
    }
}

// Ordered by name, as the strings were: listings and sorted sets keep their order.
impl Ord for Backend {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for Backend {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq<str> for Backend {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Backend {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&str> for Backend {
    fn from(name: &str) -> Self {
        Backend::named(name)
    }
}

impl Serialize for Backend {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Backend {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Ok(Backend::named(&name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backend_is_its_name_in_json_and_sorts_by_it() {
        for name in ["tokio", "monoio", "io-uring", "nginx", "standalone"] {
            let b = Backend::named(name);
            assert_eq!(serde_json::to_string(&b).unwrap(), format!("\"{name}\""));
            let back: Backend = serde_json::from_str(&format!("\"{name}\"")).unwrap();
            assert_eq!(back, b);
        }
        assert_eq!(Backend::named("monoio"), Backend::Monoio);
        assert_eq!(Backend::named("io-uring"), Backend::IoUring);
        assert!(Backend::named("nginx") < Backend::Tokio && Backend::Monoio < Backend::Tokio);
        assert!(!Backend::named("socat").is_runtime());
    }
}
