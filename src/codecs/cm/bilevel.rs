//! The bilevel image expert: where a block is a 1-bit image (a fax, a bitmap without a
//! header), each bit is a pixel, and the pixels already coded around it, on its own row and
//! on the rows above, predict it far better than any byte context can. The encoder finds the
//! row length (`detect`) and the payload records it. Direct (or, for the larger
//! neighbourhoods, hashed) tables of adaptive counters feed the mixers, the nearest pixels
//! select two mixers' weight sets, and a probability map refines the final probability.

use super::mixing::{counter_p12, counter_update, stretch_table, Apm, COUNTER_INIT};

/// Inputs the expert gives the mixers.
pub const N_BILEVEL: usize = NEIGHBOURHOODS;
/// Neighbourhoods (tables) of the expert: each gives an input.
const NEIGHBOURHOODS: usize = 18;
/// Weight sets of the mixer the nearest pixels select (`Bilevel::select`).
pub const BILEVEL_SETS: usize = 129;
/// Rows above the predicted pixel that the neighbourhoods reach.
const ROWS: usize = 8;
/// Index bits of each neighbourhood's table, in `Bilevel::contexts`'s order; a neighbourhood
/// of more pixels is hashed to them.
const TABLE_BITS: [u32; NEIGHBOURHOODS] =
    [2, 4, 4, 6, 9, 8, 8, 8, 11, 15, 12, 18, 18, 18, 18, 3, 4, 5];
/// The neighbourhood whose table's index also selects the probability map's context: twelve
/// pixels around the predicted one.
const APM_CONTEXT: usize = 10;
/// Shortest row (bytes) the expert takes.
pub const WIDTH_MIN: usize = 2;
/// Longest row (bytes) the encoder looks for: 32,768 pixels.
const WIDTH_MAX: usize = 4096;
/// Bytes of a block `detect` reads.
const PROBE: usize = 1 << 20;
/// Changes of byte value `detect` compares with the bytes up to `WIDTH_MAX` before them.
const SAMPLES: usize = 2048;
/// Share of the row-only model's cost below which the pixels above are worth an expert.
const GAIN: f64 = 0.8;
/// Observations after which a counter's rate stops slowing (images are stationary).
const LIMIT: u32 = 1023;

/// Per-lane pixel windows of one byte: the bytes around the predicted one on the rows above,
/// and the two bytes before it on its own row.
#[derive(Clone, Copy, Default)]
pub struct Windows {
    /// Per row above (1 first): the byte above-left, above and above-right, as 24 bits.
    above: [u32; ROWS],
    /// The two bytes before the predicted one, as 16 bits.
    left: u32,
    /// Whether there is a row above (else the expert is silent for this byte).
    on: bool,
}

impl Windows {
    /// The windows of the byte at `pos` in `hist` of the lane starting at `start`, whose rows
    /// are `width` bytes long (at least `WIDTH_MIN`).
    pub fn at(hist: &[u8], start: usize, pos: usize, width: usize) -> Self {
        let byte = |i: usize| -> u32 {
            if i >= start && i < pos {
                hist[i] as u32
            } else {
                0
            }
        };
        let mut w = Windows {
            left: byte(pos.wrapping_sub(2)) << 8 | byte(pos.wrapping_sub(1)),
            on: width >= WIDTH_MIN && pos >= start + width,
            ..Windows::default()
        };
        if w.on {
            for (r, a) in w.above.iter_mut().enumerate() {
                let q = pos.wrapping_sub((r + 1) * width);
                *a = byte(q.wrapping_sub(1)) << 16 | byte(q) << 8 | byte(q.wrapping_add(1));
            }
        }
        w
    }

    /// The `2a + 1` pixels of row `r` above (0: the row above) centred on the pixel `k` bits
    /// into the byte (`a` at most 7).
    #[inline]
    fn run(&self, r: usize, k: u32, a: u32) -> u32 {
        (self.above[r] >> (15 - k - a)) & ((1 << (2 * a + 1)) - 1)
    }

