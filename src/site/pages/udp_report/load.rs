//! The UDP report's load sections: throughput and latency at the main load per dataset and
//! backend, with their charts, and the receive-buffer isolation table.

use echomark_archive::{Metric, Protocol};

use super::super::charts as chart_model;
use super::super::{ChartFile, DatasetView, Image};
use super::{CLIENTS, IMAGES_SHOWN, PAYLOAD, WINDOW};
use crate::analysis::aggregate::{Configuration, Status};
use crate::analysis::udp::Broken;
use crate::format;
use crate::output::safe_name;
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::Markup;
use crate::site::table::{Align, Table};

/// One row of the receive-buffer isolation table.
fn isolation_row(
    cat: &Catalog,
    view: &DatasetView,
    c: &Configuration,
    not_recorded: &Markup,
) -> Vec<Markup> {
    let k = &c.key;
    let loss = view.analysis.udp.loss.get(k);
    let losses = loss.map_or(Vec::new(), |l| l.per_run.clone());
    let broken: Vec<Markup> = loss
        .map_or(&[][..], |l| &l.broken[..])
        .iter()
        .map(|b| {
            let rep = |r: &u64| Markup::trusted(r.to_string());
            match b {
                Broken::SentMinusServer { repetition } => {
                    cat.fill("udp.inv_sent", &[("rep", &rep(repetition))])
                }
                Broken::ServerVersusReplies { repetition } => {
                    cat.fill("udp.inv_replies", &[("rep", &rep(repetition))])
                }
                Broken::ContentOrOrder { repetition } => {
                    cat.fill("udp.inv_content", &[("rep", &rep(repetition))])
                }
                Broken::Kernel {
                    repetition,
                    kernel,
                    lost,
                } => cat.fill(
                    "udp.inv_kernel",
                    &[
                        ("rep", &rep(repetition)),
                        ("kernel", &labels::count(*kernel)),
                        ("lost", &labels::count(*lost)),
                    ],
                ),
            }
        })
        .collect();
    let same = loss.is_none_or(|l| l.same_in_every_run);
    vec![
        Markup::text(&view.dataset.name),
        labels::count(k.payload_bytes),
        labels::count(k.clients),
        labels::count(k.window),
        loss.and_then(|l| l.server_buffer)
            .map_or(not_recorded.clone(), |b| {
                Markup::trusted(format::buffer_size(b))
            }),
        Markup::trusted(format::buffer_size(k.clients * k.window * k.payload_bytes)),
        Markup::trusted(
            losses
                .iter()
                .map(|l| format::count(*l))
                .collect::<Vec<_>>()
                .join(" / "),
        ),
        cat.text(if same {
            "udp.isolation_yes"
        } else {
            "udp.isolation_no"
        }),
        if broken.is_empty() {
            cat.text("udp.isolation_ok")
        } else {
            Markup::join(&broken, &Markup::trusted("; "))
        },
    ]
}

/// A backend's UDP configurations at the report's load.
fn at_load<'a>(view: &DatasetView<'a>, backend: &str) -> Vec<&'a Configuration> {
    view.configs
        .iter()
        .copied()
        .filter(|c| {
            c.key.protocol == Protocol::Udp
                && c.key.backend == backend
                && c.key.payload_bytes == PAYLOAD
                && c.key.clients == CLIENTS
                && c.key.window == WINDOW
                && c.key.handler_work == 0
                && c.key.udp_server_recv_buffer.is_none()
        })
        .collect()
}

