//! The site-wide UDP report (after seed `000_b55edc78a3d3ef76.txt`): test conditions,
//! correctness and pass counts per dataset and backend, throughput and latency at the main
//! load, the receive-buffer isolation table, Linux buffer notes, reproduction and evidence.

use echomark_archive::{PathKind, Protocol};
use serde::Serialize;

use super::{once_command, ChartFile, DatasetView, Image, PageSpec};
use crate::analysis::udp::{self, Reproduction};
use crate::format;
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::Markup;
use crate::site::table::{Align, Table};

mod load;
use load::{isolation_section, throughput_section};

/// The model of the site-wide UDP report: every number and label it shows, in the page's
/// language.
#[derive(Debug, Serialize)]
pub struct UdpPage {
    /// How many runs of how many datasets, how many passed.
    pub lead: Markup,
    /// One row per dataset: its date, host, timing, buffers and hashes.
    pub conditions: Table,
    /// Per dataset its UDP soaks, then each backend's passes and worst loss.
    pub correctness: Table,
    pub throughput_intro: Markup,
    /// One row per configuration at the report's load.
    pub throughput: Table,
    pub images: Vec<Image>,
    /// Requested → read-back server receive buffers, one row per distinct pair.
    pub readbacks: Table,
    /// One row per receive-buffer isolation case: its loss in every run, and the invariants
    /// a run broke.
    pub isolation: Table,
    pub isolation_intro: Markup,
    pub failed_command: Option<Markup>,
    /// What the lossy run's loss means, with its counters.
    pub overflow_callout: Option<Markup>,
    /// The change that makes the lossy load pass, and that passing run.
    pub fix: Option<Markup>,
    pub passed_command: Option<Markup>,
    /// Per dataset: its UDP page, heat maps and summary.json.
    pub links: Vec<Markup>,
    pub evidence: Markup,
    pub scope: Markup,
    /// The QUIC report, when the site has one (where the seed points to its RUDP report).
    pub quic_link: Option<Markup>,
    /// The chart files the images show (written beside the page; not part of its
    /// template's context).
    #[serde(skip)]
    pub charts: Vec<ChartFile>,
}

/// The load of the throughput table and charts (the seed's: 1,024 B, 16 clients, window 1).
const PAYLOAD: u64 = 1024;
const CLIENTS: u64 = 16;
const WINDOW: u64 = 1;
/// How many charts the report draws at most.
const IMAGES_SHOWN: usize = 4;

/// The receive-queue overflow callout of a lossy run: its loss and the kernel counter that
/// says where the datagrams went.
fn callout(cat: &Catalog, repro: &Reproduction) -> Markup {
    let lost = labels::count(repro.lost);
    let mut text = loss_meaning(cat, repro, &lost);
    if let Some(r) = &repro.readings {
        let n = |v: u64| labels::count(v);
        let opt = |v: Option<u64>| v.map_or(cat.text("overview.not_recorded"), n);
        text.push(&cat.text("site.sentence_sep"));
        text.push(&cat.fill(
            "udp.readings",
            &[
                ("before", &n(r.rcvbuf_errors_before)),
                ("after", &n(r.rcvbuf_errors_after)),
                (
                    "delta",
                    &n(r.rcvbuf_errors_after.saturating_sub(r.rcvbuf_errors_before)),
                ),
                ("frag", &opt(r.frag_creates)),
                ("reqds", &opt(r.reasm_reqds)),
                ("fails", &opt(r.reasm_fails)),
            ],
        ));
    }
    text
}

/// The callout's first sentences: the loss against the kernel's drop counter.
fn loss_meaning(cat: &Catalog, repro: &Reproduction, lost: &Markup) -> Markup {
    let lost = lost.clone();
    match repro.kernel_delta {
        Some(k) if k == repro.lost => cat.fill("udp.callout_matched", &[("lost", &lost)]),
        Some(k) => cat.fill(
            "udp.callout_differs",
            &[("lost", &lost), ("kernel", &labels::count(k))],
        ),
        None => cat.fill("udp.callout_unknown", &[("lost", &lost)]),
    }
}

