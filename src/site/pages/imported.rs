//! The overview of a dataset that holds other load generators' runs (`echomark import`):
//! who measured each figure, what each tool measured and nothing it did not, and, where
//! echomark's client measured the same loads in the same dataset, whether they agree.

use echomark_archive::{LatencyFidelity, Loop, Metric, Protocol};
use serde::Serialize;

use super::failures::failed_table;
use super::provenance::host_table;
use super::{DatasetView, PageSpec};
use crate::analysis::aggregate::Configuration;
use crate::analysis::aggregate::Stat;
use crate::analysis::agreement::{self, AgreementRow, Judged, ToolLoad, ToolRuns};
use crate::analysis::path_tools::{self, PathAdvice};
use crate::format;
use crate::model::{Dataset, ImportedSource};
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::Markup;
use crate::site::table::{Align, Table};

/// The page model.
#[derive(Serialize)]
pub struct ImportedPage {
    pub title: Markup,
    pub lead: Markup,
    pub recommend: Option<super::recommend::Section>,
    /// Which tool measured which figure of a path (iperf3 beside echomark).
    pub path: Option<super::recommend::Section>,
    pub host: Option<Table>,
    pub host_missing: Option<Markup>,
    /// echomark's own runs in the dataset, when there are any.
    pub echomark: Option<Section>,
    pub tools: Vec<Section>,
    pub agreement: Option<AgreementSection>,
    pub streams: Option<Section>,
    pub failed: Table,
    pub sources: Vec<Markup>,
    pub raw_files: Vec<Markup>,
    pub reproduce: Option<Markup>,
}

/// Who measured, what their figures mean, and the figures.
#[derive(Serialize)]
pub struct Section {
    pub heading: Markup,
    pub notes: Vec<Markup>,
    pub table: Table,
}

/// Whether echomark's client and each tool agree, load by load, by the rule.
#[derive(Serialize)]
pub struct AgreementSection {
    pub intro: Markup,
    /// The comparison rule behind "agrees" and "differs".
    pub rule: Markup,
    pub summary: Markup,
    pub table: Table,
    pub differences: Vec<Markup>,
}

/// A dataset's overview when it holds imported runs.
pub fn page(cat: &Catalog, view: &DatasetView) -> PageSpec {
    let d = view.dataset;
    let tools = agreement::tools(d, &view.configs);
    let own = agreement::echomark_side(&view.configs, &tools);
    let tool_names: Vec<Markup> = tools
        .iter()
        .map(|t| Markup::text(&t.source.label()))
        .collect();
    let names = labels::join_list(cat, &tool_names);
    let rows = agreement::agreement(&own, &tools, &view.rules);
    let title_key = match (own.is_empty(), rows.is_empty()) {
        (true, _) => "imported.title",
        (false, false) => "imported.title_agreement",
        (false, true) => "imported.title_path",
    };
    let title = cat.fill(title_key, &[("dataset", &d.name), ("tools", &names)]);
    let host_recorded = tools.iter().all(|t| t.source.host_recorded);
    let not_recorded = cat.text("overview.not_recorded");
    let with_iperf3 = tools
        .iter()
        .any(|t| t.source.tool == echomark_archive::Tool::Iperf3);
    let request_tools: Vec<&ToolRuns> = tools
        .iter()
        .filter(|t| {
            t.loads
                .iter()
                .any(|l| l.config.key.protocol == Protocol::Http)
        })
        .collect();
    let model = ImportedPage {
        title: title.clone(),
        lead: cat.fill(
            "imported.lead",
            &[
                ("runs", &labels::count(d.runs.len() as u64)),
                ("tools", &names),
            ],
        ),
        // Which client to measure with, only where echomark's client and the tools took
        // turns against one server (the agreement rows say they measured the same loads).
        recommend: (!rows.is_empty())
            .then(|| super::recommend::section(cat, view))
            .flatten(),
        path: path_section(cat, &path_tools::advise(d, &own)),
        host: host_recorded.then(|| host_table(cat, d, &not_recorded)),
        host_missing: (!host_recorded).then(|| cat.text("imported.host_missing")),
        echomark: (!own.is_empty()).then(|| echomark_section(cat, &own, !rows.is_empty())),
        tools: request_tools.iter().map(|t| tool_section(cat, t)).collect(),
        agreement: (!rows.is_empty()).then(|| agreement_section(cat, &rows, &view.rules)),
        streams: streams_section(cat, d, &own),
        failed: failed_table(cat, view, None),
        sources: sources(cat, d),
        raw_files: raw_files(cat, view),
        // The two scripts that measure tools beside echomark, each writing one such dataset.
        reproduce: (!own.is_empty()).then(|| {
            let script = if with_iperf3 {
                "scripts/measure-iperf3"
            } else {
                "scripts/measure-agreement"
            };
            Markup::code_block("sh", &[script.to_string(), "echomark build".to_string()])
        }),
    };
    PageSpec::new(
        super::overview::stem(cat, view),
        "imported.md",
        title,
        &model,
        Vec::new(),
    )
}

