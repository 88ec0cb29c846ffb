//! Scaled-integers codec of the tensor path, for arrays whose values are integers times a
//! scale that holds over a stretch of values (dequantized weights: a scale per tensor, row or
//! group). Each value is coded as its integer `k` under the current scale `s` (the value is
//! exactly `k * s` in f32 arithmetic, rounded to the stored type for bf16 and f16), or as a
//! miss; the encoder moves to a new scale where a value misses and the values ahead fit
//! another scale better.
//!
//! Payload: dtype tag, for bf16 and f16 a rounding byte (`Form::rounding_tag`),
//! value count (`u32`), tail length + tail bytes, scale count (`u32`), then a
//! byte: 0 for the scales as they are (f32 bits, `u32` each), 1 for
//! length (`u32`) + tensor payload of them; miss count (`u32`), length (`u32`) + tensor
//! payload of the misses, then the rANS stream of the symbols: 0 a miss, 1 the next scale
//! (the value's own symbol follows), 2 the value -0.0, `3 + zigzag(k)` for `|k| <= K_MAX`.

use super::adaptive::STATES;
use super::adaptive::{
    batch_end, put_prefixed, put_values_and_tail, PayloadReader, Table, MAX_BATCH,
};
use super::rounding::Form;
use super::DType;
use crate::codecs::block_codec::{set_payload, BlockCodec, Seen};
use crate::entropy::rans;
use crate::error::{Error, Result};
use crate::format::Codec;
use crate::simd::kernel_variants;

/// Largest integer magnitude coded as a level.
const K_MAX: i32 = 1023;
/// Symbols: a miss, a new scale, the odd zero, and the levels `-K_MAX..=K_MAX`.
const SYMBOLS: usize = LEVEL + 2 * K_MAX as usize + 1;
/// Symbol of a miss.
const MISS: usize = 0;
/// Symbol of a new scale.
const NEW_SCALE: usize = 1;
/// Symbol of the odd zero: the zero whose sign level 0 does not give under the current scale
/// (-0.0 under a positive scale, what a negative integer rounded to zero times it gives, and
/// before any scale; +0.0 under a negative one).
const MINUS_ZERO: usize = 2;
/// Symbol of level 0; level `k` is `LEVEL + zigzag(k)`.
const LEVEL: usize = 3;
/// How the scales are stored: as they are, or through the planes codec.
const SCALES_RAW: u8 = 0;
const SCALES_CODED: u8 = 1;
/// Values looked ahead to choose a scale.
const WINDOW: usize = 32;
/// A new scale must fit this many more of the values ahead than the current one.
const MIN_GAIN: usize = 4;
/// Values between two tries for a new scale after a failed one, at first and at most (it
/// doubles after each failure).
const RETRY: usize = 16;
const MAX_RETRY: usize = 4096;
/// Windows looked at, evenly spaced, to tell whether a block fits scales at all, and their
/// length.
const PROBES: usize = 16;
const PROBE: usize = 16;
/// Values a rounded form's scale is fitted to at most, from where it starts.
const EXTEND: usize = 4096;
/// Relative margin inside an interval of scales (products of a scale on a bound round the
/// other way where the bound is open).
const INSIDE: f64 = 1.0 / (1u64 << 20) as f64;

