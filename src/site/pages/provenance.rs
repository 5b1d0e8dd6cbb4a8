//! The provenance tables of an overview page: the machine, the build that measured, and
//! the commands that reproduce the dataset.

use crate::format;
use crate::model::{Dataset, Format};
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::Markup;
use crate::site::table::Table;

/// The host table.
pub fn host_table(cat: &Catalog, d: &Dataset, not_recorded: &Markup) -> Table {
    let h = d.host().cloned().unwrap_or_default();
    let first_format = d.files.first().map(|f| f.format);
    let text = |v: &Option<String>| v.as_deref().map_or(not_recorded.clone(), Markup::text);
    let int = |v: Option<u64>| v.map_or(not_recorded.clone(), |n| Markup::trusted(n.to_string()));
    let os = match (&h.os_name, &h.os_version, &h.system) {
        (Some(name), Some(v), _) => {
            Markup::trusted(format!("{} {}", Markup::text(name), Markup::text(v)))
        }
        (_, Some(v), Some(sys)) if sys == "Darwin" => {
            Markup::trusted(format!("macOS {}", Markup::text(v)))
        }
        (_, _, Some(sys)) => Markup::text(sys),
        _ => not_recorded.clone(),
    };
    let mut table = Table::new(cat.list("host.columns", &[]), &[]);
    if let Some(model) = &h.model {
        table.push(vec![cat.text("host.model"), Markup::text(model)]);
    }
    table.push(vec![cat.text("host.cpu"), text(&h.cpu)]);
    table.push(vec![cat.text("host.arch"), text(&h.machine)]);
    table.push(vec![
        cat.text("host.cores"),
        Markup::trusted(format!(
            "{} / {}",
            int(h.physical_cpus),
            int(h.logical_cpus)
        )),
    ]);
    table.push(vec![
        cat.text("host.memory"),
        h.memory_bytes
            .map_or(not_recorded.clone(), |b| Markup::trusted(format::gib(b))),
    ]);
    table.push(vec![cat.text("host.os"), os]);
    table.push(vec![cat.text("host.kernel"), text(&h.release)]);
    if first_format == Some(Format::Echomark) {
        // Recorded by echomark since the toolchain issue; older archives say "not recorded".
        table.push(vec![cat.text("host.signature"), text(&h.cpu_signature)]);
        let smt = h.smt_active.map_or(not_recorded.clone(), |on| {
            cat.text(if on { "host.smt_on" } else { "host.smt_off" })
        });
        table.push(vec![cat.text("host.smt"), smt]);
        table.push(vec![cat.text("host.governor"), text(&h.cpu_governor)]);
    }
    if let Some(reach) = d.files.iter().find_map(|f| f.reach.as_ref()) {
        table.push(vec![
            cat.text("host.path"),
            labels::reach(cat, reach, not_recorded),
        ]);
        table.push(vec![
            cat.text("host.server_machine"),
            labels::server_machine(cat, reach.server_machine.as_ref(), &h, not_recorded),
        ]);
    }
    table
}

/// What an external server is, as its archive records it: version, package, executable
/// and hash, each where known.
fn server_identity(
    cat: &Catalog,
    identity: Option<&echomark_archive::ServerIdentity>,
    not_recorded: &Markup,
) -> Markup {
    let Some(id) = identity else {
        return not_recorded.clone();
    };
    let mut parts = Vec::new();
    if let Some(version) = &id.version {
        parts.push(Markup::code(version.lines().next().unwrap_or(version)));
    }
    if let Some(package) = &id.package {
        parts.push(cat.fill(
            "overview.server_package",
            &[("package", &Markup::code(package))],
        ));
    }
    if let Some(exe) = &id.executable {
        let hash = id
            .executable_sha256
            .as_deref()
            .map(format::short_hash)
            .unwrap_or("?");
        parts.push(cat.fill(
            "overview.server_executable",
            &[("path", &Markup::code(exe)), ("hash", &Markup::code(hash))],
        ));
    }
    if parts.is_empty() {
        return not_recorded.clone();
    }
    Markup::join(&parts, &cat.text("list.semicolon"))
}

/// The toolchain table: per file, the producer, the source commit, the compiler and build
/// profile, and the versions of the crates that did the measured work.
pub fn toolchain(cat: &Catalog, d: &Dataset, not_recorded: &Markup) -> Table {
    let mut columns = vec![Markup::default()];
    columns.extend([
        cat.text("overview.tool"),
        cat.text("overview.git"),
        cat.text("overview.compiler"),
        cat.text("overview.stack"),
    ]);
    let mut table = Table::new(columns, &[]);
    for f in &d.files {
        let git = match &f.git_head {
            Some(h) => cat.fill(
                "overview.git_line",
                &[
                    ("hash", &Markup::text(format::short_hash(h))),
                    (
                        "state",
                        &cat.text(if f.dirty {
                            "overview.dirty"
                        } else {
                            "overview.clean"
                        }),
                    ),
                ],
            ),
            None => not_recorded.clone(),
        };
        let producer = match (&f.imported, f.format) {
            (Some(source), _) => Markup::text(&source.label()),
            (None, Format::Echomark) => Markup::trusted("echomark-runner"),
            (None, Format::ArknetSchema1) => Markup::trusted("arknet schema 1"),
            (None, Format::ArknetSchema2) => Markup::trusted("arknet schema 2"),
            (None, Format::Imported) => Markup::trusted("echomark import"),
        };
        let (compiler, mut stack) = match &f.toolchain {
            Some(t) => (
                cat.fill(
                    "overview.compiler_line",
                    &[
                        ("rustc", &Markup::text(&t.rustc)),
                        ("target", &Markup::text(&t.target)),
                        ("profile", &Markup::text(&t.profile)),
                        ("opt", &Markup::text(&t.opt_level)),
                    ],
                ),
                Markup::text(
                    &t.dependencies
                        .iter()
                        .map(|(name, version)| format!("{name} {version}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
            ),
            None => (not_recorded.clone(), not_recorded.clone()),
        };
        // Against an external server the measured stack is the server's, not echomark's.
        if let Some(server) = &f.external_server {
            stack = server_identity(cat, server.identity.as_ref(), not_recorded);
        }
        table.push(vec![Markup::text(&f.name), producer, git, compiler, stack]);
    }
    table
}
