//! Copies layer of the tensor path, for arrays built from a formula (transform bases, windows,
//! tables) whose values mostly recur: at a whole number of rows above, read forwards or
//! backwards (a row mirrored about its middle), with the same sign or the other. Each value is
//! one event: it continues the current copy, repeats the value a recent number of rows above
//! (one of `REPS` row distances, most recent first), starts a copy at a coded distance (forwards,
//! backwards, or in the same column), or is a literal. Literals go in order through the tensor
//! codec as an array of their own. Events are coded in the context of the event before; a run
//! of events that repeats those a few values or one or two rows back is coded
//! as one replay.
//!
//! The row length (`period`) is found by the encoder, from how far apart equal values are, and
//! recorded; nothing here needs the array's shape.
//!
//! Payload: dtype tag, value count (`u32`), tail length + tail bytes (a partial last value),
//! period (`u32`), literal count (`u32`), length (`u32`) + tensor payload of the literals,
//! length (`u32`) + the raw lower bits of the distances and run lengths (least significant
//! first), then the rANS stream of the events, distance lengths and replays in value order.

use super::adaptive::{put_prefixed, put_values_and_tail, Context, PayloadReader, STATES};
use super::ibp::{bit_length, BitReader, BitWriter};
use super::planes::read;
use super::DType;
use crate::codecs::block_codec::{set_payload, BlockCodec, Seen};
use crate::entropy::rans;
use crate::error::{Error, Result};
use crate::format::Codec;

/// Row distances remembered for `REP` events.
const REPS: usize = 4;
/// Event symbols: `CONT`; `REP + 2 j + flip` (row distance `j` of the recent ones, `flip` if the
/// sign differs); `COL + flip`, `FWD + flip`, `BWD + flip` (a new distance follows); `LIT`.
const CONT: usize = 0;
const REP: usize = 1;
const COL: usize = REP + 2 * REPS;
const FWD: usize = COL + 2;
const BWD: usize = FWD + 2;
const LIT: usize = BWD + 2;
/// Event symbols of single events, each also the context of the event after it.
const SINGLES: usize = LIT + 1;
/// `REPLAY`: the next run of at least `MIN_REPLAY` events repeats the events one
/// of `BACKS` distances back (in values: a few values, as within a row whose events follow a
/// short cycle, or one or two rows); its distance's index and length follow.
const REPLAY: usize = SINGLES;
const EVENTS: usize = REPLAY + 1;
const MIN_REPLAY: usize = 8;
const BACKS: usize = 8;
/// Distance lengths: 1..=32 bits (index 0 unused).
const LENGTHS: usize = 33;
/// Fewest values a block needs for the layer to be tried.
const MIN_VALUES: usize = 1024;
/// Largest share of literals for the layer to be kept (each costs what the planes codec makes
/// of a value, on top of its event).
const MAX_LITERALS: f64 = 0.5;
/// Values looked at to find the period.
const PERIOD_SAMPLE: usize = 1 << 16;
/// Earlier occurrences of a value whose distances vote for the period, and the most common
/// distances whose greatest common divisor is taken.
const PERIOD_OCCURRENCES: usize = 4;
const PERIOD_TOP: usize = 8;
/// Slots of the table of occurrences that `period` keeps.
const PERIOD_SLOT_BITS: u32 = 13;
/// Slots of the encoder's tables of last occurrences (a power of two).
const SLOT_BITS: u32 = 16;

/// The copy being followed: the next source position, its direction and the sign flip.
#[derive(Clone, Copy)]
struct Follow {
    src: usize,
    back: bool,
    flip: u64,
}

impl Follow {
    /// The copy after its source at `src` was used, if it goes on.
    fn advance(self) -> Option<Follow> {
        match self.back {
            true => self.src.checked_sub(1).map(|src| Follow { src, ..self }),
            false => Some(Follow {
                src: self.src + 1,
                ..self
            }),
        }
    }
}

/// The recent row distances, most recent first.
struct Reps([u32; REPS]);

impl Reps {
    fn new() -> Self {
        let mut r = [0; REPS];
        for (j, d) in r.iter_mut().enumerate() {
            *d = j as u32 + 1;
        }
        Reps(r)
    }

