//! Invariant Bit Packing: over each group of fixed-width words, bit positions on which at least
//! T of the words agree are stored once (mask + value), each word gets one participation bit,
//! and only the remaining bits of participating words are packed. T is swept per group and the
//! cheapest choice kept; a group with nothing invariant is stored packed as is.
//!
//! Layout (GPU-friendly: fixed group size, byte-aligned groups, per-word offsets from a prefix
//! sum of the participation bits): `u16` byte length of every group, then each group:
//! mode `0` = words packed LSB-first at full width; mode `1` = mask `u64`, value `u64`,
//! participation bitmap, then per word either its non-invariant bits (participant) or all bits;
//! mode `2` = as mode 1 when every word participates, without the bitmap.

use crate::error::{Error, Result};
use crate::simd::{kernels, Kernels};

/// Words per group.
pub const GROUP: usize = 4096;
/// Fractions (of 20) of the group that must agree for a bit to count as invariant.
const THRESHOLDS: [usize; 7] = [14, 15, 16, 17, 18, 19, 20];

/// A decoded word: `u64`, or `u32` for words of at most 32 bits (half the memory to write
/// and read back).
pub trait Word:
    Copy
    + Default
    + From<u16>
    + std::ops::Shl<u32, Output = Self>
    + std::ops::Shr<u32, Output = Self>
    + std::ops::BitOr<Output = Self>
    + std::ops::BitAnd<Output = Self>
    + std::ops::Sub<Output = Self>
{
    /// Widest words this type holds.
    const BITS: u32;
    /// `v`, which fits.
    fn from_u64(v: u64) -> Self;
    /// The word as `u64`.
    fn to_u64(self) -> u64;
    /// The low 32 bits of the word.
    fn low32(self) -> u32;
}

impl Word for u64 {
    const BITS: u32 = 64;
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        v
    }
    #[inline(always)]
    fn to_u64(self) -> u64 {
        self
    }
    #[inline(always)]
    fn low32(self) -> u32 {
        self as u32
    }
}

impl Word for u32 {
    const BITS: u32 = 32;
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        v as u32
    }
    #[inline(always)]
    fn to_u64(self) -> u64 {
        self as u64
    }
    #[inline(always)]
    fn low32(self) -> u32 {
        self
    }
}

/// Appends bits LSB-first.
pub(super) struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    acc: u128,
    fill: u32,
}

/// Bit length of `v` (0 for 0).
#[inline(always)]
pub(super) fn bit_length(v: u32) -> u32 {
    u32::BITS - v.leading_zeros()
}

impl<'a> BitWriter<'a> {
    /// A writer appending to `out`.
    pub(super) fn new(out: &'a mut Vec<u8>) -> Self {
        BitWriter {
            out,
            acc: 0,
            fill: 0,
        }
    }

    /// Appends the low `n` (at most 64) bits of `v`, which has no bits above them.
    #[inline(always)]
    pub(super) fn put(&mut self, v: u64, n: u32) {
        self.acc |= (v as u128) << self.fill;
        self.fill += n;
        if self.fill >= 64 {
            self.out.extend_from_slice(&(self.acc as u64).to_le_bytes());
            self.acc >>= 64;
            self.fill -= 64;
        }
    }

    /// Appends the bits of `v` (at least 1) below its top bit, which its bit length (coded
    /// apart) stands for; `get_below_top` reads it back.
    #[inline(always)]
    pub(super) fn put_below_top(&mut self, v: u32) {
        let len = bit_length(v);
        self.put((v & !(1 << (len - 1))) as u64, len - 1);
    }

    /// Writes the bits left, the last byte zero-padded.
    pub(super) fn finish(self) {
        let bytes = self.fill.div_ceil(8) as usize;
        self.out
            .extend_from_slice(&(self.acc as u64).to_le_bytes()[..bytes]);
    }
}

/// Reads bits LSB-first; reading past the end yields zeros: `overrun` tells a load that came
/// up short of a read, `consumed` counts bytes past the end otherwise.
pub(super) struct BitReader<'a> {
    data: &'a [u8],
    pos: usize,
    acc: u128,
    fill: u32,
    overrun: bool,
}

impl<'a> BitReader<'a> {
    /// A reader of `data` from its first bit.
    pub(super) fn new(data: &'a [u8]) -> Self {
        BitReader {
            data,
            pos: 0,
            acc: 0,
            fill: 0,
            overrun: false,
        }
    }

