//! A block's prior: what a sample of it shows (sign mode, median exponent, symbol counts),
//! written as 4-bit levels that seed the block's counts.

use super::split::read;
use super::split::BitLayout;
use super::symbols::*;
use crate::error::{Error, Result};

/// What a sample of a block shows: whether coding the sign with `M` pays, the median
/// exponent of the non-zero values, and the sample's counts of each `E` symbol and `M`.
pub(crate) struct Survey {
    pub(crate) signed: bool,
    pub(crate) median: u8,
    pub(crate) e: [u32; 257],
    /// Per sign and top 3 mantissa bits (`sign << 3 | m`).
    pub(crate) m: [u32; 16],
}

/// Surveys every 3rd value of `data` (a stride prime to the power-of-two periods tensors
/// tend to have). The sign goes with `M` if, given the exponent, it carries at least 0.02
/// bits less than 1 per value (more symbols per table cost about that).
pub(crate) fn survey<const W: usize>(data: &[u8], f: BitLayout) -> Survey {
    // One count per sampled value, by exponent, sign and top 3 mantissa bits.
    let mut by_em = vec![[0u32; 16]; 256];
    let mut sv = Survey {
        signed: false,
        median: 0,
        e: [0; 257],
        m: [0; 16],
    };
    for v in data.chunks_exact(W).step_by(3) {
        let v = read::<W>(v);
        if v == 0 {
            sv.e[ZERO] += 1;
            continue;
        }
        let e = (v >> (f.low() + 3)) as usize & ((1 << f.ebits) - 1);
        let sign = (v >> (f.bits - 1)) as usize & 1;
        by_em[e][sign << 3 | (v >> f.low()) as usize & 7] += 1;
    }
    let mut counts = vec![[0u64; 2]; 256];
    for ((row, c), n) in by_em.iter().zip(counts.iter_mut()).zip(sv.e.iter_mut()) {
        for (s, &k) in row.iter().enumerate() {
            c[s >> 3] += u64::from(k);
            sv.m[s] += k;
        }
        *n = (c[0] + c[1]) as u32;
    }
    let (mut bits, mut total) = (0f64, 0u64);
    for [a, b] in counts.iter().copied() {
        for c in [a, b] {
            if c > 0 {
                bits -= c as f64 * (c as f64 / (a + b) as f64).log2();
            }
        }
        total += a + b;
    }
    let mut below = 0u64;
    sv.median = counts
        .iter()
        .position(|[a, b]| {
            below += a + b;
            2 * below > total
        })
        .unwrap_or(0) as u8;
    sv.signed = total > 0 && bits < 0.98 * total as f64;
    sv
}

/// Most exponents a prior covers: the span the decode kernels look up in registers.
pub(crate) const WINDOW: usize = 64;
/// A prior's counts are its levels times 2 to this.
pub(crate) const PRIOR_SHIFT: u32 = 3;
/// Counts, in a 4096-value scale, that a block prior's 4-bit levels stand for (about 1.7x
/// apart).
pub(crate) const LEVELS: [u32; 16] = [
    0, 1, 2, 3, 5, 8, 14, 24, 40, 68, 116, 197, 335, 570, 969, 1647,
];

/// The level nearest (geometrically) to `count` of `total`, rescaled to 4096; at least 1 for
/// a count above 0.
pub(crate) fn prior_level(count: u32, total: u64) -> u8 {
    if count == 0 || total == 0 {
        return 0;
    }
    // Compare count * 4096 / total with the geometric midpoints, squared, in integers.
    let c = u128::from(count) << 12;
    let t = u128::from(total);
    let mut q = 1;
    while q < 15 && c * c > u128::from(LEVELS[q] * LEVELS[q + 1]) * t * t {
        q += 1;
    }
    q as u8
}