    /// Moves entry `j` first and returns it.
    fn take(&mut self, j: usize) -> u32 {
        let d = self.0[j];
        // A fixed number of conditional moves (a copy of `j` entries is a call to memmove).
        for k in (1..REPS).rev() {
            if k <= j {
                self.0[k] = self.0[k - 1];
            }
        }
        self.0[0] = d;
        d
    }

    /// Puts a new distance first, dropping the oldest.
    fn push(&mut self, d: u32) {
        self.0.copy_within(0..REPS - 1, 1);
        self.0[0] = d;
    }
}

/// The distances back a replay may take, for row length `p`.
fn backs(p: usize) -> [usize; BACKS] {
    [1, 2, 3, 4, 8, 16, p, 2 * p]
}

/// Greatest common divisor.
fn gcd(mut a: u32, mut b: u32) -> u32 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The row length the values seem to have: the greatest common divisor of the most common
/// distances between equal magnitudes (1 if none recur). Looks at the first `PERIOD_SAMPLE`
/// values, each against the last `PERIOD_OCCURRENCES` of its magnitude kept in a
/// direct-mapped table (a value that loses its slot loses votes, nothing else).
fn period(n: usize, val: impl Fn(usize) -> u64, mag: u64) -> u32 {
    let n = n.min(PERIOD_SAMPLE);
    let mut slots = vec![[u32::MAX; PERIOD_OCCURRENCES]; 1 << PERIOD_SLOT_BITS];
    let mut votes = vec![0u32; n];
    for i in 0..n {
        let a = val(i) & mag;
        let slot = &mut slots[Last::slot(a) >> (SLOT_BITS - PERIOD_SLOT_BITS)];
        if slot[0] != u32::MAX && val(slot[0] as usize) & mag != a {
            slot.fill(u32::MAX);
        }
        for &j in slot.iter().take_while(|&&j| j != u32::MAX) {
            votes[i - j as usize] += 1;
        }
        slot.copy_within(0..PERIOD_OCCURRENCES - 1, 1);
        slot[0] = i as u32;
    }
    // The most voted distances, the shorter first on ties.
    let mut top = [(0u32, 0u32); PERIOD_TOP];
    for (d, &c) in votes.iter().enumerate().skip(1) {
        if c > top[PERIOD_TOP - 1].1 {
            let at = top
                .iter()
                .position(|&(_, t)| c > t)
                .unwrap_or(PERIOD_TOP - 1);
            top.copy_within(at..PERIOD_TOP - 1, at + 1);
            top[at] = (d as u32, c);
        }
    }
    top.iter()
        .filter(|&&(_, c)| c > 0)
        .fold(0, |g, &(d, _)| gcd(g, d))
        .max(1)
}

/// Position of the last value of magnitude `key` (and what else it must match) kept in a
/// direct-mapped table; the caller checks that the slot still holds it.
struct Last(Vec<u32>);

impl Last {
    fn new() -> Self {
        Last(vec![u32::MAX; 1 << SLOT_BITS])
    }

    #[inline(always)]
    fn slot(key: u64) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOT_BITS)) as usize
    }

    #[inline(always)]
    fn get(&self, key: u64) -> Option<usize> {
        let p = self.0[Self::slot(key)];
        (p != u32::MAX).then_some(p as usize)
    }

    #[inline(always)]
    fn set(&mut self, key: u64, i: usize) {
        self.0[Self::slot(key)] = i as u32;
    }
}

/// Codes `data`, an array of `dtype`, in this layer if under `MAX_LITERALS` of its values are
/// literals; `None` if not.
pub fn encode_chosen(data: &[u8], dtype: DType) -> Option<Vec<u8>> {
    let coded = match dtype.width() {
        2 => encode_w::<2>(data, dtype),
        4 => encode_w::<4>(data, dtype),
        _ => encode_w::<8>(data, dtype),
    };
    coded.map(|(payload, _)| payload)
}

