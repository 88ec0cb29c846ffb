//! The archive's checksum, XXH3-64 (seed 0), one-shot and streaming.

use std::hash::Hasher;
use twox_hash::XxHash3_64;

/// `bytes` (a digest) in lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// XXH3-64 of `data`.
pub fn xxh3_64(data: &[u8]) -> u64 {
    XxHash3_64::oneshot(data)
}

/// XXH3-64 of bytes given in pieces; equal to `xxh3_64` of their concatenation.
#[derive(Default)]
pub struct Xxh3(XxHash3_64);

impl Xxh3 {
    /// A hasher that has seen nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes in the next piece.
    pub fn update(&mut self, piece: &[u8]) {
        self.0.write(piece);
    }

    /// The hash of everything taken in so far.
    pub fn digest(&self) -> u64 {
        self.0.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::xorshift;

    #[test]
    fn known_values_and_pieces_agree() {
        // Reference values of XXH3_64bits (seed 0) from the xxHash specification's sanity checks.
        assert_eq!(xxh3_64(b""), 0x2D06_8005_38D3_94C2);
        let mut x = 7u64;
        let data: Vec<u8> = (0..5000).map(|_| xorshift(&mut x) as u8).collect();
        for len in [0, 1, 3, 16, 17, 128, 129, 240, 241, 1024, 1025, 4999] {
            let mut h = Xxh3::new();
            for piece in data[..len].chunks(97) {
                h.update(piece);
            }
            assert_eq!(h.digest(), xxh3_64(&data[..len]), "length {len}");
        }
    }
}
