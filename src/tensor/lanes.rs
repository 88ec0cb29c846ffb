//! Decoding of a batch's exponent and mantissa-top symbols into `E << 3 | M`: the scalar
//! reference for both stream orders and AVX-512 kernels for groups of 16, 32 or 64 lanes. Every path
//! reads the same words in the same order, so they agree bit for bit.

use super::planes::{Model, E_BITS, M_BITS};
use crate::coder::rans::{self, Words, WAYS};
use crate::engine::{level, KernelLevel};
use std::cell::RefCell;

/// Coder states, one per lane.
type States = [u32; WAYS];

/// Decodes an exponent from `x`; returns it and whether it is the escape.
#[inline(always)]
fn e_step(x: &mut u32, w: &mut Words, model: &Model) -> (u8, bool) {
    let slot = *x & ((1 << E_BITS) - 1);
    let d = model.e_dec[slot as usize];
    rans::step(x, E_BITS, (d >> 8 & 0xfff) + 1, d >> 20, w);
    (d as u8, slot >= model.escape_start)
}

/// Decodes an escaped exponent's 8 raw bits.
#[inline(always)]
fn raw_step(x: &mut u32, w: &mut Words) -> u8 {
    let e = *x as u8;
    rans::step(x, 8, 1, 0, w);
    e
}

/// Decodes the mantissa top of a value with exponent `e`; returns `e << 3 | m`.
#[inline(always)]
fn m_step(x: &mut u32, w: &mut Words, model: &Model, e: u8) -> u16 {
    let md = model.m_dec[(e as usize) << M_BITS | (*x & ((1 << M_BITS) - 1)) as usize];
    rans::step(x, M_BITS, md >> 3 & 0x1ff, md >> 12, w);
    (e as u16) << 3 | (md & 7) as u16
}

/// Format version 2 order: value j's exponent on state 2 (j & 1), its mantissa top on the next.
pub(super) fn pairs(x: &mut States, w: &mut Words, model: &Model, em: &mut [u16]) {
    for (j, v) in em.iter_mut().enumerate() {
        let s = 2 * (j & 1);
        let (mut e, esc) = e_step(&mut x[s], w, model);
        if esc {
            e = raw_step(&mut x[s], w);
        }
        *v = m_step(&mut x[s + 1], w, model, e);
    }
}

/// One group of up to 64 values, value l on state l: exponents, escapes, mantissa tops.
fn group_scalar(x: &mut States, w: &mut Words, model: &Model, em: &mut [u16]) {
    let mut es = [0u8; WAYS];
    let mut escaped = [false; WAYS];
    for l in 0..em.len() {
        (es[l], escaped[l]) = e_step(&mut x[l], w, model);
    }
    for l in 0..em.len() {
        if escaped[l] {
            es[l] = raw_step(&mut x[l], w);
        }
    }
    for (l, v) in em.iter_mut().enumerate() {
        *v = m_step(&mut x[l], w, model, es[l]);
    }
}

/// Which implementation decodes groups of lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kernel {
    /// The scalar reference.
    Scalar,
    /// AVX2: a group in two to eight registers (decoding; encoding uses the reference).
    Avx2,
    /// AVX-512F: a group in one to four registers.
    Avx512,
}

impl Kernel {
    /// The fastest kernel the process's kernel level allows.
    pub(super) fn detect() -> Self {
        match level() {
            KernelLevel::Avx512 => Kernel::Avx512,
            KernelLevel::Avx2 => Kernel::Avx2,
            KernelLevel::Scalar => Kernel::Scalar,
        }
    }

    /// Every kernel this CPU can run (for tests).
    #[cfg(test)]
    pub(super) fn supported() -> Vec<Self> {
        let best = KernelLevel::detect();
        let mut all = vec![Kernel::Scalar];
        if best >= KernelLevel::Avx2 {
            all.push(Kernel::Avx2);
        }
        if best >= KernelLevel::Avx512 {
            all.push(Kernel::Avx512);
        }
        all
    }