/// `encode_chosen` for values of `W` bytes, with how many events of each kind it coded.
fn encode_w<const W: usize>(data: &[u8], dtype: DType) -> Option<(Vec<u8>, [usize; EVENTS])> {
    let n = data.len() / W;
    if n < MIN_VALUES || n > u32::MAX as usize - 1 {
        return None;
    }
    let sign = 1u64 << (8 * W - 1);
    let mag = sign - 1;
    let val = |i: usize| read::<W>(&data[i * W..]);
    let p = period(n, val, mag) as usize;
    let mut literals: Vec<u8> = Vec::new();
    let (mut last, mut column) = (Last::new(), Last::new());
    // The column (`i mod p`, kept without a division) mixed into the magnitude.
    let col_key = |a: u64, col: usize| a ^ (col as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    let mut col = 0;
    let mut reps = Reps::new();
    let mut copy: Option<Follow> = None;
    // Each value's event, and the new distances in order.
    let mut events: Vec<u8> = Vec::with_capacity(n);
    let mut distances: Vec<u32> = Vec::new();
    for i in 0..n {
        let v = val(i);
        let a = v & mag;
        let flip = |src: usize| usize::from((val(src) ^ v) & sign != 0);
        let (e, d) = 'e: {
            if let Some(c) = copy {
                if val(c.src) ^ c.flip == v {
                    copy = c.advance();
                    break 'e (CONT, 0);
                }
            }
            copy = None;
            for j in 0..REPS {
                let d = reps.0[j] as usize * p;
                if d <= i && val(i - d) & mag == a {
                    reps.take(j);
                    break 'e (REP + 2 * j + flip(i - d), 0);
                }
            }
            // The last value of this magnitude, and the sign flip from it.
            let prev = last
                .get(a)
                .filter(|&j| val(j) & mag == a)
                .map(|j| (j, (val(j) ^ v) & sign));
            if let Some((j, f)) = prev {
                let next = (i + 1 < n).then(|| val(i + 1) ^ f);
                if j > 0 && next == Some(val(j - 1)) {
                    copy = Some(Follow {
                        src: j - 1,
                        back: true,
                        flip: f,
                    });
                    break 'e (BWD + usize::from(f != 0), (i - j) as u32);
                }
                if next == Some(val(j + 1)) {
                    copy = Some(Follow {
                        src: j + 1,
                        back: false,
                        flip: f,
                    });
                    break 'e (FWD + usize::from(f != 0), (i - j) as u32);
                }
            }
            let above = column
                .get(col_key(a, col))
                .filter(|&j| val(j) & mag == a && (i - j) % p == 0);
            if let Some(j) = above {
                let d = ((i - j) / p) as u32;
                reps.push(d);
                break 'e (COL + flip(j), d);
            }
            if let Some((j, f)) = prev {
                copy = Some(Follow {
                    src: j + 1,
                    back: false,
                    flip: f,
                });
                break 'e (FWD + usize::from(f != 0), (i - j) as u32);
            }
            literals.extend_from_slice(&data[i * W..i * W + W]);
            (LIT, 0)
        };
        events.push(e as u8);
        if carries_distance(e).is_some() {
            distances.push(d);
        }
        last.set(a, i);
        column.set(col_key(a, col), i);
        col += 1;
        if col == p {
            col = 0;
        }
    }
    let m = literals.len() / W;
    if m as f64 > MAX_LITERALS * n as f64 {
        return None;
    }
    let (stream, raw, kinds) = code_events(&events, &distances, p);
    let tail = &data[n * W..];
    let mut out = Vec::new();
    out.push(dtype.tag());
    put_values_and_tail(&mut out, n, tail);
    out.extend_from_slice(&(p as u32).to_le_bytes());
    out.extend_from_slice(&(m as u32).to_le_bytes());
    put_prefixed(&mut out, |o| super::encode_append(&literals, dtype, o));
    put_prefixed(&mut out, |o| o.extend_from_slice(&raw));
    out.extend_from_slice(&stream);
    Some((out, kinds))
}

