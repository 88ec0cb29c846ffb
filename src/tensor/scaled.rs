//! Scaled-integers codec of the tensor path, for f32 arrays whose values are integers times a
//! scale that holds over a stretch of values (dequantized weights: a scale per tensor, row or
//! group). Each value is coded as its integer `k` under the current scale `s` (the value is
//! exactly `k * s` in f32 arithmetic), or as a miss; the encoder moves to a new scale where a
//! value misses and the values ahead fit another scale better.
//!
//! Payload: dtype tag (f32), value count (`u32`), tail length + tail bytes, scale count
//! (`u32`) + the scales (f32 bits, `u32` each), miss count (`u32`), length (`u32`) + tensor
//! payload of the misses, then the rANS stream of the symbols: 0 a miss, 1 the next scale (the
//! value's own symbol follows), 2 the value -0.0, `3 + zigzag(k)` for `|k| <= K_MAX`.

use super::adaptive::STATES;
use super::adaptive::{batch_end, Fields, Table, MAX_BATCH};
use super::DType;
use crate::coder::rans;
use crate::error::{Error, Result};

/// Largest integer magnitude coded as a level.
const K_MAX: i32 = 1023;
/// Symbols: a miss, a new scale, -0.0, and the levels `-K_MAX..=K_MAX`.
const SYMBOLS: usize = LEVEL + 2 * K_MAX as usize + 1;
/// Symbol of a miss.
const MISS: usize = 0;
/// Symbol of a new scale.
const NEW_SCALE: usize = 1;
/// Symbol of -0.0 (what a negative integer rounded to zero times a scale gives).
const MINUS_ZERO: usize = 2;
/// Symbol of level 0; level `k` is `LEVEL + zigzag(k)`.
const LEVEL: usize = 3;
/// Bits of -0.0.
const MINUS_ZERO_BITS: u32 = 0x8000_0000;
/// Values looked ahead to choose a scale.
const WINDOW: usize = 32;
/// A new scale must fit this many more of the values ahead than the current one.
const MIN_GAIN: usize = 4;
/// Values between two tries for a new scale after a failed one, at first and at most (it
/// doubles after each failure).
const RETRY: usize = 16;
const MAX_RETRY: usize = 4096;
/// Windows looked at, evenly spaced, to tell whether a block fits scales at all.
const PROBES: usize = 16;

/// `k` if `v` (f32 bits) is exactly `k * s` in f32 arithmetic with `|k| <= K_MAX`.
#[inline(always)]
fn level(v: u32, s: f32) -> Option<i32> {
    let q = f32::from_bits(v) / s;
    if q.is_nan() || q.abs() > K_MAX as f32 {
        return None;
    }
    // Rounded half away from zero without a call (the baseline target has no rounding
    // instruction); a wrong `k` only fails the check below.
    let k = (q + 0.5f32.copysign(q)) as i32;
    ((k as f32 * s).to_bits() == v).then_some(k)
}

#[inline(always)]
fn zigzag(k: i32) -> usize {
    ((k << 1) ^ (k >> 31)) as u32 as usize
}

#[inline(always)]
fn unzigzag(z: usize) -> i32 {
    let z = z as u32;
    ((z >> 1) as i32) ^ -((z & 1) as i32)
}

/// The f32 value (bits) at index `i` of `data`.
#[inline(always)]
fn at(data: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([
        data[4 * i],
        data[4 * i + 1],
        data[4 * i + 2],
        data[4 * i + 3],
    ])
}

/// How many of `vals` are levels of `s` or -0.0 (which has its own symbol).
fn fits(vals: &[u32], s: f32) -> usize {
    vals.iter()
        .filter(|&&v| v == MINUS_ZERO_BITS || level(v, s).is_some())
        .count()
}

