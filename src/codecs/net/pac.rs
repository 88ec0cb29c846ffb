//! PAC, the MLP backbone: SEP semantics enhancement (byte embedding, overlapping patches, dimension
//! fusion, a data-dependent adaptive-stride gate that drops low-information patches, a learned
//! map across the patch axis) feeding a PAC-style MLP backbone that predicts the next byte.
//! Runs batched over lanes on the engine's deterministic kernels; trains online with Adam.

use super::config::NetConfig;
use super::train::{add_rows, Rng, Trainer};
use crate::codecs::lanes::Lanes;
use crate::engine::kernels::{
    matmul_acc, outer_acc, relu, relu_backward, sigmoid, softmax_rows, transpose,
};

/// Bytes of history the patches cover.
const HIST: usize = 8;
/// Bytes per patch.
const PATCH: usize = 4;
/// Patches over the history (stride 1).
const PATCHES: usize = HIST - PATCH + 1;
/// Patches kept by the adaptive-stride gate.
const KEEP: usize = 3;
/// Byte embedding width.
const EMB: usize = 16;
/// Fused patch width.
const FUSED: usize = 32;
/// Rows of the map across the patch axis.
const ROWS: usize = 2;
/// Match-length buckets given to the network as a one-hot.
const MATCH_BUCKETS: usize = 16;
/// Backbone input width: mapped patches, match-byte embedding, match-length one-hot.
const IN: usize = ROWS * FUSED + EMB + MATCH_BUCKETS;
/// Patch input width.
const PIN: usize = PATCH * EMB;

/// Offsets of each tensor in the flat parameter vector.
#[derive(Clone, Copy)]
struct Offsets {
    emb: usize,
    memb: usize,
    gate: usize,
    gate_b: usize,
    wf: usize,
    bf: usize,
    map: usize,
    w1: usize,
    b1: usize,
    w2: usize,
    b2: usize,
    len: usize,
}

impl Offsets {
    fn new(hidden: usize) -> Self {
        let mut at = 0;
        let mut take = |n: usize| {
            let o = at;
            at += n;
            o
        };
        let l = Offsets {
            emb: take(256 * EMB),
            memb: take(256 * EMB),
            gate: take(PIN),
            gate_b: take(PATCHES),
            wf: take(PIN * FUSED),
            bf: take(FUSED),
            map: take(ROWS * PATCHES),
            w1: take(IN * hidden),
            b1: take(hidden),
            w2: take(hidden * 256),
            b2: take(256),
            len: 0,
        };
        Offsets { len: at, ..l }
    }
}

/// Network state, parameters and per-step activations of one block.
pub struct Pac {
    hidden: usize,
    lay: Offsets,
    p: Vec<f32>,
    train: Trainer,
    active: usize,
    // Activations of the last forward pass (per lane).
    bytes: Vec<[u8; HIST]>,
    kept: Vec<[usize; KEEP]>,
    sig: Vec<[f32; KEEP]>,
    px: Vec<f32>,
    pf: Vec<f32>,
    input: Vec<f32>,
    match_byte: Vec<Option<u8>>,
    h: Vec<f32>,
    probs: Vec<f32>,
    // Gradient scratch.
    dh: Vec<f32>,
    din: Vec<f32>,
    dpf: Vec<f32>,
    dpx: Vec<f32>,
    dx: Vec<f32>,
    /// Transposes of W2, W1 and Wf, refreshed after every optimiser step (input gradients).
    w2t: Vec<f32>,
    w1t: Vec<f32>,
    wft: Vec<f32>,
}

impl Pac {
    /// A network with seeded initial weights for up to `lanes` lanes.
    pub fn new(cfg: NetConfig, lanes: usize) -> Self {
        let hidden = cfg.hidden as usize;
        let lay = Offsets::new(hidden);
        let mut p = vec![0.0f32; lay.len];
        let mut rng = Rng(0x5E9_C0DE_5EED_0001);
        let mut init =
            |p: &mut [f32], scale: f32| p.iter_mut().for_each(|x| *x = rng.uniform(scale));
        init(&mut p[lay.emb..lay.memb], 0.3);
        init(&mut p[lay.memb..lay.gate], 0.3);
        init(&mut p[lay.gate..lay.gate_b], 0.1);
        init(&mut p[lay.wf..lay.bf], (6.0 / (PIN + FUSED) as f32).sqrt());
        p[lay.map..lay.w1].fill(1.0 / KEEP as f32);
        init(&mut p[lay.w1..lay.b1], (6.0 / (IN + hidden) as f32).sqrt());
        init(&mut p[lay.w2..lay.b2], (6.0 / (hidden + 256) as f32).sqrt());
        let n = p.len();
        let mut net = Pac {
            hidden,
            lay,
            p,
            train: Trainer::new(n, cfg.lr as f32 * 1e-5, lay.gate, EMB),
            active: 0,
            bytes: vec![[0; HIST]; lanes],
            kept: vec![[0; KEEP]; lanes],
            sig: vec![[0.0; KEEP]; lanes],
            px: vec![0.0; lanes * KEEP * PIN],
            pf: vec![0.0; lanes * KEEP * FUSED],
            input: vec![0.0; lanes * IN],
            match_byte: vec![None; lanes],
            h: vec![0.0; lanes * hidden],
            probs: vec![0.0; lanes * 256],
            dh: vec![0.0; lanes * hidden],
            din: vec![0.0; lanes * IN],
            dpf: vec![0.0; lanes * KEEP * FUSED],
            dpx: vec![0.0; lanes * KEEP * PIN],
            dx: vec![0.0; lanes * KEEP * PIN],
            w2t: vec![0.0; hidden * 256],
            w1t: vec![0.0; IN * hidden],
            wft: vec![0.0; PIN * FUSED],
        };
        net.refresh_transposes();
        net
    }