    /// The `n` pixels (at most 16) before the predicted one on its row; `c0` holds the `k`
    /// bits of the byte seen so far under a leading 1.
    #[inline]
    fn before(&self, c0: u32, k: u32, n: u32) -> u32 {
        let row = (self.left << k) | (c0 & ((1 << k) - 1));
        row & ((1 << n) - 1)
    }
}

/// The expert's tables and the counters its last prediction read.
pub struct Bilevel {
    /// Row length (bytes).
    width: usize,
    tables: [Vec<u32>; NEIGHBOURHOODS],
    at: [usize; NEIGHBOURHOODS],
    on: bool,
    /// Refines the final probability by the pixels around (`APM_CONTEXT`).
    apm: Apm,
}

impl Bilevel {
    /// The expert for rows of `width` bytes (at least `WIDTH_MIN`).
    pub fn new(width: usize) -> Self {
        Bilevel {
            width,
            tables: TABLE_BITS.map(|b| vec![COUNTER_INIT; 1 << b]),
            at: [0; NEIGHBOURHOODS],
            on: false,
            apm: Apm::new(1 << TABLE_BITS[APM_CONTEXT], 7),
        }
    }

    /// The pixel windows of the byte at `pos` in `hist` of the lane starting at `start`.
    pub fn windows(&self, hist: &[u8], start: usize, pos: usize) -> Windows {
        Windows::at(hist, start, pos, self.width)
    }

    /// Bytes of the expert's tables.
    pub fn bytes() -> usize {
        TABLE_BITS.iter().map(|b| 4 << b).sum::<usize>()
            + Apm::bytes_for(1 << TABLE_BITS[APM_CONTEXT])
    }