/// "HTTP / 1,024 B / 16 clients / window 1", with the offered rate of an open-loop load.
fn load_label(cat: &Catalog, c: &Configuration) -> Markup {
    let mut label = labels::protocol(cat, c.key.protocol);
    label.push(&Markup::trusted(" / "));
    label.push(&labels::load(cat, &c.key));
    if let Some(load) = c.key.load {
        label.push(&Markup::trusted(" / "));
        label.push(&cat.fill("imported.rate", &[("rate", &labels::count(load.rate))]));
    }
    label
}

fn latency_cell(s: Option<crate::analysis::aggregate::Stat>) -> Markup {
    labels::latency_range(s)
}

fn runs_cell(c: &Configuration) -> Markup {
    labels::number(format!("{} / {}", c.runs_passed, c.runs))
}

/// The microseconds of a resolution as the pages write it (`1 ms`, `1 µs`).
fn resolution(us: f64) -> Markup {
    Markup::trusted(if us >= 1000.0 {
        format!("{} ms", format::latency(us / 1000.0))
    } else if us >= 1.0 {
        format!("{} µs", format::latency(us))
    } else {
        format!("{} ns", format::latency(us * 1000.0))
    })
}

fn fidelity(cat: &Catalog, load: &ToolLoad) -> Markup {
    match load.fidelity {
        None => cat.text("imported.fidelity_none"),
        Some(f) => cat.fill(
            match f {
                LatencyFidelity::Lossless => "imported.fidelity_lossless",
                LatencyFidelity::SummaryOnly => "imported.fidelity_summary",
            },
            &[("resolution", &resolution(load.resolution_us))],
        ),
    }
}

fn loop_cell(cat: &Catalog, load: &ToolLoad) -> Markup {
    let mut cell = cat.text(match load.loop_kind {
        Loop::Closed => "imported.closed",
        Loop::Open => "imported.open",
    });
    if load.latency_correction {
        cell.push(&Markup::trusted(" · "));
        cell.push(&cat.text("imported.corrected"));
    }
    cell
}

fn columns(cat: &Catalog) -> Table {
    use Align::*;
    Table::new(
        cat.list("imported.columns", &[]),
        &[Left, Left, Right, Right, Right, Right, Left, Right, Right],
    )
}

fn tool_section(cat: &Catalog, tool: &ToolRuns) -> Section {
    let mut table = columns(cat);
    for load in &tool.loads {
        let c = load.config;
        table.push(vec![
            load_label(cat, c),
            loop_cell(cat, load),
            runs_cell(c),
            labels::range(c.stat(Metric::RoundtripsPerSecond), 0),
            latency_cell(c.stat(Metric::RttP50Us)),
            latency_cell(c.stat(Metric::RttP99Us)),
            fidelity(cat, load),
            labels::count(load.errors),
            labels::count(load.non_2xx),
        ]);
    }
    let unfinished: u64 = tool.loads.iter().filter_map(|l| l.unfinished).sum();
    let mut notes = vec![cat.fill(
        "imported.measures",
        &[("tool", &Markup::text(&tool.source.label()))],
    )];
    if unfinished > 0 {
        notes.push(cat.fill("imported.unfinished", &[("n", &labels::count(unfinished))]));
    }
    Section {
        heading: measured_by(cat, &tool.source),
        notes,
        table,
    }
}

