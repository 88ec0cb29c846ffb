//! Repeated-values layer of the tensor path, for arrays of mostly distinct values where a few
//! values recur exactly (a classifier's never-trained classes share one weight per row, dead
//! channels one value throughout). A recurring value goes into a small most-recently-used list
//! (a "keep": the encoder keeps a value seen for the third time, the decoder follows the event),
//! and its later occurrences are coded as the list entry they name ("hits"); every other
//! value, kept ones included, goes in order through the planes codec as an array of its own.
//! Only the events are coded here, one symbol each: the number of plain values before it by
//! bit length, and its kind (keep, or hit of entry `j`); the gap's lower bits go raw.
//!
//! Payload: dtype tag, value count (`u32`), tail length + tail bytes (a partial last value),
//! list size (`u8`), event count (`u32`), plain-value count (`u32`), length (`u32`) + tensor
//! payload of the plain values, length (`u32`) + the gaps' raw bits (least significant first),
//! then the rANS stream of the event symbols.

use super::adaptive::{
    batch_end, put_prefixed, put_values_and_tail, PayloadReader, Table, MAX_BATCH, STATES,
};
use super::ibp::{bit_length, BitReader, BitWriter};
use super::planes::read;
use super::DType;
use crate::codecs::block_codec::{BlockCodec, Seen};
use crate::entropy::rans;
use crate::error::{Error, Result};
use crate::format::Codec;

/// Entries of the most-recently-used list.
const SIZE: usize = 16;
/// Largest list size a payload may name.
const MAX_SIZE: usize = 64;
/// Gap classes: 0 for no plain value before the event, else the gap's bit length (1..=32).
const CLASSES: usize = 33;
/// Fewest hits of values other than zero, as a share of the values, for the layer to be tried
/// (each saves a value's ~26 bits for an event's ~10).
const HITS_MIN: f64 = 0.004;
/// Fewest values a block needs for the layer to be tried.
const MIN_VALUES: usize = 1024;

/// Symbol of an event: its gap class and kind.
#[inline(always)]
fn symbol(gap: u32, kind: usize, size: usize) -> u16 {
    let class = bit_length(gap) as usize;
    (class * (size + 1) + kind) as u16
}

/// The most recently used values, most recent first.
struct List {
    vals: [u64; MAX_SIZE],
    len: usize,
    size: usize,
}

impl List {
    fn new(size: usize) -> Self {
        List {
            vals: [0; MAX_SIZE],
            len: 0,
            size,
        }
    }

    /// Puts `v` first, dropping the last entry if the list is full.
    #[inline(always)]
    fn keep(&mut self, v: u64) {
        self.len = (self.len + 1).min(self.size);
        self.vals.copy_within(0..self.len - 1, 1);
        self.vals[0] = v;
    }

    /// Entry `j`, which moves first.
    #[inline(always)]
    fn hit(&mut self, j: usize) -> u64 {
        let v = self.vals[j];
        self.vals.copy_within(0..j, 1);
        self.vals[0] = v;
        v
    }

    fn find(&self, v: u64) -> Option<usize> {
        self.vals[..self.len].iter().position(|&x| x == v)
    }
}

/// Recently seen values with how often they were seen (1, 2, or 3 and more), one per slot of
/// a table small enough to stay in cache; a value takes its slot from the one there before.
struct Sightings {
    keys: Vec<u64>,
    seen: Vec<u8>,
}

/// Slots of `Sightings` (a value recurring within a few hundred others keeps its slot).
const SIGHT_BITS: u32 = 14;

impl Sightings {
    fn new() -> Self {
        Sightings {
            keys: vec![0; 1 << SIGHT_BITS],
            seen: vec![0; 1 << SIGHT_BITS],
        }
    }

