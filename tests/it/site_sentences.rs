//! Sentences on the committed site checked against the data they summarise (the committed
//! site is the build's output: `the_committed_site_is_up_to_date`): a knee said to hold "up
//! to the highest offered rate" is at the top of its sweep; the UDP buffer line names the
//! largest buffer measured; a winner whose p99 the rule finds higher says so with its size;
//! every overview opens with what to use (or what was measured) before much prose.

use echomark::analysis::recommend::Advice;
use echomark::analysis::Analysis;
use echomark::format;

use crate::common::committed_datasets;

fn analysis() -> Analysis {
    Analysis::of(committed_datasets()).expect("the committed datasets analyse")
}

fn page(path: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("site");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The number right after `marker` in `line` ("48,943" → 48943).
fn number_after(line: &str, marker: &str) -> Option<u64> {
    let rest = &line[line.find(marker)? + marker.len()..];
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[test]
fn a_knee_up_to_the_highest_offered_rate_is_the_top_of_its_sweep() {
    let a = analysis();
    let mut checked = 0;
    for d in committed_datasets() {
        let curves: Vec<_> = a.curves.iter().filter(|c| c.dataset == d.name).collect();
        if curves.is_empty() {
            continue;
        }
        let tops: Vec<u64> = curves
            .iter()
            .filter_map(|c| c.points.last().map(|p| p.offered_rate))
            .collect();
        let knees: Vec<u64> = curves
            .iter()
            .filter_map(|c| c.knee.map(|k| c.points[k].offered_rate))
            .collect();
        let overview = page(&format!("en/{}/overview.md", d.name));
        for line in overview.lines() {
            if let Some(rate) = number_after(line, "up to the highest offered rate, ") {
                assert!(
                    tops.contains(&rate),
                    "{}: {rate} msg/s is not the top of any sweep ({tops:?}): {line}",
                    d.name
                );
                checked += 1;
            }
            if let Some(rate) = line
                .contains("keeps its p99 within")
                .then(|| number_after(line, " µs) up to "))
                .flatten()
            {
                assert!(
                    knees.contains(&rate),
                    "{}: {rate} msg/s is no curve's knee ({knees:?}): {line}",
                    d.name
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 0, "no knee sentence found");
}

#[test]
fn the_udp_buffer_line_names_the_largest_buffer_measured() {
    let a = analysis();
    let index = page("en/index.md");
    let line = index
        .lines()
        .find(|l| l.starts_with("- **UDP receive buffers**"))
        .expect("the index answers the UDP buffer question");
    let finding = committed_datasets()
        .iter()
        .zip(&a.datasets)
        .find(|(d, _)| line.contains(&format!("[{}]", d.name)))
        .and_then(|(_, per)| per.udp_buffers.as_ref())
        .expect("the line's dataset has a buffer finding");
    let largest = format::buffer_size(*finding.requests.last().unwrap());
    assert!(
        line.contains(&format!("none at the largest, {largest}")),
        "{line}"
    );
    assert!(
        line.contains(&format!(
            "{} still",
            format::count(finding.lossy_at_largest() as u64)
        )) && line.contains(&format!("some at {largest}")),
        "{line}"
    );
    // The counts never add up to more loads than the finding has.
    assert!(
        finding.fixed_by_a_larger_buffer() + finding.lossy_at_largest() + finding.lossless()
            <= finding.rows.len()
    );
}

#[test]
fn a_winner_with_a_higher_p99_states_the_price_with_its_size() {
    use echomark::analysis::findings::io_model::Verdict;
    let a = analysis();
    let mut checked = 0;
    for (d, per) in committed_datasets().iter().zip(&a.datasets) {
        let Some((payload, clients)) = echomark::analysis::loads::main_load(
            &a.configurations
                .iter()
                .filter(|c| c.dataset == d.name)
                .collect::<Vec<_>>(),
        ) else {
            continue;
        };
        // The overview's key results: each program and protocol at its largest window.
        let at_main: Vec<_> = per
            .io_models
            .iter()
            .filter(|f| f.group.payload_bytes == payload && f.group.clients == clients)
            .collect();
        let widest = |f: &&&echomark::analysis::findings::io_model::IoModelFinding| {
            let g = &f.group;
            let same = |o: &&echomark::analysis::findings::io_model::IoModelFinding| {
                (
                    &o.group.backend,
                    &o.group.implementation,
                    o.group.protocol,
                    o.group.handler_work,
                ) == (&g.backend, &g.implementation, g.protocol, g.handler_work)
            };
            at_main
                .iter()
                .filter(|o| same(o))
                .map(|o| o.group.window)
                .max()
                == Some(g.window)
        };
        let priced = at_main
            .iter()
            .filter(widest)
            .filter(|f| {
                matches!(&f.verdict, Verdict::Winner { p99: Some(p), .. }
                    if p.verdict == echomark_decide::Verdict::Higher)
            })
            .count();
        if priced == 0 {
            continue;
        }
        let overview = page(&format!("en/{}/overview.md", d.name));
        let said = overview
            .matches("The price, against the runner-up: p99 higher")
            .count();
        assert!(
            said >= priced,
            "{}: {priced} winners at the main load have a higher p99, {said} say so",
            d.name
        );
        checked += 1;
    }
    assert!(
        checked > 0,
        "no winner with a p99 price on the committed site"
    );
}

/// Prose characters before the first table of a Markdown page (headings and the title
/// excluded).
fn prose_before_first_table(markdown: &str) -> usize {
    markdown
        .lines()
        .take_while(|l| !l.starts_with('|'))
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.chars().count())
        .sum()
}

#[test]
fn every_overview_opens_with_what_to_use_or_what_was_measured() {
    let a = analysis();
    let mut recommended = 0;
    for (d, per) in committed_datasets().iter().zip(&a.datasets) {
        if d.has_imported() {
            continue;
        }
        for lang in ["en", "zh"] {
            let overview = page(&format!("{lang}/{}/overview.md", d.name));
            let first_h2 = overview
                .lines()
                .find(|l| l.starts_with("## "))
                .unwrap_or_default();
            let opening = if lang == "en" {
                ["## What to use", "## What was measured"]
            } else {
                ["## 选用建议", "## 测量结果"]
            };
            let mine: Vec<_> = a
                .configurations
                .iter()
                .filter(|c| c.dataset == d.name && c.key.load.is_none())
                .collect();
            let one_choice = echomark::analysis::measured::single_choice(&mine).is_some();
            if per.recommendations.is_empty() && !one_choice {
                // Open loop only: the knees answer.
                continue;
            }
            assert!(
                opening.contains(&first_h2),
                "{lang}/{}: opens with {first_h2:?}",
                d.name
            );
            let prose = prose_before_first_table(&overview);
            assert!(
                prose <= 650,
                "{lang}/{}: {prose} characters before the first table",
                d.name
            );
        }
        // A row names a choice to use only where the rule decided it.
        let table = page(&format!("en/{}/overview.md", d.name));
        let uses = per
            .recommendations
            .iter()
            .filter(|r| matches!(r.advice, Advice::Use { .. }))
            .count();
        let none = per.recommendations.len() - uses;
        assert_eq!(
            table.matches("| No single choice").count(),
            none,
            "{}",
            d.name
        );
        recommended += per.recommendations.len();
    }
    assert!(recommended > 20, "only {recommended} recommendation rows");
}
