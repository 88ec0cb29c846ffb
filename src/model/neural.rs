//! The sep predictor: count experts and a match model mixed in the logit domain with learned,
//! confidence-selected weights, plus a neural network that adds its own logits (SEP features,
//! PAC-style MLP). Trains online: one optimiser step per coding step, replayed by the decoder.

use super::experts::{
    Experts, LaneState, Sparse, DENSE_CLASSES, MATCH_CLASSES, N_HASHED, N_ORDERS, SLOT_CLASSES,
};
use super::lanes::Lanes;
use super::net::{Net, NetConfig};
use crate::engine::kernels::{softmax_rows, AdamStep};

/// Adam update of one weight (scalar; the same arithmetic as the engine's `adam` kernel).
fn adam_one(p: &mut [f32], g: &mut [f32], m: &mut [f32], v: &mut [f32], s: AdamStep) {
    let gi = g[0];
    let mi = s.b1 * m[0] + (1.0 - s.b1) * gi;
    let vi = s.b2 * v[0] + (1.0 - s.b2) * (gi * gi);
    m[0] = mi;
    v[0] = vi;
    p[0] -= s.lr * mi / (vi.sqrt() + s.eps);
    g[0] = 0.0;
}

// Layout of one weight set; a set is chosen per lane and step by the longest order that has
// statistics and by whether the match model predicts.
const W_DENSE: usize = 0;
const W_HASHED: usize = W_DENSE + 3 * DENSE_CLASSES;
const W_LAST: usize = W_HASHED + N_HASHED * SLOT_CLASSES;
const W_MATCH: usize = W_LAST + N_HASHED * SLOT_CLASSES;
const SET_LEN: usize = W_MATCH + MATCH_CLASSES;
const SETS: usize = (N_ORDERS + 1) * 2;
/// Set 0 is shared by every step; the effective weight is shared + selected set.
const W_LEN: usize = SET_LEN * (SETS + 1);

/// Settings of the predictor, recorded in the archive header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NeuralConfig {
    /// Most lanes a block is cut into.
    pub max_lanes: u16,
    /// Fewest bytes per lane (small inputs get fewer lanes).
    pub min_lane: u32,
    /// Mixer learning rate, in 1e-5 units.
    pub mix_lr: u16,
    /// The network's shape and learning rate.
    pub net: NetConfig,
}

impl Default for NeuralConfig {
    fn default() -> Self {
        NeuralConfig {
            max_lanes: 16,
            min_lane: 32 << 10,
            mix_lr: 200,
            net: NetConfig::default(),
        }
    }
}

/// Per-lane scratch of one step: what the forward pass used, kept for the backward pass.
#[derive(Clone)]
struct LaneScratch {
    set: usize,
    dense: [usize; 3],
    hashed: [Sparse; N_HASHED],
    match_byte: Option<u8>,
    match_class: usize,
}

/// The predictor state of one block.
pub struct NeuralModel {
    cfg: NeuralConfig,
    lanes: Lanes,
    hist: Vec<u8>,
    experts: Experts,
    states: Vec<LaneState>,
    w: Vec<f32>,
    gw: Vec<f32>,
    mw: Vec<f32>,
    vw: Vec<f32>,
    step_count: u32,
    touched: Vec<u32>,
    net: Option<Net>,
    probs: Vec<f32>,
    scratch: Vec<LaneScratch>,
}

impl NeuralModel {
    /// A fresh model for a block of `len` bytes.
    pub fn new(cfg: NeuralConfig, len: usize) -> Self {
        let lanes = Lanes::new(len, cfg.max_lanes as usize, cfg.min_lane as usize);
        let mut set = vec![0.0f32; SET_LEN];
        set[W_DENSE..W_HASHED].fill(0.3);
        set[W_HASHED..W_LAST].fill(0.4);
        for (i, x) in set[W_MATCH..SET_LEN].iter_mut().enumerate() {
            *x = if i == 0 { 0.0 } else { 1.0 + 0.25 * i as f32 };
        }
        let mut w = set;
        w.resize(W_LEN, 0.0);
        let blank = LaneScratch {
            set: 0,
            dense: [0; 3],
            hashed: [Sparse::default(); N_HASHED],
            match_byte: None,
            match_class: 0,
        };
        NeuralModel {
            cfg,
            lanes,
            hist: vec![0; len],
            experts: Experts::new(len),
            states: vec![LaneState::default(); lanes.count],
            gw: vec![0.0; W_LEN],
            mw: vec![0.0; W_LEN],
            vw: vec![0.0; W_LEN],
            w,
            step_count: 0,
            touched: Vec::new(),
            net: (cfg.net.hidden > 0).then(|| Net::new(cfg.net, lanes.count)),
            probs: vec![0.0; lanes.count * 256],
            scratch: vec![blank; lanes.count],
        }
    }

    /// Lane geometry of this block.
    pub fn lanes(&self) -> Lanes {
        self.lanes
    }

