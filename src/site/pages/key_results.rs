//! The key-result bullets of an overview page: per load at the main load, the IO-model
//! finding of the analysis ([`crate::analysis::findings::io_model`]) in words. The page
//! decides nothing: a winner is named only where the finding names one, and every
//! comparison is said as the rule decided it ([`labels::decision`]).

use echomark_archive::Metric;
use echomark_decide::Decision;

use crate::analysis::findings::io_model::{IoModelFinding, Verdict};
use crate::analysis::rank::Contender;
use crate::format;
use crate::site::i18n::Catalog;
use crate::site::labels;
use crate::site::markup::{Fill, Markup};

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
    let protocol = labels::program_protocol_at(cat, g.protocol, &g.implementation, g.generators);
    let backend = labels::backend(cat, &g.backend);
    let work = labels::work(cat, g.handler_work);
    let head: [(&str, &dyn Fill); 4] = [
        ("protocol", &protocol),
        ("backend", &backend),
        ("work", &work),
        ("window", &window),
    ];
    let said = Said { cat, finding: f };
    let mut text = match &f.verdict {
        Verdict::Winner {
            runner_up,
            throughput,
            p99,
            cpu,
        } => said.winner(&head, runner_up, throughput, [p99, cpu]),
        Verdict::NoSingleChoice {
            candidates,
            decisions,
        } => said.no_winner(&head, &candidates[1..], decisions),
    };
    let sep = cat.text("site.sentence_sep");
    for more in [said.versus_one_thread(), said.oversubscribed()]
        .into_iter()
        .flatten()
    {
        text.push(&sep);
        text.push(&more);
    }
    text
}

/// One finding, said in one language: its contenders by model, rate and p99.
struct Said<'a> {
    cat: &'a Catalog,
    finding: &'a IoModelFinding,
}

impl Said<'_> {
    fn model(&self, c: &Contender) -> Markup {
        let g = &self.finding.group;
        labels::topology(self.cat, &g.backend, c.io_model, c.io_threads)
    }

    fn rate(&self, c: &Contender) -> Markup {
        labels::number(format::throughput(c.roundtrips_per_second.median))
    }

    fn p99(&self, c: &Contender) -> Markup {
        labels::median(c.rtt_p99_us, format::latency)
    }

    /// The winner against the runner-up, and the price it pays in p99 or CPU where the
    /// rule decides the price is real.
    fn winner(
        &self,
        head: &[(&str, &dyn Fill)],
        runner_up: &Contender,
        throughput: &Decision,
        [p99, cpu]: [&Option<Decision>; 2],
    ) -> Markup {
        let cat = self.cat;
        let best = &self.finding.best;
        let (m, r, p, rm, rr, rp) = (
            self.model(best),
            self.rate(best),
            self.p99(best),
            self.model(runner_up),
            self.rate(runner_up),
            self.p99(runner_up),
        );
        let decision = labels::decision(cat, throughput, Metric::RoundtripsPerSecond);
        let mut args = head.to_vec();
        args.extend([
            ("model", &m as &dyn Fill),
            ("rate", &r),
            ("p99", &p),
            ("runner_up", &rm),
            ("runner_rate", &rr),
            ("runner_p99", &rp),
            ("decision", &decision),
        ]);
        let mut text = cat.fill("overview.finding_winner", &args);
        // The seed's reading: faster, but at a price in tail latency or CPU, stated where
        // the rule decides the price is real.
        let costly =
            |d: &Option<Decision>| d.filter(|d| d.verdict == echomark_decide::Verdict::Higher);
        let p99_cost = costly(p99).map(|d| labels::decision(cat, &d, Metric::RttP99Us));
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
            text.push(&cat.text("site.sentence_sep"));
            text.push(&t);
        }
        text
    }

    /// The best and the candidates the rule could not tell from it.
    fn no_winner(
        &self,
        head: &[(&str, &dyn Fill)],
        others: &[Contender],
        decisions: &[Decision],
    ) -> Markup {
        let cat = self.cat;
        let names: Vec<Markup> = others
            .iter()
            .zip(decisions)
            .map(|(c, d)| {
                let decision = labels::decision(cat, d, Metric::RoundtripsPerSecond);
                cat.fill(
                    "overview.candidate",
                    &[
                        ("model", &self.model(c)),
                        ("rate", &self.rate(c)),
                        ("p99", &self.p99(c)),
                        ("decision", &decision),
                    ],
                )
            })
            .collect();
        let list = Markup::join(&names, &cat.text("list.semicolon"));
        let best = &self.finding.best;
        let (b, r, p) = (self.model(best), self.rate(best), self.p99(best));
        let mut args = head.to_vec();
        args.extend([
            ("best", &b as &dyn Fill),
            ("rate", &r),
            ("p99", &p),
            ("candidates", &list),
        ]);
        cat.fill("overview.finding_no_winner", &args)
    }

    /// The seed's reading: the winner as a multiple of one thread, and both p99s.
    fn versus_one_thread(&self) -> Option<Markup> {
        let f = self.finding;
        let ((speedup, d), one) = (f.versus_one_thread?, f.one_thread.as_ref()?);
        let decision = labels::decision(self.cat, &d, Metric::RoundtripsPerSecond);
        Some(self.cat.fill(
            "overview.versus_one_thread",
            &[
                ("ratio", &labels::number(format::ratio(speedup))),
                ("one_rate", &self.rate(one)),
                ("one_p99", &self.p99(one)),
                ("decision", &decision),
            ],
        ))
    }

    /// More threads than the machine has CPUs, when so.
    fn oversubscribed(&self) -> Option<Markup> {
        let (threads, cpus) = self.finding.oversubscribed?;
        Some(self.cat.fill(
            "overview.oversubscribed",
            &[
                ("threads", &Markup::trusted(threads.to_string())),
                ("cpus", &Markup::trusted(cpus.to_string())),
            ],
        ))
    }
}
