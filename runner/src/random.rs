//! SplitMix64 (Steele, Lea and Flood, 2014): the one seeded generator of the runner, used
//! for the matrix's case shuffle and for Poisson schedules. Written out rather than taken
//! from `rand` because archives promise that a recorded seed reproduces the same order and
//! the same schedule with any later build; the algorithm is fixed by its constants, while a
//! crate's default generator may change between versions.

/// A SplitMix64 stream.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A stream starting from `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform value in the open interval (0, 1): 53 random bits, never 0.
    pub fn next_open_unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_sequence() {
        // The first outputs for seed 1234567 in the reference implementation.
        let mut r = SplitMix64::new(1_234_567);
        assert_eq!(r.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(r.next_u64(), 3_203_168_211_198_807_973);
    }

    #[test]
    fn unit_values_stay_inside_the_open_interval() {
        let mut r = SplitMix64::new(0);
        for _ in 0..10_000 {
            let u = r.next_open_unit();
            assert!(u > 0.0 && u < 1.0);
        }
    }
}
