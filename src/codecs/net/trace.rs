//! TRACE: a causal linear-attention transformer over SEP patch tokens that predicts the next
//! byte of every lane.
//!
//! Each step adds one token per lane: the embeddings of the lane's last `PATCH` bytes, fused
//! to the model width. A data-dependent gate (the adaptive stride) scores the token; a token
//! scoring below zero is dropped, and its key and value are never computed. The kept tokens of
//! the last `window` positions live in per-lane prefix sums (`engine::attention`), so a query
//! costs the same whatever the window: the new token enters the sums, the one leaving the
//! window is subtracted, and every `window` steps the sums are rebuilt from the kept tokens so
//! rounding cannot build up. The current token's query reads the sums (and its own key and
//! value, scaled by its gate), then a residual projection, a layer norm and a GELU
//! feed-forward block; the head adds the match model's byte and length and gives 256 logits.
//!
//! Online training back-propagates one step: the earlier tokens' keys and values are
//! constants, the current token's are not.

use super::config::NetConfig;
use super::train::{add_rows, glorot, Rng, Trainer};
use crate::codecs::lanes::Lanes;
use crate::engine::attention::{
    attend, attend_backward, attend_update, feature_map, feature_map_backward, gelu, gelu_backward,
    layer_norm, layer_norm_backward, AttendGrads, NormGrads, Own, Readout,
};
use crate::engine::kernels::{
    dot_fixed, matmul_acc, outer_acc, relu, relu_backward, sigmoid, softmax_rows, transpose,
};

/// Bytes of history the attention window covers (one token per position).
pub const WINDOW: usize = 64;
/// Bytes per patch token.
const PATCH: usize = 4;
/// Byte embedding width.
const EMB: usize = 16;
/// Patch input width.
const PIN: usize = PATCH * EMB;
/// Match-length buckets given to the head as a one-hot.
const MATCH_BUCKETS: usize = 16;
/// Gate bias at the start: most tokens are kept until the gate learns otherwise.
const GATE_START: f32 = 2.0;

/// Offsets of each tensor in the flat parameter vector.
#[derive(Clone, Copy)]
struct Offsets {
    emb: usize,
    memb: usize,
    gate: usize,
    gate_b: usize,
    wf: usize,
    bf: usize,
    wq: usize,
    wk: usize,
    wv: usize,
    wo: usize,
    norm_g: usize,
    norm_b: usize,
    w1: usize,
    c1: usize,
    w2: usize,
    c2: usize,
    wh: usize,
    bh: usize,
    len: usize,
}

impl Offsets {
    fn new(d: usize) -> Self {
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
            gate_b: take(1),
            wf: take(PIN * d),
            bf: take(d),
            wq: take(d * d),
            wk: take(d * d),
            wv: take(d * d),
            wo: take(d * d),
            norm_g: take(d),
            norm_b: take(d),
            w1: take(d * 2 * d),
            c1: take(2 * d),
            w2: take(2 * d * d),
            c2: take(d),
            wh: take((d + EMB + MATCH_BUCKETS) * 256),
            bh: take(256),
            len: 0,
        };
        Offsets { len: at, ..l }
    }
}

/// One lane's attention memory: the prefix sums of its kept tokens and, per window position,
/// the token stored there (to subtract it when it leaves, and to rebuild the sums).
struct Memory {
    s: Vec<f32>,
    z: Vec<f32>,
    /// Per slot (position modulo the window): the position whose token it holds, if any.
    at: Vec<Option<usize>>,
    phi_k: Vec<f32>,
    v: Vec<f32>,
}

impl Memory {
    fn new(d: usize, window: usize) -> Self {
        Memory {
            s: vec![0.0; d * d],
            z: vec![0.0; d],
            at: vec![None; window],
            phi_k: vec![0.0; window * d],
            v: vec![0.0; window * d],
        }
    }

    /// Subtracts the token of slot `i` from the sums and frees the slot.
    fn forget(&mut self, i: usize, d: usize) {
        if self.at[i].take().is_some() {
            let (k, v) = (&self.phi_k[i * d..i * d + d], &self.v[i * d..i * d + d]);
            attend_update(&mut self.s, &mut self.z, k, v, -1.0);
        }
    }

