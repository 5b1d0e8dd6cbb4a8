//! Prints the comparison rule's calibration on simulated repetitions (`scripts/bench-decisions`
//! runs it): every cell of the grid with TRIALS comparisons (default 4,000), as Markdown.
//!
//!     cargo run --release -p echomark-decide --example calibration -- [TRIALS]

use echomark_decide::calibration::{grid, seed_of, simulate, Noise, Runs};
use echomark_decide::THROUGHPUT;

fn main() {
    let trials: u64 = std::env::args()
        .nth(1)
        .and_then(|t| t.parse().ok())
        .unwrap_or(4000);
    let percent = |x: f64| format!("{:.1}", x * 100.0);
    println!("Rule: 95% Welch t interval on log throughput, margin ±5%; {trials} trials a cell.\n");
    println!("| noise | truth | CV | repetitions a side | false faster/slower % | coverage % | equivalent % | decided % | mean repetitions |");
    println!("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |");
    let (mut worst_false, mut worst_coverage, mut worst_equivalent) = (0.0f64, 1.0f64, 0.0f64);
    let (mut null_false, mut null_trials) = (0.0f64, 0u64);
    for cell in grid() {
        let o = simulate(&cell, &THROUGHPUT, trials, seed_of(&cell, 2026));
        let runs = match cell.runs {
            Runs::Fixed(n) => n.to_string(),
            Runs::UntilDecided { start, max } => format!("until decided, {start} to {max}"),
        };
        println!(
            "| {:?} | {}% | {}% | {runs} | {} | {} | {} | {} | {:.1} |",
            cell.noise,
            percent(cell.truth),
            percent(cell.cv),
            percent(o.false_difference),
            percent(o.coverage),
            percent(o.equivalent),
            percent(o.decided),
            o.mean_runs
        );
        if cell.noise != Noise::Contaminated {
            if cell.truth == 0.0 {
                null_false += o.false_difference * trials as f64;
                null_trials += trials;
            }
            worst_false = worst_false.max(o.false_difference);
            worst_coverage = worst_coverage.min(o.coverage);
            if cell.truth == 0.10 {
                worst_equivalent = worst_equivalent.max(o.equivalent);
            }
        }
    }
    // One cell's share of a rule at exactly 5% scatters by ±0.7% (two standard errors) in
    // 4,000 trials; pooled over every no-difference cell it is measured to ±0.2%.
    let se = (0.05f64 * 0.95 / trials as f64).sqrt();
    println!(
        "\nOver the log-normal and normal cells: false faster/slower pooled over every cell with no true difference {}% ({null_trials} trials), worst single cell {}% (bound 5%; one cell of a rule at exactly 5% scatters by ±{}% at two standard errors), worst coverage {}% (bound 93%), worst 'equivalent' of a true 10% difference {}% (bound 5%).",
        percent(null_false / null_trials.max(1) as f64),
        percent(worst_false),
        percent(2.0 * se),
        percent(worst_coverage),
        percent(worst_equivalent)
    );
}
