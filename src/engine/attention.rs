//! The transformer kernels: layer normalisation, the GELU activation, the linear-attention
//! feature map and the causal linear-attention readout, each with its backward pass.
//!
//! Linear attention (the TRACE/SLiMPerformer design) keeps, per sequence, the prefix sums
//! `S = sum_i phi(k_i) v_i^T` and `z = sum_i phi(k_i)` of the tokens seen so far, so one query
//! costs `O(d^2)` whatever the history's length: `o = S^T phi(q) / (phi(q) . z)`. The readout here
//! also takes the current token's own key and value beside the sums, so a forward pass leaves
//! the sums untouched and can be repeated (the caller adds the token once it is coded).
//!
//! Like `kernels`, every function is compiled per SIMD level and computes the same bits on each:
//! no FMA contraction, reductions in the engine's fixed order.

use super::kernels::{dot_fixed, exp_fixed, sigmoid, sum_fixed};
use crate::simd::kernel_variants;

/// Added to the attention denominator so an empty history reads as zero.
pub const ATTEND_EPS: f32 = 1e-4;
/// Added to the variance in layer normalisation.
const NORM_EPS: f32 = 1e-5;
/// Slope of the sigmoid in the GELU approximation `x * sigmoid(1.702 x)`.
const GELU_K: f32 = 1.702;

kernel_variants! {
    /// Normalises each row of `x` (rows x n) to zero mean and unit variance, then scales by
    /// `gain` and shifts by `bias`; `rstd` receives each row's reciprocal standard deviation and
    /// `xhat` the normalised rows (both for the backward pass).
    pub fn layer_norm [] [] (
        x: &[f32],
        gain: &[f32],
        bias: &[f32],
        xhat: &mut [f32],
        rstd: &mut [f32],
        out: &mut [f32],
    ) {
        let n = gain.len();
        for (((xr, hr), or), rs) in x
            .chunks_exact(n)
            .zip(xhat.chunks_exact_mut(n))
            .zip(out.chunks_exact_mut(n))
            .zip(rstd.iter_mut())
        {
            let mean = sum_fixed(xr) / n as f32;
            for (h, &v) in hr.iter_mut().zip(xr) {
                *h = v - mean;
            }
            let var = dot_fixed(hr, hr) / n as f32;
            let r = 1.0 / (var + NORM_EPS).sqrt();
            *rs = r;
            for ((h, o), (&g, &b)) in hr.iter_mut().zip(or.iter_mut()).zip(gain.iter().zip(bias)) {
                *h *= r;
                *o = *h * g + b;
            }
        }
    }
}

/// Gradients of `layer_norm`'s gain and bias, accumulated.
pub struct NormGrads<'a> {
    /// Gradient of the gain.
    pub gain: &'a mut [f32],
    /// Gradient of the bias.
    pub bias: &'a mut [f32],
}

kernel_variants! {
    /// Backward pass of `layer_norm`: from the output gradient `dout`, adds the gain and bias
    /// gradients to `grads` (rows ascending) and writes the input gradient to `dx`.
    /// `scratch` holds n values.
    pub fn layer_norm_backward [] [] (
        xhat: &[f32],
        rstd: &[f32],
        gain: &[f32],
        dout: &[f32],
        grads: NormGrads<'_>,
        scratch: &mut [f32],
        dx: &mut [f32],
    ) {
        let n = gain.len();
        let inv_n = 1.0 / n as f32;
        for (((hr, dr), dxr), &r) in xhat
            .chunks_exact(n)
            .zip(dout.chunks_exact(n))
            .zip(dx.chunks_exact_mut(n))
            .zip(rstd)
        {
            for i in 0..n {
                grads.gain[i] += dr[i] * hr[i];
                grads.bias[i] += dr[i];
                scratch[i] = dr[i] * gain[i];
            }
            // dx = r (dh - mean(dh) - xhat mean(dh xhat)), dh the gradient of xhat.
            let m1 = sum_fixed(scratch) * inv_n;
            let m2 = dot_fixed(scratch, hr) * inv_n;
            for i in 0..n {
                dxr[i] = r * (scratch[i] - m1 - hr[i] * m2);
            }
        }
    }
}

