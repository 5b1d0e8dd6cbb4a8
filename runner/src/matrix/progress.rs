//! Progress on stderr: an indicatif bar on a terminal, plain lines otherwise.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// Reports each run as it finishes.
pub struct Progress {
    bar: Option<ProgressBar>,
    total: u64,
    done: u64,
    failures: u64,
    started: Instant,
}

fn clock(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

impl Progress {
    /// `total` runs to do in this invocation, `failures` already in the archive.
    pub fn new(total: u64, failures: u64) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total);
            bar.set_style(
                ProgressStyle::with_template(
                    "{pos}/{len} [{bar:30}] {elapsed_precise} ETA {eta_precise} {msg}",
                )
                .expect("static template")
                .progress_chars("=> "),
            );
            bar
        });
        Self {
            bar,
            total,
            done: 0,
            failures,
            started: Instant::now(),
        }
    }

    /// Shows the run about to start.
    /// `more` runs joined the plan (a rate sweep's open-loop runs).
    pub fn add_planned(&mut self, more: u64) {
        self.total += more;
        if let Some(bar) = &self.bar {
            bar.inc_length(more);
        }
    }

    pub fn starting(&self, label: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("failures {} | {label}", self.failures));
        }
    }

    /// Records a finished run and its one-line summary.
    pub fn finished(&mut self, label: &str, failed: bool, summary: &str) {
        self.done += 1;
        self.failures += u64::from(failed);
        match &self.bar {
            Some(bar) => {
                if failed {
                    bar.println(format!("FAILED {label}: {summary}"));
                }
                bar.inc(1);
            }
            None => {
                let elapsed = self.started.elapsed();
                let eta =
                    elapsed.mul_f64(self.total.saturating_sub(self.done) as f64 / self.done as f64);
                eprintln!(
                    "[{}/{}] {label}: {summary} | elapsed {} ETA {} failures {}",
                    self.done,
                    self.total,
                    clock(elapsed),
                    clock(eta),
                    self.failures
                );
            }
        }
    }

    /// Ends the bar with a final message.
    pub fn finish(&self, message: &str) {
        match &self.bar {
            Some(bar) => bar.finish_with_message(message.to_string()),
            None => eprintln!("{message}"),
        }
    }
}
