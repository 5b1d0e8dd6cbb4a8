//! The key-result bullets of an overview page: per group at the main load, the fastest IO
//! model against one thread, what it costs, and whether it is distinguishable at all.

use echomark_archive::Metric;

use super::DatasetView;
use crate::analysis::rank::Ranking;
use crate::format;
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::Markup;

/// What a key-result bullet needs besides its ranking.
pub struct KeyContext<'a> {
    /// Whether the main load has several windows (then the bullet names its window).
    pub several_windows: bool,
    /// The host's logical CPUs, to say when a topology is oversubscribed.
    pub logical_cpus: Option<u64>,
    pub view: &'a DatasetView<'a>,
}

/// One key-result bullet: the fastest model of a load against one thread, and what its
/// throughput costs in tail latency and CPU, and whether it runs more threads than CPUs.
pub fn key_result(cat: &Catalog, r: &Ranking, ctx: &KeyContext) -> Markup {
    let g = &r.group;
    let window = if ctx.several_windows {
        cat.fill(
            "overview.window_suffix",
            &[("n", &Markup::trusted(g.window.to_string()))],
        )
    } else {
        Markup::default()
    };
    let protocol = labels::program_protocol(cat, g.protocol, &g.implementation);
    let backend = labels::backend(cat, &g.backend);
    let work = labels::work(cat, g.handler_work);
    let model = labels::topology(cat, &g.backend, r.best.io_model, r.best.io_threads);
    let p99 = labels::median(r.best.rtt_p99_us, format::two_decimals);
    let best_is_baseline =
        r.best.io_model == echomark_archive::IoModel::Shared && r.best.io_threads == 1;
    let mut text = match (&r.baseline, r.speedup) {
        (Some(base), Some(speedup)) if !best_is_baseline => cat.fill(
            "overview.key_result",
            &[
                ("protocol", &protocol),
                ("backend", &backend),
                ("work", &work),
                ("window", &window),
                ("model", &model),
                ("speedup", &labels::number(format::ratio(speedup))),
                ("p99", &p99),
                (
                    "base_p99",
                    &labels::median(base.rtt_p99_us, format::two_decimals),
                ),
            ],
        ),
        _ => cat.fill(
            "overview.key_result_baseline",
            &[
                ("protocol", &protocol),
                ("backend", &backend),
                ("work", &work),
                ("window", &window),
                ("model", &model),
                (
                    "rate",
                    &labels::number(format::throughput(r.best.roundtrips_per_second.median)),
                ),
                ("p99", &p99),
            ],
        ),
    };
    let tie = r.distinguishable_from_baseline == Some(false)
        || (r.baseline.is_none() && r.distinguishable_from_runner_up == Some(false));
    let sep = cat.text("site.sentence_sep");
    if tie {
        text.push(&sep);
        text.push(&cat.text("overview.not_distinguishable"));
    }
    if let Some(base) = r.baseline.as_ref().filter(|_| !best_is_baseline) {
        // The seed's reading: faster, but at a price in tail latency and CPU.
        let cpu = |io_model, threads| {
            ctx.view
                .configs
                .iter()
                .find(|c| {
                    c.key.backend == g.backend
                        && c.key.implementation == g.implementation
                        && c.key.protocol == g.protocol
                        && c.key.payload_bytes == g.payload_bytes
                        && c.key.clients == g.clients
                        && c.key.window == g.window
                        && c.key.handler_work == g.handler_work
                        && c.key.io_model == io_model
                        && c.key.io_threads == threads
                })
                .and_then(|c| c.stat(Metric::CpuPercent))
                .map(|s| s.median)
        };
        let worse_p99 = matches!((r.best.rtt_p99_us, base.rtt_p99_us), (Some(b), Some(o)) if b.median > o.median);
        let more_cpu = matches!(
            (cpu(r.best.io_model, r.best.io_threads), cpu(base.io_model, base.io_threads)),
            (Some(b), Some(o)) if b > o
        );
        if worse_p99 && more_cpu {
            text.push(&sep);
            text.push(&cat.text("overview.tradeoff"));
        }
    }
    if let Some(cpus) = ctx.logical_cpus.filter(|n| r.best.io_threads > *n) {
        text.push(&sep);
        text.push(&cat.fill(
            "overview.oversubscribed",
            &[
                ("threads", &Markup::trusted(r.best.io_threads.to_string())),
                ("cpus", &Markup::trusted(cpus.to_string())),
            ],
        ));
    }
    text
}
