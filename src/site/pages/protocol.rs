//! A dataset's page for one protocol: the ratio sections (against TCP, and a TLS protocol
//! against its plaintext form), then per work level the charts and every configuration's
//! table.

use std::collections::{BTreeMap, BTreeSet};

use echomark_archive::{Metric, Protocol};
use serde::Serialize;

use super::charts as chart_model;
use super::pairs::{self, LoadTable};
use super::{ChartFile, DatasetView, Image, PageSpec, Subject};
use crate::analysis::aggregate::{Configuration, Status};
use crate::analysis::{backends, ratios};
use crate::format;
use crate::model::Dataset;
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::Markup;
use crate::site::table::{Align, Table};

/// The model of a dataset's page for one protocol: every number and label it shows, in the
/// page's language.
#[derive(Debug, Serialize)]
pub struct ProtocolPage {
    pub title: Markup,
    /// The dataset and its repetitions.
    pub intro: Markup,
    /// The link to the methodology page.
    pub methodology: Markup,
    /// What makes this page's numbers different from the other protocol pages'.
    pub caveat: Option<Markup>,
    /// This protocol against each baseline protocol the dataset has.
    pub comparisons: Vec<Comparison>,
    /// One section per backend compared with the dataset's base backend.
    pub backend_comparisons: Vec<BackendComparison>,
    /// What the backends of this dataset share, and so what a difference means.
    pub backend_note: Markup,
    /// The comparison rule that decided the backend tables.
    pub rule: Markup,
    /// What the CPU column covers.
    pub cpu_note: Markup,
    /// One section per work level, in increasing order.
    pub sections: Vec<WorkSection>,
    /// The chart files the sections' images show (written beside the page; not part of
    /// its template's context).
    #[serde(skip)]
    pub charts: Vec<ChartFile>,
}

/// One ratio section: this protocol against a baseline protocol.
#[derive(Debug, Serialize)]
pub struct Comparison {
    pub heading: Markup,
    /// The spread of the ratios, per backend when there are several.
    pub summary: Markup,
    /// One row per pair of configurations.
    pub table: Table,
}

/// One backend against the base backend: a summary and a table per load.
#[derive(Debug, Serialize)]
pub struct BackendComparison {
    pub heading: Markup,
    pub summary: Markup,
    pub loads: Vec<LoadTable>,
}

/// One work level: its charts and a table per load.
#[derive(Debug, Serialize)]
pub struct WorkSection {
    pub heading: Markup,
    /// The throughput and p99 charts, per backend.
    pub images: Vec<Image>,
    /// Every configuration's row, one table per load.
    pub tables: Vec<LoadTable>,
}

/// Every configuration's row: median [min, max] throughput and median of the rest.
fn row(cat: &Catalog, c: &Configuration) -> Vec<Markup> {
    let model = labels::model(cat, &c.key);
    if c.status == Status::Failed {
        let excluded = cat.fill(
            "page.excluded",
            &[
                ("passed", &Markup::trusted(c.runs_passed.to_string())),
                ("runs", &Markup::trusted(c.runs.to_string())),
            ],
        );
        return vec![model, excluded];
    }
    let cpu = c
        .stat(Metric::CpuPercent)
        .map_or(Markup::trusted("N/A"), |s| {
            let v = Markup::trusted(format::cpu_percent(s.median));
            if c.cpu_percent_estimated == Some(true) {
                cat.fill("page.estimated", &[("value", &v)])
            } else {
                v
            }
        });
    vec![
        model,
        labels::range(c.stat(Metric::RoundtripsPerSecond), 0),
        labels::median(c.stat(Metric::PayloadMibPerSecond), format::two_decimals),
        labels::median(c.stat(Metric::RttP50Us), format::latency),
        labels::median(c.stat(Metric::RttP95Us), format::latency),
        labels::median(c.stat(Metric::RttP99Us), format::latency),
        cpu,
        labels::median(c.stat(Metric::PeakRssBytes), format::mib),
    ]
}