    /// Format version 3 order: the batch in groups of `lanes` (16, 32 or 64) values.
    pub(super) fn lanes(
        self,
        x: &mut States,
        w: &mut Words,
        model: &Model,
        em: &mut [u16],
        lanes: usize,
    ) {
        let mut done = 0;
        #[cfg(target_arch = "x86_64")]
        if self == Kernel::Avx512 {
            // SAFETY: AVX-512F support was checked when the level was chosen.
            done = unsafe {
                match lanes {
                    16 => groups_avx512::<1>(x, w, model, em),
                    32 => groups_avx512::<2>(x, w, model, em),
                    64 => groups_avx512::<4>(x, w, model, em),
                    _ => 0,
                }
            };
        } else if self == Kernel::Avx2 {
            // SAFETY: AVX2 support was checked when the level was chosen.
            done = unsafe {
                match lanes {
                    16 => groups_avx2::<2>(x, w, model, em),
                    32 => groups_avx2::<4>(x, w, model, em),
                    64 => groups_avx2::<8>(x, w, model, em),
                    _ => 0,
                }
            };
        }
        for group in em[done..].chunks_mut(lanes) {
            group_scalar(x, w, model, group);
        }
    }
}

/// Decodes whole groups of `16 R` lanes (register r holds lanes 16 r to 16 r + 15, so `R`
/// dependency chains overlap) while the stream has room for a group's worst case (3 words
/// per lane) past the current position; returns the number of values decoded.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn groups_avx512<const R: usize>(
    x: &mut States,
    w: &mut Words,
    model: &Model,
    em: &mut [u16],
) -> usize {
    use std::arch::x86_64::*;
    let lanes = 16 * R;
    let group_bytes = 3 * 2 * lanes;
    let data = w.words;
    let mut pos = w.pos;
    let mut xs: [__m512i; R] =
        std::array::from_fn(|r| _mm512_loadu_si512(x[16 * r..].as_ptr().cast()));
    let low = _mm512_set1_epi32(1 << 16);
    let m12 = _mm512_set1_epi32(0xfff);
    let m9 = _mm512_set1_epi32(0x1ff);
    let m8 = _mm512_set1_epi32(0xff);
    let m3 = _mm512_set1_epi32(7);
    let one = _mm512_set1_epi32(1);
    let esc_start = _mm512_set1_epi32(model.escape_start as i32);
    let e_dec = model.e_dec.as_ptr() as *const i32;
    let m_dec = model.m_dec.as_ptr() as *const i32;
    // Lanes in `active` whose state fell below LOW take the next words, in lane order.
    macro_rules! renorm {
        ($xs:expr, $active:expr) => {{
            let need = _mm512_mask_cmplt_epu32_mask($active, $xs, low);
            // In bounds: a group starts only with group_bytes left, at most 32 bytes a step.
            let next = _mm256_loadu_si256(data.as_ptr().add(pos).cast());
            let fill = _mm512_maskz_expand_epi32(need, _mm512_cvtepu16_epi32(next));
            $xs = _mm512_mask_or_epi32($xs, need, _mm512_slli_epi32::<16>($xs), fill);
            pos += 2 * need.count_ones() as usize;
        }};
    }
    let mut done = 0;
    while done + lanes <= em.len() && pos + group_bytes <= data.len() {
        // Exponents (and which lanes escaped).
        let mut e = [_mm512_setzero_si512(); R];
        let mut esc = [0u16; R];
        for r in 0..R {
            let slot = _mm512_and_si512(xs[r], m12);
            let d = _mm512_i32gather_epi32::<4>(slot, e_dec);
            esc[r] = _mm512_cmpge_epu32_mask(slot, esc_start);
            let freq = _mm512_add_epi32(_mm512_and_si512(_mm512_srli_epi32::<8>(d), m12), one);
            xs[r] = _mm512_add_epi32(
                _mm512_mullo_epi32(freq, _mm512_srli_epi32::<E_BITS>(xs[r])),
                _mm512_srli_epi32::<20>(d),
            );
            e[r] = _mm512_and_si512(d, m8);
        }
        for x in xs.iter_mut() {
            renorm!(*x, 0xffff);
        }
        // Escaped lanes take their exponent from the next 8 bits.
        if esc.iter().any(|&m| m != 0) {
            for r in 0..R {
                e[r] = _mm512_mask_and_epi32(e[r], esc[r], xs[r], m8);
                xs[r] = _mm512_mask_srli_epi32::<8>(xs[r], esc[r], xs[r]);
            }
            for r in 0..R {
                renorm!(xs[r], esc[r]);
            }
        }
        // Mantissa tops, from the table of each lane's exponent.
        let out = em.as_mut_ptr().add(done);
        for r in 0..R {
            let idx = _mm512_or_si512(
                _mm512_slli_epi32::<M_BITS>(e[r]),
                _mm512_and_si512(xs[r], m8),
            );
            let md = _mm512_i32gather_epi32::<4>(idx, m_dec);
            let freq = _mm512_and_si512(_mm512_srli_epi32::<3>(md), m9);
            xs[r] = _mm512_add_epi32(
                _mm512_mullo_epi32(freq, _mm512_srli_epi32::<M_BITS>(xs[r])),
                _mm512_srli_epi32::<12>(md),
            );
            let v = _mm512_or_si512(_mm512_slli_epi32::<3>(e[r]), _mm512_and_si512(md, m3));
            _mm256_storeu_si256(out.add(16 * r).cast(), _mm512_cvtepi32_epi16(v));
        }
        for x in xs.iter_mut() {
            renorm!(*x, 0xffff);
        }
        done += lanes;
    }
    for (r, xs) in xs.iter().enumerate() {
        _mm512_storeu_si512(x[16 * r..].as_mut_ptr().cast(), *xs);
    }
    w.pos = pos;
    done
}

