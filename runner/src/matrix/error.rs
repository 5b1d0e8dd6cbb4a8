//! Why a matrix stops before (or instead of) measuring: each cause with its own source.

use std::path::PathBuf;

use echomark_archive::{Backend, Protocol, RunId, VerificationCheck};

use super::{plan, store};

/// A problem that stops the matrix before (or instead of) measuring: exit 2.
#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    /// The request, or the archive it resumes, asks for what cannot be measured.
    #[error(transparent)]
    Refused(#[from] Refusal),
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

/// Why the request, or the archives it resumes, cannot be measured; each names the path
/// (or the backend, server or setting) at fault.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// A new matrix would write over an archive.
    #[error(
        "{} already exists; finish it with --resume {} or choose another --out",
        .path.display(),
        .path.display()
    )]
    ArchiveExists { path: PathBuf },
    /// With several backends or servers `--out` names a folder, and this is a file.
    #[error(
        "{}: with several backends or servers, --out names a folder (one archive each)",
        .path.display()
    )]
    OutNotAFolder { path: PathBuf },
    /// `--resume` names a folder without archives.
    #[error("{}: no archive to resume", .dir.display())]
    NoArchiveToResume { dir: PathBuf },
    /// The folder an archive goes into does not exist.
    #[error("{}: no such folder", .dir.display())]
    NoSuchFolder { dir: PathBuf },
    /// The sources whose hash every archive records cannot be read.
    #[error(
        "cannot hash the measured sources in {} ({source}); pass --source-dir WORKSPACE",
        .dir.display()
    )]
    SourcesUnhashable {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// An archive to resume whose backend this runner does not have.
    #[error("{}: backend {backend:?} is not one this runner has", .path.display())]
    UnknownBackend { path: PathBuf, backend: Backend },
    /// Archives resumed together whose matrices differ.
    #[error(
        "{} and {}: archives resumed together must have the same settings",
        .first.display(),
        .second.display()
    )]
    SettingsDiffer { first: PathBuf, second: PathBuf },
    /// A backend that can run none of the matrix's cases.
    #[error("the matrix has no cases that --backend {backend} can run")]
    NoCasesFor { backend: Backend },
    /// An archive whose `settings.unsupported_io_profiles` is not what its backend cannot run.
    #[error(
        "{}: settings.unsupported_io_profiles does not match what backend {backend} cannot run",
        .path.display()
    )]
    UnsupportedProfiles { path: PathBuf, backend: Backend },
    /// A result (at `index` of `results`) that is not one of the runs the settings plan.
    #[error("{}: results[{index}]: {run} is not a run the settings plan", .path.display())]
    UnplannedResult {
        path: PathBuf,
        index: usize,
        run: Box<RunId>,
    },
    /// A (case, repetition) with two results.
    #[error("{}: a (case, repetition) appears twice in results", .path.display())]
    DuplicateResult { path: PathBuf },
    /// An archive of another tool or format version.
    #[error(
        "{}: written by {tool} format {format_version}, not {} format {}",
        .path.display(),
        echomark_archive::TOOL_NAME,
        echomark_archive::FORMAT_VERSION
    )]
    OtherFormat {
        path: PathBuf,
        tool: String,
        format_version: u32,
    },
    /// An archive with nothing left to measure.
    #[error("{}: already complete; nothing to resume", .path.display())]
    AlreadyComplete { path: PathBuf },
    /// An archive measured with another executable or other sources.
    #[error(
        "{}: measured with another build (executable or source hash differs); one archive \
         holds one build, so start a new archive",
        .path.display()
    )]
    OtherBuild { path: PathBuf },
    /// An archive measured on another host.
    #[error("{}: measured on another host", .path.display())]
    OtherHost { path: PathBuf },
    /// An archive whose `failed_measurements` is not the number of results with an error.
    #[error(
        "{}: failed_measurements is {recorded} but {counted} entries carry an error",
        .path.display()
    )]
    FailedCount {
        path: PathBuf,
        recorded: u64,
        counted: u64,
    },
    /// `settings.server_cpus` is not a CPU list.
    #[error("settings.server_cpus: {0}")]
    ServerCpus(#[source] crate::placement::CpuListError),
    /// `settings.case_timeout_seconds` is not a duration.
    #[error("settings.case_timeout_seconds: {0}")]
    CaseTimeout(#[source] std::time::TryFromFloatSecsError),
    /// An external server that failed `verify` for `protocol`: the checks it failed, and the
    /// archive the verification is recorded in.
    #[error(
        "{server} fails the echo contract for {protocol}, so it is not measured ({}); the \
         verification is in {}",
        failures(.failed),
        .path.display()
    )]
    FailsContract {
        server: String,
        protocol: Protocol,
        failed: Vec<VerificationCheck>,
        path: PathBuf,
    },
}