    /// The neighbourhood of each table (its index, within the table's bits) for the pixel
    /// `k` bits into the byte: shapes of pixels before it on its row (`cur(n)`) and centred
    /// above it (`run(row, radius)`), and counts of the black pixels around it.
    #[inline]
    fn contexts(w: &Windows, c0: u32, k: u32) -> [usize; NEIGHBOURHOODS] {
        let cur = |n| w.before(c0, k, n) as u64;
        let run = |r, a| w.run(r, k, a) as u64;
        let column = (0..ROWS).fold(0, |c, r| c << 1 | run(r, 0));
        let near = cur(1) << 3 | run(0, 1);
        let around12 = cur(2) << 10 | run(0, 2) << 5 | run(1, 2);
        let around24 = cur(3) << 21 | run(0, 3) << 14 | run(1, 3) << 7 | run(2, 3);
        let frame = cur(4) << 27 | run(0, 4) << 18 | run(1, 4) << 9 | run(2, 4);
        let frame = frame << 9 | run(3, 4);
        let keys = [
            cur(1) << 1 | run(0, 0),
            near,
            cur(2) << 2 | run(0, 0) << 1 | run(1, 0),
            cur(3) << 3 | run(0, 0) << 2 | run(1, 0) << 1 | run(2, 0),
            cur(3) << 6 | run(0, 1) << 3 | run(1, 1),
            cur(1) << 7 | run(0, 2) << 2 | run(1, 0) << 1 | run(2, 0),
            column,
            cur(8),
            cur(4) << 7 | run(0, 3),
            cur(3) << 12 | run(0, 4) << 3 | run(1, 1),
            around12,
            around24,
            frame,
            cur(6) << 25 | run(0, 6) << 12 | run(1, 3) << 5 | run(2, 2),
            cur(8) << 11 | run(0, 4) << 2 | run(1, 0) << 1 | run(2, 0),
            near.count_ones() as u64,
            around12.count_ones() as u64,
            frame.count_ones() as u64 >> 1,
        ];
        let mut at = [0usize; NEIGHBOURHOODS];
        for ((a, &key), (i, &bits)) in at.iter_mut().zip(&keys).zip(TABLE_BITS.iter().enumerate()) {
            *a = match key >> bits {
                0 => key as usize,
                _ => {
                    (((key + 1) * (i as u64 + 1)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
                        >> (64 - bits)) as usize
                }
            };
        }
        at
    }

    /// The weight set the nearest pixels select (`BILEVEL_SETS` of them): three before, three
    /// above and the one two rows above; 0 where there is no row above yet.
    pub fn select(w: &Windows, c0: u32, k: u32) -> usize {
        if !w.on {
            return 0;
        }
        let s = w.before(c0, k, 3) << 4 | w.run(0, k, 1) << 1 | w.run(1, k, 0);
        1 + s as usize
    }

    /// Writes the expert's inputs for the pixel `k` bits into the byte (`c0`: the bits seen
    /// under a leading 1) into `out`: zero where there is no row above yet.
    pub fn predict(&mut self, w: &Windows, c0: u32, k: u32, out: &mut [f32]) {
        self.on = w.on;
        if !w.on {
            out[..N_BILEVEL].fill(0.0);
            return;
        }
        let st = stretch_table();
        self.at = Self::contexts(w, c0, k);
        for ((o, t), &i) in out.iter_mut().zip(&self.tables).zip(&self.at) {
            *o = st[counter_p12(t[i])];
        }
    }

    /// The final probability (stretched, `st`) refined by the pixels around the last
    /// predicted one, as 16 bits; `None` where there is no row above yet.
    pub fn refine(&mut self, st: f32) -> Option<u32> {
        self.on.then(|| self.apm.refine(st, self.at[APM_CONTEXT]))
    }

    /// Learns the bit of the last prediction (and of the last `refine`).
    pub fn update(&mut self, bit: u32) {
        if self.on {
            self.apm.update(bit);
            for (t, &i) in self.tables.iter_mut().zip(&self.at) {
                counter_update(&mut t[i], bit, LIMIT);
            }
        }
    }
}

/// The row length (bytes) of `data` if it looks like a 1-bit image: the distance at which
/// its changes of byte value most often recur, kept where a model of each pixel by its
/// neighbours on the rows above and its own codes `data`'s first `PROBE` bytes in under
/// `GAIN` of what one of as many pixels before it on its row does.
pub fn detect(data: &[u8]) -> Option<usize> {
    let data = &data[..data.len().min(PROBE)];
    let longest = WIDTH_MAX.min(data.len() / 8);
    if longest < WIDTH_MIN {
        return None;
    }
    let changes: Vec<usize> = (longest..data.len())
        .filter(|&i| data[i] != data[i - 1])
        .collect();
    let step = changes.len().div_ceil(SAMPLES).max(1);
    let mut votes = vec![0u32; longest + 1];
    for &i in changes.iter().step_by(step) {
        for (d, v) in votes.iter_mut().enumerate().skip(WIDTH_MIN) {
            *v += (data[i] == data[i - d]) as u32;
        }
    }
    let width = (WIDTH_MIN..=longest).max_by_key(|&d| (votes[d], std::cmp::Reverse(d)))?;
    let [above, row] = costs(data, width);
    (above < GAIN * row).then_some(width)
}

/// Bits two adaptive models of each pixel of `data` (rows of `width` bytes) cost, each by
/// twelve neighbours: on the rows above and its own, and before it on its row.
fn costs(data: &[u8], width: usize) -> [f64; 2] {
    let log: Vec<f64> = (0..4096)
        .map(|p| -((p.max(1) as f64) / 4096.0).log2())
        .collect();
    let mut p = [vec![2048u32; 4096], vec![2048u32; 4096]];
    let mut total = [0.0; 2];
    for pos in width..data.len() {
        let w = Windows::at(data, 0, pos, width);
        let mut c0 = 1;
        for k in 0..8 {
            let ctx = [
                w.before(c0, k, 4) << 8 | w.run(0, k, 2) << 3 | w.run(1, k, 1),
                w.before(c0, k, 12),
            ];
            let bit = (data[pos] >> (7 - k)) as u32 & 1;
            for ((p, t), c) in p.iter_mut().zip(&mut total).zip(ctx) {
                let q = &mut p[c as usize];
                *t += match bit {
                    1 => log[*q as usize],
                    _ => log[4096 - *q as usize],
                };
                *q = (*q as i32 + (((bit << 12) as i32 - *q as i32) >> 4)).clamp(1, 4095) as u32;
            }
            c0 = c0 << 1 | bit;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{mandelbrot_bitmap, xorshift};

    #[test]
    fn windows_read_the_pixels_around_the_predicted_one() {
        // Rows of 3 bytes; the byte at 7 (row 2, column 1) is predicted.
        let hist = [0x00, 0x80, 0x01, 0xff, 0x0f, 0xf0, 0x12, 0x34, 0x00];
        let w = Windows::at(&hist, 0, 7, 3);
        assert!(w.on);
        // The row above: 0xff 0x0f 0xf0 around column 1.
        assert_eq!(w.above[0], 0xff0ff0);
        assert_eq!(w.above[1], 0x008001);
        // Pixel 0 of the byte above (0x0f) and its neighbours: ...1 [0] 0... of ff|0f.
        assert_eq!(w.run(0, 0, 1), 0b100);
        assert_eq!(w.run(0, 4, 0), 1);
        // Three bits seen (101): the pixels before are the byte before (0x12)'s then those.
        assert_eq!(w.before(0b1101, 3, 5), 0b10101);
        // No rows shorter than `WIDTH_MIN`, and none above the first.
        assert!(!Windows::at(&hist, 0, 7, 1).on);
        assert!(!Windows::at(&hist, 0, 2, 3).on);
    }

    #[test]
    fn learns_a_vertical_stripe() {
        // A 1-bit image of rows of 4 bytes whose pixels copy the row above.
        let row = [0b1010_0110u8, 0x3c, 0x81, 0x0f];
        let hist: Vec<u8> = row.iter().copied().cycle().take(400).collect();
        let mut e = Bilevel::new(4);
        let mut cost = 0.0;
        let mut out = [0f32; N_BILEVEL];
        for pos in 8..hist.len() {
            let w = Windows::at(&hist, 0, pos, 4);
            let mut c0 = 1;
            for k in 0..8 {
                let bit = (hist[pos] >> (7 - k)) as u32 & 1;
                e.predict(&w, c0, k, &mut out);
                let p = super::super::mixing::squash(out[0]);
                if pos > 300 {
                    cost -= (if bit == 1 { p } else { 1.0 - p }).log2();
                }
                e.update(bit);
                c0 = c0 << 1 | bit;
            }
        }
        assert!(cost < 40.0, "{cost} bits for 99 bytes");
    }

    #[test]
    fn detect_finds_an_image_and_its_rows_only() {
        for width in [20, 57, 100] {
            assert_eq!(detect(&mandelbrot_bitmap(width, 240)), Some(width));
        }
        // Text, noise and a run of one byte are no images.
        let mut x = 0x5eedu64;
        let mut next = move || xorshift(&mut x) >> 32;
        let noise: Vec<u8> = (0..30_000).map(|_| next() as u8).collect();
        assert_eq!(detect(&noise), None);
        let words = [
            "an", "archive", "of", "a", "model", "that", "learns", "while", "it",
        ];
        let mut text = Vec::new();
        while text.len() < 30_000 {
            text.extend_from_slice(words[next() as usize % words.len()].as_bytes());
            text.push(if next() % 9 == 0 { b'\n' } else { b' ' });
        }
        assert_eq!(detect(&text), None);
        assert_eq!(detect(&[0x55; 10_000]), None);
    }
}