/// For each 8-bit mask, the permutation that moves consecutive words into the set lanes.
#[cfg(target_arch = "x86_64")]
const EXPAND: [[u32; 8]; 256] = {
    let mut t = [[0u32; 8]; 256];
    let mut m = 0;
    while m < 256 {
        let (mut lane, mut next) = (0, 0);
        while lane < 8 {
            if m >> lane & 1 != 0 {
                t[m][lane] = next;
                next += 1;
            }
            lane += 1;
        }
        m += 1;
    }
    t
};

/// `groups_avx512` with AVX2: groups of `8 R` lanes in `R` registers of 8 lanes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn groups_avx2<const R: usize>(
    x: &mut States,
    w: &mut Words,
    model: &Model,
    em: &mut [u16],
) -> usize {
    use std::arch::x86_64::*;
    let lanes = 8 * R;
    let group_bytes = 3 * 2 * lanes;
    let data = w.words;
    let mut pos = w.pos;
    let mut xs: [__m256i; R] =
        std::array::from_fn(|r| _mm256_loadu_si256(x[8 * r..].as_ptr().cast()));
    let zero = _mm256_setzero_si256();
    let all = _mm256_set1_epi32(-1);
    let m12 = _mm256_set1_epi32(0xfff);
    let m9 = _mm256_set1_epi32(0x1ff);
    let m8 = _mm256_set1_epi32(0xff);
    let m3 = _mm256_set1_epi32(7);
    let one = _mm256_set1_epi32(1);
    let esc_start = _mm256_set1_epi32(model.escape_start as i32);
    let e_dec = model.e_dec.as_ptr() as *const i32;
    let m_dec = model.m_dec.as_ptr() as *const i32;
    // Lanes in `active` whose state fell below LOW take the next words, in lane order.
    macro_rules! renorm {
        ($xs:expr, $active:expr) => {{
            let need = _mm256_and_si256(
                $active,
                _mm256_cmpeq_epi32(_mm256_srli_epi32::<16>($xs), zero),
            );
            let mask = _mm256_movemask_ps(_mm256_castsi256_ps(need)) as usize;
            // In bounds: a group starts only with group_bytes left, at most 16 bytes a step.
            let next = _mm256_cvtepu16_epi32(_mm_loadu_si128(data.as_ptr().add(pos).cast()));
            let order = _mm256_loadu_si256(EXPAND[mask].as_ptr().cast());
            let fill = _mm256_permutevar8x32_epi32(next, order);
            let refilled = _mm256_or_si256(_mm256_slli_epi32::<16>($xs), fill);
            $xs = _mm256_blendv_epi8($xs, refilled, need);
            pos += 2 * mask.count_ones() as usize;
        }};
    }
    let mut done = 0;
    while done + lanes <= em.len() && pos + group_bytes <= data.len() {
        let mut e = [zero; R];
        let mut esc = [zero; R];
        for r in 0..R {
            let slot = _mm256_and_si256(xs[r], m12);
            let d = _mm256_i32gather_epi32::<4>(e_dec, slot);
            // slot >= escape start, both below 2^13.
            esc[r] = _mm256_andnot_si256(_mm256_cmpgt_epi32(esc_start, slot), all);
            let freq = _mm256_add_epi32(_mm256_and_si256(_mm256_srli_epi32::<8>(d), m12), one);
            xs[r] = _mm256_add_epi32(
                _mm256_mullo_epi32(freq, _mm256_srli_epi32::<{ E_BITS as i32 }>(xs[r])),
                _mm256_srli_epi32::<20>(d),
            );
            e[r] = _mm256_and_si256(d, m8);
        }
        for x in xs.iter_mut() {
            renorm!(*x, all);
        }
        if esc.iter().any(|&m| _mm256_testz_si256(m, m) == 0) {
            for r in 0..R {
                e[r] = _mm256_blendv_epi8(e[r], _mm256_and_si256(xs[r], m8), esc[r]);
                xs[r] = _mm256_blendv_epi8(xs[r], _mm256_srli_epi32::<8>(xs[r]), esc[r]);
            }
            for r in 0..R {
                renorm!(xs[r], esc[r]);
            }
        }
        let out = em.as_mut_ptr().add(done);
        for r in 0..R {
            let idx = _mm256_or_si256(
                _mm256_slli_epi32::<{ M_BITS as i32 }>(e[r]),
                _mm256_and_si256(xs[r], m8),
            );
            let md = _mm256_i32gather_epi32::<4>(m_dec, idx);
            let freq = _mm256_and_si256(_mm256_srli_epi32::<3>(md), m9);
            xs[r] = _mm256_add_epi32(
                _mm256_mullo_epi32(freq, _mm256_srli_epi32::<{ M_BITS as i32 }>(xs[r])),
                _mm256_srli_epi32::<12>(md),
            );
            let v = _mm256_or_si256(_mm256_slli_epi32::<3>(e[r]), _mm256_and_si256(md, m3));
            // Values are below 2^11: pack to 16 bits, both halves' results side by side.
            let packed = _mm256_permute4x64_epi64::<0b1000>(_mm256_packus_epi32(v, v));
            _mm_storeu_si128(out.add(8 * r).cast(), _mm256_castsi256_si128(packed));
        }
        for x in xs.iter_mut() {
            renorm!(*x, all);
        }
        done += lanes;
    }
    for (r, xs) in xs.iter().enumerate() {
        _mm256_storeu_si256(x[8 * r..].as_mut_ptr().cast(), *xs);
    }
    w.pos = pos;
    done
}