/// A block prior: the levels of the block's `E` symbols from `lowest` on
/// (then `ZERO`'s) and of its `M` symbols, from a sample; seeds the block's counts so that
/// its first values are coded with tables near the block's own instead of near uniform.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Prior {
    pub(crate) lowest: u8,
    pub(crate) e: Vec<u8>,
    pub(crate) zero: u8,
    pub(crate) m: Vec<u8>,
}

impl Prior {
    /// The prior of a surveyed block whose `M` symbols number `m_syms`.
    pub(crate) fn from_survey(sv: &Survey, m_syms: usize) -> Self {
        let total: u64 = sv.e.iter().map(|&c| u64::from(c)).sum();
        let first = sv.e[..ZERO].iter().position(|&c| c > 0);
        let last = sv.e[..ZERO].iter().rposition(|&c| c > 0);
        let (lowest, e) = match (first, last) {
            // At most `WINDOW` exponents, those of the most values: rarer outliers escape
            // when they come, so the decoder keeps looking exponents up in registers until
            // then.
            (Some(first), Some(last)) => {
                let mass = |a: usize| -> u64 {
                    sv.e[a..(a + WINDOW).min(last + 1)]
                        .iter()
                        .map(|&c| u64::from(c))
                        .sum()
                };
                let start = (first..=last.saturating_sub(WINDOW - 1).max(first))
                    .rev()
                    .max_by_key(|&a| mass(a))
                    .unwrap_or(first);
                let end = (start + WINDOW - 1).min(last);
                // Trimmed to the exponents the sample showed.
                let a = (start..=end).find(|&e| sv.e[e] > 0).unwrap_or(start);
                let b = (a..=end).rev().find(|&e| sv.e[e] > 0).unwrap_or(a);
                (a, (a..=b).map(|e| prior_level(sv.e[e], total)).collect())
            }
            _ => (0, Vec::new()),
        };
        let mut m = [0u32; 16];
        for (s, &c) in sv.m.iter().enumerate() {
            m[s % m_syms] += c;
        }
        let m_total: u64 = m.iter().map(|&c| u64::from(c)).sum();
        Prior {
            lowest: lowest as u8,
            e,
            zero: prior_level(sv.e[ZERO], total),
            m: m[..m_syms]
                .iter()
                .map(|&c| prior_level(c, m_total))
                .collect(),
        }
    }

    /// Appends the prior: lowest exponent, number of exponents, then 4-bit levels two to a
    /// byte (low first): the exponents', `ZERO`'s and the `M` symbols'.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        out.push(self.lowest);
        out.push(self.e.len() as u8);
        let levels: Vec<u8> = self
            .e
            .iter()
            .chain([&self.zero])
            .chain(&self.m)
            .copied()
            .collect();
        out.extend(
            levels
                .chunks(2)
                .map(|p| p[0] | p.get(1).map_or(0, |h| h << 4)),
        );
    }

    /// Reads a prior with `m_syms` `M` levels from the start of `body`; returns it and its
    /// length in bytes.
    pub(crate) fn read(body: &[u8], m_syms: usize) -> Result<(Self, usize)> {
        let bad = || Error::Corrupt("tensor block: prior cut short".into());
        let (&lowest, rest) = body.split_first().ok_or_else(bad)?;
        let (&k, rest) = rest.split_first().ok_or_else(bad)?;
        let k = k as usize;
        // Exponents past 255 do not exist (the encoder writes at most `WINDOW`).
        if lowest as usize + k > ZERO {
            return Err(Error::Corrupt("tensor block: prior out of range".into()));
        }
        let count = k + 1 + m_syms;
        let bytes = rest.get(..count.div_ceil(2)).ok_or_else(bad)?;
        let level = |i: usize| (bytes[i / 2] >> (4 * (i % 2))) & 15;
        let prior = Prior {
            lowest,
            e: (0..k).map(level).collect(),
            zero: level(k),
            m: (k + 1..count).map(level).collect(),
        };
        Ok((prior, 2 + count.div_ceil(2)))
    }
}
