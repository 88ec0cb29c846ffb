//! Tensor block codec. Each value is split into planes: `E`, the exponent (for f64 its top 8
//! bits), `M`, the sign and the next 3 bits (top of the mantissa), and the residual: the
//! remaining low bits. A value that is +0.0 exactly is one more `E` symbol and has neither `M`
//! nor residual. `E` and `M` are coded with rANS: `E` from a 12-bit table of the group's
//! exponent context (the previous group's rounded mean exponent: the local scale, e.g. of an
//! output channel), fitted to that context's counts so far with the block's as a prior (an
//! escape codes a symbol not in the table as 9 raw bits), `M` from an 8-bit table of the
//! value's exponent. Tables are refitted between batches of values
//! (16, 32, ... then every 4096), so within a batch every symbol decodes independently. The
//! residuals go through invariant bit packing (IBP), which stores bits that hardly vary (e.g.
//! the zero low half of widened bf16 weights) once per group. The block's counts start from a
//! prior: 4-bit levels of its `E` and `M` frequencies in a sample; only every other group is
//! counted past the block's first 16384 values; the coder's start states carry the block's last
//! residuals (`carry`).
//!
//! Payload: dtype tag, value count (`u32`), tail length + tail bytes (a partial last value),
//! ways (`u8`), plane layout (`u8`), context base (`u8`), the prior, residual
//! count (`u32`), rANS stream length (`u32`) + stream, then the IBP section of the residuals.

mod interleaved;
mod prior;
mod split;
mod symbols;
mod tables;
#[cfg(test)]
mod tests;

pub(crate) use split::read;
pub(crate) use tables::{Contexts, Tables};

use super::{carry, ibp, DType};
use crate::codecs::block_codec::{BlockCodec, Seen};
use crate::entropy::rans;
use crate::error::{Error, Result};
use crate::format::Codec;
use crate::simd::Kernels;
use prior::{survey, Prior};
use split::{join_all, look_up, split_all, spread_residuals, BitLayout};
use symbols::*;
use tables::BELOW_MEDIAN;

/// Values coded side by side in a group, one coder state each, for a block of `n` values:
/// more ways decode faster but each costs 4 bytes of final state (which start states that
/// carry residuals mostly pay back), and a group's exponent context is the mean of a wider
/// previous group.
fn ways_for(n: usize) -> usize {
    match n {
        WIDE_FROM.. => 64,
        _ => 32,
    }
}
/// Length of batch number `k` (0-based): 16, 16, 32, ..., 2048 fill the first IBP group,
/// then one batch per group.
#[inline(always)]
fn batch_len(k: u32) -> usize {
    match k {
        0 => 16,
        _ => (8usize << k.min(9)).min(MAX_BATCH),
    }
}

