//! Why the flags given cannot be run: the library's refusals, and the command line's own.

use std::net::IpAddr;
use std::path::PathBuf;

use echomark_runner::case::{AddressFamily, UsageError};
use echomark_runner::placement::PlacementError;

/// Flags that cannot be run as given; the binary prints it and exits 2.
#[derive(Debug, thiserror::Error)]
pub enum FlagError {
    /// The case (or a probe of it) breaks a rule of the library's.
    #[error(transparent)]
    Case(#[from] UsageError),
    /// `serve`'s options break a rule of the server's.
    #[error(transparent)]
    Serve(#[from] echomark_runner::serve::ServeUsage),
    /// The CPUs this process may use could not be read.
    #[error(transparent)]
    Placement(#[from] PlacementError),
    /// `--server-cmd` and `--server-name` given different numbers of times.
    #[error("{commands} --server-cmd but {names} --server-name: give each server a name")]
    ServerNameCount { commands: usize, names: usize },
    /// `--server-version-cmd` given, but not once per `--server-cmd`.
    #[error(
        "{commands} --server-cmd but {versions} --server-version-cmd: give one per server, or none"
    )]
    VersionCommandCount { commands: usize, versions: usize },
    /// A `--server-cmd` without the `{port}` placeholder.
    #[error("--server-cmd must contain {{port}}, where the server's port goes")]
    ServerCmdWithoutPort,
    /// A `--server-name` that cannot be a file name and a backend's name.
    #[error("--server-name {name:?}: use letters, digits, '-', '_' and '.' (not first)")]
    ServerName { name: String },
    /// `--server-address` that is not `HOST:PORT`.
    #[error("--server-address {address:?}: give HOST:PORT (a name or an IP, and a port above 0)")]
    ServerAddress { address: String },
    /// A `--fleet-generators` count above `--fleet-size`.
    #[error("--fleet-generators {asked}: the fleet has {size} generators (--fleet-size)")]
    FleetGenerators { asked: u64, size: u64 },
    /// One `--server-name` for two servers.
    #[error("--server-name {name:?} names two servers")]
    DuplicateServerName { name: String },
    /// `--server-host` of another family than `--address-family`.
    #[error("--server-host {host} is not an address of --address-family {family}")]
    ServerHostFamily { host: IpAddr, family: AddressFamily },
    /// `--resume` with an `--out` of another archive.
    #[error("--resume writes to the archive it resumes; drop --out")]
    ResumeWithOut,
    /// `matrix` without `--out` or `--resume`.
    #[error("--out FILE or --resume FILE is required")]
    NoArchive,
    /// `verify` without `--target`.
    #[error("verify needs --target HOST:PORT")]
    VerifyNeedsTarget,
    /// The `--server-machine` file could not be read.
    #[error("--server-machine {}: {source}", .file.display())]
    ServerMachineUnreadable {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The `--server-machine` file is not JSON.
    #[error("--server-machine {}: {source}", .file.display())]
    ServerMachineNotJson {
        file: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// The `--server-machine` file's JSON (`at` its top level or under `machine`) is not a
    /// host description.
    #[error("--server-machine {}: {at} is not a host description: {source}", .file.display())]
    ServerMachineNotHost {
        file: PathBuf,
        at: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// The `--target` name could not be resolved.
    #[error("--target {authority:?}: {source}")]
    TargetUnresolved {
        authority: String,
        #[source]
        source: std::io::Error,
    },
    /// The `--target` name resolved to no address.
    #[error("--target {authority:?} has no address")]
    TargetNoAddress { authority: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_errors_read_as_the_flags_were_refused() {
        let said = |e: FlagError| e.to_string();
        assert_eq!(
            said(UsageError::GsoWithoutBatch.into()),
            "--udp-gso rides on --udp-batch N: give both"
        );
        assert_eq!(
            said(FlagError::ServerNameCount {
                commands: 2,
                names: 1
            }),
            "2 --server-cmd but 1 --server-name: give each server a name"
        );
        assert_eq!(
            said(FlagError::VersionCommandCount {
                commands: 2,
                versions: 1
            }),
            "2 --server-cmd but 1 --server-version-cmd: give one per server, or none"
        );
        assert_eq!(
            said(FlagError::ServerCmdWithoutPort),
            "--server-cmd must contain {port}, where the server's port goes"
        );
        assert_eq!(
            said(FlagError::ServerName { name: ".x".into() }),
            "--server-name \".x\": use letters, digits, '-', '_' and '.' (not first)"
        );
        assert_eq!(
            said(FlagError::DuplicateServerName { name: "a".into() }),
            "--server-name \"a\" names two servers"
        );
        assert_eq!(
            said(FlagError::ServerHostFamily {
                host: "::1".parse().unwrap(),
                family: AddressFamily::Ipv4
            }),
            "--server-host ::1 is not an address of --address-family ipv4"
        );
        assert_eq!(
            said(FlagError::ResumeWithOut),
            "--resume writes to the archive it resumes; drop --out"
        );
        assert_eq!(
            said(FlagError::NoArchive),
            "--out FILE or --resume FILE is required"
        );
        assert_eq!(
            said(FlagError::VerifyNeedsTarget),
            "verify needs --target HOST:PORT"
        );
        let file = PathBuf::from("/m.json");
        assert_eq!(
            said(FlagError::ServerMachineUnreadable {
                file: file.clone(),
                source: std::io::Error::from(std::io::ErrorKind::NotFound)
            }),
            "--server-machine /m.json: entity not found"
        );
        let not_json = serde_json::from_str::<serde_json::Value>("{").unwrap_err();
        let why = not_json.to_string();
        assert_eq!(
            said(FlagError::ServerMachineNotJson {
                file: file.clone(),
                source: not_json
            }),
            format!("--server-machine /m.json: {why}")
        );
        let not_host = serde_json::from_str::<echomark_archive::Host>("1").unwrap_err();
        let why = not_host.to_string();
        assert_eq!(
            said(FlagError::ServerMachineNotHost {
                file,
                at: "machine",
                source: not_host
            }),
            format!("--server-machine /m.json: machine is not a host description: {why}")
        );
        assert_eq!(
            said(FlagError::TargetUnresolved {
                authority: "x:1".into(),
                source: std::io::Error::other("no such host")
            }),
            "--target \"x:1\": no such host"
        );
        assert_eq!(
            said(FlagError::TargetNoAddress {
                authority: "x:1".into()
            }),
            "--target \"x:1\" has no address"
        );
    }
}
