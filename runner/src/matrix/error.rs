//! Why a matrix stops before (or instead of) measuring: each cause with its own source.

use super::{plan, store};

/// A problem that stops the matrix before (or instead of) measuring: exit 2.
#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    /// The request, or the archive it resumes, asks for what cannot be measured.
    #[error("{0}")]
    Refused(String),
    /// The system refused the matrix one of its own files, folders, processes or signals;
    /// `what` says which and what was attempted.
    #[error("{what}: {source}")]
    System {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A planned case the runner cannot measure.
    #[error("case {label}: {source}")]
    Case {
        label: String,
        #[source]
        source: crate::case::UsageError,
    },
    /// An archive to resume that cannot be read back.
    #[error(transparent)]
    Archive(#[from] store::ReadError),
    /// Settings (an archive's, to resume) that plan no matrix; `what` says whose.
    #[error("{what}: {source}")]
    Settings {
        what: String,
        #[source]
        source: plan::PlanError,
    },
    /// monoio was asked for, and this kernel's io_uring cannot run it.
    #[error(transparent)]
    Uring(#[from] crate::measure::shards::UringError),
    /// The archive is being written by another matrix (or a run it started).
    #[error(transparent)]
    Locked(std::io::Error),
}

impl MatrixError {
    /// `what` failed with `source`.
    pub fn system(what: impl Into<String>, source: std::io::Error) -> Self {
        Self::System {
            what: what.into(),
            source,
        }
    }

    /// The error of case `label` that the runner refuses.
    pub fn case(label: &str) -> impl FnOnce(crate::case::UsageError) -> Self + '_ {
        move |source| Self::Case {
            label: label.to_string(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::MatrixError;

    #[test]
    fn a_matrix_error_says_what_failed_and_keeps_the_cause() {
        let e = MatrixError::system(
            "cannot create out",
            std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        );
        assert_eq!(e.to_string(), "cannot create out: permission denied");
        let cause = e.source().expect("the io error is kept as the source");
        assert_eq!(cause.to_string(), "permission denied");
        let case = MatrixError::Case {
            label: "tcp 64 B".into(),
            source: crate::case::UsageError::GsoWithoutBatch,
        };
        assert_eq!(
            case.to_string(),
            "case tcp 64 B: --udp-gso rides on --udp-batch N: give both"
        );
        assert!(case.source().is_some());
    }
}