    /// Whether a read went past the end of the data.
    pub(super) fn overrun(&self) -> bool {
        self.overrun
    }

    /// Bytes of the data holding the bits read so far (the last one maybe in part), if no
    /// read overran: every load but the last then took 8 bytes, and the last at least one.
    pub(super) fn consumed(&self) -> usize {
        (64 * self.pos.div_ceil(8) - self.fill as usize).div_ceil(8)
    }

    /// The value of bit length `len` (1 to 64) whose bits below the top are next
    /// (`put_below_top`'s).
    #[inline(always)]
    pub(super) fn get_below_top(&mut self, len: u32) -> u64 {
        (1 << (len - 1)) | self.get(len - 1)
    }

    /// The next `n` (at most 64) bits.
    #[inline(always)]
    pub(super) fn get(&mut self, n: u32) -> u64 {
        if self.fill < n {
            let mut b = [0u8; 8];
            let take = self.data.len().saturating_sub(self.pos).min(8);
            b[..take].copy_from_slice(&self.data[self.pos..self.pos + take]);
            if take < 8 && (take as u32) * 8 + self.fill < n {
                self.overrun = true;
            }
            self.pos += take;
            self.acc |= (u64::from_le_bytes(b) as u128) << self.fill;
            self.fill += 64;
        }
        let v = if n == 64 {
            self.acc as u64
        } else {
            (self.acc as u64) & ((1u64 << n) - 1)
        };
        self.acc >>= n;
        self.fill -= n;
        v
    }
}

/// Portable bit extract: the bits of `x` under `mask`, packed to the bottom.
#[inline(always)]
fn pext_portable(x: u64, mut mask: u64) -> u64 {
    let (mut r, mut bit) = (0u64, 1u64);
    while mask != 0 {
        if x & mask & mask.wrapping_neg() != 0 {
            r |= bit;
        }
        bit <<= 1;
        mask &= mask - 1;
    }
    r
}

/// Portable bit deposit: the low bits of `x` spread to the positions of `mask`.
#[inline(always)]
fn pdep_portable(mut x: u64, mut mask: u64) -> u64 {
    let mut r = 0u64;
    while mask != 0 {
        let low = mask & mask.wrapping_neg();
        if x & 1 != 0 {
            r |= low;
        }
        x >>= 1;
        mask &= mask - 1;
    }
    r
}

/// Packs the variant bits of one group with the given bit-extract function.
macro_rules! pack_body {
    ($words:expr, $bits:expr, $mask:expr, $value:expr, $out:expr, $pext:expr) => {{
        let (words, bits, mask, value, out): (&[u64], u32, u64, u64, &mut Vec<u8>) =
            ($words, $bits, $mask, $value, $out);
        let keep = !mask & width_mask(bits);
        let k = keep.count_ones();
        let mut w = BitWriter::new(out);
        for &x in words {
            if (x ^ value) & mask == 0 {
                if k > 0 {
                    w.put($pext(x, keep), k);
                }
            } else {
                w.put(x, bits);
            }
        }
        w.finish();
    }};
}

/// Unpacks the words of one group with the given bit-deposit function.
macro_rules! unpack_body {
    ($r:expr, $part:expr, $bits:expr, $mask:expr, $value:expr, $out:expr, $pdep:expr) => {{
        let (r, part, bits, mask, value, out): (&mut BitReader, &[u8], u32, u64, u64, &mut [_]) =
            ($r, $part, $bits, $mask, $value, $out);
        let keep = !mask & width_mask(bits);
        let k = keep.count_ones();
        let base = value & mask;
        for (i, o) in out.iter_mut().enumerate() {
            *o = T::from_u64(if part[i / 8] >> (i % 8) & 1 != 0 {
                base | if k > 0 { $pdep(r.get(k), keep) } else { 0 }
            } else {
                r.get(bits)
            });
        }
    }};
}

fn pack_portable(words: &[u64], bits: u32, mask: u64, value: u64, out: &mut Vec<u8>) {
    pack_body!(words, bits, mask, value, out, pext_portable)
}

fn unpack_portable<T: Word>(
    r: &mut BitReader,
    part: &[u8],
    bits: u32,
    m: u64,
    v: u64,
    out: &mut [T],
) {
    unpack_body!(r, part, bits, m, v, out, pdep_portable)
}

