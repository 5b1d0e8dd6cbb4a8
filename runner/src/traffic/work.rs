//! Synthetic server work: `--work N` rounds of a 64-bit xorshift per echo, as arknet does.

use std::hint::black_box;

/// Runs `iterations` xorshift rounds seeded with the message's last byte + 1. The result goes
/// through `black_box` so the loop cannot be optimised away; its cost depends only on the count.
pub fn run(iterations: u64, message: &[u8]) -> u64 {
    let mut x = message.last().copied().unwrap_or(0) as u64 + 1;
    for _ in 0..iterations {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    black_box(x)
}

#[cfg(test)]
mod tests {
    #[test]
    fn work_is_deterministic_and_depends_on_the_seed() {
        assert_eq!(super::run(1000, b"a"), super::run(1000, b"a"));
        assert_ne!(super::run(1000, b"a"), super::run(1000, b"b"));
        assert_eq!(super::run(0, b"a"), b'a' as u64 + 1);
    }
}
