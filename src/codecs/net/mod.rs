//! The predictor's network: which backbone, its shape, and one interface over the backbones
//! (predict the next byte of every lane, then learn the true bytes).

mod config;
// The pre-trained network (issue 55): tested here, in the mixer once a network pack lands.
#[allow(dead_code)]
pub mod frozen;
mod pac;
mod trace;
mod train;

pub use config::{Backbone, NetConfig};
pub use trace::Trace;

use super::lanes::Lanes;
use pac::Pac;

/// A backbone network of one block, batched over its lanes (boxed: each holds dozens of
/// buffers).
pub enum Network {
    /// The MLP.
    Pac(Box<Pac>),
    /// The linear-attention transformer.
    Trace(Box<Trace>),
}

impl Network {
    /// A network with seeded initial weights for up to `lanes` lanes.
    pub fn new(cfg: NetConfig, lanes: usize) -> Self {
        match cfg.backbone {
            Backbone::Pac => Network::Pac(Box::new(Pac::new(cfg, lanes))),
            Backbone::Trace => Network::Trace(Box::new(Trace::new(cfg, lanes, trace::WINDOW))),
        }
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
            Network::Trace(n) => n.forward(hist, lanes, step, active, matches),
        }
    }

    /// Trains on the true bytes of the lanes of the last forward pass.
    pub fn learn(&mut self, bytes: &[u8]) {
        match self {
            Network::Pac(n) => n.learn(bytes),
            Network::Trace(n) => n.learn(bytes),
        }
    }

    /// The parameters (weights and biases, one flat vector).
    pub fn params(&self) -> &[f32] {
        match self {
            Network::Pac(n) => n.params(),
            Network::Trace(n) => n.params(),
        }
    }

    /// Takes parameters saved by `params` from a network of the same shape (which the caller
    /// has checked); the optimiser starts afresh.
    pub fn load(&mut self, p: &[f32]) {
        match self {
            Network::Pac(n) => n.load(p),
            Network::Trace(n) => n.load(p),
        }
    }
}