/// The longest run of events from `i` on (up to `MIN_REPLAY` or more) that repeats the events
/// one of `backs` back, none of them carrying a distance: its length and the distance's index.
fn longest_replay(events: &[u8], i: usize, backs: &[usize; BACKS]) -> (usize, usize) {
    let mut best = (0, 0);
    for (b, &back) in backs.iter().enumerate() {
        // Only a run that also matches where the best one ends can be longer, and only one
        // that matches `MIN_REPLAY - 1` on can be a replay.
        let end = i + best.0.max(MIN_REPLAY - 1);
        if back > i || end >= events.len() || events[end] != events[end - back] {
            continue;
        }
        let len = events[i..]
            .iter()
            .zip(&events[i - back..])
            .take_while(|&(&e, &from)| e == from && carries_distance(e as usize).is_none())
            .count();
        if len > best.0 {
            best = (len, b);
        }
    }
    best
}

/// Codes `events` (one per value, row length `p`) with the new `distances` in order as runs
/// replayed from earlier events where they are long enough, and single events in the context
/// of the event before: returns the rANS stream, the raw lower bits of the distances and run
/// lengths, and how many events of each kind were coded (replays counted once each).
fn code_events(events: &[u8], distances: &[u32], p: usize) -> (Vec<u8>, Vec<u8>, [usize; EVENTS]) {
    let backs = backs(p);
    let mut ctx = [(); SINGLES].map(|_| Context::<EVENTS>::new());
    let mut lengths = [(); 4].map(|_| Context::<LENGTHS>::new());
    let mut back_ctx = Context::<BACKS>::new();
    let mut enc = rans::Encoder::new(events.len() + events.len() / 8, STATES);
    let mut raw = Vec::new();
    let mut bits = BitWriter::new(&mut raw);
    // A value's bit length through `table`, its lower bits raw.
    let mut long =
        |v: usize, table: &mut Context<LENGTHS>, k: &mut usize, enc: &mut rans::Encoder| {
            table.put(bit_length(v as u32) as usize, *k % STATES, enc);
            *k += 1;
            bits.put_below_top(v as u32);
        };
    let (mut prev, mut k, mut i) = (LIT, 0usize, 0);
    let mut distance = distances.iter();
    let mut kinds = [0; EVENTS];
    while i < events.len() {
        let (run, b) = longest_replay(events, i, &backs);
        if run >= MIN_REPLAY {
            ctx[prev].put(REPLAY, k % STATES, &mut enc);
            back_ctx.put(b, (k + 1) % STATES, &mut enc);
            k += 2;
            long(run - MIN_REPLAY + 1, &mut lengths[3], &mut k, &mut enc);
            kinds[REPLAY] += 1;
            i += run;
            prev = events[i - 1] as usize;
            continue;
        }
        let e = events[i] as usize;
        ctx[prev].put(e, k % STATES, &mut enc);
        kinds[e] += 1;
        k += 1;
        if let Some(g) = carries_distance(e) {
            let d = *distance.next().expect("a distance for each event with one");
            long(d as usize, &mut lengths[g], &mut k, &mut enc);
        }
        prev = e;
        i += 1;
    }
    bits.finish();
    let mut stream = Vec::new();
    enc.finish(&mut stream);
    (stream, raw, kinds)
}

/// Which distance table an event's new distance is coded with, if it carries one.
fn carries_distance(e: usize) -> Option<usize> {
    (COL..LIT).contains(&e).then(|| (e - COL) / 2)
}

fn corrupt(what: &str) -> Error {
    Error::Corrupt(format!("copies block: {what}"))
}

/// Decodes a payload, appending its `raw_len` bytes to `out`.
pub fn decode(payload: &[u8], raw_len: usize, out: &mut Vec<u8>) -> Result<()> {
    let mut f = PayloadReader::new(payload, "copies");
    let dtype = DType::from_tag(f.take(1)?[0])?;
    let w = dtype.width();
    // fp8 blocks never take this codec (`choice`).
    if w == 1 {
        return Err(Error::Corrupt("copies block: fp8 values".into()));
    }
    let (n, tail) = f.values_and_tail(w, raw_len)?;
    let p = f.u32()? as usize;
    let m = f.u32()? as usize;
    if p == 0 || m > n {
        return Err(corrupt("bad period or literal count"));
    }
    let inner = f.prefixed()?;
    let raw = f.prefixed()?;
    let mut lits = Vec::with_capacity(m * w);
    super::decode_append(inner, m * w, &mut lits, &mut |_| {})?;
    out.reserve(raw_len);
    let mut bits = BitReader::new(raw);
    let dec = rans::Decoder::new(f.rest, STATES)?;
    let dec = match w {
        2 => expand::<2>(dec, n, p, &lits, &mut bits, out)?,
        4 => expand::<4>(dec, n, p, &lits, &mut bits, out)?,
        _ => expand::<8>(dec, n, p, &lits, &mut bits, out)?,
    };
    dec.finish()?;
    if bits.overrun() || bits.consumed() != raw.len() {
        return Err(corrupt("distance bits do not match the events"));
    }
    out.extend_from_slice(tail);
    Ok(())
}

