//! The answer a dataset's overview opens with, decided by what the dataset varies: each
//! backend or server against the base one, the latest knee of an open-loop dataset, loss
//! against the server's receive buffer, or (when that is all it varies) the IO model.

use std::collections::BTreeSet;

use serde::Serialize;

use super::DatasetView;
use crate::analysis::backends;
use crate::analysis::rank::Ranking;
use crate::format;
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::Markup;
use crate::site::table::{Align, Table};

/// Which backend's fastest model won each load.
#[derive(Debug, Serialize)]
pub struct BackendsSection {
    /// The tally: in how many loads each side is decided faster (the answer says it).
    pub headline: Markup,
    /// Everything else the dataset recorded of the pair: ratios, system calls, CPU per
    /// echo, timing, what else differs (beside the table, further down).
    pub details: Markup,
    /// Per load, each side's fastest model and which is faster, as the rule decided it.
    pub table: Table,
}

/// Loss against buffer size: one sentence and the table it summarises.
#[derive(Debug, Serialize)]
pub struct BufferAnswer {
    pub summary: Markup,
    /// Per load, the loss at each requested buffer.
    pub table: Table,
}

/// Every other backend (or external server) against the base one (tokio, or echomark's own
/// server, when present), in name order.
pub(super) fn backends_sections(cat: &Catalog, view: &DatasetView) -> Vec<BackendsSection> {
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
/// comparison rule decides one.
fn backends_section(
    cat: &Catalog,
    view: &DatasetView,
    subject: &str,
    base: &str,
) -> Option<BackendsSection> {
    let duels = backends::duels(
        &view.rankings_in_protocol_order(),
        &view.configs,
        subject,
        base,
        &view.rules,
    );
    if duels.is_empty() {
        return None;
    }
    let pair = Pair {
        subject,
        base,
        s_label: labels::backend(cat, subject),
        b_label: labels::backend(cat, base),
        external: view.dataset.measures_external_servers(),
    };
    let mut details = Vec::new();
    details.extend(ratio_sentence(cat, &pair, &duels));
    details.extend(instrument_sentences(cat, view, &pair));
    details.extend(timing_sentence(cat, view));
    // What else differs between the two sides, as every page that compares them says.
    details.push(cat.text(labels::backend_note_key(view.dataset)));
    Some(BackendsSection {
        headline: headline(cat, view, &pair, &duels),
        details: Markup::join(&details, &cat.text("site.sentence_sep")),
        table: duels_table(cat, &pair, &duels),
    })
}

/// Two backends (or servers) set against each other, and what the page calls them.
struct Pair<'a> {
    subject: &'a str,
    base: &'a str,
    s_label: Markup,
    b_label: Markup,
    /// Whether they are servers echomark did not start.
    external: bool,
}

/// The tally: in how many loads each side is decided faster.
fn headline(cat: &Catalog, view: &DatasetView, pair: &Pair, duels: &[backends::Duel]) -> Markup {
    let mut tally = backends::Tally::default();
    duels.iter().for_each(|d| tally.count(&d.verdict));
    let count = |n: usize| labels::count(n as u64);
    cat.fill(
        if pair.external {
            "overview.servers_summary"
        } else {
            "overview.backends_summary"
        },
        &[
            ("subject", &pair.s_label),
            ("base", &pair.b_label),
            ("higher", &count(tally.subject_higher)),
            ("lower", &count(tally.subject_lower)),
            ("equivalent", &count(tally.equivalent)),
            ("undecided", &count(tally.undecided)),
            ("margin", &labels::margin(view.rules.throughput)),
            ("total", &labels::count(duels.len() as u64)),
        ],
    )
}

/// The spread of the ratios of the two sides' fastest models.
fn ratio_sentence(cat: &Catalog, pair: &Pair, duels: &[backends::Duel]) -> Option<Markup> {
    let r = backends::duel_ratios(duels)?;
    let x = |v: f64| labels::number(format::ratio(v));
    Some(cat.fill(
        "overview.backends_ratio",
        &[
            ("subject", &pair.s_label),
            ("base", &pair.b_label),
            ("ratio", &x(r.median)),
            ("min", &x(r.min)),
            ("max", &x(r.max)),
        ],
    ))
}