/// "measured by oha 1.16.0, not verified by echomark: …"
fn measured_by(cat: &Catalog, source: &ImportedSource) -> Markup {
    cat.fill(
        "imported.measured_by",
        &[("tool", &Markup::text(&source.label()))],
    )
}

fn echomark_section(cat: &Catalog, own: &[&Configuration], same_server: bool) -> Section {
    let mut table = columns(cat);
    for c in own {
        table.push(vec![
            load_label(cat, c),
            cat.text(if c.key.load.is_some() {
                "imported.open"
            } else {
                "imported.closed"
            }),
            runs_cell(c),
            labels::range(c.stat(Metric::RoundtripsPerSecond), 0),
            latency_cell(c.stat(Metric::RttP50Us)),
            latency_cell(c.stat(Metric::RttP99Us)),
            cat.text("imported.fidelity_echomark"),
            // A passing run has no error of any kind; a failed one is listed below.
            zero_if_passed(c),
            zero_if_passed(c),
        ]);
    }
    Section {
        heading: cat.text("imported.echomark_heading"),
        notes: vec![cat.text(if same_server {
            "imported.echomark_note"
        } else {
            "imported.echomark_note_path"
        })],
        table,
    }
}

fn zero_if_passed(c: &Configuration) -> Markup {
    Markup::trusted(if c.runs_passed == c.runs { "0" } else { "—" })
}

fn judged_cells(cat: &Catalog, j: Option<Judged>, metric: Metric) -> [Markup; 3] {
    let latency = metric != Metric::RoundtripsPerSecond;
    let shown = |s| {
        if latency {
            labels::latency_range(Some(s))
        } else {
            labels::range(Some(s), 0)
        }
    };
    match j {
        None => [
            Markup::trusted("N/A"),
            Markup::trusted("N/A"),
            Markup::trusted(""),
        ],
        Some(j) => [
            shown(j.echomark),
            shown(j.tool),
            match (j.decision, j.ratio) {
                (Some(d), _) if j.agrees() => cat.fill(
                    "imported.agrees",
                    &[("decision", &labels::decision(cat, &d, metric))],
                ),
                (Some(d), _) if d.verdict.is_difference() => cat.fill(
                    "imported.differs",
                    &[("decision", &labels::decision(cat, &d, metric))],
                ),
                // Undecided: neither an agreement nor a difference.
                (Some(d), _) => labels::decision(cat, &d, metric),
                (None, Some(ratio)) => cat.fill(
                    "imported.coarse",
                    &[("ratio", &Markup::trusted(format::ratio(ratio)))],
                ),
                (None, None) => cat.text("imported.differs_unresolved"),
            },
        ],
    }
}

fn agreement_section(
    cat: &Catalog,
    rows: &[AgreementRow],
    rules: &crate::analysis::decision::Rules,
) -> AgreementSection {
    use Align::*;
    let mut table = Table::new(
        cat.list("imported.agreement_columns", &[]),
        &[
            Left, Left, Right, Right, Left, Right, Right, Left, Right, Right, Left,
        ],
    );
    let mut tally = crate::analysis::backends::Tally::default();
    for row in rows {
        let [e_rate, t_rate, rate_verdict] =
            judged_cells(cat, row.throughput, Metric::RoundtripsPerSecond);
        let [e_p50, t_p50, p50_verdict] = judged_cells(cat, row.p50, Metric::RttP50Us);
        let [e_p99, t_p99, p99_verdict] = judged_cells(cat, row.p99, Metric::RttP99Us);
        if let Some(d) = row.throughput.and_then(|j| j.decision) {
            tally.count(&d);
        }
        table.push(vec![
            load_label(cat, row.echomark),
            Markup::text(&row.source.label()),
            e_rate,
            t_rate,
            rate_verdict,
            e_p50,
            t_p50,
            p50_verdict,
            e_p99,
            t_p99,
            p99_verdict,
        ]);
    }
    AgreementSection {
        intro: cat.text("imported.agreement_intro"),
        rule: labels::rule(cat, rules, "../"),
        summary: cat.fill(
            "imported.agreement_summary",
            &[
                ("agree", &labels::count(tally.equivalent as u64)),
                ("higher", &labels::count(tally.subject_higher as u64)),
                ("lower", &labels::count(tally.subject_lower as u64)),
                ("undecided", &labels::count(tally.undecided as u64)),
                ("margin", &labels::margin(rules.throughput)),
                ("rows", &labels::count(rows.len() as u64)),
            ],
        ),
        table,
        differences: cat.list("imported.differences", &[]),
    }
}