/// The charts and tables of one work level.
fn work_section(
    cat: &Catalog,
    dataset: &str,
    subject: Subject,
    work: u64,
    at_work: &[&Configuration],
    charts: &mut Vec<ChartFile>,
) -> WorkSection {
    use Align::{Left, Right};
    let label_p = labels::subject(cat, subject);
    let mut images = Vec::new();
    let backends: BTreeSet<&str> = at_work.iter().map(|c| c.key.backend.as_str()).collect();
    for backend in backends {
        let of_backend: Vec<&Configuration> = at_work
            .iter()
            .copied()
            .filter(|c| c.key.backend == backend)
            .collect();
        // Every dimension that tells configurations apart: the server buffer of isolation
        // cases too.
        let group_of = |c: &Configuration| {
            let mut g = format!(
                "{} · {}",
                format::payload_short(c.key.payload_bytes),
                labels::connections_short(cat, &c.key)
            );
            if let Some(b) = c.key.udp_server_recv_buffer {
                g.push_str(&format!(" · {}", format::buffer_size(b)));
            }
            g
        };
        let p99_title = match subject {
            Subject::NativeTcp => "chart.p99_batch_title",
            Subject::Protocol(_) => "chart.p99_title",
        };
        for (metric, key) in [
            (Metric::RoundtripsPerSecond, "chart.throughput_title"),
            (Metric::RttP99Us, p99_title),
        ] {
            let mut title = Markup::text(dataset);
            title.push(&Markup::trusted(" · "));
            title.push(&labels::backend(cat, backend));
            title.push(&Markup::trusted(" · "));
            title.push(&cat.fill(
                key,
                &[("protocol", &label_p), ("work", &labels::work(cat, work))],
            ));
            let chart = chart_model::bars(cat, &title, metric, &of_backend, &group_of);
            let rel = format!(
                "charts/{}-{}-work{work}-{}.svg",
                subject.slug(),
                crate::output::safe_name(backend),
                chart_model::suffix(metric)
            );
            images.push(Image::new(title, &rel));
            charts.push(chart_model::bar_file(rel, &chart));
        }
    }
    type Load = (u64, u64, u64, Option<u64>, Option<u64>);
    let mut loads: BTreeMap<Load, Vec<&Configuration>> = BTreeMap::new();
    for c in at_work {
        let k = &c.key;
        loads
            .entry((
                k.clients,
                k.payload_bytes,
                k.window,
                k.udp_server_recv_buffer,
                k.generators,
            ))
            .or_default()
            .push(c);
    }
    let columns = cat.list("page.table_columns", &[]);
    let aligns = [Left, Right, Right, Right, Right, Right, Right, Right];
    let tables = loads
        .values()
        .map(|configs| {
            let mut table = Table::new(columns.clone(), &aligns);
            for c in configs {
                table.push(row(cat, c));
            }
            LoadTable {
                heading: labels::load(cat, &configs[0].key),
                table,
            }
        })
        .collect();
    WorkSection {
        heading: labels::work(cat, work),
        images,
        tables,
    }
}

/// The ratio sections of a protocol page: against the plaintext form of a TLS protocol,
/// then against TCP, for each baseline protocol the dataset has.
fn comparisons(cat: &Catalog, view: &DatasetView, protocol: Protocol) -> Vec<Comparison> {
    use Align::{Left, Right};
    let present = view.protocols();
    let subject = labels::protocol(cat, protocol);
    ratios::baselines(protocol)
        .into_iter()
        .filter(|base| present.contains(base))
        .map(|base| {
            let base_label = labels::protocol(cat, base);
            let names: [(&str, &dyn crate::site::markup::Fill); 2] =
                [("protocol", &subject), ("base", &base_label)];
            let heading = if protocol.plaintext() == Some(base) {
                cat.fill("compare.tls_heading", &names)
            } else {
                cat.fill("compare.heading", &names)
            };
            let pairs = ratios::pairs(&view.configs, protocol, base);
            // One spread per backend: ratios of different stacks are not pooled.
            let mut by_backend: BTreeMap<&str, Vec<ratios::Pair>> = BTreeMap::new();
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
                let sentences: Vec<Markup> = by_backend
                    .iter()
                    .filter_map(|(backend, of_backend)| {
                        let s = ratios::spread(of_backend)?;
                        let r = |v: f64| labels::number(format::ratio(v));
                        let sentence = cat.fill(
                            "compare.summary",
                            &[
                                ("protocol", &subject),
                                ("base", &base_label),
                                ("count", &labels::count(s.count as u64)),
                                ("median", &r(s.median)),
                                ("min", &r(s.min)),
                                ("max", &r(s.max)),
                            ],
                        );
                        Some(if several {
                            cat.fill(
                                "compare.for_backend",
                                &[
                                    ("backend", &labels::backend(cat, backend)),
                                    ("sentence", &sentence),
                                ],
                            )
                        } else {
                            sentence
                        })
                    })
                    .collect();
                Markup::join(&sentences, &cat.text("site.sentence_sep"))
            };
            let mut table = Table::new(
                cat.list("compare.table_columns", &names),
                &[Left, Left, Right, Right, Right, Right, Right, Right],
            );
            let p99 = |c: &Configuration| labels::median(c.stat(Metric::RttP99Us), format::latency);
            let rate = |c: &Configuration| {
                labels::median(c.stat(Metric::RoundtripsPerSecond), format::throughput)
            };
            for pair in &pairs {
                table.push(vec![
                    labels::load(cat, &pair.subject.key),
                    labels::model(cat, &pair.subject.key),
                    rate(pair.subject),
                    rate(pair.base),
                    labels::number(format::ratio(pair.throughput)),
                    p99(pair.subject),
                    p99(pair.base),
                    labels::number(pair.p99.map_or("N/A".to_string(), format::ratio)),
                ]);
            }
            Comparison {
                heading,
                summary,
                table,
            }
        })
        .collect()
}

