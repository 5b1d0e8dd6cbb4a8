//! Page models: every number and label a page shows, computed once here (in the page's
//! language) and handed to a template that only arranges it. Strings from archives pass
//! through [`escape`] before they reach Markdown.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::charts::{self, BarChart, Cell};
use super::i18n::Catalog;
use super::markdown::escape;
use crate::aggregate::{Configuration, Stat, Status};
use crate::compare;
use crate::format;
use crate::model::{ConfigKey, Dataset};
use crate::output::safe_name;
use crate::rank::Ranking;

/// Protocols in page order; others follow alphabetically.
pub const PROTOCOL_ORDER: [&str; 7] = ["tcp", "udp", "websocket", "tcps", "wss", "http", "https"];

/// A label from the catalog, or the escaped raw value when the catalog has none.
fn label(cat: &Catalog, group: &str, raw: &str) -> String {
    match cat
        .tree()
        .get(group)
        .and_then(|g| g.get(raw))
        .and_then(|v| v.as_str())
    {
        Some(text) => text.to_string(),
        None => escape(raw),
    }
}

pub fn protocol_label(cat: &Catalog, p: &str) -> String {
    label(cat, "protocol", p)
}

fn backend_label(cat: &Catalog, b: &str) -> String {
    label(cat, "backend", b)
}

fn work_label(cat: &Catalog, work: u64) -> String {
    if work == 0 {
        cat.text("work.none").to_string()
    } else {
        cat.fill("work.some", &[("n", &format::count(work))])
    }
}

/// "1 runtime / 2 threads", "4 io_contexts / 1 thread each", …
pub fn topology_label(cat: &Catalog, backend: &str, io_model: &str, threads: u64) -> String {
    let family = if backend == "tokio" { "tokio" } else { "asio" };
    let unit = cat.text(&format!("topology.unit_{family}")).to_string();
    let units = cat.text(&format!("topology.units_{family}")).to_string();
    let n = threads.to_string();
    match (io_model, threads) {
        ("shared", 1) => cat.fill("topology.shared_one", &[("unit", &unit)]),
        ("shared", _) => cat.fill("topology.shared_many", &[("unit", &unit), ("threads", &n)]),
        _ => cat.fill("topology.sharded", &[("units", &units), ("threads", &n)]),
    }
}

fn profile_heading(cat: &Catalog, k: &ConfigKey) -> String {
    let mut heading = profile_heading_plain(cat, k);
    if let Some(buffer) = k.udp_server_recv_buffer {
        heading.push_str(" / ");
        heading.push_str(&cat.fill("page.server_buffer", &[("size", &size(buffer))]));
    }
    heading
}

/// A byte size in MiB or KiB, as socket buffers are spoken of.
fn size(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes % (1 << 20) == 0 {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 20 {
        format!("{} MiB", format::grouped(bytes as f64 / 1_048_576.0, 2))
    } else {
        format!("{} KiB", format::grouped(bytes as f64 / 1024.0, 0))
    }
}

fn profile_heading_plain(cat: &Catalog, k: &ConfigKey) -> String {
    let (payload, window) = (k.payload_bytes.to_string(), k.window.to_string());
    if k.clients == 1 {
        cat.fill(
            "page.profile_one_client",
            &[("payload", &payload), ("window", &window)],
        )
    } else {
        cat.fill(
            "page.profile",
            &[
                ("payload", &payload),
                ("clients", &k.clients.to_string()),
                ("window", &window),
            ],
        )
    }
}

fn range(s: Option<Stat>, decimals: usize) -> String {
    s.map_or("N/A".to_string(), |s| {
        format::with_range(s.median, s.min, s.max, decimals)
    })
}

fn median(s: Option<Stat>, f: fn(f64) -> String) -> String {
    s.map_or("N/A".to_string(), |s| f(s.median))
}

/// "Tokio / 1 runtime / 2 threads", with the implementation when it is not the default.
fn model_label(cat: &Catalog, k: &ConfigKey) -> String {
    let mut model = format!(
        "{} / {}",
        backend_label(cat, &k.backend),
        topology_label(cat, &k.backend, &k.io_model, k.io_threads)
    );
    if !matches!(k.implementation.as_str(), "echomark" | "arknet-callback") {
        model = format!(
            "{} / {model}",
            label(cat, "implementation", &k.implementation)
        );
    }
    model
}

/// One row of a protocol table.
fn table_row(cat: &Catalog, c: &Configuration) -> String {
    let model = model_label(cat, &c.key);
    if c.status == Status::Failed {
        let excluded = cat.fill(
            "page.excluded",
            &[
                ("passed", &c.runs_passed.to_string()),
                ("runs", &c.runs.to_string()),
            ],
        );
        return format!("| {model} | {excluded} | | | | | | |");
    }
    let cpu = c.stat("cpu_percent").map_or("N/A".to_string(), |s| {
        let v = format::cpu_percent(s.median);
        if c.cpu_percent_estimated == Some(true) {
            cat.fill("page.estimated", &[("value", &v)])
        } else {
            v
        }
    });
    format!(
        "| {model} | {} | {} | {} | {} | {} | {cpu} | {} |",
        range(c.stat("roundtrips_per_second"), 0),
        median(c.stat("payload_mib_per_second"), format::two_decimals),
        median(c.stat("rtt_p50_us"), format::two_decimals),
        median(c.stat("rtt_p95_us"), format::two_decimals),
        median(c.stat("rtt_p99_us"), format::two_decimals),
        median(c.stat("peak_rss_bytes"), format::mib),
    )
}

/// Where a page lives: `{lang}/{dataset}/{name}.md` and `.html`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct PagePath {
    /// Relative to the site root, without extension, e.g. `en/epyc/tcp`.
    pub stem: String,
}

/// A chart to write next to a page.
pub struct ChartFile {
    /// Relative to the page's folder (`charts/tcp-tokio-work0-throughput.svg`).
    pub rel: String,
    pub svg: String,
}

/// A rendered page's inputs: template name, context, and the charts it embeds.
pub struct PageSpec {
    pub path: PagePath,
    pub template: &'static str,
    pub title: String,
    pub context: serde_json::Value,
    pub charts: Vec<ChartFile>,
}

fn protocols_of(configs: &[&Configuration]) -> Vec<String> {
    let present: BTreeSet<&str> = configs.iter().map(|c| c.key.protocol.as_str()).collect();
    let mut out: Vec<String> = PROTOCOL_ORDER
        .iter()
        .filter(|p| present.contains(*p))
        .map(|p| p.to_string())
        .collect();
    out.extend(
        present
            .iter()
            .filter(|p| !PROTOCOL_ORDER.contains(p))
            .map(|p| p.to_string()),
    );
    out
}

/// The dataset's folder name on the site.
pub fn dataset_slug(d: &Dataset) -> String {
    safe_name(&d.name)
}