/// Value width `W` (bytes) and exponent bits `EB` are constants so every shift is one.
fn encode_w<const W: usize, const EB: u32>(data: &[u8], kernel: Kernels, out: &mut Vec<u8>) {
    let mut f = BitLayout {
        bits: 8 * W as u32,
        ebits: EB,
        signed: false,
    };
    let sv = survey::<W>(data, f);
    // An fp8 value's sign is its whole residual: coding it with `M` would leave none.
    f.signed = sv.signed && f.low() > 0;
    let base = (sv.median as u32).saturating_sub(BELOW_MEDIAN) as u8;
    let mut ctx = Contexts::from_base(base);
    let n = data.len() / W;
    let mut tables = Tables::new(f, false);
    let prior = Prior::from_survey(&sv, tables.m_syms);
    tables.seed(&prior);
    let ways = ways_for(n);
    let mut syms = symbols::Symbols::new(n, ways);
    let mut em = vec![0u16; MAX_BATCH];
    let mut group_ctx = [0u8; MAX_BATCH / 16];
    // Residuals not yet packed, `residual[..held]`: fewer than an IBP group (GROUP
    // residuals, whatever the batches) between batches.
    let mut residual = vec![0u64; ibp::GROUP + MAX_BATCH];
    let mut held = 0;
    let mut carried = Vec::new();
    let mut packer = ibp::Packer::new(f.rbits(), n);
    let (mut i, mut k, mut residuals) = (0usize, 0u32, 0u32);
    while i < n {
        let end = (i + batch_len(k)).min(n);
        let em = &mut em[..end - i];
        let rest = &mut residual[held..held + em.len()];
        let zeros = split_all::<W, EB>(&data[i * W..end * W], f, em, rest);
        // The residuals of the values other than +0.0, in order.
        if zeros > 0 {
            // Without a branch per value: every residual is moved, and kept if not +0.0's
            // (`kept <= held + j`, so no residual is overwritten before it is read).
            let mut kept = held;
            for (j, &v) in em.iter().enumerate() {
                residual[kept] = residual[held + j];
                kept += usize::from(v != ZERO_EM);
            }
        }
        held += em.len() - zeros;
        residuals += (end - i - zeros) as u32;
        if end == n {
            // The block's last residuals go to the coder's start states, not to IBP.
            let v = carry::count(ways, f.rbits(), em.len() - zeros);
            carried.extend_from_slice(&residual[held - v..held]);
            held -= v;
            residuals -= v as u32;
        }
        if held >= ibp::GROUP {
            packer.group(&residual[..ibp::GROUP]);
            residual.copy_within(ibp::GROUP..held, 0);
            held -= ibp::GROUP;
        }
        // Every symbol of the batch from the tables fitted before it, each group's exponent
        // from its context's.
        let m_enc: &[u32; 4096] = tables
            .m_enc
            .as_flattened()
            .try_into()
            .expect("256 rows of 16");
        for (gi, g) in (i..end).step_by(ways).enumerate() {
            let ge = (g + ways).min(end);
            let c = ctx.next as usize;
            group_ctx[gi] = c as u8;
            let row = &tables.e_enc[c];
            let group = &em[g - i..ge - i];
            let (e_syms, m_syms) = (&mut syms.e[g..ge], &mut syms.m[g..ge]);
            let escaped = look_up(row, m_enc, group, e_syms, m_syms);
            // Exponents not in the context's table yet take the escape and their raw bits.
            if escaped {
                let escape = tables.escape(c);
                for (j, (&v, e_sym)) in group.iter().zip(e_syms).enumerate() {
                    if *e_sym >> 16 == 0 {
                        syms.escapes.push(((g + j) as u32, v >> 4));
                        *e_sym = escape;
                    }
                }
            }
            ctx.follow_group(group);
            syms.groups.push((g as u32, (ge - g) as u32));
        }
        let groups = (end - i).div_ceil(ways);
        let span = tables.count_batch(em, &group_ctx[..groups], ways, i);
        tables.end_batch(span);
        i = end;
        k += 1;
    }
    tables.recycle();
    if held > 0 {
        packer.group(&residual[..held]);
    }
    out.push(ways as u8);
    out.push(u8::from(f.signed));
    out.push(base);
    prior.write(out);
    out.extend_from_slice(&residuals.to_le_bytes());
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    let start = carry::states(carried, f.rbits(), ways);
    kernel.encode(&mut syms, &start, out);
    syms.recycle();
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
    packer.finish(out);
}

/// The residuals of a block in order, unpacked an IBP group at a time.
struct Residuals<'a, R> {
    unpacker: ibp::Unpacker<'a>,
    /// Residuals not unpacked yet.
    left: usize,
    /// `RESIDUAL_GROUPS` groups' room; the residuals not taken yet are `buf[at..end]`.
    buf: Vec<R>,
    at: usize,
    end: usize,
}

/// IBP groups' room in `Residuals::buf`: the residuals left over are moved to its start
/// only when the next group would not fit after them.
const RESIDUAL_GROUPS: usize = 4;

impl<R: ibp::Word> Residuals<'_, R> {
    /// The next `k` (at most GROUP) residuals.
    fn take(&mut self, k: usize) -> Result<&[R]> {
        if self.end - self.at < k {
            let g = self.left.min(ibp::GROUP);
            if self.end + g > self.buf.len() {
                self.buf.copy_within(self.at..self.end, 0);
                self.end -= self.at;
                self.at = 0;
            }
            self.unpacker.group(&mut self.buf[self.end..self.end + g])?;
            self.end += g;
            self.left -= g;
            if self.end - self.at < k {
                return Err(Error::Corrupt("tensor block: residuals run out".into()));
            }
        }
        self.at += k;
        Ok(&self.buf[self.at - k..self.at])
    }
}