/// A throughput row at the report's load: the range, the p99 and the CPU, or why the
/// configuration is excluded.
fn throughput_row(cat: &Catalog, who: Markup, backend: &str, c: &Configuration) -> Vec<Markup> {
    let topology = labels::topology(cat, backend, c.key.io_model, c.key.io_threads);
    if c.status == Status::Failed {
        return vec![
            who,
            topology,
            cat.fill(
                "page.excluded",
                &[
                    ("passed", &Markup::trusted(c.runs_passed.to_string())),
                    ("runs", &Markup::trusted(c.runs.to_string())),
                ],
            ),
        ];
    }
    vec![
        who,
        topology,
        labels::range(c.stat(Metric::RoundtripsPerSecond), 0),
        labels::median(c.stat(Metric::RttP99Us), format::latency),
        labels::median(c.stat(Metric::CpuPercent), format::cpu_percent),
    ]
}

/// The throughput and p99 charts of one backend of a dataset at the report's load.
fn load_charts(
    cat: &Catalog,
    view: &DatasetView,
    backend: &str,
    configs: &[&Configuration],
) -> Vec<(Image, ChartFile)> {
    let name = Markup::text(&view.dataset.name);
    let group = format!(
        "{} · {}",
        name.as_str()
            .replace('\\', "")
            .chars()
            .take(40)
            .collect::<String>(),
        labels::backend(cat, backend)
    );
    let group_of = |_: &Configuration| group.clone();
    [
        (Metric::RoundtripsPerSecond, "chart.overview_throughput"),
        (Metric::RttP99Us, "chart.overview_p99"),
    ]
    .into_iter()
    .map(|(metric, key)| {
        let mut title = name.clone();
        title.push(&Markup::trusted(" · UDP · "));
        title.push(&cat.fill(
            key,
            &[
                ("payload", &labels::count(PAYLOAD)),
                ("clients", &labels::clients(cat, CLIENTS)),
            ],
        ));
        let chart = chart_model::bars(cat, &title, metric, configs, &group_of);
        let rel = format!(
            "charts/udp-{}-{}-{}.svg",
            view.slug(),
            safe_name(backend),
            chart_model::suffix(metric)
        );
        (Image::new(title, &rel), chart_model::bar_file(rel, &chart))
    })
    .collect()
}

/// The throughput table at the report's load, and the charts of its first backends.
pub(super) fn throughput_section(
    cat: &Catalog,
    views: &[&DatasetView],
) -> (Table, Vec<Image>, Vec<ChartFile>) {
    use Align::{Default as L, Right as R};
    let mut throughput = Table::new(cat.list("udp.throughput_columns", &[]), &[L, L, R, R, R]);
    let (mut images, mut charts) = (Vec::new(), Vec::new());
    for view in views {
        for passes in &view.analysis.udp.backends {
            let backend = passes.backend.as_str();
            let configs = at_load(view, backend);
            for c in &configs {
                let mut who = Markup::text(&view.dataset.name);
                who.push(&Markup::trusted(" / "));
                who.push(&labels::backend(cat, backend));
                throughput.push(throughput_row(cat, who, backend, c));
            }
            if !configs.is_empty() && images.len() < IMAGES_SHOWN {
                for (image, chart) in load_charts(cat, view, backend, &configs) {
                    images.push(image);
                    charts.push(chart);
                }
            }
        }
    }
    (throughput, images, charts)
}

/// The receive-buffer isolation table, a row per case of every dataset that has them, and
/// its introduction.
pub(super) fn isolation_section(
    cat: &Catalog,
    views: &[&DatasetView],
    not_recorded: &Markup,
) -> (Table, Markup) {
    use Align::{Default as L, Right as R};
    let mut isolation = Table::new(
        cat.list("udp.isolation_columns", &[]),
        &[L, R, R, R, R, R, L, L, L],
    );
    for view in views {
        let isolated = view
            .configs
            .iter()
            .filter(|c| c.key.protocol == Protocol::Udp && c.key.udp_server_recv_buffer.is_some());
        for c in isolated {
            isolation.push(isolation_row(cat, view, c, not_recorded));
        }
    }
    let intro = if isolation.rows.is_empty() {
        Markup::default()
    } else {
        cat.text("udp.isolation_intro")
    };
    (isolation, intro)
}