    /// Rebuilds the sums from the stored tokens, slots ascending.
    fn rebuild(&mut self, d: usize) {
        self.s.fill(0.0);
        self.z.fill(0.0);
        for (i, at) in self.at.iter().enumerate() {
            if at.is_some() {
                let (k, v) = (&self.phi_k[i * d..i * d + d], &self.v[i * d..i * d + d]);
                attend_update(&mut self.s, &mut self.z, k, v, 1.0);
            }
        }
    }
}

/// The TRACE network of one block: parameters, per-lane memories and the activations of the
/// last forward pass.
pub struct Trace {
    d: usize,
    window: usize,
    lay: Offsets,
    p: Vec<f32>,
    train: Trainer,
    active: usize,
    memory: Vec<Memory>,
    // Activations of the last forward pass (per lane, or per kept lane for `kf`..`dv`).
    pos: Vec<usize>,
    bytes: Vec<[u8; PATCH]>,
    x: Vec<f32>,
    sig: Vec<f32>,
    f: Vec<f32>,
    phi_q: Vec<f32>,
    /// Lanes whose token was kept, in lane order, and each lane's place among them.
    kept: Vec<usize>,
    kept_at: Vec<Option<usize>>,
    kf: Vec<f32>,
    phi_k: Vec<f32>,
    v_raw: Vec<f32>,
    v: Vec<f32>,
    o: Vec<f32>,
    den: Vec<f32>,
    r: Vec<f32>,
    xhat: Vec<f32>,
    rstd: Vec<f32>,
    h1: Vec<f32>,
    pre: Vec<f32>,
    u: Vec<f32>,
    hin: Vec<f32>,
    match_byte: Vec<Option<u8>>,
    probs: Vec<f32>,
    // Gradient scratch.
    dhin: Vec<f32>,
    dh2: Vec<f32>,
    du: Vec<f32>,
    dh1: Vec<f32>,
    dr: Vec<f32>,
    d_o: Vec<f32>,
    dq: Vec<f32>,
    dk: Vec<f32>,
    dv: Vec<f32>,
    dkf: Vec<f32>,
    df: Vec<f32>,
    dx: Vec<f32>,
    /// Gradient of each lane's gate score.
    dscore: Vec<f32>,
    scratch: Vec<f32>,
    /// Transposes of the weights whose input gradient is needed, refreshed after every step.
    t: Transposes,
}

/// Transposed weights (input gradients).
struct Transposes {
    wh: Vec<f32>,
    w2: Vec<f32>,
    w1: Vec<f32>,
    wo: Vec<f32>,
    wq: Vec<f32>,
    wk: Vec<f32>,
    wv: Vec<f32>,
    wf: Vec<f32>,
}

impl Trace {
    /// Width of the head's input: the block output, the match byte's embedding, the
    /// match-length one-hot.
    fn head_in(&self) -> usize {
        self.d + EMB + MATCH_BUCKETS
    }