    /// Recomputes the transposed weights after the parameters changed.
    fn refresh_transposes(&mut self) {
        let (lay, hd) = (self.lay, self.hidden);
        transpose(&self.p[lay.w2..lay.b2], &mut self.w2t, hd, 256);
        transpose(&self.p[lay.w1..lay.b1], &mut self.w1t, IN, hd);
        transpose(&self.p[lay.wf..lay.bf], &mut self.wft, PIN, FUSED);
    }

    /// Predicts the next byte of the first `active` lanes at `step`; `matches[l]` is lane l's
    /// match prediction and length bucket. Returns `active` rows of 256 probabilities.
    pub fn forward(
        &mut self,
        hist: &[u8],
        lanes: &Lanes,
        step: usize,
        active: usize,
        matches: &[(Option<u8>, usize)],
    ) -> &[f32] {
        let lay = self.lay;
        let hd = self.hidden;
        self.active = active;
        for l in 0..active {
            let start = lanes.history_start(l);
            let pos = lanes.history_pos(l, step);
            let bytes = &mut self.bytes[l];
            for (i, b) in bytes.iter_mut().enumerate() {
                *b = if pos > start + i {
                    hist[pos - 1 - i]
                } else {
                    0
                };
            }
            // Patch inputs: the embeddings of each patch's bytes, side by side.
            let mut xs = [[0f32; PIN]; PATCHES];
            let mut score = [0f32; PATCHES];
            for (i, x) in xs.iter_mut().enumerate() {
                for j in 0..PATCH {
                    let e = lay.emb + bytes[i + j] as usize * EMB;
                    x[j * EMB..j * EMB + EMB].copy_from_slice(&self.p[e..e + EMB]);
                }
                score[i] = crate::engine::kernels::dot_fixed(x, &self.p[lay.gate..lay.gate + PIN])
                    + self.p[lay.gate_b + i];
            }
            // Adaptive stride: keep the KEEP highest-scoring patches (lower index on ties).
            let mut order = [0usize, 1, 2, 3, 4];
            order.sort_by(|&a, &b| score[b].total_cmp(&score[a]).then(a.cmp(&b)));
            let mut kept = [0usize; KEEP];
            kept.copy_from_slice(&order[..KEEP]);
            kept.sort_unstable();
            self.kept[l] = kept;
            for (k, &i) in kept.iter().enumerate() {
                self.sig[l][k] = sigmoid(score[i]);
                let o = (l * KEEP + k) * PIN;
                self.px[o..o + PIN].copy_from_slice(&xs[i]);
            }
        }
        // Dimension fusion of the kept patches only: relu(x Wf + bf).
        let rows = active * KEEP;
        for r in 0..rows {
            self.pf[r * FUSED..r * FUSED + FUSED].copy_from_slice(&self.p[lay.bf..lay.bf + FUSED]);
        }
        matmul_acc(
            &self.px[..rows * PIN],
            &self.p[lay.wf..lay.bf],
            &mut self.pf[..rows * FUSED],
            PIN,
            FUSED,
        );
        relu(&mut self.pf[..rows * FUSED]);
        // Map across the patch axis, match features, then the MLP backbone.
        for l in 0..active {
            let inp = &mut self.input[l * IN..l * IN + IN];
            inp.fill(0.0);
            for (k, &i) in self.kept[l].iter().enumerate() {
                let f = &self.pf[(l * KEEP + k) * FUSED..(l * KEEP + k + 1) * FUSED];
                for r in 0..ROWS {
                    let a = self.p[lay.map + r * PATCHES + i] * self.sig[l][k];
                    for (o, &fv) in inp[r * FUSED..(r + 1) * FUSED].iter_mut().zip(f) {
                        *o += a * fv;
                    }
                }
            }
            let (mb, bucket) = matches.get(l).copied().unwrap_or((None, 0));
            self.match_byte[l] = mb;
            if let Some(b) = mb {
                let e = lay.memb + b as usize * EMB;
                inp[ROWS * FUSED..ROWS * FUSED + EMB].copy_from_slice(&self.p[e..e + EMB]);
            }
            inp[ROWS * FUSED + EMB + bucket.min(MATCH_BUCKETS - 1)] = 1.0;
            self.h[l * hd..l * hd + hd].copy_from_slice(&self.p[lay.b1..lay.b1 + hd]);
            self.probs[l * 256..l * 256 + 256].copy_from_slice(&self.p[lay.b2..lay.b2 + 256]);
        }
        matmul_acc(
            &self.input[..active * IN],
            &self.p[lay.w1..lay.b1],
            &mut self.h[..active * hd],
            IN,
            hd,
        );
        relu(&mut self.h[..active * hd]);
        matmul_acc(
            &self.h[..active * hd],
            &self.p[lay.w2..lay.b2],
            &mut self.probs[..active * 256],
            hd,
            256,
        );
        softmax_rows(&mut self.probs[..active * 256], 256);
        &self.probs[..active * 256]
    }