/// Decodes a block of `W`-byte values with `EB` exponent bits, residuals unpacked as `R`
/// (`u32` for values of at most 4 bytes).
fn decode_w<const W: usize, const EB: u32, R: ibp::Word>(
    body: &[u8],
    n: usize,
    kernel: Kernels,
    out: &mut Vec<u8>,
    seen: &mut dyn FnMut(&[u8]),
) -> Result<()> {
    let bad = |what: &str| Error::Corrupt(format!("tensor block: {what}"));
    // Ways, sign mode and context base; the prior follows.
    let top_len = 3;
    let top = body
        .get(..top_len)
        .ok_or_else(|| bad("missing way and stream lengths"))?;
    let ways = top[0] as usize;
    if ways != 32 && ways != 64 {
        return Err(bad("unknown way count"));
    }
    if top[1] > 1 || (top[1] == 1 && W == 1) {
        return Err(bad("unknown sign mode"));
    }
    let f = BitLayout {
        bits: 8 * W as u32,
        ebits: EB,
        signed: top[1] == 1,
    };
    let mut ctx = Contexts::from_base(top[2]);
    let mut tables = Tables::new(f, true);
    let (prior, prior_len) = Prior::read(&body[top_len..], tables.m_syms)?;
    tables.seed(&prior);
    let mut head_len = top_len + prior_len;
    let head = body
        .get(head_len..head_len + 8)
        .ok_or_else(|| bad("missing way and stream lengths"))?;
    head_len += 8;
    let count = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
    if count > n {
        return Err(bad("more residuals than values"));
    }
    let stream = body
        .get(head_len..head_len + len)
        .ok_or_else(|| bad("stream cut short"))?;
    let rest = &body[head_len + len..];
    let mut residuals = Residuals {
        unpacker: ibp::Unpacker::for_level(rest, f.rbits(), count)?,
        left: count,
        buf: vec![R::default(); RESIDUAL_GROUPS * ibp::GROUP],
        at: 0,
        end: 0,
    };
    let mut em = vec![0u16; MAX_BATCH];
    let mut group_ctx = [0u8; MAX_BATCH / 16];
    // A batch's residuals spread over its values, for batches with +0.0 values.
    let mut spread_buf = Vec::new();
    spread_buf.resize(MAX_BATCH, R::default());
    // The last batch's residuals with those the start states carry, and the states the
    // decoder must end on (found in the last batch; with no values, carrying nothing).
    let mut last = Vec::new();
    let mut x0 = carry::states([], f.rbits(), ways);
    let (mut x, mut words) = rans::Decoder::new(stream, ways)?.split();
    let start = out.len();
    out.reserve(n * W);
    // Written batch by batch below, every byte once; not zeroed first.
    let values = &mut out.spare_capacity_mut()[..n * W];
    let (mut i, mut k) = (0usize, 0u32);
    while i < n {
        let end = (i + batch_len(k)).min(n);
        let em = &mut em[..end - i];
        let groups = &mut group_ctx[..em.len().div_ceil(ways)];
        kernel.decode_batch(&mut x, &mut words, &tables, em, ways, &mut ctx, groups);
        let span = tables.count_batch(em, groups, ways, i);
        let zeros = span.zeros;
        let nonzero = em.len() - zeros;
        // The last batch's last residuals are in the coder's start states, on which the
        // decoder has just ended.
        let carries = end == n;
        let v = match carries {
            true => carry::count(ways, f.rbits(), nonzero),
            false => 0,
        };
        let mut res = residuals.take(nonzero - v)?;
        if carries {
            last.clear();
            last.extend_from_slice(res);
            carry::take(&x, f.rbits(), ways, v, &mut last)?;
            x0 = x;
            res = &last;
        }
        let slots = &mut values[i * W..end * W];
        match (zeros > 0, f.signed) {
            (false, true) => join_all::<W, EB, true, false, R>(em, res, slots),
            (false, false) => join_all::<W, EB, false, false, R>(em, res, slots),
            (true, signed) => {
                // Each value's residual in its place first (+0.0 values take none).
                let spread = &mut spread_buf[..em.len()];
                spread_residuals(em, res, spread);
                match signed {
                    true => join_all::<W, EB, true, true, R>(em, spread, slots),
                    false => join_all::<W, EB, false, true, R>(em, spread, slots),
                }
            }
        }
        // SAFETY: `join_all` wrote every byte of `slots` (W per value of the batch).
        seen(unsafe { std::slice::from_raw_parts(slots.as_ptr().cast::<u8>(), slots.len()) });
        tables.end_batch(span);
        i = end;
        k += 1;
    }
    if residuals.left != 0 || residuals.at != residuals.end {
        return Err(bad("residuals left over"));
    }
    if residuals.unpacker.consumed() != rest.len() {
        return Err(bad("unexpected bytes after the data"));
    }
    rans::Decoder::join(x, words).finish_at(&x0)?;
    tables.recycle();
    // SAFETY: the batches cover values 0..n and every value's W bytes were written.
    unsafe { out.set_len(start + n * W) };
    Ok(())
}

/// Codes `data`, an array of `dtype` values (a partial last value is kept raw).
pub fn encode(data: &[u8], dtype: DType) -> Vec<u8> {
    let mut out = Vec::new();
    encode_into(data, dtype, &mut out);
    out
}

/// `encode` into `out`, replacing what it held (its room is reused).
pub fn encode_into(data: &[u8], dtype: DType, out: &mut Vec<u8>) {
    out.clear();
    encode_to(data, dtype, crate::simd::kernels(), out)
}