    /// A network of width `cfg.hidden` with seeded initial weights for up to `lanes` lanes,
    /// attending over `window` positions.
    pub fn new(cfg: NetConfig, lanes: usize, window: usize) -> Self {
        let d = (cfg.hidden as usize).max(1);
        let lay = Offsets::new(d);
        let hin = d + EMB + MATCH_BUCKETS;
        let mut p = vec![0.0f32; lay.len];
        let mut rng = Rng(0x7ACE_5EED_0000_0001);
        rng.fill(&mut p[lay.emb..lay.memb], 0.3);
        rng.fill(&mut p[lay.memb..lay.gate], 0.3);
        rng.fill(&mut p[lay.gate..lay.gate_b], 0.1);
        p[lay.gate_b] = GATE_START;
        rng.fill(&mut p[lay.wf..lay.bf], glorot(PIN, d));
        for w in [lay.wq, lay.wk, lay.wv, lay.wo] {
            rng.fill(&mut p[w..w + d * d], glorot(d, d));
        }
        p[lay.norm_g..lay.norm_g + d].fill(1.0);
        rng.fill(&mut p[lay.w1..lay.c1], glorot(d, 2 * d));
        rng.fill(&mut p[lay.w2..lay.c2], glorot(2 * d, d));
        rng.fill(&mut p[lay.wh..lay.bh], glorot(hin, 256));
        let n = p.len();
        let z = |k: usize| vec![0.0f32; k];
        let mut net = Trace {
            d,
            window: window.max(1),
            lay,
            p,
            train: Trainer::new(n, cfg.lr as f32 * 1e-5, lay.gate, EMB),
            active: 0,
            memory: (0..lanes).map(|_| Memory::new(d, window.max(1))).collect(),
            pos: vec![0; lanes],
            bytes: vec![[0; PATCH]; lanes],
            x: z(lanes * PIN),
            sig: z(lanes),
            f: z(lanes * d),
            phi_q: z(lanes * d),
            kept: Vec::with_capacity(lanes),
            kept_at: vec![None; lanes],
            kf: z(lanes * d),
            phi_k: z(lanes * d),
            v_raw: z(lanes * d),
            v: z(lanes * d),
            o: z(lanes * d),
            den: z(lanes),
            r: z(lanes * d),
            xhat: z(lanes * d),
            rstd: z(lanes),
            h1: z(lanes * d),
            pre: z(lanes * 2 * d),
            u: z(lanes * 2 * d),
            hin: z(lanes * hin),
            match_byte: vec![None; lanes],
            probs: z(lanes * 256),
            dhin: z(lanes * hin),
            dh2: z(lanes * d),
            du: z(lanes * 2 * d),
            dh1: z(lanes * d),
            dr: z(lanes * d),
            d_o: z(lanes * d),
            dq: z(lanes * d),
            dk: z(lanes * d),
            dv: z(lanes * d),
            dkf: z(lanes * d),
            df: z(lanes * d),
            dx: z(lanes * PIN),
            dscore: z(lanes),
            scratch: z(2 * d),
            t: Transposes {
                wh: z(hin * 256),
                w2: z(2 * d * d),
                w1: z(2 * d * d),
                wo: z(d * d),
                wq: z(d * d),
                wk: z(d * d),
                wv: z(d * d),
                wf: z(PIN * d),
            },
        };
        net.refresh_transposes();
        net
    }

    /// Recomputes the transposed weights after the parameters changed.
    fn refresh_transposes(&mut self) {
        let (lay, d, hin) = (self.lay, self.d, self.head_in());
        let p = &self.p;
        transpose(&p[lay.wh..lay.bh], &mut self.t.wh, hin, 256);
        transpose(&p[lay.w2..lay.c2], &mut self.t.w2, 2 * d, d);
        transpose(&p[lay.w1..lay.c1], &mut self.t.w1, d, 2 * d);
        transpose(&p[lay.wo..lay.wo + d * d], &mut self.t.wo, d, d);
        transpose(&p[lay.wq..lay.wq + d * d], &mut self.t.wq, d, d);
        transpose(&p[lay.wk..lay.wk + d * d], &mut self.t.wk, d, d);
        transpose(&p[lay.wv..lay.wv + d * d], &mut self.t.wv, d, d);
        transpose(&p[lay.wf..lay.bf], &mut self.t.wf, PIN, d);
    }

    /// Fills `out` (rows x n) with copies of the bias `b`.
    fn fill_bias(out: &mut [f32], b: &[f32]) {
        for row in out.chunks_exact_mut(b.len()) {
            row.copy_from_slice(b);
        }
    }

    /// Predicts the next byte of the first `active` lanes at `step`; `matches[l]` is lane l's
    /// match prediction and length bucket. Returns `active` rows of 256 probabilities. Leaves
    /// the lanes' memories as they were, but for tokens that left the window.
    pub fn forward(
        &mut self,
        hist: &[u8],
        lanes: &Lanes,
        step: usize,
        active: usize,
        matches: &[(Option<u8>, usize)],
    ) -> &[f32] {
        self.tokens(hist, lanes, step, active);
        self.fuse(active);
        self.attend_lanes(active);
        self.feed_forward(active);
        self.head(active, matches);
        &self.probs[..active * 256]
    }

