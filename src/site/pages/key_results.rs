//! The key-result bullets of an overview page: per load at the main load, the IO-model
//! finding of the analysis ([`crate::analysis::findings::io_model`]) in words. The page
//! decides nothing: a winner is named only where the finding names one, and every
//! comparison is said as the rule decided it ([`labels::decision`]).

use echomark_archive::Metric;

use crate::analysis::findings::io_model::{IoModelFinding, Verdict};
use crate::analysis::rank::Contender;
use crate::format;
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::Markup;

/// What a key-result bullet needs besides its finding.
pub struct KeyContext {
    /// Whether the main load has several windows (then the bullet names its window).
    pub several_windows: bool,
}

/// One key-result bullet.
pub fn key_result(cat: &Catalog, f: &IoModelFinding, ctx: &KeyContext) -> Markup {
    let g = &f.group;
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
    let model = |c: &Contender| labels::topology(cat, &g.backend, c.io_model, c.io_threads);
    let rate = |c: &Contender| labels::number(format::throughput(c.roundtrips_per_second.median));
    let p99 = |c: &Contender| labels::median(c.rtt_p99_us, format::latency);
    let head: [(&str, &dyn crate::site::markup::Fill); 4] = [
        ("protocol", &protocol),
        ("backend", &backend),
        ("work", &work),
        ("window", &window),
    ];
    let sep = cat.text("site.sentence_sep");
    let mut text = match &f.verdict {
        Verdict::Winner {
            runner_up,
            throughput,
            p99: p99_cost,
            cpu,
        } => {
            let (m, r, p, rm, rr, rp) = (
                model(&f.best),
                rate(&f.best),
                p99(&f.best),
                model(runner_up),
                rate(runner_up),
                p99(runner_up),
            );
            let decision = labels::decision(cat, throughput, Metric::RoundtripsPerSecond);
            let mut args = head.to_vec();
            args.extend([
                ("model", &m as &dyn crate::site::markup::Fill),
                ("rate", &r),
                ("p99", &p),
                ("runner_up", &rm),
                ("runner_rate", &rr),
                ("runner_p99", &rp),
                ("decision", &decision),
            ]);
            let mut text = cat.fill("overview.finding_winner", &args);
            // The seed's reading: faster, but at a price in tail latency or CPU, stated
            // where the rule decides the price is real.
            let costly = |d: &Option<echomark_decide::Decision>| {
                d.filter(|d| d.verdict == echomark_decide::Verdict::Higher)
            };
            let p99_cost = costly(p99_cost).map(|d| labels::decision(cat, &d, Metric::RttP99Us));
            let cpu_cost = costly(cpu).map(|d| labels::decision(cat, &d, Metric::CpuPercent));
            let tradeoff = match (&p99_cost, &cpu_cost) {
                (Some(p), Some(c)) => {
                    Some(cat.fill("overview.tradeoff_p99_cpu", &[("p99", p), ("cpu", c)]))
                }
                (Some(p), None) => Some(cat.fill("overview.tradeoff_p99", &[("p99", p)])),
                (None, Some(c)) => Some(cat.fill("overview.tradeoff_cpu", &[("cpu", c)])),
                (None, None) => None,
            };
            if let Some(t) = tradeoff {
                text.push(&sep);
                text.push(&t);
            }
            text
        }
        Verdict::NoSingleChoice {
            candidates,
            decisions,
        } => {
            let names: Vec<Markup> = candidates[1..]
                .iter()
                .zip(decisions)
                .map(|(c, d)| {
                    let decision = labels::decision(cat, d, Metric::RoundtripsPerSecond);
                    cat.fill(
                        "overview.candidate",
                        &[
                            ("model", &model(c)),
                            ("rate", &rate(c)),
                            ("p99", &p99(c)),
                            ("decision", &decision),
                        ],
                    )
                })
                .collect();
            let list = Markup::join(&names, &cat.text("list.semicolon"));
            let (b, r, p) = (model(&f.best), rate(&f.best), p99(&f.best));
            let mut args = head.to_vec();
            args.extend([
                ("best", &b as &dyn crate::site::markup::Fill),
                ("rate", &r),
                ("p99", &p),
                ("candidates", &list),
            ]);
            cat.fill("overview.finding_no_winner", &args)
        }
    };
    // The seed's reading: the winner as a multiple of one thread, and both p99s.
    if let (Some((speedup, d)), Some(one)) = (f.versus_one_thread, &f.one_thread) {
        text.push(&sep);
        let decision = labels::decision(cat, &d, Metric::RoundtripsPerSecond);
        text.push(&cat.fill(
            "overview.versus_one_thread",
            &[
                ("ratio", &labels::number(format::ratio(speedup))),
                ("one_rate", &rate(one)),
                ("one_p99", &p99(one)),
                ("decision", &decision),
            ],
        ));
    }
    if let Some((threads, cpus)) = f.oversubscribed {
        text.push(&sep);
        text.push(&cat.fill(
            "overview.oversubscribed",
            &[
                ("threads", &Markup::trusted(threads.to_string())),
                ("cpus", &Markup::trusted(cpus.to_string())),
            ],
        ));
    }
    text
}