kernel_variants! {
    /// GELU in its sigmoid form, `x * sigmoid(1.702 x)`, of `pre` into `out`.
    pub fn gelu [] [] (pre: &[f32], out: &mut [f32]) {
        for (o, &x) in out.iter_mut().zip(pre) {
            *o = x * sigmoid(GELU_K * x);
        }
    }
}

kernel_variants! {
    /// Multiplies the gradient `grad` of `gelu`'s output by its derivative at `pre`.
    pub fn gelu_backward [] [] (pre: &[f32], grad: &mut [f32]) {
        for (g, &x) in grad.iter_mut().zip(pre) {
            let s = sigmoid(GELU_K * x);
            *g *= s + GELU_K * x * s * (1.0 - s);
        }
    }
}

kernel_variants! {
    /// The linear-attention feature map `phi(x) = elu(x) + 1` (positive everywhere), in place.
    pub fn feature_map [] [] (x: &mut [f32]) {
        for v in x.iter_mut() {
            *v = if *v > 0.0 { *v + 1.0 } else { exp_fixed(*v) };
        }
    }
}

kernel_variants! {
    /// Multiplies the gradient of `feature_map`'s output by its derivative, given the output
    /// `phi` (the derivative is 1 above zero and `phi` itself below).
    pub fn feature_map_backward [] [] (phi: &[f32], grad: &mut [f32]) {
        for (g, &p) in grad.iter_mut().zip(phi) {
            if p < 1.0 {
                *g *= p;
            }
        }
    }
}

/// The current token's own key features and (gate-scaled) value, read beside the prefix sums.
#[derive(Clone, Copy)]
pub struct Own<'a> {
    /// phi(k) of the token.
    pub phi_k: &'a [f32],
    /// Its value.
    pub v: &'a [f32],
}

/// What one linear-attention query reads: the prefix sums `s` (d x d, row m: key feature m)
/// and `z` (d), the query's features and the current token, where it is given.
#[derive(Clone, Copy)]
pub struct Readout<'a> {
    /// Sum of phi(k) v^T over the earlier tokens.
    pub s: &'a [f32],
    /// Sum of phi(k) over the earlier tokens.
    pub z: &'a [f32],
    /// phi(q) of the query.
    pub phi_q: &'a [f32],
    /// The current token.
    pub own: Option<Own<'a>>,
}

kernel_variants! {
    /// Causal linear-attention readout of one query: `out = a / den`, with
    /// `a = S^T phi_q + (phi_q . phi_k) v` and `den = phi_q . z + phi_q . phi_k + ATTEND_EPS`
    /// (the `own` terms only where the current token is given). Returns `den`.
    pub fn attend [] [] (r: Readout<'_>, out: &mut [f32]) -> f32 {
        let Readout { s, z, phi_q, own } = r;
        let d = z.len();
        out.fill(0.0);
        for (m, &q) in phi_q.iter().enumerate() {
            if q == 0.0 {
                continue;
            }
            for (o, &sv) in out.iter_mut().zip(&s[m * d..m * d + d]) {
                *o += q * sv;
            }
        }
        let mut den = dot_fixed(phi_q, z) + ATTEND_EPS;
        if let Some(t) = own {
            let c = dot_fixed(phi_q, t.phi_k);
            for (o, &v) in out.iter_mut().zip(t.v) {
                *o += c * v;
            }
            den += c;
        }
        let inv = 1.0 / den;
        for o in out.iter_mut() {
            *o *= inv;
        }
        den
    }
}

/// Gradients of `attend`'s inputs.
pub struct AttendGrads<'a> {
    /// Gradient of phi_q (overwritten).
    pub phi_q: &'a mut [f32],
    /// Gradients of the own token's phi_k and value (overwritten), where it was given.
    pub own: Option<(&'a mut [f32], &'a mut [f32])>,
}

