//! echomark's one comparison rule, used by every place that sets two sides against each
//! other: the pages' pairs, choosing tables and key results, the agreement page, `compare`
//! and its pull-request gate, the history, and `matrix --until-decided`. It knows numbers,
//! nothing about archives or pages.
//!
//! # The method
//!
//! Each side is a set of repetitions of one positive figure (round trips per second, a
//! p99 in microseconds). The comparison is the ratio of the subject to the base, estimated
//! as the ratio of their geometric means, with a **Welch t interval on the logarithms**:
//!
//! ```text
//! d  = mean(ln subject) − mean(ln base)
//! se = √(s²_base / n_base + s²_subject / n_subject)
//! ν  = Welch–Satterthwaite degrees of freedom
//! ratio = e^d,   interval = e^(d ± t(ν, 1 − α/2) · se)
//! ```
//!
//! Why this and not a bootstrap or a rank test: rates are positive and their noise is
//! multiplicative (a busy host slows every message by a share, not by a constant), so their
//! logarithms are close to normal and a ratio is a difference of logarithms; the t interval
//! is exact for normal data at any sample size, 2 against 2 included, where a bootstrap of
//! 3 values has 10 distinct resamples and a rank test of 3 against 3 cannot reach p < 0.1.
//! Welch's degrees of freedom let the two sides have different spreads (one server noisier
//! than the other). The calibration in [`calibration`] measures coverage and error rates on
//! simulated repetitions with known truth, skewed and contaminated ones included.
//!
//! # The verdicts
//!
//! With the interval at the rule's level (95 % by default) and its margin m (5 % for
//! throughput, 10 % for p99 by default):
//!
//! * **equivalent within ±m**: the whole interval lies inside [1 − m, 1 + m] (two
//!   one-sided tests, each at half the level's error, so conservative);
//! * **higher / lower by X % [low, high]**: otherwise, when the interval excludes 1;
//! * **undecided**: the interval spans 1 and reaches past the margin, with the repetitions
//!   a side would likely need to decide, from the observed difference and spread.
//!
//! A rule with several looks ([`Rule::looks`], for measuring until decided) spends its error
//! over them (Bonferroni): every look uses the level 1 − α / looks, so the chance that any
//! look's interval misses the truth stays at most α, whenever the measuring stops.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

pub mod calibration;
pub mod family;
mod random;

/// The largest number of repetitions a side [`runs_needed`] looks for.
pub const MAX_RUNS: u64 = 1000;

/// The confidence level, margin and number of looks of one comparison.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rule {
    /// The confidence of the interval, for example 0.95.
    pub level: f64,
    /// The equivalence margin as a share, for example 0.05 for ±5 %.
    pub margin: f64,
    /// How many times the comparison may be looked at (1 for a fixed number of
    /// repetitions); each look uses the level 1 − (1 − level) / looks.
    pub looks: u32,
}

impl Rule {
    /// The default level (95 %) with `margin`, looked at once.
    pub const fn with_margin(margin: f64) -> Self {
        Self {
            level: 0.95,
            margin,
            looks: 1,
        }
    }

    /// The confidence each look's interval has.
    pub fn per_look_level(&self) -> f64 {
        1.0 - (1.0 - self.level) / f64::from(self.looks.max(1))
    }

    /// Whether the level, margin and looks are usable (level in (0, 1), margin in (0, 1),
    /// at least one look).
    pub fn is_valid(&self) -> bool {
        self.level > 0.0
            && self.level < 1.0
            && self.margin > 0.0
            && self.margin < 1.0
            && self.looks >= 1
    }
}

/// The default rule for throughput: 95 %, ±5 %.
pub const THROUGHPUT: Rule = Rule::with_margin(0.05);
/// The default rule for tail latency (p99): 95 %, ±10 %.
pub const LATENCY: Rule = Rule::with_margin(0.10);