/// What events act on as values are decoded: the recent row distances, the copy being
/// followed and the literals left.
struct Decoding<'l, const W: usize> {
    reps: Reps,
    copy: Option<Follow>,
    lit: std::slice::ChunksExact<'l, u8>,
    /// Row length.
    p: usize,
}

impl<const W: usize> Decoding<'_, W> {
    /// Value `i` under event `e` (with new distance `d`), from the values before it in `out`.
    #[inline(always)]
    fn value(&mut self, e: usize, d: usize, i: usize, out: &[u8]) -> Result<u64> {
        let sign = 1u64 << (8 * W - 1);
        let flip = |e: usize, base: usize| ((e - base) & 1) as u64 * sign;
        let v = match e {
            CONT => {
                let c = self.copy.ok_or_else(|| corrupt("no copy to continue"))?;
                let s = Some(c.src)
                    .filter(|&s| s < i)
                    .ok_or_else(|| corrupt("copy past the values"))?;
                self.copy = c.advance();
                read::<W>(&out[s * W..]) ^ c.flip
            }
            _ if e < COL => {
                self.copy = None;
                let j = (e - REP) / 2;
                let d = self.reps.take(j) as usize * self.p;
                let s = i
                    .checked_sub(d)
                    .ok_or_else(|| corrupt("repeat before the start"))?;
                read::<W>(&out[s * W..]) ^ flip(e, REP)
            }
            _ if e < FWD => {
                self.copy = None;
                self.reps.push(d as u32);
                let s = d
                    .checked_mul(self.p)
                    .and_then(|d| i.checked_sub(d))
                    .ok_or_else(|| corrupt("column copy before the start"))?;
                read::<W>(&out[s * W..]) ^ flip(e, COL)
            }
            _ if e < LIT => {
                let s = i
                    .checked_sub(d)
                    .ok_or_else(|| corrupt("copy before the start"))?;
                let f = flip(e, if e < BWD { FWD } else { BWD });
                self.copy = match e < BWD {
                    true => Some(Follow {
                        src: s + 1,
                        back: false,
                        flip: f,
                    }),
                    false => s.checked_sub(1).map(|src| Follow {
                        src,
                        back: true,
                        flip: f,
                    }),
                };
                read::<W>(&out[s * W..]) ^ f
            }
            _ => {
                self.copy = None;
                read::<W>(self.lit.next().ok_or_else(|| corrupt("too few literals"))?)
            }
        };
        Ok(v)
    }
}

/// Makes room in `buf` for `need` values of `W` bytes after `start` (at most `n`), doubling it,
/// so that it grows with the values decoded, never from the declared count alone.
#[inline(always)]
fn room<const W: usize>(buf: &mut Vec<u8>, start: usize, need: usize, n: usize) {
    let have = (buf.len() - start) / W;
    if have < need {
        let to = need.max(2 * have).max(1024).min(n);
        buf.resize(start + to * W, 0);
    }
}

