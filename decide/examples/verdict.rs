//! The rule's verdict on two lists of figures (higher is better, e.g. rates), in the words
//! the pages use: what a benchmark script prints instead of a rule of its own.
//!
//!     cargo run --release -q -p echomark-decide --example verdict -- "BASE…" "SUBJECT…"
//!
//! Each side is its repetitions, separated by spaces or commas. Prints one line: the
//! subject against the base, "faster by 4.2% [1.1%, 7.4%]", "slower by …", "equivalent
//! within ±5%", or "undecided; about N repetitions a side would decide".

use echomark_decide::{compare, Verdict, THROUGHPUT};

fn side(text: &str) -> Vec<f64> {
    text.split([' ', ','])
        .filter(|w| !w.is_empty())
        .map(|w| {
            w.parse()
                .unwrap_or_else(|_| panic!("{w:?} is not a number"))
        })
        .collect()
}

/// `share` as a percentage: one decimal below 10 %, none above.
fn percent(share: f64) -> String {
    let p = share.abs() * 100.0;
    if p < 10.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [base, subject] = args.as_slice() else {
        eprintln!("usage: verdict \"BASE FIGURES\" \"SUBJECT FIGURES\"");
        std::process::exit(2);
    };
    let d = compare(&side(base), &side(subject), &THROUGHPUT);
    let line = match d.verdict {
        Verdict::Higher => format!(
            "faster by {} [{}, {}]",
            percent(d.ratio - 1.0),
            percent(d.low - 1.0),
            percent(d.high - 1.0)
        ),
        Verdict::Lower => format!(
            "slower by {} [{}, {}]",
            percent(1.0 - d.ratio),
            percent(1.0 - d.high),
            percent(1.0 - d.low)
        ),
        Verdict::Equivalent => format!("equivalent within ±{}", percent(d.margin)),
        Verdict::Undecided {
            runs_needed: Some(n),
        } => format!("undecided; about {n} repetitions a side would decide"),
        Verdict::Undecided { runs_needed: None } => "undecided".to_string(),
        Verdict::NotComparable { reason } => format!("not comparable ({reason:?})"),
    };
    println!("{line}");
}