crate::simd::avx2! {
fn pack_bmi2(words: &[u64], bits: u32, mask: u64, value: u64, out: &mut Vec<u8>) {
    use std::arch::x86_64::_pext_u64;
    pack_body!(words, bits, mask, value, out, |x, m| _pext_u64(x, m))
}
}

crate::simd::avx2! {
fn unpack_bmi2<T: Word>(
    r: &mut BitReader,
    part: &[u8],
    bits: u32,
    m: u64,
    v: u64,
    out: &mut [T],
) {
    use std::arch::x86_64::_pdep_u64;
    unpack_body!(r, part, bits, m, v, out, |x, m| _pdep_u64(x, m))
}
}

/// Whether the AVX-512 VBMI plain (un)packing kernels run: on the fast path (`fast`) at the
/// AVX-512 level of a CPU with VBMI.
#[cfg(target_arch = "x86_64")]
fn use_vbmi(fast: bool) -> bool {
    fast && kernels() == Kernels::Avx512 && crate::simd::has_vbmi()
}

/// Whether the BMI2 bit-manipulation path is used: from the AVX2 level on, whose features
/// include BMI2.
fn use_bmi2() -> bool {
    kernels() >= Kernels::Avx2
}

#[inline(always)]
fn width_mask(bits: u32) -> u64 {
    if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// How many of `words` have each bit set: four interleaved 4-bit counters per nibble,
/// emptied every 15 words.
fn bit_counts(words: &[u64]) -> [usize; 64] {
    const NIBBLES: u64 = 0x1111_1111_1111_1111;
    let mut ones = [0usize; 64];
    for chunk in words.chunks(15) {
        let mut c = [0u64; 4];
        for &x in chunk {
            for (r, c) in c.iter_mut().enumerate() {
                *c += (x >> r) & NIBBLES;
            }
        }
        for (r, &c) in c.iter().enumerate() {
            for nib in 0..16 {
                ones[4 * nib + r] += ((c >> (4 * nib)) & 0xf) as usize;
            }
        }
    }
    ones
}

/// Cheapest invariant mask and value for a group, or `None` when plain packing is cheaper.
fn choose(words: &[u64], bits: u32) -> Option<(u64, u64)> {
    let n = words.len();
    // Bit statistics from every 8th word propose the masks; costs are then exact.
    let sample: Vec<u64> = words.iter().step_by(8).copied().collect();
    let ns = sample.len();
    let ones = bit_counts(&sample);
    let plain = n as u64 * bits as u64;
    let mut best: Option<(u64, u64, u64)> = None;
    let mut tried = Vec::new();
    for t in THRESHOLDS {
        let need = (ns * t).div_ceil(20);
        let (mut mask, mut value) = (0u64, 0u64);
        for (b, &o) in ones.iter().enumerate().take(bits as usize) {
            if o >= need {
                mask |= 1 << b;
                value |= 1 << b;
            } else if ns - o >= need {
                mask |= 1 << b;
            }
        }
        if mask == 0 || tried.contains(&mask) {
            continue;
        }
        tried.push(mask);
        let part = words.iter().filter(|&&x| (x ^ value) & mask == 0).count() as u64;
        let k = bits as u64 - mask.count_ones() as u64;
        // With every word participating the bitmap is left out (mode 2).
        let bitmap = if part == n as u64 { 0 } else { n as u64 };
        let cost = 128 + bitmap + part * k + (n as u64 - part) * bits as u64;
        if best.is_none_or(|b| cost < b.0) {
            best = Some((cost, mask, value));
        }
    }
    best.filter(|b| b.0 + 8 < plain).map(|b| (b.1, b.2))
}

/// Appends the IBP encoding of `words` (each `bits` wide, 1..=64) to `out`.
pub fn pack(words: &[u64], bits: u32, out: &mut Vec<u8>) {
    pack_with(words, bits, out, use_bmi2())
}

fn pack_with(words: &[u64], bits: u32, out: &mut Vec<u8>, bmi2: bool) {
    let mut p = Packer::with_path(bits, words.len(), bmi2);
    for chunk in words.chunks(GROUP) {
        p.group(chunk);
    }
    p.finish(out);
}

thread_local! {
    /// The body buffer of the last section this thread packed: reused, so that packing large
    /// blocks does not fault in fresh pages each time.
    static SPARE_BODY: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Packs a section group by group, so the words of one group are all it needs at a time.
pub struct Packer {
    bits: u32,
    bmi2: bool,
    /// Byte length of each group so far (a group is at most 1 + 16 + 512 + 8 GROUP bytes).
    lens: Vec<u16>,
    /// The groups so far.
    body: Vec<u8>,
}

impl Packer {
    /// A packer for words of `bits` width, about `n` of them.
    pub fn new(bits: u32, n: usize) -> Self {
        Self::with_path(bits, n, use_bmi2())
    }

    fn with_path(bits: u32, n: usize, bmi2: bool) -> Self {
        let mut body = SPARE_BODY.with(|b| std::mem::take(&mut *b.borrow_mut()));
        body.clear();
        body.reserve(n * bits as usize / 8 + 64);
        Packer {
            bits,
            bmi2,
            lens: Vec::with_capacity(n.div_ceil(GROUP)),
            body,
        }
    }

    /// Packs the next group (GROUP words; only the last group of a section may be shorter).
    pub fn group(&mut self, chunk: &[u64]) {
        let (bits, bmi2) = (self.bits, self.bmi2);
        let out = &mut self.body;
        let start = out.len();
        match choose(chunk, bits) {
            None => {
                out.push(0);
                let done = pack_plain_fast(chunk, bits, out, bmi2);
                // From a byte boundary on (whole vectors of words end on one).
                let mut w = BitWriter::new(&mut *out);
                // As many words per write as fit in 64 bits.
                let per = (64 / bits).max(1) as usize;
                for part in chunk[done..].chunks(per) {
                    let mut v = 0u64;
                    for (t, &x) in part.iter().enumerate() {
                        v |= x << (t as u32 * bits);
                    }
                    w.put(v, part.len() as u32 * bits);
                }
                w.finish();
            }
            Some((mask, value)) => {
                let mut bitmap = vec![0u8; chunk.len().div_ceil(8)];
                let mut all = true;
                for (i, &x) in chunk.iter().enumerate() {
                    if (x ^ value) & mask == 0 {
                        bitmap[i / 8] |= 1 << (i % 8);
                    } else {
                        all = false;
                    }
                }
                out.push(if all { 2 } else { 1 });
                out.extend_from_slice(&mask.to_le_bytes());
                out.extend_from_slice(&value.to_le_bytes());
                if !all {
                    out.extend_from_slice(&bitmap);
                }
                #[cfg(target_arch = "x86_64")]
                if bmi2 {
                    // SAFETY: BMI2 support was checked at run time.
                    unsafe { pack_bmi2(chunk, bits, mask, value, out) };
                } else {
                    pack_portable(chunk, bits, mask, value, out);
                }
                #[cfg(not(target_arch = "x86_64"))]
                {
                    let _ = bmi2;
                    pack_portable(chunk, bits, mask, value, out);
                }
            }
        }
        let len = out.len() - start;
        debug_assert!(len <= u16::MAX as usize, "an IBP group fits a u16 length");
        self.lens.push(len as u16);
    }

    /// Appends the section: the group lengths, then the groups.
    pub fn finish(self, out: &mut Vec<u8>) {
        out.reserve(2 * self.lens.len() + self.body.len());
        for len in &self.lens {
            out.extend_from_slice(&len.to_le_bytes());
        }
        out.extend_from_slice(&self.body);
        SPARE_BODY.with(|b| *b.borrow_mut() = self.body);
    }
}

/// Decodes `out.len()` words of `bits` width packed by `pack` from the start of `data`;
/// returns the number of bytes consumed.
pub fn unpack(data: &[u8], bits: u32, out: &mut [u64]) -> Result<usize> {
    unpack_with(data, bits, out, use_bmi2())
}

fn unpack_with(data: &[u8], bits: u32, out: &mut [u64], bmi2: bool) -> Result<usize> {
    let mut u = Unpacker::new(data, bits, out.len(), bmi2)?;
    for chunk in out.chunks_mut(GROUP) {
        u.group(chunk)?;
    }
    Ok(u.consumed())
}

/// Decodes an IBP section group by group.
pub struct Unpacker<'a> {
    data: &'a [u8],
    bits: u32,
    groups: usize,
    g: usize,
    pos: usize,
    bmi2: bool,
}

/// Bytes of a group's length.
const LEN_BYTES: usize = 2;

impl<'a> Unpacker<'a> {
    /// Starts on a section of `n` words of `bits` width at the start of `data`.
    pub fn new(data: &'a [u8], bits: u32, n: usize, bmi2: bool) -> Result<Self> {
        let groups = n.div_ceil(GROUP);
        if data.len() < LEN_BYTES * groups {
            return Err(damaged());
        }
        Ok(Unpacker {
            data,
            bits,
            groups,
            g: 0,
            pos: LEN_BYTES * groups,
            bmi2,
        })
    }

    /// Starts with the bit path the kernel level allows.
    pub fn for_level(data: &'a [u8], bits: u32, n: usize) -> Result<Self> {
        Self::new(data, bits, n, use_bmi2())
    }

    /// Bytes of the section read so far.
    pub fn consumed(&self) -> usize {
        self.pos
    }

    /// Decodes the next group into `out` (GROUP words, fewer for the last group; words of
    /// `bits` must fit `T`).
    pub fn group<T: Word>(&mut self, out: &mut [T]) -> Result<()> {
        assert!(out.len() <= GROUP, "an IBP group holds at most GROUP words");
        assert!(self.bits <= T::BITS, "IBP words wider than the output type");
        let (bits, g) = (self.bits, self.g);
        if g >= self.groups {
            return Err(damaged());
        }
        let t = &self.data[LEN_BYTES * g..LEN_BYTES * (g + 1)];
        let len = t.iter().rev().fold(0usize, |a, &b| a << 8 | b as usize);
        let body = self
            .data
            .get(self.pos..self.pos.saturating_add(len))
            .ok_or_else(damaged)?;
        self.pos += len;
        self.g += 1;
        let (&mode, rest) = body.split_first().ok_or_else(damaged)?;
        match mode {
            0 => {
                if (rest.len() as u64) * 8 < out.len() as u64 * bits as u64 {
                    return Err(damaged());
                }
                unpack_plain(rest, bits, out, self.bmi2);
                Ok(())
            }
            1 | 2 => {
                let nb = if mode == 1 { out.len().div_ceil(8) } else { 0 };
                let head = rest.get(..16 + nb).ok_or_else(damaged)?;
                let mask = u64::from_le_bytes(head[..8].try_into().map_err(|_| damaged())?);
                let value = u64::from_le_bytes(head[8..16].try_into().map_err(|_| damaged())?);
                if mask & !width_mask(bits) != 0 {
                    return Err(damaged());
                }
                if mode == 2 {
                    return self.every_participates(&rest[16..], mask, value, out);
                }
                // Mode 2: every word participates.
                const EVERY: [u8; GROUP / 8] = [0xff; GROUP / 8];
                let part = if mode == 1 { &head[16..] } else { &EVERY[..] };
                let mut reader = BitReader::new(&rest[16 + nb..]);
                #[cfg(target_arch = "x86_64")]
                if self.bmi2 {
                    // SAFETY: BMI2 support was checked at run time.
                    unsafe { unpack_bmi2(&mut reader, part, bits, mask, value, out) };
                } else {
                    unpack_portable(&mut reader, part, bits, mask, value, out);
                }
                #[cfg(not(target_arch = "x86_64"))]
                unpack_portable(&mut reader, part, bits, mask, value, out);
                if reader.overrun {
                    return Err(damaged());
                }
                Ok(())
            }
            _ => Err(damaged()),
        }
    }
}

impl Unpacker<'_> {
    /// Mode 2: the variant bits of every word, packed at their count k, unpacked as plain
    /// k-bit words and put back in place (a shift when they are contiguous).
    fn every_participates<T: Word>(
        &self,
        packed: &[u8],
        mask: u64,
        value: u64,
        out: &mut [T],
    ) -> Result<()> {
        let keep = !mask & width_mask(self.bits);
        let k = keep.count_ones();
        let base = value & mask;
        if k == 0 {
            out.fill(T::from_u64(base));
            return Ok(());
        }
        if (packed.len() as u64) * 8 < out.len() as u64 * k as u64 {
            return Err(damaged());
        }
        unpack_plain(packed, k, out, self.bmi2);
        let shift = keep.trailing_zeros();
        if keep >> shift == width_mask(k) {
            for o in out.iter_mut() {
                *o = T::from_u64(base | o.to_u64() << shift);
            }
            return Ok(());
        }
        #[cfg(target_arch = "x86_64")]
        if self.bmi2 {
            // SAFETY: BMI2 support was checked at run time.
            unsafe { deposit_bmi2(out, keep, base) };
            return Ok(());
        }
        for o in out.iter_mut() {
            *o = T::from_u64(base | pdep_portable(o.to_u64(), keep));
        }
        Ok(())
    }
}

