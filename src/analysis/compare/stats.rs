//! The statistics behind a verdict, each a pure function of numbers: medians, an exact
//! Mann-Whitney test for repetitions, a seeded bootstrap interval of a ratio of medians, and
//! a distribution-free interval for a quantile of a recorded histogram.

use hdrhistogram::Histogram;

/// The two-sided significance level every test uses.
pub const ALPHA: f64 = 0.05;

/// The standard normal quantile at 1 − [`ALPHA`] / 2.
const Z: f64 = 1.959_963_984_540_054;

/// Bootstrap resamples per interval.
pub const RESAMPLES: usize = 10_000;

/// Largest total sample count for which the exact Mann-Whitney distribution is enumerated;
/// above it the normal approximation (with tie correction) is used.
const EXACT_LIMIT: usize = 60;

/// The median (the mean of the two middle values for an even count); `None` when empty.
pub use echomark_archive::plan::median;

/// n choose k as a float (exact for the sizes used here).
fn choose(n: usize, k: usize) -> f64 {
    let k = k.min(n - k);
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// The smallest two-sided p-value an exact rank test can reach with these sample sizes
/// (every value of one side above every value of the other).
pub fn smallest_rank_test_p(a: usize, b: usize) -> f64 {
    if a == 0 || b == 0 {
        return 1.0;
    }
    (2.0 / choose(a + b, a)).min(1.0)
}

/// Whether a rank test on samples of these sizes can reach [`ALPHA`] at all.
pub fn rank_test_possible(a: usize, b: usize) -> bool {
    smallest_rank_test_p(a, b) <= ALPHA
}

/// Mid-ranks of `values`, doubled so that they are integers (ties share the mean rank).
fn doubled_ranks(values: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    let mut ranks = vec![0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Ranks start + 1 ..= end share their mean; doubled: start + 1 + end.
        for &i in &order[start..end] {
            ranks[i] = start + 1 + end;
        }
        start = end;
    }
    ranks
}

/// The two-sided p-value of the Mann-Whitney (Wilcoxon rank-sum) test that `a` and `b` come
/// from the same distribution: exact (by enumerating the permutation distribution of the
/// rank sum, ties included) up to 60 values in all, normal with tie correction above.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 1.0;
    }
    let all: Vec<f64> = a.iter().chain(b).copied().collect();
    let ranks = doubled_ranks(&all);
    let n = all.len();
    let k = b.len();
    let observed: usize = ranks[a.len()..].iter().sum();
    if n <= EXACT_LIMIT {
        // ways[j][s]: subsets of j of the ranks seen so far whose doubled sum is s.
        let max_sum: usize = ranks.iter().sum();
        let mut ways = vec![vec![0.0f64; max_sum + 1]; k + 1];
        ways[0][0] = 1.0;
        for &r in &ranks {
            for j in (1..=k).rev() {
                let (lower, upper) = ways.split_at_mut(j);
                let from = &lower[j - 1];
                let to = &mut upper[0];
                for s in (r..=max_sum).rev() {
                    to[s] += from[s - r];
                }
            }
        }
        let total = choose(n, k);
        let at_most: f64 = ways[k][..=observed].iter().sum::<f64>() / total;
        let at_least: f64 = ways[k][observed..].iter().sum::<f64>() / total;
        return (2.0 * at_most.min(at_least)).min(1.0);
    }
    let (na, nb, nf) = (a.len() as f64, k as f64, n as f64);
    let mean = nb * (nf + 1.0) / 2.0;
    // Tie correction: Σ(t³ − t) over groups of equal values.
    let mut sorted = all.clone();
    sorted.sort_by(f64::total_cmp);
    let mut ties = 0.0;
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i + 1;
        while j < sorted.len() && sorted[j] == sorted[i] {
            j += 1;
        }
        let t = (j - i) as f64;
        ties += t * t * t - t;
        i = j;
    }
    let variance = na * nb / 12.0 * ((nf + 1.0) - ties / (nf * (nf - 1.0)));
    if variance <= 0.0 {
        return 1.0;
    }
    let w = observed as f64 / 2.0;
    // Continuity correction of one half towards the mean.
    let z = ((w - mean).abs() - 0.5).max(0.0) / variance.sqrt();
    (2.0 * normal_upper_tail(z)).min(1.0)
}

/// P(Z > z) for a standard normal Z (Abramowitz and Stegun 7.1.26, error < 1.5e-7).
fn normal_upper_tail(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    0.5 * poly * (-x * x).exp()
}