    /// The parameters (weights and biases, one flat vector).
    pub fn params(&self) -> &[f32] {
        &self.p
    }

    /// Takes parameters saved by `params` from a network of the same shape (which the caller
    /// has checked); the optimiser starts afresh.
    pub fn load(&mut self, p: &[f32]) {
        self.p.copy_from_slice(p);
        self.refresh_transposes();
    }

    /// Trains on the true bytes of the lanes of the last forward pass.
    pub fn learn(&mut self, bytes: &[u8]) {
        self.backward(bytes);
        self.optimise(bytes.len().min(self.active));
    }

    /// Accumulates the cross-entropy gradient of the last forward pass into `g`.
    fn backward(&mut self, bytes: &[u8]) {
        let lay = self.lay;
        let hd = self.hidden;
        let a = self.active.min(bytes.len());
        // Cross-entropy gradient w.r.t. the logits: p - onehot(y).
        let dz = &mut self.probs[..a * 256];
        for (l, &y) in bytes[..a].iter().enumerate() {
            dz[l * 256 + y as usize] -= 1.0;
        }
        outer_acc(
            &self.h[..a * hd],
            dz,
            &mut self.train.g[lay.w2..lay.b2],
            hd,
            256,
        );
        add_rows(dz, &mut self.train.g[lay.b2..lay.b2 + 256]);
        self.dh[..a * hd].fill(0.0);
        matmul_acc(dz, &self.w2t, &mut self.dh[..a * hd], 256, hd);
        relu_backward(&self.h[..a * hd], &mut self.dh[..a * hd]);
        outer_acc(
            &self.input[..a * IN],
            &self.dh[..a * hd],
            &mut self.train.g[lay.w1..lay.b1],
            IN,
            hd,
        );
        add_rows(&self.dh[..a * hd], &mut self.train.g[lay.b1..lay.b1 + hd]);
        self.din[..a * IN].fill(0.0);
        matmul_acc(
            &self.dh[..a * hd],
            &self.w1t,
            &mut self.din[..a * IN],
            hd,
            IN,
        );
        // Back through the patch-axis map and the gate.
        for l in 0..a {
            let din = &self.din[l * IN..l * IN + IN];
            if let Some(b) = self.match_byte[l] {
                let e = lay.memb + b as usize * EMB;
                for (g, &d) in self.train.g[e..e + EMB]
                    .iter_mut()
                    .zip(&din[ROWS * FUSED..])
                {
                    *g += d;
                }
            }
            for (k, &i) in self.kept[l].iter().enumerate() {
                let r0 = (l * KEEP + k) * FUSED;
                let f = &self.pf[r0..r0 + FUSED];
                let s = self.sig[l][k];
                let mut dsig = 0.0;
                let dpf = &mut self.dpf[r0..r0 + FUSED];
                dpf.fill(0.0);
                for r in 0..ROWS {
                    let m = self.p[lay.map + r * PATCHES + i];
                    let dout = &din[r * FUSED..(r + 1) * FUSED];
                    let mut dm = 0.0;
                    for ((dp, &d), &fv) in dpf.iter_mut().zip(dout).zip(f) {
                        dm += d * fv;
                        *dp += d * m * s;
                    }
                    self.train.g[lay.map + r * PATCHES + i] += dm * s;
                    dsig += dm * m;
                }
                // d score = d sigma * sigma (1 - sigma); the score is gate . x + gate_b[i].
                let dscore = dsig * s * (1.0 - s);
                self.train.g[lay.gate_b + i] += dscore;
                let x = &self.px[(l * KEEP + k) * PIN..(l * KEEP + k + 1) * PIN];
                for (g, &xv) in self.train.g[lay.gate..lay.gate + PIN].iter_mut().zip(x) {
                    *g += dscore * xv;
                }
                let dx = &mut self.dpx[(l * KEEP + k) * PIN..(l * KEEP + k + 1) * PIN];
                for (d, &gw) in dx.iter_mut().zip(&self.p[lay.gate..lay.gate + PIN]) {
                    *d = dscore * gw;
                }
            }
        }
        // Back through the fusion layer.
        let rows = a * KEEP;
        relu_backward(&self.pf[..rows * FUSED], &mut self.dpf[..rows * FUSED]);
        outer_acc(
            &self.px[..rows * PIN],
            &self.dpf[..rows * FUSED],
            &mut self.train.g[lay.wf..lay.bf],
            PIN,
            FUSED,
        );
        add_rows(
            &self.dpf[..rows * FUSED],
            &mut self.train.g[lay.bf..lay.bf + FUSED],
        );
        let dx = &mut self.dx[..rows * PIN];
        dx.fill(0.0);
        matmul_acc(&self.dpf[..rows * FUSED], &self.wft, dx, FUSED, PIN);
        // Into the byte embeddings.
        for l in 0..a {
            for (k, &i) in self.kept[l].iter().enumerate() {
                let o = (l * KEEP + k) * PIN;
                for j in 0..PATCH {
                    let e = lay.emb + self.bytes[l][i + j] as usize * EMB;
                    for t in 0..EMB {
                        self.train.g[e + t] += dx[o + j * EMB + t] + self.dpx[o + j * EMB + t];
                    }
                }
            }
        }
    }

