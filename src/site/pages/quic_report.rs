//! The site-wide QUIC report, echomark's counterpart of the RUDP report the seed's UDP
//! report points to: what reliability and encryption over UDP cost (each QUIC protocol
//! against the protocols it stands among, with how many configurations the ranges decide),
//! quinn's own counters per configuration, and what has not been measured yet.

use serde::Serialize;

use super::{DatasetView, PageSpec};
use crate::analysis::quic::{Comparison, CounterRow, PressureRow, TransportRow};
use crate::format;
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::Markup;
use crate::site::table::{Align, Table};

/// The QUIC report: each QUIC form against its baselines, quinn's counters, handshakes, transports and pressure.
#[derive(Serialize)]
pub struct QuicPage {
    pub lead: Markup,
    pub comparisons: Table,
    pub counters: Table,
    /// A connection per message: handshakes and 0-RTT resumption.
    pub handshakes: Table,
    /// Configurations measured under several transport settings.
    pub transports: Table,
    /// The server's UDP receive buffer under pressure.
    pub pressure: Table,
    /// What no dataset has measured yet, if anything.
    pub not_yet: Option<Markup>,
    /// The comparison rule behind the counts.
    pub rule: Markup,
}

/// The datasets with QUIC runs.
fn with_quic<'a, 'b>(views: &'b [DatasetView<'a>]) -> Vec<&'b DatasetView<'a>> {
    views.iter().filter(|v| v.analysis.quic.runs > 0).collect()
}

/// The report's path below the language folder (the UDP report links it).
pub const STEM: &str = "quic-report";

/// Whether the site has a QUIC report (some dataset has QUIC runs).
pub fn exists(views: &[DatasetView]) -> bool {
    !with_quic(views).is_empty()
}

fn comparison_row(cat: &Catalog, view: &DatasetView, c: &Comparison) -> Vec<Markup> {
    let count = |n: usize| labels::count(n as u64);
    let s = &c.spread;
    vec![
        Markup::trusted(format!(
            "[{}]({}/{}.md)",
            Markup::text(&view.dataset.name),
            view.slug(),
            c.subject.as_str()
        )),
        labels::protocol(cat, c.subject),
        labels::protocol(cat, c.base),
        count(s.count),
        Markup::trusted(format!(
            "{} ({}–{})",
            format::ratio(s.median),
            format::ratio(s.min),
            format::ratio(s.max)
        )),
        count(c.lower),
        count(c.higher),
        count(c.equivalent),
        count(c.undecided),
    ]
}

/// The first cells of a row of quinn's counters: dataset, protocol, load, IO model.
fn configuration_cells(cat: &Catalog, view: &DatasetView, row: &CounterRow) -> Vec<Markup> {
    let k = &row.key;
    vec![
        Markup::text(&view.dataset.name),
        labels::protocol(cat, k.protocol),
        labels::load(cat, k),
        labels::topology(cat, k.backend.as_str(), k.io_model, k.io_threads),
    ]
}

fn counter_row(cat: &Catalog, view: &DatasetView, row: &CounterRow) -> Vec<Markup> {
    let lost = &row.lost_percent;
    let mut cells = configuration_cells(cat, view, row);
    cells.extend([
        Markup::trusted(format!(
            "{} % ({}–{})",
            format::two_decimals(lost.median),
            format::two_decimals(lost.min),
            format::two_decimals(lost.max)
        )),
        Markup::trusted(format::grouped(row.congestion_events, 0)),
        Markup::trusted(format::two_decimals(row.datagrams_per_send)),
        Markup::trusted(format::latency(row.smoothed_rtt_us)),
        row.datagram_size_limit.map_or_else(
            || Markup::trusted("—"),
            |l| Markup::trusted(format::count(l)),
        ),
        row.datagrams_dropped_on_send.map_or_else(
            || Markup::trusted("—"),
            |n| Markup::trusted(format::grouped(n, 0)),
        ),
    ]);
    cells
}

fn handshake_row(cat: &Catalog, view: &DatasetView, row: &CounterRow, made: f64) -> Vec<Markup> {
    let mut cells = configuration_cells(cat, view, row);
    cells.extend([
        Markup::trusted(format::grouped(made, 0)),
        row.zero_rtt_accepted_percent
            .filter(|_| row.key.protocol == echomark_archive::Protocol::Quic0rtt)
            .map_or_else(
                || Markup::trusted("—"),
                |p| Markup::trusted(format!("{} %", format::two_decimals(p))),
            ),
    ]);
    cells
}

