//! The coder: `VP8Writer`, `VP8Reader` and their contexts (named as the interface it stands in
//! for names them; the coding is sep's own).

use crate::{CabacReader, CabacWriter};
use std::io::{Read, Result, Write};

/// Bits of a context's probability.
const BITS: u32 = 12;
/// A probability of one half.
const HALF: u16 = 1 << (BITS - 1);
/// The range is renormalised when it falls below this.
const TOP: u32 = 1 << 24;
/// Bits seen after which a context learns at its slowest rate.
const SETTLED: u8 = 30;

/// The odds of a bit: its probability of a zero, and how many bits it has seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VP8Context {
    zero: u16,
    seen: u8,
}

impl Default for VP8Context {
    fn default() -> Self {
        Self::new()
    }
}

impl VP8Context {
    /// Even odds, nothing seen.
    pub fn new() -> Self {
        VP8Context {
            zero: HALF,
            seen: 0,
        }
    }

    /// The probability of a zero in 1/4096, within 1..=4095.
    fn p(&self) -> u32 {
        u32::from(self.zero).clamp(1, (1 << BITS) - 1)
    }

    /// Learns from `bit`: a step of 1/(seen + 2) toward it at first (the running mean), then
    /// about 1/32.
    fn learn(&mut self, bit: bool) {
        let target: i32 = if bit { 0 } else { 1 << BITS };
        let now = i32::from(self.zero);
        let step = (target - now) / (i32::from(self.seen.min(SETTLED)) + 2);
        self.zero = (now + step).clamp(1, (1 << BITS) - 1) as u16;
        self.seen = self.seen.saturating_add(1);
    }
}

/// Writes bits to `W`.
pub struct VP8Writer<W> {
    out: W,
    /// The low end of the range, with a carry bit above its 32.
    low: u64,
    range: u32,
    /// The last byte out of `low` not yet written (a carry may still change it; at the start a
    /// zero byte, which the reader skips), and how many 0xFF bytes follow it.
    pending: u8,
    ones: u64,
}

impl<W: Write> VP8Writer<W> {
    /// A writer to `out`.
    pub fn new(out: W) -> Result<Self> {
        Ok(VP8Writer {
            out,
            low: 0,
            range: u32::MAX,
            pending: 0,
            ones: 0,
        })
    }

    /// Codes a bit whose zero has probability `p0` / 4096.
    fn code(&mut self, bit: bool, p0: u32) -> Result<()> {
        let split = (self.range >> BITS) * p0;
        if bit {
            self.low += u64::from(split);
            self.range -= split;
        } else {
            self.range = split;
        }
        while self.range < TOP {
            self.range <<= 8;
            self.shift()?;
        }
        Ok(())
    }

    /// Moves the top byte of `low` out, resolving a carry into the bytes held.
    fn shift(&mut self) -> Result<()> {
        let carry = (self.low >> 32) as u8;
        let top = (self.low >> 24) as u8;
        if self.low < 0xFF00_0000 || carry == 1 {
            self.out.write_all(&[self.pending.wrapping_add(carry)])?;
            for _ in 0..self.ones {
                self.out.write_all(&[0xFFu8.wrapping_add(carry)])?;
            }
            self.ones = 0;
            self.pending = top;
        } else {
            self.ones += 1;
        }
        self.low = (self.low << 8) & 0xFFFF_FFFF;
        Ok(())
    }
}

impl<W: Write> CabacWriter<VP8Context> for VP8Writer<W> {
    fn put_bypass(&mut self, bit: bool) -> Result<()> {
        self.code(bit, u32::from(HALF))
    }

    fn put(&mut self, bit: bool, ctx: &mut VP8Context) -> Result<()> {
        self.code(bit, ctx.p())?;
        ctx.learn(bit);
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        // Four bytes of `low` and the ones held: the reader then finds every bit within them.
        for _ in 0..5 {
            self.shift()?;
        }
        self.out.flush()
    }
}

/// Reads bits from `R`; past its end, zeros.
pub struct VP8Reader<R> {
    input: R,
    range: u32,
    /// Where the written value lies within the range.
    code: u32,
}

