//! Many comparisons judged together, as `compare` and its pull-request gate judge every
//! configuration of two datasets: a page reads one row at a time (each row's interval at the
//! rule's level), but a gate that fails on any regression among forty configurations would
//! fail an A/A pair most of the time at 95 % per row. So a family keeps the false discovery
//! rate at the rule's error α (Benjamini–Hochberg on the rows' p-values) and states its
//! intervals at the false-coverage-statement level of Benjamini and Yekutieli (2005):
//! 1 − R·α/m for R discoveries among m rows. A row is higher or lower only when it is a
//! discovery and its widened interval excludes 1; equivalence is read from the widened
//! interval too.

use crate::{compare, Decision, Rule, Verdict};

/// Benjamini–Hochberg adjusted p-values (q-values), in the order given.
pub fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut adjusted = vec![1.0; m];
    let mut running = 1.0f64;
    for (rank, &i) in order.iter().enumerate().rev() {
        running = running.min(p[i] * m as f64 / (rank + 1) as f64);
        adjusted[i] = running.min(1.0);
    }
    adjusted
}

/// One row of a family: base and subject repetitions and the rule they are held to.
pub struct Row<'a> {
    pub base: &'a [f64],
    pub subject: &'a [f64],
    pub rule: Rule,
}

/// Every row's decision, judged as one family (see the module documentation), with its
/// Benjamini–Hochberg q-value among the comparable rows (1 for the others).
pub fn judge(rows: &[Row]) -> Vec<(Decision, f64)> {
    let first: Vec<Decision> = rows
        .iter()
        .map(|r| compare(r.base, r.subject, &r.rule))
        .collect();
    let comparable: Vec<usize> = (0..rows.len())
        .filter(|&i| !matches!(first[i].verdict, Verdict::NotComparable { .. }))
        .collect();
    let m = comparable.len();
    let mut out: Vec<(Decision, f64)> = first.iter().map(|d| (*d, 1.0)).collect();
    if m <= 1 {
        for &i in &comparable {
            out[i].1 = first[i].p_value;
        }
        return out;
    }
    let q = benjamini_hochberg(
        &comparable
            .iter()
            .map(|&i| first[i].p_value)
            .collect::<Vec<_>>(),
    );
    for (k, &i) in comparable.iter().enumerate() {
        let rule = rows[i].rule;
        let alpha = 1.0 - rule.per_look_level();
        let discovered = q[k] <= alpha;
        let discoveries = q.iter().filter(|&&x| x <= alpha).count().max(1);
        let widened = Rule {
            level: 1.0 - discoveries as f64 * alpha / m as f64,
            looks: 1,
            ..rule
        };
        let mut d = compare(rows[i].base, rows[i].subject, &widened);
        if d.verdict.is_difference() && !discovered {
            d.verdict = Verdict::Undecided { runs_needed: None };
        }
        out[i] = (d, q[k]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::THROUGHPUT;

    #[test]
    fn adjusted_p_values_match_a_hand_computation() {
        // p sorted: 0.01, 0.02, 0.03, 0.5 (m = 4): 0.04, 0.04, 0.04, 0.5.
        let q = benjamini_hochberg(&[0.03, 0.5, 0.01, 0.02]);
        let want = [0.04, 0.5, 0.04, 0.04];
        for (a, b) in q.iter().zip(want) {
            assert!((a - b).abs() < 1e-12, "{q:?}");
        }
    }

    #[test]
    fn a_family_keeps_clear_differences_and_widens_their_intervals() {
        let same = [100.0, 104.0, 97.0, 101.0, 99.0];
        let up = [150.0, 153.0, 148.0, 151.0, 149.0];
        let rows: Vec<Row> = (0..20)
            .map(|i| Row {
                base: &same,
                subject: if i == 0 { &up } else { &same },
                rule: THROUGHPUT,
            })
            .collect();
        let alone = compare(&same, &up, &THROUGHPUT);
        let family: Vec<Decision> = judge(&rows).into_iter().map(|(d, _)| d).collect();
        assert_eq!(family[0].verdict, Verdict::Higher);
        // One discovery of twenty: its interval is stated at 1 − 0.05/20 = 99.75 %.
        assert!((family[0].level - 0.9975).abs() < 1e-12);
        assert!(family[0].low < alone.low && family[0].high > alone.high);
        assert!(family[1..].iter().all(|d| !d.verdict.is_difference()));
    }
}