    /// How often `v` was seen, counting this time (at most 3; 1 if it had lost its slot).
    #[inline(always)]
    fn see(&mut self, v: u64) -> u8 {
        let at = (v.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SIGHT_BITS)) as usize;
        let n = match self.keys[at] == v && self.seen[at] > 0 {
            true => (self.seen[at] + 1).min(3),
            false => 1,
        };
        self.keys[at] = v;
        self.seen[at] = n;
        n
    }
}

/// A block coded in this layer.
pub struct Coded {
    /// The payload.
    pub payload: Vec<u8>,
    /// The planes codec's size for the whole block predicted from its size for the plain
    /// values (bytes); none where many hits are zeros, which that codec codes below its
    /// average.
    pub plain_estimate: Option<f64>,
}

thread_local! {
    /// The plain values of the thread's last block: reused, so that large blocks do not fault
    /// in fresh pages each time.
    static PLAIN: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Codes `data`, an array of `dtype` (f32 or f64), in this layer if at least `HITS_MIN` of
/// its values are hits of values other than zero; the payload takes the room of `out` (given
/// back if not).
pub fn encode_chosen(
    data: &[u8],
    dtype: DType,
    out: Vec<u8>,
) -> std::result::Result<Coded, Vec<u8>> {
    let mut plain = PLAIN.with(|p| p.take());
    plain.clear();
    let r = match dtype.width() {
        4 => encode_w::<4>(data, dtype, out, &mut plain),
        8 => encode_w::<8>(data, dtype, out, &mut plain),
        _ => Err(out),
    };
    PLAIN.with(|p| p.set(plain));
    r
}

fn encode_w<const W: usize>(
    data: &[u8],
    dtype: DType,
    mut out: Vec<u8>,
    plain: &mut Vec<u8>,
) -> std::result::Result<Coded, Vec<u8>> {
    let n = data.len() / W;
    if n < MIN_VALUES {
        return Err(out);
    }
    // A value is kept when seen a third time (a pair of equal values is common by chance
    // alone), and hit while in the list.
    let mut sightings = Sightings::new();
    let mut list = List::new(SIZE);
    let mut events: Vec<(u32, u16)> = Vec::new();
    plain.reserve(n * W);
    let (mut gap, mut hits, mut zero_hits) = (0u32, 0usize, 0usize);
    // A zero (either sign) is left to the planes codec, whose own symbol codes scattered zeros
    // better than a hit, unless the value before it was a zero too (runs: dead channels).
    let magnitude = u64::MAX >> (65 - 8 * W as u32);
    let mut after_zero = false;
    for bytes in data[..n * W].chunks_exact(W) {
        let v = read::<W>(bytes);
        let zero = v & magnitude == 0;
        let eligible = !zero || after_zero;
        after_zero = zero;
        if eligible && sightings.see(v) == 3 {
            if let Some(j) = list.find(v) {
                list.hit(j);
                events.push((gap, symbol(gap, j + 1, SIZE)));
                gap = 0;
                hits += 1;
                zero_hits += usize::from(zero);
                continue;
            }
            list.keep(v);
            events.push((gap, symbol(gap, 0, SIZE)));
            gap = 0;
            plain.extend_from_slice(bytes);
            continue;
        }
        plain.extend_from_slice(bytes);
        gap += 1;
    }
    // Runs of zeros alone are left to the planes codec (which codes them nearly as well: on
    // PP-OCRv4 rec's dead channels the layer saved 0.6% of such a block, for twice the encode
    // time, as its size must be compared with the planes codec's).
    if ((hits - zero_hits) as f64) < HITS_MIN * n as f64 {
        return Err(out);
    }
    let tail = &data[n * W..];
    out.clear();
    out.push(dtype.tag());
    put_values_and_tail(&mut out, n, tail);
    out.push(SIZE as u8);
    out.extend_from_slice(&(events.len() as u32).to_le_bytes());
    out.extend_from_slice(&((plain.len() / W) as u32).to_le_bytes());
    let inner = put_prefixed(&mut out, |o| super::encode_append(plain, dtype, o));
    put_prefixed(&mut out, |o| {
        let mut bits = BitWriter::new(o);
        for &(gap, _) in &events {
            if gap > 1 {
                bits.put_below_top(gap);
            }
        }
        bits.finish();
    });
    let syms: Vec<u16> = events.iter().map(|&(_, s)| s).collect();
    let mut tab = Table::new(CLASSES * (SIZE + 1), CLASSES * (SIZE + 1), false);
    let mut enc = rans::Encoder::new(syms.len(), STATES);
    tab.put_all(&syms, &mut enc);
    enc.finish(&mut out);
    let m = plain.len() / W;
    Ok(Coded {
        payload: out,
        plain_estimate: (4 * zero_hits <= hits).then(|| inner as f64 * n as f64 / m.max(1) as f64),
    })
}

fn corrupt(what: &str) -> Error {
    Error::Corrupt(format!("repeated-values block: {what}"))
}

/// Decodes a payload, appending its `raw_len` bytes to `out`; `seen` gets the output piece by
/// piece, in order, as it is written.
pub fn decode(
    payload: &[u8],
    raw_len: usize,
    out: &mut Vec<u8>,
    seen: &mut dyn FnMut(&[u8]),
) -> Result<()> {
    let mut f = PayloadReader::new(payload, "repeated-values");
    let dtype = DType::from_tag(f.take(1)?[0])?;
    let w = dtype.width();
    if w < 4 {
        return Err(corrupt("not a 4- or 8-byte type"));
    }
    let (n, tail) = f.values_and_tail(w, raw_len)?;
    let size = f.take(1)?[0] as usize;
    if !(1..=MAX_SIZE).contains(&size) {
        return Err(corrupt("bad list size"));
    }
    let events = f.u32()? as usize;
    let m = f.u32()? as usize;
    // Every value not plain is a hit, and every hit an event.
    if m > n || n - m > events || events > n {
        return Err(corrupt("counts do not add up"));
    }
    let inner = f.prefixed()?;
    let raw = f.prefixed()?;
    // The plain values are decoded apart, then merged with the hits into `out` event by event,
    // the events decoded a batch at a time: memory grows with the bytes decoded, whatever the
    // counts claim.
    let mut plain = Vec::new();
    super::decode_append(inner, m * w, &mut plain, &mut |_| {})?;
    if plain.len() != m * w {
        return Err(corrupt("plain values do not fill the block"));
    }
    let (mut st, mut words) = rans::Decoder::new(f.rest, STATES)?.split();
    let mut tab = Table::new(CLASSES * (size + 1), CLASSES * (size + 1), true);
    let mut end = batch_end(0);
    let mut syms = [0u16; MAX_BATCH];
    let mut bits = BitReader::new(raw);
    let mut merge = Merge {
        list: List::new(size),
        read: 0,
        hits_left: n - m,
        shown: out.len(),
    };
    for at in (0..events).step_by(MAX_BATCH) {
        let k = MAX_BATCH.min(events - at);
        tab.get_span(&mut st, &mut words, at, &mut end, &mut syms[..k])?;
        match w {
            4 => merge.events::<4>(&syms[..k], &mut bits, &plain, out, seen)?,
            _ => merge.events::<8>(&syms[..k], &mut bits, &plain, out, seen)?,
        }
    }
    rans::Decoder::join(st, words).finish()?;
    if bits.overrun() || bits.consumed() != raw.len() {
        return Err(corrupt("gap bits do not match the events"));
    }
    if merge.hits_left != 0 {
        return Err(corrupt("hits do not match the values"));
    }
    // The plain values after the last event.
    out.extend_from_slice(&plain[merge.read..]);
    seen(&out[merge.shown..]);
    out.extend_from_slice(tail);
    seen(tail);
    Ok(())
}

/// Bytes written before `seen` is given them (small pieces cost the checksum more).
const SEEN_PIECE: usize = 16 << 10;

/// The decoder's merge of plain values and events into the output.
struct Merge {
    list: List,
    /// Plain values taken so far (bytes).
    read: usize,
    /// Hits the counts leave for the events still to come.
    hits_left: usize,
    /// End of the output given to `seen`.
    shown: usize,
}

impl Merge {
    /// Appends to `out` each event of `syms` (a keep or hit) after its gap of plain values;
    /// `seen` gets the output in pieces, in order.
    fn events<const W: usize>(
        &mut self,
        syms: &[u16],
        bits: &mut BitReader,
        plain: &[u8],
        out: &mut Vec<u8>,
        seen: &mut dyn FnMut(&[u8]),
    ) -> Result<()> {
        let size = self.list.size;
        for &s in syms {
            let (class, kind) = (s as usize / (size + 1), s as usize % (size + 1));
            let gap = match class {
                0 | 1 => class,
                c => bits.get_below_top(c as u32) as usize,
            };
            let len = gap
                .checked_mul(W)
                .filter(|&l| l <= plain.len() - self.read)
                .ok_or_else(|| corrupt("gap past the plain values"))?;
            out.extend_from_slice(&plain[self.read..self.read + len]);
            self.read += len;
            if kind == 0 {
                if plain.len() - self.read < W {
                    return Err(corrupt("keep past the plain values"));
                }
                let v = &plain[self.read..self.read + W];
                self.list.keep(read::<W>(v));
                out.extend_from_slice(v);
                self.read += W;
            } else {
                if kind > self.list.len || self.hits_left == 0 {
                    return Err(corrupt("hit out of place"));
                }
                self.hits_left -= 1;
                out.extend_from_slice(&self.list.hit(kind - 1).to_le_bytes()[..W]);
            }
            if out.len() - self.shown >= SEEN_PIECE {
                seen(&out[self.shown..]);
                self.shown = out.len();
            }
        }
        Ok(())
    }
}

/// The repeated-values codec for values of `dtype`.
pub struct Repeated {
    /// The values' type.
    pub dtype: DType,
}

impl BlockCodec for Repeated {
    fn codec(&self) -> Codec {
        Codec::Repeated
    }

    fn encode_into(&self, data: &[u8], out: &mut Vec<u8>) -> bool {
        match encode_chosen(data, self.dtype, std::mem::take(out)) {
            Ok(r) => {
                *out = r.payload;
                true
            }
            Err(back) => {
                *out = back;
                false
            }
        }
    }

    fn decode(
        &self,
        payload: &[u8],
        raw_len: usize,
        out: &mut Vec<u8>,
        seen: &mut dyn FnMut(&[u8]),
    ) -> Result<Seen> {
        decode(payload, raw_len, out, seen)?;
        Ok(Seen::All)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::xorshift;

    /// `rows` rows of `cols` f32 weights where the columns in `dead` (one in `every`) share one
    /// value per row, a run of one value fills a stretch of every 7th row and zeros one of
    /// every 5th.
    fn classifier(rows: usize, cols: usize, every: u64, seed: u64) -> Vec<u8> {
        let mut x = seed;
        let mut unit = move || (xorshift(&mut x) >> 11) as f32 / (1u64 << 53) as f32;
        let dead: Vec<bool> = (0..cols)
            .map(|c| (c as u64 * 2654435761).is_multiple_of(every))
            .collect();
        let mut out = Vec::new();
        for r in 0..rows {
            let shared = (unit() - 0.5) * 0.1;
            for (c, &d) in dead.iter().enumerate() {
                let w = match (d, r % 7 == 3 && c < cols / 4) {
                    // Runs of zeros too, hits along with the others.
                    _ if r % 5 == 1 && c < 300 => 0.0,
                    (_, true) => 1e-3,
                    (true, _) => shared,
                    _ => (unit() + unit() + unit() - 1.5) * 0.1,
                };
                out.extend_from_slice(&w.to_le_bytes());
            }
        }
        out
    }

    fn roundtrip(data: &[u8], dtype: DType) -> Option<usize> {
        let p = encode_chosen(data, dtype, Vec::new()).ok()?.payload;
        let mut out = Vec::new();
        let mut pieces = Vec::new();
        decode(&p, data.len(), &mut out, &mut |s| {
            pieces.extend_from_slice(s)
        })
        .unwrap();
        assert!(out == data, "{} bytes", data.len());
        assert!(pieces == data, "pieces seen");
        Some(p.len())
    }

    #[test]
    fn repeated_values_round_trip_and_save() {
        let data = classifier(60, 2000, 40, 3);
        let plain = super::super::encode(&data, DType::F32).len();
        let size = roundtrip(&data, DType::F32).expect("chosen");
        assert!(
            (size as f64) < 0.97 * plain as f64,
            "{size} against {plain}"
        );
        // f64: the same values widened, with a partial last value.
        let mut wide: Vec<u8> = data
            .chunks_exact(4)
            .flat_map(|v| (f32::from_le_bytes(v.try_into().unwrap()) as f64).to_le_bytes())
            .collect();
        wide.extend_from_slice(&[1, 2, 3]);
        assert!(roundtrip(&wide, DType::F64).is_some());
    }

    #[test]
    fn distinct_values_are_left_to_the_tensor_codec() {
        let mut x = 9;
        let data: Vec<u8> = (0..20_000)
            .flat_map(|_| ((xorshift(&mut x) % 100_000) as f32 * 1e-6 + 0.5).to_le_bytes())
            .collect();
        assert_eq!(roundtrip(&data, DType::F32), None);
        assert_eq!(roundtrip(&data[..1000], DType::F32), None);
        // Zeros stay with the planes codec, scattered or in runs (dead channels).
        let mut x = 4;
        let sparse: Vec<u8> = data
            .chunks_exact(4)
            .enumerate()
            .flat_map(|(i, v)| match (xorshift(&mut x) % 20, i % 1000 < 200) {
                (_, true) if i > 8000 => [0; 4],
                (0, _) => [0; 4],
                _ => v.try_into().unwrap(),
            })
            .collect();
        assert_eq!(roundtrip(&sparse[..8000 * 4], DType::F32), None);
        assert_eq!(roundtrip(&sparse, DType::F32), None);
        assert!(encode_chosen(&data, DType::BF16, Vec::new()).is_err());
    }

    #[test]
    fn every_list_entry_and_long_gaps_decode() {
        // Many distinct repeated values (the list overflows), gaps of every length class.
        let mut x = 5;
        let mut vals = Vec::new();
        for i in 0..200_000u32 {
            let r = xorshift(&mut x);
            let v = match r % 11 {
                0 if !(100_000..=180_000).contains(&i) => (r >> 40) as u32 % 40,
                _ => 1_000_000 + i,
            };
            vals.push(v);
        }
        let data: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        assert!(roundtrip(&data, DType::F32).is_some());
    }

    #[test]
    fn damaged_payloads_are_errors() {
        let data = classifier(30, 1000, 20, 8);
        let Ok(chosen) = encode_chosen(&data, DType::F32, Vec::new()) else {
            panic!("not chosen")
        };
        let p = chosen.payload;
        let mut out = Vec::new();
        for cut in [0, 1, 5, 12, 20, p.len() / 2, p.len() - 1] {
            assert!(
                decode(&p[..cut], data.len(), &mut out, &mut |_| {}).is_err(),
                "cut {cut}"
            );
        }
        assert!(decode(&p, data.len() + 4, &mut out, &mut |_| {}).is_err());
        let mut x = 77;
        for _ in 0..300 {
            let mut bad = p.clone();
            let at = xorshift(&mut x) as usize % bad.len();
            bad[at] ^= 1 << (xorshift(&mut x) % 8);
            // Any outcome but a panic; a success must be the data's length.
            out.clear();
            if decode(&bad, data.len(), &mut out, &mut |_| {}).is_ok() {
                assert_eq!(out.len(), data.len());
            }
        }
    }
}