impl<R: Read> VP8Reader<R> {
    /// A reader of `input`.
    pub fn new(input: R) -> Result<Self> {
        let mut r = VP8Reader {
            input,
            range: u32::MAX,
            code: 0,
        };
        // The writer's first byte is its pending byte from before any was out: a zero.
        r.byte()?;
        for _ in 0..4 {
            r.code = r.code << 8 | u32::from(r.byte()?);
        }
        Ok(r)
    }

    /// The next input byte, or zero past the end.
    fn byte(&mut self) -> Result<u8> {
        let mut b = [0u8];
        loop {
            match self.input.read(&mut b) {
                Ok(0) => return Ok(0),
                Ok(_) => return Ok(b[0]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Decodes a bit whose zero has probability `p0` / 4096.
    fn decode(&mut self, p0: u32) -> Result<bool> {
        let split = (self.range >> BITS) * p0;
        let bit = self.code >= split;
        if bit {
            self.code -= split;
            self.range -= split;
        } else {
            self.range = split;
        }
        while self.range < TOP {
            self.range <<= 8;
            self.code = self.code << 8 | u32::from(self.byte()?);
        }
        Ok(bit)
    }
}

impl<R: Read> CabacReader<VP8Context> for VP8Reader<R> {
    fn get_bypass(&mut self) -> Result<bool> {
        self.decode(u32::from(HALF))
    }

    fn get(&mut self, ctx: &mut VP8Context) -> Result<bool> {
        let bit = self.decode(ctx.p())?;
        ctx.learn(bit);
        Ok(bit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of pseudo-random values of every kind the traits write, with skewed odds.
    fn values(n: usize) -> Vec<(u8, u64)> {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (
                    (x % 5) as u8,
                    (x >> 8) % if x.is_multiple_of(3) { 3 } else { 1000 },
                )
            })
            .collect()
    }

    #[test]
    fn reads_back_what_it_wrote() {
        let vals = values(20_000);
        let mut out = Vec::new();
        {
            let mut w = VP8Writer::new(&mut out).unwrap();
            let (mut c1, mut c4, mut tree) = (
                VP8Context::new(),
                [VP8Context::new(); 4],
                [[VP8Context::new(); 8]; 4],
            );
            for &(kind, v) in &vals {
                match kind {
                    0 => w.put(v.is_multiple_of(3), &mut c1).unwrap(),
                    1 => w.put_bypass(v & 1 == 1).unwrap(),
                    2 => w.put_n_bits(v, 10, &mut c4).unwrap(),
                    3 => w.put_unary_encoded((v % 12) as usize, &mut c4).unwrap(),
                    _ => w.put_branched((v % 16) as u8, &mut tree).unwrap(),
                }
            }
            w.finish().unwrap();
        }
        let mut r = VP8Reader::new(&out[..]).unwrap();
        let (mut c1, mut c4, mut tree) = (
            VP8Context::new(),
            [VP8Context::new(); 4],
            [[VP8Context::new(); 8]; 4],
        );
        for (i, &(kind, v)) in vals.iter().enumerate() {
            let got = match kind {
                0 => u64::from(r.get(&mut c1).unwrap() == v.is_multiple_of(3)),
                1 => u64::from(r.get_bypass().unwrap() == (v & 1 == 1)),
                2 => u64::from(r.get_n_bits(10, &mut c4).unwrap() == v & 1023),
                3 => u64::from(r.get_unary_encoded(&mut c4).unwrap() == (v % 12) as usize),
                _ => u64::from(r.get_branched(&mut tree).unwrap() == (v % 16) as u8),
            };
            assert_eq!(got, 1, "value {i} of kind {kind}");
        }
    }

    #[test]
    fn skewed_bits_cost_little_and_a_cut_input_reads_as_zeros() {
        let mut out = Vec::new();
        {
            let mut w = VP8Writer::new(&mut out).unwrap();
            let mut c = VP8Context::new();
            for i in 0..80_000u32 {
                w.put(i.is_multiple_of(100), &mut c).unwrap();
            }
            w.finish().unwrap();
        }
        // The entropy of 1 in 100 is 0.081 bits: 810 bytes, with the rate's cost above it.
        assert!(out.len() < 1000, "{} bytes", out.len());
        let mut r = VP8Reader::new(&out[..out.len() / 2]).unwrap();
        let mut c = VP8Context::new();
        for _ in 0..100_000 {
            r.get(&mut c).unwrap();
        }
    }
}
