//! A frozen (pre-trained) SEP network in exact integer arithmetic, byte by byte, the same bits on
//! every machine and SIMD level (pretrained/export.py writes it from a trained network and
//! holds the reference of this arithmetic, which the test below replays).
//!
//! Bytes are embedded (int8, units of 1/32; row 256 is the byte that is not there) and cut into
//! patches: a patch ends after a separator (a byte below 128 that is not an ASCII letter or
//! digit) or after `PMAX` bytes, so that the backbone runs about once a word. A finished patch's
//! embeddings, padded to `PMAX`, are fused (`fuse`, GELU) into one vector; the backbone (`bb1`,
//! GELU, then `bb2`) maps the last `k` fused vectors, newest first (zeros where none), to its
//! output. Every byte, the head (`head1`, GELU, then `head2`) maps that output with the current
//! patch's embeddings so far to 256 logits, and the distribution is `exp[min(max - logit,
//! 511)] + 1` for each byte. Each layer is int8 weights times int8 inputs summed in i32, then
//! rescaled in fixed point (`Rescale`, shift `SHIFT`) to units of 1/16 (looked up in the
//! file's GELU table, clamped to its 256 entries) or 1/32 (`bb2`, clamped to int8) or kept
//! (the logits).
//!
//! File: safetensors with `emb` (I8, shape `[257, e]`), `gelu` (I8, `[256]`), `exp` (I32,
//! `[512]`), and per layer `NAME.w` (I8, `[rows, cols]`), `NAME.mult` (I32, `[rows]`),
//! `NAME.add` (I64, `[rows]`).

use crate::engine::int8::{activate, matvec_i8, Rescale};
use crate::error::{Error, Result};
use safetensors::{Dtype, SafeTensors};

/// Most bytes a patch holds.
pub const PMAX: usize = 8;
/// The rescaling's shift.
const SHIFT: u32 = 22;
/// The widest layer a file may have, inputs or outputs: bounds the work per byte (the head's
/// two layers and, once a patch, the backbone's three).
const WIDTH_MAX: usize = 4096;
/// Most patches the backbone reads.
const K_MAX: usize = 16;
/// Widest byte embedding.
const E_MAX: usize = 64;

/// One layer: int8 weights, a rescaling per output.
struct Layer {
    w: Vec<i8>,
    cols: usize,
    rescale: Vec<Rescale>,
}

impl Layer {
    fn rows(&self) -> usize {
        self.rescale.len()
    }

    /// The layer's sums for input `x`, rescaled, into `out`.
    fn apply(&self, x: &[i8], acc: &mut [i32], out: &mut [i32]) {
        matvec_i8(&self.w, x, acc);
        for ((o, &a), r) in out.iter_mut().zip(acc.iter()).zip(&self.rescale) {
            *o = r.apply(a);
        }
    }
}

/// A frozen network.
pub struct Frozen {
    emb: Vec<i8>,
    e: usize,
    d: usize,
    k: usize,
    gelu: Vec<i8>,
    exp: Vec<u32>,
    fuse: Layer,
    bb1: Layer,
    bb2: Layer,
    head1: Layer,
    head2: Layer,
    /// `head1`'s weights of the backbone's output (its first `d` columns), `[rows, d]`.
    head_ctx: Vec<i8>,
    /// `head1`'s sums of each byte (257: the byte that is not there too) at each place of the
    /// current patch, `[PMAX, 257, rows]`: a byte's share of the head's sums, added as it
    /// arrives rather than recomputed every byte (integer sums: the same bits in any order).
    head_bytes: Vec<i32>,
    /// `head1`'s sums of a patch of no bytes (every place the byte that is not there).
    head_empty: Vec<i32>,
}

/// A tensor to write: name, type, shape, bytes.
pub type Tensor = (String, Dtype, Vec<usize>, Vec<u8>);