/// The backend sections of a protocol page: every other backend against the base backend
/// (tokio when present), configuration by configuration.
fn backend_comparisons(
    cat: &Catalog,
    of_subject: &[&Configuration],
    rules: &crate::analysis::decision::Rules,
) -> Vec<BackendComparison> {
    let present: BTreeSet<&str> = of_subject.iter().map(|c| c.key.backend.as_str()).collect();
    let Some(base) = backends::base_backend(&present) else {
        return Vec::new();
    };
    present
        .iter()
        .filter(|b| **b != base)
        .map(|subject| {
            let sides = pairs::Sides {
                subject: labels::backend(cat, subject),
                base: labels::backend(cat, base),
                margin: labels::margin(rules.throughput),
                rules: *rules,
            };
            let rows = backends::rows(of_subject, subject, base, rules);
            let section = pairs::section(cat, &rows, &sides, &pairs::BACKEND_TEXTS);
            BackendComparison {
                heading: cat.fill(
                    "compare.backend_heading",
                    &[("subject", &sides.subject), ("base", &sides.base)],
                ),
                summary: section.summary,
                loads: section.loads,
            }
        })
        .collect()
}

/// A dataset's page for one protocol (or for arknet's native TCP program).
pub fn page(cat: &Catalog, view: &DatasetView, subject: Subject) -> PageSpec {
    let mut model = model(cat, view, subject);
    let charts = std::mem::take(&mut model.charts);
    PageSpec::new(
        format!("{}/{}/{}", cat.code, view.slug(), subject.slug()),
        "protocol.md",
        model.title.clone(),
        &model,
        charts,
    )
}

/// The model of a dataset's page for one protocol (or for arknet's native TCP program).
pub fn model(cat: &Catalog, view: &DatasetView, subject: Subject) -> ProtocolPage {
    let d = view.dataset;
    let mine = view.configs_of(subject);
    let works: BTreeSet<u64> = mine.iter().map(|c| c.key.handler_work).collect();
    let mut charts = Vec::new();
    let sections = works
        .into_iter()
        .map(|work| {
            let at_work: Vec<&Configuration> = mine
                .iter()
                .copied()
                .filter(|c| c.key.handler_work == work)
                .collect();
            work_section(cat, &d.name, subject, work, &at_work, &mut charts)
        })
        .collect();
    ProtocolPage {
        title: cat.fill(
            &labels::for_path("page.title", d),
            &[("protocol", &labels::subject(cat, subject))],
        ),
        intro: cat.fill(
            &labels::for_path("page.intro", d),
            &[
                ("dataset", &d.name),
                ("repetitions", &Markup::trusted(d.repetitions().to_string())),
            ],
        ),
        methodology: cat.fill(
            "page.methodology",
            &[("link", &Markup::trusted("../methodology.md"))],
        ),
        // arknet's native program measures batch RTT; its page says so before any number.
        caveat: (subject == Subject::NativeTcp).then(|| cat.text("subject.native_caveat")),
        comparisons: match subject {
            Subject::Protocol(protocol) => comparisons(cat, view, protocol),
            Subject::NativeTcp => Vec::new(),
        },
        backend_comparisons: backend_comparisons(cat, &mine, &view.rules),
        cpu_note: labels::cpu_note(cat, d),
        backend_note: backend_note(cat, d, subject),
        rule: labels::rule(cat, &view.rules, "../"),
        sections,
        charts,
    }
}

