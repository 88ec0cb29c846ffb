//! The numeric kernels: matmul forward and backward products, activations, softmax, exp/ln, Adam.
//!
//! Each kernel is written once in plain Rust and compiled three times (portable, AVX2, AVX-512) by
//! `simd::leveled!`. Rust never reassociates float operations nor contracts `a * b + c` into FMA,
//! so vectorised builds compute exactly the bits of the portable one. Reductions run in one fixed
//! order everywhere: 16 interleaved partial sums, then a fixed pairwise tree.

use crate::simd::kernel_variants;

/// Width of the interleaved partial sums of every reduction.
const LANES: usize = 16;

/// Dot product in the engine's fixed reduction order.
#[inline(always)]
pub fn dot_fixed(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let mut acc = [0f32; LANES];
    let full = n / LANES * LANES;
    for (ca, cb) in a[..full]
        .chunks_exact(LANES)
        .zip(b[..full].chunks_exact(LANES))
    {
        for i in 0..LANES {
            acc[i] += ca[i] * cb[i];
        }
    }
    for i in full..n {
        acc[i - full] += a[i] * b[i];
    }
    reduce_fixed(acc)
}

/// Sum of a slice in the engine's fixed reduction order.
#[inline(always)]
pub fn sum_fixed(a: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    let full = a.len() / LANES * LANES;
    for c in a[..full].chunks_exact(LANES) {
        for i in 0..LANES {
            acc[i] += c[i];
        }
    }
    for i in full..a.len() {
        acc[i - full] += a[i];
    }
    reduce_fixed(acc)
}

#[inline(always)]
fn reduce_fixed(mut acc: [f32; LANES]) -> f32 {
    let mut w = LANES / 2;
    while w > 0 {
        for i in 0..w {
            acc[i] += acc[i + w];
        }
        w /= 2;
    }
    acc[0]
}

/// Limits `x` to `[lo, hi]`, mapping NaN to `lo` (unlike `f32::clamp`, which keeps NaN), so
/// callers can rely on a finite result.
#[inline(always)]
#[allow(clippy::manual_clamp)]
pub fn bound(x: f32, lo: f32, hi: f32) -> f32 {
    x.max(lo).min(hi)
}

/// Rounds to the nearest integer (ties to even) for |x| < 2^22, exactly, without libm.
#[inline(always)]
fn round_magic(x: f32) -> f32 {
    const MAGIC: f32 = 12_582_912.0; // 1.5 * 2^23
    (x + MAGIC) - MAGIC
}

/// e^x with a relative error below 2e-7 over [-87, 88]; 0 below, +inf above. Deterministic.
#[inline(always)]
pub fn exp_fixed(x: f32) -> f32 {
    // NaN becomes -87, so everything below works on finite values.
    let x = bound(x, -87.0, 88.0);
    let y = x * std::f32::consts::LOG2_E;
    let n = round_magic(y);
    // r = x - n*ln2 in two parts (Cody-Waite) so the reduction stays accurate.
    let r = (x - n * 0.693_145_75) - n * 1.428_606_8e-6;
    // Degree-6 Taylor/minimax polynomial of e^r on |r| <= ln2/2, Horner order.
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (0.166_666_67
                    + r * (0.041_666_668 + r * (0.008_333_334 + r * 0.001_388_889)))));
    // SAFETY: n is an integer in [-126, 127], representable as i32.
    let bits = ((unsafe { n.to_int_unchecked::<i32>() } + 127) as u32) << 23;
    p * f32::from_bits(bits)
}

/// The logistic function 1 / (1 + e^-x), on the engine's exp.
#[inline(always)]
pub fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + exp_fixed(-x))
}

/// Natural logarithm for x > 0 (x <= 0 gives -88, the engine's floor). Deterministic.
#[inline(always)]
pub fn ln_fixed(x: f32) -> f32 {
    if x <= 1e-38 || x.is_nan() {
        return -88.0;
    }
    let bits = x.to_bits();
    let mut e = ((bits >> 23) & 0xff) as i32 - 127;
    let mut m = f32::from_bits((bits & 0x007f_ffff) | 0x3f80_0000); // [1, 2)
    if m > std::f32::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    // ln(m) = 2 atanh(s), s = (m-1)/(m+1), |s| < 0.172: odd series to s^9.
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let t = s * (2.0 + s2 * (0.666_666_7 + s2 * (0.4 + s2 * (0.285_714_3 + s2 * 0.222_222_22))));
    t + e as f32 * std::f32::consts::LN_2
}