/// SplitMix64: a tiny generator whose stream is fixed by its seed forever, so a bootstrap
/// interval is the same on every machine and in every version of echomark.
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform index below `n` (n > 0; the bias is below 2⁻⁵⁰ for the sizes used here).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * n as f64) as usize % n
    }
}

/// A stable 64-bit seed for a text (FNV-1a), so each configuration has its own stream that
/// does not shift when other configurations are added.
pub fn seed_of(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Percentile bootstrap intervals of median(`new`) / median(`base`), one per confidence
/// level in `levels` (0.95 = 95%), all from the same resamples. `None` when either side is
/// empty or a resampled base median is 0.
pub fn bootstrap_ratio_intervals(
    base: &[f64],
    new: &[f64],
    seed: u64,
    levels: &[f64],
) -> Option<Vec<(f64, f64)>> {
    if base.is_empty() || new.is_empty() {
        return None;
    }
    let mut rng = SplitMix64::new(seed);
    let (base, new) = (Ranked::of(base), Ranked::of(new));
    let mut counts = Vec::new();
    let mut ratios = Vec::with_capacity(RESAMPLES);
    for _ in 0..RESAMPLES {
        let m_base = base.resampled_median(&mut rng, &mut counts);
        let m_new = new.resampled_median(&mut rng, &mut counts);
        if m_base == 0.0 {
            return None;
        }
        ratios.push(m_new / m_base);
    }
    ratios.sort_unstable_by(f64::total_cmp);
    let at = |q: f64| ratios[((q * RESAMPLES as f64) as usize).min(RESAMPLES - 1)];
    Some(
        levels
            .iter()
            .map(|level| {
                let tail = (1.0 - level) / 2.0;
                (at(tail), at(1.0 - tail))
            })
            .collect(),
    )
}

/// A sample sorted once, so the median of a resample of it is read from how often each rank
/// was drawn instead of sorting the resample (the same median: the same order statistics).
struct Ranked {
    /// The values in ascending order.
    sorted: Vec<f64>,
    /// `rank[i]`: where the sample's `i`-th value stands in `sorted`.
    rank: Vec<usize>,
}

impl Ranked {
    fn of(values: &[f64]) -> Self {
        let mut order: Vec<usize> = (0..values.len()).collect();
        order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
        let mut rank = vec![0; values.len()];
        for (r, &i) in order.iter().enumerate() {
            rank[i] = r;
        }
        Self {
            sorted: order.iter().map(|&i| values[i]).collect(),
            rank,
        }
    }

    /// The median of as many values as the sample has, drawn from it with replacement by
    /// `rng` (one draw of an index each, in order, as a resample would take them).
    fn resampled_median(&self, rng: &mut SplitMix64, counts: &mut Vec<usize>) -> f64 {
        let n = self.rank.len();
        counts.clear();
        counts.resize(n, 0);
        for _ in 0..n {
            counts[self.rank[rng.below(n)]] += 1;
        }
        // The k-th smallest drawn value (0-based).
        let kth = |k: usize| {
            let mut seen = 0;
            for (value, &count) in self.sorted.iter().zip(counts.iter()) {
                seen += count;
                if seen > k {
                    return *value;
                }
            }
            f64::NAN
        };
        if n % 2 == 1 {
            kth(n / 2)
        } else {
            (kth(n / 2 - 1) + kth(n / 2)) / 2.0
        }
    }
}

/// Benjamini-Hochberg adjusted p-values, in the order given: the smallest false discovery
/// rate at which each test would be called significant.
pub fn benjamini_hochberg(p_values: &[f64]) -> Vec<f64> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p_values[i].total_cmp(&p_values[j]));
    let mut adjusted = vec![1.0; m];
    let mut running = 1.0f64;
    for (rank, &i) in order.iter().enumerate().rev() {
        running = running.min(p_values[i] * m as f64 / (rank + 1) as f64);
        adjusted[i] = running.min(1.0);
    }
    adjusted
}

