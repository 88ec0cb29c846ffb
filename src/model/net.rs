//! The neural network part of the predictor (filled in below).

/// Shape and learning rate of the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetConfig {
    /// Hidden units of the MLP backbone (0 disables the network).
    pub hidden: u16,
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig { hidden: 0 }
    }
}

/// The network.
pub struct Net;

impl Net {
    pub fn new(_cfg: NetConfig, _lanes: usize) -> Self {
        Net
    }
    pub fn forward(&mut self, _h: &[u8], _l: &super::lanes::Lanes, _s: usize, _a: usize, _m: &[super::experts::LaneState], _z: &mut [f32]) {}
    pub fn backward(&mut self, _dz: &[f32], _a: usize) {}
    pub fn optimise(&mut self, _t: i32) {}
}