/// `k` if stored value `v` is `form.narrow(k * s)` (f32 product) with `|k| <= K_MAX`.
#[inline(always)]
fn level(form: Form, v: u32, s: f32) -> Option<i32> {
    let q = form.middle(v) / s;
    if q.is_nan() || q.abs() > K_MAX as f32 {
        return None;
    }
    // Rounded half away from zero without a call (the baseline target has no rounding
    // instruction); a wrong `k` only fails the check below.
    let k = (q + 0.5f32.copysign(q)) as i32;
    (form.narrow(k as f32 * s) == v).then_some(k)
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

/// The value (bits) at index `i` of `data`, of `width` bytes (2 or 4).
#[inline(always)]
fn at(data: &[u8], width: usize, i: usize) -> u32 {
    match width {
        2 => u16::from_le_bytes([data[2 * i], data[2 * i + 1]]) as u32,
        _ => u32::from_le_bytes([
            data[4 * i],
            data[4 * i + 1],
            data[4 * i + 2],
            data[4 * i + 3],
        ]),
    }
}

/// How many of `vals` are levels of `s` or its odd zero (which has its own symbol).
fn fits(form: Form, vals: &[u32], s: f32) -> usize {
    let odd = odd_zero(form, s);
    vals.iter()
        .filter(|&&v| v == odd || level(form, v, s).is_some())
        .count()
}

/// The bits of the zero that level 0 does not give under scale `s` (`MINUS_ZERO`).
#[inline(always)]
fn odd_zero(form: Form, s: f32) -> u32 {
    form.narrow(-(0.0 * s))
}

/// The scale that most of the first `n` of `all` (`vals`) are levels of, with how many (see
/// `exact_scale` and `rounded_scale`); the values after them (`more`) break ties or extend the
/// search, `data` is the whole array and `end` the index after `all`.
fn best_scale(form: Form, all: &[u32], n: usize, data: &[u8], end: usize) -> Option<(f32, usize)> {
    let (vals, more) = all.split_at(n.min(all.len()));
    match form {
        Form::F32 => exact_scale(vals, more),
        _ => rounded_scale(form, all, vals.len(), data, end),
    }
}

/// Negates each scale under which more values are -0.0 than +0.0, flipping its levels' signs
/// and its two zeros (a negative scale times level 0 gives -0.0, as in Q4_0 blocks whose
/// largest value is positive), so that `syms` code the same values with level 0
/// the more frequent zero under each scale; but only where that makes the zeros cheaper by
/// more than the scales' signs cost (order-0 estimates: rounding to nearest gives zeros of
/// both signs under a positive scale, and flipping those gains nothing).
fn orient(syms: &mut [u16], scales: &mut [u32]) {
    let mut starts: Vec<usize> = syms
        .iter()
        .enumerate()
        .filter(|&(_, &s)| s as usize == NEW_SCALE)
        .map(|(i, _)| i)
        .collect();
    starts.push(syms.len());
    let flips: Vec<(usize, usize)> = starts
        .windows(2)
        .enumerate()
        .filter_map(|(k, w)| {
            let run = &syms[w[0] + 1..w[1]];
            let zeros = run.iter().filter(|&&s| s as usize == LEVEL).count();
            let odd = run.iter().filter(|&&s| s as usize == MINUS_ZERO).count();
            (odd > zeros).then_some((k, odd - zeros))
        })
        .collect();
    // Order-0 bits of the zeros before and after, against those of the scales' signs.
    let count = |s: usize| syms.iter().filter(|&&x| x as usize == s).count() as f64;
    let (zeros, odd, n) = (count(LEVEL), count(MINUS_ZERO), syms.len() as f64);
    let moved = flips.iter().map(|f| f.1).sum::<usize>() as f64;
    let bits = |k: f64, n: f64| match k > 0.0 && k < n {
        true => k * (n / k).log2(),
        false => 0.0,
    };
    let before = bits(zeros, n) + bits(odd, n);
    let after = bits(zeros + moved, n) + bits(odd - moved, n);
    let scales_n = (starts.len() - 1) as f64;
    let signs = bits(flips.len() as f64, scales_n) + bits(scales_n - flips.len() as f64, scales_n);
    if after + signs >= before {
        return;
    }
    for (k, _) in flips {
        for s in syms[starts[k] + 1..starts[k + 1]].iter_mut() {
            *s = match *s as usize {
                LEVEL => MINUS_ZERO as u16,
                MINUS_ZERO => LEVEL as u16,
                z if z > LEVEL => (LEVEL + zigzag(-unzigzag(z - LEVEL))) as u16,
                _ => *s,
            };
        }
        scales[k] ^= 0x8000_0000;
    }
}

/// The smallest non-zero finite magnitudes of the first 8, the first 16 and all of `vals`
/// (a window that starts late in a group ends in the next: its own values come first), each
/// once.
fn smallest(form: Form, vals: &[u32]) -> impl Iterator<Item = f32> + '_ {
    let magnitude = form.minus_zero() - 1;
    let of = move |vals: &[u32]| {
        vals.iter()
            .filter(|&&v| v & magnitude != 0)
            .map(|&v| form.widen(v).abs())
            .filter(|x| x.is_finite() && (form != Form::F32 || x.is_normal()))
            .fold(f32::INFINITY, f32::min)
    };
    // Each computed only when asked for.
    let mut last = f32::NAN;
    [8, 16, vals.len()].into_iter().filter_map(move |n| {
        let x = of(&vals[..n.min(vals.len())]);
        let new = x.is_finite() && x != last;
        last = x;
        new.then_some(x)
    })
}

