//! How configurations are named on the pages, in each language: protocols, backends,
//! topologies, loads, work levels and hosts. Every label is [`Markup`]: catalog text, or an
//! archive's own name escaped when the catalog has none.

use echomark_archive::{CaseKey, IoModel, PathKind, Protocol};

use super::i18n::Catalog;
use super::markup::Markup;
pub use super::subject::protocol_rank;
use super::subject::Subject;
use crate::analysis::aggregate::Stat;
use crate::format;
use crate::model::{Dataset, HostInfo, Reach};

mod decision;
pub use decision::{decision, explore_link, margin, rule, rule_short};

/// A label from the catalog group, or the escaped raw value when the catalog has none.
fn label(cat: &Catalog, group: &str, raw: &str) -> Markup {
    match cat
        .tree_value(group)
        .and_then(|g| g.get(raw))
        .and_then(|v| v.as_str())
    {
        Some(text) => Markup::trusted(text),
        None => Markup::text(raw),
    }
}

/// "TCP", "TCP+TLS", …
pub fn protocol(cat: &Catalog, p: Protocol) -> Markup {
    label(cat, "protocol", p.as_str())
}

/// "tokio", "Standalone Asio", …
pub fn backend(cat: &Catalog, b: &str) -> Markup {
    label(cat, "backend", b)
}

/// An implementation that is not the backend's default program.
pub fn implementation(cat: &Catalog, i: &str) -> Markup {
    label(cat, "implementation", i)
}

/// Whether `implementation` is the default program of its backend (not named on pages).
pub fn is_default_program(implementation: &str) -> bool {
    // Empty where a stratum pools every program of its protocol (clients of one server).
    matches!(implementation, "" | "echomark" | "arknet-callback")
}

/// A protocol page's name: "TCP", …, or "Coroutine TCP" for arknet's native program.
pub fn subject(cat: &Catalog, s: Subject) -> Markup {
    match s {
        Subject::Protocol(p) => protocol(cat, p),
        Subject::NativeTcp => cat.text("subject.native_tcp"),
    }
}

/// The protocol with the program when it is not the backend's default: "TCP",
/// "Coroutine TCP" (arknet's native coroutine program), "TCP (other program)".
pub fn program_protocol(cat: &Catalog, p: Protocol, implementation: &str) -> Markup {
    if is_default_program(implementation) {
        return protocol(cat, p);
    }
    if let Some(named) = cat
        .tree_value("program_protocol")
        .and_then(|g| g.get(implementation))
        .and_then(|v| v.as_str())
    {
        return Markup::trusted(named);
    }
    let mut out = protocol(cat, p);
    out.push(&Markup::trusted(" ("));
    out.push(&self::implementation(cat, implementation));
    out.push(&Markup::trusted(")"));
    out
}

/// "No added computation", "10,000 CPU iterations per echo".
pub fn work(cat: &Catalog, work: u64) -> Markup {
    if work == 0 {
        cat.text("work.none")
    } else {
        cat.fill("work.some", &[("n", &Markup::trusted(format::count(work)))])
    }
}

/// "1 runtime / 2 threads", "4 io_contexts / 1 thread each", …
pub fn topology(cat: &Catalog, backend: &str, io_model: IoModel, threads: u64) -> Markup {
    // Asio's are io_contexts (arknet's two stacks); everything else echomark measured ran
    // on Rust runtimes, tokio's and monoio's alike, the client of an external server too.
    let family = match backend {
        "standalone" | "boost" => "asio",
        _ => "tokio",
    };
    let unit = cat.text(&format!("topology.unit_{family}"));
    let units = cat.text(&format!("topology.units_{family}"));
    let n = Markup::trusted(threads.to_string());
    match (io_model, threads) {
        (IoModel::Shared, 1) => cat.fill("topology.shared_one", &[("unit", &unit)]),
        (IoModel::Shared, _) => {
            cat.fill("topology.shared_many", &[("unit", &unit), ("threads", &n)])
        }
        (IoModel::Sharded, _) => {
            cat.fill("topology.sharded", &[("units", &units), ("threads", &n)])
        }
    }
}

