//! `echomark validate`: what passed, dataset by dataset, and why each failed configuration
//! failed, as text or JSON.

use std::fmt::Write;
use std::path::PathBuf;

use super::{analyse, CommandError};
use crate::error::{printable, PROBLEM_CAP};
use crate::validate::DatasetReport;

/// The report of the datasets under `paths`: JSON with `json`, else text.
pub fn run(paths: &[PathBuf], json: bool) -> Result<String, CommandError> {
    let (_, analysis) = analyse(paths)?;
    let reports: Vec<&DatasetReport> = analysis.datasets.iter().map(|d| &d.report).collect();
    if json {
        return Ok(serde_json::to_string_pretty(&reports)? + "\n");
    }
    Ok(reports.iter().map(|r| text(r)).collect())
}

/// One dataset's report as text: its counts, then each failed configuration with its
/// failed runs, then its warnings (up to the cap). Archive strings are printable.
pub fn text(r: &DatasetReport) -> String {
    let p = |text: &str| printable(text);
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = writeln!(
        out,
        "{}: {} files; runs {} passed of {}; configurations {} valid of {}",
        p(&r.dataset),
        r.files,
        r.runs_passed,
        r.runs,
        r.configurations_valid,
        r.configurations
    );
    for f in &r.failed_configurations {
        let k = &f.key;
        let _ = writeln!(
            out,
            "  failed: {} {} {} {} B, {}{} client{} × window {}, {} {}, work {} ({} of {} runs passed)",
            p(k.backend.as_str()),
            p(&k.implementation),
            k.protocol,
            k.payload_bytes,
            match k.generators {
                Some(1) => "1 generator × ".to_string(),
                Some(n) => format!("{n} generators × "),
                None => String::new(),
            },
            k.clients,
            if k.clients == 1 { "" } else { "s" },
            k.window,
            k.io_model,
            k.io_threads,
            k.handler_work,
            f.runs_passed,
            f.runs
        );
        if let Some(buffer) = k.udp_server_recv_buffer {
            let _ = writeln!(out, "    server receive buffer request: {buffer} bytes");
        }
        for run in &f.failures {
            let _ = writeln!(
                out,
                "    {} results[{}] repetition {}: {}",
                p(&run.file),
                run.index,
                run.repetition,
                p(&run.reasons.join("; "))
            );
        }
    }
    for w in r.warnings.iter().take(PROBLEM_CAP) {
        let _ = writeln!(out, "  warning: {w}");
    }
    out
}