/// iperf3's runs, one row each, and echomark's stream and datagram figures of the same
/// dataset beside them.
fn streams_section(cat: &Catalog, d: &Dataset, own: &[&Configuration]) -> Option<Section> {
    use Align::*;
    let runs: Vec<&crate::model::Run> = d
        .runs
        .iter()
        .filter(|r| {
            r.imported
                .as_ref()
                .is_some_and(|f| f.stream.is_some() || r.key.protocol != Protocol::Http)
        })
        .collect();
    if runs.is_empty() {
        return None;
    }
    let mut table = Table::new(
        cat.list("imported.stream_columns", &[]),
        &[Left, Left, Right, Right, Right, Right, Right, Right, Right],
    );
    let gbit = |bits: f64| labels::number(format::two_decimals(bits / 1e9));
    let opt = |v: Option<String>| v.map_or(Markup::trusted("—"), labels::number);
    for r in &runs {
        let Some(s) = r.imported.as_ref().and_then(|f| f.stream.as_ref()) else {
            table.push(vec![
                labels::protocol(cat, r.key.protocol),
                Markup::text(&r.reasons.join("; ")),
                Markup::trusted("—"),
                Markup::trusted("—"),
                Markup::trusted("—"),
                Markup::trusted("—"),
                Markup::trusted("—"),
                Markup::trusted("—"),
                Markup::trusted("—"),
            ]);
            continue;
        };
        table.push(vec![
            labels::protocol(cat, r.key.protocol),
            cat.fill(
                "imported.stream_load",
                &[
                    ("streams", &labels::count(s.streams)),
                    ("bytes", &labels::count(r.key.payload_bytes)),
                ],
            ),
            gbit(s.sent_bits_per_second),
            gbit(s.received_bits_per_second),
            opt(s.retransmits.map(format::count)),
            opt(s.lost_percent.map(format::two_decimals)),
            opt(s.jitter_ms.map(|j| format::latency(j * 1000.0))),
            opt(s.sender_cpu_percent.map(format::cpu_percent)),
            opt(s.receiver_cpu_percent.map(format::cpu_percent)),
        ]);
    }
    let mut notes = vec![cat.text("imported.streams_intro")];
    let beside: Vec<Markup> = own
        .iter()
        .filter(|c| matches!(c.key.protocol, Protocol::Tcp | Protocol::Udp))
        .filter_map(|c| {
            let mib = c.stat(Metric::PayloadMibPerSecond)?;
            // Both ways in MiB/s → one way in Gbit/s.
            let one_way = mib.median / 2.0 * 1_048_576.0 * 8.0 / 1e9;
            Some(cat.fill(
                "imported.stream_beside",
                &[
                    ("protocol", &labels::protocol(cat, c.key.protocol)),
                    ("load", &labels::load(cat, &c.key)),
                    ("gbit", &labels::number(format::two_decimals(one_way))),
                ],
            ))
        })
        .collect();
    notes.extend(beside);
    Some(Section {
        heading: measured_by(
            cat,
            &d.files.iter().find_map(|f| {
                f.imported
                    .clone()
                    .filter(|s| s.tool == echomark_archive::Tool::Iperf3)
            })?,
        ),
        notes,
        table,
    })
}

/// Each imported run's source file, its SHA-256 and the command that produced it.
fn sources(cat: &Catalog, d: &Dataset) -> Vec<Markup> {
    d.runs
        .iter()
        .filter(|r| r.imported.is_some())
        .map(|r| {
            let file = &d.files[r.file];
            cat.fill(
                "imported.source_line",
                &[
                    ("archive", &Markup::text(&file.name)),
                    ("index", &Markup::trusted(r.index.to_string())),
                    (
                        "command",
                        &if r.command.is_empty() {
                            cat.text("overview.not_recorded")
                        } else {
                            Markup::code(&r.command)
                        },
                    ),
                ],
            )
        })
        .collect()
}