/// The address families the UDP runs used: "IPv4", "IPv4 and IPv6", …
fn families(cat: &Catalog, views: &[&DatasetView]) -> Markup {
    let present: std::collections::BTreeSet<&str> = views
        .iter()
        .flat_map(|v| v.dataset.runs.iter())
        .filter(|r| r.key.protocol == Protocol::Udp)
        .map(|r| match r.address_family {
            echomark_archive::AddressFamily::Ipv4 => "IPv4",
            echomark_archive::AddressFamily::Ipv6 => "IPv6",
        })
        .collect();
    let names: Vec<Markup> = present.into_iter().map(Markup::trusted).collect();
    labels::join_and(cat, &names)
}

/// What the report covers: the address families and, where any dataset left loopback, the
/// paths; a network between hosts is disclaimed unless a dataset crossed one.
fn scope(cat: &Catalog, views: &[&DatasetView]) -> Markup {
    let kinds: std::collections::BTreeSet<PathKind> =
        views.iter().map(|v| v.dataset.path_kind()).collect();
    let key = if kinds.contains(&PathKind::Network) {
        "udp.scope_network"
    } else if kinds.iter().any(|&k| k != PathKind::Loopback) {
        "udp.scope_paths"
    } else {
        "udp.scope"
    };
    let paths: Vec<Markup> = kinds
        .into_iter()
        .map(|k| labels::path_kind(cat, k))
        .collect();
    cat.fill(
        key,
        &[
            ("families", &families(cat, views)),
            ("paths", &labels::join_and(cat, &paths)),
        ],
    )
}

/// A dataset's row of the test conditions: its name, date, host, timing, buffers and hashes.
fn conditions_row(cat: &Catalog, view: &DatasetView, not_recorded: &Markup) -> Vec<Markup> {
    let d = view.dataset;
    let f = d.files.first();
    let [seconds, warmup, repetitions] = labels::timing(d);
    let measurement = cat.fill(
        "udp.measurement",
        &[
            ("seconds", &seconds),
            ("warmup", &warmup),
            ("repetitions", &repetitions),
            (
                "timeout",
                &f.and_then(|f| f.udp_timeout_ms)
                    .map_or(not_recorded.clone(), |t| Markup::trusted(format!("{t} ms"))),
            ),
        ],
    );
    let size = |v: Option<u64>| {
        v.map_or(not_recorded.clone(), |b| {
            Markup::trusted(format::whole_mib_or_kib(b))
        })
    };
    let buffers = view.analysis.udp.buffers.map_or(not_recorded.clone(), |b| {
        cat.fill(
            "udp.buffers",
            &[
                ("send", &size(b.send_requested)),
                ("recv", &size(b.server_receive_requested)),
                ("actual", &size(b.server_receive_actual)),
            ],
        )
    });
    let recorded = f
        .and_then(|f| f.recorded_at_utc.as_deref())
        .map_or(not_recorded.clone(), |r| {
            Markup::text(r.get(..10).unwrap_or(r))
        });
    let short = |h: Option<&str>| {
        h.map_or(not_recorded.clone(), |h| {
            Markup::trusted(format!("`{}`", Markup::text(format::short_hash(h))))
        })
    };
    let hashes = cat.fill(
        "udp.hashes",
        &[
            ("source", &short(f.and_then(|f| f.source_sha256.as_deref()))),
            (
                "executable",
                &short(f.and_then(|f| f.executable_sha256.as_deref())),
            ),
        ],
    );
    vec![
        Markup::trusted(format!(
            "[{}]({}/overview.md)",
            Markup::text(&d.name),
            view.slug()
        )),
        recorded,
        labels::host(cat, d, not_recorded),
        measurement,
        buffers,
        hashes,
    ]
}

/// A dataset's line of links: its UDP page, heat maps and summary.json.
fn links_line(cat: &Catalog, view: &DatasetView) -> Markup {
    let slug = view.slug();
    let mut own = vec![Markup::trusted(format!(
        "[{}]({slug}/udp.md)",
        labels::protocol(cat, Protocol::Udp)
    ))];
    if super::dimensions::applies(view, Protocol::Udp) {
        own.push(Markup::trusted(format!(
            "[{}]({slug}/dimensions-udp.md)",
            cat.text("udp.heatmaps")
        )));
    }
    own.push(Markup::trusted(format!(
        "[summary.json](../data/{slug}/summary.json)"
    )));
    let mut line = Markup::text(&view.dataset.name);
    line.push(&Markup::trusted(": "));
    line.push(&Markup::join(&own, &Markup::trusted(" · ")));
    line
}