/// What the runs' instruments recorded of the two sides, where they recorded it: the
/// io_uring backend's system calls, a busy-polling server's polls, system calls per echo
/// on both sides, each server's CPU per echo.
fn instrument_sentences(cat: &Catalog, view: &DatasetView, pair: &Pair) -> Vec<Markup> {
    let runs = &view.dataset.runs;
    let x = |v: f64| labels::number(format::per_echo(v));
    let mut out = Vec::new();
    // The io_uring backend's own count of its system calls, where its runs recorded it.
    if let Some(e) =
        backends::per_echo(runs, pair.subject, |r| r.instruments.server_enters_per_echo)
    {
        out.push(cat.fill(
            "overview.backends_ring_enters",
            &[
                ("subject", &pair.s_label),
                ("min", &x(e.min)),
                ("max", &x(e.max)),
                ("median", &x(e.median)),
            ],
        ));
    }
    // A busy-polling server's CPU is busy whether or not there is work: said beside its rate.
    if let Some(b) = backends::per_echo(runs, pair.subject, |r| {
        r.instruments.server_busy_polls_per_echo
    }) {
        out.push(cat.fill(
            "overview.servers_busy_poll",
            &[("subject", &pair.s_label), ("median", &x(b.median))],
        ));
    }
    out.extend(syscalls_sentence(cat, runs, pair));
    // What each server's process cost per echo, where the matrix measured it (wait4).
    if let Some(c) = backends::server_cpu_ratio(runs, pair.subject, pair.base) {
        let x = |v: f64| labels::number(format::ratio(v));
        out.push(cat.fill(
            "overview.backends_server_cpu",
            &[
                ("subject", &pair.s_label),
                ("base", &pair.b_label),
                ("ratio", &x(c.median)),
                ("min", &x(c.min)),
                ("max", &x(c.max)),
            ],
        ));
    }
    out
}

/// System calls per echo (--count-syscalls), both sides: the servers' own count where they
/// are processes of their own, else the measuring process's.
fn syscalls_sentence(cat: &Catalog, runs: &[crate::model::Run], pair: &Pair) -> Option<Markup> {
    let figure = |r: &crate::model::Run| {
        if pair.external {
            r.instruments.server_syscalls_per_echo
        } else {
            r.instruments.syscalls_per_echo
        }
    };
    let s = backends::per_echo(runs, pair.subject, figure)?;
    let b = backends::per_echo(runs, pair.base, figure)?;
    let x = |v: f64| labels::number(format::per_echo(v));
    Some(cat.fill(
        if pair.external {
            "overview.servers_syscalls"
        } else {
            "overview.backends_syscalls"
        },
        &[
            ("subject", &pair.s_label),
            ("base", &pair.b_label),
            ("subject_median", &x(s.median)),
            ("subject_min", &x(s.min)),
            ("subject_max", &x(s.max)),
            ("base_median", &x(b.median)),
            ("base_min", &x(b.min)),
            ("base_max", &x(b.max)),
        ],
    ))
}

/// Whether the backends were measured interleaved, as far as the archives' times tell.
fn timing_sentence(cat: &Catalog, view: &DatasetView) -> Option<Markup> {
    let interleaved: Vec<Option<bool>> = view
        .protocols()
        .into_iter()
        .map(|p| view.dataset.backends_interleaved(p))
        .collect();
    if interleaved.iter().all(|i| *i == Some(true)) {
        Some(cat.text("overview.backends_interleaved"))
    } else if interleaved.contains(&Some(false)) {
        Some(cat.text("overview.backends_sequential"))
    } else {
        None
    }
}

