//! What an imported run can physically be: every figure inside its bound
//! ([`crate::limits`]), the answers per second that the pages print equal to the answers
//! over the duration, and that rate in agreement with the one the tool printed itself, by
//! the tool's own arithmetic. Checked where `echomark import` writes a run and where
//! `validate` reads one, so a figure no run can have never reaches a page.

use crate::imported::{ImportedRun, Tool};
use crate::limits::{self, Bound, OutOfRange, Shown};

/// Why an imported run cannot be a real one.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Implausible {
    #[error(transparent)]
    OutOfRange(#[from] OutOfRange),
    /// `responses_per_second` is not the answers over the duration.
    #[error(
        "is {}, but {responses} answers over {} s are {} per second",
        Shown(*.value),
        Shown(*.seconds),
        Shown(*.expected)
    )]
    NotDerived {
        value: f64,
        responses: u64,
        seconds: f64,
        expected: f64,
    },
    /// The tool's own rate and the one computed from its counts and duration differ.
    #[error(
        "{tool} reported {} per second, but its counts over its duration make {}: they must \
         agree within {}% ({why})",
        Shown(*.reported),
        Shown(*.computed),
        .tolerance * 100.0
    )]
    RateDisagrees {
        tool: Tool,
        reported: f64,
        computed: f64,
        tolerance: f64,
        why: &'static str,
    },
}

/// What a tool's printed rate counts, and how closely it follows the counts and duration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateRule {
    /// Whether requests that ended in an error or were cut at the deadline count too.
    pub counts_unanswered: bool,
    /// The relative difference allowed.
    pub tolerance: f64,
    /// Why the two may differ that much.
    pub why: &'static str,
}

impl Tool {
    /// How this tool's printed rate relates to its counts and duration; `None` when it
    /// prints none, or one that its counts and duration alone do not make.
    pub fn rate_rule(self) -> Option<RateRule> {
        match self {
            Tool::Oha => Some(RateRule {
                counts_unanswered: true,
                tolerance: 1e-6,
                why: "oha divides every request it ended, errors and those cut at the \
                      deadline included, by the same duration",
            }),
            Tool::Wrk => Some(RateRule {
                counts_unanswered: false,
                tolerance: 0.01,
                why: "wrk divides its requests by its run time, which its text prints to \
                      10 ms",
            }),
            // autocannon's rate is the mean of its samples, one per interval, the last one
            // partial: it agrees with its count over its samples, not over its duration,
            // and is checked so where it is imported (the archive keeps no sample count).
            // Locust and iperf3 print no request rate.
            Tool::Autocannon | Tool::Locust | Tool::Iperf3 => None,
        }
    }
}

/// A rate printed to 2 decimals (wrk's `Requests/sec: 0.00`) is that close to any other.
const PRINTED_RATE_SLACK: f64 = 0.01;

impl ImportedRun {
    /// Every way this run of `tool` cannot be a real one, by the JSON path in the run
    /// (`load.duration_seconds`, `latency.percentiles[2].us`), in the order a reader would
    /// look: the load first, then the rates, the latency and the streams.
    pub fn implausible(&self, tool: Tool) -> Vec<(String, Implausible)> {
        let mut out = Vec::new();
        let mut check = |path: String, value: f64, bound: &Bound| {
            if let Err(e) = bound.check(value) {
                out.push((path, Implausible::from(e)));
            }
        };
        let load = &self.load;
        // A run the tool could not make (iperf3's `error`) has no duration, and is kept.
        let unmeasured = self.failed && load.duration_seconds == 0.0;
        if !unmeasured {
            check(
                "load.duration_seconds".into(),
                load.duration_seconds,
                &limits::DURATION_SECONDS,
            );
        }
        check(
            "load.connections".into(),
            load.connections as f64,
            &limits::CONNECTIONS,
        );
        if let Some(rate) = load.rate {
            check("load.rate".into(), rate, &limits::OFFERED_RATE_PER_SECOND);
        }
        for (path, value) in [
            ("responses_per_second", self.responses_per_second),
            ("reported_rate", self.reported_rate),
        ] {
            if let Some(v) = value {
                check(path.into(), v, &limits::RATE_PER_SECOND);
            }
        }
        if let Some(v) = self.bytes_per_second {
            check("bytes_per_second".into(), v, &limits::BYTES_PER_SECOND);
        }
        if let Some(l) = &self.latency {
            for (field, value) in [
                ("resolution_us", Some(l.resolution_us)),
                ("min_us", l.min_us),
                ("mean_us", l.mean_us),
                ("max_us", l.max_us),
                ("stddev_us", l.stddev_us),
            ] {
                if let Some(v) = value {
                    check(format!("latency.{field}"), v, &limits::LATENCY_US);
                }
            }
            for (i, p) in l.percentiles.iter().enumerate() {
                check(
                    format!("latency.percentiles[{i}].us"),
                    p.us,
                    &limits::LATENCY_US,
                );
            }
        }
        if let Some(s) = &self.stream {
            check(
                "stream.streams".into(),
                s.streams as f64,
                &limits::CONNECTIONS,
            );
            for (field, value) in [
                ("sent_bits_per_second", s.sent_bits_per_second),
                ("received_bits_per_second", s.received_bits_per_second),
            ] {
                check(format!("stream.{field}"), value, &limits::BITS_PER_SECOND);
            }
            if let Some(v) = s.lost_percent {
                check("stream.lost_percent".into(), v, &limits::PERCENT);
            }
            if let Some(v) = s.jitter_ms {
                check("stream.jitter_ms".into(), v * 1e3, &limits::LATENCY_US);
            }
        }
        if out.is_empty() && !unmeasured {
            out.extend(self.rate_problems(tool));
        }
        out
    }