/// The note under a backend comparison: what a backend is here, and whether the backends'
/// runs were interleaved or measured one after another (a drift of the machine between
/// them would then read as a difference between backends).
fn backend_note(cat: &Catalog, d: &Dataset, subject: Subject) -> Markup {
    let mut note = cat.text(labels::backend_note_key(d));
    let interleaved = match subject {
        Subject::Protocol(protocol) => d.backends_interleaved(protocol),
        Subject::NativeTcp => None,
    };
    if let Some(interleaved) = interleaved {
        note.push(&cat.text("site.sentence_sep"));
        note.push(&cat.text(if interleaved {
            "compare.interleaved"
        } else {
            "compare.sequential"
        }));
    }
    note
}

#[cfg(test)]
mod tests {
    use echomark_archive::{IoModel, Protocol};

    use super::*;
    use crate::site::pages::fixtures::{dataset, english, runs, Analysed};

    /// A dataset of TCP and HTTP, each on two IO models (HTTP at half TCP's rate).
    fn tcp_and_http() -> Analysed {
        let mut measured = Vec::new();
        for (protocol, rate) in [(Protocol::Tcp, 100_000.0), (Protocol::Http, 50_000.0)] {
            measured.extend(runs(protocol, IoModel::Shared, 1, rate));
            measured.extend(runs(protocol, IoModel::Sharded, 2, rate * 1.3));
        }
        Analysed::of(vec![dataset("tcp-http", "epyc", measured)])
    }

    #[test]
    fn a_protocol_page_holds_its_own_protocols_rows() {
        let site = tcp_and_http();
        let cat = english();
        let page = model(&cat, &site.views()[0], Subject::Protocol(Protocol::Tcp));
        assert_eq!(page.sections.len(), 1, "one work level");
        let tables = &page.sections[0].tables;
        assert_eq!(tables.len(), 1, "one load");
        let models: Vec<&str> = tables[0].table.rows.iter().map(|r| r[0].as_str()).collect();
        assert_eq!(
            models,
            [
                "tokio / 1 runtime / 1 thread",
                "tokio / 2 runtimes / 1 thread each"
            ]
        );
        // The rates are TCP's, not HTTP's.
        let rates: Vec<&str> = tables[0].table.rows.iter().map(|r| r[1].as_str()).collect();
        assert!(rates[0].starts_with("100,000"), "{rates:?}");
        assert!(rates[1].starts_with("130,000"), "{rates:?}");
        // TCP is the baseline: nothing to set it against; one backend: no backend section.
        assert!(page.comparisons.is_empty() && page.backend_comparisons.is_empty());
        assert!(page.caveat.is_none());
        // A throughput and a p99 chart, each image with its file.
        let images: Vec<&str> = page.sections[0]
            .images
            .iter()
            .map(|i| i.src.as_str())
            .collect();
        let files: Vec<&str> = page.charts.iter().map(|c| c.rel.as_str()).collect();
        assert_eq!(images.len(), 2);
        assert_eq!(images, files);
    }

    #[test]
    fn a_protocol_over_tcp_is_set_against_tcp_pair_by_pair() {
        let site = tcp_and_http();
        let cat = english();
        let page = model(&cat, &site.views()[0], Subject::Protocol(Protocol::Http));
        assert_eq!(page.comparisons.len(), 1, "HTTP against TCP");
        let c = &page.comparisons[0];
        assert!(c.heading.as_str().contains("TCP"), "{:?}", c.heading);
        assert_eq!(c.table.rows.len(), 2, "one pair per IO model");
        for row in &c.table.rows {
            assert_eq!(row[4].as_str(), "0.50×", "the throughput ratio: {row:?}");
        }
    }
}