    /// Each lane's token at `step`: its patch of the bytes before it, embedded, and whether the
    /// adaptive stride keeps it (`kept`); the slot it takes leaves the lane's memory.
    fn tokens(&mut self, hist: &[u8], lanes: &Lanes, step: usize, active: usize) {
        let (lay, d) = (self.lay, self.d);
        self.active = active;
        self.kept.clear();
        for l in 0..active {
            let start = lanes.history_start(l);
            let pos = lanes.history_pos(l, step);
            self.pos[l] = pos;
            // The token that held this slot a window ago leaves it now.
            let slot = pos % self.window;
            self.memory[l].forget(slot, d);
            let bytes = &mut self.bytes[l];
            for (i, b) in bytes.iter_mut().enumerate() {
                *b = if pos > start + i {
                    hist[pos - 1 - i]
                } else {
                    0
                };
            }
            let x = &mut self.x[l * PIN..l * PIN + PIN];
            for (j, &b) in bytes.iter().enumerate() {
                let e = lay.emb + b as usize * EMB;
                x[j * EMB..j * EMB + EMB].copy_from_slice(&self.p[e..e + EMB]);
            }
            // The adaptive stride: a token scoring below zero is dropped.
            let score = dot_fixed(x, &self.p[lay.gate..lay.gate + PIN]) + self.p[lay.gate_b];
            self.sig[l] = sigmoid(score);
            self.kept_at[l] = (score > 0.0).then_some(self.kept.len());
            if score > 0.0 {
                self.kept.push(l);
            }
        }
    }

    /// Dimension fusion of every lane's token, its query, and the keys and values of the kept
    /// tokens (values scaled by their gate).
    fn fuse(&mut self, active: usize) {
        let (lay, d) = (self.lay, self.d);
        let rows = active * d;
        // Fusion: f = relu(x Wf + bf).
        Self::fill_bias(&mut self.f[..rows], &self.p[lay.bf..lay.bf + d]);
        matmul_acc(
            &self.x[..active * PIN],
            &self.p[lay.wf..lay.bf],
            &mut self.f[..rows],
            PIN,
            d,
        );
        relu(&mut self.f[..rows]);
        // Queries of every lane; keys and values of the kept tokens only.
        self.phi_q[..rows].fill(0.0);
        matmul_acc(
            &self.f[..rows],
            &self.p[lay.wq..lay.wq + d * d],
            &mut self.phi_q[..rows],
            d,
            d,
        );
        feature_map(&mut self.phi_q[..rows]);
        let nk = self.kept.len() * d;
        for (i, &l) in self.kept.iter().enumerate() {
            self.kf[i * d..i * d + d].copy_from_slice(&self.f[l * d..l * d + d]);
        }
        self.phi_k[..nk].fill(0.0);
        self.v_raw[..nk].fill(0.0);
        matmul_acc(
            &self.kf[..nk],
            &self.p[lay.wk..lay.wk + d * d],
            &mut self.phi_k[..nk],
            d,
            d,
        );
        feature_map(&mut self.phi_k[..nk]);
        matmul_acc(
            &self.kf[..nk],
            &self.p[lay.wv..lay.wv + d * d],
            &mut self.v_raw[..nk],
            d,
            d,
        );
        for (i, &l) in self.kept.iter().enumerate() {
            let s = self.sig[l];
            for (v, &raw) in self.v[i * d..i * d + d]
                .iter_mut()
                .zip(&self.v_raw[i * d..i * d + d])
            {
                *v = s * raw;
            }
        }
    }

    /// Each lane's attention readout over its memory and its own token, the output
    /// projection with the residual, and the layer norm into `h1`.
    fn attend_lanes(&mut self, active: usize) {
        let (lay, d) = (self.lay, self.d);
        let rows = active * d;
        // Attention readout, then r = f + o Wo.
        for l in 0..active {
            let own = self.kept_at[l].map(|i| Own {
                phi_k: &self.phi_k[i * d..i * d + d],
                v: &self.v[i * d..i * d + d],
            });
            let m = &self.memory[l];
            let read = Readout {
                s: &m.s,
                z: &m.z,
                phi_q: &self.phi_q[l * d..l * d + d],
                own,
            };
            self.den[l] = attend(read, &mut self.o[l * d..l * d + d]);
        }
        self.r[..rows].copy_from_slice(&self.f[..rows]);
        matmul_acc(
            &self.o[..rows],
            &self.p[lay.wo..lay.wo + d * d],
            &mut self.r[..rows],
            d,
            d,
        );
        layer_norm(
            &self.r[..rows],
            &self.p[lay.norm_g..lay.norm_g + d],
            &self.p[lay.norm_b..lay.norm_b + d],
            &mut self.xhat[..rows],
            &mut self.rstd[..active],
            &mut self.h1[..rows],
        );
    }