/// A block's symbols in the order the encoder needs them.
pub(super) struct Symbols {
    /// Per value: its exponent's symbol `start | freq << 16` (the escape if escaped).
    pub e: Vec<u32>,
    /// Per value: its mantissa top's symbol `start | freq << 16`.
    pub m: Vec<u32>,
    /// Escaped exponents as (value index, exponent), in value order.
    pub escapes: Vec<(u32, u8)>,
    /// Groups as (first value, number of values), in value order.
    pub groups: Vec<(u32, u32)>,
    /// Values in a whole group (16, 32 or 64).
    pub lanes: usize,
    /// Space for the stream's words.
    words: Vec<u16>,
}

thread_local! {
    /// The buffers of the last block this thread encoded: reused, so that encoding large
    /// blocks does not fault in fresh pages each time.
    static SPARE: RefCell<Option<Symbols>> = const { RefCell::new(None) };
}

impl Symbols {
    /// Room for the symbols of `n` values in groups of `lanes` (zeroed, to be overwritten).
    pub(super) fn new(n: usize, lanes: usize) -> Self {
        let mut s = SPARE
            .with(|spare| spare.borrow_mut().take())
            .unwrap_or(Symbols {
                e: Vec::new(),
                m: Vec::new(),
                escapes: Vec::new(),
                groups: Vec::new(),
                lanes,
                words: Vec::new(),
            });
        s.e.clear();
        s.e.resize(n, 0);
        s.m.clear();
        s.m.resize(n, 0);
        s.escapes.clear();
        s.groups.clear();
        s.lanes = lanes;
        s
    }