/// What the interval says of the subject against the base.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// The subject's figure is higher: the interval lies above 1 (and not all inside the
    /// margin).
    Higher,
    /// The subject's figure is lower.
    Lower,
    /// The interval lies inside [1 − margin, 1 + margin].
    Equivalent,
    /// The interval spans 1 and reaches past the margin. `runs_needed`: repetitions a side
    /// that would likely decide it, from the observed difference and spread (`None` when
    /// more than [`MAX_RUNS`], or when no spread could be estimated).
    Undecided { runs_needed: Option<u64> },
    /// The sides cannot be compared (a side empty, or a figure not positive and finite).
    NotComparable { reason: Reason },
}

/// Why two sides cannot be compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// A side has no repetition.
    Empty,
    /// A figure is zero, negative or not finite (a ratio of logarithms needs positives).
    NotPositive,
    /// The rule's level, margin or looks are out of range.
    InvalidRule,
}

impl Verdict {
    /// Whether the comparison reached a decision (higher, lower or equivalent).
    pub fn is_decided(&self) -> bool {
        matches!(self, Self::Higher | Self::Lower | Self::Equivalent)
    }

    /// Whether the interval excludes no change (higher or lower).
    pub fn is_difference(&self) -> bool {
        matches!(self, Self::Higher | Self::Lower)
    }
}

/// One comparison: the subject against the base.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Decision {
    /// Subject ÷ base, as the ratio of geometric means (1 when not comparable).
    pub ratio: f64,
    /// The interval of the ratio at [`Decision::level`] (a point when both sides have no
    /// spread).
    pub low: f64,
    pub high: f64,
    /// The confidence of the interval (the rule's per-look level).
    pub level: f64,
    /// The rule's margin.
    pub margin: f64,
    /// The two-sided p-value of "no change" (Welch's t on the logarithms).
    pub p_value: f64,
    /// Repetitions on each side.
    pub base_runs: usize,
    pub subject_runs: usize,
    pub verdict: Verdict,
}

impl Decision {
    /// The same comparison the other way round: the base against the subject (the ratio
    /// and interval inverted, higher and lower swapped).
    pub fn inverse(&self) -> Self {
        let verdict = match self.verdict {
            Verdict::Higher => Verdict::Lower,
            Verdict::Lower => Verdict::Higher,
            v => v,
        };
        Self {
            ratio: 1.0 / self.ratio,
            low: 1.0 / self.high,
            high: if self.low > 0.0 {
                1.0 / self.low
            } else {
                f64::INFINITY
            },
            base_runs: self.subject_runs,
            subject_runs: self.base_runs,
            verdict,
            ..*self
        }
    }

    /// The change as a share (ratio − 1), and its interval.
    pub fn change(&self) -> (f64, f64, f64) {
        (self.ratio - 1.0, self.low - 1.0, self.high - 1.0)
    }

    fn not_comparable(base: usize, subject: usize, rule: &Rule, reason: Reason) -> Self {
        Self {
            ratio: 1.0,
            low: 0.0,
            high: f64::INFINITY,
            level: rule.per_look_level(),
            margin: rule.margin,
            p_value: 1.0,
            base_runs: base,
            subject_runs: subject,
            verdict: Verdict::NotComparable { reason },
        }
    }
}

/// Mean and sample variance (n − 1; 0 for one value) of the logarithms of `values`.
fn log_moments(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let logs = values.iter().map(|v| v.ln());
    let mean = logs.clone().sum::<f64>() / n;
    let variance = if values.len() > 1 {
        logs.map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, variance)
}

/// The two-sided Student t quantile at confidence `level` with `df` degrees of freedom.
fn t_quantile(df: f64, level: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df.max(1e-3))
        .map(|t| t.inverse_cdf(1.0 - (1.0 - level) / 2.0))
        .unwrap_or(f64::INFINITY)
}

/// One side of one stratum: the variance of its mean log, its log variance and its
/// repetitions.
type Side = (f64, f64, usize);

/// Compares `subject` against `base` under `rule`.
pub fn compare(base: &[f64], subject: &[f64], rule: &Rule) -> Decision {
    compare_pooled(&[(base, subject)], rule)
}

