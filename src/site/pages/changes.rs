//! What changed in a dataset since the one before it in its series (the same host and
//! matrix, ordered by recording time): `echomark compare`'s verdicts as a page, and the
//! series itself as a history page.

use echomark_archive::Metric;
use serde::Serialize;

use super::charts as chart_model;
use super::{ChartFile, DatasetView, Image, PageSpec};
use crate::analysis::aggregate::{Configuration, Status};
use crate::analysis::compare::{self, Comparison, ConfigurationChange, MetricChange, Verdict};
use crate::analysis::history::Series;
use crate::format;
use crate::output::safe_name;
use crate::site::charts::{self, LineChart};
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::Markup;
use crate::site::table::{Align, Table};

/// A dataset's What changed page: the rule's verdict on every shared configuration against the previous dataset of its series.
#[derive(Serialize)]
pub struct ChangesPage {
    pub title: Markup,
    pub lead: Markup,
    /// The two datasets side by side in the explorer.
    pub explore: Markup,
    pub hosts: Option<Markup>,
    /// Set when nearly everything moved one way.
    pub uniform: Option<Markup>,
    pub sides: Table,
    /// Per protocol: regressed, improved, no change, not comparable, the largest change.
    pub summary: Table,
    /// The changed configurations with the largest changes, largest first.
    pub changed: Table,
    pub changed_note: Markup,
    /// Every (configuration, metric) finding, behind a disclosure.
    pub findings: Table,
    /// Every configuration, behind a disclosure.
    pub all: Table,
    pub rule: Markup,
}

/// How many changed configurations the page shows before its disclosures.
const CHANGED_SHOWN: usize = 20;

/// A series' history page: each step's changes and the trends of its headline figures.
#[derive(Serialize)]
pub struct HistoryPage {
    pub title: Markup,
    pub lead: Markup,
    /// The newest step, per protocol.
    pub latest: Option<Table>,
    pub steps: Table,
    pub trends_intro: Markup,
    pub images: Vec<Image>,
    pub chart_note: Markup,
}

/// Per protocol, the newest dataset's valid configuration with the highest median
/// throughput: the configurations a history chart follows.
fn headlines<'a>(newest: &DatasetView<'a>) -> Vec<&'a Configuration> {
    newest
        .protocols()
        .into_iter()
        .filter_map(|p| {
            newest
                .configs_of_protocol(p)
                .into_iter()
                .filter(|c| c.status == Status::Valid)
                .filter_map(|c| c.stat(Metric::RoundtripsPerSecond).map(|s| (c, s.median)))
                .max_by(|a, b| {
                    a.1.total_cmp(&b.1)
                        .then(b.0.key.topology_rank().cmp(&a.0.key.topology_rank()))
                })
                .map(|(c, _)| c)
        })
        .collect()
}

/// One trend chart: a headline configuration's throughput in every dataset of the series,
/// with ▼ where compare called the step into that dataset a regression.
fn trend(
    cat: &Catalog,
    views: &[DatasetView],
    series: &Series,
    start: usize,
    headline: &Configuration,
    files: &mut Vec<ChartFile>,
) -> Image {
    let key = &headline.key;
    // The legend names the topology; the title carries the protocol and load.
    let name = labels::topology(cat, key.backend.as_str(), key.io_model, key.io_threads);
    let ticks: Vec<String> = series.datasets[start..]
        .iter()
        .map(|&i| {
            let t = views[i].dataset.recorded_at().unwrap_or("");
            t.get(..16).unwrap_or(t).replace('T', " ")
        })
        .collect();
    let points = series.datasets[start..]
        .iter()
        .zip(&ticks)
        .map(|(&i, tick)| {
            let found = views[i].configs.iter().copied().find(|c| c.key == *key);
            chart_model::cell(cat, found, Metric::RoundtripsPerSecond, &name, tick)
        })
        .collect();
    let marks = series
        .steps
        .iter()
        .enumerate()
        .filter(|(_, step)| {
            step.configurations.iter().any(|c| {
                c.key == *key
                    && c.metrics.iter().any(|m| {
                        m.metric == Metric::RoundtripsPerSecond && m.verdict == Verdict::Regressed
                    })
            })
        })
        .filter_map(|(p, _)| Some((0, (p + 1).checked_sub(start)?)))
        .collect();
    let title = cat.fill(
        "history.chart_title",
        &[
            ("protocol", &labels::protocol(cat, key.protocol)),
            ("load", &labels::load(cat, key)),
        ],
    );
    let (y_label, _) = chart_model::axis(cat, Metric::RoundtripsPerSecond);
    let chart = LineChart {
        text: chart_model::text(
            cat,
            &title,
            y_label,
            std::slice::from_ref(&name),
            vec![charts::topology_colour(key.io_model, key.io_threads)],
        ),
        x_label: cat.raw("history.x_label").to_string(),
        x_ticks: ticks,
        points: vec![points],
        marks,
    };
    // A fleet's generators part the file name (none without a fleet, as before).
    let fleet = key.generators.map_or(String::new(), |n| format!("-gen{n}"));
    let rel = format!(
        "charts/history-{}-{}-{}-{}x{}-{}-{}{fleet}.svg",
        key.protocol.as_str(),
        safe_name(key.backend.as_str()),
        key.payload_bytes,
        key.clients,
        key.window,
        key.io_model,
        key.io_threads
    );
    files.push(ChartFile {
        rel: rel.clone(),
        svg: charts::lines::draw(&chart),
        phone: Some(charts::lines::phone(&chart)),
    });
    Image::new(title, &rel)
}