fn transport_row(cat: &Catalog, view: &DatasetView, row: &TransportRow) -> Vec<Markup> {
    let k = &row.key;
    let plain = echomark_archive::CaseKey {
        quic_transport: None,
        ..k.clone()
    };
    let against = match row.against_defaults {
        None => Markup::trusted("—"),
        Some((ratio, d)) => cat.fill(
            "quic.against_defaults",
            &[
                ("ratio", &Markup::trusted(format::ratio(ratio))),
                (
                    "decision",
                    &labels::decision(cat, &d, echomark_archive::Metric::RoundtripsPerSecond),
                ),
            ],
        ),
    };
    vec![
        Markup::text(&view.dataset.name),
        labels::protocol(cat, k.protocol),
        labels::load(cat, &plain),
        labels::topology(cat, k.backend.as_str(), k.io_model, k.io_threads),
        labels::quic_transport(cat, &row.transport),
        labels::range(Some(row.throughput), 0),
        labels::latency_range(row.p99_us),
        against,
    ]
}

fn pressure_row(cat: &Catalog, view: &DatasetView, row: &PressureRow) -> Vec<Markup> {
    let k = &row.key;
    // The buffer has a column of its own.
    let load = echomark_archive::CaseKey {
        udp_server_recv_buffer: None,
        ..k.clone()
    };
    vec![
        Markup::text(&view.dataset.name),
        labels::protocol(cat, k.protocol),
        labels::load(cat, &load),
        labels::topology(cat, k.backend.as_str(), k.io_model, k.io_threads),
        Markup::trusted(
            k.udp_server_recv_buffer
                .map_or("—".to_string(), format::buffer_size),
        ),
        Markup::trusted(format!("{} / {}", row.runs_passed, row.runs)),
        labels::range(row.throughput, 0),
        Markup::trusted(format::grouped(row.lost_messages, 0)),
        row.lost_packets_percent.map_or_else(
            || Markup::trusted("—"),
            |p| Markup::trusted(format!("{} %", format::two_decimals(p))),
        ),
    ]
}

/// The QUIC report, when some dataset has QUIC runs.
pub fn page(cat: &Catalog, views: &[DatasetView]) -> Option<PageSpec> {
    use Align::{Default as L, Right as R};
    let datasets = with_quic(views);
    if datasets.is_empty() {
        return None;
    }
    let mut comparisons = Table::new(
        cat.list("quic.comparison_columns", &[]),
        &[L, L, L, R, R, R, R, R, R],
    );
    let mut counters = Table::new(
        cat.list("quic.counter_columns", &[]),
        &[L, L, L, L, R, R, R, R, R, R],
    );
    let mut handshakes = Table::new(cat.list("quic.handshake_columns", &[]), &[L, L, L, L, R, R]);
    let mut transports = Table::new(
        cat.list("quic.transport_columns", &[]),
        &[L, L, L, L, L, R, R, R],
    );
    let mut pressure = Table::new(
        cat.list("quic.pressure_columns", &[]),
        &[L, L, L, L, R, R, R, R, R],
    );
    for view in &datasets {
        for row in &view.analysis.quic.transports {
            transports.push(transport_row(cat, view, row));
        }
        for row in &view.analysis.quic.pressure {
            pressure.push(pressure_row(cat, view, row));
        }
        for c in &view.analysis.quic.comparisons {
            comparisons.push(comparison_row(cat, view, c));
        }
        // One placement keeps the table readable: one runtime on one thread, the one every
        // grid has; the archives hold every run's counters.
        for row in view.analysis.quic.counters.iter().filter(|r| {
            r.key.io_model == echomark_archive::IoModel::Shared && r.key.io_threads == 1
        }) {
            match row.handshakes {
                None => counters.push(counter_row(cat, view, row)),
                Some(made) => handshakes.push(handshake_row(cat, view, row, made)),
            }
        }
    }
    let runs: usize = datasets.iter().map(|v| v.analysis.quic.runs).sum();
    let model = QuicPage {
        lead: cat.fill(
            "quic.lead",
            &[
                ("runs", &labels::count(runs as u64)),
                ("datasets", &Markup::trusted(datasets.len().to_string())),
            ],
        ),
        comparisons,
        counters,
        handshakes,
        rule: labels::rule(cat, &views[0].rules, ""),
        not_yet: match (transports.rows.is_empty(), pressure.rows.is_empty()) {
            (true, true) => Some(cat.text("quic.not_yet_text")),
            (false, true) => Some(cat.text("quic.not_yet_pressure")),
            (true, false) => Some(cat.text("quic.not_yet_transports")),
            (false, false) => None,
        },
        transports,
        pressure,
    };
    Some(PageSpec::new(
        format!("{}/{STEM}", cat.code),
        "quic.md",
        cat.text("quic.title"),
        &model,
        Vec::new(),
    ))
}