/// Compares `subject` against `base` over several strata at once (the same two choices
/// measured under several protocols, say), each stratum a `(base, subject)` pair of
/// repetitions. The ratio is the geometric mean of the strata's ratios, `e^(Σ dᵢ / k)`, its
/// standard error `√(Σ seᵢ²) / k`, and its degrees of freedom Welch–Satterthwaite's over
/// every side of every stratum; so one stratum is exactly [`compare`], and a choice that is
/// faster in some strata and slower in others comes out near 1, never as a winner by
/// averaging medians. `base_runs` and `subject_runs` are the fewest repetitions of any
/// stratum's side.
pub fn compare_pooled(strata: &[(&[f64], &[f64])], rule: &Rule) -> Decision {
    let fewest = |side: fn(&(&[f64], &[f64])) -> usize| strata.iter().map(side).min().unwrap_or(0);
    let (nb, ns) = (fewest(|s| s.0.len()), fewest(|s| s.1.len()));
    if !rule.is_valid() {
        return Decision::not_comparable(nb, ns, rule, Reason::InvalidRule);
    }
    if nb == 0 || ns == 0 {
        return Decision::not_comparable(nb, ns, rule, Reason::Empty);
    }
    if strata
        .iter()
        .flat_map(|(b, s)| b.iter().chain(s.iter()))
        .any(|v| !(v.is_finite() && *v > 0.0))
    {
        return Decision::not_comparable(nb, ns, rule, Reason::NotPositive);
    }
    let k = strata.len() as f64;
    let level = rule.per_look_level();
    // Per stratum: the log difference, and each side's variance of its mean with its n.
    let parts: Vec<(f64, [Side; 2])> = strata
        .iter()
        .map(|(b, s)| {
            let (mb, vb) = log_moments(b);
            let (ms, vs) = log_moments(s);
            (
                ms - mb,
                [
                    (vb / b.len() as f64, vb, b.len()),
                    (vs / s.len() as f64, vs, s.len()),
                ],
            )
        })
        .collect();
    let d = parts.iter().map(|(d, _)| d).sum::<f64>() / k;
    // The per-repetition log variance of one side, averaged over sides and strata, and
    // shrunk by the strata (k strata average k independent differences).
    let pooled_variance = parts
        .iter()
        .map(|(_, sides)| (sides[0].1 + sides[1].1) / 2.0)
        .sum::<f64>()
        / k
        / k;
    let decision = |low: f64, high: f64, p_value: f64, verdict: Verdict| Decision {
        ratio: d.exp(),
        low,
        high,
        level,
        margin: rule.margin,
        p_value,
        base_runs: nb,
        subject_runs: ns,
        verdict,
    };
    // A side of one repetition has no spread to estimate: nothing is decided, and the
    // spread of the other sides (if any) says how many repetitions would decide.
    if nb < 2 || ns < 2 {
        let spread = parts
            .iter()
            .flat_map(|(_, sides)| sides.iter())
            .filter(|(_, _, n)| *n > 1)
            .map(|(_, v, _)| *v)
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
        let runs_needed = spread.and_then(|v| runs_needed(d, v / k, rule, nb.max(ns) as u64));
        return decision(0.0, f64::INFINITY, 1.0, Verdict::Undecided { runs_needed });
    }
    let sides = || parts.iter().flat_map(|(_, sides)| sides.iter());
    let se2 = sides().map(|(e, _, _)| e).sum::<f64>() / (k * k);
    let (low, high, p_value) = if se2 <= 0.0 {
        // No side has any spread: the difference is what it is.
        (d, d, if d == 0.0 { 1.0 } else { 0.0 })
    } else {
        let se = se2.sqrt();
        let df = sides().map(|(e, _, _)| e).sum::<f64>().powi(2)
            / sides()
                .map(|(e, _, n)| e * e / (*n as f64 - 1.0))
                .sum::<f64>();
        let half = t_quantile(df, level) * se;
        let p = StudentsT::new(0.0, 1.0, df.max(1e-3))
            .map(|t| 2.0 * (1.0 - t.cdf((d / se).abs())))
            .unwrap_or(1.0);
        (d - half, d + half, p)
    };
    let (low, high) = (low.exp(), high.exp());
    let verdict = if low >= 1.0 - rule.margin && high <= 1.0 + rule.margin {
        Verdict::Equivalent
    } else if low > 1.0 {
        Verdict::Higher
    } else if high < 1.0 {
        Verdict::Lower
    } else {
        Verdict::Undecided {
            runs_needed: runs_needed(d, pooled_variance, rule, nb.max(ns) as u64),
        }
    };
    decision(low, high, p_value, verdict)
}

