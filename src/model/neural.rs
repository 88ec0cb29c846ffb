//! The sep predictor: count experts and a match model mixed in the logit domain with learned,
//! confidence-selected weights, plus a neural network that adds its own logits (SEP features,
//! PAC-style MLP). Trains online: one optimiser step per coding step, replayed by the decoder.

use super::experts::{
    Experts, MatchState, Sparse, DENSE_CLASSES, HASHED_ORDERS, MATCH_CLASSES, SLOT_CLASSES,
};
use super::lanes::Lanes;
use super::net::{Net, NetConfig};
use crate::engine::kernels::{adam, softmax_rows, AdamStep};

const N_HASHED: usize = HASHED_ORDERS.len();
const W_DENSE: usize = 0;
const W_HASHED: usize = W_DENSE + 3 * DENSE_CLASSES;
const W_MATCH: usize = W_HASHED + N_HASHED * SLOT_CLASSES;
const W_LEN: usize = W_MATCH + MATCH_CLASSES;

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
    matches: Vec<MatchState>,
    w: Vec<f32>,
    gw: Vec<f32>,
    mw: Vec<f32>,
    vw: Vec<f32>,
    step_count: u32,
    net: Option<Net>,
    probs: Vec<f32>,
    scratch: Vec<LaneScratch>,
}

impl NeuralModel {
    /// A fresh model for a block of `len` bytes.
    pub fn new(cfg: NeuralConfig, len: usize) -> Self {
        let lanes = Lanes::new(len, cfg.max_lanes as usize, cfg.min_lane as usize);
        let mut w = vec![0.0f32; W_LEN];
        w[W_DENSE..W_HASHED].fill(0.3);
        w[W_HASHED..W_MATCH].fill(0.4);
        for (i, x) in w[W_MATCH..W_LEN].iter_mut().enumerate() {
            *x = if i == 0 { 0.0 } else { 1.0 + 0.25 * i as f32 };
        }
        let blank = LaneScratch {
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
            matches: vec![MatchState::default(); lanes.count],
            gw: vec![0.0; W_LEN],
            mw: vec![0.0; W_LEN],
            vw: vec![0.0; W_LEN],
            w,
            step_count: 0,
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
            net.forward(&self.hist, &lanes, step, active, &self.matches, z);
        }
        for l in 0..active {
            let start = lanes.start(l);
            let pos = start + step;
            let zl = &mut z[l * 256..l * 256 + 256];
            let sc = &mut self.scratch[l];
            self.experts
                .dense(&self.hist, start, pos, &self.w[W_DENSE..W_HASHED], zl, &mut sc.dense);
            self.experts.hashed(&self.hist, start, pos, &mut sc.hashed);
            for e in sc.hashed.iter().filter(|e| e.n > 0) {
                let wk = self.w[W_HASHED + e.class];
                for i in 0..e.n as usize {
                    zl[e.syms[i] as usize] += wk * e.vals[i];
                }
            }
            let ms = &self.matches[l];
            sc.match_byte = Experts::match_byte(&self.hist, ms, |q| lanes.known(q, done));
            sc.match_class = if sc.match_byte.is_some() { ms.bucket() } else { 0 };
            if let Some(mb) = sc.match_byte {
                zl[mb as usize] += self.w[W_MATCH + sc.match_class];
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
            self.experts.dense_grad(&self.hist, start, pos, dz, &sc.dense, &mut self.gw[W_DENSE..W_HASHED]);
            for e in sc.hashed.iter().filter(|e| e.n > 0) {
                let mut g = 0.0;
                for i in 0..e.n as usize {
                    g += dz[e.syms[i] as usize] * e.vals[i];
                }
                self.gw[W_HASHED + e.class] += g;
            }
            if let Some(mb) = sc.match_byte {
                self.gw[W_MATCH + sc.match_class] += dz[mb as usize];
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
        adam(&mut self.w, &mut self.gw, &mut self.mw, &mut self.vw, step_cfg);
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
            self.experts
                .update(&self.hist, start, start + step, &mut self.matches[l], |q| lanes.known(q, done));
        }
    }
}