/// Follows the events of the stream in `dec` for `n` values, appending them (literals from `lits`)
/// to `out`, which is empty; returns the decoder for its final check.
fn expand<'a, const W: usize>(
    dec: rans::Decoder<'a>,
    n: usize,
    p: usize,
    lits: &[u8],
    bits: &mut BitReader,
    out: &mut Vec<u8>,
) -> Result<rans::Decoder<'a>> {
    let (mut st, mut words) = dec.split();
    let mut ctx = [(); SINGLES].map(|_| Context::<EVENTS>::new());
    let mut lengths = [(); 4].map(|_| Context::<LENGTHS>::new());
    let mut back_ctx = Context::<BACKS>::new();
    let backs = backs(p);
    let mut state = Decoding::<W> {
        reps: Reps::new(),
        copy: None,
        lit: lits.chunks_exact(W),
        p,
    };
    // Each value's event, for replays.
    let mut events = Vec::new();
    let (mut prev, mut k, mut i) = (LIT, 0usize, 0);
    let start = out.len();
    let buf = out;
    let mut out: &mut [u8] = &mut buf[start..];
    // A value coded as its bit length (through `table`) and its lower bits raw.
    let mut long = |table: &mut Context<LENGTHS>,
                    k: &mut usize,
                    st: &mut [u32; _],
                    words: &mut rans::Words| {
        let len = table.get(&mut st[*k % STATES], words);
        *k += 1;
        match len {
            0 => Err(corrupt("zero bit length")),
            _ => Ok(bits.get_below_top(len as u32) as usize),
        }
    };
    while i < n {
        let e = ctx[prev].get(&mut st[k % STATES], &mut words);
        k += 1;
        if e == REPLAY {
            let b = back_ctx.get(&mut st[k % STATES], &mut words);
            k += 1;
            let run = long(&mut lengths[3], &mut k, &mut st, &mut words)?
                .checked_add(MIN_REPLAY - 1)
                .filter(|&run| run <= n - i);
            let back = backs[b];
            let Some(run) = run.filter(|_| back <= i) else {
                return Err(corrupt("replay out of the values"));
            };
            if out.len() < (i + run) * W {
                room::<W>(buf, start, i + run, n);
                out = &mut buf[start..];
                events.resize(out.len() / W, 0);
            }
            for t in i..i + run {
                let e = events[t - back];
                if carries_distance(e as usize).is_some() {
                    return Err(corrupt("replayed event with a distance"));
                }
                events[t] = e;
                let v = state.value(e as usize, 0, t, out)?;
                out[t * W..t * W + W].copy_from_slice(&v.to_le_bytes()[..W]);
            }
            i += run;
            prev = events[i - 1] as usize;
            continue;
        }
        let d = match carries_distance(e) {
            Some(g) => long(&mut lengths[g], &mut k, &mut st, &mut words)?,
            None => 0,
        };
        if out.len() < (i + 1) * W {
            room::<W>(buf, start, i + 1, n);
            out = &mut buf[start..];
            events.resize(out.len() / W, 0);
        }
        events[i] = e as u8;
        let v = state.value(e, d, i, out)?;
        out[i * W..i * W + W].copy_from_slice(&v.to_le_bytes()[..W]);
        prev = e;
        i += 1;
    }
    if state.lit.next().is_some() {
        return Err(corrupt("literals left over"));
    }
    Ok(rans::Decoder::join(st, words))
}

/// The copies codec for values of `dtype`.
pub struct Copies {
    /// The values' type.
    pub dtype: DType,
}