kernel_variants! {
    /// Backward pass of `attend` with the prefix sums held constant: from the output `out`, its
    /// `den` and the output gradient `dout`, writes the gradients of phi_q and of the own
    /// token's phi_k and value. `scratch` holds d values.
    pub fn attend_backward [] [] (
        r: Readout<'_>,
        out: &[f32],
        den: f32,
        dout: &[f32],
        scratch: &mut [f32],
        grads: AttendGrads<'_>,
    ) {
        let Readout { s, z, phi_q, own } = r;
        let d = z.len();
        // da = dout / den; d den = -(dout . out) / den.
        let inv = 1.0 / den;
        for (a, &g) in scratch.iter_mut().zip(dout) {
            *a = g * inv;
        }
        let dden = -dot_fixed(dout, out) * inv;
        for (m, g) in grads.phi_q.iter_mut().enumerate() {
            *g = dot_fixed(&s[m * d..m * d + d], scratch) + z[m] * dden;
        }
        if let (Some(t), Some((dk, dv))) = (own, grads.own) {
            // Through c = phi_q . phi_k, which scales v in a and adds to den.
            let dc = dot_fixed(scratch, t.v) + dden;
            let c = dot_fixed(phi_q, t.phi_k);
            for m in 0..d {
                grads.phi_q[m] += t.phi_k[m] * dc;
                dk[m] = phi_q[m] * dc;
                dv[m] = c * scratch[m];
            }
        }
    }
}