    /// Predicts the next byte of the first `active` lanes at `step`; returns `active` rows of 256.
    pub fn predict(&mut self, step: usize, active: usize) -> &[f32] {
        let lanes = self.lanes;
        let done = step;
        let z = &mut self.probs[..active * 256];
        z.fill(0.0);
        if let Some(net) = self.net.as_mut() {
            net.forward(&self.hist, &lanes, step, active, &self.states, z);
        }
        for l in 0..active {
            let start = lanes.start(l);
            let pos = start + step;
            let zl = &mut z[l * 256..l * 256 + 256];
            let sc = &mut self.scratch[l];
            let ls = &self.states[l];
            self.experts.hashed(&self.hist, start, pos, ls, &mut sc.hashed);
            sc.match_byte = Experts::match_byte(&self.hist, ls, |q| lanes.known(q, done));
            sc.match_class = if sc.match_byte.is_some() { ls.bucket() } else { 0 };
            let longest = (0..N_ORDERS).rev().find(|&k| sc.hashed[k].n > 0).map_or(0, |k| k + 1);
            sc.set = (1 + longest * 2 + sc.match_byte.is_some() as usize) * SET_LEN;
            let mut w = [0f32; SET_LEN];
            for ((e, &a), &b) in w.iter_mut().zip(&self.w[..SET_LEN]).zip(&self.w[sc.set..sc.set + SET_LEN]) {
                *e = a + b;
            }
            self.experts.dense(&self.hist, start, pos, &w[W_DENSE..W_HASHED], zl, &mut sc.dense);
            for (k, e) in sc.hashed.iter().enumerate().filter(|(_, e)| e.n > 0) {
                let c = k * SLOT_CLASSES + e.class;
                let wk = w[W_HASHED + c];
                for i in 0..e.n as usize {
                    zl[e.syms[i] as usize] += wk * e.vals[i];
                }
                zl[e.last as usize] += w[W_LAST + c];
            }
            if let Some(mb) = sc.match_byte {
                zl[mb as usize] += w[W_MATCH + sc.match_class];
            }
        }
        softmax_rows(z, 256);
        &self.probs[..active * 256]
    }

    /// Learns the true bytes of the first `bytes.len()` lanes at `step` (after `predict`).
    pub fn learn(&mut self, step: usize, bytes: &[u8]) {
        let lanes = self.lanes;
        let active = bytes.len();
        // Output gradient: p - onehot(y), in place.
        for (l, &y) in bytes.iter().enumerate() {
            self.probs[l * 256 + y as usize] -= 1.0;
        }
        for l in 0..active {
            let start = lanes.start(l);
            let pos = start + step;
            let dz = &self.probs[l * 256..l * 256 + 256];
            let sc = &self.scratch[l];
            let mut g = [0f32; SET_LEN];
            self.experts.dense_grad(&self.hist, start, pos, dz, &sc.dense, &mut g[W_DENSE..W_HASHED]);
            for (k, e) in sc.hashed.iter().enumerate().filter(|(_, e)| e.n > 0) {
                let c = k * SLOT_CLASSES + e.class;
                let mut acc = 0.0;
                for i in 0..e.n as usize {
                    acc += dz[e.syms[i] as usize] * e.vals[i];
                }
                g[W_HASHED + c] += acc;
                g[W_LAST + c] += dz[e.last as usize];
            }
            if let Some(mb) = sc.match_byte {
                g[W_MATCH + sc.match_class] += dz[mb as usize];
            }
            // The shared and the selected set receive the same gradient.
            for (i, &gi) in g.iter().enumerate().filter(|(_, g)| **g != 0.0) {
                self.gw[i] += gi;
                self.gw[sc.set + i] += gi;
            }
        }
        if let Some(net) = self.net.as_mut() {
            net.backward(&self.probs[..active * 256], active);
        }
        self.step_count += 1;
        let t = self.step_count as i32;
        let (b1, b2) = (0.9f32, 0.999f32);
        let corr = (1.0 - b2.powi(t)).sqrt() / (1.0 - b1.powi(t));
        let step_cfg = AdamStep {
            lr: self.cfg.mix_lr as f32 * 1e-5 * corr,
            b1,
            b2,
            eps: 1e-6,
        };
        // Lazy Adam: only the weights this step touched move (their moments decay only then).
        self.touched.clear();
        for sc in &self.scratch[..active] {
            for base in [0, sc.set as u32] {
                for &c in &sc.dense {
                    self.touched.push(base + (W_DENSE + c) as u32);
                }
                for (k, e) in sc.hashed.iter().enumerate().filter(|(_, e)| e.n > 0) {
                    let c = (k * SLOT_CLASSES + e.class) as u32;
                    self.touched.push(base + W_HASHED as u32 + c);
                    self.touched.push(base + W_LAST as u32 + c);
                }
                if sc.match_byte.is_some() {
                    self.touched.push(base + (W_MATCH + sc.match_class) as u32);
                }
            }
        }
        self.touched.sort_unstable();
        self.touched.dedup();
        for &i in &self.touched {
            let i = i as usize;
            if self.gw[i] == 0.0 && self.mw[i] == 0.0 {
                continue;
            }
            let (p, g, m, v) = (
                &mut self.w[i..i + 1],
                &mut self.gw[i..i + 1],
                &mut self.mw[i..i + 1],
                &mut self.vw[i..i + 1],
            );
            adam_one(p, g, m, v, step_cfg);
        }
        if let Some(net) = self.net.as_mut() {
            net.optimise(t);
        }
        // Reveal the bytes, then update the statistics lane by lane.
        for (l, &y) in bytes.iter().enumerate() {
            self.hist[lanes.start(l) + step] = y;
        }
        let done = step + 1;
        for l in 0..active {
            let start = lanes.start(l);
            self.experts.update(
                &self.hist,
                start,
                start + step,
                &self.scratch[l].hashed,
                &mut self.states[l],
                |q| lanes.known(q, done),
            );
        }
    }
}