impl BlockCodec for Copies {
    fn codec(&self) -> Codec {
        Codec::Copies
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
mod tests {
    use super::*;
    use crate::testing::{stft_basis, xorshift};

    fn roundtrip(data: &[u8], dtype: DType) -> Option<usize> {
        let p = encode_chosen(data, dtype)?;
        let mut out = Vec::new();
        decode(&p, data.len(), &mut out).unwrap();
        assert!(out == data, "{} bytes", data.len());
        Some(p.len())
    }

    #[test]
    fn a_transform_basis_is_mostly_copies() {
        let data = stft_basis(256);
        let plain = super::super::encode(&data, DType::F32).len();
        let size = roundtrip(&data, DType::F32).expect("chosen");
        assert!(4 * size < plain, "{size} against {plain}");
        // Most values are in replays of earlier events: each row's events follow a short cycle
        // or those of the row above.
        let kinds = encode_w::<4>(&data, DType::F32).expect("chosen").1;
        let single: usize = kinds[..REPLAY].iter().sum();
        assert!(8 * single < data.len() / 4, "{kinds:?}");
        let vals: Vec<u64> = data.chunks_exact(4).map(read::<4>).collect();
        assert_eq!(period(vals.len(), |i| vals[i], u32::MAX as u64 >> 1), 256);
    }

    /// `n` values of `w` bytes: literals from a few thousand distinct ones, then copies of
    /// every kind (runs forwards and backwards at any distance, either sign, the value a row
    /// of `row` above) chosen at random.
    fn mixed(n: usize, w: usize, row: usize, seed: u64) -> Vec<u8> {
        let mut x = seed;
        let sign = 1u64 << (8 * w - 1);
        let mut vals: Vec<u64> = Vec::with_capacity(n);
        while vals.len() < n {
            let i = vals.len();
            let r = xorshift(&mut x);
            let flip = (r >> 60 & 1) * sign;
            let len = 1 + (r >> 32) as usize % 40;
            match r % 5 {
                0 | 1 if i > 0 => {
                    let from = (r >> 8) as usize % i;
                    let back = r >> 61 & 1 == 1;
                    for t in 0..len {
                        let s = match back {
                            true => from.checked_sub(t),
                            false => Some(from + t),
                        };
                        if let Some(s) = s.filter(|&s| s < vals.len()) {
                            vals.push(vals[s] ^ flip);
                        }
                    }
                }
                2 if i >= row => {
                    for _ in 0..len.min(vals.len() / row) {
                        let d = row * (1 + (xorshift(&mut x) % 3) as usize).min(vals.len() / row);
                        vals.push(vals[vals.len() - d] ^ flip);
                    }
                }
                _ => vals.push(((r >> 20) % 3000 * 7919) & (sign - 1) | flip),
            }
        }
        vals.truncate(n);
        vals.iter()
            .flat_map(|v| v.to_le_bytes()[..w].to_vec())
            .collect()
    }

    #[test]
    fn every_kind_of_copy_decodes_at_every_width() {
        for (w, dtype) in [
            (2, DType::F16),
            (2, DType::BF16),
            (4, DType::F32),
            (8, DType::F64),
        ] {
            for (n, row) in [(5_000, 100), (70_000, 7), (3_000, 1)] {
                let mut data = mixed(n, w, row, 3 + n as u64);
                // A partial last value too.
                data.push(0xAB);
                assert!(roundtrip(&data, dtype).is_some(), "w {w} n {n}");
                let kinds = match w {
                    2 => encode_w::<2>(&data, dtype),
                    4 => encode_w::<4>(&data, dtype),
                    _ => encode_w::<8>(&data, dtype),
                };
                let kinds = kinds.expect("chosen").1;
                if n == 70_000 {
                    assert!(kinds.iter().all(|&k| k > 0), "w {w}: {kinds:?}");
                }
            }
        }
    }

    #[test]
    fn distinct_values_are_left_to_the_tensor_codec() {
        let mut x = 9;
        let data: Vec<u8> = (0..20_000)
            .flat_map(|_| ((xorshift(&mut x) % 10_000_000) as f32 * 1e-7 + 0.5).to_le_bytes())
            .collect();
        assert_eq!(roundtrip(&data, DType::F32), None);
        assert_eq!(roundtrip(&stft_basis(16)[..1000], DType::F32), None);
    }

    #[test]
    fn damaged_payloads_are_errors() {
        let data = mixed(20_000, 4, 64, 5);
        let p = encode_chosen(&data, DType::F32).expect("chosen");
        let mut out = Vec::new();
        for cut in [0, 1, 5, 12, 20, p.len() / 2, p.len() - 1] {
            assert!(
                decode(&p[..cut], data.len(), &mut out).is_err(),
                "cut {cut}"
            );
        }
        assert!(decode(&p, data.len() + 4, &mut out).is_err());
        let mut x = 77;
        for _ in 0..300 {
            let mut bad = p.clone();
            let at = xorshift(&mut x) as usize % bad.len();
            bad[at] ^= 1 << (xorshift(&mut x) % 8);
            // Any outcome but a panic; a success must be the data's length.
            out.clear();
            if decode(&bad, data.len(), &mut out).is_ok() {
                assert_eq!(out.len(), data.len());
            }
        }
    }
}
