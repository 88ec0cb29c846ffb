//! The network's side of the predictor: once a byte, the network's 256-way distribution for
//! every lane (a pack's pre-trained network, or the level's online one); once a bit, what the
//! mixers take of it: its probability of the bit (stretched), and with a pre-trained network
//! also that probability linear, the bit of the byte it expects most (signed by how sure it is
//! of that byte), the probability refined by two maps (contexts: the byte's bits so far; those
//! with the expected byte), and its confidence as a bucket that selects weight sets and
//! probability maps. The online networks predate the extra inputs, so their archives keep
//! the one input.

use super::mixing::{stretch, Apm};
use crate::codecs::lanes::Lanes;
use crate::codecs::net::frozen::Frozen;
use crate::codecs::net::{FrozenLanes, NetConfig, Network};
use std::sync::Arc;

/// Mixer inputs a pre-trained network adds besides its stretched probability.
pub const N_NET: usize = 4;
/// Buckets of a pre-trained network's confidence (0: none), which select weight sets and
/// probability maps.
pub const NET_BUCKETS: usize = 6;
/// Contexts of the maps that refine a pre-trained network's probability.
const NET_MAPS: [usize; 2] = [256, 65536];

/// What the mixers take of the network for one bit.
pub struct BitInputs {
    /// The network's probability of a 1, stretched (0 without a network).
    pub stretched: f32,
    /// The pre-trained network's further inputs (zeros without one).
    pub extra: [f32; N_NET],
    /// The pre-trained network's confidence bucket, 1.. (0 without one).
    pub bucket: usize,
}

/// The network of a block's model and its per-lane predictions.
pub struct NetInputs {
    net: Option<Network>,
    /// Whether the model has a pre-trained network's shape (its extra inputs and buckets),
    /// which it keeps when that network does not run (`--net none`), so that the pack's
    /// state fits either way.
    shaped: bool,
    /// Per lane, the cumulative distribution of the next byte (257 each).
    cdf: Vec<f32>,
    /// Per lane, the byte the network expects most.
    top: Vec<u8>,
    /// Per lane, the match model's byte and length bucket (the online networks' inputs).
    matches: Vec<(Option<u8>, usize)>,
    /// With a pre-trained network, the maps that refine its probability (`NET_MAPS`).
    maps: Vec<Apm>,
}

impl NetInputs {
    /// The network for `lanes` lanes: `pretrained` (a pack's) where given, else the online
    /// one of `online`'s shape where it has hidden units; none where `on` is false.
    pub fn new(online: NetConfig, on: bool, lanes: usize, pretrained: Option<Arc<Frozen>>) -> Self {
        let shaped = pretrained.is_some();
        let net = match pretrained.filter(|_| on) {
            Some(net) => Some(Network::Frozen(Box::new(FrozenLanes::new(net, lanes)))),
            None => (on && online.hidden > 0 && !shaped).then(|| Network::new(online, lanes)),
        };
        let maps = match shaped {
            true => NET_MAPS.iter().map(|&c| Apm::new(c, 6)).collect(),
            false => Vec::new(),
        };
        NetInputs {
            net,
            shaped,
            cdf: vec![0.0; lanes * 257],
            top: vec![0; lanes],
            matches: vec![(None, 0); lanes],
            maps,
        }
    }

    /// Bytes of the maps a model starting from a pack allocates here (`Predictor::need`).
    pub fn bytes_for(pack_has_network: bool) -> usize {
        match pack_has_network {
            true => Apm::bytes_for(NET_MAPS.iter().sum()),
            false => 0,
        }
    }

    /// Whether the mixers take the pre-trained network's extra inputs and buckets.
    pub fn shaped(&self) -> bool {
        self.shaped
    }

    /// The online network's parameters (none for a pre-trained one or none at all).
    pub fn params(&self) -> Option<&[f32]> {
        self.net.as_ref().map(|n| n.params())
    }

    /// Takes an online network's parameters saved by `params` (which the caller has checked).
    pub fn load(&mut self, p: &[f32]) {
        if let Some(net) = self.net.as_mut() {
            net.load(p);
        }
    }

    /// Records lane `l`'s match prediction for the next `forward`.
    pub fn set_match(&mut self, l: usize, m: (Option<u8>, usize)) {
        self.matches[l] = m;
    }

    /// Predicts the next byte of the first `active` lanes at `step`.
    pub fn forward(&mut self, hist: &[u8], lanes: &Lanes, step: usize, active: usize) {
        let Some(net) = self.net.as_mut() else {
            return;
        };
        let probs = net.forward(hist, lanes, step, active, &self.matches);
        for l in 0..active {
            let cdf = &mut self.cdf[l * 257..l * 257 + 257];
            let mut run = 0.0f32;
            let (mut top, mut most) = (0, -1.0);
            for (i, (c, &p)) in cdf
                .iter_mut()
                .zip(&probs[l * 256..l * 256 + 256])
                .enumerate()
            {
                *c = run;
                run += p;
                if p > most {
                    (top, most) = (i, p);
                }
            }
            cdf[256] = run;
            self.top[l] = top as u8;
        }
    }

    /// Lane `l`'s inputs for the bit after the bits `c0` (with a leading 1; `bitpos` of them).
    pub fn bit(&mut self, l: usize, c0: u32, bitpos: u32) -> BitInputs {
        let mut out = BitInputs {
            stretched: 0.0,
            extra: [0.0; N_NET],
            bucket: 0,
        };
        if self.net.is_none() {
            return out;
        }
        let cdf = &self.cdf[l * 257..l * 257 + 257];
        let width = 256usize >> bitpos;
        let lo = ((c0 as usize) - (1 << bitpos)) * width;
        let total = cdf[lo + width] - cdf[lo];
        let ones = cdf[lo + width] - cdf[lo + width / 2];
        let p = if total > 0.0 { ones / total } else { 0.5 };
        let s = stretch(p);
        out.stretched = s;
        if !self.shaped {
            return out;
        }
        let top = self.top[l] as usize;
        // The expected byte, while the bits so far agree with it: its next bit, signed, by
        // how sure the network is of the byte given those bits.
        let expected = match (top | 256) >> (8 - bitpos) == c0 as usize && total > 0.0 {
            true => {
                let sure = (cdf[top + 1] - cdf[top]) / total;
                let sign = if (top >> (7 - bitpos)) & 1 == 1 {
                    1.0
                } else {
                    -1.0
                };
                sign * stretch(sure.clamp(0.5, 0.999)) * 0.5
            }
            false => 0.0,
        };
        let [a, b] = &mut self.maps[..] else {
            unreachable!("two maps with a pre-trained network")
        };
        let c0 = c0 as usize;
        out.extra = [
            (p - 0.5) * 4.0,
            expected,
            stretch(a.refine(s, c0) as f32 / 65536.0),
            stretch(b.refine(s, top << 8 | c0) as f32 / 65536.0),
        ];
        out.bucket = 1 + (s.abs() as usize).min(NET_BUCKETS - 2);
        out
    }

    /// Learns the bit after `bit` (the maps, where the network ran).
    pub fn update(&mut self, bit: u32) {
        if self.net.is_some() {
            for m in &mut self.maps {
                m.update(bit);
            }
        }
    }

    /// Ends a step: the online network learns the lanes' true bytes, a pre-trained one moves
    /// past them.
    pub fn learn(&mut self, bytes: &[u8]) {
        if let Some(net) = self.net.as_mut() {
            net.learn(bytes);
        }
    }
}