fn verdict(cat: &Catalog, v: Verdict) -> Markup {
    let key = match v {
        Verdict::Regressed => "regressed",
        Verdict::Improved => "improved",
        Verdict::Equivalent => "equivalent",
        Verdict::Undecided => "undecided",
        Verdict::NotComparable => "not_comparable",
    };
    cat.text(&format!("changes.verdict.{key}"))
}

fn metric(cat: &Catalog, m: Metric) -> Markup {
    cat.text(&format!("changes.metric.{}", m.name()))
}

/// The evidence behind a verdict, in the page's language: the change's interval at the
/// family's level, and its q-value over every test.
fn evidence(cat: &Catalog, m: &MetricChange, c: &ConfigurationChange) -> Markup {
    let base = Markup::trusted(c.base_runs.to_string());
    let new = Markup::trusted(c.new_runs.to_string());
    let percent = |x: f64| Markup::trusted(format!("{}%", format::grouped(x * 100.0, 1)));
    let (low, high) = m.interval.unwrap_or((f64::NAN, f64::NAN));
    cat.fill(
        "changes.by_interval",
        &[
            ("base", &base),
            ("new", &new),
            ("low", &percent(low)),
            ("high", &percent(high)),
            ("level", &percent(m.level)),
            (
                "q",
                &Markup::trusted(format::grouped(m.adjusted_p_value, 4)),
            ),
        ],
    )
}

fn side_column(cat: &Catalog, view: &DatasetView, s: &compare::SideSummary) -> Vec<Markup> {
    let missing = cat.text("overview.not_recorded");
    let list = |items: &[String]| {
        if items.is_empty() {
            missing.clone()
        } else {
            Markup::join(
                &items.iter().map(|i| Markup::code(i)).collect::<Vec<_>>(),
                &Markup::trusted(", "),
            )
        }
    };
    vec![
        labels::dataset_link(&s.dataset, &view.slug(), "../"),
        s.first_recorded_utc
            .as_deref()
            .map_or(missing.clone(), |t| Markup::text(t.get(..19).unwrap_or(t))),
        list(&s.builds),
        list(&s.revisions),
        labels::count(s.runs as u64),
    ]
}

fn change_cell(m: Option<&MetricChange>) -> Markup {
    match m {
        None => Markup::trusted("–"),
        Some(m) if matches!(m.verdict, Verdict::Regressed | Verdict::Improved) => {
            Markup::trusted(format!("**{}**", compare::signed_percent(m.change)))
        }
        Some(m) => Markup::trusted(compare::signed_percent(m.change)),
    }
}

