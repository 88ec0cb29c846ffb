//! The bit fields of a value as the planes codec splits it (`E`, `M`, the residual), and the
//! per-value work of a batch: splitting, looking symbols up, joining values back.

use super::symbols::*;
use crate::codecs::float::ibp;
use crate::simd::kernel_variants;
use std::mem::MaybeUninit;

/// Bit layout of one dtype's values as coded here.
#[derive(Clone, Copy)]
pub(crate) struct BitLayout {
    /// Width of a value in bits.
    pub(crate) bits: u32,
    /// Bits of `E`.
    pub(crate) ebits: u32,
    /// Whether the sign is coded with `M` (else it leads the residual).
    pub(crate) signed: bool,
}

impl BitLayout {
    /// Bits below `M`.
    #[inline(always)]
    pub(crate) fn low(self) -> u32 {
        self.bits - 1 - self.ebits - 3
    }

    /// Width of the residual.
    #[inline(always)]
    pub(crate) fn rbits(self) -> u32 {
        self.low() + u32::from(!self.signed)
    }

    /// Splits a value into `E << 4 | M` (M = top 3 mantissa bits, with the sign above them
    /// if `signed`) and the residual; +0.0 gives `ZERO_EM`.
    #[inline(always)]
    pub(crate) fn split(self, v: u64) -> (u16, u64) {
        if v == 0 {
            return (ZERO_EM, 0);
        }
        let low = self.low();
        let e = (v >> (low + 3)) as u16 & ((1 << self.ebits) - 1);
        let m = (v >> low) as u16 & 7;
        let sign = v >> (self.bits - 1);
        let rest = v & ((1u64 << low) - 1);
        if self.signed {
            (e << 4 | (sign as u16) << 3 | m, rest)
        } else {
            (e << 4 | m, sign << low | rest)
        }
    }

    /// Joins `E << 4 | M` (not `ZERO_EM`) and the residual back into a value, in `u32` for
    /// values of at most 32 bits (twice as many to a vector) or `u64`.
    #[inline(always)]
    pub(crate) fn join<T: ibp::Word>(self, em: u16, r: T) -> T {
        let low = self.low();
        let top = T::from((em >> 4) & 0xff) << 3 | T::from(em & 7);
        let sign = if self.signed {
            T::from((em >> 3) & 1)
        } else {
            r >> low
        };
        let one = T::from(1);
        sign << (self.bits - 1) | top << low | (r & ((one << low) - one))
    }
}

kernel_variants! {
/// Splits each W-byte value of `data` into `em` (`E << 4 | M`) and `rest` (the residual);
/// returns how many were +0.0 (with the widest vectors allowed).
pub(crate) fn split_all [const W: usize, const EB: u32] [W, EB]
    (data: &[u8], f: BitLayout, em: &mut [u16], rest: &mut [u64]) -> usize {
    // The widths as constants (every shift by a constant).
    let f = BitLayout {
        bits: 8 * W as u32,
        ebits: EB,
        signed: f.signed,
    };
    let mut zeros = 0;
    for ((v, o), r) in data.chunks_exact(W).zip(em.iter_mut()).zip(rest.iter_mut()) {
        let (top, low) = f.split(read::<W>(v));
        *o = top;
        *r = low;
        zeros += usize::from(top == ZERO_EM);
    }
    zeros
}
}

kernel_variants! {
/// Writes the symbols of a group's values given as `E << 4 | M`: `E` from its context's
/// `row` (an exponent not in it yet gets freq 0), `M` from `m_enc` (0 for +0.0); returns
/// whether any exponent was not in the row (with the widest vectors allowed).
pub(crate) fn look_up [] [] (
    row: &[u32; E_SYMS],
    m_enc: &[u32; 4096],
    em: &[u16],
    e_syms: &mut [u32],
    m_syms: &mut [u32],
) -> bool {
    let mut escaped = false;
    for ((&v, e_sym), m_sym) in em.iter().zip(e_syms).zip(m_syms) {
        let ee = row[(v as usize >> 4).min(ZERO)];
        escaped |= ee >> 16 == 0;
        *e_sym = ee;
        // No mantissa top for +0.0 (a zero symbol is skipped).
        *m_sym = m_enc[v as usize & 0xfff] & 0u32.wrapping_sub(u32::from(v != ZERO_EM));
    }
    escaped
}
}

/// Gives each value of `em` its residual in `out`: the next of `res` (the residuals of the
/// values that are not +0.0, in order), 0 for +0.0; without a branch per value.
pub(crate) fn spread_residuals<R: ibp::Word>(em: &[u16], res: &[R], out: &mut [R]) {
    let mut j = 0;
    for (o, &v) in out.iter_mut().zip(em) {
        *o = res.get(j).copied().unwrap_or_default();
        j += usize::from(v != ZERO_EM);
    }
}

kernel_variants! {
/// Joins each `E << 4 | M` with its residual into `out`, W bytes per value, the sign coded
/// with `M` if `S`; `ZERO_EM` (only if `Z`) gives +0.0 (with the widest vectors allowed).
pub(crate) fn join_all [const W: usize, const EB: u32, const S: bool, const Z: bool, R: ibp::Word]
    [W, EB, S, Z, R]
    (em: &[u16], res: &[R], out: &mut [MaybeUninit<u8>]) {
    let f = BitLayout {
        bits: 8 * W as u32,
        ebits: EB,
        signed: S,
    };
    for ((o, &v), &r) in out.chunks_exact_mut(W).zip(em).zip(res) {
        // Values of at most 4 bytes in 32-bit lanes (twice as many to a vector).
        let zero = Z && v == ZERO_EM;
        let bytes = match W <= 4 {
            true => {
                let joined = f.join(v, r.low32());
                u64::from(if zero { 0 } else { joined }).to_le_bytes()
            }
            false => {
                let joined = f.join(v, r.to_u64());
                (if zero { 0 } else { joined }).to_le_bytes()
            }
        };
        let value: [u8; W] = std::array::from_fn(|t| bytes[t]);
        // SAFETY: `o` is W bytes long, and `[u8; W]` has alignment 1.
        unsafe { o.as_mut_ptr().cast::<[u8; W]>().write(value) };
    }
}
}

/// The first `W` bytes of `v` as a little-endian integer.
#[inline(always)]
pub(crate) fn read<const W: usize>(v: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b[..W].copy_from_slice(&v[..W]);
    u64::from_le_bytes(b)
}
