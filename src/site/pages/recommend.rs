//! The table a dataset's overview opens with: what to use for each load class, from the
//! analysis ([`crate::analysis::recommend`]); or, for a dataset that measured one choice,
//! what it measured. The page decides nothing: every cell says what the rule decided.

use std::collections::BTreeSet;

use echomark_archive::Metric;
use serde::Serialize;

use super::DatasetView;
use crate::analysis::recommend::{self, Advice, Choice, ClassLoad, LoadClass, Stratum};
use crate::format;
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::Markup;
use crate::site::table::{Align, Table};

/// One short sentence and its table.
#[derive(Debug, Serialize)]
pub struct Section {
    pub intro: Markup,
    pub table: Table,
}

/// How choices are named on one page: the backend when the dataset has several, the IO
/// model when it has several; in a dataset of load generators, the client.
pub(super) struct Naming {
    backend: bool,
    model: bool,
    /// The imported tools of a dataset whose choices are clients: a choice of one of these
    /// backends is named as the tool (with its version), any other as echomark's client.
    clients: Option<Vec<crate::model::ImportedSource>>,
}

impl Naming {
    pub(super) fn of(view: &DatasetView) -> Self {
        if view.dataset.has_imported() {
            let mut tools: Vec<crate::model::ImportedSource> = Vec::new();
            for s in view.dataset.files.iter().filter_map(|f| f.imported.clone()) {
                if !tools.iter().any(|t| t.tool == s.tool) {
                    tools.push(s);
                }
            }
            return Self {
                backend: true,
                model: false,
                clients: Some(tools),
            };
        }
        let backends: BTreeSet<&str> = view
            .configs
            .iter()
            .map(|c| c.key.backend.as_str())
            .collect();
        let models: BTreeSet<_> = view
            .configs
            .iter()
            .map(|c| (c.key.io_model, c.key.io_threads))
            .collect();
        Self {
            backend: backends.len() > 1,
            model: models.len() > 1 || backends.len() <= 1,
            clients: None,
        }
    }

    pub(super) fn label(&self, cat: &Catalog, c: &Choice) -> Markup {
        if let Some(tools) = &self.clients {
            return tools
                .iter()
                .find(|t| t.tool.as_str() == c.backend)
                .map_or_else(
                    || cat.text("recommend.echomark_client"),
                    |t| Markup::text(&t.label()),
                );
        }
        let model = labels::topology(cat, &c.backend, c.io_model, c.io_threads);
        let backend = labels::backend(cat, &c.backend);
        let mut out = match (self.backend, self.model) {
            (true, true) => cat.fill(
                "recommend.backend_model",
                &[("backend", &backend), ("model", &model)],
            ),
            (true, false) => backend,
            _ => model,
        };
        // Settings the dataset varied are part of what a reader would deploy.
        if let Some(q) = &c.quic_transport {
            out.push(&Markup::trusted(" · "));
            out.push(&labels::quic_transport(cat, q));
        }
        if let Some(b) = c.udp_server_recv_buffer {
            out.push(&Markup::trusted(" · "));
            out.push(&cat.fill(
                "recommend.udp_buffer",
                &[("size", &Markup::trusted(format::buffer_size(b)))],
            ));
        }
        out
    }
}

fn strata_label(cat: &Catalog, strata: &[Stratum]) -> Markup {
    let names: Vec<Markup> = strata.iter().map(|s| labels::stratum(cat, s)).collect();
    labels::join_list(cat, &names)
}

/// "Small messages, few clients: 64 B, 1 client".
fn class_label(cat: &Catalog, load: &ClassLoad) -> Markup {
    let key = match load.class {
        LoadClass::Light => "recommend.light",
        LoadClass::SmallMessages => "recommend.small",
        LoadClass::FewClients => "recommend.few",
        LoadClass::Single => "recommend.single",
        LoadClass::LargeMessages => "recommend.large",
        LoadClass::ManyClients => "recommend.many",
        LoadClass::Work => "recommend.work",
    };
    cat.fill(
        key,
        &[
            ("payload", &labels::count(load.payload_bytes)),
            ("clients", &labels::clients(cat, load.clients)),
            ("work", &labels::count(load.handler_work)),
        ],
    )
}

/// The most choices a cell names; the rest are counted ("and 3 more").
const NAMED: usize = 3;