/// "tokio / 1 runtime / 2 threads", with the implementation when it is not the default.
pub fn model(cat: &Catalog, k: &CaseKey) -> Markup {
    let mut out = backend(cat, k.backend.as_str());
    out.push(&Markup::trusted(" / "));
    out.push(&topology(cat, k.backend.as_str(), k.io_model, k.io_threads));
    if is_default_program(&k.implementation) {
        return out;
    }
    let mut named = implementation(cat, &k.implementation);
    named.push(&Markup::trusted(" / "));
    named.push(&out);
    named
}

/// A whole configuration in one cell: protocol / backend / load / topology.
pub fn configuration(cat: &Catalog, k: &CaseKey) -> Markup {
    Markup::join(
        &[
            protocol(cat, k.protocol),
            backend(cat, k.backend.as_str()),
            load(cat, k),
            topology(cat, k.backend.as_str(), k.io_model, k.io_threads),
        ],
        &Markup::trusted(" / "),
    )
}

/// "1024 B / 16 clients / window 16" ("1024 B / 4 generators × 16 clients / window 16" for
/// a fleet), plus the server receive buffer of isolation cases.
pub fn load(cat: &Catalog, k: &CaseKey) -> Markup {
    let payload = Markup::trusted(format::count(k.payload_bytes));
    let window = Markup::trusted(k.window.to_string());
    let mut heading = if let Some(n) = k.generators {
        cat.fill(
            "page.profile_fleet",
            &[
                ("payload", &payload),
                ("generators", &generators(cat, n)),
                ("clients", &clients(cat, k.clients)),
                ("window", &window),
            ],
        )
    } else if k.clients == 1 {
        cat.fill(
            "page.profile_one_client",
            &[("payload", &payload), ("window", &window)],
        )
    } else {
        let clients = Markup::trusted(k.clients.to_string());
        cat.fill(
            "page.profile",
            &[
                ("payload", &payload),
                ("clients", &clients),
                ("window", &window),
            ],
        )
    };
    if let Some(buffer) = k.udp_server_recv_buffer {
        heading.push(&Markup::trusted(" / "));
        heading.push(&cat.fill(
            "page.server_buffer",
            &[("size", &Markup::trusted(format::buffer_size(buffer)))],
        ));
    }
    if let Some(transport) = &k.quic_transport {
        heading.push(&Markup::trusted(" / "));
        heading.push(&quic_transport(cat, transport));
    }
    heading
}

/// The QUIC transport settings that differ from quinn's defaults (`bbr, GSO off, initial
/// MTU 1,400 B`), or "quinn defaults", in the page's language.
pub fn quic_transport(cat: &Catalog, q: &echomark_archive::QuicTransport) -> Markup {
    use echomark_archive::QuicSetting;
    let bytes = |n: u64| Markup::trusted(format!("{} B", format::count(n)));
    let parts: Vec<Markup> = q
        .differences()
        .into_iter()
        .map(|setting| match setting {
            QuicSetting::Congestion(c) => Markup::trusted(c.as_str()),
            QuicSetting::Gso(on) => cat.text(if on { "quic.gso_on" } else { "quic.gso_off" }),
            QuicSetting::InitialMtu(n) => {
                cat.fill("quic.initial_mtu", &[("size", &bytes(u64::from(n)))])
            }
            QuicSetting::StreamWindow(n) => cat.fill("quic.stream_window", &[("size", &bytes(n))]),
            QuicSetting::ConnectionWindow(n) => {
                cat.fill("quic.connection_window", &[("size", &bytes(n))])
            }
        })
        .collect();
    if parts.is_empty() {
        cat.text("quic.defaults")
    } else {
        Markup::join(&parts, &cat.text("quic.setting_separator"))
    }
}

/// "1 client", "16 clients" in the page's language.
pub fn clients(cat: &Catalog, n: u64) -> Markup {
    if n == 1 {
        cat.text("clients.one")
    } else {
        cat.fill("clients.many", &[("n", &Markup::trusted(format::count(n)))])
    }
}

/// "1 generator", "4 generators" in the page's language.
pub fn generators(cat: &Catalog, n: u64) -> Markup {
    cat.fill("generators.count", &[("n", &number(format::count(n)))])
}