    /// The answers per second against the counts and duration, and against the tool's own
    /// rate; only for a run whose figures are each in range (a rate of an impossible
    /// duration says nothing more).
    fn rate_problems(&self, tool: Tool) -> Vec<(String, Implausible)> {
        let (Some(responses), Some(value)) = (self.responses, self.responses_per_second) else {
            return Vec::new();
        };
        let seconds = self.load.duration_seconds;
        let expected = responses as f64 / seconds;
        let mut out = Vec::new();
        if !agree(value, expected, 1e-9) {
            out.push((
                "responses_per_second".to_string(),
                Implausible::NotDerived {
                    value,
                    responses,
                    seconds,
                    expected,
                },
            ));
        }
        if let (Some(rule), Some(reported)) = (tool.rate_rule(), self.reported_rate) {
            let counted = if rule.counts_unanswered {
                limits::saturating_sum([
                    responses,
                    self.error_count(),
                    self.unfinished.unwrap_or(0),
                ])
            } else {
                responses
            };
            let computed = counted as f64 / seconds;
            if !agree(reported, computed, rule.tolerance) {
                out.push((
                    "reported_rate".to_string(),
                    Implausible::RateDisagrees {
                        tool,
                        reported,
                        computed,
                        tolerance: rule.tolerance,
                        why: rule.why,
                    },
                ));
            }
        }
        out
    }
}

/// `a` and `b` within `tolerance` of the larger, or within a printed rate's last digit.
fn agree(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance * a.abs().max(b.abs()) + PRINTED_RATE_SLACK
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::imported::{ImportedLoad, Loop};
    use crate::key::Protocol;

    /// wrk's run of 441,149 answers over 2.1 s, which it printed as 210,070.95 per second.
    fn wrk_run() -> ImportedRun {
        ImportedRun {
            source_file: "w.txt".into(),
            source_sha256: String::new(),
            command: None,
            started_at_utc: None,
            protocol: Protocol::Http,
            target: None,
            load: ImportedLoad {
                connections: 16,
                threads: Some(1),
                pipelining: 1,
                duration_seconds: 2.1,
                payload_bytes: None,
                loop_kind: Loop::Closed,
                rate: None,
                latency_correction: false,
            },
            responses: Some(441_149),
            responses_per_second: Some(441_149.0 / 2.1),
            reported_rate: Some(210_070.95),
            bytes_per_second: None,
            latency: None,
            unfinished: None,
            errors: Default::default(),
            status_codes: Default::default(),
            stream: None,
            failed: false,
            failure: Vec::new(),
        }
    }

    #[test]
    fn a_real_run_is_plausible_and_an_impossible_duration_is_named_first() {
        let run = wrk_run();
        assert_eq!(run.implausible(Tool::Wrk), []);
        let mut short = run.clone();
        short.load.duration_seconds = 1e-300;
        short.responses_per_second = Some(441_149.0 / 1e-300);
        let found = short.implausible(Tool::Wrk);
        assert_eq!(found[0].0, "load.duration_seconds");
        assert_eq!(found[1].0, "responses_per_second");
        let mut many = run.clone();
        many.load.connections = 1_000_000_000_000;
        assert_eq!(many.implausible(Tool::Wrk)[0].0, "load.connections");
    }

    #[test]
    fn the_tools_own_rate_must_agree_with_its_counts_by_its_arithmetic() {
        let mut run = wrk_run();
        run.load.duration_seconds = 0.5;
        run.responses_per_second = Some(441_149.0 / 0.5);
        let found = run.implausible(Tool::Wrk);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, "reported_rate");
        assert!(found[0].1.to_string().starts_with(
            "wrk reported 210070.95 per second, but its counts over its duration make 882298: \
             they must agree within 1%"
        ));
        // oha counts what ended in an error or at the deadline too, exactly.
        let mut oha = wrk_run();
        oha.unfinished = Some(16);
        oha.errors.insert("refused".into(), 4);
        oha.reported_rate = Some((441_149.0 + 20.0) / 2.1);
        assert_eq!(oha.implausible(Tool::Oha), []);
        oha.reported_rate = Some(441_149.0 / 2.1);
        assert_eq!(oha.implausible(Tool::Oha)[0].0, "reported_rate");
        // The rate the pages print is the answers over the duration.
        let mut edited = wrk_run();
        edited.responses_per_second = Some(5e8);
        assert!(matches!(
            edited.implausible(Tool::Locust)[..],
            [(_, Implausible::NotDerived { .. })]
        ));
    }
}
