//! Run inputs of the wide model (`Params::wide`): per order context, the byte that last
//! followed it and how many times in a row it did (its run). While the byte being coded agrees
//! with that byte so far, the run predicts its next bit, with a confidence learnt per order,
//! run length and bit position; elsewhere its input is 0.

use super::mixing::{counter_p12, counter_update, stretch_table, COUNTER_INIT};

/// Most index bits of the table shared by every order and lane.
const RUN_BITS: u32 = 22;
/// Runs told apart (longer ones count as the longest).
const RUNS: usize = 16;
/// Observations after which a confidence counter adapts at its slowest.
const CONFIDENCE_LIMIT: u32 = 255;

/// The runs of one model.
pub struct Runs {
    /// Per hashed context: a check (8 bits of its hash), the byte that last followed it and
    /// its run (8 bits).
    table: Vec<u32>,
    /// The table's index bits.
    bits: u32,
    orders: usize,
    /// Per lane and order: the entry of the byte being coded, and its byte and run where the
    /// entry is this context's.
    at: Vec<usize>,
    last: Vec<Option<(u8, u32)>>,
    /// Confidence counters per order, run and bit position.
    confidence: Vec<u32>,
    /// The counters of the runs that predicted the current bit, with the bit each predicted.
    used: Vec<(usize, u32)>,
}

impl Runs {
    /// Runs of `orders` order contexts in each of `lanes` lanes, for a block of `len` bytes.
    pub fn new(orders: usize, lanes: usize, len: usize) -> Self {
        let bits = Self::bits_for(orders, len);
        Runs {
            table: vec![0; 1 << bits],
            bits,
            orders,
            at: vec![0; orders * lanes],
            last: vec![None; orders * lanes],
            confidence: vec![COUNTER_INIT; orders * RUNS * 8],
            used: Vec::with_capacity(orders),
        }
    }

    /// Index bits of the table for `orders` orders in a block of `len` bytes: about an
    /// entry per context the block can reach, within 2^12..=2^`RUN_BITS`.
    fn bits_for(orders: usize, len: usize) -> u32 {
        let contexts = len.saturating_mul(orders).max(1);
        (usize::BITS - contexts.leading_zeros()).clamp(12, RUN_BITS)
    }

    /// Bytes of the shared table for `orders` orders in a block of `len` bytes (the rest is
    /// small).
    pub fn bytes_for(orders: usize, len: usize) -> usize {
        4 << Self::bits_for(orders, len)
    }

    /// The entry and check of context hash `h`.
    #[inline]
    fn entry(&self, h: u64) -> (usize, u32) {
        ((h >> (64 - self.bits)) as usize, (h >> 8) as u32 & 0xff)
    }

    /// Looks up lane `l`'s order contexts `ctx` for the byte that starts.
    pub fn begin(&mut self, l: usize, ctx: &[u64]) {
        let lane = l * self.orders;
        for (k, &h) in ctx[..self.orders].iter().enumerate() {
            let (at, check) = self.entry(h);
            let e = self.table[at];
            self.at[lane + k] = at;
            self.last[lane + k] =
                (e != 0 && e >> 24 == check).then_some(((e >> 8) as u8, e & 0xff));
        }
    }

    /// One input per order into `x` for lane `l`'s next bit, `c0` the byte's bits so far
    /// (with a leading 1) and `bitpos` their count.
    #[inline]
    pub fn inputs(&mut self, l: usize, c0: u32, bitpos: u32, x: &mut [f32]) {
        let st = stretch_table();
        let lane = l * self.orders;
        for (k, xk) in x[..self.orders].iter_mut().enumerate() {
            *xk = match self.last[lane + k] {
                Some((b, run)) if (b as u32 | 256) >> (8 - bitpos) == c0 => {
                    let bit = (b as u32 >> (7 - bitpos)) & 1;
                    let i = (k * RUNS + (run as usize).min(RUNS - 1)) * 8 + bitpos as usize;
                    self.used.push((i, bit));
                    let v = st[counter_p12(self.confidence[i])];
                    if bit == 1 {
                        v
                    } else {
                        -v
                    }
                }
                _ => 0.0,
            };
        }
    }

    /// Learns whether the runs that predicted the bit were right.
    #[inline]
    pub fn update(&mut self, bit: u32) {
        for (i, expect) in self.used.drain(..) {
            counter_update(
                &mut self.confidence[i],
                (bit == expect) as u32,
                CONFIDENCE_LIMIT,
            );
        }
    }

    /// Records `byte`, lane `l`'s coded byte, after its order contexts `ctx`.
    pub fn end(&mut self, l: usize, ctx: &[u64], byte: u8) {
        let lane = l * self.orders;
        for (k, &h) in ctx[..self.orders].iter().enumerate() {
            let check = self.entry(h).1;
            let run = match self.last[lane + k] {
                Some((b, run)) if b == byte => (run + 1).min(255),
                _ => 1,
            };
            self.table[self.at[lane + k]] = check << 24 | (byte as u32) << 8 | run;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inputs of lane 0's two orders while coding `byte`, each bit learnt after.
    fn code(runs: &mut Runs, ctx: &[u64], byte: u8) -> Vec<[f32; 2]> {
        runs.begin(0, ctx);
        let mut seen = Vec::new();
        let mut c0 = 1u32;
        for bitpos in 0..8 {
            let mut x = [0f32; 2];
            runs.inputs(0, c0, bitpos, &mut x);
            seen.push(x);
            let bit = (byte as u32 >> (7 - bitpos)) & 1;
            runs.update(bit);
            c0 = c0 << 1 | bit;
        }
        runs.end(0, ctx, byte);
        seen
    }

    #[test]
    fn a_run_predicts_its_byte_until_the_byte_departs_from_it() {
        let mut runs = Runs::new(2, 1, 1000);
        let ctx = [0x1234_5678_9abc_def0u64, 0x0fed_cba9_8765_4321];
        // Nothing has followed the contexts yet: no input.
        assert!(code(&mut runs, &ctx, b'a').iter().all(|x| *x == [0.0; 2]));
        for _ in 0..20 {
            code(&mut runs, &ctx, b'a');
        }
        // 'a' (0110_0001) again: every input has the sign of the bit it predicts.
        for (i, x) in code(&mut runs, &ctx, b'a').iter().enumerate() {
            let one = (b'a' >> (7 - i)) & 1 == 1;
            assert!(
                x.iter().all(|&v| if one { v > 0.5 } else { v < -0.5 }),
                "{x:?}"
            );
        }
        // 'c' (0110_0011) leaves the run at bit 6: no inputs after it.
        let x = code(&mut runs, &ctx, b'c');
        assert!(x[6][0] != 0.0 && x[7] == [0.0; 2]);
        // Another context in the same entry (another check) sees no run.
        let other = [ctx[0] ^ 0xff00, ctx[1] ^ 0xff00];
        assert!(code(&mut runs, &other, b'a').iter().all(|x| *x == [0.0; 2]));
    }
}