/// A dataset's rows of the correctness table: its UDP soaks, then each backend's passes.
fn correctness_rows(cat: &Catalog, view: &DatasetView) -> Vec<Vec<Markup>> {
    let d = view.dataset;
    let name = Markup::text(&d.name);
    let mut rows = Vec::new();
    for soak in d
        .files
        .iter()
        .flat_map(|f| f.soak.iter())
        .filter(|s| s.protocol == Protocol::Udp)
    {
        let secs = labels::number(format::grouped(soak.seconds, 0));
        let result = if soak.passed {
            cat.fill(
                "udp.soak_passed",
                &[
                    ("seconds", &secs),
                    ("echoes", &labels::count(soak.verified_echoes)),
                    ("rounds", &Markup::trusted(soak.rounds.to_string())),
                ],
            )
        } else {
            cat.fill(
                "udp.soak_failed",
                &[
                    ("seconds", &secs),
                    ("reason", &soak.failure.clone().unwrap_or_default()),
                ],
            )
        };
        rows.push(vec![
            name.clone(),
            cat.fill(
                "udp.soak_row",
                &[("protocol", &labels::protocol(cat, soak.protocol))],
            ),
            Markup::default(),
            Markup::default(),
            result,
        ]);
    }
    let of =
        |a: u64, b: u64| Markup::trusted(format!("{} / {}", format::count(a), format::count(b)));
    for passes in &view.analysis.udp.backends {
        let mut result = if passes.configurations_failed == 0 {
            cat.text("udp.all_passed")
        } else {
            cat.fill(
                "udp.some_failed",
                &[
                    (
                        "n",
                        &Markup::trusted(passes.configurations_failed.to_string()),
                    ),
                    ("loss", &labels::count(passes.worst_loss)),
                ],
            )
        };
        if let Some(late) = passes.late.filter(|&n| n > 0) {
            result = cat.fill(
                "udp.late",
                &[("result", &result), ("late", &labels::count(late))],
            );
        }
        rows.push(vec![
            name.clone(),
            labels::backend(cat, &passes.backend),
            of(passes.runs_passed, passes.runs),
            of(
                passes.configurations - passes.configurations_failed,
                passes.configurations,
            ),
            result,
        ]);
    }
    rows
}

/// The reproduction: the lossy run's command, the callout of what its loss means, the fix
/// and the passing run's command (or, without a passing partner, the first passing run's).
struct ReproductionSection {
    failed_command: Option<Markup>,
    overflow_callout: Option<Markup>,
    fix: Option<Markup>,
    passed_command: Option<Markup>,
}

fn reproduction_section(
    cat: &Catalog,
    views: &[&DatasetView],
    not_recorded: &Markup,
) -> ReproductionSection {
    let code = |c: &str| once_command(c).map(|c| Markup::code_block("sh", &[c]));
    let mut out = ReproductionSection {
        failed_command: None,
        overflow_callout: None,
        fix: None,
        passed_command: None,
    };
    if let Some(repro) = udp::best_reproduction(views.iter().map(|v| &v.analysis.udp)) {
        out.failed_command = code(&repro.command);
        out.overflow_callout = Some(callout(cat, repro));
        if let Some(partner) = &repro.passing {
            let buffer = |b: Option<u64>| {
                b.map_or(not_recorded.clone(), |b| {
                    Markup::trusted(format::buffer_size(b))
                })
            };
            out.fix = Some(cat.fill(
                "udp.fix",
                &[
                    ("from", &buffer(repro.server_buffer)),
                    ("to", &buffer(Some(partner.server_buffer))),
                ],
            ));
            out.passed_command = code(&partner.command);
        }
    }
    if out.passed_command.is_none() {
        out.passed_command = views
            .iter()
            .find_map(|v| v.analysis.udp.passed_command.as_deref())
            .and_then(code);
    }
    out
}