/// A distribution-free interval, at 1 − [`ALPHA`], for the `quantile` of the population a
/// histogram sampled: the order statistics at ranks N·q ± z·√(N·q·(1 − q)), widened to the
/// edges of their histogram buckets. `None` for an empty histogram. Values are in the
/// histogram's unit.
pub fn quantile_interval(hist: &Histogram<u64>, quantile: f64) -> Option<(u64, u64)> {
    let n = hist.len();
    if n == 0 {
        return None;
    }
    let nf = n as f64;
    let spread = Z * (nf * quantile * (1.0 - quantile)).sqrt();
    let low_rank = (nf * quantile - spread).floor().max(1.0);
    let high_rank = (nf * quantile + spread).ceil().min(nf);
    let low = hist.value_at_quantile(low_rank / nf);
    let high = hist.value_at_quantile(high_rank / nf);
    Some((hist.lowest_equivalent(low), hist.highest_equivalent(high)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn exact_rank_test_matches_the_textbook_values() {
        // Complete separation of 4 and 4: p = 2 / C(8, 4) = 2 / 70.
        let p = mann_whitney_p(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]);
        assert!((p - 2.0 / 70.0).abs() < 1e-12, "{p}");
        // Identical samples: nothing to see.
        assert_eq!(mann_whitney_p(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]), 1.0);
        // 3 and 3 can never reach 0.05; 4 and 4 can.
        assert!(!rank_test_possible(3, 3));
        assert!(rank_test_possible(4, 4));
        assert!((smallest_rank_test_p(3, 3) - 0.1).abs() < 1e-12);
    }

    #[test]
    fn exact_rank_test_handles_ties() {
        // a = [1, 2, 2], b = [2, 3, 4]: a textbook tie case; p is well inside (0, 1].
        let p = mann_whitney_p(&[1.0, 2.0, 2.0], &[2.0, 3.0, 4.0]);
        assert!(p > 0.1 && p <= 1.0, "{p}");
        // All values equal: the statistic cannot move, p = 1.
        assert_eq!(mann_whitney_p(&[5.0; 4], &[5.0; 4]), 1.0);
    }

    #[test]
    fn normal_approximation_agrees_with_the_exact_test_at_the_boundary() {
        let a: Vec<f64> = (0..31).map(f64::from).collect();
        let b: Vec<f64> = (0..31).map(|i| f64::from(i) + 8.5).collect();
        let approx = mann_whitney_p(&a, &b);
        let exact = mann_whitney_p(&a[..30], &b[..30]);
        assert!((approx - exact).abs() < 0.02, "{approx} vs {exact}");
        assert!(
            approx < ALPHA,
            "a shift of a quarter of the range is significant"
        );
    }

    #[test]
    fn the_bootstrap_is_reproducible_and_brackets_the_ratio() {
        let base = [100.0, 102.0, 98.0];
        let new = [90.0, 91.0, 89.0];
        let one = bootstrap_ratio_intervals(&base, &new, 7, &[0.95, 0.999]).unwrap();
        assert_eq!(
            one,
            bootstrap_ratio_intervals(&base, &new, 7, &[0.95, 0.999]).unwrap()
        );
        assert!(one[0].0 <= 0.9 && one[0].1 < 1.0, "{one:?}");
        // The wider level is at least as wide.
        assert!(one[1].0 <= one[0].0 && one[1].1 >= one[0].1, "{one:?}");
        // Overlapping ranges: the interval contains 1.
        let wide =
            bootstrap_ratio_intervals(&[100.0, 110.0, 90.0], &[95.0, 105.0, 99.0], 7, &[0.95])
                .unwrap();
        assert!(wide[0].0 < 1.0 && wide[0].1 > 1.0, "{wide:?}");
    }

    #[test]
    fn benjamini_hochberg_matches_a_worked_example() {
        // p = 0.01, 0.04, 0.03, 0.5 with m = 4: sorted 0.01, 0.03, 0.04, 0.5 → 0.04, 0.0533…,
        // 0.0533…, 0.5 (monotone from the top).
        let adjusted = benjamini_hochberg(&[0.01, 0.04, 0.03, 0.5]);
        let expected = [0.04, 0.04 * 4.0 / 3.0, 0.04 * 4.0 / 3.0, 0.5];
        for (a, e) in adjusted.iter().zip(expected) {
            assert!((a - e).abs() < 1e-12, "{adjusted:?}");
        }
        assert!(benjamini_hochberg(&[]).is_empty());
    }

    #[test]
    fn quantile_intervals_narrow_with_more_samples() {
        let mut small = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
        let mut large = small.clone();
        for v in 1..=1_000u64 {
            small.record(v * 1_000).unwrap();
            for _ in 0..100 {
                large.record(v * 1_000).unwrap();
            }
        }
        let (s_low, s_high) = quantile_interval(&small, 0.99).unwrap();
        let (l_low, l_high) = quantile_interval(&large, 0.99).unwrap();
        assert!(s_low <= 990_000 && 990_000 <= s_high, "{s_low}..{s_high}");
        assert!(l_low <= 990_000 && 990_000 <= l_high, "{l_low}..{l_high}");
        assert!(l_high - l_low < s_high - s_low);
    }
}
