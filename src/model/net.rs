//! The neural network part of the predictor (placeholder until the network lands).

/// Shape of the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct NetConfig {
    /// Hidden units of the MLP backbone (0 disables the network).
    pub hidden: u16,
}

/// The network.
pub struct Net {
    probs: Vec<f32>,
}

impl Net {
    pub fn new(_cfg: NetConfig, lanes: usize) -> Self {
        Net {
            probs: vec![1.0 / 256.0; lanes * 256],
        }
    }
    pub fn forward(
        &mut self,
        _h: &[u8],
        _l: &super::lanes::Lanes,
        _s: usize,
        _a: usize,
        _m: &[super::experts::LaneState],
    ) -> &[f32] {
        &self.probs
    }
    pub fn learn(&mut self, _bytes: &[u8]) {}
}