/// f32: among the quotients of a smallest magnitude (`smallest`) by 1 to 8 (and their
/// neighbours by one ulp), the first such quotient that all of `vals` are levels of, else the
/// most fitting, ties going to the scale that more of `more` are levels of, then to the first.
fn exact_scale(vals: &[u32], more: &[u32]) -> Option<(f32, usize)> {
    // (scale, hits, hits in `more` once computed)
    let mut best: Option<(f32, usize, Option<usize>)> = None;
    for small in smallest(Form::F32, vals) {
        for j in 1..=8 {
            let c = (small / j as f32).to_bits();
            for s in [c, c.wrapping_sub(1), c.wrapping_add(1)] {
                let s = f32::from_bits(s);
                if !s.is_normal() || s <= 0.0 {
                    continue;
                }
                let n = fits(Form::F32, vals, s);
                // The smallest value itself (or an exact fraction of it) fitting them all.
                if n == vals.len() && s.to_bits() == c {
                    return Some((s, n));
                }
                best = match best {
                    None => Some((s, n, None)),
                    Some((_, b, _)) if n > b => Some((s, n, None)),
                    Some((bs, b, bm)) if n == b => {
                        let bm = bm.unwrap_or_else(|| fits(Form::F32, more, bs));
                        let m = fits(Form::F32, more, s);
                        match m > bm {
                            true => Some((s, n, Some(m))),
                            false => Some((bs, b, Some(bm))),
                        }
                    }
                    keep => keep,
                };
            }
        }
    }
    best.map(|(s, n, _)| (s, n))
}

/// The scales (as an f64 interval) under which all of `vals`, from the first until one does
/// not fit, are levels, starting from the interval `span` and the estimate `est` (each
/// value's level is its quotient by the estimate, rounded); with how many values fitted.
/// Zeros fit any scale.
fn intersect(
    form: Form,
    vals: impl Iterator<Item = u32>,
    mut span: (f64, f64),
    est: f64,
) -> ((f64, f64), usize) {
    let sign = form.minus_zero();
    // The estimate's inverse, renewed from the interval after 1, 2, 4, ... values (often
    // enough to keep each level right; not per value, so that no division waits on the last).
    let mut inv = 1.0 / est;
    let mut renew = 1;
    let mut fitted = 0;
    for v in vals {
        let m = v & (sign - 1);
        if m == 0 {
            fitted += 1;
            continue;
        }
        if fitted >= renew && span.1.is_finite() {
            inv = 2.0 / (span.0 + span.1);
            renew *= 2;
        }
        let q = form.middle(v) as f64 * inv;
        // Rounded by a cast (the baseline target has no rounding instruction).
        let k = (q.abs().min(2.0 * K_MAX as f64) + 0.5) as u32 as f64;
        let Some((lo, hi)) = form.preimage(m) else {
            break;
        };
        if !(1.0..=K_MAX as f64).contains(&k) || (q < 0.0) != (v & sign != 0) {
            break;
        }
        // `lo / k` can raise the lower bound only where `lo` reaches it times `k` (slack for
        // the product's rounding), `hi / k` lower the upper one likewise: nearly every value
        // after the first few does neither, and then no division is made.
        let lo = match lo >= span.0 * k * (1.0 - SLACK) {
            true => span.0.max(lo / k),
            false => span.0,
        };
        let hi = match hi <= span.1 * k * (1.0 + SLACK) {
            true => span.1.min(hi / k),
            false => span.1,
        };
        // Touching bounds: the one scale left must be an f32 that `v` is exactly a level of
        // (a bound is open where a product on it is a tie that rounds the other way).
        let point = lo == hi && (lo as f32 as f64 != lo || level(form, v, lo as f32).is_none());
        if lo > hi || point {
            break;
        }
        span = (lo, hi);
        fitted += 1;
    }
    (span, fitted)
}

/// Relative slack of the products compared with interval bounds in `intersect` (four f64
/// ulps: more than their rounding error, so a quotient that would move a bound is computed).
const SLACK: f64 = 1.0 / (1u64 << 50) as f64;

