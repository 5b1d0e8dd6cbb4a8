//! A dataset's overview page: test conditions, key results per backend, the main charts, the
//! choosing-an-IO-model table, excluded configurations, toolchain, raw data and scope.

use std::collections::{BTreeMap, BTreeSet};

use echomark_archive::{AddressFamily, Metric, Protocol};
use serde::Serialize;

use super::charts as chart_model;
use super::failures::{failed_table, raw_reasons};
use super::key_results::{key_result, KeyContext};
use super::provenance::{host_table, toolchain};
use super::{once_command, ChartFile, DatasetView, Image, PageSpec};
use crate::analysis::aggregate::Configuration;
use crate::analysis::backends;
use crate::analysis::findings::io_model::IoModelFinding;
use crate::analysis::rank::Ranking;
use crate::format;
use crate::output::safe_name;
use crate::reproduce::commands;
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::Markup;
use crate::site::table::{Align, Table};

/// The page model.
#[derive(Serialize)]
struct OverviewPage {
    title: Markup,
    lead: Markup,
    cpu_note: Markup,
    host: Table,
    settings_line: Markup,
    main_load: Markup,
    cpu_share: Markup,
    key_results: Vec<Markup>,
    key_caveat: Markup,
    throughput_charts: Vec<Image>,
    p99_charts: Vec<Image>,
    /// Absent when every load was measured with one IO model: there is nothing to choose.
    choosing: Option<Table>,
    /// Said instead of key results when every load was measured with one IO model.
    one_model: Option<Markup>,
    guide: Table,
    /// Each other backend (or server) against the base one, when the dataset has several.
    backends: Vec<BackendsSection>,
    /// Open loop: per protocol, whose knee comes latest (or that none is distinguishable).
    knee_answers: Vec<Markup>,
    /// What this dataset answers together with another (a veth dataset against its loopback
    /// companion), as the index says it.
    across: Vec<Markup>,
    /// UDP buffer isolation: loss against the server's receive buffer.
    buffer_answer: Option<BufferAnswer>,
    /// When the IO model is all the dataset varies: in how many loads one model wins.
    io_model_answer: Option<Markup>,
    protocols: Vec<ProtocolLink>,
    /// Present when the dataset has arknet's native program, whose RTT is per batch.
    batch_rtt_caveat: Option<Markup>,
    summary_json: Markup,
    summary_csv: Markup,
    failed: Table,
    raw_reasons: Vec<Markup>,
    toolchain: Table,
    metrics_text: Markup,
    source_hash: Markup,
    raw_files: Vec<Markup>,
    commands: Option<Markup>,
    /// What to build first, with a link to the README's install section.
    commands_intro: Markup,
    one_run: Option<Markup>,
    warnings: Vec<Markup>,
    scope_text: Markup,
}

/// Which backend's fastest model won each load.
#[derive(Serialize)]
struct BackendsSection {
    summary: Markup,
    table: Table,
}

/// Loss against buffer size: one sentence and the table it summarises.
#[derive(Serialize)]
struct BufferAnswer {
    summary: Markup,
    table: Table,
}

#[derive(Serialize)]
struct ProtocolLink {
    label: Markup,
    link: Markup,
}

/// How many validation notes the page lists.
const WARNINGS_SHOWN: usize = 20;

/// The load the overview charts and key results use: 1,024 B (or the nearest payload) at
/// the largest client count, among the loads the dataset measured with a valid
/// configuration (a load whose every configuration failed cannot be a headline).
fn main_load(configs: &[&Configuration]) -> Option<(u64, u64)> {
    let valid: Vec<&&Configuration> = configs
        .iter()
        .filter(|c| c.status == crate::analysis::aggregate::Status::Valid)
        .collect();
    let clients = valid.iter().map(|c| c.key.clients).max()?;
    let payload = valid
        .iter()
        .filter(|c| c.key.clients == clients)
        .map(|c| c.key.payload_bytes)
        .min_by_key(|p| (p.abs_diff(1024), *p))?;
    Some((payload, clients))
}