    /// Keeps the buffers for this thread's next block.
    pub(super) fn recycle(self) {
        SPARE.with(|spare| *spare.borrow_mut() = Some(self));
    }
}

/// Encodes one symbol (`start`, `freq`, precision `BITS`) on state `x`, spilling a word first
/// if needed.
#[inline(always)]
fn put<const BITS: u32>(x: &mut u32, start: u32, freq: u32, words: &mut [u16], n: &mut usize) {
    if *x >> (32 - BITS) >= freq {
        words[*n] = *x as u16;
        *n += 1;
        *x >>= 16;
    }
    *x = ((*x / freq) << BITS) + *x % freq + start;
}

/// Encodes one group in reverse (mantissa tops, escapes, exponents; last lane first).
fn encode_group_scalar(
    x: &mut States,
    s: &Symbols,
    (g0, len): (u32, u32),
    escapes: &[(u32, u8)],
    words: &mut [u16],
    n: &mut usize,
) {
    let g0 = g0 as usize;
    for l in (0..len as usize).rev() {
        let m = s.m[g0 + l];
        put::<M_BITS>(&mut x[l], m & 0xffff, m >> 16, words, n);
    }
    for &(at, e) in escapes.iter().rev() {
        put::<8>(&mut x[at as usize - g0], e as u32, 1, words, n);
    }
    for l in (0..len as usize).rev() {
        let e = s.e[g0 + l];
        put::<E_BITS>(&mut x[l], e & 0xffff, e >> 16, words, n);
    }
}

impl Kernel {
    /// Writes the rANS stream of `s` to `out` (the layout `rans::Encoder` writes for the same
    /// symbols: final states, then the words in decoding order).
    pub(super) fn encode(self, syms: &mut Symbols, out: &mut Vec<u8>) {
        let mut x: States = [rans::LOW; WAYS];
        // At most one word per symbol, and room for a vector store past the last one.
        let mut words = std::mem::take(&mut syms.words);
        words.clear();
        words.resize(
            syms.e.len() + syms.m.len() + syms.escapes.len() + 2 * WAYS,
            0,
        );
        let s = &*syms;
        let mut n = 0;
        let mut esc_end = s.escapes.len();
        for &(g0, len) in s.groups.iter().rev() {
            let mut esc_start = esc_end;
            while esc_start > 0 && s.escapes[esc_start - 1].0 >= g0 {
                esc_start -= 1;
            }
            let escapes = &s.escapes[esc_start..esc_end];
            esc_end = esc_start;
            #[cfg(target_arch = "x86_64")]
            if self == Kernel::Avx512 && len as usize == s.lanes {
                let (x, words, n) = (&mut x, &mut words, &mut n);
                // SAFETY: AVX-512F support was checked when the level was chosen; `words`
                // keeps 2 * WAYS spare entries past any symbol's word.
                let done = unsafe {
                    match s.lanes {
                        16 => encode_group_avx512::<1>(x, s, g0, escapes, words, n),
                        32 => encode_group_avx512::<2>(x, s, g0, escapes, words, n),
                        64 => encode_group_avx512::<4>(x, s, g0, escapes, words, n),
                        _ => false,
                    }
                };
                if done {
                    continue;
                }
            }
            encode_group_scalar(&mut x, s, (g0, len), escapes, &mut words, &mut n);
        }
        words.truncate(n);
        for x in x[..s.lanes].iter().rev() {
            words.push(*x as u16);
            words.push((*x >> 16) as u16);
        }
        out.reserve(words.len() * 2);
        for w in words.iter().rev() {
            out.extend_from_slice(&w.to_le_bytes());
        }
        syms.words = words;
    }
}