    /// Records the embedding rows that got gradient and lets the trainer take its step.
    fn optimise(&mut self, a: usize) {
        let lay = self.lay;
        for l in 0..a {
            for &i in &self.kept[l] {
                for j in 0..PATCH {
                    self.train
                        .touch(lay.emb + self.bytes[l][i + j] as usize * EMB);
                }
            }
            if let Some(b) = self.match_byte[l] {
                self.train.touch(lay.memb + b as usize * EMB);
            }
        }
        if self.train.after(&mut self.p, a) {
            self.refresh_transposes();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codecs::net::train::tests::check_tensors;

    /// Loss -sum ln p[y] of one forward pass over `lanes` lanes at `step`.
    fn loss(
        net: &mut Pac,
        hist: &[u8],
        lanes: &Lanes,
        step: usize,
        m: &[(Option<u8>, usize)],
        y: &[u8],
    ) -> f64 {
        let p = net.forward(hist, lanes, step, y.len(), m);
        y.iter()
            .enumerate()
            .map(|(l, &b)| -(p[l * 256 + b as usize] as f64).ln())
            .sum()
    }

    #[test]
    fn gradients_match_finite_differences() {
        let hist: Vec<u8> = b"the cat sat on the mat; the dog sat on the log.".to_vec();
        let lanes = Lanes::new(hist.len(), 3, 1);
        let step = 9;
        let y: Vec<u8> = (0..lanes.active(step))
            .map(|l| hist[lanes.start(l) + step])
            .collect();
        let m = vec![(Some(b'a'), 3), (None, 0), (Some(b' '), 9)];
        let mut net = Pac::new(NetConfig { hidden: 8, lr: 0 }, lanes.count);
        // Move the weights off their symmetric start so every path carries gradient.
        let mut rng = Rng(99);
        for p in net.p.iter_mut() {
            *p += rng.uniform(0.05);
        }
        net.refresh_transposes();
        loss(&mut net, &hist, &lanes, step, &m, &y);
        let kept = net.kept.clone();
        net.train.g.fill(0.0);
        net.backward(&y);
        let analytic = net.train.g.clone();
        let lay = net.lay;
        let tensors = [
            ("emb", lay.emb, lay.memb),
            ("memb", lay.memb, lay.gate),
            ("gate", lay.gate, lay.gate_b),
            ("gate_b", lay.gate_b, lay.wf),
            ("wf", lay.wf, lay.bf),
            ("bf", lay.bf, lay.map),
            ("map", lay.map, lay.w1),
            ("w1", lay.w1, lay.b1),
            ("b1", lay.b1, lay.w2),
            ("w2", lay.w2, lay.b2),
            ("b2", lay.b2, lay.len),
        ];
        check_tensors(
            &mut net,
            &tensors,
            &analytic,
            |n| &mut n.p,
            |n| {
                n.refresh_transposes();
                let l = loss(n, &hist, &lanes, step, &m, &y);
                (l, n.kept == kept)
            },
        );
    }
}