/// The windows of the main charts: "UDP window 1, other protocols window 16". Protocols with
/// the same windows share one phrase; the largest such group is "other protocols".
fn windows_note(cat: &Catalog, view: &DatasetView, payload: u64, clients: u64) -> Markup {
    let mut by_protocol: BTreeMap<(usize, Protocol), BTreeSet<u64>> = BTreeMap::new();
    for c in view
        .configs
        .iter()
        .filter(|c| c.key.payload_bytes == payload && c.key.clients == clients)
    {
        by_protocol
            .entry((labels::protocol_rank(c.key.protocol), c.key.protocol))
            .or_default()
            .insert(c.key.window);
    }
    let mut groups: Vec<(String, Vec<Markup>)> = Vec::new();
    for ((_, protocol), windows) in &by_protocol {
        let windows = windows
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join("/");
        let label = labels::protocol(cat, *protocol);
        match groups.iter_mut().find(|(w, _)| *w == windows) {
            Some((_, labels)) => labels.push(label),
            None => groups.push((windows, vec![label])),
        }
    }
    let largest = groups
        .iter()
        .enumerate()
        .max_by_key(|(i, (_, labels))| (labels.len(), std::cmp::Reverse(*i)))
        .map(|(i, _)| i);
    let mut phrases = Vec::new();
    let mut others = None;
    for (i, (windows, names)) in groups.iter().enumerate() {
        let windows = Markup::trusted(windows.clone());
        if groups.len() > 1 && Some(i) == largest && names.len() > 1 {
            others = Some(cat.fill("overview.others_window", &[("windows", &windows)]));
        } else {
            let who = labels::join_list(cat, names);
            phrases.push(cat.fill(
                "overview.window_of",
                &[("protocols", &who), ("windows", &windows)],
            ));
        }
    }
    phrases.extend(others);
    Markup::join(&phrases, &cat.text("overview.phrase_sep"))
}

/// Key results and the main charts at the dataset's main load.
struct MainLoad {
    text: Markup,
    caveat: Markup,
    key_results: Vec<Markup>,
    throughput: Vec<Image>,
    p99: Vec<Image>,
    charts: Vec<ChartFile>,
}

fn main_load_section(cat: &Catalog, view: &DatasetView) -> Option<MainLoad> {
    let (payload, clients) = main_load(&view.configs)?;
    let (p, c) = (
        labels::number(format::count(payload)),
        labels::clients(cat, clients),
    );
    let key = if view.dataset.measures_external_servers() {
        labels::for_path("overview.main_load_external", view.dataset)
    } else {
        "overview.main_load".to_string()
    };
    let text = cat.fill(
        &key,
        &[
            ("payload", &p),
            ("clients", &c),
            ("windows", &windows_note(cat, view, payload, clients)),
        ],
    );
    let caveat = cat.fill("overview.key_caveat", &[("payload", &p), ("clients", &c)]);
    let mut main: Vec<&IoModelFinding> = view
        .analysis
        .io_models
        .iter()
        .filter(|f| f.group.payload_bytes == payload && f.group.clients == clients)
        .collect();
    main.sort_by_key(|f| {
        (
            f.group.backend.clone(),
            labels::protocol_rank(f.group.protocol),
            f.group.implementation.clone(),
            f.group.handler_work,
            f.group.window,
        )
    });
    // A load measured at several windows needs the window in its bullet to be told apart.
    let mut windows_of: BTreeMap<(&str, &str, Protocol, u64), BTreeSet<u64>> = BTreeMap::new();
    for f in &main {
        let g = &f.group;
        windows_of
            .entry((&g.backend, &g.implementation, g.protocol, g.handler_work))
            .or_default()
            .insert(g.window);
    }
    let ctx = KeyContext {
        several_windows: windows_of.values().any(|w| w.len() > 1),
    };
    let key_results = main.iter().map(|f| key_result(cat, f, &ctx)).collect();
    let (mut throughput, mut p99, mut charts) = (Vec::new(), Vec::new(), Vec::new());
    let backends: BTreeSet<&str> = view
        .configs
        .iter()
        .map(|c| c.key.backend.as_str())
        .collect();
    for backend in backends {
        // Per protocol, the largest window measured at this load.
        let mut selected: Vec<&Configuration> = view
            .configs
            .iter()
            .copied()
            .filter(|c| {
                c.key.backend == backend
                    && c.key.payload_bytes == payload
                    && c.key.clients == clients
                    && c.key.handler_work == 0
            })
            .filter(|c| {
                view.configs
                    .iter()
                    .filter(|o| {
                        o.key.protocol == c.key.protocol
                            && o.key.payload_bytes == payload
                            && o.key.clients == clients
                    })
                    .map(|o| o.key.window)
                    .max()
                    == Some(c.key.window)
            })
            .collect();
        selected.sort_by_key(|c| {
            (
                labels::protocol_rank(c.key.protocol),
                c.key.implementation.clone(),
            )
        });
        let group_of = |c: &Configuration| {
            labels::program_protocol(cat, c.key.protocol, &c.key.implementation).to_string()
        };
        let b = safe_name(backend);
        for (metric, title_key, out) in [
            (
                Metric::RoundtripsPerSecond,
                "chart.overview_throughput",
                &mut throughput,
            ),
            (Metric::RttP99Us, "chart.overview_p99", &mut p99),
        ] {
            let mut title = Markup::text(&view.dataset.name);
            title.push(&Markup::trusted(" · "));
            title.push(&labels::backend(cat, backend));
            title.push(&Markup::trusted(" · "));
            title.push(&cat.fill(title_key, &[("payload", &p), ("clients", &c)]));
            title.push(&Markup::trusted(", "));
            title.push(&windows_note(cat, view, payload, clients));
            let chart = chart_model::bars(cat, &title, metric, &selected, &group_of);
            let rel = format!("charts/overview-{b}-{}.svg", chart_model::suffix(metric));
            out.push(Image::new(title, &rel));
            charts.push(chart_model::bar_file(rel, &chart));
        }
    }
    Some(MainLoad {
        text,
        caveat,
        key_results,
        throughput,
        p99,
        charts,
    })
}

