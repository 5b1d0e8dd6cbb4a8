//! Every verdict on the committed site is the comparison rule's, read from the page models'
//! data, not from prose: a model named the fastest is decided faster than each other model
//! of its load; every backend, server, host and path pair carries the rule's decision on its
//! two configurations' runs, recomputed here straight from the engine; and the words a
//! page uses for a decision (faster, slower, equivalent, undecided) follow its verdict in
//! both languages.

use std::collections::BTreeSet;

use echomark::analysis::aggregate::{Configuration, Status};
use echomark::analysis::decision::Rules;
use echomark::analysis::findings::io_model::Verdict as Choice;
use echomark::analysis::{backends, Analysis};
use echomark::site::{i18n, labels};
use echomark_archive::Metric;
use echomark_decide::{compare, Decision, Verdict};

use crate::common::committed_datasets;

fn analysis() -> Analysis {
    Analysis::of(committed_datasets()).expect("the committed datasets analyse")
}

/// The rule's decision on two configurations' throughput, from their runs.
fn recomputed(base: &Configuration, subject: &Configuration, rules: &Rules) -> Verdict {
    let m = Metric::RoundtripsPerSecond;
    compare(&base.values[&m], &subject.values[&m], &rules.throughput).verdict
}

#[test]
fn a_model_named_the_fastest_is_decided_faster_than_every_other_model_of_its_load() {
    let a = analysis();
    let (mut crowned, mut uncrowned) = (0, 0);
    for (d, per) in committed_datasets().iter().zip(&a.datasets) {
        let rules = a.rules_of(&d.name);
        for f in &per.io_models {
            let load: Vec<&Configuration> = a
                .configurations
                .iter()
                .filter(|c| {
                    c.dataset == d.name
                        && c.status == Status::Valid
                        && echomark::analysis::rank::group_key(c) == f.group
                })
                .collect();
            let best = load
                .iter()
                .find(|c| {
                    c.key.io_model == f.best.io_model && c.key.io_threads == f.best.io_threads
                })
                .expect("the best is one of its load's configurations");
            let others: Vec<Verdict> = load
                .iter()
                .filter(|c| !std::ptr::eq(**c, *best))
                .map(|c| recomputed(c, best, &rules))
                .collect();
            match &f.verdict {
                Choice::Winner { .. } => {
                    assert!(
                        others.iter().all(|v| *v == Verdict::Higher),
                        "{}: {:?} named the fastest: {others:?}",
                        d.name,
                        f.group
                    );
                    crowned += 1;
                }
                Choice::NoSingleChoice { .. } => {
                    assert!(
                        others.iter().any(|v| *v != Verdict::Higher),
                        "{}: {:?} has no single choice, but the rule decides it: {others:?}",
                        d.name,
                        f.group
                    );
                    uncrowned += 1;
                }
            }
        }
    }
    assert!(
        crowned > 10 && uncrowned > 10,
        "{crowned} crowned, {uncrowned} not"
    );
}

#[test]
fn every_pair_carries_the_rules_decision_on_its_runs() {
    let a = analysis();
    let mut checked = 0;
    for d in committed_datasets() {
        let rules = a.rules_of(&d.name);
        let mine: Vec<&Configuration> = a
            .configurations
            .iter()
            .filter(|c| c.dataset == d.name)
            .collect();
        let names: BTreeSet<&str> = mine.iter().map(|c| c.key.backend.as_str()).collect();
        let Some(base) = backends::base_backend(&names) else {
            continue;
        };
        for subject in names.iter().filter(|b| **b != base) {
            for row in backends::rows(&mine, subject, base, &rules) {
                if let backends::Row::Pair(p) = row {
                    assert_eq!(
                        p.throughput.verdict,
                        recomputed(p.base, p.subject, &rules),
                        "{}: {:?}",
                        d.name,
                        p.subject.key
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 200, "only {checked} pairs checked");
}

/// A decision with `verdict` and a ratio of `ratio`.
fn decision(verdict: Verdict, ratio: f64) -> Decision {
    let mut d = compare(
        &[100.0, 101.0, 99.0],
        &[100.0, 101.0, 99.0],
        &echomark_decide::THROUGHPUT,
    );
    d.verdict = verdict;
    d.ratio = ratio;
    (d.low, d.high) = (ratio * 0.95, ratio * 1.05);
    d
}

#[test]
fn the_words_for_a_decision_follow_its_verdict_in_both_languages() {
    let catalogs = i18n::catalogs();
    let (en, zh) = (&catalogs[0], &catalogs[1]);
    let rate = Metric::RoundtripsPerSecond;
    let p99 = Metric::RttP99Us;
    let cases = [
        (Verdict::Higher, 1.3, rate, "faster by 30%", "快 30%"),
        (Verdict::Lower, 0.8, rate, "slower by 20%", "慢 20%"),
        (Verdict::Higher, 3.0, rate, "faster: 3.00×", "快，为 3.00×"),
        (Verdict::Higher, 1.3, p99, "higher by 30%", "高 30%"),
        (Verdict::Lower, 0.8, p99, "lower by 20%", "低 20%"),
        (
            Verdict::Equivalent,
            1.01,
            rate,
            "equivalent within ±5%",
            "相当",
        ),
        (
            Verdict::Undecided {
                runs_needed: Some(12),
            },
            1.1,
            rate,
            "undecided; about 12 repetitions",
            "尚无定论",
        ),
    ];
    for (verdict, ratio, metric, english, chinese) in cases {
        let d = decision(verdict, ratio);
        let (e, z) = (
            labels::decision(en, &d, metric).as_str().to_string(),
            labels::decision(zh, &d, metric).as_str().to_string(),
        );
        assert!(e.starts_with(english), "{verdict:?}: {e}");
        assert!(z.starts_with(chinese), "{verdict:?}: {z}");
        // No other verdict's word.
        let said: BTreeSet<&str> = e.split(|c: char| !c.is_alphabetic()).collect();
        let words = [
            "faster",
            "slower",
            "higher",
            "lower",
            "equivalent",
            "undecided",
        ];
        for w in words.iter().filter(|w| !english.starts_with(**w)) {
            assert!(!said.contains(w), "{verdict:?} says {w}: {e}");
        }
    }
}
