//! Helpers shared by the unit tests.

/// Next value of a xorshift64 generator (deterministic test data; `x` must not be 0).
pub fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}