/// The f32 with the fewest significant bits in `[lo, hi]`.
fn simplest(lo: f64, hi: f64) -> Option<f32> {
    if !(lo > 0.0 && lo <= hi && hi < f32::MAX as f64) {
        return None;
    }
    let mut a = lo as f32;
    if (a as f64) < lo {
        a = a.next_up();
    }
    let mut b = hi as f32;
    if (b as f64) > hi {
        b = b.next_down();
    }
    let (a, b) = (a.to_bits(), b.to_bits());
    (a <= b)
        .then(|| {
            (0..31)
                .rev()
                .map(|t| b & !((1u32 << t) - 1))
                .find(|&c| c >= a)
                .map_or(b, |c| c)
        })
        .map(f32::from_bits)
}

/// Scales to try from the interval `[lo, hi]`: the simplest well inside it (a bound is often
/// open), the simplest in it (a scale the values were made with, stored as bf16 or f16, often
/// is; it may lie on a bound, where a product is a tie), and its middle.
fn pick(span: (f64, f64)) -> impl Iterator<Item = f32> {
    let (lo, hi) = span;
    let inside = simplest(lo * (1.0 + INSIDE), hi * (1.0 - INSIDE));
    let middle = simplest(
        (lo + hi) / 2.0,
        (lo + hi) / 2.0 * (1.0 + f32::EPSILON as f64),
    );
    [inside, simplest(lo, hi), middle].into_iter().flatten()
}

/// How many of `vals`, from the first, are levels of `s` or -0.0.
fn run(form: Form, vals: &[u32], s: f32) -> usize {
    let odd = odd_zero(form, s);
    vals.iter()
        .take_while(|&&v| v == odd || level(form, v, s).is_some())
        .count()
}

/// bf16 and f16: for the quotients of a smallest magnitude (`smallest`) by 1 to 8, the
/// scales under which `vals` and `more` from the first are levels (`intersect`); of those,
/// the coarsest whose run of them (`run`) is at least 7/8 of the longest (a finer scale fits
/// more values of other scales by chance: a longer run by a value or two does not pay for
/// larger levels). Its interval is then narrowed by the values after `end` (up to `EXTEND`
/// from the start) and the simplest scale in it taken.
fn rounded_scale(
    form: Form,
    all: &[u32],
    n: usize,
    data: &[u8],
    end: usize,
) -> Option<(f32, usize)> {
    let (vals, more) = all.split_at(n);
    // (scale, interval, fitted from the start, run)
    let mut found: Vec<(f32, (f64, f64), usize, usize)> = Vec::new();
    'search: for small in smallest(form, vals) {
        for j in 1..=8 {
            let est = small as f64 / j as f64;
            let (span, fitted) = intersect(form, all.iter().copied(), (0.0, f64::INFINITY), est);
            let mut whole = false;
            for s in pick(span) {
                let r = run(form, all, s);
                found.push((s, span, fitted, r));
                whole = r >= vals.len();
                // The others of the interval fit no more than all it was narrowed by.
                if whole || r >= fitted {
                    break;
                }
            }
            // The whole window at the coarsest quotient yet.
            if whole {
                break 'search;
            }
        }
    }
    let longest = found.iter().map(|f| f.3).max()?;
    let (mut s, span, fitted, r) = found
        .into_iter()
        .filter(|f| 8 * f.3 >= 7 * longest)
        .reduce(|a, b| match b.0 > a.0 {
            true => b,
            false => a,
        })?;
    // A run over the whole window fits all of it (the usual case): no count needed.
    let n = match r >= vals.len() {
        true => vals.len(),
        false => fits(form, vals, s),
    };
    // All looked at fitted: narrow by the values after them, and take the pick that fits
    // the most of all the values the interval was narrowed by.
    let width = form.dtype().width();
    let total = data.len() / width;
    if fitted == vals.len() + more.len() && end < total {
        let start = end - fitted;
        let after = (end..total.min(start + EXTEND)).map(|i| at(data, width, i));
        let (span, after) = intersect(form, after, span, (span.0 + span.1) / 2.0);
        // A scale still in the narrowed interval is kept: it fits those values as well.
        if (span.0..=span.1).contains(&(s as f64)) {
            return Some((s, n));
        }
        let seen: Vec<u32> = (start..end + after).map(|i| at(data, width, i)).collect();
        let seen = &seen[..];
        // A pick that fits them all is as good as any (`s` left the interval they narrowed,
        // so it nearly always fits fewer): one pass, stopped at a first miss, instead of four.
        if let Some(t) = pick(span)
            .next()
            .filter(|&t| run(form, seen, t) == seen.len())
        {
            return Some((t, n));
        }
        let mut most = fits(form, seen, s);
        for t in pick(span) {
            let h = fits(form, seen, t);
            if h > most {
                (s, most) = (t, h);
            }
        }
    }
    Some((s, n))
}