/// `encode_group_scalar` for a whole group of `16 R` lanes held in `R` registers; the
/// quotients come from f64 division, exact for 32-bit states and frequencies up to 2^12.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn encode_group_avx512<const R: usize>(
    x: &mut States,
    s: &Symbols,
    g0: u32,
    escapes: &[(u32, u8)],
    words: &mut [u16],
    n: &mut usize,
) -> bool {
    use std::arch::x86_64::*;
    let g0 = g0 as usize;
    let mut xs: [__m512i; R] =
        std::array::from_fn(|r| _mm512_loadu_si512(x[16 * r..].as_ptr().cast()));
    let reverse = _mm512_set_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let low16 = _mm512_set1_epi32(0xffff);
    let out = words.as_mut_ptr();
    // The low words of the lanes in `spill`, last lane first.
    macro_rules! emit {
        ($xs:expr, $spill:expr) => {{
            let spill: u16 = $spill;
            let rev = _mm512_permutexvar_epi32(reverse, $xs);
            let packed = _mm512_maskz_compress_epi32(spill.reverse_bits(), rev);
            _mm256_storeu_si256(out.add(*n).cast(), _mm512_cvtepi32_epi16(packed));
            *n += spill.count_ones() as usize;
        }};
    }
    // Exact `y / f` for 32-bit `y` and `f` <= 2^12.
    macro_rules! quotient {
        ($y:expr, $f:expr) => {{
            let (y, f) = ($y, $f);
            let lo = _mm512_div_pd(
                _mm512_cvtepu32_pd(_mm512_castsi512_si256(y)),
                _mm512_cvtepu32_pd(_mm512_castsi512_si256(f)),
            );
            let hi = _mm512_div_pd(
                _mm512_cvtepu32_pd(_mm512_extracti64x4_epi64::<1>(y)),
                _mm512_cvtepu32_pd(_mm512_extracti64x4_epi64::<1>(f)),
            );
            _mm512_inserti64x4::<1>(
                _mm512_castsi256_si512(_mm512_cvttpd_epu32(lo)),
                _mm512_cvttpd_epu32(hi),
            )
        }};
    }
    // One symbol per lane from `syms` (`start | freq << 16` per lane), precision `$bits`;
    // registers last to first.
    macro_rules! phase {
        ($syms:expr, $bits:expr, $top:expr) => {{
            for r in (0..R).rev() {
                let sym = _mm512_loadu_si512($syms[g0 + 16 * r..g0 + 16 * r + 16].as_ptr().cast());
                let freq = _mm512_srli_epi32::<16>(sym);
                let spill = _mm512_cmpge_epu32_mask(_mm512_srli_epi32::<$top>(xs[r]), freq);
                emit!(xs[r], spill);
                let y = _mm512_mask_srli_epi32::<16>(xs[r], spill, xs[r]);
                let q = quotient!(y, freq);
                let rest = _mm512_sub_epi32(y, _mm512_mullo_epi32(q, freq));
                xs[r] = _mm512_add_epi32(
                    _mm512_add_epi32(_mm512_slli_epi32::<$bits>(q), rest),
                    _mm512_and_si512(sym, low16),
                );
            }
        }};
    }
    phase!(s.m, M_BITS, { 32 - M_BITS });
    if !escapes.is_empty() {
        // Escaped lanes take their exponent as 8 raw bits.
        let mut mask = 0u64;
        let mut es = [0u32; WAYS];
        for &(at, e) in escapes {
            let l = at as usize - g0;
            mask |= 1 << l;
            es[l] = e as u32;
        }
        for r in (0..R).rev() {
            let m = (mask >> (16 * r)) as u16;
            let e = _mm512_loadu_si512(es[16 * r..].as_ptr().cast());
            let spill = _mm512_mask_cmpge_epu32_mask(m, xs[r], _mm512_set1_epi32(1 << 24));
            emit!(xs[r], spill);
            let y = _mm512_mask_srli_epi32::<16>(xs[r], spill, xs[r]);
            xs[r] = _mm512_mask_add_epi32(xs[r], m, _mm512_slli_epi32::<8>(y), e);
        }
    }
    phase!(s.e, E_BITS, { 32 - E_BITS });
    for (r, xs) in xs.iter().enumerate() {
        _mm512_storeu_si512(x[16 * r..].as_mut_ptr().cast(), *xs);
    }
    true
}