crate::simd::avx2! {
/// `base | pdep(word, keep)` for every word.
fn deposit_bmi2<T: Word>(out: &mut [T], keep: u64, base: u64) {
    use std::arch::x86_64::_pdep_u64;
    for o in out.iter_mut() {
        *o = T::from_u64(base | _pdep_u64(o.to_u64(), keep));
    }
}
}

fn damaged() -> Error {
    Error::Corrupt("invariant-bit section is damaged".into())
}

/// Plain packed words (the length was checked): a vector of words per step where the CPU
/// allows, 8-byte loads at each word's bit position while they fit, a bit reader for the rest.
fn unpack_plain<T: Word>(rest: &[u8], bits: u32, out: &mut [T], fast: bool) {
    let mask = width_mask(bits);
    let mut i = 0;
    #[cfg(target_arch = "x86_64")]
    if use_vbmi(fast) {
        // SAFETY: AVX-512 F/BW/VBMI support was checked by `use_vbmi`.
        i = unsafe { unpack_plain_vbmi(rest, bits, out) };
    }
    let _ = fast;
    if bits <= 56 {
        let end = (rest.len().saturating_sub(8) * 8) / bits as usize;
        let end = end.min(out.len()).max(i);
        for (j, o) in out[..end].iter_mut().enumerate().skip(i) {
            let at = j * bits as usize;
            let b = &rest[at / 8..at / 8 + 8];
            let w = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
            *o = T::from_u64((w >> (at % 8)) & mask);
        }
        i = end;
    }
    if i < out.len() {
        let at = i * bits as usize;
        let mut reader = BitReader::new(&rest[at / 8..]);
        if !at.is_multiple_of(8) {
            reader.get((at % 8) as u32);
        }
        for o in out[i..].iter_mut() {
            *o = T::from_u64(reader.get(bits));
        }
    }
}