fn host_value(d: &Dataset, key: &str) -> Option<String> {
    d.files.first()?.host.get(key).and_then(|v| match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

/// "AMD EPYC, 2 logical CPUs" in the page's language; `missing` stands in for an absent value.
fn host_label(cat: &Catalog, d: &Dataset, missing: &str) -> String {
    let value = |key| host_value(d, key).unwrap_or_else(|| missing.to_string());
    cat.fill(
        "index.host",
        &[
            ("cpu", &escape(&value("cpu"))),
            ("cpus", &value("logical_cpus")),
        ],
    )
}

fn gib(bytes: f64) -> String {
    let g = bytes / (1u64 << 30) as f64;
    if (g - g.round()).abs() < 0.05 {
        format!("{} GiB", g.round())
    } else {
        format!("{g:.1} GiB")
    }
}

/// The load the overview charts and key results use: 1,024 B (or the nearest payload) at
/// the largest client count.
fn main_load(configs: &[&Configuration]) -> Option<(u64, u64)> {
    let clients = configs.iter().map(|c| c.key.clients).max()?;
    let payload = configs
        .iter()
        .filter(|c| c.key.clients == clients)
        .map(|c| c.key.payload_bytes)
        .min_by_key(|p| p.abs_diff(1024))?;
    Some((payload, clients))
}

fn stat_tooltip(cat: &Catalog, series: &str, group: &str, s: Stat, decimals: usize) -> String {
    cat.fill(
        "chart.tooltip",
        &[
            ("series", series),
            ("group", group),
            ("median", &format::grouped(s.median, decimals)),
            ("min", &format::grouped(s.min, decimals)),
            ("max", &format::grouped(s.max, decimals)),
        ],
    )
}

/// Builds a bar chart of `metric` for `configs`, grouped by `group_of`, one series per
/// topology in canonical order.
fn bar_chart(
    cat: &Catalog,
    title: String,
    metric: &str,
    configs: &[&Configuration],
    group_of: &dyn Fn(&Configuration) -> String,
) -> BarChart {
    let (y_label, decimals) = if metric == "rtt_p99_us" {
        (cat.text("chart.y_p99"), 2)
    } else {
        (cat.text("chart.y_throughput"), 0)
    };
    let mut groups: Vec<String> = Vec::new();
    for c in configs {
        let g = group_of(c);
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    let mut topologies: Vec<(&str, &str, u64)> = configs
        .iter()
        .map(|c| {
            (
                c.key.backend.as_str(),
                c.key.io_model.as_str(),
                c.key.io_threads,
            )
        })
        .collect();
    topologies.sort_by_key(|(b, m, t)| (*b, u8::from(*m != "shared"), *t));
    topologies.dedup();
    let series: Vec<String> = topologies
        .iter()
        .map(|(b, m, t)| topology_label(cat, b, m, *t))
        .collect();
    let cells = groups
        .iter()
        .map(|g| {
            topologies
                .iter()
                .zip(&series)
                .map(|((b, m, t), name)| {
                    let found = configs.iter().find(|c| {
                        &group_of(c) == g
                            && c.key.backend == *b
                            && c.key.io_model == *m
                            && c.key.io_threads == *t
                    });
                    match found {
                        Some(c) if c.status == Status::Failed => Cell::Failed {
                            tooltip: format!("{name}, {g}: {}", cat.text("chart.failed")),
                        },
                        Some(c) => match c.stat(metric) {
                            Some(stat) => Cell::Value {
                                stat,
                                tooltip: stat_tooltip(cat, name, g, stat, decimals),
                            },
                            None => Cell::Missing,
                        },
                        None => Cell::Missing,
                    }
                })
                .collect()
        })
        .collect();
    BarChart {
        description: format!("{title}. {}", cat.text("overview.chart_note")),
        title,
        y_label: y_label.to_string(),
        groups,
        series,
        cells,
        failed_label: cat.text("chart.failed").to_string(),
    }
}

/// Everything a dataset's pages need.
pub struct DatasetView<'a> {
    pub dataset: &'a Dataset,
    pub configs: Vec<&'a Configuration>,
    pub rankings: Vec<&'a Ranking>,
    pub report: crate::validate::DatasetReport,
}

impl<'a> DatasetView<'a> {
    pub fn new(
        dataset: &'a Dataset,
        configs: &'a [Configuration],
        rankings: &'a [Ranking],
    ) -> Self {
        Self {
            dataset,
            configs: configs
                .iter()
                .filter(|c| c.dataset == dataset.name)
                .collect(),
            rankings: rankings
                .iter()
                .filter(|r| r.group.dataset == dataset.name)
                .collect(),
            report: crate::validate::report(dataset),
        }
    }

    pub fn protocols(&self) -> Vec<String> {
        protocols_of(&self.configs)
    }
}

/// The index page of one language.
pub fn index_page(cat: &Catalog, views: &[DatasetView]) -> PageSpec {
    let rows: Vec<String> = views
        .iter()
        .map(|v| {
            let d = v.dataset;
            let slug = dataset_slug(d);
            let host = host_label(cat, d, "");
            let protocols: Vec<String> = v
                .protocols()
                .iter()
                .map(|p| protocol_label(cat, p))
                .collect();
            let recorded = d
                .files
                .iter()
                .filter_map(|f| f.recorded_at_utc.as_deref())
                .min()
                .unwrap_or("");
            format!(
                "| [{}]({slug}/overview.md) | {} | {host} | {} / {} | {} / {} | {} |",
                escape(&d.name),
                protocols.join(cat.text("list.sep")),
                format::count(v.report.runs_passed as u64),
                format::count(v.report.runs as u64),
                format::count(v.report.configurations_valid as u64),
                format::count(v.report.configurations as u64),
                escape(recorded.get(..19).unwrap_or(recorded)),
            )
        })
        .collect();
    PageSpec {
        path: PagePath {
            stem: format!("{}/index", cat.code),
        },
        template: "index.md",
        title: cat.text("index.title").to_string(),
        context: serde_json::json!({
            "rows": rows,
            "methodology": cat.fill("index.methodology", &[("link", "methodology.md")]),
        }),
        charts: Vec::new(),
    }
}

/// The methodology page of one language.
pub fn methodology_page(cat: &Catalog) -> PageSpec {
    PageSpec {
        path: PagePath {
            stem: format!("{}/methodology", cat.code),
        },
        template: "methodology.md",
        title: cat.text("methodology.title").to_string(),
        context: serde_json::json!({}),
        charts: Vec::new(),
    }
}

fn key_result(cat: &Catalog, r: &Ranking) -> String {
    let g = &r.group;
    let protocol = protocol_label(cat, &g.protocol);
    let backend = backend_label(cat, &g.backend);
    let work = work_label(cat, g.handler_work);
    let model = topology_label(cat, &g.backend, &r.best.io_model, r.best.io_threads);
    let p99 = median(r.best.rtt_p99_us, format::two_decimals);
    let mut text = match (&r.baseline, r.speedup) {
        (Some(base), Some(speedup)) if !(r.best.io_model == "shared" && r.best.io_threads == 1) => {
            cat.fill(
                "overview.key_result",
                &[
                    ("protocol", &protocol),
                    ("backend", &backend),
                    ("work", &work),
                    ("model", &model),
                    ("speedup", &format::ratio(speedup)),
                    ("p99", &p99),
                    ("base_p99", &median(base.rtt_p99_us, format::two_decimals)),
                ],
            )
        }
        _ => cat.fill(
            "overview.key_result_baseline",
            &[
                ("protocol", &protocol),
                ("backend", &backend),
                ("work", &work),
                ("model", &model),
                (
                    "rate",
                    &format::throughput(r.best.roundtrips_per_second.median),
                ),
                ("p99", &p99),
            ],
        ),
    };
    let tie = r.distinguishable_from_baseline == Some(false)
        || (r.baseline.is_none() && r.distinguishable_from_runner_up == Some(false));
    if tie {
        text.push(' ');
        text.push_str(cat.text("overview.not_distinguishable"));
    }
    text
}

/// Position of `p` in [`PROTOCOL_ORDER`]; unknown protocols come last.
fn protocol_rank(p: &str) -> usize {
    PROTOCOL_ORDER
        .iter()
        .position(|x| *x == p)
        .unwrap_or(PROTOCOL_ORDER.len())
}

/// "1 client", "16 clients" in the page's language.
fn clients_phrase(cat: &Catalog, n: u64) -> String {
    if n == 1 {
        cat.text("clients.one").to_string()
    } else {
        cat.fill("clients.many", &[("n", &format::count(n))])
    }
}

/// "A, B and C" in the page's language.
fn join_list(cat: &Catalog, items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!(
            "{}{}{last}",
            init.join(cat.text("list.sep")),
            cat.text("list.last")
        ),
    }
}

/// The windows of the main charts: "UDP window 1, other protocols window 16". Protocols with
/// the same windows share one phrase; the largest such group is "other protocols".
fn windows_note(cat: &Catalog, view: &DatasetView, payload: u64, clients: u64) -> String {
    let mut by_protocol: BTreeMap<(usize, String), BTreeSet<u64>> = BTreeMap::new();
    for c in view
        .configs
        .iter()
        .filter(|c| c.key.payload_bytes == payload && c.key.clients == clients)
    {
        by_protocol
            .entry((protocol_rank(&c.key.protocol), c.key.protocol.clone()))
            .or_default()
            .insert(c.key.window);
    }
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for ((_, protocol), windows) in &by_protocol {
        let windows = windows
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join("/");
        let label = protocol_label(cat, protocol);
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
    for (i, (windows, labels)) in groups.iter().enumerate() {
        if groups.len() > 1 && Some(i) == largest && labels.len() > 1 {
            others = Some(cat.fill("overview.others_window", &[("windows", windows)]));
        } else {
            let who = join_list(cat, labels);
            phrases.push(cat.fill(
                "overview.window_of",
                &[("protocols", &who), ("windows", windows)],
            ));
        }
    }
    phrases.extend(others);
    phrases.join(cat.text("overview.phrase_sep"))
}

/// A dataset's overview page.
pub fn overview_page(cat: &Catalog, view: &DatasetView) -> PageSpec {
    let d = view.dataset;
    let slug = dataset_slug(d);
    let r = &view.report;
    let first = d.files.first();
    let family = match first.map(|f| f.address_family.as_str()) {
        Some("ipv6") => "IPv6",
        _ => "IPv4",
    };
    let not_recorded = cat.text("overview.not_recorded").to_string();
    let hv = |k: &str| {
        host_value(d, k)
            .map(|v| escape(&v))
            .unwrap_or_else(|| not_recorded.clone())
    };
    let os = match (
        host_value(d, "os_name"),
        host_value(d, "os_version"),
        host_value(d, "system"),
    ) {
        (Some(name), Some(v), _) => format!("{} {}", escape(&name), escape(&v)),
        (_, Some(v), Some(sys)) if sys == "Darwin" => format!("macOS {}", escape(&v)),
        (_, _, Some(sys)) => escape(&sys),
        _ => not_recorded.clone(),
    };
    let memory = first
        .and_then(|f| f.host.get("memory_bytes"))
        .and_then(|v| v.as_f64())
        .map_or(not_recorded.clone(), gib);
    let mut host_rows = vec![
        [cat.text("host.cpu").to_string(), hv("cpu")],
        [cat.text("host.arch").to_string(), hv("machine")],
        [
            cat.text("host.cores").to_string(),
            format!("{} / {}", hv("physical_cpus"), hv("logical_cpus")),
        ],
        [cat.text("host.memory").to_string(), memory],
        [cat.text("host.os").to_string(), os],
        [cat.text("host.kernel").to_string(), hv("release")],
    ];
    if let Some(model) = host_value(d, "model") {
        host_rows.insert(0, [cat.text("host.model").to_string(), escape(&model)]);
    }
    let cpus = host_value(d, "logical_cpus")
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|n| *n > 0.0);
    let cpu_share = match cpus {
        Some(n) => cat.fill(
            "overview.cpu_share",
            &[
                ("cpus", &format!("{n}")),
                ("share", &format!("{:.2}", 100.0 / n)),
            ],
        ),
        None => cat.text("overview.cpu_share_unknown").to_string(),
    };
    let seconds = first.map_or(0.0, |f| f.seconds);
    let warmup = first.map_or(0.0, |f| f.warmup);
    let repetitions = d.repetitions();
    let settings_line = cat.fill(
        "overview.settings_line",
        &[
            ("seconds", &format!("{seconds:?}")),
            ("warmup", &format!("{warmup:?}")),
            ("repetitions", &repetitions.to_string()),
        ],
    );
    let load = main_load(&view.configs);
    let mut charts = Vec::new();
    let (mut key_results, mut main_load_text, mut key_caveat) =
        (Vec::new(), String::new(), String::new());
    let (mut throughput_charts, mut p99_charts) = (Vec::new(), Vec::new());
    if let Some((payload, clients)) = load {
        let (p, c) = (format::count(payload), clients_phrase(cat, clients));
        main_load_text = cat.fill(
            "overview.main_load",
            &[
                ("payload", &p),
                ("clients", &c),
                ("windows", &windows_note(cat, view, payload, clients)),
            ],
        );
        key_caveat = cat.fill("overview.key_caveat", &[("payload", &p), ("clients", &c)]);
        let mut main: Vec<&&Ranking> = view
            .rankings
            .iter()
            .filter(|r| r.group.payload_bytes == payload && r.group.clients == clients)
            .collect();
        main.sort_by_key(|r| {
            (
                r.group.backend.clone(),
                protocol_rank(&r.group.protocol),
                r.group.implementation.clone(),
                r.group.handler_work,
                r.group.window,
            )
        });
        key_results = main.iter().map(|r| key_result(cat, r)).collect();
        let backends: BTreeSet<&str> = view
            .configs
            .iter()
            .map(|c| c.key.backend.as_str())
            .collect();
        for backend in backends {
            let selected: Vec<&Configuration> = view
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
            let mut selected = selected;
            selected
                .sort_by_key(|c| (protocol_rank(&c.key.protocol), c.key.implementation.clone()));
            let group_of = |c: &Configuration| {
                let name = protocol_label(cat, &c.key.protocol);
                if c.key.implementation == "arknet-callback" || c.key.implementation == "echomark" {
                    name
                } else {
                    format!(
                        "{name} ({})",
                        label(cat, "implementation", &c.key.implementation)
                    )
                }
            };
            let b = safe_name(backend);
            for (metric, title_key, out) in [
                (
                    "roundtrips_per_second",
                    "chart.overview_throughput",
                    &mut throughput_charts,
                ),
                ("rtt_p99_us", "chart.overview_p99", &mut p99_charts),
            ] {
                let title = format!(
                    "{} · {}",
                    backend_label(cat, backend),
                    cat.fill(title_key, &[("payload", &p), ("clients", &c)])
                );
                let chart = bar_chart(cat, title.clone(), metric, &selected, &group_of);
                let rel = format!(
                    "charts/overview-{b}-{}.svg",
                    if metric == "rtt_p99_us" {
                        "p99"
                    } else {
                        "throughput"
                    }
                );
                out.push(serde_json::json!({"title": title, "src": rel}));
                charts.push(ChartFile {
                    rel,
                    svg: charts::grouped_bars(&chart),
                });
            }
        }
    }
    let mut in_protocol_order: Vec<&&Ranking> = view.rankings.iter().collect();
    // Stable: within a protocol the rankings keep their load order.
    in_protocol_order.sort_by_key(|r| protocol_rank(&r.group.protocol));
    let choose_rows: Vec<String> = in_protocol_order
        .iter()
        .map(|r| {
            let g = &r.group;
            let load = format!(
                "{} B, {} × {}{}",
                g.payload_bytes,
                g.clients,
                g.window,
                if g.handler_work > 0 {
                    format!(", {}", work_label(cat, g.handler_work))
                } else {
                    String::new()
                }
            );
            let verdict = |v: Option<bool>| match v {
                Some(true) => cat.text("overview.distinct").to_string(),
                Some(false) => cat.text("overview.overlap").to_string(),
                None => "—".to_string(),
            };
            let vs_base = match r.speedup {
                Some(s) if r.distinguishable_from_baseline.is_some() => cat.fill(
                    "overview.ratio_verdict",
                    &[
                        ("ratio", &format::ratio(s)),
                        ("verdict", &verdict(r.distinguishable_from_baseline)),
                    ],
                ),
                Some(s) => format::ratio(s),
                None => "—".to_string(),
            };
            format!(
                "| {} / {} | {load} | {} | {vs_base} | {} | {} |",
                protocol_label(cat, &g.protocol),
                backend_label(cat, &g.backend),
                topology_label(cat, &g.backend, &r.best.io_model, r.best.io_threads),
                verdict(r.distinguishable_from_runner_up),
                if r.excluded.is_empty() {
                    "—".to_string()
                } else {
                    r.excluded.len().to_string()
                },
            )
        })
        .collect();
    let protocols: Vec<serde_json::Value> = view
        .protocols()
        .iter()
        .map(|p| serde_json::json!({"label": protocol_label(cat, p), "link": format!("{}.md", safe_name(p))}))
        .collect();
    let mut toolchain_rows = Vec::new();
    for f in &d.files {
        let git = match (&f.git_head, f.dirty) {
            (Some(h), dirty) => cat.fill(
                "overview.git_line",
                &[
                    ("hash", &escape(h.get(..12).unwrap_or(h))),
                    (
                        "state",
                        cat.text(if dirty {
                            "overview.dirty"
                        } else {
                            "overview.clean"
                        }),
                    ),
                ],
            ),
            (None, _) => not_recorded.clone(),
        };
        let format_name = match f.format {
            crate::model::Format::Echomark => "echomark-runner",
            crate::model::Format::ArknetSchema1 => "arknet schema 1",
            crate::model::Format::ArknetSchema2 => "arknet schema 2",
        };
        toolchain_rows.push(format!("| {} | {format_name} | {git} |", escape(&f.name)));
    }
    let raw_files: Vec<String> = d
        .files
        .iter()
        .map(|f| {
            cat.fill(
                "overview.file_line",
                &[
                    ("file", &escape(&f.name)),
                    ("link", &format!("../../data/{slug}/{}", safe_name(&f.name))),
                    ("runs", &format::count(f.runs as u64)),
                    (
                        "recorded",
                        &escape(f.recorded_at_utc.as_deref().unwrap_or(&not_recorded)),
                    ),
                    (
                        "hash",
                        &escape(f.executable_sha256.as_deref().unwrap_or(&not_recorded)),
                    ),
                ],
            )
        })
        .collect();
    let mut commands = Vec::new();
    for f in &d.files {
        if let Some(preset) = &f.preset {
            let mut cmd = format!("echomark-runner matrix --preset {preset}");
            if !f.protocols.is_empty() {
                cmd.push_str(&format!(
                    " --protocols {}",
                    f.protocols
                        .iter()
                        .map(|p| safe_name(p))
                        .collect::<Vec<_>>()
                        .join(",")
                ));
            }
            if let Some(seed) = f.shuffle_seed {
                cmd.push_str(&format!(" --shuffle {seed}"));
            }
            if f.keep_going {
                cmd.push_str(" --keep-going");
            }
            if let Some(s) = f.soak_seconds {
                cmd.push_str(&format!(" --soak {s}"));
            }
            cmd.push_str(&format!(" --out raw-results/{slug}/{}", safe_name(&f.name)));
            commands.push(cmd);
        }
    }
    if !commands.is_empty() {
        commands.push("echomark build".to_string());
    }
    let one_run = d.runs.first().and_then(once_command);
    let failed_rows = failed_rows(cat, view, None);
    let warnings: Vec<String> = d
        .warnings
        .iter()
        .take(20)
        .map(|w| escape(&w.to_string()))
        .collect();
    let title = cat.fill("overview.title", &[("dataset", &escape(&d.name))]);
    PageSpec {
        path: PagePath {
            stem: format!("{}/{slug}/overview", cat.code),
        },
        template: "overview.md",
        title: title.clone(),
        context: serde_json::json!({
            "title": title,
            "lead": cat.fill("overview.lead", &[
                ("runs", &format::count(r.runs as u64)),
                ("family", family),
                ("passed", &format::count(r.runs_passed as u64)),
                ("configs", &format::count(r.configurations as u64)),
                ("valid", &format::count(r.configurations_valid as u64)),
            ]),
            "host_rows": host_rows,
            "settings_line": settings_line,
            "main_load": main_load_text,
            "cpu_share": cpu_share,
            "key_results": key_results,
            "key_caveat": key_caveat,
            "throughput_charts": throughput_charts,
            "p99_charts": p99_charts,
            "choose_rows": choose_rows,
            "protocols": protocols,
            "summary_json": format!("../../data/{slug}/summary.json"),
            "summary_csv": format!("../../data/{slug}/summary.csv"),
            "toolchain_rows": toolchain_rows,
            "source_hash": cat.fill("overview.source_hash", &[("hash", &escape(first.and_then(|f| f.source_sha256.as_deref()).unwrap_or(&not_recorded)))]),
            "raw_files": raw_files,
            "commands": commands,
            "one_run": one_run,
            "failed_rows": failed_rows,
            "warnings": warnings,
            "metrics_text": cat.fill("overview.metrics_text", &[("link", "../methodology.md")]),
            "scope_text": cat.fill("overview.scope_text", &[("cpus", &cpus.map_or(not_recorded.clone(), |n| format!("{n}")))]),
        }),
        charts,
    }
}

/// A dataset's page for one protocol.
pub fn protocol_page(cat: &Catalog, view: &DatasetView, protocol: &str) -> PageSpec {
    let d = view.dataset;
    let slug = dataset_slug(d);
    let mine: Vec<&Configuration> = view
        .configs
        .iter()
        .copied()
        .filter(|c| c.key.protocol == protocol)
        .collect();
    let works: BTreeSet<u64> = mine.iter().map(|c| c.key.handler_work).collect();
    let label_p = protocol_label(cat, protocol);
    let mut charts = Vec::new();
    let mut sections = Vec::new();
    for work in works {
        let at_work: Vec<&Configuration> = mine
            .iter()
            .copied()
            .filter(|c| c.key.handler_work == work)
            .collect();
        let mut images = Vec::new();
        let backends: BTreeSet<&str> = at_work.iter().map(|c| c.key.backend.as_str()).collect();
        for backend in backends {
            let of_backend: Vec<&Configuration> = at_work
                .iter()
                .copied()
                .filter(|c| c.key.backend == backend)
                .collect();
            let group_of = |c: &Configuration| {
                format!(
                    "{} B · {}×{}",
                    format::count(c.key.payload_bytes),
                    c.key.clients,
                    c.key.window
                )
            };
            for (metric, key, suffix) in [
                (
                    "roundtrips_per_second",
                    "chart.throughput_title",
                    "throughput",
                ),
                ("rtt_p99_us", "chart.p99_title", "p99"),
            ] {
                let title = format!(
                    "{} · {}",
                    backend_label(cat, backend),
                    cat.fill(
                        key,
                        &[("protocol", &label_p), ("work", &work_label(cat, work))]
                    )
                );
                let chart = bar_chart(cat, title.clone(), metric, &of_backend, &group_of);
                let rel = format!(
                    "charts/{}-{}-work{work}-{suffix}.svg",
                    safe_name(protocol),
                    safe_name(backend)
                );
                images.push(serde_json::json!({"title": title, "src": rel}));
                charts.push(ChartFile {
                    rel,
                    svg: charts::grouped_bars(&chart),
                });
            }
        }
        type ProfileKey = (u64, u64, u64, Option<u64>);
        let mut profiles: BTreeMap<ProfileKey, Vec<&Configuration>> = BTreeMap::new();
        for c in &at_work {
            profiles
                .entry((
                    c.key.clients,
                    c.key.payload_bytes,
                    c.key.window,
                    c.key.udp_server_recv_buffer,
                ))
                .or_default()
                .push(c);
        }
        let tables: Vec<serde_json::Value> = profiles
            .values()
            .map(|rows| {
                serde_json::json!({
                    "heading": profile_heading(cat, &rows[0].key),
                    "rows": rows.iter().map(|c| table_row(cat, c)).collect::<Vec<_>>(),
                })
            })
            .collect();
        sections.push(serde_json::json!({"heading": work_label(cat, work), "images": images, "tables": tables}));
    }
    let repetitions = d.repetitions();
    let title = cat.fill("page.title", &[("protocol", &label_p)]);
    PageSpec {
        path: PagePath {
            stem: format!("{}/{slug}/{}", cat.code, safe_name(protocol)),
        },
        template: "protocol.md",
        title: title.clone(),
        context: serde_json::json!({
            "title": title,
            "intro": cat.fill("page.intro", &[("dataset", &escape(&d.name)), ("repetitions", &repetitions.to_string())]),
            "methodology": cat.fill("page.methodology", &[("link", "../methodology.md")]),
            "comparisons": comparison_sections(cat, view, protocol),
            "sections": sections,
        }),
        charts,
    }
}

/// The ratio sections of a protocol page: against the plaintext form of a TLS protocol,
/// then against TCP, for each baseline protocol the dataset has.
fn comparison_sections(
    cat: &Catalog,
    view: &DatasetView,
    protocol: &str,
) -> Vec<serde_json::Value> {
    let present = view.protocols();
    let subject = protocol_label(cat, protocol);
    compare::baselines(protocol)
        .into_iter()
        .filter(|base| present.iter().any(|p| p == base))
        .map(|base| {
            let base_label = protocol_label(cat, base);
            let names = [
                ("protocol", subject.as_str()),
                ("base", base_label.as_str()),
            ];
            let tls_over_plain = matches!(
                (protocol, base),
                ("tcps", "tcp") | ("wss", "websocket") | ("https", "http")
            );
            let heading = if tls_over_plain {
                cat.fill("compare.tls_heading", &names)
            } else {
                cat.fill("compare.heading", &names)
            };
            let pairs = compare::pairs(&view.configs, protocol, base);
            // One spread per backend: ratios of different stacks are not pooled.
            let mut by_backend: BTreeMap<&str, Vec<compare::Pair>> = BTreeMap::new();
            for pair in &pairs {
                by_backend
                    .entry(pair.subject.key.backend.as_str())
                    .or_default()
                    .push(*pair);
            }
            let several = by_backend.len() > 1;
            let summary = if pairs.is_empty() {
                cat.fill("compare.none", &names)
            } else {
                by_backend
                    .iter()
                    .filter_map(|(backend, of_backend)| {
                        let s = compare::spread(of_backend)?;
                        let sentence = cat.fill(
                            "compare.summary",
                            &[
                                ("protocol", &subject),
                                ("base", &base_label),
                                ("count", &format::count(s.count as u64)),
                                ("median", &format::ratio(s.median)),
                                ("min", &format::ratio(s.min)),
                                ("max", &format::ratio(s.max)),
                            ],
                        );
                        Some(if several {
                            cat.fill(
                                "compare.for_backend",
                                &[
                                    ("backend", &backend_label(cat, backend)),
                                    ("sentence", &sentence),
                                ],
                            )
                        } else {
                            sentence
                        })
                    })
                    .collect::<Vec<_>>()
                    .join(cat.text("site.sentence_sep"))
            };
            let rows: Vec<String> = pairs
                .iter()
                .map(|pair| {
                    let p99 =
                        |c: &Configuration| median(c.stat("rtt_p99_us"), format::two_decimals);
                    format!(
                        "| {} | {} | {} | {} | {} | {} | {} | {} |",
                        profile_heading(cat, &pair.subject.key),
                        model_label(cat, &pair.subject.key),
                        median(
                            pair.subject.stat("roundtrips_per_second"),
                            format::throughput
                        ),
                        median(pair.base.stat("roundtrips_per_second"), format::throughput),
                        format::ratio(pair.throughput),
                        p99(pair.subject),
                        p99(pair.base),
                        pair.p99.map_or("N/A".to_string(), format::ratio),
                    )
                })
                .collect();
            serde_json::json!({
                "heading": heading,
                "summary": summary,
                "header": cat.fill("compare.table_header", &names),
                "rows": rows,
            })
        })
        .collect()
}

/// Whether `protocol` in `view` was measured over enough windows for a dimensions page.
pub fn has_dimensions(view: &DatasetView, protocol: &str) -> bool {
    let mine = || view.configs.iter().filter(|c| c.key.protocol == protocol);
    // Isolation cases vary the server buffer too; they have their own table in the UDP report.
    let windows: BTreeSet<u64> = mine().map(|c| c.key.window).collect();
    windows.len() >= 3 && mine().all(|c| c.key.udp_server_recv_buffer.is_none())
}

fn failed_rows(cat: &Catalog, view: &DatasetView, protocol: Option<&str>) -> Vec<String> {
    view.report
        .failed_configurations
        .iter()
        .filter(|f| protocol.is_none_or(|p| f.key.protocol == p))
        .map(|f| {
            let k = &f.key;
            let what = format!(
                "{} / {} / {} / {}",
                protocol_label(cat, &k.protocol),
                backend_label(cat, &k.backend),
                profile_heading(cat, k),
                topology_label(cat, &k.backend, &k.io_model, k.io_threads)
            );
            let mut reasons: Vec<String> = f
                .failures
                .iter()
                .flat_map(|x| x.reasons.iter().cloned())
                .collect();
            reasons.sort();
            reasons.dedup();
            format!(
                "| {what} | {} / {} | {} |",
                f.runs_passed,
                f.runs,
                escape(&reasons.join("; "))
            )
        })
        .collect()
}

/// Median of the per-run UDP loss of one configuration's runs.
fn median_loss(view: &DatasetView, key: &ConfigKey) -> u64 {
    let mut losses: Vec<u64> = view
        .dataset
        .runs
        .iter()
        .filter(|r| &r.key == key)
        .map(|r| r.udp_lost_messages)
        .collect();
    losses.sort_unstable();
    losses.get(losses.len() / 2).copied().unwrap_or(0)
}

/// A dataset's payload × window × IO model page for one protocol.
pub fn dimensions_page(cat: &Catalog, view: &DatasetView, protocol: &str) -> PageSpec {
    let d = view.dataset;
    let slug = dataset_slug(d);
    let label_p = protocol_label(cat, protocol);
    let mine: Vec<&Configuration> = view
        .configs
        .iter()
        .copied()
        .filter(|c| c.key.protocol == protocol)
        .collect();
    let windows: Vec<u64> = mine
        .iter()
        .map(|c| c.key.window)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let clients: BTreeSet<u64> = mine.iter().map(|c| c.key.clients).collect();
    let topologies: BTreeSet<(u8, u64)> = mine.iter().map(|c| c.key.topology_rank()).collect();
    let mut charts = Vec::new();
    let mut sections = Vec::new();
    let mut findings = Vec::new();
    let mut loss_maps = Vec::new();
    let groups: BTreeSet<(&str, u64)> = mine
        .iter()
        .map(|c| (c.key.backend.as_str(), c.key.handler_work))
        .collect();
    for (backend, work) in groups {
        let of_group: Vec<&Configuration> = mine
            .iter()
            .copied()
            .filter(|c| c.key.backend == backend && c.key.handler_work == work)
            .collect();
        let payloads: BTreeSet<u64> = of_group.iter().map(|c| c.key.payload_bytes).collect();
        let mut topo: Vec<(&str, u64)> = of_group
            .iter()
            .map(|c| (c.key.io_model.as_str(), c.key.io_threads))
            .collect();
        topo.sort_by_key(|(m, t)| (u8::from(*m != "shared"), *t));
        topo.dedup();
        let series: Vec<String> = topo
            .iter()
            .map(|(m, t)| topology_label(cat, backend, m, *t))
            .collect();
        let mut images = Vec::new();
        for &payload in &payloads {
            for (metric, key, suffix, decimals) in [
                (
                    "roundtrips_per_second",
                    "dimensions.throughput_title",
                    "throughput",
                    0usize,
                ),
                ("rtt_p99_us", "dimensions.p99_title", "p99", 2),
            ] {
                let title = cat.fill(
                    key,
                    &[
                        ("backend", &backend_label(cat, backend)),
                        ("protocol", &label_p),
                        ("payload", &format::count(payload)),
                        ("work", &work_label(cat, work)),
                    ],
                );
                let points = topo
                    .iter()
                    .zip(&series)
                    .map(|((m, t), name)| {
                        windows
                            .iter()
                            .map(|w| {
                                let found = of_group.iter().find(|c| {
                                    c.key.payload_bytes == payload
                                        && c.key.window == *w
                                        && c.key.io_model == *m
                                        && c.key.io_threads == *t
                                });
                                let group = format!("window {w}");
                                match found {
                                    Some(c) if c.status == Status::Failed => Cell::Failed {
                                        tooltip: format!(
                                            "{name}, {group}: {}",
                                            cat.text("chart.failed")
                                        ),
                                    },
                                    Some(c) => {
                                        c.stat(metric).map_or(Cell::Missing, |stat| Cell::Value {
                                            stat,
                                            tooltip: stat_tooltip(
                                                cat, name, &group, stat, decimals,
                                            ),
                                        })
                                    }
                                    None => Cell::Missing,
                                }
                            })
                            .collect()
                    })
                    .collect();
                let y_label = if metric == "rtt_p99_us" {
                    cat.text("chart.y_p99")
                } else {
                    cat.text("chart.y_throughput")
                };
                let chart = charts::LineChart {
                    description: format!("{title}. {}", cat.text("overview.chart_note")),
                    title: title.clone(),
                    x_label: cat.text("dimensions.x_window").to_string(),
                    y_label: y_label.to_string(),
                    x_ticks: windows.iter().map(u64::to_string).collect(),
                    series: series.clone(),
                    points,
                    failed_label: cat.text("chart.failed").to_string(),
                };
                let rel = format!(
                    "charts/dimensions-{}-{}-work{work}-{payload}-{suffix}.svg",
                    safe_name(protocol),
                    safe_name(backend)
                );
                images.push(serde_json::json!({"title": title, "src": rel}));
                charts.push(ChartFile {
                    rel,
                    svg: charts::lines(&chart),
                });
            }
        }
        sections.push(serde_json::json!({"heading": format!("{} / {}", backend_label(cat, backend), work_label(cat, work)), "images": images}));
        // Findings at the payload nearest 1 KiB, over every window and topology.
        if let Some(&payload) = payloads.iter().min_by_key(|p| p.abs_diff(1024)) {
            let valid: Vec<&&Configuration> = of_group
                .iter()
                .filter(|c| c.status == Status::Valid && c.key.payload_bytes == payload)
                .collect();
            let best = valid
                .iter()
                .filter_map(|c| c.stat("roundtrips_per_second").map(|s| (c, s)))
                .max_by(|a, b| {
                    a.1.median
                        .total_cmp(&b.1.median)
                        .then(b.0.key.topology_rank().cmp(&a.0.key.topology_rank()))
                });
            let lowest = valid
                .iter()
                .filter_map(|c| c.stat("rtt_p99_us").map(|s| (c, s)))
                .min_by(|a, b| {
                    a.1.median
                        .total_cmp(&b.1.median)
                        .then(a.0.key.topology_rank().cmp(&b.0.key.topology_rank()))
                });
            if let (Some((b, bs)), Some((l, ls))) = (best, lowest) {
                findings.push(cat.fill(
                    "dimensions.finding",
                    &[
                        ("backend", &backend_label(cat, backend)),
                        ("work", &work_label(cat, work)),
                        ("payload", &format::count(payload)),
                        (
                            "model",
                            &topology_label(cat, backend, &b.key.io_model, b.key.io_threads),
                        ),
                        ("window", &b.key.window.to_string()),
                        ("rate", &format::throughput(bs.median)),
                        (
                            "p99_model",
                            &topology_label(cat, backend, &l.key.io_model, l.key.io_threads),
                        ),
                        ("p99_window", &l.key.window.to_string()),
                        ("p99", &format::two_decimals(ls.median)),
                    ],
                ));
            }
        }
        if protocol == "udp" {
            for ((m, t), name) in topo.iter().zip(&series) {
                let cells = payloads
                    .iter()
                    .map(|p| {
                        windows
                            .iter()
                            .map(|w| {
                                match of_group.iter().find(|c| {
                                    c.key.payload_bytes == *p
                                        && c.key.window == *w
                                        && c.key.io_model == *m
                                        && c.key.io_threads == *t
                                }) {
                                    None => charts::HeatCell {
                                        failed_share: None,
                                        label: "—".into(),
                                        tooltip: String::new(),
                                    },
                                    Some(c) => {
                                        let lost = median_loss(view, &c.key);
                                        let share =
                                            1.0 - c.runs_passed as f64 / c.runs.max(1) as f64;
                                        let label = if lost > 0 {
                                            format!(
                                                "{}/{} · {}",
                                                c.runs_passed,
                                                c.runs,
                                                format::count(lost)
                                            )
                                        } else {
                                            format!("{}/{}", c.runs_passed, c.runs)
                                        };
                                        let tooltip = cat.fill(
                                            "dimensions.loss_tooltip",
                                            &[
                                                ("payload", &format::count(*p)),
                                                ("window", &w.to_string()),
                                                ("passed", &c.runs_passed.to_string()),
                                                ("runs", &c.runs.to_string()),
                                                ("lost", &format::count(lost)),
                                            ],
                                        );
                                        charts::HeatCell {
                                            failed_share: Some(share),
                                            label,
                                            tooltip,
                                        }
                                    }
                                }
                            })
                            .collect()
                    })
                    .collect();
                let title = cat.fill(
                    "dimensions.loss_title",
                    &[("backend", &backend_label(cat, backend)), ("model", name)],
                );
                let map = charts::Heatmap {
                    description: cat.text("dimensions.loss_note").to_string(),
                    title: title.clone(),
                    x_label: cat.text("dimensions.x_window").to_string(),
                    y_label: cat.text("dimensions.y_payload").to_string(),
                    x_ticks: windows.iter().map(u64::to_string).collect(),
                    y_ticks: payloads
                        .iter()
                        .map(|p| format!("{} B", format::count(*p)))
                        .collect(),
                    cells,
                };
                let rel = format!("charts/loss-{}-work{work}-{m}{t}.svg", safe_name(backend));
                loss_maps.push(serde_json::json!({"title": title, "src": rel}));
                charts.push(ChartFile {
                    rel,
                    svg: charts::heatmap(&map),
                });
            }
        }
    }
    let repetitions = d.repetitions();
    let title = cat.fill("dimensions.title", &[("protocol", &label_p)]);
    PageSpec {
        path: PagePath {
            stem: format!("{}/{slug}/dimensions-{}", cat.code, safe_name(protocol)),
        },
        template: "dimensions.md",
        title: title.clone(),
        context: serde_json::json!({
            "title": title,
            "intro": cat.fill("dimensions.intro", &[
                ("dataset", &escape(&d.name)),
                ("clients", &clients.iter().map(u64::to_string).collect::<Vec<_>>().join("/")),
                ("windows", &windows.iter().map(u64::to_string).collect::<Vec<_>>().join("/")),
                ("topologies", &topologies.len().to_string()),
                ("repetitions", &repetitions.to_string()),
            ]),
            "methodology": cat.fill("page.methodology", &[("link", "../methodology.md")]),
            "sections": sections,
            "findings": findings,
            "loss_maps": loss_maps,
            "failed_rows": failed_rows(cat, view, Some(protocol)),
        }),
        charts,
    }
}

/// The site-wide UDP report, when any dataset measured UDP.
pub fn udp_report(cat: &Catalog, views: &[DatasetView]) -> Option<PageSpec> {
    let with_udp: Vec<&DatasetView> = views
        .iter()
        .filter(|v| v.dataset.runs.iter().any(|r| r.key.protocol == "udp"))
        .collect();
    if with_udp.is_empty() {
        return None;
    }
    let not_recorded = cat.text("overview.not_recorded").to_string();
    let (mut runs, mut passed, mut failed) = (0u64, 0u64, 0u64);
    let mut condition_rows = Vec::new();
    let mut correctness_rows = Vec::new();
    let mut throughput_rows = Vec::new();
    let mut buffer_lines = Vec::new();
    let mut images = Vec::new();
    let mut charts = Vec::new();
    let mut evidence = Vec::new();
    let (mut failed_command, mut passed_command) = (None, None);
    let (mut isolation_rows, mut isolation_intro) = (Vec::new(), String::new());
    let (payload, clients, window) = (1024u64, 16u64, 1u64);
    for view in &with_udp {
        let d = view.dataset;
        let slug = dataset_slug(d);
        let udp_runs: Vec<&crate::model::Run> =
            d.runs.iter().filter(|r| r.key.protocol == "udp").collect();
        runs += udp_runs.len() as u64;
        passed += udp_runs.iter().filter(|r| r.passed).count() as u64;
        let f = d.files.first();
        let host = host_label(cat, d, &not_recorded);
        let measurement = cat.fill(
            "udp.measurement",
            &[
                ("seconds", &format!("{:?}", f.map_or(0.0, |f| f.seconds))),
                ("warmup", &format!("{:?}", f.map_or(0.0, |f| f.warmup))),
                ("repetitions", &d.repetitions().to_string()),
                (
                    "timeout",
                    &f.and_then(|f| f.udp_timeout_ms)
                        .map_or(not_recorded.clone(), |t| format!("{t} ms")),
                ),
            ],
        );
        let first_udp = udp_runs
            .iter()
            .find(|r| r.udp_server_receive_buffer_bytes.is_some());
        let kib = |b: u64| {
            if b % (1 << 20) == 0 {
                format!("{} MiB", b >> 20)
            } else {
                format!("{} KiB", format::count(b / 1024))
            }
        };
        let buffers = first_udp.map_or(not_recorded.clone(), |r| {
            cat.fill(
                "udp.buffers",
                &[
                    (
                        "send",
                        &r.udp_send_buffer_requested_bytes
                            .map_or(not_recorded.clone(), kib),
                    ),
                    (
                        "recv",
                        &r.udp_server_receive_buffer_requested_bytes
                            .map_or(not_recorded.clone(), kib),
                    ),
                    (
                        "actual",
                        &r.udp_server_receive_buffer_bytes
                            .map_or(not_recorded.clone(), kib),
                    ),
                ],
            )
        });
        condition_rows.push(format!(
            "| [{}]({slug}/overview.md) | {host} | {measurement} | {buffers} |",
            escape(&d.name)
        ));
        let mut seen_buffers = BTreeSet::new();
        for r in &udp_runs {
            if let (Some(req), Some(actual)) = (
                r.udp_server_receive_buffer_requested_bytes,
                r.udp_server_receive_buffer_bytes,
            ) {
                if seen_buffers.insert((req, actual)) && seen_buffers.len() <= 4 {
                    buffer_lines.push(cat.fill(
                        "udp.buffer_line",
                        &[
                            ("dataset", &escape(&d.name)),
                            ("request", &kib(req)),
                            ("actual", &kib(actual)),
                        ],
                    ));
                }
            }
        }
        for soak in d
            .files
            .iter()
            .flat_map(|f| f.soak.iter())
            .filter(|s| s.protocol == "udp")
        {
            let seconds = format::grouped(soak.seconds, 0);
            let result = if soak.passed {
                cat.fill(
                    "udp.soak_passed",
                    &[
                        ("seconds", &seconds),
                        ("echoes", &format::count(soak.verified_echoes)),
                        ("rounds", &soak.rounds.to_string()),
                    ],
                )
            } else {
                cat.fill(
                    "udp.soak_failed",
                    &[
                        ("seconds", &seconds),
                        ("reason", &escape(soak.failure.as_deref().unwrap_or(""))),
                    ],
                )
            };
            correctness_rows.push(format!(
                "| {} | {} | | | {result} |",
                escape(&d.name),
                cat.fill(
                    "udp.soak_row",
                    &[("protocol", &protocol_label(cat, &soak.protocol))]
                )
            ));
        }
        let isolated: Vec<&&Configuration> = view
            .configs
            .iter()
            .filter(|c| c.key.protocol == "udp" && c.key.udp_server_recv_buffer.is_some())
            .collect();
        if !isolated.is_empty() && isolation_intro.is_empty() {
            isolation_intro = cat.fill(
                "udp.isolation_intro",
                &[
                    ("dataset", &escape(&d.name)),
                    ("clients", &clients_phrase(cat, isolated[0].key.clients)),
                    ("repetitions", &d.repetitions().to_string()),
                ],
            );
        }
        for c in isolated {
            isolation_rows.push(isolation_row(cat, c, &udp_runs, &not_recorded));
        }
        let backends: BTreeSet<&str> = udp_runs.iter().map(|r| r.key.backend.as_str()).collect();
        for backend in backends {
            let mine: Vec<&&crate::model::Run> = udp_runs
                .iter()
                .filter(|r| r.key.backend == backend)
                .collect();
            let configs: Vec<&&Configuration> = view
                .configs
                .iter()
                .filter(|c| c.key.protocol == "udp" && c.key.backend == backend)
                .collect();
            let bad: Vec<&&Configuration> = configs
                .iter()
                .copied()
                .filter(|c| c.status == Status::Failed)
                .collect();
            failed += bad.len() as u64;
            let worst = mine.iter().map(|r| r.udp_lost_messages).max().unwrap_or(0);
            let result = if bad.is_empty() {
                cat.text("udp.all_passed").to_string()
            } else {
                cat.fill(
                    "udp.some_failed",
                    &[
                        ("n", &bad.len().to_string()),
                        ("loss", &format::count(worst)),
                    ],
                )
            };
            correctness_rows.push(format!(
                "| {} | {} | {} / {} | {} / {} | {result} |",
                escape(&d.name),
                backend_label(cat, backend),
                format::count(mine.iter().filter(|r| r.passed).count() as u64),
                format::count(mine.len() as u64),
                format::count((configs.len() - bad.len()) as u64),
                format::count(configs.len() as u64),
            ));
            let at_load: Vec<&Configuration> = configs
                .iter()
                .map(|c| **c)
                .filter(|c| {
                    c.key.payload_bytes == payload
                        && c.key.clients == clients
                        && c.key.window == window
                        && c.key.handler_work == 0
                        && c.key.udp_server_recv_buffer.is_none()
                })
                .collect();
            for c in &at_load {
                let cpu = c
                    .stat("cpu_percent")
                    .map_or("N/A".to_string(), |s| format::cpu_percent(s.median));
                let row = if c.status == Status::Failed {
                    format!(
                        "| {} / {} | {} | {} | | |",
                        escape(&d.name),
                        backend_label(cat, backend),
                        topology_label(cat, backend, &c.key.io_model, c.key.io_threads),
                        cat.fill(
                            "page.excluded",
                            &[
                                ("passed", &c.runs_passed.to_string()),
                                ("runs", &c.runs.to_string())
                            ]
                        )
                    )
                } else {
                    format!(
                        "| {} / {} | {} | {} | {} | {cpu} |",
                        escape(&d.name),
                        backend_label(cat, backend),
                        topology_label(cat, backend, &c.key.io_model, c.key.io_threads),
                        range(c.stat("roundtrips_per_second"), 0),
                        median(c.stat("rtt_p99_us"), format::two_decimals),
                    )
                };
                throughput_rows.push(row);
            }
            if !at_load.is_empty() && images.len() < 4 {
                let group_of = |c: &Configuration| {
                    escape(&view.dataset.name)
                        .replace('\\', "")
                        .chars()
                        .take(40)
                        .collect::<String>()
                        + &format!(" · {}", backend_label(cat, &c.key.backend))
                };
                for (metric, key, suffix) in [
                    (
                        "roundtrips_per_second",
                        "chart.overview_throughput",
                        "throughput",
                    ),
                    ("rtt_p99_us", "chart.overview_p99", "p99"),
                ] {
                    let title = format!(
                        "UDP · {}",
                        cat.fill(
                            key,
                            &[
                                ("payload", &format::count(payload)),
                                ("clients", &clients_phrase(cat, clients))
                            ]
                        )
                    );
                    let chart = bar_chart(cat, title.clone(), metric, &at_load, &group_of);
                    let rel = format!("charts/udp-{slug}-{}-{suffix}.svg", safe_name(backend));
                    images.push(serde_json::json!({"title": title, "src": rel}));
                    charts.push(ChartFile {
                        rel,
                        svg: charts::grouped_bars(&chart),
                    });
                }
            }
        }
        if failed_command.is_none() {
            failed_command = udp_runs
                .iter()
                .find(|r| !r.passed && r.udp_lost_messages > 0)
                .and_then(|r| once_command(r));
        }
        if passed_command.is_none() {
            passed_command = udp_runs
                .iter()
                .find(|r| r.passed)
                .and_then(|r| once_command(r));
        }
        for f in &d.files {
            evidence.push(format!(
                "[{}/{}](../data/{slug}/{})",
                escape(&d.name),
                escape(&f.name),
                safe_name(&f.name)
            ));
        }
    }
    let code = cat.code;
    Some(PageSpec {
        path: PagePath {
            stem: format!("{code}/udp-report"),
        },
        template: "udp.md",
        title: cat.text("udp.title").to_string(),
        context: serde_json::json!({
            "lead": cat.fill("udp.lead", &[
                ("runs", &format::count(runs)),
                ("datasets", &with_udp.len().to_string()),
                ("passed", &format::count(passed)),
                ("failed", &format::count(failed)),
            ]),
            "condition_rows": condition_rows,
            "correctness_rows": correctness_rows,
            "throughput_intro": cat.fill("udp.throughput_intro", &[("payload", &format::count(payload)), ("clients", &clients_phrase(cat, clients)), ("window", &window.to_string())]),
            "throughput_rows": throughput_rows,
            "images": images,
            "buffer_lines": buffer_lines,
            "isolation_rows": isolation_rows,
            "isolation_intro": isolation_intro,
            "failed_command": failed_command,
            "passed_command": passed_command,
            "evidence": cat.fill("udp.evidence", &[("links", &evidence.join(" · "))]),
        }),
        charts,
    })
}

/// One row of the receive-buffer isolation table, with every broken invariant named.
fn isolation_row(
    cat: &Catalog,
    c: &Configuration,
    udp_runs: &[&crate::model::Run],
    not_recorded: &str,
) -> String {
    let k = &c.key;
    let mut runs_of: Vec<&&crate::model::Run> = udp_runs.iter().filter(|r| r.key == *k).collect();
    runs_of.sort_by_key(|r| r.repetition);
    let losses: Vec<u64> = runs_of.iter().map(|r| r.udp_lost_messages).collect();
    let actual = runs_of
        .iter()
        .filter_map(|r| r.udp_server_receive_buffer_bytes)
        .max();
    let same = losses.windows(2).all(|w| w[0] == w[1]);
    let mut broken = Vec::new();
    for r in &runs_of {
        let rep = r.repetition.to_string();
        if let (Some(sent), Some(server)) = (r.messages_sent, r.server_messages_received) {
            if sent.checked_sub(server) != Some(r.udp_lost_messages) {
                broken.push(cat.fill("udp.inv_sent", &[("rep", &rep)]));
            }
            if Some(server) != r.messages_received {
                broken.push(cat.fill("udp.inv_replies", &[("rep", &rep)]));
            }
        }
        if r.content_errors + r.order_errors > 0 {
            broken.push(cat.fill("udp.inv_content", &[("rep", &rep)]));
        }
        if let Some(kernel) = r.kernel_udp_rcvbuf_errors_delta {
            if kernel != r.udp_lost_messages {
                broken.push(cat.fill(
                    "udp.inv_kernel",
                    &[
                        ("rep", &rep),
                        ("kernel", &format::count(kernel)),
                        ("lost", &format::count(r.udp_lost_messages)),
                    ],
                ));
            }
        }
    }
    format!(
        "| {} | {} | {} | {} | {} | {} | {} |",
        format::count(k.payload_bytes),
        format::count(k.window),
        actual.map_or(not_recorded.to_string(), size),
        size(k.clients * k.window * k.payload_bytes),
        losses
            .iter()
            .map(|l| format::count(*l))
            .collect::<Vec<_>>()
            .join(" / "),
        cat.text(if same {
            "udp.isolation_yes"
        } else {
            "udp.isolation_no"
        }),
        if broken.is_empty() {
            cat.text("udp.isolation_ok").to_string()
        } else {
            broken.join("; ")
        },
    )
}

/// A run's `once` command line as a reader would type it (the runner's absolute path
/// replaced by its name); `None` for runs not started through `once`.
fn once_command(r: &crate::model::Run) -> Option<String> {
    r.command
        .split_once(" once ")
        .map(|(_, rest)| format!("echomark-runner once {}", rest.replace('`', "'")))
}