/// The dataset's rankings, protocols in page order; within a protocol they keep their load
/// order (the sort is stable).
fn in_protocol_order<'a>(view: &DatasetView<'a>) -> Vec<&'a Ranking> {
    let mut rankings = view.rankings.to_vec();
    rankings.sort_by_key(|r| labels::protocol_rank(r.group.protocol));
    rankings
}

/// The choosing-an-IO-model table: per load, the fastest valid model.
fn choosing(cat: &Catalog, view: &DatasetView) -> Table {
    use Align::{Default as L, Right as R};
    let mut table = Table::new(
        cat.list("overview.choose_columns", &[]),
        &[L, L, L, L, L, R],
    );
    let dash = || Markup::trusted("—");
    let verdict = |v: Option<bool>| match v {
        Some(true) => cat.text("overview.distinct"),
        Some(false) => cat.text("overview.overlap"),
        None => dash(),
    };
    for r in in_protocol_order(view) {
        let g = &r.group;
        let mut load = labels::load(cat, &r.best_key());
        if g.handler_work > 0 {
            load.push(&Markup::trusted(", "));
            load.push(&labels::work(cat, g.handler_work));
        }
        let vs_base = match r.speedup {
            Some(s) if r.distinguishable_from_baseline.is_some() => cat.fill(
                "overview.ratio_verdict",
                &[
                    ("ratio", &labels::number(format::ratio(s))),
                    ("verdict", &verdict(r.distinguishable_from_baseline)),
                ],
            ),
            Some(s) => labels::number(format::ratio(s)),
            None => dash(),
        };
        let mut what = labels::protocol(cat, g.protocol);
        what.push(&Markup::trusted(" / "));
        what.push(&labels::backend(cat, &g.backend));
        let best = labels::topology(cat, &g.backend, r.best.io_model, r.best.io_threads);
        let fastest = match (&r.runner_up, r.distinguishable_from_runner_up) {
            (Some(second), Some(false)) => cat.fill(
                "overview.no_winner",
                &[
                    ("best", &best),
                    (
                        "runner_up",
                        &labels::topology(cat, &g.backend, second.io_model, second.io_threads),
                    ),
                ],
            ),
            _ => best,
        };
        table.push(vec![
            what,
            load,
            fastest,
            vs_base,
            verdict(r.distinguishable_from_runner_up),
            if r.excluded.is_empty() {
                dash()
            } else {
                Markup::trusted(r.excluded.len().to_string())
            },
        ]);
    }
    table
}