/// The forms of `dtype` that `data` looks like scaled integers of: in most of `PROBES`
/// evenly spaced windows of `PROBE` values, three quarters are levels of one scale (short
/// windows: with a scale per group of 32, most lie in one group).
pub fn plausible(data: &[u8], dtype: DType) -> Vec<Form> {
    let width = dtype.width();
    let n = data.len() / width;
    if n < 2 * PROBE {
        return Vec::new();
    }
    let step = (n - 2 * PROBE) / (PROBES - 1).max(1);
    // More than half the probes must fit: the count stops at the failure that rules it out
    // (after half of them, on most trained weights).
    let plausible = |form: Form| {
        let mut failed = 0;
        for p in 0..PROBES {
            // The array cut after the probe: no scale is narrowed beyond it.
            let end = p * step + 2 * PROBE;
            let vals: Vec<u32> = (p * step..end).map(|i| at(data, width, i)).collect();
            let fit = best_scale(form, &vals, PROBE, &data[..end * width], end)
                .is_some_and(|(_, hits)| 4 * hits >= 3 * PROBE);
            failed += usize::from(!fit);
            if 2 * failed >= PROBES {
                return false;
            }
        }
        true
    };
    Form::of(dtype)
        .iter()
        .copied()
        .filter(|&f| plausible(f))
        .collect()
}

/// A block's symbols, scales (f32 bits) and miss bytes (`symbols`).
type Coded = (Vec<u16>, Vec<u32>, Vec<u8>);

/// The symbols of `data`'s whole values (an array of `form`'s type), the scales (f32 bits)
/// and the bytes of the misses.
fn symbols(data: &[u8], form: Form) -> Coded {
    symbols_within(data, form, usize::MAX).unwrap_or_default()
}

