//! The predictor's network: the online MLP (`pac`, trained on the block as it is coded) or a
//! pack's pre-trained network (`frozen`), behind one interface (predict the next byte of
//! every lane, then learn the true bytes).

mod config;
pub mod frozen;
mod pac;
mod train;

pub use config::NetConfig;

use super::lanes::Lanes;
use frozen::Frozen;
use pac::Pac;
use std::sync::Arc;

/// A backbone network of one block, batched over its lanes (boxed: each holds dozens of
/// buffers).
pub enum Network {
    /// The MLP.
    Pac(Box<Pac>),
    /// A pre-trained network, frozen (a pack's), one stream per lane.
    Frozen(Box<FrozenLanes>),
}

/// A frozen network run over a block's lanes.
pub struct FrozenLanes {
    net: Arc<Frozen>,
    states: Vec<frozen::State>,
    counts: [u32; 256],
    probs: Vec<f32>,
}

impl FrozenLanes {
    /// `net` over `lanes` lanes, each from its start.
    pub fn new(net: Arc<Frozen>, lanes: usize) -> Self {
        FrozenLanes {
            states: (0..lanes).map(|_| net.state()).collect(),
            net,
            counts: [0; 256],
            probs: vec![0.0; lanes * 256],
        }
    }

    fn forward(&mut self, active: usize) -> &[f32] {
        for (l, s) in self.states.iter_mut().enumerate().take(active) {
            self.net.predict(s, &mut self.counts);
            let total: u32 = self.counts.iter().sum();
            let inv = 1.0 / total as f32;
            for (p, &c) in self.probs[l * 256..l * 256 + 256]
                .iter_mut()
                .zip(&self.counts)
            {
                *p = c as f32 * inv;
            }
        }
        &self.probs[..active * 256]
    }

    fn learn(&mut self, bytes: &[u8]) {
        for (s, &b) in self.states.iter_mut().zip(bytes) {
            self.net.update(s, b);
        }
    }
}

impl Network {
    /// A network with seeded initial weights for up to `lanes` lanes.
    pub fn new(cfg: NetConfig, lanes: usize) -> Self {
        Network::Pac(Box::new(Pac::new(cfg, lanes)))
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
        match self {
            Network::Pac(n) => n.forward(hist, lanes, step, active, matches),
            Network::Frozen(n) => n.forward(active),
        }
    }

    /// Trains on the true bytes of the lanes of the last forward pass.
    pub fn learn(&mut self, bytes: &[u8]) {
        match self {
            Network::Pac(n) => n.learn(bytes),
            Network::Frozen(n) => n.learn(bytes),
        }
    }

    /// The parameters (weights and biases, one flat vector).
    pub fn params(&self) -> &[f32] {
        match self {
            Network::Pac(n) => n.params(),
            Network::Frozen(_) => &[],
        }
    }

    /// Takes parameters saved by `params` from a network of the same shape (which the caller
    /// has checked); the optimiser starts afresh.
    pub fn load(&mut self, p: &[f32]) {
        match self {
            Network::Pac(n) => n.load(p),
            Network::Frozen(_) => {}
        }
    }
}