/// Every other backend (or external server) against the base one (tokio, or echomark's own
/// server, when present), in name order.
fn backends_sections(cat: &Catalog, view: &DatasetView) -> Vec<BackendsSection> {
    let present: BTreeSet<&str> = view
        .rankings
        .iter()
        .map(|r| r.group.backend.as_str())
        .collect();
    let Some(base) = backends::base_backend(&present) else {
        return Vec::new();
    };
    present
        .iter()
        .copied()
        .filter(|b| *b != base)
        .filter_map(|subject| backends_section(cat, view, subject, base))
        .collect()
}

/// Per load, `subject`'s fastest model against `base`'s; a winner is named only where the
/// two ranges do not overlap.
fn backends_section(
    cat: &Catalog,
    view: &DatasetView,
    subject: &str,
    base: &str,
) -> Option<BackendsSection> {
    let (s_label, b_label) = (labels::backend(cat, subject), labels::backend(cat, base));
    let duels = backends::duels(&in_protocol_order(view), subject, base);
    if duels.is_empty() {
        return None;
    }
    let count = |v: backends::Verdict| {
        let n = duels.iter().filter(|d| d.verdict == v).count() as u64;
        labels::number(format::count(n))
    };
    let external = view.dataset.measures_external_servers();
    let mut summary = cat.fill(
        if external {
            "overview.servers_summary"
        } else {
            "overview.backends_summary"
        },
        &[
            ("subject", &s_label),
            ("base", &b_label),
            ("higher", &count(backends::Verdict::SubjectHigher)),
            ("lower", &count(backends::Verdict::SubjectLower)),
            ("same", &count(backends::Verdict::NotDistinguishable)),
            ("total", &labels::number(format::count(duels.len() as u64))),
        ],
    );
    if let Some(r) = backends::duel_ratios(&duels) {
        let x = |v: f64| labels::number(format::ratio(v));
        summary.push(&cat.text("site.sentence_sep"));
        summary.push(&cat.fill(
            "overview.backends_ratio",
            &[
                ("subject", &s_label),
                ("base", &b_label),
                ("ratio", &x(r.median)),
                ("min", &x(r.min)),
                ("max", &x(r.max)),
            ],
        ));
    }
    // Whether the two were measured interleaved, as far as the archives' times tell.
    let interleaved: Vec<Option<bool>> = view
        .protocols()
        .into_iter()
        .map(|p| view.dataset.backends_interleaved(p))
        .collect();
    let timing = if interleaved.iter().all(|i| *i == Some(true)) {
        Some("overview.backends_interleaved")
    } else if interleaved.contains(&Some(false)) {
        Some("overview.backends_sequential")
    } else {
        None
    };
    if let Some(key) = timing {
        summary.push(&cat.text("site.sentence_sep"));
        summary.push(&cat.text(key));
    }
    // What else differs between the two sides, as every page that compares them says.
    summary.push(&cat.text("site.sentence_sep"));
    summary.push(&cat.text(if external {
        "compare.backend_note_external"
    } else {
        "compare.backend_note"
    }));
    let names: [(&str, &dyn crate::site::markup::Fill); 2] =
        [("subject", &s_label), ("base", &b_label)];
    let mut table = Table::new(cat.list("overview.backends_columns", &names), &[]);
    let model =
        |r: &Ranking| labels::topology(cat, &r.group.backend, r.best.io_model, r.best.io_threads);
    let best = |r: &Ranking| {
        cat.fill(
            "overview.backend_best",
            &[
                ("model", &model(r)),
                (
                    "rate",
                    &labels::range(Some(r.best.roundtrips_per_second), 0),
                ),
            ],
        )
    };
    for d in &duels {
        let winner = |r: &Ranking, label: &Markup| {
            cat.fill(
                "overview.backend_winner",
                &[("backend", label), ("model", &model(r))],
            )
        };
        let faster = match d.verdict {
            backends::Verdict::SubjectHigher => winner(d.subject, &s_label),
            backends::Verdict::SubjectLower => winner(d.base, &b_label),
            backends::Verdict::NotDistinguishable => cat.text("compare.not_distinguishable"),
        };
        let g = &d.base.group;
        table.push(vec![
            labels::program_protocol(cat, g.protocol, &g.implementation),
            labels::load(cat, &d.base.best_key()),
            best(d.base),
            best(d.subject),
            faster,
        ]);
    }
    Some(BackendsSection { summary, table })
}