/// The changes page of `current` against `previous`, the dataset before it in its series.
pub fn page(
    cat: &Catalog,
    previous: &DatasetView,
    current: &DatasetView,
    c: &Comparison,
) -> PageSpec {
    let count = |n: usize| labels::count(n as u64);
    let previous_link = labels::dataset_link(&previous.dataset.name, &previous.slug(), "../");
    let title = cat.fill(
        "changes.title",
        &[("previous", &Markup::text(&previous.dataset.name))],
    );
    let lead = cat.fill(
        "changes.lead",
        &[
            ("previous", &previous_link),
            ("regressed", &count(c.counts.regressed)),
            ("improved", &count(c.counts.improved)),
            ("compared", &count(c.configurations.len())),
            ("not_comparable", &count(c.counts.not_comparable)),
            ("equivalent", &count(c.counts.equivalent)),
            ("undecided", &count(c.counts.undecided)),
            ("margin", &labels::margin(c.rules.throughput)),
            ("latency_margin", &labels::margin(c.rules.latency)),
            ("tests", &count(c.tests_made())),
        ],
    );
    let hosts = (!c.host_differences.is_empty()).then(|| {
        let fields: Vec<Markup> = c.host_differences.iter().map(|d| Markup::text(d)).collect();
        cat.fill(
            "changes.hosts_differ",
            &[("fields", &Markup::join(&fields, &Markup::trusted("; ")))],
        )
    });
    let uniform = c.uniform_shift.map(|v| {
        cat.fill(
            "changes.uniform",
            &[
                ("verdict", &verdict(cat, v)),
                (
                    "share",
                    &Markup::trusted(format!("{:.0}", compare::UNIFORM_SHARE * 100.0)),
                ),
            ],
        )
    });
    let sides = sides_table(cat, previous, current, c);
    let findings = findings_table(cat, c);
    let (all, changed, moved) = change_tables(cat, c);
    let changed_note = cat.fill(
        "changes.changed_note",
        &[
            ("shown", &count(moved.min(CHANGED_SHOWN))),
            ("changed", &count(moved)),
        ],
    );
    let summary = protocol_summary(cat, c);
    let model = ChangesPage {
        explore: labels::explore_link(
            cat,
            "explore.these_two",
            "../",
            &[
                ("da", &previous.dataset.name),
                ("db", &current.dataset.name),
            ],
        ),
        title: title.clone(),
        lead,
        hosts,
        uniform,
        sides,
        summary,
        changed,
        changed_note,
        findings,
        all,
        rule: cat.text("changes.rule"),
    };
    PageSpec::new(
        format!("{}/{}/changes", cat.code, current.slug()),
        "changes.md",
        title,
        &model,
        Vec::new(),
    )
}

/// The two datasets side by side: name, host, build, recording.
fn sides_table(
    cat: &Catalog,
    previous: &DatasetView,
    current: &DatasetView,
    c: &Comparison,
) -> Table {
    use Align::Default as L;
    let mut sides = Table::new(cat.list("changes.side_columns", &[]), &[L, L, L]);
    let rows = cat.list("changes.side_rows", &[]);
    let (before, after) = (
        side_column(cat, previous, &c.base),
        side_column(cat, current, &c.new),
    );
    for (i, label) in rows.into_iter().enumerate() {
        sides.push(vec![label, before[i].clone(), after[i].clone()]);
    }
    sides
}

/// Every metric with a verdict, regressions first, with its evidence.
fn findings_table(cat: &Catalog, c: &Comparison) -> Table {
    use Align::{Default as L, Right as R};
    let mut findings = Table::new(
        cat.list("changes.finding_columns", &[]),
        &[L, L, L, R, R, R, L],
    );
    for v in [Verdict::Regressed, Verdict::Improved] {
        for (config, m) in c.findings(v) {
            let value = |x: f64| Markup::trusted(compare::value_text(m.metric, x));
            findings.push(vec![
                labels::configuration(cat, &config.key),
                metric(cat, m.metric),
                verdict(cat, v),
                value(m.base_median),
                value(m.new_median),
                Markup::trusted(compare::change_text(m)),
                evidence(cat, m, config),
            ]);
        }
    }
    findings
}

/// Every configuration's changes, the changed ones (largest change of any metric with a
/// verdict first, at most [`CHANGED_SHOWN`]), and how many changed.
fn change_tables(cat: &Catalog, c: &Comparison) -> (Table, Table, usize) {
    use Align::{Default as L, Right as R};
    let mut columns = vec![
        cat.text("changes.configuration"),
        cat.text("changes.verdict_column"),
    ];
    columns.extend(compare::COMPARED.iter().map(|&m| metric(cat, m)));
    let row = |config: &ConfigurationChange| {
        let mut row = vec![
            labels::configuration(cat, &config.key),
            verdict(cat, config.verdict),
        ];
        row.extend(
            compare::COMPARED
                .iter()
                .map(|&m| change_cell(config.metrics.iter().find(|x| x.metric == m))),
        );
        row
    };
    let mut all = Table::new(columns.clone(), &[L, L, R, R, R, R]);
    for config in &c.configurations {
        all.push(row(config));
    }
    // The changed configurations, largest change (of any metric with a verdict) first.
    let size = |config: &ConfigurationChange| {
        config
            .metrics
            .iter()
            .filter(|m| matches!(m.verdict, Verdict::Regressed | Verdict::Improved))
            .map(|m| m.change.abs())
            .fold(0.0, f64::max)
    };
    let mut moved: Vec<&ConfigurationChange> = c
        .configurations
        .iter()
        .filter(|x| matches!(x.verdict, Verdict::Regressed | Verdict::Improved))
        .collect();
    moved.sort_by(|a, b| size(b).total_cmp(&size(a)));
    let mut changed = Table::new(columns, &[L, L, R, R, R, R]);
    for config in moved.iter().take(CHANGED_SHOWN) {
        changed.push(row(config));
    }
    (all, changed, moved.len())
}

