//! Byte predictors and their configuration as recorded in the archive header.

mod cm;
mod experts;
pub mod lanes;
pub mod net;
mod neural;

pub use net::{Net, NetConfig};
pub use neural::{NeuralConfig, NeuralModel, Workspace};

use crate::error::{Error, Result};

/// Backbone network of the predictor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backbone {
    /// PAC-style MLP over SEP patch features (the default).
    Pac,
}

impl Backbone {
    /// Name used on the command line and by `sep info`.
    pub fn name(self) -> &'static str {
        match self {
            Backbone::Pac => "pac",
        }
    }
}

/// Which predictor a block uses and its parameters; serialised into the archive header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelConfig {
    /// The sep predictor: context mixing of count experts, a match model and the network.
    Neural(Backbone, NeuralConfig),
}

/// Model id of `ModelConfig::Neural` with the PAC backbone (id 1 was an interim model that no
/// released archive uses).
const MODEL_NEURAL_PAC: u8 = 2;

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig::Neural(Backbone::Pac, NeuralConfig::default())
    }
}

impl ModelConfig {
    /// Serialised form stored in the archive header.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            ModelConfig::Neural(Backbone::Pac, c) => {
                let mut b = vec![MODEL_NEURAL_PAC];
                b.extend_from_slice(&c.max_lanes.to_le_bytes());
                b.extend_from_slice(&c.min_lane.to_le_bytes());
                b.extend_from_slice(&c.mix_lr.to_le_bytes());
                b.extend_from_slice(&c.mix_lr_start.to_le_bytes());
                b.extend_from_slice(&c.net.hidden.to_le_bytes());
                b.extend_from_slice(&c.net.lr.to_le_bytes());
                b
            }
        }
    }

    /// Parses the serialised form, rejecting unknown models and bad parameters.
    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        match b {
            [MODEL_NEURAL_PAC, rest @ ..] if rest.len() == 14 => {
                let u16_at = |i: usize| u16::from_le_bytes([rest[i], rest[i + 1]]);
                let c = NeuralConfig {
                    max_lanes: u16_at(0),
                    min_lane: u32::from_le_bytes([rest[2], rest[3], rest[4], rest[5]]),
                    mix_lr: u16_at(6),
                    mix_lr_start: u16_at(8),
                    net: NetConfig {
                        hidden: u16_at(10),
                        lr: u16_at(12),
                    },
                };
                if c.max_lanes == 0 || c.max_lanes > 1024 || c.min_lane == 0 || c.net.hidden > 1024
                {
                    return Err(Error::Corrupt("model configuration out of range".into()));
                }
                Ok(ModelConfig::Neural(Backbone::Pac, c))
            }
            [id, ..] => Err(Error::Corrupt(format!(
                "unknown model configuration (id {id}, {} bytes)",
                b.len()
            ))),
            [] => Err(Error::Corrupt("empty model configuration".into())),
        }
    }

    /// Short human-readable description.
    pub fn describe(&self) -> String {
        match self {
            ModelConfig::Neural(bb, c) => format!(
                "sep neural, backbone {} ({} hidden); context mixing of orders 2-12, words, \
                 sparse, column and match experts; lanes <= {}, >= {} bytes each",
                bb.name(),
                c.net.hidden,
                c.max_lanes,
                c.min_lane
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_round_trips_and_rejects_unknown() {
        let c = ModelConfig::default();
        assert_eq!(ModelConfig::from_bytes(&c.to_bytes()).unwrap(), c);
        assert!(ModelConfig::from_bytes(&[9, 1, 1]).is_err());
        let mut bad = c.to_bytes();
        bad[1] = 0;
        bad[2] = 0;
        assert!(
            ModelConfig::from_bytes(&bad).is_err(),
            "zero lanes accepted"
        );
        assert!(ModelConfig::from_bytes(&[]).is_err());
        assert!(ModelConfig::from_bytes(&c.to_bytes()[..5]).is_err());
    }
}