/// The repetitions a side (both sides alike) that would likely decide a comparison whose
/// log difference is `d` with per-repetition log variance `variance`: the smallest n above
/// `current` whose expected interval either excludes no change or fits inside the margin.
/// `None` when not within [`MAX_RUNS`] or when the spread is unknown.
pub fn runs_needed(d: f64, variance: f64, rule: &Rule, current: u64) -> Option<u64> {
    if !(variance.is_finite() && variance > 0.0) {
        return None;
    }
    let level = rule.per_look_level();
    let s = variance.sqrt();
    // Half-widths that would decide: below |d| (a difference), or small enough for the
    // interval around d to fit in the margin (equivalence).
    let to_differ = d.abs();
    let to_match = ((1.0 + rule.margin).ln() - d).min(d - (1.0 - rule.margin).ln());
    let target = to_differ.max(to_match);
    if target <= 0.0 {
        return None;
    }
    let fits = |n: u64| {
        let df = 2.0 * (n as f64 - 1.0);
        t_quantile(df, level) * s * (2.0 / n as f64).sqrt() < target
    };
    let start = (current + 1).max(2);
    if !fits(MAX_RUNS) {
        return None;
    }
    // The half-width falls as n grows: the smallest n that fits, by bisection.
    let (mut lo, mut hi) = (start, MAX_RUNS);
    if fits(lo) {
        return Some(lo);
    }
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if fits(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance
    }

    /// Hand-computed: base 100, 110, 90 against subject 120, 130, 110 (natural logs).
    /// ln base: mean 4.601820, variance 0.0100756; ln subject: mean 4.785169, variance
    /// 0.0069808. d = 0.1833488; se = √((0.0100756 + 0.0069808) / 3) = 0.0754021;
    /// ν = se⁴ / ((0.0033585² + 0.0023269²) / 2) = 3.8725; t(3.8725, 0.975) = 2.81287;
    /// interval e^(0.1833488 ± 0.2120961) = [0.97166, 1.48504], ratio 1.20123.
    #[test]
    fn a_three_against_three_interval_matches_the_hand_computation() {
        let d = compare(&[100.0, 110.0, 90.0], &[120.0, 130.0, 110.0], &THROUGHPUT);
        assert!(close(d.ratio, 1.20123, 1e-5), "{d:?}");
        assert!(close(d.low, 0.97166, 1e-5), "{d:?}");
        assert!(close(d.high, 1.48504, 1e-5), "{d:?}");
        assert!(matches!(d.verdict, Verdict::Undecided { runs_needed: Some(n) } if n > 3));
        assert_eq!(d.level, 0.95);
    }

    #[test]
    fn one_stratum_is_the_plain_comparison() {
        let (b, s) = ([100.0, 110.0, 90.0], [120.0, 130.0, 110.0]);
        let plain = compare(&b, &s, &THROUGHPUT);
        let pooled = compare_pooled(&[(&b, &s)], &THROUGHPUT);
        assert_eq!(plain, pooled);
    }

    /// Two strata with the same spread and the same difference: the ratio is that
    /// difference, and the interval is narrower than either stratum's alone (twice the
    /// repetitions). Hand-computed: each stratum d = ln 1.2, log variance v per side; the
    /// pooled se is √(4 · v/3) / 2 = √(v/3), against √(2v/3) for one stratum.
    #[test]
    fn strata_that_agree_decide_with_a_narrower_interval() {
        let b1 = [100.0, 104.0, 96.0];
        let s1 = [120.0, 124.8, 115.2];
        let b2 = [50.0, 52.0, 48.0];
        let s2 = [60.0, 62.4, 57.6];
        let one = compare(&b1, &s1, &THROUGHPUT);
        let both = compare_pooled(&[(&b1, &s1), (&b2, &s2)], &THROUGHPUT);
        assert!(close(both.ratio, 1.2, 1e-9), "{both:?}");
        assert!(close(one.ratio, 1.2, 1e-9), "{one:?}");
        assert!(
            both.high - both.low < one.high - one.low,
            "{one:?} {both:?}"
        );
        let (_, v) = log_moments(&b1);
        let se = (v / 3.0).sqrt();
        // ν = (4e)² / (4 e² / 2) = 8 with e = v / 3; t(8, 0.975) = 2.306004.
        assert!(
            close(both.low, (1.2f64.ln() - 2.306_004 * se).exp(), 1e-5),
            "{both:?}"
        );
        assert_eq!(both.verdict, Verdict::Higher);
    }

    #[test]
    fn strata_that_disagree_are_not_a_winner() {
        // 25 % faster under one protocol, 20 % slower under the other: the geometric mean
        // of the ratios is 1, so neither choice wins on the pool (the caller still checks
        // that no stratum goes the other way).
        let b = [100.0, 101.0, 99.0, 100.5];
        let up: Vec<f64> = b.iter().map(|v| v * 1.25).collect();
        let down: Vec<f64> = b.iter().map(|v| v * 0.8).collect();
        let d = compare_pooled(&[(&b, &up), (&b, &down)], &THROUGHPUT);
        assert!(close(d.ratio, 1.0, 1e-9), "{d:?}");
        assert!(!d.verdict.is_difference(), "{d:?}");
    }

    #[test]
    fn a_clear_difference_is_higher_or_lower_with_its_interval() {
        let base = [100.0, 101.0, 99.0, 100.5, 99.5];
        let subject = [120.0, 121.0, 119.0, 120.5, 119.5];
        let up = compare(&base, &subject, &THROUGHPUT);
        assert_eq!(up.verdict, Verdict::Higher);
        assert!(
            up.low > 1.18 && up.high < 1.22 && close(up.ratio, 1.2, 0.002),
            "{up:?}"
        );
        assert!(up.p_value < 1e-6);
        let down = compare(&subject, &base, &THROUGHPUT);
        assert_eq!(down.verdict, Verdict::Lower);
        assert!(close(down.ratio * up.ratio, 1.0, 1e-12));
        let turned = up.inverse();
        assert_eq!(turned.verdict, Verdict::Lower);
        assert!(close(turned.low, down.low, 1e-9) && close(turned.high, down.high, 1e-9));
    }

    #[test]
    fn a_tight_interval_inside_the_margin_is_equivalent_even_when_it_excludes_one() {
        let base = [100.0, 100.2, 99.8, 100.1, 99.9];
        let subject = [101.0, 101.2, 100.8, 101.1, 100.9];
        let d = compare(&base, &subject, &THROUGHPUT);
        assert!(d.low > 1.0, "the difference is real: {d:?}");
        assert_eq!(d.verdict, Verdict::Equivalent, "but inside ±5 %");
        // With a margin of 0.5 % the same difference is higher.
        let strict = Rule::with_margin(0.005);
        assert_eq!(compare(&base, &subject, &strict).verdict, Verdict::Higher);
    }

    #[test]
    fn two_against_two_is_decided_only_by_a_large_clean_difference() {
        // 2 against 2: ν can be as low as 1 (t = 12.7), so noise decides nothing.
        let noisy = compare(&[100.0, 120.0], &[110.0, 130.0], &THROUGHPUT);
        assert!(
            matches!(noisy.verdict, Verdict::Undecided { .. }),
            "{noisy:?}"
        );
        let clean = compare(&[100.0, 100.5], &[200.0, 201.0], &THROUGHPUT);
        assert_eq!(clean.verdict, Verdict::Higher, "{clean:?}");
    }

    #[test]
    fn zero_variance_sides() {
        // Both constant: the interval is the point.
        let same = compare(&[5.0, 5.0, 5.0], &[5.0, 5.0], &THROUGHPUT);
        assert_eq!(
            (same.low, same.high, same.verdict),
            (1.0, 1.0, Verdict::Equivalent)
        );
        let apart = compare(&[5.0, 5.0], &[6.0, 6.0], &THROUGHPUT);
        assert_eq!(apart.verdict, Verdict::Higher);
        assert!(close(apart.low, 1.2, 1e-12) && close(apart.high, 1.2, 1e-12));
        // One side constant: Welch's ν is the other side's n − 1 (here 2: t = 4.3027).
        let one = compare(&[100.0, 100.0, 100.0], &[90.0, 100.0, 110.0], &THROUGHPUT);
        let (m, v) = log_moments(&[90.0, 100.0, 110.0]);
        let half = 4.302_652_7 * (v / 3.0).sqrt();
        assert!(
            close(one.low, (m - 100f64.ln() - half).exp(), 1e-6),
            "{one:?}"
        );
        assert!(matches!(one.verdict, Verdict::Undecided { .. }));
    }

    #[test]
    fn ties_and_identical_samples_are_equivalent_when_tight() {
        let a = [100.0, 101.0, 100.0, 101.0, 100.0, 101.0];
        let d = compare(&a, &a, &THROUGHPUT);
        assert_eq!(d.ratio, 1.0);
        assert_eq!(d.verdict, Verdict::Equivalent);
        assert!(close(d.p_value, 1.0, 1e-12));
    }

    #[test]
    fn a_side_that_cannot_be_compared_says_why() {
        let empty = compare(&[], &[1.0, 2.0], &THROUGHPUT);
        assert_eq!(
            empty.verdict,
            Verdict::NotComparable {
                reason: Reason::Empty
            }
        );
        // A failed side reaches the engine as no repetitions, or a zero rate.
        let zero = compare(&[0.0, 10.0], &[10.0, 11.0], &THROUGHPUT);
        assert_eq!(
            zero.verdict,
            Verdict::NotComparable {
                reason: Reason::NotPositive
            }
        );
        let nan = compare(&[f64::NAN, 10.0], &[10.0, 11.0], &THROUGHPUT);
        assert_eq!(
            nan.verdict,
            Verdict::NotComparable {
                reason: Reason::NotPositive
            }
        );
        let bad = Rule {
            level: 1.5,
            ..THROUGHPUT
        };
        assert_eq!(
            compare(&[1.0, 2.0], &[1.0, 2.0], &bad).verdict,
            Verdict::NotComparable {
                reason: Reason::InvalidRule
            }
        );
    }

    #[test]
    fn one_repetition_a_side_decides_nothing_but_says_what_would() {
        let d = compare(&[100.0], &[150.0, 152.0, 148.0], &THROUGHPUT);
        assert!(
            matches!(
                d.verdict,
                Verdict::Undecided {
                    runs_needed: Some(_)
                }
            ),
            "{d:?}"
        );
        let none = compare(&[100.0], &[150.0], &THROUGHPUT);
        assert_eq!(none.verdict, Verdict::Undecided { runs_needed: None });
    }

    #[test]
    fn the_runs_needed_would_decide_the_observed_difference() {
        // A 10 % difference at a 10 % spread: the interval must shrink below ln 1.1.
        let (d, v) = (1.1f64.ln(), 0.1f64.powi(2));
        let n = runs_needed(d, v, &THROUGHPUT, 3).expect("within reach");
        let half = |n: u64| t_quantile(2.0 * (n as f64 - 1.0), 0.95) * (2.0 * v / n as f64).sqrt();
        assert!(half(n) < d && half(n - 1) >= d, "n = {n}");
        // A difference right at the margin's edge never decides within the maximum.
        let edge = 1.05f64.ln() / 2.0;
        assert_eq!(runs_needed(edge, 0.5, &THROUGHPUT, 3), None);
        // No spread: unknown.
        assert_eq!(runs_needed(0.1, 0.0, &THROUGHPUT, 3), None);
    }

    #[test]
    fn more_looks_widen_every_interval() {
        let base = [100.0, 104.0, 97.0, 101.0];
        let subject = [108.0, 111.0, 104.0, 109.0];
        let once = compare(&base, &subject, &THROUGHPUT);
        let five = compare(
            &base,
            &subject,
            &Rule {
                looks: 5,
                ..THROUGHPUT
            },
        );
        assert!(close(five.level, 0.99, 1e-12));
        assert!(five.low < once.low && five.high > once.high);
    }
}