/// `symbols`, or `None` as soon as the scales and misses number more than `limit`.
fn symbols_within(data: &[u8], form: Form, limit: usize) -> Option<Coded> {
    let dtype = form.dtype();
    let width = dtype.width();
    let n = data.len() / width;
    let mut syms: Vec<u16> = Vec::with_capacity(n + n / 64);
    // The current scale's odd zero (-0.0 before any).
    let mut odd = form.minus_zero();
    let (mut scales, mut misses) = (Vec::new(), Vec::new());
    let mut scale: Option<f32> = None;
    let (mut next_try, mut retry) = (0, RETRY);
    let mut ahead = Vec::with_capacity(4 * WINDOW);
    for i in 0..n {
        let v = at(data, width, i);
        let mut k = scale.and_then(|s| level(form, v, s));
        if k.is_none() && v != odd && i >= next_try {
            ahead.clear();
            let end = n.min(i + 4 * WINDOW);
            ahead.extend((i..end).map(|j| at(data, width, j)));
            let window = &ahead[..ahead.len().min(WINDOW)];
            let now = scale.map_or(0, |s| fits(form, window, s));
            // A lone miss among values that fit the scale: in f32 not a reason to look
            // further; rounded to 16 bits, the values of the next scale often fit the last
            // one by chance (where the two are near multiples), so a better one is looked for.
            let lone = 4 * now >= 3 * window.len();
            let found = match lone && form == Form::F32 {
                true => None,
                false => best_scale(form, &ahead, window.len(), data, end),
            };
            match found {
                Some((s, hits)) if hits >= now + MIN_GAIN && 2 * hits >= window.len() => {
                    scale = Some(s);
                    odd = odd_zero(form, s);
                    scales.push(s.to_bits());
                    syms.push(NEW_SCALE as u16);
                    k = level(form, v, s);
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
            None if v == odd => syms.push(MINUS_ZERO as u16),
            None => {
                syms.push(MISS as u16);
                misses.extend_from_slice(&v.to_le_bytes()[..width]);
            }
        }
        if scales.len() + misses.len() / width > limit {
            return None;
        }
    }
    orient(&mut syms, &mut scales);
    Some((syms, scales, misses))
}

/// Values tried with each rounding a bf16 block looks like it had, to choose one.
const TRIAL: usize = 8192;

/// The form to code `data`, an array of `dtype`, as scaled integers with: of those it looks
/// like (`plausible`), the one whose symbols hold the fewest misses and scales, counted on the
/// first `TRIAL` values and, where that ties, on all (the first on ties); `None` if it looks
/// like none.
pub fn choose(data: &[u8], dtype: DType) -> Option<Form> {
    choose_coded(data, dtype, false).map(|(form, _)| form)
}

/// `choose`, with the symbols of the whole block where it had to make them to decide; with
/// `promise`, `None` where the form chosen on the first `TRIAL` values is not `promising`
/// there (checked before any whole-block work).
fn choose_coded(data: &[u8], dtype: DType, promise: bool) -> Option<(Form, Option<Coded>)> {
    let forms = plausible(data, dtype);
    if forms.len() < 2 {
        let form = *forms.first()?;
        return (!promise || promising(data, form, None)).then_some((form, None));
    }
    let width = dtype.width();
    let cost = |c: &Coded| c.1.len() + c.2.len() / width;
    let sample = &data[..data.len().min(TRIAL * width)];
    let mut trials: Vec<(Form, Coded)> =
        forms.into_iter().map(|f| (f, symbols(sample, f))).collect();
    let least = trials.iter().map(|(_, c)| cost(c)).min()?;
    trials.retain(|(_, c)| cost(c) == least);
    let first = trials.remove(0);
    if sample.len() == data.len() {
        // The trial was the whole block: its symbols are the block's.
        return Some((first.0, Some(first.1)));
    }
    let tied: Vec<Form> = [first.0]
        .into_iter()
        .chain(trials.iter().map(|t| t.0))
        .collect();
    if promise && !promising(data, first.0, Some(first.1)) {
        return None;
    }
    if tied.len() < 2 {
        return Some((first.0, None));
    }
    // The whole block with each, a later one given up once it costs more than the best.
    let mut best: Option<(Form, Coded)> = None;
    for f in tied {
        let limit = best.as_ref().map_or(usize::MAX, |b| cost(&b.1) - 1);
        if let Some(c) = symbols_within(data, f, limit) {
            best = Some((f, c));
        }
    }
    best.map(|(f, c)| (f, Some(c)))
}

/// Whether scaled integers of `form` code the first `TRIAL` values of `data` smaller than the
/// tensor codec does (true for a block no longer than that: its whole payloads are compared);
/// `trial` holds their symbols where the caller made them.
/// Trained bf16 weights look like scaled integers (at 8 significant bits nearly every value
/// is a level of some scale), but with 10-50% of their values a miss or a new scale they code
/// 8-26% larger there; dequantized weights code at 0.17-0.73 of the planes codec's size.
fn promising(data: &[u8], form: Form, trial: Option<Coded>) -> bool {
    let dtype = form.dtype();
    let Some(sample) = data.get(..TRIAL * dtype.width()) else {
        return true;
    };
    if sample.len() == data.len() {
        return true;
    }
    let mut scaled = Vec::new();
    let coded = trial.unwrap_or_else(|| symbols(sample, form));
    write(sample, form, coded, &mut scaled);
    scaled.len() < super::encode(sample, dtype).len()
}

/// `data`, an array of `dtype`, coded as scaled integers of the form `choose` picks; `None`
/// where it looks like none, or where that form is not `promising` on its first values.
pub fn encode_chosen(data: &[u8], dtype: DType) -> Option<Vec<u8>> {
    let (form, coded) = choose_coded(data, dtype, true)?;
    let coded = coded.unwrap_or_else(|| symbols(data, form));
    let mut out = Vec::new();
    write(data, form, coded, &mut out);
    Some(out)
}

/// Codes `data`, an array of `form`'s type, into `out`.
pub fn encode_into(data: &[u8], form: Form, out: &mut Vec<u8>) {
    write(data, form, symbols(data, form), out);
}

/// Writes the payload of `data` (an array of `form`'s type) whose symbols, scales and misses
/// are `coded` to `out`.
fn write(data: &[u8], form: Form, coded: Coded, out: &mut Vec<u8>) {
    let dtype = form.dtype();
    let width = dtype.width();
    let n = data.len() / width;
    let tail = &data[n * width..];
    let (syms, scales, misses) = coded;
    let mut tab = Table::new(SYMBOLS, LEVEL + 1, false);
    let mut enc = rans::Encoder::new(syms.len(), STATES);
    tab.put_all(&syms, &mut enc);
    out.clear();
    out.push(dtype.tag());
    if form != Form::F32 {
        out.push(form.rounding_tag());
    }
    put_values_and_tail(out, n, tail);
    out.extend_from_slice(&(scales.len() as u32).to_le_bytes());
    // The scales as they are, or through the planes codec where that is smaller (a scale
    // stored as f16 or bf16 has few significant bits).
    let raw: Vec<u8> = scales.iter().flat_map(|s| s.to_le_bytes()).collect();
    let coded = super::encode(&raw, DType::F32);
    match coded.len() + 4 < raw.len() {
        true => {
            out.push(SCALES_CODED);
            put_prefixed(out, |o| o.extend_from_slice(&coded));
        }
        false => {
            out.push(SCALES_RAW);
            out.extend_from_slice(&raw);
        }
    }
    out.extend_from_slice(&((misses.len() / width) as u32).to_le_bytes());
    put_prefixed(out, |o| super::encode_append(&misses, dtype, o));
    enc.finish(out);
}

/// Decodes a payload, appending its `raw_len` bytes to `out`.
pub fn decode(payload: &[u8], raw_len: usize, out: &mut Vec<u8>) -> Result<()> {
    let mut f = PayloadReader::new(payload, "scaled-integers");
    let form = match DType::from_tag(f.take(1)?[0])? {
        DType::F32 => Form::F32,
        d @ (DType::BF16 | DType::F16) => Form::from_tags(d, f.take(1)?[0])?,
        d => return Err(corrupt(&format!("{} values", d.name()))),
    };
    match form {
        Form::F32 => decode_as::<4, 0>(f, raw_len, out),
        Form::Bf16Nearest => decode_as::<2, 1>(f, raw_len, out),
        Form::Bf16Truncated => decode_as::<2, 2>(f, raw_len, out),
        Form::F16Nearest => decode_as::<2, 3>(f, raw_len, out),
    }
}

/// The form numbered `f` in `decode`'s dispatch (a constant, so that each copy of
/// `decode_as` rounds inline).
const fn form_of(f: u8) -> Form {
    match f {
        0 => Form::F32,
        1 => Form::Bf16Nearest,
        2 => Form::Bf16Truncated,
        _ => Form::F16Nearest,
    }
}

fn corrupt(what: &str) -> Error {
    Error::Corrupt(format!("scaled-integers block: {what}"))
}

/// Writes the low `W` bytes of `v` to `o`.
#[inline(always)]
fn put<const W: usize>(o: &mut [u8], v: u32) {
    o.copy_from_slice(&v.to_le_bytes()[..W]);
}

kernel_variants! {
/// `decode` after the tags, for values of `W` bytes of the form numbered `F` (`form_of`),
/// compiled for the process's SIMD level (the values are the same: each is an exact f32
/// product, rounded by integer arithmetic).
fn decode_as [const W: usize, const F: u8] [W, F]
    (f: PayloadReader, raw_len: usize, out: &mut Vec<u8>) -> Result<()> {
    values::<W, F>(f, raw_len, out)
}
}

/// The body of `decode_as`.
#[inline(always)]
fn values<const W: usize, const F: u8>(
    mut f: PayloadReader,
    raw_len: usize,
    out: &mut Vec<u8>,
) -> Result<()> {
    let form = const { form_of(F) };
    let minus_zero = form.minus_zero();
    let (n, tail) = f.values_and_tail(W, raw_len)?;
    let count = f.u32()? as usize;
    if count > n {
        return Err(corrupt("more scales than values"));
    }
    // A byte tells whether the scales went through the planes codec.
    let coding = f.take(1)?[0];
    let mut coded = Vec::new();
    let raw = match coding {
        SCALES_RAW => f.take(4 * count)?,
        SCALES_CODED => {
            super::decode_append(f.prefixed()?, 4 * count, &mut coded, &mut |_| {})?;
            &coded[..]
        }
        _ => return Err(corrupt("unknown scale coding")),
    };
    let scales: Vec<f32> = raw
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let m = f.u32()? as usize;
    if m > n {
        return Err(corrupt("more misses than values"));
    }
    let inner = f.prefixed()?;
    let mut misses = Vec::new();
    super::decode_append(inner, m * W, &mut misses, &mut |_| {})?;
    let start = out.len();
    let (mut st, mut words) = rans::Decoder::new(f.rest, STATES)?.split();
    let mut tab = Table::new(SYMBOLS, LEVEL + 1, true);
    let total = n + count;
    let mut syms = [0u16; MAX_BATCH];
    let (mut done, mut end) = (0, batch_end(0));
    let (mut misses, mut scales) = (misses.chunks_exact(W), scales.into_iter());
    let mut have_scale = false;
    let mut scale = f32::NAN;
    // The current scale's odd zero (-0.0 before any).
    let mut odd = minus_zero;
    let mut at = 0;
    while done < total {
        let len = MAX_BATCH.min(total - done);
        tab.get_span(&mut st, &mut words, done, &mut end, &mut syms[..len])?;
        done += len;
        // Room for the batch's values, grown as they are decoded (never from the declared
        // length alone).
        let room = start + (at + len).min(n) * W;
        if out.len() < room {
            out.resize(room, 0);
        }
        let body = &mut out[start..room];
        let mut i = 0;
        while i < len {
            // Runs of 16 levels or -0.0 under the current scale, without a branch per value.
            if let (true, Some(run), Some(o)) = (
                have_scale,
                syms[..len].get(i..i + 16),
                body.get_mut(W * at..W * at + 16 * W),
            ) {
                if run.iter().fold(u16::MAX, |m, &s| m.min(s)) as usize >= MINUS_ZERO {
                    let mut v = [0u32; 16];
                    for (v, &s) in v.iter_mut().zip(run) {
                        let z = s as i32 - LEVEL as i32;
                        let level = form.narrow(((z >> 1) ^ -(z & 1)) as f32 * scale);
                        *v = match s as usize == MINUS_ZERO {
                            true => odd,
                            false => level,
                        };
                    }
                    for (o, v) in o.chunks_exact_mut(W).zip(v) {
                        put::<W>(o, v);
                    }
                    i += 16;
                    at += 16;
                    continue;
                }
            }
            let s = syms[i] as usize;
            i += 1;
            if s >= LEVEL && at < n && have_scale {
                let v = form.narrow(unzigzag(s - LEVEL) as f32 * scale);
                put::<W>(&mut body[W * at..W * at + W], v);
                at += 1;
                continue;
            }
            if s == NEW_SCALE {
                scale = scales.next().ok_or_else(|| corrupt("too few scales"))?;
                odd = odd_zero(form, scale);
                have_scale = true;
                continue;
            }
            let o = body
                .get_mut(W * at..W * at + W)
                .ok_or_else(|| corrupt("too many values"))?;
            match s {
                MISS => o.copy_from_slice(misses.next().ok_or_else(|| corrupt("too few misses"))?),
                MINUS_ZERO => put::<W>(o, odd),
                _ => return Err(corrupt("a level before any scale")),
            }
            at += 1;
        }
    }
    if at != n || misses.next().is_some() || scales.next().is_some() {
        return Err(corrupt("counts do not match"));
    }
    out.extend_from_slice(tail);
    rans::Decoder::join(st, words).finish()
}

/// The scaled-integers codec for values of `dtype`.
pub struct Scaled {
    /// The values' type.
    pub dtype: DType,
}

impl BlockCodec for Scaled {
    fn codec(&self) -> Codec {
        Codec::Scaled
    }

    fn encode_into(&self, data: &[u8], out: &mut Vec<u8>) -> bool {
        set_payload(out, encode_chosen(data, self.dtype))
    }

    fn decode(
        &self,
        payload: &[u8],
        raw_len: usize,
        out: &mut Vec<u8>,
        _: &mut dyn FnMut(&[u8]),
    ) -> Result<Seen> {
        decode(payload, raw_len, out)?;
        Ok(Seen::Nothing)
    }
}

#[cfg(test)]
mod tests;