/// `out_row[j0..j0+T] += sum_k x_row[k] * w[k][j0..j0+T]` in registers, k ascending, zero inputs
/// skipped. Each output element keeps its own operation order, so tiling never changes bits.
#[inline(always)]
fn row_tile<const T: usize>(xr: &[f32], w: &[f32], or: &mut [f32], j0: usize, n: usize) {
    let mut acc = [0f32; T];
    acc.copy_from_slice(&or[j0..j0 + T]);
    for (kk, &a) in xr.iter().enumerate() {
        if a == 0.0 {
            continue;
        }
        let wr = &w[kk * n + j0..kk * n + j0 + T];
        for t in 0..T {
            acc[t] += a * wr[t];
        }
    }
    or[j0..j0 + T].copy_from_slice(&acc);
}

/// Calls `tile::<64>`, `<32>`, `<16>`, `<8>`, `<1>` over the columns `0..n`.
macro_rules! tiled {
    ($n:expr, |$j0:ident, $t:ident| $body:expr) => {{
        let n = $n;
        let mut $j0 = 0;
        while $j0 + 64 <= n {
            {
                const $t: usize = 64;
                $body;
            }
            $j0 += 64;
        }
        if $j0 + 32 <= n {
            {
                const $t: usize = 32;
                $body;
            }
            $j0 += 32;
        }
        if $j0 + 16 <= n {
            {
                const $t: usize = 16;
                $body;
            }
            $j0 += 16;
        }
        if $j0 + 8 <= n {
            {
                const $t: usize = 8;
                $body;
            }
            $j0 += 8;
        }
        while $j0 < n {
            {
                const $t: usize = 1;
                $body;
            }
            $j0 += 1;
        }
    }};
}

/// `out[b][j] += sum_k x[b][k] * w[k][j]` with k ascending; zero inputs skipped.
#[inline(always)]
fn matmul_rows(x: &[f32], w: &[f32], out: &mut [f32], k: usize, n: usize) {
    let rows = out.len() / n;
    for b in 0..rows {
        let xr = &x[b * k..b * k + k];
        let or = &mut out[b * n..b * n + n];
        tiled!(n, |j0, T| row_tile::<T>(xr, w, or, j0, n));
    }
}

/// `dw[kk][j0..j0+T] += sum_b x[b][kk] * dy[b][j0..j0+T]` in registers, b ascending.
#[inline(always)]
fn grad_tile<const T: usize>(
    x: &[f32],
    dy: &[f32],
    dwr: &mut [f32],
    kk: usize,
    k: usize,
    n: usize,
    j0: usize,
) {
    let rows = dy.len() / n;
    let mut acc = [0f32; T];
    acc.copy_from_slice(&dwr[j0..j0 + T]);
    for b in 0..rows {
        let a = x[b * k + kk];
        if a == 0.0 {
            continue;
        }
        let g = &dy[b * n + j0..b * n + j0 + T];
        for t in 0..T {
            acc[t] += a * g[t];
        }
    }
    dwr[j0..j0 + T].copy_from_slice(&acc);
}

kernel_variants! {
    /// `out[b][j] += sum_k x[b][k] * w[k][j]`, k ascending (x: rows x k, w: k x n, out: rows x n).
    /// Zero inputs are skipped identically on every level (sparse one-hot and ReLU inputs).
    pub fn matmul_acc [] [] (x: &[f32], w: &[f32], out: &mut [f32], k: usize, n: usize) {
        matmul_rows(x, w, out, k, n)
    }
}

kernel_variants! {
    /// out = transpose of w (k x n), as n x k.
    pub fn transpose [] [] (w: &[f32], out: &mut [f32], k: usize, n: usize) {
        for kk in 0..k {
            for j in 0..n {
                out[j * k + kk] = w[kk * n + j];
            }
        }
    }
}

kernel_variants! {
    /// `dw[kk][j] += sum_b x[b][kk] * dy[b][j]`, b ascending (gradient w.r.t. weights).
    pub fn outer_acc [] [] (x: &[f32], dy: &[f32], dw: &mut [f32], k: usize, n: usize) {
        for kk in 0..k {
            let dwr = &mut dw[kk * n..kk * n + n];
            tiled!(n, |j0, T| grad_tile::<T>(x, dy, dwr, kk, k, n, j0));
        }
    }
}

kernel_variants! {
    /// In-place softmax of each row of `z` (rows x n); uses the engine's exp.
    pub fn softmax_rows [] [] (z: &mut [f32], n: usize) {
        for row in z.chunks_exact_mut(n) {
            let mut m = f32::NEG_INFINITY;
            for &v in row.iter() {
                m = m.max(v);
            }
            for v in row.iter_mut() {
                *v = exp_fixed(*v - m);
            }
            let inv = 1.0 / sum_fixed(row);
            for v in row.iter_mut() {
                *v *= inv;
            }
        }
    }
}