/// Per protocol, how a comparison's configurations moved: regressed, improved, no change,
/// not comparable, and the largest throughput change (What changed, History).
fn protocol_summary(cat: &Catalog, c: &Comparison) -> Table {
    use Align::{Default as L, Right as R};
    let count = |n: usize| labels::count(n as u64);
    let mut summary = Table::new(
        cat.list("changes.summary_columns", &[]),
        &[L, R, R, R, R, R, R],
    );
    let mut protocols = c.by_protocol();
    protocols.sort_by_key(|p| labels::protocol_rank(p.protocol));
    for p in &protocols {
        summary.push(vec![
            labels::protocol(cat, p.protocol),
            count(p.counts.regressed),
            count(p.counts.improved),
            count(p.counts.equivalent),
            count(p.counts.undecided),
            count(p.counts.not_comparable),
            p.largest_throughput_change
                .map_or(Markup::trusted("—"), |x| {
                    let sign = if x > 0.0 { "+" } else { "" };
                    Markup::trusted(format!("{sign}{}%", format::grouped(x * 100.0, 1)))
                }),
        ]);
    }
    summary
}

/// The most datasets a history page shows, the newest: its table and its charts.
pub const HISTORY_WINDOW: usize = 60;

/// The history page of a series, kept in the folder of its newest dataset.
pub fn history(cat: &Catalog, views: &[DatasetView], series: &Series) -> Option<PageSpec> {
    use Align::{Default as L, Right as R};
    let newest = views.get(*series.datasets.last()?)?;
    let count = |n: usize| labels::count(n as u64);
    // The newest datasets only, so the page keeps its size however long the series grows.
    let start = series.datasets.len().saturating_sub(HISTORY_WINDOW);
    let mut steps = Table::new(cat.list("history.columns", &[]), &[L, L, L, R, R, L]);
    for (position, &index) in series.datasets.iter().enumerate().skip(start) {
        let view = views.get(index)?;
        let d = view.dataset;
        let recorded = d.recorded_at().unwrap_or("");
        let build = d
            .files
            .first()
            .and_then(|f| f.runner_sha256.as_deref())
            .map_or(cat.text("overview.not_recorded"), |h| {
                Markup::code(format::short_hash(h))
            });
        let mut row = vec![
            labels::dataset_link(&d.name, &view.slug(), "../"),
            Markup::text(recorded.get(..19).unwrap_or(recorded)),
            build,
        ];
        match position.checked_sub(1).and_then(|p| series.steps.get(p)) {
            Some(step) => row.extend([
                count(step.counts.regressed),
                count(step.counts.improved),
                cat.fill(
                    "history.changes_link",
                    &[(
                        "link",
                        &Markup::trusted(format!("../{}/changes.md", view.slug())),
                    )],
                ),
            ]),
            None => row.extend([
                Markup::trusted("–"),
                Markup::trusted("–"),
                cat.text("history.first"),
            ]),
        }
        steps.push(row);
    }
    let title = cat.fill(
        "history.title",
        &[(
            "host",
            &labels::host(cat, newest.dataset, &cat.text("overview.not_recorded")),
        )],
    );
    let mut files = Vec::new();
    let images = headlines(newest)
        .into_iter()
        .map(|c| trend(cat, views, series, start, c, &mut files))
        .collect();
    let model = HistoryPage {
        latest: series.steps.last().map(|c| protocol_summary(cat, c)),
        title: title.clone(),
        lead: if start == 0 {
            cat.fill(
                "history.lead",
                &[("datasets", &count(series.datasets.len()))],
            )
        } else {
            cat.fill(
                "history.lead_window",
                &[
                    ("datasets", &count(series.datasets.len())),
                    ("shown", &count(HISTORY_WINDOW)),
                ],
            )
        },
        steps,
        trends_intro: cat.text("history.trends_intro"),
        images,
        chart_note: cat.text("history.chart_note"),
    };
    Some(PageSpec::new(
        format!("{}/{}/history", cat.code, newest.slug()),
        "history.md",
        title,
        &model,
        files,
    ))
}