/// The scale that most of `vals` are levels of, among the smallest non-zero magnitude
/// divided by 1 to 8 (and its neighbours by one ulp), with how many: the first such quotient
/// that they all are levels of, else the most fitting, ties going to the scale that more of
/// `more` (the values after them) are levels of, then to the first.
fn best_scale(vals: &[u32], more: &[u32]) -> Option<(f32, usize)> {
    let small = vals
        .iter()
        .map(|&v| f32::from_bits(v).abs())
        .filter(|x| x.is_normal())
        .fold(f32::INFINITY, f32::min);
    if !small.is_finite() {
        return None;
    }
    // (scale, hits, hits in `more` once computed)
    let mut best: Option<(f32, usize, Option<usize>)> = None;
    for j in 1..=8 {
        let c = (small / j as f32).to_bits();
        for s in [c, c.wrapping_sub(1), c.wrapping_add(1)] {
            let s = f32::from_bits(s);
            if !s.is_normal() || s <= 0.0 {
                continue;
            }
            let n = fits(vals, s);
            // The smallest value itself (or an exact fraction of it) fitting them all.
            if n == vals.len() && s.to_bits() == c {
                return Some((s, n));
            }
            best = match best {
                None => Some((s, n, None)),
                Some((_, b, _)) if n > b => Some((s, n, None)),
                Some((bs, b, bm)) if n == b => {
                    let bm = bm.unwrap_or_else(|| fits(more, bs));
                    let m = fits(more, s);
                    match m > bm {
                        true => Some((s, n, Some(m))),
                        false => Some((bs, b, Some(bm))),
                    }
                }
                keep => keep,
            };
        }
    }
    best.map(|(s, n, _)| (s, n))
}

/// Whether `data`, an f32 array, looks like scaled integers: in most of `PROBES` evenly
/// spaced windows, three quarters of the values are levels of one scale.
pub fn plausible(data: &[u8]) -> bool {
    let n = data.len() / 4;
    if n < WINDOW {
        return false;
    }
    let step = (n - WINDOW) / (PROBES - 1).max(1);
    let good = (0..PROBES)
        .filter(|p| {
            let vals: Vec<u32> = (p * step..p * step + WINDOW).map(|i| at(data, i)).collect();
            best_scale(&vals, &[]).is_some_and(|(_, hits)| 4 * hits >= 3 * WINDOW)
        })
        .count();
    2 * good > PROBES
}

