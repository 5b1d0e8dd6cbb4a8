//! Opening a matrix's archives before anything is measured: each one locked, then made new
//! (every archive of a new matrix from one template) or read back to resume, and checked to
//! belong to one matrix.

use std::path::{Path, PathBuf};

use echomark_archive::Archive;

use super::{archives, identity, provenance, store, target_paths};
use super::{ArchiveTarget, MatrixError, MatrixRequest, Refusal, Target};

/// The archives `request` writes, locked and ready to take runs.
pub(super) fn targets(request: &MatrixRequest, exe: &Path) -> Result<Vec<Target>, MatrixError> {
    let source_dir = request
        .source_dir
        .clone()
        .unwrap_or_else(provenance::default_source_dir);
    let paths = target_paths(request)?;
    if let ArchiveTarget::New(out) = &request.archive {
        // The folder a new matrix is asked to write into is made, as `mkdir -p` would: the
        // named folder itself when it holds several archives, else the file's parent.
        let folder = if request.archive_names().len() > 1 {
            Some(out.as_path())
        } else {
            out.parent().filter(|p| !p.as_os_str().is_empty())
        };
        if let Some(folder) = folder.filter(|f| !f.is_dir()) {
            std::fs::create_dir_all(folder).map_err(|e| {
                MatrixError::system(format!("cannot create {}", folder.display()), e)
            })?;
        }
    }
    let locks = lock_all(&paths)?;
    // The sources and the binary are hashed once, however many archives there are, and
    // only after the cheap checks: it takes a moment.
    let mut hashed: Option<(String, String)> = None;
    let mut hashes_once = || -> Result<(String, String), MatrixError> {
        if let Some(h) = &hashed {
            return Ok(h.clone());
        }
        Ok(hashed.insert(hashes(exe, &source_dir)?).clone())
    };
    // A new matrix: every archive is the same but for its backend, so it is made once.
    let template = match &request.archive {
        ArchiveTarget::New(_) => {
            if let Some(path) = paths.iter().find(|p| p.exists()) {
                return Err(Refusal::ArchiveExists { path: path.clone() }.into());
            }
            let (exe_sha, source_sha) = hashes_once()?;
            Some(archives::new_archive(
                request,
                (&exe_sha, &source_sha),
                (&source_dir, &paths[0]),
            ))
        }
        ArchiveTarget::Resume(_) => None,
    };
    let mut targets: Vec<Target> = Vec::with_capacity(paths.len());
    for (index, (path, lock)) in paths.into_iter().zip(locks).enumerate() {
        let archive = match &template {
            Some(template) => new_archive(request, template, index, &path)?,
            None => archives::resume(&path, &mut hashes_once)?,
        };
        let backend = archives::runtime_of(&archive).ok_or_else(|| {
            MatrixError::from(Refusal::UnknownBackend {
                path: path.clone(),
                backend: archive.backend.clone(),
            })
        })?;
        if let Some(first) = targets.first() {
            if first.archive.settings.shared_matrix() != archive.settings.shared_matrix() {
                return Err(Refusal::SettingsDiffer {
                    first: first.path.clone(),
                    second: path,
                }
                .into());
            }
        }
        targets.push(Target {
            path,
            archive,
            backend,
            lock,
        });
    }
    Ok(targets)
}

/// One lock per archive, each taken before anything is read or written; a folder that does
/// not exist is refused.
fn lock_all(paths: &[PathBuf]) -> Result<Vec<store::ArchiveLock>, MatrixError> {
    paths
        .iter()
        .map(
            |path| match path.parent().filter(|p| !p.as_os_str().is_empty()) {
                Some(dir) if !dir.is_dir() => Err(Refusal::NoSuchFolder {
                    dir: dir.to_path_buf(),
                }
                .into()),
                _ => store::ArchiveLock::take(path).map_err(MatrixError::Locked),
            },
        )
        .collect()
}

/// The hashes of the measuring binary and of the measured sources.
fn hashes(exe: &Path, source_dir: &Path) -> Result<(String, String), MatrixError> {
    let exe_sha = provenance::file_sha256(exe)
        .map_err(|e| MatrixError::system(format!("cannot hash {}", exe.display()), e))?;
    let source_sha =
        provenance::source_sha256(source_dir).map_err(|source| Refusal::SourcesUnhashable {
            dir: source_dir.to_path_buf(),
            source,
        })?;
    Ok((exe_sha, source_sha))
}

/// The new archive `index` of a matrix: the template for its backend, or for its external
/// server (identified once, before anything is measured).
fn new_archive(
    request: &MatrixRequest,
    template: &Archive,
    index: usize,
    path: &Path,
) -> Result<Archive, MatrixError> {
    let archive = match request.options.external_servers.get(index) {
        Some(server) => {
            // A running server is not this machine's to ask, unless a version command says how.
            let identity = (server.address.is_none() || server.version_command.is_some())
                .then(|| identity::identify(&server.command, server.version_command.as_deref()));
            let server = echomark_archive::ExternalServer {
                identity,
                ..server.clone()
            };
            archives::for_server(template, &server)?
        }
        None => archives::for_backend(template, request.backends[index].clone())?,
    };
    archives::check_plan(path, &archive)?;
    Ok(archive)
}