/// One sentence per knee finding: the curve that holds its p99 to the highest offered rate,
/// or the candidates when the knees do not tell the curves apart.
fn knee_answers(cat: &Catalog, view: &DatasetView) -> Vec<Markup> {
    use crate::analysis::load_curve::KNEE_MULTIPLE;
    let link = Markup::trusted("load.md");
    view.analysis
        .knees
        .iter()
        .map(|f| {
            let curve = |i: usize| view.curves[i];
            let model = |i: usize| {
                let k = &curve(i).key;
                labels::topology(cat, &k.backend, k.io_model, k.io_threads)
            };
            let knee_of = |i: usize| {
                let c = curve(i);
                c.knee.map(|k| c.points[k].offered_rate)
            };
            let first = curve(f.curves[0]);
            let what = cat.fill(
                "overview.knee_group",
                &[
                    ("protocol", &labels::protocol(cat, f.protocol)),
                    ("payload", &labels::number(format::count(f.payload_bytes))),
                ],
            );
            let baseline = labels::number(first.baseline_p99.map_or("N/A".into(), format::latency));
            let multiple = Markup::trusted(format::grouped(KNEE_MULTIPLE, 0));
            let args = |key: &str, extra: &[(&str, &dyn crate::site::markup::Fill)]| {
                let mut all: Vec<(&str, &dyn crate::site::markup::Fill)> = vec![
                    ("what", &what),
                    ("baseline", &baseline),
                    ("multiple", &multiple),
                    ("link", &link),
                ];
                all.extend_from_slice(extra);
                cat.fill(key, &all)
            };
            let rate = |i: usize| labels::number(knee_of(i).map_or("N/A".into(), format::count));
            match f.latest {
                None => args("overview.knee_none", &[]),
                Some(l) if f.distinguishable => args(
                    "overview.knee_winner",
                    &[("model", &model(l)), ("rate", &rate(l))],
                ),
                Some(l) => {
                    let candidates: Vec<Markup> = std::iter::once(l)
                        .chain(f.ties.iter().copied())
                        .map(|i| {
                            cat.fill(
                                "overview.knee_candidate",
                                &[("model", &model(i)), ("rate", &rate(i))],
                            )
                        })
                        .collect();
                    args(
                        "overview.knee_no_winner",
                        &[("candidates", &labels::join_list(cat, &candidates))],
                    )
                }
            }
        })
        .collect()
}

/// The answer of a dataset whose question is the IO model (one backend or server, several
/// models, no open loop or buffer cases): in how many loads one model is distinguishably
/// the fastest.
fn io_model_answer(cat: &Catalog, view: &DatasetView) -> Option<Markup> {
    let findings = &view.analysis.io_models;
    let backends: BTreeSet<&str> = view
        .configs
        .iter()
        .map(|c| c.key.backend.as_str())
        .collect();
    let other_question = backends.len() > 1
        || !view.analysis.knees.is_empty()
        || view.analysis.udp_buffers.is_some();
    if findings.is_empty() || other_question {
        return None;
    }
    let winners: Vec<_> = findings.iter().filter(|f| f.crowns_a_winner()).collect();
    let n = |x: usize| labels::number(format::count(x as u64));
    Some(
        cat.fill(
            if winners.is_empty() {
                "overview.io_model_answer_none"
            } else {
                "overview.io_model_answer"
            },
            &[
                ("loads", &n(findings.len())),
                ("winners", &n(winners.len())),
                ("ties", &n(findings.len() - winners.len())),
                (
                    "oversubscribed",
                    &n(winners
                        .iter()
                        .filter(|f| f.oversubscribed.is_some())
                        .count()),
                ),
            ],
        ),
    )
}

