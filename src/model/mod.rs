//! Byte predictors and their configuration as recorded in the archive header.

mod cm;
mod context;
mod experts;
pub mod lanes;
mod net;
mod neural;

pub use context::ContextModel;
pub use net::NetConfig;
pub use neural::{NeuralConfig, NeuralModel};

use crate::error::{Error, Result};

/// Predicts a distribution over the next byte and learns from the byte that followed.
pub trait Predictor {
    /// Writes the probability of each byte value being next into `probs` (sums to ~1).
    fn predict(&mut self, probs: &mut [f32; 256]);
    /// Learns the byte that actually came next and advances the context.
    fn update(&mut self, byte: u8);
}

/// Which predictor a block uses and its parameters; serialised into the archive header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelConfig {
    /// Adaptive order-0/1/2 context blend (the interim model until the neural codec lands).
    Context {
        /// Weight constant of the order-1 statistics (higher trusts them later).
        k1: u8,
        /// Weight constant of the order-2 statistics.
        k2: u8,
    },
    /// The sep predictor: count experts + match model + network, mixed in the logit domain.
    Neural(NeuralConfig),
}

const MODEL_CONTEXT: u8 = 1;
const MODEL_NEURAL: u8 = 2;

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig::Neural(NeuralConfig::default())
    }
}

impl ModelConfig {
    /// Serialised form stored in the archive header.
    pub fn to_bytes(&self) -> Vec<u8> {
        match *self {
            ModelConfig::Context { k1, k2 } => vec![MODEL_CONTEXT, k1, k2],
            ModelConfig::Neural(c) => {
                let mut b = vec![MODEL_NEURAL];
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
            [MODEL_CONTEXT, k1, k2] if *k1 > 0 && *k2 > 0 => {
                Ok(ModelConfig::Context { k1: *k1, k2: *k2 })
            }
            [MODEL_NEURAL, rest @ ..] if rest.len() == 14 => {
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
                if c.max_lanes == 0 || c.max_lanes > 1024 || c.min_lane == 0 || c.net.hidden > 4096
                {
                    return Err(Error::Corrupt("model configuration out of range".into()));
                }
                Ok(ModelConfig::Neural(c))
            }
            [id, ..] => Err(Error::Corrupt(format!(
                "unknown model configuration (id {id}, {} bytes)",
                b.len()
            ))),
            [] => Err(Error::Corrupt("empty model configuration".into())),
        }
    }

    /// A fresh single-stream predictor, for the models that are one.
    pub fn build(&self) -> Option<Box<dyn Predictor + Send>> {
        match *self {
            ModelConfig::Context { k1, k2 } => Some(Box::new(ContextModel::new(k1, k2))),
            ModelConfig::Neural(_) => None,
        }
    }

    /// Short human-readable name.
    pub fn describe(&self) -> String {
        match *self {
            ModelConfig::Context { k1, k2 } => format!("context o0-2 (k1={k1}, k2={k2})"),
            ModelConfig::Neural(c) => format!(
                "sep neural (experts o0-8 + match + mlp {} hidden; lanes <= {}, >= {} bytes each)",
                c.net.hidden, c.max_lanes, c.min_lane
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
        let c = ModelConfig::Context { k1: 4, k2: 2 };
        assert_eq!(ModelConfig::from_bytes(&c.to_bytes()).unwrap(), c);
        assert!(ModelConfig::from_bytes(&[9, 1, 1]).is_err());
        assert!(ModelConfig::from_bytes(&[MODEL_CONTEXT, 0, 1]).is_err());
        assert!(ModelConfig::from_bytes(&[]).is_err());
    }
}