/// Packs the first words of `chunk` plainly a vector at a time where the CPU allows (and
/// `fast`); returns how many it packed (whole vectors, which end on a byte boundary).
fn pack_plain_fast(chunk: &[u64], bits: u32, out: &mut Vec<u8>, fast: bool) -> usize {
    #[cfg(target_arch = "x86_64")]
    if use_vbmi(fast) {
        // SAFETY: AVX-512 F/BW/VBMI support was checked by `use_vbmi`.
        return unsafe { pack_plain_vbmi(chunk, bits, out) };
    }
    let _ = (chunk, bits, out, fast);
    0
}

crate::simd::avx512_vbmi! {
/// Packs words a vector at a time (the inverse of `unpack_plain_vbmi`): 16 of 7 to 25 bits
/// from `u32` lanes, or 8 of 26 to 57 bits from `u64` lanes, each shifted to its bit offset
/// within its first byte; a byte permutation then moves the bytes of the even lanes, and
/// another those of the odd lanes, to their places (a byte holds bits of at most two words,
/// which are neighbours). Returns how many words it packed (0 for other widths).
fn pack_plain_vbmi(words: &[u64], bits: u32, out: &mut Vec<u8>) -> usize {
    use std::arch::x86_64::*;
    let b = bits as usize;
    let w = if b + 7 <= 32 { 4 } else { 8 };
    if b < 7 || b + 7 > 64 {
        return 0;
    }
    let lanes = 64 / w;
    let step = lanes * b / 8;
    let steps = words.len() / lanes;
    // Per lane its shift; per output byte the lane byte it takes, for each parity.
    let (mut shift, mut even, mut odd) = ([0u8; 64], [0u8; 64], [0u8; 64]);
    let (mut from_even, mut from_odd) = (0u64, 0u64);
    for j in 0..lanes {
        shift[w * j] = (j * b % 8) as u8;
        let first = j * b / 8;
        for p in first..=(j * b + b - 1) / 8 {
            let src = (w * j + p - first) as u8;
            match j % 2 {
                0 => (even[p], from_even) = (src, from_even | 1 << p),
                _ => (odd[p], from_odd) = (src, from_odd | 1 << p),
            }
        }
    }
    // SAFETY: each array holds the 64 bytes its load reads.
    let (shift, even, odd) = unsafe {
        (
            _mm512_loadu_si512(shift.as_ptr().cast()),
            _mm512_loadu_si512(even.as_ptr().cast()),
            _mm512_loadu_si512(odd.as_ptr().cast()),
        )
    };
    let mask = _mm512_set1_epi64(width_mask(bits) as i64);
    // Each step stores 64 bytes, of which the next step overwrites all but `step`.
    out.reserve(steps * step + 64);
    let dst = out.spare_capacity_mut().as_mut_ptr();
    for s in 0..steps {
        let src = &words[s * lanes..s * lanes + lanes];
        // SAFETY: `src` holds `lanes` words, 8 or 16: the 64 bytes this load reads, and with
        // 16 (4-byte lanes) the 64 the next one reads.
        let lo = _mm512_and_si512(unsafe { _mm512_loadu_si512(src.as_ptr().cast()) }, mask);
        let placed = if w == 4 {
            // SAFETY: as above.
            let hi = unsafe { _mm512_loadu_si512(src[8..].as_ptr().cast()) };
            let hi = _mm512_and_si512(hi, mask);
            let x = _mm512_inserti64x4::<1>(
                _mm512_castsi256_si512(_mm512_cvtepi64_epi32(lo)),
                _mm512_cvtepi64_epi32(hi),
            );
            _mm512_sllv_epi32(x, shift)
        } else {
            _mm512_sllv_epi64(lo, shift)
        };
        let v = _mm512_or_si512(
            _mm512_maskz_permutexvar_epi8(from_even, even, placed),
            _mm512_maskz_permutexvar_epi8(from_odd, odd, placed),
        );
        // SAFETY: `out` was given room for `steps * step + 64` bytes past its length, and
        // this store writes 64 from `s * step`.
        unsafe { _mm512_storeu_si512(dst.add(s * step).cast(), v) };
    }
    // SAFETY: the first `steps * step` bytes after the old length were all written.
    unsafe { out.set_len(out.len() + steps * step) };
    steps * lanes
}
}