/// A load's clients, led by a fleet's generators: "16 clients", "4 generators × 16
/// clients".
pub fn fleet_clients(cat: &Catalog, fleet: Option<u64>, n: u64) -> Markup {
    match fleet {
        Some(g) => Markup::join(
            &[generators(cat, g), clients(cat, n)],
            &Markup::trusted(" × "),
        ),
        None => clients(cat, n),
    }
}

/// Clients × window as a chart's group names them ("16×16"), led by a fleet's generators
/// ("4 generators × 16×16").
pub fn connections_short(cat: &Catalog, k: &CaseKey) -> String {
    let connections = format!("{}×{}", k.clients, k.window);
    match k.generators {
        Some(n) => format!("{} × {connections}", generators(cat, n).as_str()),
        None => connections,
    }
}

/// A protocol (with its program, as [`program_protocol`]) measured by a fleet of
/// `generators`: "TCP · 4 generators"; the protocol alone without a fleet.
pub fn program_protocol_at(
    cat: &Catalog,
    p: Protocol,
    implementation: &str,
    fleet: Option<u64>,
) -> Markup {
    let mut out = program_protocol(cat, p, implementation);
    if let Some(n) = fleet {
        out.push(&Markup::trusted(" · "));
        out.push(&generators(cat, n));
    }
    out
}

/// A stratum of a recommendation: its protocol and program, and a fleet's generators.
pub fn stratum(cat: &Catalog, s: &crate::analysis::recommend::Stratum) -> Markup {
    program_protocol_at(cat, s.protocol, &s.implementation, s.generators)
}

/// "A, B and C" in the page's language.
pub fn join_list(cat: &Catalog, items: &[Markup]) -> Markup {
    match items {
        [] => Markup::default(),
        [one] => one.clone(),
        [init @ .., last] => {
            let mut out = Markup::join(init, &cat.text("list.sep"));
            out.push(&cat.text("list.last"));
            out.push(last);
            out
        }
    }
}

/// "A and B" in the page's language, for names that may be Latin words: where a name meets
/// a conjunction that the language writes without spaces (Chinese 和), it is spaced, as
/// Chinese text spaces Latin words and numbers.
pub fn join_and(cat: &Catalog, items: &[Markup]) -> Markup {
    let latin = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    let mut out = Markup::default();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            let spaced =
                latin(items[i - 1].as_str().chars().last()) || latin(item.as_str().chars().next());
            out.push(&cat.text(if spaced { "list.last" } else { "list.and" }));
        }
        out.push(item);
    }
    out
}

/// A median with its [min, max] range, or N/A.
pub fn range(s: Option<Stat>, decimals: usize) -> Markup {
    Markup::trusted(s.map_or("N/A".to_string(), |s| {
        format::with_range(s.median, s.min, s.max, decimals)
    }))
}

/// A latency's "median [min, max]" to 3 significant digits (what the histograms keep), or
/// N/A.
pub fn latency_range(s: Option<Stat>) -> Markup {
    Markup::trusted(s.map_or("N/A".to_string(), |s| {
        format!(
            "{} [{}, {}]",
            format::latency(s.median),
            format::latency(s.min),
            format::latency(s.max)
        )
    }))
}

/// A link to a dataset's overview, named by the dataset; `up` leads from the page to the
/// language's folder (`""` on top-level pages, `"../"` on a dataset's).
pub fn dataset_link(name: &str, slug: &str, up: &str) -> Markup {
    Markup::trusted(format!("[{}]({up}{slug}/overview.md)", Markup::text(name)))
}

/// A median formatted by `f`, or N/A.
pub fn median(s: Option<Stat>, f: fn(f64) -> String) -> Markup {
    Markup::trusted(s.map_or("N/A".to_string(), |s| f(s.median)))
}

/// A formatted number (echomark's own text).
/// A count with the pages' digit grouping.
pub fn count(n: u64) -> Markup {
    number(crate::format::count(n))
}

pub fn number(text: String) -> Markup {
    Markup::trusted(text)
}