kernel_variants! {
    /// ReLU in place; returns nothing (the mask is the output's sign).
    pub fn relu [] [] (x: &mut [f32]) {
        for v in x.iter_mut() {
            *v = v.max(0.0);
        }
    }
}

kernel_variants! {
    /// Zeroes gradient entries where the ReLU output was zero.
    pub fn relu_backward [] [] (out: &[f32], grad: &mut [f32]) {
        for (g, &o) in grad.iter_mut().zip(out) {
            if o <= 0.0 {
                *g = 0.0;
            }
        }
    }
}

/// Hyper-parameters of one Adam step.
#[derive(Clone, Copy, Debug)]
pub struct AdamStep {
    /// Learning rate already multiplied by the bias correction sqrt(1-b2^t)/(1-b1^t).
    pub lr: f32,
    /// First-moment decay.
    pub b1: f32,
    /// Second-moment decay.
    pub b2: f32,
    /// Denominator floor.
    pub eps: f32,
}

kernel_variants! {
    /// One Adam update of `p` from gradient `g` (moments `m`, `v`); zeroes `g` afterwards.
    pub fn adam [] [] (p: &mut [f32], g: &mut [f32], m: &mut [f32], v: &mut [f32], s: AdamStep) {
        let (c1, c2) = (1.0 - s.b1, 1.0 - s.b2);
        for (((pi, gi), mi), vi) in p.iter_mut().zip(g.iter_mut()).zip(m.iter_mut()).zip(v.iter_mut()) {
            let gv = *gi;
            let mv = s.b1 * *mi + c1 * gv;
            let vv = s.b2 * *vi + c2 * (gv * gv);
            *mi = mv;
            *vi = vv;
            *pi -= s.lr * mv / (vv.sqrt() + s.eps);
            *gi = 0.0;
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::simd::{set_kernels, Kernels};
    use std::sync::Mutex;

    /// Serialises tests that switch the process-wide level.
    pub(crate) static LEVEL_LOCK: Mutex<()> = Mutex::new(());

    pub(crate) fn rng(seed: &mut u64) -> f32 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        ((*seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    fn levels() -> Vec<Kernels> {
        let best = Kernels::detect();
        [Kernels::Scalar, Kernels::Avx2, Kernels::Avx512]
            .into_iter()
            .filter(|l| *l <= best)
            .collect()
    }

    /// Runs `f` at every level and asserts all outputs equal the scalar one bit for bit.
    pub(crate) fn same_on_every_level(name: &str, f: impl Fn() -> Vec<f32>) {
        let _g = LEVEL_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        set_kernels(Kernels::Scalar);
        let want: Vec<u32> = f().iter().map(|v| v.to_bits()).collect();
        for l in levels() {
            set_kernels(l);
            let got: Vec<u32> = f().iter().map(|v| v.to_bits()).collect();
            assert_eq!(got, want, "{name} differs at level {l:?}");
        }
        set_kernels(Kernels::detect());
    }

    #[test]
    fn kernels_bit_identical_across_levels_odd_shapes() {
        let mut seed = 0x1234_5678_9abc_def1u64;
        for &(rows, k, n) in &[
            (1, 1, 1),
            (3, 7, 13),
            (5, 33, 17),
            (16, 64, 256),
            (2, 129, 31),
            (7, 250, 3),
        ] {
            let mut x: Vec<f32> = (0..rows * k).map(|_| rng(&mut seed)).collect();
            x.iter_mut().step_by(3).for_each(|v| *v = 0.0);
            let w: Vec<f32> = (0..k * n).map(|_| rng(&mut seed)).collect();
            let dy: Vec<f32> = (0..rows * n).map(|_| rng(&mut seed)).collect();
            let bias: Vec<f32> = (0..rows * n).map(|_| rng(&mut seed)).collect();
            same_on_every_level("matmul_acc", || {
                let mut o = bias.clone();
                matmul_acc(&x, &w, &mut o, k, n);
                o
            });
            same_on_every_level("input gradient (transpose + matmul)", || {
                let mut wt = vec![0.0; k * n];
                transpose(&w, &mut wt, k, n);
                let mut dx = vec![0.0; rows * k];
                matmul_acc(&dy, &wt, &mut dx, n, k);
                dx
            });
            same_on_every_level("outer_acc", || {
                let mut dw = w.clone();
                outer_acc(&x, &dy, &mut dw, k, n);
                dw
            });
            same_on_every_level("softmax_rows", || {
                let mut z: Vec<f32> = dy.iter().map(|v| v * 30.0).collect();
                softmax_rows(&mut z, n);
                z
            });
            same_on_every_level("relu", || {
                let mut z = dy.clone();
                relu(&mut z);
                let mut g = bias.clone();
                relu_backward(&z, &mut g);
                g
            });
            same_on_every_level("adam", || {
                let mut p = w.clone();
                let mut g: Vec<f32> = w.iter().map(|v| v * 0.1).collect();
                let mut m = vec![0.01; w.len()];
                let mut v = vec![0.001; w.len()];
                let s = AdamStep {
                    lr: 1e-3,
                    b1: 0.9,
                    b2: 0.999,
                    eps: 1e-8,
                };
                adam(&mut p, &mut g, &mut m, &mut v, s);
                p.extend_from_slice(&m);
                p.extend_from_slice(&v);
                p
            });
        }
    }

    #[test]
    fn matmul_matches_naive_and_gradients_match_finite_differences() {
        let mut seed = 77u64;
        let (rows, k, n) = (3, 5, 4);
        let x: Vec<f32> = (0..rows * k).map(|_| rng(&mut seed)).collect();
        let w: Vec<f32> = (0..k * n).map(|_| rng(&mut seed)).collect();
        let mut o = vec![0.0; rows * n];
        matmul_acc(&x, &w, &mut o, k, n);
        for b in 0..rows {
            for j in 0..n {
                let naive: f64 = (0..k)
                    .map(|kk| x[b * k + kk] as f64 * w[kk * n + j] as f64)
                    .sum();
                assert!((o[b * n + j] as f64 - naive).abs() < 1e-5);
            }
        }
        // Loss L = sum_bj c[b][j] * out[b][j]: dL/dout = c, so dx = c w^T and dw = x^T c.
        let c: Vec<f32> = (0..rows * n).map(|_| rng(&mut seed)).collect();
        let loss = |x: &[f32], w: &[f32]| -> f64 {
            let mut o = vec![0.0; rows * n];
            matmul_acc(x, w, &mut o, k, n);
            o.iter().zip(&c).map(|(a, b)| *a as f64 * *b as f64).sum()
        };
        let mut wt = vec![0.0; k * n];
        transpose(&w, &mut wt, k, n);
        let mut dx = vec![0.0; rows * k];
        matmul_acc(&c, &wt, &mut dx, n, k);
        let mut dw = vec![0.0; k * n];
        outer_acc(&x, &c, &mut dw, k, n);
        let h = 1e-2f32;
        for i in 0..x.len() {
            let (mut xp, mut xm) = (x.clone(), x.clone());
            xp[i] += h;
            xm[i] -= h;
            let fd = (loss(&xp, &w) - loss(&xm, &w)) / (2.0 * h as f64);
            assert!(
                (fd - dx[i] as f64).abs() < 1e-3,
                "dx[{i}]: {fd} vs {}",
                dx[i]
            );
        }
        for i in 0..w.len() {
            let (mut wp, mut wm) = (w.clone(), w.clone());
            wp[i] += h;
            wm[i] -= h;
            let fd = (loss(&x, &wp) - loss(&x, &wm)) / (2.0 * h as f64);
            assert!(
                (fd - dw[i] as f64).abs() < 1e-3,
                "dw[{i}]: {fd} vs {}",
                dw[i]
            );
        }
    }

    #[test]
    fn exp_and_ln_are_accurate() {
        let mut x = -87.0f32;
        while x < 88.0 {
            let got = exp_fixed(x) as f64;
            let want = (x as f64).exp();
            assert!(
                ((got - want) / want).abs() < 1e-6,
                "exp({x}) = {got}, want {want}"
            );
            x += 0.0137;
        }
        let mut x = 1e-30f32;
        while x < 1e30 {
            let got = ln_fixed(x) as f64;
            let want = (x as f64).ln();
            assert!(
                (got - want).abs() < 2e-6 * want.abs().max(1.0),
                "ln({x}) = {got}, want {want}"
            );
            x *= 1.37;
        }
        assert_eq!(ln_fixed(0.0), -88.0);
        assert_eq!(exp_fixed(-1000.0), exp_fixed(-87.0));
    }

    #[test]
    fn softmax_sums_to_one() {
        let mut z: Vec<f32> = (0..512).map(|i| (i % 37) as f32 * 0.3 - 4.0).collect();
        softmax_rows(&mut z, 256);
        for row in z.chunks(256) {
            let s: f64 = row.iter().map(|&v| v as f64).sum();
            assert!((s - 1.0).abs() < 1e-5);
        }
    }
}