crate::simd::avx512_vbmi! {
/// Unpacks words a vector at a time into `T` lanes of `w` bytes (64 / w words a step: 8 of
/// at most 57 bits into `u64`, 16 of at most 25 bits into `u32`; they span whole bytes): one
/// 64-byte load, a byte permutation putting each word's first `w` bytes in its lane, a shift
/// per lane. Returns how many words it wrote (a multiple of 64 / w, while 64 bytes remain; 0
/// if `bits` is wider than that).
fn unpack_plain_vbmi<T: Word>(rest: &[u8], bits: u32, out: &mut [T]) -> usize {
    use std::arch::x86_64::*;
    let (b, w) = (bits as usize, std::mem::size_of::<T>());
    if !matches!(w, 4 | 8) || b + 7 > 8 * w {
        return 0;
    }
    let lanes = 64 / w;
    // Per lane, little-endian: the source bytes, the shift, the width mask.
    let (mut index, mut shift, mut mask) = ([0u8; 64], [0u8; 64], [0u8; 64]);
    for j in 0..lanes {
        for t in 0..w {
            index[w * j + t] = (j * b / 8 + t) as u8;
        }
        shift[w * j] = (j * b % 8) as u8;
        mask[w * j..w * (j + 1)].copy_from_slice(&width_mask(bits).to_le_bytes()[..w]);
    }
    // SAFETY: each array holds the 64 bytes its load reads.
    let (index, shift, mask) = unsafe {
        (
            _mm512_loadu_si512(index.as_ptr().cast()),
            _mm512_loadu_si512(shift.as_ptr().cast()),
            _mm512_loadu_si512(mask.as_ptr().cast()),
        )
    };
    let mut i = 0;
    while i + lanes <= out.len() && i * b / 8 + 64 <= rest.len() {
        let from = &rest[i * b / 8..i * b / 8 + 64];
        // SAFETY: `from` holds the 64 bytes the load reads.
        let v = unsafe { _mm512_loadu_si512(from.as_ptr().cast()) };
        let moved = _mm512_permutexvar_epi8(index, v);
        let words = match w {
            8 => _mm512_srlv_epi64(moved, shift),
            _ => _mm512_srlv_epi32(moved, shift),
        };
        let to = &mut out[i..i + lanes];
        // SAFETY: `to` holds `lanes` words, the 64 bytes the store writes.
        unsafe { _mm512_storeu_si512(to.as_mut_ptr().cast(), _mm512_and_si512(words, mask)) };
        i += lanes;
    }
    i
}
}

#[cfg(test)]
mod tests;
