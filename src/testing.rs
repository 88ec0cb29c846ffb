//! Test data generators shared by the unit tests and (through `tests/common.rs`) the
//! end-to-end tests.

/// Next value of a xorshift64 generator (deterministic test data; `x` must not be 0).
pub fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// A Hann-windowed cosine and sine basis of `n` points as f32 (rows `0..=n/2` cosines, the
/// rest sines), as audio models store their STFT.
pub fn stft_basis(n: usize) -> Vec<u8> {
    let mut data = Vec::new();
    for row in 0..n + 2 {
        let (k, sine) = (row % (n / 2 + 1), row > n / 2);
        for i in 0..n {
            let t = std::f64::consts::TAU * i as f64 / n as f64;
            let w = 0.5 - 0.5 * t.cos();
            let v = match sine {
                true => (t * k as f64).sin(),
                false => (t * k as f64).cos(),
            };
            data.extend_from_slice(&((v * w) as f32).to_le_bytes());
        }
    }
    data
}