/// The tensors of a network file, named with `prefix` before their own names: what a pack
/// holds of it (an error where the file is not a network).
pub fn tensors(file: &[u8], prefix: &str) -> Result<Vec<Tensor>> {
    let st = SafeTensors::deserialize(file)
        .map_err(|e| Error::BadPack(format!("network: not one: {e}")))?;
    Frozen::from_tensors(&st, "")?;
    let mut out: Vec<_> = st
        .tensors()
        .into_iter()
        .map(|(name, t)| {
            let shape = t.shape().to_vec();
            (
                format!("{prefix}{name}"),
                t.dtype(),
                shape,
                t.data().to_vec(),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// One stream's state: the patches so far, the backbone's output, the current patch.
pub struct State {
    /// The last `k` fused patch vectors, newest first (zeros where none).
    fused: Vec<i8>,
    /// The backbone's output after the last finished patch.
    h: Vec<i8>,
    /// The current patch's bytes.
    patch: Vec<u8>,
    /// `head1`'s sums for `h` and the current patch (`Frozen::head_bytes`).
    head_sums: Vec<i32>,
    /// Scratch: a layer's input, sums, outputs.
    input: Vec<i8>,
    hidden: Vec<i8>,
    acc: Vec<i32>,
    out: Vec<i32>,
}

/// Whether a patch ends after `b`.
#[inline]
pub fn separator(b: u8) -> bool {
    b < 128 && !b.is_ascii_alphanumeric()
}

impl Frozen {
    /// Reads a network file; an error where it is not one, or its shapes do not fit together
    /// or pass the bounds.
    pub fn from_file(bytes: &[u8]) -> Result<Self> {
        let st = SafeTensors::deserialize(bytes)
            .map_err(|e| Error::BadPack(format!("network: not one: {e}")))?;
        Self::from_tensors(&st, "")
    }

    /// The network whose tensors in `st` have names starting with `prefix` (a pack's).
    pub fn from_tensors(st: &SafeTensors, prefix: &str) -> Result<Self> {
        let bad = |what: String| Error::BadPack(format!("network: {what}"));
        let get = |name: &str, dtype: Dtype| -> Result<(Vec<usize>, &[u8])> {
            let full = format!("{prefix}{name}");
            let t = st
                .tensor(&full)
                .map_err(|_| bad(format!("no tensor {full}")))?;
            if t.dtype() != dtype {
                return Err(bad(format!("{full} is not {dtype:?}")));
            }
            Ok((t.shape().to_vec(), t.data()))
        };
        let i8s = |b: &[u8]| b.iter().map(|&v| v as i8).collect::<Vec<_>>();
        let (shape, emb) = get("emb", Dtype::I8)?;
        let [257, e] = shape[..] else {
            return Err(bad("emb is not 257 rows".into()));
        };
        let (shape, gelu) = get("gelu", Dtype::I8)?;
        let (shape_exp, exp) = get("exp", Dtype::I32)?;
        if shape != [256] || shape_exp != [512] {
            return Err(bad("tables of the wrong length".into()));
        }
        let exp: Vec<u32> = exp
            .chunks_exact(4)
            .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .map(|v| u32::try_from(v).map_err(|_| bad("a negative exp entry".into())))
            .collect::<Result<_>>()?;
        // A layer `rows` x `cols` where given (else as the file says).
        let layer = |name: &str, rows: Option<usize>, cols: Option<usize>| -> Result<Layer> {
            let (shape, w) = get(&format!("{name}.w"), Dtype::I8)?;
            let (shape_m, mult) = get(&format!("{name}.mult"), Dtype::I32)?;
            let (shape_a, add) = get(&format!("{name}.add"), Dtype::I64)?;
            let [r, c] = shape[..] else {
                return Err(bad(format!("{name}.w is not a matrix")));
            };
            let fits = |want: Option<usize>, n: usize| want.is_none_or(|w| w == n);
            if !fits(cols, c) || !fits(rows, r) || r == 0 || r > WIDTH_MAX || c > WIDTH_MAX {
                return Err(bad(format!("{name}.w is {r} x {c}")));
            }
            if shape_m != [r] || shape_a != [r] {
                return Err(bad(format!("{name}'s rescaling is not one per row")));
            }
            let rescale = mult
                .chunks_exact(4)
                .zip(add.chunks_exact(8))
                .map(|(m, a)| Rescale {
                    mult: i32::from_le_bytes([m[0], m[1], m[2], m[3]]),
                    add: i64::from_le_bytes([a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]]),
                    shift: SHIFT,
                })
                .collect();
            Ok(Layer {
                w: i8s(w),
                cols: c,
                rescale,
            })
        };
        if e == 0 || e > E_MAX {
            return Err(bad(format!("embedding {e} wide")));
        }
        let fuse = layer("fuse", None, Some(PMAX * e))?;
        let d = fuse.rows();
        let bb1 = layer("bb1", None, None)?;
        let k = bb1.cols / d;
        if k == 0 || k > K_MAX || k * d != bb1.cols {
            return Err(bad(format!(
                "a backbone of {} inputs over patches {d} wide",
                bb1.cols
            )));
        }
        let bb2 = layer("bb2", Some(d), Some(bb1.rows()))?;
        let head1 = layer("head1", None, Some(d + PMAX * e))?;
        let head2 = layer("head2", Some(256), Some(head1.rows()))?;
        let emb = i8s(emb);
        let (hh, cols) = (head1.rows(), head1.cols);
        let head_ctx = head1
            .w
            .chunks_exact(cols)
            .flat_map(|row| row[..d].iter().copied())
            .collect();
        let mut head_bytes = vec![0i32; PMAX * 257 * hh];
        for (j, place) in head_bytes.chunks_exact_mut(257 * hh).enumerate() {
            for (b, sums) in place.chunks_exact_mut(hh).enumerate() {
                let x = &emb[b * e..b * e + e];
                for (sum, row) in sums.iter_mut().zip(head1.w.chunks_exact(cols)) {
                    let w = &row[d + j * e..d + j * e + e];
                    *sum = w
                        .iter()
                        .zip(x)
                        .fold(0i32, |a, (&w, &x)| a.wrapping_add(w as i32 * x as i32));
                }
            }
        }
        let mut head_empty = vec![0i32; hh];
        for place in head_bytes.chunks_exact(257 * hh) {
            for (s, &v) in head_empty.iter_mut().zip(&place[256 * hh..257 * hh]) {
                *s = s.wrapping_add(v);
            }
        }
        Ok(Frozen {
            emb,
            e,
            d,
            k,
            gelu: i8s(gelu),
            exp,
            fuse,
            bb1,
            bb2,
            head1,
            head2,
            head_ctx,
            head_bytes,
            head_empty,
        })
    }

    /// Bytes its tables hold.
    pub fn bytes(&self) -> u64 {
        let layers = [&self.fuse, &self.bb1, &self.bb2, &self.head1, &self.head2];
        let rescale = std::mem::size_of::<Rescale>();
        let weights: usize = layers.iter().map(|l| l.w.len() + rescale * l.rows()).sum();
        let head = self.head_ctx.len() + 4 * (self.head_bytes.len() + self.head_empty.len());
        (self.emb.len() + self.gelu.len() + 4 * self.exp.len() + weights + head) as u64
    }

    /// A stream's state at its start.
    pub fn state(&self) -> State {
        let widest = [&self.fuse, &self.bb1, &self.bb2, &self.head1, &self.head2]
            .iter()
            .map(|l| l.rows().max(l.cols))
            .max()
            .unwrap_or(0);
        State {
            fused: vec![0; self.k * self.d],
            h: vec![0; self.d],
            patch: Vec::with_capacity(PMAX),
            // The backbone's output is zeros: the head's sums are the empty patch's.
            head_sums: self.head_empty.clone(),
            input: vec![0; widest],
            hidden: vec![0; widest],
            acc: vec![0; widest],
            out: vec![0; widest],
        }
    }

    /// The embeddings of `bytes`, padded with the byte that is not there to `PMAX`, into `out`.
    fn embed(&self, bytes: &[u8], out: &mut [i8]) {
        let e = self.e;
        for (i, o) in out.chunks_exact_mut(e).take(PMAX).enumerate() {
            let row = bytes.get(i).map_or(256, |&b| b as usize);
            o.copy_from_slice(&self.emb[row * e..row * e + e]);
        }
    }

    /// A GELU layer: `layer` of `x` into `out` (int8, units of 1/32).
    fn gelu_layer(&self, layer: &Layer, x: &[i8], s_acc: &mut [i32], out: &mut [i8]) {
        let rows = layer.rows();
        matvec_i8(&layer.w, x, &mut s_acc[..rows]);
        activate(
            &s_acc[..rows],
            &layer.rescale,
            &self.gelu,
            128,
            &mut out[..rows],
        );
    }

    /// The next byte's distribution: `counts[b]` (each at least 1) in proportion to its
    /// probability.
    pub fn predict(&self, s: &mut State, counts: &mut [u32; 256]) {
        let hh = self.head1.rows();
        activate(
            &s.head_sums,
            &self.head1.rescale,
            &self.gelu,
            128,
            &mut s.hidden[..hh],
        );
        self.head2
            .apply(&s.hidden[..hh], &mut s.acc[..256], &mut s.out[..256]);
        let logits = &s.out[..256];
        let max = logits.iter().copied().max().unwrap_or(0);
        for (c, &l) in counts.iter_mut().zip(logits) {
            let gap = (i64::from(max) - i64::from(l)).min(511) as usize;
            *c = self.exp[gap] + 1;
        }
    }

    /// Learns nothing: moves the stream past `byte` (ending its patch where it ends one).
    pub fn update(&self, s: &mut State, byte: u8) {
        let hh = self.head1.rows();
        let place = s.patch.len();
        s.patch.push(byte);
        if !separator(byte) && s.patch.len() < PMAX {
            // The byte takes its place's share of the head's sums from the byte not there.
            let at = place * 257 * hh;
            let now = &self.head_bytes[at + byte as usize * hh..][..hh];
            let was = &self.head_bytes[at + 256 * hh..][..hh];
            for ((sum, &n), &w) in s.head_sums.iter_mut().zip(now).zip(was) {
                *sum = sum.wrapping_add(n).wrapping_sub(w);
            }
            return;
        }
        let (d, e, k) = (self.d, self.e, self.k);
        // The newest patch first: the others move one place back, the oldest drops.
        s.fused.copy_within(0..(k - 1) * d, d);
        self.embed(&s.patch, &mut s.input[..PMAX * e]);
        let fused = &mut s.fused[..d];
        self.gelu_layer(&self.fuse, &s.input[..PMAX * e], &mut s.acc, fused);
        let hb = self.bb1.rows();
        self.gelu_layer(&self.bb1, &s.fused, &mut s.acc, &mut s.hidden);
        self.bb2
            .apply(&s.hidden[..hb], &mut s.acc[..d], &mut s.out[..d]);
        for (h, &v) in s.h.iter_mut().zip(&s.out[..d]) {
            *h = v.clamp(-128, 127) as i8;
        }
        s.patch.clear();
        // A new patch: the head's sums of the new output and of no bytes.
        matvec_i8(&self.head_ctx, &s.h, &mut s.head_sums);
        for (sum, &v) in s.head_sums.iter_mut().zip(&self.head_empty) {
            *sum = sum.wrapping_add(v);
        }
    }

    /// What coding `bytes` with this network alone from a stream's start would cost, in 1/256
    /// bits: how well it knows data of that kind. Integer arithmetic, so a choice made by it is
    /// the same everywhere.
    pub fn cost(&self, bytes: &[u8]) -> u64 {
        let mut s = self.state();
        let mut counts = [0u32; 256];
        let mut cost = 0u64;
        for &b in bytes {
            self.predict(&mut s, &mut counts);
            let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
            cost += log2_fixed(total).saturating_sub(log2_fixed(u64::from(counts[b as usize])));
            self.update(&mut s, b);
        }
        cost
    }
}

/// log2 of `x` (at least 1) in 1/256 units: its integer part exactly, the fraction by linear
/// interpolation between powers of two (at most 0.09 bits under).
fn log2_fixed(x: u64) -> u64 {
    let x = x.max(1);
    let whole = u64::from(x.ilog2());
    // The bits below the leading one, as a fraction of it in 1/256.
    let frac = if whole >= 8 {
        (x >> (whole - 8)) & 0xff
    } else {
        (x << (8 - whole)) & 0xff
    };
    whole * 256 + frac
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/net");
        std::fs::read(dir.join(name)).unwrap()
    }

    #[test]
    fn replays_the_reference_arithmetic_at_every_level() {
        let net = Frozen::from_file(&fixture("frozen-small.safetensors")).unwrap();
        let text = fixture("frozen-small.txt");
        let want: Vec<u32> = fixture("frozen-small.counts")
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(want.len(), text.len() * 256);
        let before = crate::simd::kernels();
        for level in [
            crate::simd::Kernels::Scalar,
            crate::simd::Kernels::Avx2,
            crate::simd::Kernels::Avx512,
        ] {
            crate::simd::set_kernels(level);
            let mut s = net.state();
            let mut counts = [0u32; 256];
            for (i, &b) in text.iter().enumerate() {
                net.predict(&mut s, &mut counts);
                assert_eq!(
                    &counts[..],
                    &want[i * 256..i * 256 + 256],
                    "byte {i}, {level:?}"
                );
                net.update(&mut s, b);
            }
        }
        crate::simd::set_kernels(before);
    }

    #[test]
    fn cost_is_the_code_length_of_its_predictions() {
        let net = Frozen::from_file(&fixture("frozen-small.safetensors")).unwrap();
        let text = fixture("frozen-small.txt");
        let (mut s, mut counts, mut bits) = (net.state(), [0u32; 256], 0.0f64);
        for &b in &text {
            net.predict(&mut s, &mut counts);
            let total: u32 = counts.iter().sum();
            bits += (f64::from(total) / f64::from(counts[b as usize])).log2();
            net.update(&mut s, b);
        }
        let cost = net.cost(&text) as f64 / 256.0;
        // The interpolated log2 errs by at most 0.09 bits a byte, each way across the two terms.
        assert!(
            (cost - bits).abs() <= 0.09 * text.len() as f64,
            "{cost} against {bits}"
        );
        assert!(cost > 0.0);
        assert_eq!(log2_fixed(1), 0);
        assert_eq!(log2_fixed(1024), 10 * 256);
        assert_eq!(log2_fixed(3), 256 + 128);
    }

    #[test]
    fn damaged_files_are_errors() {
        let file = fixture("frozen-small.safetensors");
        for cut in [0, 8, 100, file.len() / 2, file.len() - 1] {
            assert!(Frozen::from_file(&file[..cut]).is_err(), "cut at {cut}");
        }
    }
}
