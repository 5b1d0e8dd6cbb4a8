//! The matrix against an external server (`--server-cmd`): a case aimed at the server's
//! address, and the verification every protocol passes before it is measured.

use echomark_archive::{ExternalServer, Protocol, TlsVerification, VerificationRecord};

use super::{server, MatrixError, Refusal, Target};
use crate::case::TlsTrust;

/// The client's view of `server` listening at `address` for `protocol`; `pipelines` says
/// whether it answers pipelined HTTP requests (its verification says).
fn client_target(
    server: &ExternalServer,
    protocol: Protocol,
    address: std::net::SocketAddr,
    pipelines: bool,
) -> crate::case::Target {
    let trust = match (&server.tls_ca, server.tls_verification) {
        (Some(path), _) => Some(TlsTrust::Ca(path.into())),
        (None, Some(TlsVerification::Insecure)) => Some(TlsTrust::Insecure),
        _ => None,
    };
    crate::case::Target {
        addr: address,
        authority: address.to_string(),
        framing: server.framing_for(protocol),
        tls: trust
            .filter(|_| protocol.needs_trust())
            .map(|t| (t, address.ip().to_string())),
        server_name: Some(server.name.clone()),
        alpn: None,
        http_pipelining: pipelines,
        server_machine: None,
    }
}

/// `case` aimed at the external server at `address`: the client alone, with the server's
/// name as its `backend`, and HTTP requests pipelined only if `pipelines`.
pub(super) fn against(
    mut case: crate::case::Case,
    server: &ExternalServer,
    address: std::net::SocketAddr,
    pipelines: bool,
) -> Result<crate::case::Case, crate::case::UsageError> {
    let http = matches!(case.protocol, Protocol::Http | Protocol::Https);
    case.target = Some(client_target(
        server,
        case.protocol,
        address,
        pipelines || !http,
    ));
    case.validate()
}

/// Whether the server's verification for `protocol` found that it answers pipelined
/// requests (true when there is none yet).
pub(super) fn pipelines(verification: &[VerificationRecord], protocol: Protocol) -> bool {
    verification
        .iter()
        .find(|v| v.protocol == protocol)
        .is_none_or(VerificationRecord::pipelines)
}

/// Checks the external server against the echo contract for every protocol not verified
/// yet, each time on a fresh server, and records the result; a server that fails is not
/// measured (exit 2, the verification kept in the archive).
pub(super) fn verify_first(
    target: &mut Target,
    server: &ExternalServer,
    protocols: &[Protocol],
) -> Result<(), MatrixError> {
    let cpus = server::pinned_cpus(&target.archive.settings)?;
    for &protocol in protocols {
        if target
            .archive
            .verification
            .iter()
            .any(|v| v.protocol == protocol)
        {
            continue;
        }
        if let Some(address) = &server.address {
            let record = verify_running(
                server,
                address,
                protocol,
                target.archive.settings.address_family,
            );
            conclude(target, server, record)?;
            continue;
        }
        let started = server::start(server, protocol, cpus.as_ref())
            .map_err(|e| MatrixError::system("cannot start the server", e))?;
        let address = started.address;
        let ready = started.ready_seconds.is_some();
        let verification = ready.then(|| {
            let limits = crate::verify::Limits {
                idle: server.verify_idle(),
                ..crate::verify::Limits::default()
            };
            crate::verify::verify(
                protocol,
                &client_target(server, protocol, address, true),
                limits,
            )
        });
        let process = started.stop();
        let record = match verification {
            Some(v) => record_of(protocol, v),
            None => VerificationRecord {
                protocol,
                passed: false,
                checks: vec![echomark_archive::VerificationCheck {
                    name: "start".into(),
                    outcome: "failed".into(),
                    detail: server::failure(&process, false, server.ready_limit())
                        .unwrap_or_default(),
                }],
            },
        };
        conclude(target, server, record)?;
    }
    Ok(())
}

/// A verification as the archive records it.
fn record_of(protocol: Protocol, v: crate::verify::Verification) -> VerificationRecord {
    VerificationRecord {
        protocol,
        passed: v.passed,
        checks: v
            .checks
            .into_iter()
            .map(|c| echomark_archive::VerificationCheck {
                name: c.name.to_string(),
                outcome: serde_json::to_value(&c.outcome)
                    .ok()
                    .and_then(|o| o.as_str().map(str::to_string))
                    .unwrap_or_default(),
                detail: c.detail,
            })
            .collect(),
    }
}

/// Records `record` in `target`'s archive and saves it; a failed one refuses the server.
fn conclude(
    target: &mut Target,
    server: &ExternalServer,
    record: VerificationRecord,
) -> Result<(), MatrixError> {
    let failed: Vec<_> = record
        .checks
        .iter()
        .filter(|c| c.outcome == "failed")
        .cloned()
        .collect();
    let (passed, protocol) = (record.passed, record.protocol);
    target.archive.verification.push(record);
    target.save()?;
    if !passed {
        return Err(Refusal::FailsContract {
            server: server.name.clone(),
            protocol,
            failed,
            path: target.path.clone(),
        }
        .into());
    }
    Ok(())
}

/// `--server-address`: the running server's address now, of the matrix's family (a name
/// is resolved afresh: a Service's address may change between runs).
pub(super) fn resolve(
    address: &str,
    family: echomark_archive::AddressFamily,
) -> std::io::Result<std::net::SocketAddr> {
    use std::net::ToSocketAddrs;
    let want_v6 = family == echomark_archive::AddressFamily::Ipv6;
    address
        .to_socket_addrs()?
        .find(|a| a.is_ipv6() == want_v6)
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("--server-address {address}: no {family} address"),
            )
        })
}

/// Verifies the running server at `address` for `protocol`; an address that does not
/// resolve is a failed check of its own.
fn verify_running(
    server: &ExternalServer,
    address: &str,
    protocol: Protocol,
    family: echomark_archive::AddressFamily,
) -> VerificationRecord {
    match resolve(address, family) {
        Ok(addr) => {
            let limits = crate::verify::Limits {
                idle: server.verify_idle(),
                ..crate::verify::Limits::default()
            };
            let target = client_target(server, protocol, addr, true);
            record_of(protocol, crate::verify::verify(protocol, &target, limits))
        }
        Err(e) => VerificationRecord {
            protocol,
            passed: false,
            checks: vec![echomark_archive::VerificationCheck {
                name: "resolve".into(),
                outcome: "failed".into(),
                detail: e.to_string(),
            }],
        },
    }
}