/// One line per archive: its published copy and its runs.
fn raw_files(cat: &Catalog, view: &DatasetView) -> Vec<Markup> {
    let slug = view.slug();
    view.dataset
        .files
        .iter()
        .map(|f| {
            let published = crate::site::published_archive_name(&f.name);
            cat.fill(
                "imported.file_line",
                &[
                    ("file", &Markup::text(&published)),
                    (
                        "link",
                        &Markup::trusted(format!("../../data/{slug}/{published}")),
                    ),
                    ("runs", &labels::count(f.runs as u64)),
                    (
                        "who",
                        &f.imported
                            .as_ref()
                            .map_or(Markup::trusted("echomark-runner"), |s| {
                                Markup::text(&s.label())
                            }),
                    ),
                ],
            )
        })
        .collect()
}

/// "22.76 [21.97, 22.86]" Gbit/s from bits per second.
fn gbit(s: Stat) -> Markup {
    let g = |b: f64| b / 1e9;
    labels::range(
        Some(Stat {
            median: g(s.median),
            min: g(s.min),
            max: g(s.max),
        }),
        2,
    )
}

/// Which tool to use for each figure of a path, and what the other measured nearest to it.
fn path_section(cat: &Catalog, advice: &PathAdvice) -> Option<super::recommend::Section> {
    if advice.is_empty() {
        return None;
    }
    let mut table = Table::new(cat.list("imported.path_columns", &[]), &[Align::Default; 4]);
    let echomark = cat.text("recommend.echomark_client");
    for b in &advice.bulk {
        let tool = Markup::text(&b.tool.label());
        let mut figures = vec![cat.fill(
            "imported.path_sent",
            &[("gbit", &gbit(b.sent_bits_per_second))],
        )];
        if let Some(r) = b.retransmits {
            figures.push(cat.fill(
                "imported.path_retransmits",
                &[("n", &labels::range(Some(r), 0))],
            ));
        }
        if let Some(l) = b.lost_percent {
            figures.push(cat.fill(
                "imported.path_lost",
                &[("percent", &labels::range(Some(l), 2))],
            ));
        }
        if let Some(j) = b.jitter_us {
            figures.push(cat.fill(
                "imported.path_jitter",
                &[("us", &labels::latency_range(Some(j)))],
            ));
        }
        let chosen = cat.fill(
            "imported.path_use",
            &[
                ("tool", &tool),
                ("figures", &labels::join_list(cat, &figures)),
            ],
        );
        table.push(vec![
            cat.fill(
                if b.streams == 1 {
                    "imported.path_bulk_one"
                } else {
                    "imported.path_bulk"
                },
                &[
                    ("protocol", &labels::protocol(cat, b.protocol)),
                    ("streams", &labels::count(b.streams)),
                    ("bytes", &labels::count(b.write_bytes)),
                ],
            ),
            chosen,
            b.echoes_bits_per_second.map_or(Markup::trusted("—"), |e| {
                cat.fill(
                    "imported.path_echoes",
                    &[("client", &echomark), ("gbit", &gbit(e))],
                )
            }),
            cat.text(if b.echoes_bits_per_second.is_some() {
                "imported.path_bulk_trade"
            } else {
                "imported.path_bulk_alone"
            }),
        ]);
    }
    for r in &advice.round_trips {
        let without: Vec<Markup> = r.without.iter().map(|t| Markup::text(&t.label())).collect();
        table.push(vec![
            cat.fill(
                "imported.path_round_trip",
                &[
                    ("protocol", &labels::protocol(cat, r.config.key.protocol)),
                    ("load", &labels::load(cat, &r.config.key)),
                ],
            ),
            cat.fill(
                "imported.path_p99",
                &[
                    ("client", &echomark),
                    ("p99", &labels::latency_range(Some(r.p99_us))),
                ],
            ),
            Markup::trusted("—"),
            cat.fill(
                "imported.path_no_round_trip",
                &[("tools", &labels::join_list(cat, &without))],
            ),
        ]);
    }
    Some(super::recommend::Section {
        intro: cat.text("imported.path_intro"),
        table,
    })
}