/// Per load, each side's fastest model and which is faster, as the rule decided it.
fn duels_table(cat: &Catalog, pair: &Pair, duels: &[backends::Duel]) -> Table {
    let names: [(&str, &dyn crate::site::markup::Fill); 2] =
        [("subject", &pair.s_label), ("base", &pair.b_label)];
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
    let rate = echomark_archive::Metric::RoundtripsPerSecond;
    let said = |r: &Ranking, label: &Markup, d: &echomark_decide::Decision| {
        let winner = cat.fill(
            "overview.backend_winner",
            &[("backend", label), ("model", &model(r))],
        );
        cat.fill(
            "overview.backend_decided",
            &[
                ("winner", &winner),
                ("decision", &labels::decision(cat, d, rate)),
            ],
        )
    };
    for d in duels {
        let faster = match d.verdict.verdict {
            echomark_decide::Verdict::Higher => said(d.subject, &pair.s_label, &d.verdict),
            echomark_decide::Verdict::Lower => said(d.base, &pair.b_label, &d.verdict.inverse()),
            _ => labels::decision(cat, &d.verdict, rate),
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
    table
}

/// One sentence per knee finding: the curve that holds its p99 to the highest offered rate,
/// or the candidates when the knees do not tell the curves apart.
pub(super) fn knee_answers(cat: &Catalog, view: &DatasetView) -> Vec<Markup> {
    use crate::analysis::load_curve::KNEE_MULTIPLE;
    let link = Markup::trusted("load.md");
    view.analysis
        .knees
        .iter()
        .map(|f| {
            let curve = |i: usize| view.curves[i];
            let model = |i: usize| {
                let k = &curve(i).key;
                labels::topology(cat, k.backend.as_str(), k.io_model, k.io_threads)
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
                    ("payload", &labels::count(f.payload_bytes)),
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
                Some(l) if f.distinguishable => match curve(l).past_knee() {
                    // The knee is the sweep's top: the band held all the way.
                    None => args(
                        "overview.knee_winner",
                        &[("model", &model(l)), ("rate", &rate(l))],
                    ),
                    // The knee is a step of the sweep: say what the next step did.
                    Some(next) => {
                        let next_rate = labels::count(next.offered_rate);
                        let what_next = match next.p99_us {
                            Some(p) if next.usable() => cat.fill(
                                "overview.knee_next_p99",
                                &[("p99", &labels::number(format::latency(p.median)))],
                            ),
                            _ if next.saturated => cat.text("overview.knee_next_saturated"),
                            _ => cat.text("overview.knee_next_failed"),
                        };
                        args(
                            "overview.knee_winner_step",
                            &[
                                ("model", &model(l)),
                                ("rate", &rate(l)),
                                ("next", &next_rate),
                                ("next_what", &what_next),
                            ],
                        )
                    }
                },
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
pub(super) fn io_model_answer(cat: &Catalog, view: &DatasetView) -> Option<Markup> {
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
    let n = |x: usize| labels::count(x as u64);
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
pub(super) fn buffer_answer(cat: &Catalog, view: &DatasetView) -> Option<BufferAnswer> {
    let f = view.analysis.udp_buffers.as_ref()?;
    let count = |n: usize| labels::count(n as u64);
    let summary = cat.fill(
        "overview.buffers_summary",
        &[
            ("loads", &count(f.rows.len())),
            ("fixed", &count(f.fixed_by_a_larger_buffer())),
            ("lossy", &count(f.lossy_at_largest())),
            ("lossless", &count(f.lossless())),
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
                Some(c) if c.min_lost == c.max_lost => labels::count(c.median_lost),
                Some(c) => cat.fill(
                    "overview.buffers_lost_range",
                    &[
                        ("median", &labels::count(c.median_lost)),
                        ("min", &labels::count(c.min_lost)),
                        ("max", &labels::count(c.max_lost)),
                    ],
                ),
                None => Markup::trusted("—"),
            });
        }
        table.push(cells);
    }
    Some(BufferAnswer { summary, table })
}