kernel_variants! {
    /// Adds `sign` times a token to the prefix sums: `S += sign phi_k v^T`, `z += sign phi_k`
    /// (`sign` is 1 or -1, so removing a token undoes adding it up to rounding).
    pub fn attend_update [] [] (s: &mut [f32], z: &mut [f32], phi_k: &[f32], v: &[f32], sign: f32) {
        let d = z.len();
        for (m, &k) in phi_k.iter().enumerate() {
            let k = sign * k;
            z[m] += k;
            for (sv, &vv) in s[m * d..m * d + d].iter_mut().zip(v) {
                *sv += k * vv;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::kernels::tests::{rng, same_on_every_level};

    /// Checks `analytic` against central finite differences of `loss` at `x`: Err naming the
    /// first entry off by more than a relative 2% (plus a small absolute slack).
    pub(crate) fn check_gradient(
        name: &str,
        x: &[f32],
        analytic: &[f32],
        loss: impl Fn(&[f32]) -> f64,
    ) -> Result<(), String> {
        let h = 1e-2f32;
        for i in 0..x.len() {
            let (mut up, mut down) = (x.to_vec(), x.to_vec());
            up[i] += h;
            down[i] -= h;
            let fd = (loss(&up) - loss(&down)) / (2.0 * h as f64);
            let a = analytic[i] as f64;
            if (fd - a).abs() > 2e-2 * a.abs().max(fd.abs()) + 2e-3 {
                return Err(format!("{name}[{i}]: analytic {a}, finite difference {fd}"));
            }
        }
        Ok(())
    }

    fn random(n: usize, seed: &mut u64, scale: f32) -> Vec<f32> {
        (0..n).map(|_| rng(seed) * scale).collect()
    }

    /// Loss weights: L = sum c_i out_i, so dL/dout = c.
    fn weigh(out: &[f32], c: &[f32]) -> f64 {
        out.iter().zip(c).map(|(a, b)| *a as f64 * *b as f64).sum()
    }

    #[test]
    fn layer_norm_gradients_match_finite_differences() {
        let mut seed = 5u64;
        let (rows, n) = (3, 7);
        let x = random(rows * n, &mut seed, 2.0);
        let gain = random(n, &mut seed, 1.0);
        let bias = random(n, &mut seed, 1.0);
        let c = random(rows * n, &mut seed, 1.0);
        let run = |x: &[f32], gain: &[f32], bias: &[f32]| {
            let (mut xhat, mut rstd, mut out) =
                (vec![0.0; rows * n], vec![0.0; rows], vec![0.0; rows * n]);
            layer_norm(x, gain, bias, &mut xhat, &mut rstd, &mut out);
            (xhat, rstd, out)
        };
        let (xhat, rstd, _) = run(&x, &gain, &bias);
        let (mut dg, mut db, mut scratch, mut dx) = (
            vec![0.0; n],
            vec![0.0; n],
            vec![0.0; n],
            vec![0.0; rows * n],
        );
        layer_norm_backward(
            &xhat,
            &rstd,
            &gain,
            &c,
            NormGrads {
                gain: &mut dg,
                bias: &mut db,
            },
            &mut scratch,
            &mut dx,
        );
        check_gradient("x", &x, &dx, |x| weigh(&run(x, &gain, &bias).2, &c)).unwrap();
        check_gradient("gain", &gain, &dg, |g| weigh(&run(&x, g, &bias).2, &c)).unwrap();
        check_gradient("bias", &bias, &db, |b| weigh(&run(&x, &gain, b).2, &c)).unwrap();
        // The check fails on a gradient broken on purpose.
        let mut broken = dx.clone();
        broken[4] *= 1.2;
        assert!(check_gradient("x", &x, &broken, |x| weigh(&run(x, &gain, &bias).2, &c)).is_err());
    }

    #[test]
    fn activation_gradients_match_finite_differences() {
        let mut seed = 9u64;
        let x = random(40, &mut seed, 3.0);
        let c = random(40, &mut seed, 1.0);
        let run_gelu = |x: &[f32]| {
            let mut o = vec![0.0; x.len()];
            gelu(x, &mut o);
            weigh(&o, &c)
        };
        let mut dg = c.clone();
        gelu_backward(&x, &mut dg);
        check_gradient("gelu", &x, &dg, run_gelu).unwrap();
        let run_phi = |x: &[f32]| {
            let mut o = x.to_vec();
            feature_map(&mut o);
            weigh(&o, &c)
        };
        let mut phi = x.clone();
        feature_map(&mut phi);
        assert!(phi.iter().all(|&p| p > 0.0));
        let mut dp = c.clone();
        feature_map_backward(&phi, &mut dp);
        check_gradient("feature map", &x, &dp, run_phi).unwrap();
        let mut broken = dp.clone();
        broken[0] = -broken[0] + 0.1;
        assert!(check_gradient("feature map", &x, &broken, run_phi).is_err());
    }

    #[test]
    fn attention_gradients_match_finite_differences() {
        let mut seed = 11u64;
        let d = 6;
        // Prefix sums of a few earlier tokens.
        let (mut s, mut z) = (vec![0.0; d * d], vec![0.0; d]);
        for _ in 0..4 {
            let mut k = random(d, &mut seed, 1.0);
            feature_map(&mut k);
            let v = random(d, &mut seed, 1.0);
            attend_update(&mut s, &mut z, &k, &v, 1.0);
        }
        let mut q = random(d, &mut seed, 1.0);
        feature_map(&mut q);
        let mut k = random(d, &mut seed, 1.0);
        feature_map(&mut k);
        let v = random(d, &mut seed, 1.0);
        let c = random(d, &mut seed, 1.0);
        let run = |q: &[f32], k: &[f32], v: &[f32]| {
            let mut o = vec![0.0; d];
            attend(
                Readout {
                    s: &s,
                    z: &z,
                    phi_q: q,
                    own: Some(Own { phi_k: k, v }),
                },
                &mut o,
            );
            weigh(&o, &c)
        };
        let mut out = vec![0.0; d];
        let r = Readout {
            s: &s,
            z: &z,
            phi_q: &q,
            own: Some(Own { phi_k: &k, v: &v }),
        };
        let den = attend(r, &mut out);
        let (mut dq, mut dk, mut dv, mut scratch) =
            (vec![0.0; d], vec![0.0; d], vec![0.0; d], vec![0.0; d]);
        attend_backward(
            r,
            &out,
            den,
            &c,
            &mut scratch,
            AttendGrads {
                phi_q: &mut dq,
                own: Some((&mut dk, &mut dv)),
            },
        );
        check_gradient("phi_q", &q, &dq, |q| run(q, &k, &v)).unwrap();
        check_gradient("phi_k", &k, &dk, |k| run(&q, k, &v)).unwrap();
        check_gradient("v", &v, &dv, |v| run(&q, &k, v)).unwrap();
        let mut broken = dk.clone();
        broken[2] += 0.05 + broken[2].abs();
        assert!(check_gradient("phi_k", &k, &broken, |k| run(&q, k, &v)).is_err());
        // Without the own token, and adding then removing a token restores the sums closely.
        let (s0, z0) = (s.clone(), z.clone());
        let (mut s1, mut z1) = (s.clone(), z.clone());
        attend_update(&mut s1, &mut z1, &k, &v, 1.0);
        attend_update(&mut s1, &mut z1, &k, &v, -1.0);
        for (a, b) in s1.iter().zip(&s0).chain(z1.iter().zip(&z0)) {
            assert!((a - b).abs() < 1e-5);
        }
        let mut o = vec![0.0; d];
        let den = attend(
            Readout {
                s: &s,
                z: &z,
                phi_q: &q,
                own: None,
            },
            &mut o,
        );
        assert!((den - (dot_fixed(&q, &z) + ATTEND_EPS)).abs() < 1e-6);
    }

    #[test]
    fn transformer_kernels_bit_identical_across_levels() {
        let mut seed = 0xfeed_u64;
        for &(rows, n) in &[(1, 1), (3, 7), (5, 32), (2, 65)] {
            let x = random(rows * n, &mut seed, 3.0);
            let gain = random(n, &mut seed, 1.0);
            let bias = random(n, &mut seed, 1.0);
            let dy = random(rows * n, &mut seed, 1.0);
            same_on_every_level("layer_norm", || {
                let (mut h, mut r, mut o) =
                    (vec![0.0; rows * n], vec![0.0; rows], vec![0.0; rows * n]);
                layer_norm(&x, &gain, &bias, &mut h, &mut r, &mut o);
                let (mut dg, mut db, mut sc, mut dx) = (
                    vec![0.0; n],
                    vec![0.0; n],
                    vec![0.0; n],
                    vec![0.0; rows * n],
                );
                layer_norm_backward(
                    &h,
                    &r,
                    &gain,
                    &dy,
                    NormGrads {
                        gain: &mut dg,
                        bias: &mut db,
                    },
                    &mut sc,
                    &mut dx,
                );
                [o, r, dg, db, dx].concat()
            });
            same_on_every_level("gelu and feature map", || {
                let mut o = vec![0.0; rows * n];
                gelu(&x, &mut o);
                let mut g = dy.clone();
                gelu_backward(&x, &mut g);
                let mut p = x.clone();
                feature_map(&mut p);
                let mut gp = dy.clone();
                feature_map_backward(&p, &mut gp);
                [o, g, p, gp].concat()
            });
            same_on_every_level("attention", || {
                let (mut s, mut z) = (vec![0.0; n * n], vec![0.0; n]);
                let mut seed = 3u64;
                for _ in 0..5 {
                    let mut k = random(n, &mut seed, 1.0);
                    feature_map(&mut k);
                    let v = random(n, &mut seed, 1.0);
                    attend_update(&mut s, &mut z, &k, &v, 1.0);
                }
                let mut q = random(n, &mut seed, 1.0);
                feature_map(&mut q);
                let mut k = random(n, &mut seed, 1.0);
                feature_map(&mut k);
                let v = random(n, &mut seed, 1.0);
                let own = Some(Own { phi_k: &k, v: &v });
                let mut o = vec![0.0; n];
                let r = Readout {
                    s: &s,
                    z: &z,
                    phi_q: &q,
                    own,
                };
                let den = attend(r, &mut o);
                let (mut dq, mut dk, mut dv, mut sc) =
                    (vec![0.0; n], vec![0.0; n], vec![0.0; n], vec![0.0; n]);
                let g = &dy[..n];
                attend_backward(
                    r,
                    &o,
                    den,
                    g,
                    &mut sc,
                    AttendGrads {
                        phi_q: &mut dq,
                        own: Some((&mut dk, &mut dv)),
                    },
                );
                [s, z, o, vec![den], dq, dk, dv].concat()
            });
        }
    }
}