/// The loss-against-buffer answer of a UDP buffer-isolation dataset.
fn buffer_answer(cat: &Catalog, view: &DatasetView) -> Option<BufferAnswer> {
    let f = view.analysis.udp_buffers.as_ref()?;
    let count = |n: usize| labels::number(format::count(n as u64));
    let summary = cat.fill(
        "overview.buffers_summary",
        &[
            ("loads", &count(f.rows.len())),
            ("fixed", &count(f.fixed_by_a_larger_buffer())),
            ("lossy", &count(f.lossy_at_largest())),
            (
                "largest",
                &Markup::trusted(format::buffer_size(*f.requests.last()?)),
            ),
        ],
    );
    let mut columns = vec![cat.text("overview.buffers_load")];
    columns.extend(f.requests.iter().map(|&r| {
        cat.fill(
            "overview.buffers_request",
            &[("size", &Markup::trusted(format::buffer_size(r)))],
        )
    }));
    let mut align = vec![Align::Left];
    align.extend(f.requests.iter().map(|_| Align::Right));
    let mut table = Table::new(columns, &align);
    for row in &f.rows {
        let mut cells = vec![labels::load(cat, &row.key)];
        for &request in &f.requests {
            cells.push(match row.cells.iter().find(|c| c.requested == request) {
                Some(c) if c.min_lost == c.max_lost => labels::number(format::count(c.median_lost)),
                Some(c) => cat.fill(
                    "overview.buffers_lost_range",
                    &[
                        ("median", &labels::number(format::count(c.median_lost))),
                        ("min", &labels::number(format::count(c.min_lost))),
                        ("max", &labels::number(format::count(c.max_lost))),
                    ],
                ),
                None => Markup::trusted("—"),
            });
        }
        table.push(cells);
    }
    Some(BufferAnswer { summary, table })
}

/// The seed's qualitative table: each IO model, the workloads it suits, what to watch for.
fn guide(cat: &Catalog) -> Table {
    let mut table = Table::new(cat.list("overview.guide_columns", &[]), &[]);
    let rows = cat
        .tree_value("overview.guide_rows")
        .and_then(|v| v.as_array())
        .cloned()
        .unwrap_or_default();
    for row in rows {
        let cells = row.as_array().cloned().unwrap_or_default();
        table.push(
            cells
                .iter()
                .filter_map(|c| c.as_str().map(Markup::trusted))
                .collect(),
        );
    }
    table
}