/// `encode`, appended to `out`.
pub fn encode_append(data: &[u8], dtype: DType, out: &mut Vec<u8>) {
    encode_to(data, dtype, crate::simd::kernels(), out)
}

/// The planes codec for values of `dtype`.
pub struct Planes {
    /// The values' type.
    pub dtype: DType,
}

impl BlockCodec for Planes {
    fn codec(&self) -> Codec {
        Codec::Planes
    }

    fn encode_into(&self, data: &[u8], out: &mut Vec<u8>) -> bool {
        encode_into(data, self.dtype, out);
        true
    }

    fn decode(
        &self,
        payload: &[u8],
        raw_len: usize,
        out: &mut Vec<u8>,
        seen: &mut dyn FnMut(&[u8]),
    ) -> Result<Seen> {
        decode_as(payload, raw_len, out, seen)?;
        Ok(Seen::All)
    }
}

#[cfg(test)]
fn encode_with(data: &[u8], dtype: DType, kernel: Kernels) -> Vec<u8> {
    let mut out = Vec::new();
    encode_to(data, dtype, kernel, &mut out);
    out
}

/// Appends the payload of `data` to `out`.
fn encode_to(data: &[u8], dtype: DType, kernel: Kernels, out: &mut Vec<u8>) {
    let w = dtype.width();
    let n = data.len() / w;
    let tail = &data[n * w..];
    // Room for a payload as large as the data (weights take ~0.85 of it): never regrown.
    out.reserve(data.len() + 64);
    out.push(dtype.tag());
    out.extend_from_slice(&(n as u32).to_le_bytes());
    out.push(tail.len() as u8);
    out.extend_from_slice(tail);
    let body = &data[..n * w];
    match dtype {
        DType::F16 => encode_w::<2, 5>(body, kernel, out),
        DType::BF16 => encode_w::<2, 8>(body, kernel, out),
        DType::F32 => encode_w::<4, 8>(body, kernel, out),
        DType::F64 => encode_w::<8, 8>(body, kernel, out),
        // fp8: `E` is the top 4 bits below the sign (E5M2's exponent without its last bit),
        // `M` the sign and the 3 bits below, so a value has no residual.
        DType::F8E4M3 | DType::F8E5M2 => encode_w::<1, 4>(body, kernel, out),
    }
}

/// Decodes a payload written by `encode` that must hold exactly `raw_len` bytes.
pub fn decode(payload: &[u8], raw_len: usize) -> Result<Vec<u8>> {
    decode_with(payload, raw_len, crate::simd::kernels())
}

/// Decodes a payload, appending it to `out`; `seen` gets the output piece by piece, in order, as it
/// is written (while it is still in cache).
pub(super) fn decode_as(
    payload: &[u8],
    raw_len: usize,
    out: &mut Vec<u8>,
    seen: &mut dyn FnMut(&[u8]),
) -> Result<()> {
    decode_into(payload, raw_len, crate::simd::kernels(), out, seen)
}

fn decode_with(payload: &[u8], raw_len: usize, kernel: Kernels) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    decode_into(payload, raw_len, kernel, &mut out, &mut |_| {})?;
    Ok(out)
}

fn decode_into(
    payload: &[u8],
    raw_len: usize,
    kernel: Kernels,
    out: &mut Vec<u8>,
    seen: &mut dyn FnMut(&[u8]),
) -> Result<()> {
    let bad = |what: &str| Error::Corrupt(format!("tensor block: {what}"));
    let (&tag, rest) = payload.split_first().ok_or_else(|| bad("empty"))?;
    let dtype = DType::from_tag(tag)?;
    let w = dtype.width();
    let head = rest.get(..5).ok_or_else(|| bad("header cut short"))?;
    let n = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let tail_len = head[4] as usize;
    if tail_len >= w || n.checked_mul(w).and_then(|b| b.checked_add(tail_len)) != Some(raw_len) {
        return Err(bad("sizes do not match the block"));
    }
    let tail = rest
        .get(5..5 + tail_len)
        .ok_or_else(|| bad("tail cut short"))?;
    let body = &rest[5 + tail_len..];
    out.reserve(raw_len);
    match dtype {
        DType::F16 => decode_w::<2, 5, u32>(body, n, kernel, out, seen)?,
        DType::BF16 => decode_w::<2, 8, u32>(body, n, kernel, out, seen)?,
        DType::F32 => decode_w::<4, 8, u32>(body, n, kernel, out, seen)?,
        DType::F64 => decode_w::<8, 8, u64>(body, n, kernel, out, seen)?,
        DType::F8E4M3 | DType::F8E5M2 => decode_w::<1, 4, u32>(body, n, kernel, out, seen)?,
    }
    out.extend_from_slice(tail);
    seen(tail);
    Ok(())
}