/// Links to every raw archive of the datasets.
fn evidence(views: &[&DatasetView]) -> Vec<Markup> {
    views
        .iter()
        .flat_map(|view| {
            let name = Markup::text(&view.dataset.name);
            let slug = view.slug();
            view.dataset.files.iter().map(move |f| {
                let published = crate::site::published_archive_name(&f.name);
                Markup::trusted(format!(
                    "[{name}/{}](../data/{slug}/{published})",
                    Markup::text(&published),
                ))
            })
        })
        .collect()
}

/// The site-wide UDP report, when any dataset measured UDP.
pub fn page(cat: &Catalog, views: &[DatasetView]) -> Option<PageSpec> {
    let mut model = model(cat, views)?;
    let charts = std::mem::take(&mut model.charts);
    Some(PageSpec::new(
        format!("{}/udp-report", cat.code),
        "udp.md",
        cat.text("udp.title"),
        &model,
        charts,
    ))
}

/// The per-dataset tables of the report: test conditions, correctness, buffer read-backs.
fn dataset_tables(
    cat: &Catalog,
    views: &[&DatasetView],
    not_recorded: &Markup,
) -> (Table, Table, Table) {
    use Align::{Default as L, Right as R};
    let mut conditions = Table::new(cat.list("udp.conditions_columns", &[]), &[]);
    let mut correctness = Table::new(cat.list("udp.correctness_columns", &[]), &[L, L, R, R, L]);
    let mut readbacks = Table::new(cat.list("udp.readback_columns", &[]), &[L, R, R]);
    for view in views {
        conditions.push(conditions_row(cat, view, not_recorded));
        for (request, actual) in &view.analysis.udp.readbacks {
            readbacks.push(vec![
                Markup::text(&view.dataset.name),
                Markup::trusted(format::whole_mib_or_kib(*request)),
                Markup::trusted(format::whole_mib_or_kib(*actual)),
            ]);
        }
        for row in correctness_rows(cat, view) {
            correctness.push(row);
        }
    }
    (conditions, correctness, readbacks)
}

/// The model of the site-wide UDP report, when any dataset measured UDP.
pub fn model(cat: &Catalog, views: &[DatasetView]) -> Option<UdpPage> {
    // Imported datasets have their own page: iperf3's datagrams are not echoes.
    let with_udp: Vec<&DatasetView> = views
        .iter()
        .filter(|v| v.analysis.udp.runs > 0 && !v.dataset.has_imported())
        .collect();
    if with_udp.is_empty() {
        return None;
    }
    let not_recorded = cat.text("overview.not_recorded");
    let (conditions, correctness, readbacks) = dataset_tables(cat, &with_udp, &not_recorded);
    let (throughput, images, charts) = throughput_section(cat, &with_udp);
    let (isolation, isolation_intro) = isolation_section(cat, &with_udp, &not_recorded);
    let repro = reproduction_section(cat, &with_udp, &not_recorded);
    let totals = udp::Totals::of(with_udp.iter().map(|v| &v.analysis.udp));
    let count = |n: u64| labels::count(n);
    Some(UdpPage {
        lead: cat.fill(
            "udp.lead",
            &[
                ("runs", &count(totals.runs)),
                ("datasets", &Markup::trusted(totals.datasets.to_string())),
                ("passed", &count(totals.runs_passed)),
                ("failed", &count(totals.configurations_failed)),
            ],
        ),
        conditions,
        correctness,
        throughput_intro: cat.fill(
            "udp.throughput_intro",
            &[
                ("payload", &count(PAYLOAD)),
                ("clients", &labels::clients(cat, CLIENTS)),
                ("window", &Markup::trusted(WINDOW.to_string())),
            ],
        ),
        throughput,
        images,
        readbacks,
        isolation,
        isolation_intro,
        failed_command: repro.failed_command,
        overflow_callout: repro.overflow_callout,
        fix: repro.fix,
        passed_command: repro.passed_command,
        links: with_udp.iter().map(|v| links_line(cat, v)).collect(),
        evidence: cat.fill(
            "udp.evidence",
            &[(
                "links",
                &Markup::join(&evidence(&with_udp), &Markup::trusted(" · ")),
            )],
        ),
        scope: scope(cat, &with_udp),
        quic_link: super::quic_report::exists(views).then(|| {
            let href = Markup::trusted(format!("{}.md", super::quic_report::STEM));
            cat.fill("quic.udp_link", &[("href", &href)])
        }),
        charts,
    })
}

#[cfg(test)]
mod tests;