/// Codes `data`, an f32 array, into `out`.
pub fn encode_into(data: &[u8], out: &mut Vec<u8>) {
    let n = data.len() / 4;
    let tail = &data[n * 4..];
    let mut syms: Vec<u16> = Vec::with_capacity(n + n / 64);
    let (mut scales, mut misses) = (Vec::new(), Vec::new());
    let mut scale: Option<f32> = None;
    let (mut next_try, mut retry) = (0, RETRY);
    let mut ahead = Vec::with_capacity(4 * WINDOW);
    for i in 0..n {
        let v = at(data, i);
        let mut k = scale.and_then(|s| level(v, s));
        if k.is_none() && v != MINUS_ZERO_BITS && i >= next_try {
            ahead.clear();
            ahead.extend((i..n.min(i + 4 * WINDOW)).map(|j| at(data, j)));
            let (window, more) = ahead.split_at(ahead.len().min(WINDOW));
            let now = scale.map_or(0, |s| fits(window, s));
            // A lone miss among values that fit the scale is not a reason to look further.
            let lone = 4 * now >= 3 * window.len();
            match best_scale(window, more).filter(|_| !lone) {
                Some((s, hits)) if hits >= now + MIN_GAIN && 2 * hits >= window.len() => {
                    scale = Some(s);
                    scales.push(s.to_bits());
                    syms.push(NEW_SCALE as u16);
                    k = level(v, s);
                    retry = RETRY;
                }
                _ if lone => {}
                _ => {
                    next_try = i + retry;
                    retry = (2 * retry).min(MAX_RETRY);
                }
            }
        }
        match k {
            Some(k) => syms.push((LEVEL + zigzag(k)) as u16),
            None if v == MINUS_ZERO_BITS => syms.push(MINUS_ZERO as u16),
            None => {
                syms.push(MISS as u16);
                misses.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    let mut tab = Table::new(SYMBOLS, LEVEL + 1, false);
    let mut enc = rans::Encoder::new(syms.len(), STATES);
    tab.put_all(&syms, &mut enc);
    out.clear();
    out.push(DType::F32.tag());
    out.extend_from_slice(&(n as u32).to_le_bytes());
    out.push(tail.len() as u8);
    out.extend_from_slice(tail);
    out.extend_from_slice(&(scales.len() as u32).to_le_bytes());
    for s in &scales {
        out.extend_from_slice(&s.to_le_bytes());
    }
    out.extend_from_slice(&((misses.len() / 4) as u32).to_le_bytes());
    let inner = super::encode(&misses, DType::F32);
    out.extend_from_slice(&(inner.len() as u32).to_le_bytes());
    out.extend_from_slice(&inner);
    enc.finish(out);
}

/// Decodes a payload of archive format `version` (10 and later) into `out` (`raw_len` bytes).
pub fn decode(payload: &[u8], raw_len: usize, version: u16, out: &mut Vec<u8>) -> Result<()> {
    let corrupt = |what: &str| Error::Corrupt(format!("scaled-integers block: {what}"));
    let mut f = Fields::new(payload, "scaled-integers");
    if DType::from_tag(f.take(1)?[0])? != DType::F32 {
        return Err(corrupt("not f32"));
    }
    let n = f.u32()? as usize;
    let t = f.take(1)?[0] as usize;
    let tail = f.take(t)?;
    if t >= 4 || n.checked_mul(4).and_then(|b| b.checked_add(t)) != Some(raw_len) {
        return Err(corrupt("length does not match its record"));
    }
    let count = f.u32()? as usize;
    if count > n {
        return Err(corrupt("more scales than values"));
    }
    let scales: Vec<f32> = f
        .take(4 * count)?
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let m = f.u32()? as usize;
    if m > n {
        return Err(corrupt("more misses than values"));
    }
    let inner_len = f.u32()? as usize;
    let inner = f.take(inner_len)?;
    let mut misses = Vec::new();
    super::decode_version(inner, m * 4, version, &mut misses, &mut |_| {})?;
    out.clear();
    out.resize(raw_len, 0);
    let (body, end_bytes) = out.split_at_mut(n * 4);
    end_bytes.copy_from_slice(tail);
    let (mut st, mut words) = rans::Decoder::new(f.rest, STATES)?.split();
    let mut tab = Table::new(SYMBOLS, LEVEL + 1, true);
    let total = n + count;
    let mut syms = [0u16; MAX_BATCH];
    let (mut done, mut end) = (0, batch_end(0));
    let (mut misses, mut scales) = (misses.chunks_exact(4), scales.into_iter());
    let mut have_scale = false;
    let mut scale = f32::NAN;
    let mut at = 0;
    while done < total {
        let len = MAX_BATCH.min(total - done);
        tab.get_span(&mut st, &mut words, done, &mut end, &mut syms[..len])?;
        done += len;
        let mut i = 0;
        while i < len {
            // Runs of 16 levels or -0.0 under the current scale, without a branch per value.
            if let (true, Some(run), Some(o)) = (
                have_scale,
                syms[..len].get(i..i + 16),
                body.get_mut(4 * at..4 * at + 64),
            ) {
                if run.iter().fold(u16::MAX, |m, &s| m.min(s)) as usize >= MINUS_ZERO {
                    let mut v = [0u32; 16];
                    for (v, &s) in v.iter_mut().zip(run) {
                        let z = s as i32 - LEVEL as i32;
                        let level = (((z >> 1) ^ -(z & 1)) as f32 * scale).to_bits();
                        *v = match s as usize == MINUS_ZERO {
                            true => MINUS_ZERO_BITS,
                            false => level,
                        };
                    }
                    for (o, v) in o.chunks_exact_mut(4).zip(v) {
                        o.copy_from_slice(&v.to_le_bytes());
                    }
                    i += 16;
                    at += 16;
                    continue;
                }
            }
            let s = syms[i] as usize;
            i += 1;
            if s >= LEVEL && at < n && have_scale {
                let v = unzigzag(s - LEVEL) as f32 * scale;
                body[4 * at..4 * at + 4].copy_from_slice(&v.to_le_bytes());
                at += 1;
                continue;
            }
            if s == NEW_SCALE {
                scale = scales.next().ok_or_else(|| corrupt("too few scales"))?;
                have_scale = true;
                continue;
            }
            let o = body
                .get_mut(4 * at..4 * at + 4)
                .ok_or_else(|| corrupt("too many values"))?;
            match s {
                MISS => o.copy_from_slice(misses.next().ok_or_else(|| corrupt("too few misses"))?),
                MINUS_ZERO => o.copy_from_slice(&MINUS_ZERO_BITS.to_le_bytes()),
                _ => return Err(corrupt("a level before any scale")),
            }
            at += 1;
        }
    }
    if at != n || misses.next().is_some() || scales.next().is_some() {
        return Err(corrupt("counts do not match"));
    }
    rans::Decoder::join(st, words).finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::xorshift;

    /// `rows` rows of `cols` f32 values: integers in `-levels..=levels` (about normal) times
    /// a scale per row.
    fn dequantized(rows: usize, cols: usize, levels: u64, seed: u64) -> Vec<u8> {
        let mut x = seed;
        let mut out = Vec::new();
        for _ in 0..rows {
            let scale = 0.001 + (xorshift(&mut x) % 1000) as f32 * 1e-5;
            for _ in 0..cols {
                let q = (0..4)
                    .map(|_| xorshift(&mut x) % (levels / 2 + 1))
                    .sum::<u64>();
                let q = q as f32 - (2 * (levels / 2)) as f32;
                out.extend_from_slice(&(q * scale).to_le_bytes());
            }
        }
        out
    }

    fn roundtrip(data: &[u8]) -> usize {
        let mut p = Vec::new();
        encode_into(data, &mut p);
        let mut out = Vec::new();
        decode(&p, data.len(), crate::format::VERSION, &mut out).unwrap();
        assert!(out == data, "{} bytes", data.len());
        p.len()
    }

    #[test]
    fn levels_round_trip() {
        for k in [-K_MAX, -5, -1, 0, 1, 7, K_MAX] {
            assert_eq!(unzigzag(zigzag(k)), k);
            assert!(LEVEL + zigzag(k) < SYMBOLS);
        }
        let data = dequantized(50, 300, 15, 7);
        for cut in [0, 1, 4, 5, 127, 999, data.len() - 3, data.len()] {
            roundtrip(&data[..cut]);
        }
        // Values that fit no scale (noise, NaNs, -0.0) code as misses.
        let mut x = 9;
        let mut noise: Vec<u8> = (0..40_000).map(|_| xorshift(&mut x) as u8).collect();
        noise[..4].copy_from_slice(&(-0.0f32).to_le_bytes());
        noise[4..8].copy_from_slice(&f32::NAN.to_le_bytes());
        roundtrip(&noise);
        let mut mixed = data.clone();
        mixed.extend_from_slice(&noise);
        mixed.extend_from_slice(&data);
        roundtrip(&mixed);
    }

    #[test]
    fn scaled_integers_code_small_and_are_recognised() {
        // 29 levels (std 4.6) and a scale per row of 768: about 4.2 bits a value.
        let data = dequantized(300, 768, 15, 3);
        assert!(plausible(&data));
        let bytes = roundtrip(&data);
        assert!(bytes * 7 < data.len(), "{bytes} of {}", data.len());
        let mut x = 5;
        let noise: Vec<u8> = (0..100_000).map(|_| xorshift(&mut x) as u8).collect();
        assert!(!plausible(&noise));
    }

    #[test]
    fn corrupt_payloads_are_errors() {
        let data = dequantized(20, 200, 15, 9);
        let mut p = Vec::new();
        encode_into(&data, &mut p);
        let mut out = Vec::new();
        for cut in [0, 1, 5, 9, 14, p.len() / 2, p.len() - 1] {
            assert!(decode(&p[..cut], data.len(), crate::format::VERSION, &mut out).is_err());
        }
        assert!(decode(&p, data.len() + 4, crate::format::VERSION, &mut out).is_err());
        for at in (0..p.len()).step_by(5) {
            let mut q = p.clone();
            q[at] ^= 0x10;
            // Any outcome but a panic; a decode that succeeds is caught by the block checksum.
            let _ = decode(&q, data.len(), crate::format::VERSION, &mut out);
        }
    }
}
