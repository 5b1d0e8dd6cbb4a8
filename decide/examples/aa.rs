//! The rule's false verdicts on a real A/A pair (`scripts/bench-decisions` measures one):
//! two archives of one matrix whose two sides are the same server, every configuration
//! judged on its runs' round trips per second. Nothing differs, so every "faster" or
//! "slower" is a false verdict.
//!
//!     cargo run --release -p echomark-decide --example aa -- A.json B.json

use std::collections::BTreeMap;

use echomark_decide::{compare, Verdict, THROUGHPUT};
use serde_json::Value;

/// Each configuration's throughputs (by its key without the backend), in repetition order.
fn runs(path: &str) -> BTreeMap<String, Vec<(u64, f64)>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let archive: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut out: BTreeMap<String, Vec<(u64, f64)>> = BTreeMap::new();
    for e in archive["results"].as_array().expect("results") {
        let Some(rate) = e["metrics"]["roundtrips_per_second"].as_f64() else {
            continue;
        };
        let key = [
            "protocol",
            "payload_bytes",
            "clients",
            "window",
            "io_model",
            "io_threads",
        ]
        .map(|k| e[k].to_string())
        .join(" ");
        out.entry(key)
            .or_default()
            .push((e["repetition"].as_u64().unwrap_or(0), rate));
    }
    out.values_mut().for_each(|v| v.sort_by_key(|r| r.0));
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [a, b] = args.as_slice() else {
        eprintln!("usage: aa A.json B.json");
        std::process::exit(2);
    };
    let (a, b) = (runs(a), runs(b));
    let (mut total, mut false_verdicts, mut equivalent, mut undecided) = (0, 0, 0, 0);
    println!("| configuration | ratio [95% interval] | verdict |");
    println!("| --- | --- | --- |");
    for (key, x) in &a {
        let Some(y) = b.get(key) else { continue };
        let values = |v: &[(u64, f64)]| v.iter().map(|r| r.1).collect::<Vec<_>>();
        let d = compare(&values(x), &values(y), &THROUGHPUT);
        total += 1;
        match d.verdict {
            Verdict::Higher | Verdict::Lower => false_verdicts += 1,
            Verdict::Equivalent => equivalent += 1,
            _ => undecided += 1,
        }
        println!(
            "| {key} | {:.3} [{:.3}, {:.3}] | {:?} |",
            d.ratio, d.low, d.high, d.verdict
        );
    }
    println!(
        "\nA/A over {total} configurations: {false_verdicts} false faster/slower ({:.1}%), {equivalent} equivalent within ±5%, {undecided} undecided.",
        100.0 * false_verdicts as f64 / total.max(1) as f64
    );
}