/// A dataset's overview page.
pub fn page(cat: &Catalog, view: &DatasetView, across: Vec<Markup>) -> PageSpec {
    let d = view.dataset;
    let slug = view.slug();
    let r = &view.analysis.report;
    let first = d.files.first();
    let family = match first.map(|f| f.address_family) {
        Some(AddressFamily::Ipv6) => "IPv6",
        _ => "IPv4",
    };
    let not_recorded = cat.text("overview.not_recorded");
    let cpus = first.and_then(|f| f.host.logical_cpus).filter(|n| *n > 0);
    let cpu_share = match cpus {
        Some(n) => cat.fill(
            "overview.cpu_share",
            &[
                ("cpus", &Markup::trusted(n.to_string())),
                (
                    "share",
                    &Markup::trusted(format!("{:.2}", 100.0 / n as f64)),
                ),
            ],
        ),
        None => cat.text("overview.cpu_share_unknown"),
    };
    let [seconds, warmup, repetitions] = labels::timing(d);
    let settings_line = cat.fill(
        "overview.settings_line",
        &[
            ("seconds", &seconds),
            ("warmup", &warmup),
            ("repetitions", &repetitions),
        ],
    );
    let main = main_load_section(cat, view);
    let raw_files = d
        .files
        .iter()
        .map(|f| {
            cat.fill(
                "overview.file_line",
                &[
                    (
                        "file",
                        &Markup::text(&crate::site::published_archive_name(&f.name)),
                    ),
                    (
                        "link",
                        &Markup::trusted(format!(
                            "../../data/{slug}/{}",
                            crate::site::published_archive_name(&f.name)
                        )),
                    ),
                    ("runs", &labels::number(format::count(f.runs as u64))),
                    (
                        "recorded",
                        &f.recorded_at_utc
                            .as_deref()
                            .map_or(not_recorded.clone(), Markup::text),
                    ),
                    (
                        "hash",
                        &f.executable_sha256
                            .as_deref()
                            .map_or(not_recorded.clone(), Markup::text),
                    ),
                ],
            )
        })
        .collect();
    let commands = commands(d);
    let count = |n: usize| labels::number(format::count(n as u64));
    let title = cat.fill(
        &labels::for_path("overview.title", d),
        &[("dataset", &d.name)],
    );
    let (charts, main) = match main {
        Some(m) => (
            m.charts,
            Some((m.text, m.caveat, m.key_results, m.throughput, m.p99)),
        ),
        None => (Vec::new(), None),
    };
    let (main_load, key_caveat, key_results, throughput_charts, p99_charts) =
        main.unwrap_or_default();
    let several_models = view.rankings.iter().any(|r| r.candidates >= 2);
    let model = OverviewPage {
        cpu_note: labels::cpu_note(cat, d),
        title: title.clone(),
        lead: cat.fill(
            &labels::for_path("overview.lead", d),
            &[
                ("runs", &count(r.runs)),
                ("family", &Markup::trusted(family)),
                ("passed", &count(r.runs_passed)),
                ("configs", &count(r.configurations)),
                ("valid", &count(r.configurations_valid)),
            ],
        ),
        host: host_table(cat, d, &not_recorded),
        settings_line,
        main_load,
        cpu_share,
        key_results,
        key_caveat,
        throughput_charts,
        p99_charts,
        choosing: several_models.then(|| choosing(cat, view)),
        one_model: (!several_models).then(|| cat.text("overview.one_model")),
        backends: backends_sections(cat, view),
        io_model_answer: io_model_answer(cat, view),
        knee_answers: knee_answers(cat, view),
        across,
        buffer_answer: buffer_answer(cat, view),
        guide: guide(cat),
        protocols: view
            .subjects()
            .into_iter()
            .map(|s| ProtocolLink {
                label: labels::subject(cat, s),
                link: Markup::trusted(format!("{}.md", s.slug())),
            })
            .collect(),
        batch_rtt_caveat: view
            .subjects()
            .contains(&super::Subject::NativeTcp)
            .then(|| cat.text("subject.native_overview_caveat")),
        summary_json: Markup::trusted(format!("../../data/{slug}/summary.json")),
        summary_csv: Markup::trusted(format!("../../data/{slug}/summary.csv")),
        failed: failed_table(cat, view, None),
        raw_reasons: raw_reasons(view, None),
        toolchain: toolchain(cat, d, &not_recorded),
        metrics_text: cat.fill(
            "overview.metrics_text",
            &[("link", &Markup::trusted("../methodology.md"))],
        ),
        source_hash: cat.fill(
            "overview.source_hash",
            &[(
                "hash",
                &first
                    .and_then(|f| f.source_sha256.as_deref())
                    .map_or(not_recorded.clone(), Markup::text),
            )],
        ),
        raw_files,
        commands: (!commands.is_empty()).then(|| Markup::code_block("sh", &commands)),
        commands_intro: cat.fill(
            "overview.commands",
            &[("install", &Markup::trusted(crate::reproduce::INSTALL_URL))],
        ),
        one_run: d
            .runs
            .first()
            .and_then(|r| once_command(&r.command))
            .map(|c| Markup::code_block("sh", &[c])),
        warnings: d
            .warnings
            .iter()
            .take(WARNINGS_SHOWN)
            .map(|w| Markup::text(&w.to_string()))
            .collect(),
        scope_text: cat.fill(
            &labels::for_path("overview.scope_text", d),
            &[(
                "cpus",
                &cpus.map_or(not_recorded.clone(), |n| Markup::trusted(n.to_string())),
            )],
        ),
    };
    PageSpec::new(
        format!("{}/{slug}/overview", cat.code),
        "overview.md",
        title,
        &model,
        charts,
    )
}