    /// The feed-forward block over `h1`, into `dh2`.
    fn feed_forward(&mut self, active: usize) {
        let (lay, d) = (self.lay, self.d);
        let rows = active * d;
        // Feed-forward: h2 = h1 + gelu(h1 W1 + c1) W2 + c2, written into the head's input.
        let f2 = 2 * d;
        Self::fill_bias(&mut self.pre[..active * f2], &self.p[lay.c1..lay.c1 + f2]);
        matmul_acc(
            &self.h1[..rows],
            &self.p[lay.w1..lay.c1],
            &mut self.pre[..active * f2],
            d,
            f2,
        );
        gelu(&self.pre[..active * f2], &mut self.u[..active * f2]);
        for l in 0..active {
            let row = &mut self.dh2[l * d..l * d + d];
            for ((o, &h), &c) in row
                .iter_mut()
                .zip(&self.h1[l * d..l * d + d])
                .zip(&self.p[lay.c2..lay.c2 + d])
            {
                *o = h + c;
            }
        }
        matmul_acc(
            &self.u[..active * f2],
            &self.p[lay.w2..lay.c2],
            &mut self.dh2[..rows],
            f2,
            d,
        );
    }

    /// The head: each lane's input (the block's output, the match byte's embedding and the
    /// match length bucket) to 256 probabilities in `probs`.
    fn head(&mut self, active: usize, matches: &[(Option<u8>, usize)]) {
        let (lay, d, hin) = (self.lay, self.d, self.head_in());
        for l in 0..active {
            let inp = &mut self.hin[l * hin..l * hin + hin];
            inp.fill(0.0);
            inp[..d].copy_from_slice(&self.dh2[l * d..l * d + d]);
            let (mb, bucket) = matches.get(l).copied().unwrap_or((None, 0));
            self.match_byte[l] = mb;
            if let Some(b) = mb {
                let e = lay.memb + b as usize * EMB;
                inp[d..d + EMB].copy_from_slice(&self.p[e..e + EMB]);
            }
            inp[d + EMB + bucket.min(MATCH_BUCKETS - 1)] = 1.0;
        }
        Self::fill_bias(
            &mut self.probs[..active * 256],
            &self.p[lay.bh..lay.bh + 256],
        );
        matmul_acc(
            &self.hin[..active * hin],
            &self.p[lay.wh..lay.bh],
            &mut self.probs[..active * 256],
            hin,
            256,
        );
        softmax_rows(&mut self.probs[..active * 256], 256);
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

    /// Trains on the true bytes of the lanes of the last forward pass, then adds the kept
    /// tokens to their lanes' memories.
    pub fn learn(&mut self, bytes: &[u8]) {
        let a = self.active.min(bytes.len());
        self.backward(bytes);
        let lay = self.lay;
        for l in 0..a {
            for &b in &self.bytes[l] {
                self.train.touch(lay.emb + b as usize * EMB);
            }
            if let Some(b) = self.match_byte[l] {
                self.train.touch(lay.memb + b as usize * EMB);
            }
        }
        if self.train.after(&mut self.p, a) {
            self.refresh_transposes();
        }
        self.remember(a);
    }

    /// Adds the kept tokens of the first `a` lanes to their memories; rebuilds a memory's sums
    /// once per window.
    fn remember(&mut self, a: usize) {
        let d = self.d;
        for l in 0..a {
            let pos = self.pos[l];
            let slot = pos % self.window;
            // `forward` freed the slot (its token left the window).
            let m = &mut self.memory[l];
            if let Some(i) = self.kept_at[l] {
                m.at[slot] = Some(pos);
                m.phi_k[slot * d..slot * d + d].copy_from_slice(&self.phi_k[i * d..i * d + d]);
                m.v[slot * d..slot * d + d].copy_from_slice(&self.v[i * d..i * d + d]);
                let (k, v) = (
                    &m.phi_k[slot * d..slot * d + d],
                    &m.v[slot * d..slot * d + d],
                );
                attend_update(&mut m.s, &mut m.z, k, v, 1.0);
            }
            if slot == self.window - 1 {
                m.rebuild(d);
            }
        }
    }

    /// Accumulates the cross-entropy gradient of the last forward pass into the trainer.
    fn backward(&mut self, bytes: &[u8]) {
        let a = self.active.min(bytes.len());
        self.head_backward(&bytes[..a]);
        self.block_backward(a);
        self.attention_backward(a);
        self.kept_backward(a);
        self.fusion_backward(a);
    }

    /// The head's gradients for the true `bytes` of the first lanes, and its input's (`dh2`).
    fn head_backward(&mut self, bytes: &[u8]) {
        let (lay, d, hin) = (self.lay, self.d, self.head_in());
        let a = bytes.len();
        let g = &mut self.train.g;
        // Head: dz = p - onehot(y).
        let dz = &mut self.probs[..a * 256];
        for (l, &y) in bytes.iter().enumerate() {
            dz[l * 256 + y as usize] -= 1.0;
        }
        outer_acc(&self.hin[..a * hin], dz, &mut g[lay.wh..lay.bh], hin, 256);
        add_rows(dz, &mut g[lay.bh..lay.bh + 256]);
        self.dhin[..a * hin].fill(0.0);
        matmul_acc(dz, &self.t.wh, &mut self.dhin[..a * hin], 256, hin);
        for l in 0..a {
            let dh = &self.dhin[l * hin..l * hin + hin];
            self.dh2[l * d..l * d + d].copy_from_slice(&dh[..d]);
            if let Some(b) = self.match_byte[l] {
                let e = lay.memb + b as usize * EMB;
                for (gv, &dv) in g[e..e + EMB].iter_mut().zip(&dh[d..d + EMB]) {
                    *gv += dv;
                }
            }
        }
    }

    /// The feed-forward block, the layer norm and the residual projection, down to the
    /// attention output's gradient (`d_o`) and the fusion's (`df`, its residual share).
    fn block_backward(&mut self, a: usize) {
        let (lay, d) = (self.lay, self.d);
        let (rows, f2) = (a * d, 2 * d);
        let g = &mut self.train.g;
        // Feed-forward block.
        outer_acc(
            &self.u[..a * f2],
            &self.dh2[..rows],
            &mut g[lay.w2..lay.c2],
            f2,
            d,
        );
        add_rows(&self.dh2[..rows], &mut g[lay.c2..lay.c2 + d]);
        self.du[..a * f2].fill(0.0);
        matmul_acc(&self.dh2[..rows], &self.t.w2, &mut self.du[..a * f2], d, f2);
        gelu_backward(&self.pre[..a * f2], &mut self.du[..a * f2]);
        outer_acc(
            &self.h1[..rows],
            &self.du[..a * f2],
            &mut g[lay.w1..lay.c1],
            d,
            f2,
        );
        add_rows(&self.du[..a * f2], &mut g[lay.c1..lay.c1 + f2]);
        self.dh1[..rows].copy_from_slice(&self.dh2[..rows]);
        matmul_acc(&self.du[..a * f2], &self.t.w1, &mut self.dh1[..rows], f2, d);
        // Layer norm, then the residual projection.
        let (norm_g, norm_b) = g[lay.norm_g..lay.norm_b + d].split_at_mut(d);
        layer_norm_backward(
            &self.xhat[..rows],
            &self.rstd[..a],
            &self.p[lay.norm_g..lay.norm_g + d],
            &self.dh1[..rows],
            NormGrads {
                gain: norm_g,
                bias: norm_b,
            },
            &mut self.scratch[..d],
            &mut self.dr[..rows],
        );
        outer_acc(
            &self.o[..rows],
            &self.dr[..rows],
            &mut g[lay.wo..lay.wo + d * d],
            d,
            d,
        );
        self.d_o[..rows].fill(0.0);
        matmul_acc(&self.dr[..rows], &self.t.wo, &mut self.d_o[..rows], d, d);
        self.df[..rows].copy_from_slice(&self.dr[..rows]);
    }

    /// Attention, down to the queries' gradient (added to `df`) and the kept tokens' keys and
    /// values (`dk`, `dv`).
    fn attention_backward(&mut self, a: usize) {
        let (lay, d) = (self.lay, self.d);
        let rows = a * d;
        let g = &mut self.train.g;
        // Attention.
        for l in 0..a {
            let ki = self.kept_at[l];
            let own = ki.map(|i| Own {
                phi_k: &self.phi_k[i * d..i * d + d],
                v: &self.v[i * d..i * d + d],
            });
            let m = &self.memory[l];
            let read = Readout {
                s: &m.s,
                z: &m.z,
                phi_q: &self.phi_q[l * d..l * d + d],
                own,
            };
            let own_grads = match ki {
                Some(i) => {
                    let (dk, dv) = (
                        &mut self.dk[i * d..i * d + d],
                        &mut self.dv[i * d..i * d + d],
                    );
                    Some((dk, dv))
                }
                None => None,
            };
            attend_backward(
                read,
                &self.o[l * d..l * d + d],
                self.den[l],
                &self.d_o[l * d..l * d + d],
                &mut self.scratch[..d],
                AttendGrads {
                    phi_q: &mut self.dq[l * d..l * d + d],
                    own: own_grads,
                },
            );
        }
        feature_map_backward(&self.phi_q[..rows], &mut self.dq[..rows]);
        outer_acc(
            &self.f[..rows],
            &self.dq[..rows],
            &mut g[lay.wq..lay.wq + d * d],
            d,
            d,
        );
        matmul_acc(&self.dq[..rows], &self.t.wq, &mut self.df[..rows], d, d);
    }

    /// The kept tokens' keys and values, and through the value's scale, the gate's score
    /// (`dscore`); their fused tokens' gradients added to `df`.
    fn kept_backward(&mut self, a: usize) {
        let (lay, d) = (self.lay, self.d);
        let g = &mut self.train.g;
        // The kept tokens' keys and values, and through the value's scale, the gate.
        // Kept lanes are in lane order, so those below `a` come first.
        let kept = self.kept.iter().take_while(|&&l| l < a).count();
        let nk = kept * d;
        self.dscore[..a].fill(0.0);
        for (i, &l) in self.kept[..kept].iter().enumerate() {
            let s = self.sig[l];
            let dv = &mut self.dv[i * d..i * d + d];
            let ds = dot_fixed(dv, &self.v_raw[i * d..i * d + d]);
            self.dscore[l] = ds * s * (1.0 - s);
            for x in dv.iter_mut() {
                *x *= s;
            }
        }
        feature_map_backward(&self.phi_k[..nk], &mut self.dk[..nk]);
        outer_acc(
            &self.kf[..nk],
            &self.dk[..nk],
            &mut g[lay.wk..lay.wk + d * d],
            d,
            d,
        );
        outer_acc(
            &self.kf[..nk],
            &self.dv[..nk],
            &mut g[lay.wv..lay.wv + d * d],
            d,
            d,
        );
        self.dkf[..nk].fill(0.0);
        matmul_acc(&self.dk[..nk], &self.t.wk, &mut self.dkf[..nk], d, d);
        matmul_acc(&self.dv[..nk], &self.t.wv, &mut self.dkf[..nk], d, d);
        for (i, &l) in self.kept[..kept].iter().enumerate() {
            for (o, &v) in self.df[l * d..l * d + d]
                .iter_mut()
                .zip(&self.dkf[i * d..i * d + d])
            {
                *o += v;
            }
        }
    }

    /// The fusion, then the byte embeddings (through the fusion and the gate).
    fn fusion_backward(&mut self, a: usize) {
        let (lay, d) = (self.lay, self.d);
        let rows = a * d;
        let g = &mut self.train.g;
        // Fusion, then the byte embeddings (through the fusion and the gate).
        relu_backward(&self.f[..rows], &mut self.df[..rows]);
        outer_acc(
            &self.x[..a * PIN],
            &self.df[..rows],
            &mut g[lay.wf..lay.bf],
            PIN,
            d,
        );
        add_rows(&self.df[..rows], &mut g[lay.bf..lay.bf + d]);
        let dx = &mut self.dx[..a * PIN];
        dx.fill(0.0);
        matmul_acc(&self.df[..rows], &self.t.wf, dx, d, PIN);
        for l in 0..a {
            let ds = self.dscore[l];
            if ds != 0.0 {
                g[lay.gate_b] += ds;
                let x = &self.x[l * PIN..l * PIN + PIN];
                for ((gv, &xv), (dxv, &w)) in g[lay.gate..lay.gate + PIN].iter_mut().zip(x).zip(
                    dx[l * PIN..l * PIN + PIN]
                        .iter_mut()
                        .zip(&self.p[lay.gate..]),
                ) {
                    *gv += ds * xv;
                    *dxv += ds * w;
                }
            }
            for (j, &b) in self.bytes[l].iter().enumerate() {
                let e = lay.emb + b as usize * EMB;
                for (gv, &dv) in g[e..e + EMB]
                    .iter_mut()
                    .zip(&dx[l * PIN + j * EMB..l * PIN + j * EMB + EMB])
                {
                    *gv += dv;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codecs::net::train::tests::check_tensors;
    use crate::codecs::net::Backbone;

    /// Loss -sum ln p[y] of one forward pass over the lanes at `step`.
    fn loss(
        net: &mut Trace,
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

    fn config() -> NetConfig {
        NetConfig {
            backbone: Backbone::Trace,
            hidden: 8,
            lr: 200,
        }
    }

    #[test]
    fn gradients_match_finite_differences() {
        let hist: Vec<u8> =
            b"the cat sat on the mat; the dog sat on the log. a cat, a dog.".to_vec();
        let lanes = Lanes::new(hist.len(), 3, 1);
        let mut net = Trace::new(config(), lanes.count, 8);
        // Train a few steps so the memories hold tokens and the weights moved off their start.
        let m = vec![(Some(b'a'), 3), (None, 0), (Some(b' '), 9)];
        let mut step = 0;
        while step < 12 {
            let y: Vec<u8> = (0..lanes.active(step))
                .map(|l| hist[lanes.start(l) + step])
                .collect();
            net.forward(&hist, &lanes, step, y.len(), &m);
            net.learn(&y);
            step += 1;
        }
        let y: Vec<u8> = (0..lanes.active(step))
            .map(|l| hist[lanes.start(l) + step])
            .collect();
        loss(&mut net, &hist, &lanes, step, &m, &y);
        let kept = net.kept.clone();
        assert!(!kept.is_empty(), "no token kept");
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
            ("bf", lay.bf, lay.wq),
            ("wq", lay.wq, lay.wk),
            ("wk", lay.wk, lay.wv),
            ("wv", lay.wv, lay.wo),
            ("wo", lay.wo, lay.norm_g),
            ("norm_g", lay.norm_g, lay.norm_b),
            ("norm_b", lay.norm_b, lay.w1),
            ("w1", lay.w1, lay.c1),
            ("c1", lay.c1, lay.w2),
            ("w2", lay.w2, lay.c2),
            ("c2", lay.c2, lay.wh),
            ("wh", lay.wh, lay.bh),
            ("bh", lay.bh, lay.len),
        ];
        // Which tokens the gate keeps is piecewise constant: steps that change it are skipped.
        check_tensors(
            &mut net,
            &tensors,
            &analytic,
            |n| &mut n.p,
            |n| {
                let l = loss(n, &hist, &lanes, step, &m, &y);
                (l, n.kept == kept)
            },
        );
    }

    #[test]
    fn memory_matches_a_fresh_sum_of_the_window() {
        let hist: Vec<u8> = (0..400u32).map(|i| (i * 7 % 251) as u8).collect();
        let lanes = Lanes::new(hist.len(), 1, 1);
        let window = 16;
        let mut net = Trace::new(config(), 1, window);
        for step in 0..150 {
            let y = [hist[step]];
            net.forward(&hist, &lanes, step, 1, &[(None, 0)]);
            net.learn(&y);
            let d = net.d;
            let m = &net.memory[0];
            // Only tokens of the last `window` positions are held.
            assert!(m
                .at
                .iter()
                .flatten()
                .all(|&p| p + window > step && p <= step));
            let mut fresh = Memory::new(d, window);
            fresh.at.clone_from(&m.at);
            fresh.phi_k.clone_from(&m.phi_k);
            fresh.v.clone_from(&m.v);
            fresh.rebuild(d);
            for (a, b) in m.s.iter().zip(&fresh.s).chain(m.z.iter().zip(&fresh.z)) {
                assert!(
                    (a - b).abs() <= 1e-4 * b.abs().max(1.0),
                    "{a} vs {b} at {step}"
                );
            }
        }
    }
}