/// `names` joined, the first [`NAMED`] of them named and the rest counted.
fn capped_list(cat: &Catalog, mut names: Vec<Markup>) -> Markup {
    if names.len() <= NAMED + 1 {
        return labels::join_list(cat, &names);
    }
    let rest = names.len() - NAMED;
    names.truncate(NAMED);
    names.push(cat.fill("recommend.more", &[("n", &labels::count(rest as u64))]));
    labels::join_list(cat, &names)
}

/// Why a class has no single choice, the other candidates grouped by what the rule said of
/// the best against them: "equivalent within ±5% to A and B; undecided against C (about 8
/// repetitions a side would decide); slower under UDP".
fn why_no_choice(
    cat: &Catalog,
    naming: &Naming,
    best: &Choice,
    others: &[(Choice, echomark_decide::Decision)],
    reversed_in: &[Stratum],
) -> Markup {
    use echomark_decide::Verdict;
    let names = |pick: &dyn Fn(&Verdict) -> bool| -> Vec<Markup> {
        others
            .iter()
            .filter(|(_, d)| pick(&d.verdict))
            .map(|(c, _)| naming.label(cat, c))
            .collect()
    };
    let list = |names: Vec<Markup>| capped_list(cat, names);
    let margin = others.first().map(|(_, d)| d.margin).unwrap_or(0.05);
    let mut parts = Vec::new();
    let equivalent = names(&|v| *v == Verdict::Equivalent);
    if !equivalent.is_empty() {
        parts.push(cat.fill(
            "recommend.why_equivalent",
            &[
                ("best", &naming.label(cat, best)),
                ("others", &list(equivalent)),
                (
                    "margin",
                    &labels::margin(echomark_decide::Rule::with_margin(margin)),
                ),
            ],
        ));
    }
    let undecided =
        names(&|v| matches!(v, Verdict::Undecided { .. } | Verdict::NotComparable { .. }));
    if !undecided.is_empty() {
        let runs = others
            .iter()
            .filter_map(|(_, d)| match d.verdict {
                Verdict::Undecided { runs_needed } => runs_needed,
                _ => None,
            })
            .max();
        let key = if runs.is_some() {
            "recommend.why_undecided_runs"
        } else {
            "recommend.why_undecided"
        };
        parts.push(cat.fill(
            key,
            &[
                ("best", &naming.label(cat, best)),
                ("others", &list(undecided)),
                ("runs", &labels::count(runs.unwrap_or_default())),
            ],
        ));
    }
    let faster = names(&|v| *v == Verdict::Higher);
    if !faster.is_empty() {
        parts.push(cat.fill(
            "recommend.why_reversed",
            &[
                ("best", &naming.label(cat, best)),
                ("others", &list(faster)),
                ("strata", &strata_label(cat, reversed_in)),
            ],
        ));
    } else if !reversed_in.is_empty() {
        parts.push(cat.fill(
            "recommend.why_slower_under",
            &[
                ("best", &naming.label(cat, best)),
                ("strata", &strata_label(cat, reversed_in)),
            ],
        ));
    }
    let slower = names(&|v| *v == Verdict::Lower);
    if !slower.is_empty() {
        parts.push(cat.fill(
            "recommend.why_slower",
            &[
                ("best", &naming.label(cat, best)),
                ("others", &list(slower)),
            ],
        ));
    }
    Markup::join(&parts, &cat.text("list.semicolon"))
}

/// "wrk is faster than oha 1.16.0 (by 22% [14%, 29%]) and locust 2.47.0 (3.10× …)".
fn ahead_of(
    cat: &Catalog,
    naming: &Naming,
    best: &Choice,
    behind: &[(Choice, echomark_decide::Decision)],
) -> Markup {
    let names: Vec<Markup> = behind
        .iter()
        .map(|(c, d)| {
            cat.fill(
                "recommend.behind_one",
                &[
                    ("other", &naming.label(cat, c)),
                    (
                        "decision",
                        &labels::decision(cat, d, Metric::RoundtripsPerSecond),
                    ),
                ],
            )
        })
        .collect();
    cat.fill(
        "recommend.why_ahead",
        &[
            ("best", &naming.label(cat, best)),
            ("others", &labels::join_list(cat, &names)),
        ],
    )
}