/// One word of a dataset's kind: a catalog entry, or a name written the same in every
/// language.
enum KindPart {
    /// `nav_kind.<id>` or `path.<id>`.
    Catalog(&'static str, String),
    Fixed(&'static str),
}

impl KindPart {
    fn label(&self, cat: &Catalog) -> Markup {
        match self {
            KindPart::Catalog(section, id) => cat.text(&format!("{section}.{id}")),
            KindPart::Fixed(word) => Markup::trusted(*word),
        }
    }

    fn id(&self) -> String {
        match self {
            KindPart::Catalog(_, id) => id.clone(),
            KindPart::Fixed(word) => word.to_ascii_lowercase(),
        }
    }
}

/// What a dataset measures: the preset (or an arknet import, or a plain matrix), then other
/// servers or several backends, a path other than loopback, IPv6.
fn kind_parts(d: &Dataset) -> Vec<KindPart> {
    let kind = |id: &str| KindPart::Catalog("nav_kind", id.to_string());
    let first = d.files.first();
    if d.has_imported() {
        return vec![kind(if d.only_imported() {
            "imported"
        } else {
            "agreement"
        })];
    }
    let mut parts = vec![match first.and_then(|f| f.preset) {
        Some(preset) => kind(preset.as_str()),
        None if first.is_some_and(|f| f.format != crate::model::Format::Echomark) => kind("arknet"),
        None => kind("matrix"),
    }];
    let backends: std::collections::BTreeSet<&str> = d
        .files
        .iter()
        .filter_map(|f| f.backend.as_deref())
        .collect();
    if d.measures_external_servers() {
        parts.push(kind("servers"));
    } else if backends.len() > 1 {
        parts.push(kind("backends"));
    }
    if d.path_kind() != echomark_archive::PathKind::Loopback {
        parts.push(KindPart::Catalog(
            "path",
            d.path_kind().as_str().to_string(),
        ));
    }
    if first.is_some_and(|f| f.address_family == echomark_archive::AddressFamily::Ipv6) {
        parts.push(KindPart::Fixed("IPv6"));
    }
    parts
}

/// What a dataset measures, in a few words: its preset, other servers or backends, a path
/// other than loopback, IPv6.
pub fn dataset_kind(cat: &Catalog, d: &Dataset) -> Markup {
    let parts: Vec<Markup> = kind_parts(d).iter().map(|p| p.label(cat)).collect();
    Markup::join(&parts, &Markup::trusted(" · "))
}

/// The kind of a dataset as a file name, the same in every language (`baseline-servers`).
pub fn dataset_kind_id(d: &Dataset) -> String {
    kind_parts(d)
        .iter()
        .map(KindPart::id)
        .collect::<Vec<_>>()
        .join("-")
}

/// "epyc2-3fa1 (AMD EPYC, 2 logical CPUs)" in the page's language; `missing` stands in for an absent value.
pub fn host(cat: &Catalog, d: &Dataset, missing: &Markup) -> Markup {
    let name = crate::analysis::hosts::host_name(d).map_or(missing.clone(), |n| Markup::text(&n));
    let h = d.host();
    let cpu = h
        .and_then(|h| h.cpu.as_deref())
        .map_or(missing.clone(), Markup::text);
    let cpus = h
        .and_then(|h| h.logical_cpus)
        .map_or(missing.clone(), |n| Markup::trusted(n.to_string()));
    cat.fill(
        "index.host",
        &[("name", &name), ("cpu", &cpu), ("cpus", &cpus)],
    )
}

/// The catalog key `base` for the path `d`'s clients took: `base` itself over loopback,
/// `base_veth` across a veth pair, `base_network` over any other interface, so that each
/// language words each case as a whole.
pub fn for_path(base: &str, d: &Dataset) -> String {
    match d.path_kind() {
        PathKind::Loopback => base.to_string(),
        PathKind::Veth => format!("{base}_veth"),
        PathKind::Network => format!("{base}_network"),
    }
}

/// The name of a kind of path ("loopback", "cross-namespace veth", "network").
pub fn path_kind(cat: &Catalog, kind: PathKind) -> Markup {
    cat.text(&format!("path.{}", kind.as_str()))
}

/// How the clients reached the server: the path, the namespaces and the server's machine,
/// in one line for the host table.
pub fn reach(cat: &Catalog, reach: &Reach, missing: &Markup) -> Markup {
    let p = &reach.path;
    let mut parts = vec![cat.fill(
        "path.described",
        &[
            ("kind", &path_kind(cat, p.kind)),
            ("interface", &Markup::text(&p.interface)),
            (
                "mtu",
                &p.mtu.map_or(missing.clone(), |m| number(format::count(m))),
            ),
            ("address", &Markup::text(&p.client_address)),
        ],
    )];
    if let Some(separate) = reach.separate_namespace {
        parts.push(cat.text(if separate {
            "path.namespace_separate"
        } else {
            "path.namespace_same"
        }));
    }
    Markup::join(&parts, &cat.text("list.semicolon"))
}

/// The machine the server ran on, set against the client's: the same, another (described),
/// or `missing` when the archive does not say.
pub fn server_machine(
    cat: &Catalog,
    server: Option<&HostInfo>,
    client: &HostInfo,
    missing: &Markup,
) -> Markup {
    match server {
        None => missing.clone(),
        Some(s) if s == client => cat.text("path.machine_same"),
        Some(s) => {
            let text = |v: &Option<String>| v.as_deref().map_or(missing.clone(), Markup::text);
            cat.fill(
                "path.machine_other",
                &[
                    ("cpu", &text(&s.cpu)),
                    (
                        "cpus",
                        &s.logical_cpus
                            .map_or(missing.clone(), |n| Markup::trusted(n.to_string())),
                    ),
                    ("kernel", &text(&s.release)),
                ],
            )
        }
    }
}

/// What the CPU figures of `d` cover: client and server in one process, or, against an
/// external server, echomark's client alone.
pub fn cpu_note(cat: &Catalog, d: &Dataset) -> Markup {
    cat.text(if d.measures_external_servers() {
        "overview.cpu_note_external"
    } else {
        "overview.cpu_note"
    })
}

/// A duration as the archive's settings give it, printed like arknet (`1.0`, `0.25`).
pub fn seconds(v: f64) -> Markup {
    Markup::trusted(format!("{v:?}"))
}

/// The `seconds`, `warmup` and `repetitions` placeholders of a dataset's settings.
pub fn timing(d: &Dataset) -> [Markup; 3] {
    let f = d.files.first();
    [
        seconds(f.map_or(0.0, |f| f.seconds)),
        seconds(f.map_or(0.0, |f| f.warmup)),
        Markup::trusted(d.repetitions().to_string()),
    ]
}

/// The catalog key of the note under a backend comparison of `d`: what a backend is there
/// (a runtime in the client's process, echomark's `serve` on each runtime apart, or any
/// server).
pub fn backend_note_key(d: &crate::model::Dataset) -> &'static str {
    if d.own_servers_apart().is_some() {
        "compare.backend_note_own_servers"
    } else if d.measures_external_servers() {
        "compare.backend_note_external"
    } else {
        "compare.backend_note"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(generators: Option<u64>) -> CaseKey {
        let mut k = crate::model::tests::run(Protocol::Tcp, 1).key;
        k.window = 1;
        k.generators = generators;
        k
    }

    #[test]
    fn a_fleets_generators_lead_its_load_in_both_languages() {
        let cats = super::super::i18n::catalogs();
        let (en, zh) = (&cats[0], &cats[1]);
        assert_eq!(
            load(en, &key(Some(4))).as_str(),
            "1,024 B / 4 generators × 16 clients / window 1"
        );
        assert_eq!(
            load(en, &key(Some(1))).as_str(),
            "1,024 B / 1 generator × 16 clients / window 1"
        );
        assert_eq!(
            load(zh, &key(Some(4))).as_str(),
            "1,024 B / 4 台生成器 × 16 个客户端 / 窗口 1"
        );
        assert_eq!(
            load(en, &key(None)).as_str(),
            "1,024 B / 16 clients / window 1"
        );
        assert_eq!(connections_short(en, &key(Some(4))), "4 generators × 16×1");
        assert_eq!(connections_short(zh, &key(Some(2))), "2 台生成器 × 16×1");
        assert_eq!(connections_short(en, &key(None)), "16×1");
        assert_eq!(
            fleet_clients(zh, Some(1_000), 16).as_str(),
            "1,000 台生成器 × 16 个客户端",
            "the same digit grouping as English"
        );
        assert_eq!(
            program_protocol_at(en, Protocol::Tcp, "echomark", Some(2)).as_str(),
            "TCP · 2 generators"
        );
    }
}