/// Failed checks as `name: detail`, separated by semicolons.
fn failures(checks: &[VerificationCheck]) -> String {
    let said: Vec<String> = checks
        .iter()
        .map(|c| format!("{}: {}", c.name, c.detail))
        .collect();
    said.join("; ")
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

    #[test]
    fn refusals_of_a_new_matrix_name_what_is_at_fault() {
        use super::Refusal;
        use std::path::PathBuf;
        let p = PathBuf::from;
        let said = |r: Refusal| MatrixError::Refused(r).to_string();
        assert_eq!(
            said(Refusal::ArchiveExists { path: p("a.json") }),
            "a.json already exists; finish it with --resume a.json or choose another --out"
        );
        assert_eq!(
            said(Refusal::OutNotAFolder { path: p("out") }),
            "out: with several backends or servers, --out names a folder (one archive each)"
        );
        assert_eq!(
            said(Refusal::NoArchiveToResume { dir: p("d") }),
            "d: no archive to resume"
        );
        assert_eq!(
            said(Refusal::NoSuchFolder { dir: p("d") }),
            "d: no such folder"
        );
        assert_eq!(
            said(Refusal::SourcesUnhashable {
                dir: p("/src"),
                source: std::io::Error::from(std::io::ErrorKind::NotFound)
            }),
            "cannot hash the measured sources in /src (entity not found); pass --source-dir \
             WORKSPACE"
        );
    }

    #[test]
    fn refusals_of_an_archive_to_resume_name_it() {
        use super::Refusal;
        use echomark_archive::Backend;
        use std::path::PathBuf;
        let p = PathBuf::from;
        let said = |r: Refusal| MatrixError::Refused(r).to_string();
        assert_eq!(
            said(Refusal::UnknownBackend {
                path: p("a.json"),
                backend: Backend::named("nginx")
            }),
            format!(
                "a.json: backend {:?} is not one this runner has",
                Backend::named("nginx")
            )
        );
        assert_eq!(
            said(Refusal::SettingsDiffer {
                first: p("a.json"),
                second: p("b.json")
            }),
            "a.json and b.json: archives resumed together must have the same settings"
        );
        assert_eq!(
            said(Refusal::NoCasesFor {
                backend: Backend::Monoio
            }),
            "the matrix has no cases that --backend monoio can run"
        );
        assert_eq!(
            said(Refusal::UnsupportedProfiles {
                path: p("a.json"),
                backend: Backend::IoUring
            }),
            "a.json: settings.unsupported_io_profiles does not match what backend io-uring \
             cannot run"
        );
        assert_eq!(
            said(Refusal::DuplicateResult { path: p("a.json") }),
            "a.json: a (case, repetition) appears twice in results"
        );
        assert_eq!(
            said(Refusal::OtherFormat {
                path: p("a.json"),
                tool: "other".into(),
                format_version: 7
            }),
            "a.json: written by other format 7, not echomark-runner format 1"
        );
        assert_eq!(
            said(Refusal::AlreadyComplete { path: p("a.json") }),
            "a.json: already complete; nothing to resume"
        );
        assert_eq!(
            said(Refusal::OtherBuild { path: p("a.json") }),
            "a.json: measured with another build (executable or source hash differs); one \
             archive holds one build, so start a new archive"
        );
        assert_eq!(
            said(Refusal::OtherHost { path: p("a.json") }),
            "a.json: measured on another host"
        );
        assert_eq!(
            said(Refusal::FailedCount {
                path: p("a.json"),
                recorded: 1,
                counted: 2
            }),
            "a.json: failed_measurements is 1 but 2 entries carry an error"
        );
    }

    #[test]
    fn refusals_of_settings_and_servers_say_why() {
        use super::Refusal;
        use echomark_archive::{Protocol, VerificationCheck};
        use std::path::PathBuf;
        let p = PathBuf::from;
        let said = |r: Refusal| MatrixError::Refused(r).to_string();
        let list = "x".parse::<crate::placement::CpuList>().unwrap_err();
        assert_eq!(
            said(Refusal::ServerCpus(list.clone())),
            format!("settings.server_cpus: {list}")
        );
        let timeout = std::time::Duration::try_from_secs_f64(-1.0).unwrap_err();
        assert_eq!(
            said(Refusal::CaseTimeout(timeout.clone())),
            format!("settings.case_timeout_seconds: {timeout}")
        );
        let check = |name: &str, detail: &str| VerificationCheck {
            name: name.into(),
            outcome: "failed".into(),
            detail: detail.into(),
        };
        assert_eq!(
            said(Refusal::FailsContract {
                server: "nginx".into(),
                protocol: Protocol::Tcp,
                failed: vec![check("echo", "wrong bytes"), check("idle", "closed")],
                path: p("out/nginx.json")
            }),
            "nginx fails the echo contract for tcp, so it is not measured (echo: wrong bytes; \
             idle: closed); the verification is in out/nginx.json"
        );
    }
}