/// The recommendation table; `None` when the dataset offers one choice (or only open loop).
pub(super) fn section(cat: &Catalog, view: &DatasetView) -> Option<Section> {
    let rows = &view.analysis.recommendations;
    if rows.is_empty() {
        return None;
    }
    use Align::Default as L;
    let naming = Naming::of(view);
    let dash = || Markup::trusted("—");
    // Clients of one server: no tool recorded its CPU, so no CPU column.
    let mut columns = cat.list("recommend.columns", &[]);
    if naming.clients.is_some() {
        columns.truncate(5);
    }
    let width = columns.len();
    let mut table = Table::new(columns, &[L; 6][..width]);
    // The strata every row pools, said once above the table when they are the same.
    let same_strata = rows.iter().all(|r| r.strata == rows[0].strata);
    for r in rows {
        let mut load = class_label(cat, &r.load);
        if !same_strata {
            load.push(&Markup::trusted(" ("));
            load.push(&strata_label(cat, &r.strata));
            load.push(&Markup::trusted(")"));
        }
        let cells = match &r.advice {
            Advice::Use {
                choice,
                runner_up,
                trade,
            } => {
                let cost = |d: Option<&echomark_decide::Decision>, m: Metric| {
                    d.map_or_else(dash, |d| labels::decision(cat, d, m))
                };
                vec![
                    load,
                    Markup::trusted(format!("**{}**", naming.label(cat, choice).as_str())),
                    naming.label(cat, runner_up),
                    labels::decision(cat, &trade.throughput, Metric::RoundtripsPerSecond),
                    cost(trade.p99.as_ref(), Metric::RttP99Us),
                    cost(trade.cpu_per_echo.as_ref(), Metric::CpuPercent),
                ]
            }
            Advice::NoSingleChoice {
                best,
                others,
                reversed_in,
                behind,
            } => {
                let mut names = vec![naming.label(cat, best)];
                names.extend(others.iter().map(|(c, _)| naming.label(cat, c)));
                let use_cell = cat.fill(
                    "recommend.no_single_choice",
                    &[("candidates", &capped_list(cat, names))],
                );
                let mut why = why_no_choice(cat, &naming, best, others, reversed_in);
                // A client left behind measured itself: worth saying on a page of clients.
                if naming.clients.is_some() && !behind.is_empty() {
                    why.push(&cat.text("list.semicolon"));
                    why.push(&ahead_of(cat, &naming, best, behind));
                }
                vec![load, use_cell, dash(), why, dash(), dash()]
            }
        };
        let mut cells = cells;
        cells.truncate(width);
        table.push(cells);
    }
    let fill = |key| {
        cat.fill(
            key,
            &[
                ("strata", &strata_label(cat, &rows[0].strata)),
                ("rule", &labels::rule_short(cat, &view.rules, "../")),
            ],
        )
    };
    if naming.clients.is_some() {
        return Some(Section {
            intro: fill("recommend.intro_clients"),
            table,
        });
    }
    let mut intro = fill(if same_strata {
        "recommend.intro_pooled"
    } else {
        "recommend.intro"
    });
    intro.push(&cat.text("site.sentence_sep"));
    intro.push(&cat.text(cpu_sentence(view.dataset)));
    Some(Section { intro, table })
}

/// The catalog key of what a dataset's CPU per echo is: an external server's own, the
/// measuring clients' when the server was already running (nothing measured its CPU), or
/// the whole process's.
fn cpu_sentence(d: &crate::model::Dataset) -> &'static str {
    if d.measures_running_servers() {
        "recommend.cpu_clients"
    } else if d.measures_external_servers() {
        "recommend.cpu_server"
    } else {
        "recommend.cpu_process"
    }
}

/// What a dataset with one choice measured, load by load: rate, p99 and CPU per echo.
pub(super) fn measured_section(cat: &Catalog, view: &DatasetView) -> Option<Section> {
    let choice = crate::analysis::measured::single_choice(&view.configs)?;
    let mut rows = crate::analysis::measured::measured(&view.configs);
    if rows.is_empty() {
        return None;
    }
    rows.sort_by_key(|m| {
        (
            crate::site::subject::protocol_rank(m.stratum.protocol),
            m.stratum.implementation.clone(),
            m.payload_bytes,
            m.clients,
            m.stratum.generators,
            m.window,
            m.handler_work,
        )
    });
    use Align::{Default as L, Right as R};
    let mut table = Table::new(
        cat.list("recommend.measured_columns", &[]),
        &[L, L, R, R, R],
    );
    let na = || Markup::trusted("N/A");
    for m in &rows {
        let mut load = cat.fill(
            "recommend.measured_load",
            &[
                ("payload", &labels::count(m.payload_bytes)),
                (
                    "clients",
                    &labels::fleet_clients(cat, m.stratum.generators, m.clients),
                ),
                ("window", &Markup::trusted(m.window.to_string())),
            ],
        );
        if m.handler_work > 0 {
            load.push(&Markup::trusted(", "));
            load.push(&labels::work(cat, m.handler_work));
        }
        let rate = if m.passed {
            labels::number(format::throughput(m.roundtrips_per_second))
        } else {
            cat.text("recommend.failed")
        };
        table.push(vec![
            labels::program_protocol(cat, m.stratum.protocol, &m.stratum.implementation),
            load,
            rate,
            m.rtt_p99_us
                .map_or_else(na, |v| labels::number(format::latency(v))),
            m.cpu_per_echo_us
                .map_or_else(na, |v| labels::number(format::latency(v))),
        ]);
    }
    let naming = Naming {
        backend: true,
        model: !view.dataset.measures_external_servers(),
        clients: None,
    };
    let mut intro = cat.fill(
        "recommend.measured_intro",
        &[("choice", &naming.label(cat, &choice))],
    );
    intro.push(&cat.text("site.sentence_sep"));
    intro.push(&cat.text(cpu_sentence(view.dataset)));
    Some(Section { intro, table })
}

/// A key-result bullet of one protocol at the main load of a dataset that compares
/// backends or servers: the fastest, its rate and p99, and the rule's word against the
/// runner-up with the price in p99 and CPU per echo where the rule finds one. `load` names
/// the main load for a fleet's generators (none without a fleet).
pub(super) fn key_result(
    cat: &Catalog,
    naming: &Naming,
    load: &dyn Fn(Option<u64>) -> Markup,
    s: &recommend::StratumAdvice,
) -> Markup {
    let what = {
        let mut m = labels::program_protocol(cat, s.stratum.protocol, &s.stratum.implementation);
        m.push(&Markup::trusted(" / "));
        m.push(&load(s.stratum.generators));
        m
    };
    let figures = |c: &Choice| s.medians.iter().find(|(m, _, _)| m == c);
    let rate = |c: &Choice| {
        figures(c).map_or_else(
            || Markup::trusted("N/A"),
            |f| labels::number(format::throughput(f.1)),
        )
    };
    let p99 = |c: &Choice| {
        figures(c).and_then(|f| f.2).map_or_else(
            || Markup::trusted("N/A"),
            |v| labels::number(format::latency(v)),
        )
    };
    match &s.advice {
        Advice::Use {
            choice,
            runner_up,
            trade,
        } => {
            let decision = labels::decision(cat, &trade.throughput, Metric::RoundtripsPerSecond);
            let mut text = cat.fill(
                "recommend.key_winner",
                &[
                    ("what", &what),
                    ("choice", &naming.label(cat, choice)),
                    ("rate", &rate(choice)),
                    ("p99", &p99(choice)),
                    ("runner_up", &naming.label(cat, runner_up)),
                    ("runner_rate", &rate(runner_up)),
                    ("runner_p99", &p99(runner_up)),
                    ("decision", &decision),
                ],
            );
            let costly = |d: Option<echomark_decide::Decision>, m: Metric| {
                d.filter(|d| d.verdict == echomark_decide::Verdict::Higher)
                    .map(|d| labels::decision(cat, &d, m))
            };
            let price = match (
                costly(trade.p99, Metric::RttP99Us),
                costly(trade.cpu_per_echo, Metric::CpuPercent),
            ) {
                (Some(p), Some(c)) => {
                    Some(cat.fill("recommend.price_p99_cpu", &[("p99", &p), ("cpu", &c)]))
                }
                (Some(p), None) => Some(cat.fill("overview.tradeoff_p99", &[("p99", &p)])),
                (None, Some(c)) => Some(cat.fill("recommend.price_cpu", &[("cpu", &c)])),
                (None, None) => None,
            };
            if let Some(p) = price {
                text.push(&cat.text("site.sentence_sep"));
                text.push(&p);
            }
            text
        }
        Advice::NoSingleChoice { best, others, .. } => {
            let names: Vec<Markup> = others
                .iter()
                .map(|(c, d)| {
                    cat.fill(
                        "overview.candidate",
                        &[
                            ("model", &naming.label(cat, c)),
                            ("rate", &rate(c)),
                            ("p99", &p99(c)),
                            (
                                "decision",
                                &labels::decision(cat, d, Metric::RoundtripsPerSecond),
                            ),
                        ],
                    )
                })
                .collect();
            cat.fill(
                "recommend.key_none",
                &[
                    ("what", &what),
                    ("best", &naming.label(cat, best)),
                    ("rate", &rate(best)),
                    ("p99", &p99(best)),
                    (
                        "candidates",
                        &Markup::join(&names, &cat.text("list.semicolon")),
                    ),
                ],
            )
        }
    }
}
