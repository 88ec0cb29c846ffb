//! Byte predictors and their configuration as recorded in the archive header.

mod context;

pub use context::ContextModel;

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
}

const MODEL_CONTEXT: u8 = 1;

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig::Context { k1: 4, k2: 2 }
    }
}

impl ModelConfig {
    /// Serialised form stored in the archive header.
    pub fn to_bytes(&self) -> Vec<u8> {
        match *self {
            ModelConfig::Context { k1, k2 } => vec![MODEL_CONTEXT, k1, k2],
        }
    }

    /// Parses the serialised form, rejecting unknown models and bad parameters.
    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        match b {
            [MODEL_CONTEXT, k1, k2] if *k1 > 0 && *k2 > 0 => {
                Ok(ModelConfig::Context { k1: *k1, k2: *k2 })
            }
            [id, ..] => Err(Error::Corrupt(format!(
                "unknown model configuration (id {id}, {} bytes)",
                b.len()
            ))),
            [] => Err(Error::Corrupt("empty model configuration".into())),
        }
    }

    /// A fresh predictor in its initial state.
    pub fn build(&self) -> Box<dyn Predictor + Send> {
        match *self {
            ModelConfig::Context { k1, k2 } => Box::new(ContextModel::new(k1, k2)),
        }
    }

    /// Short human-readable name.
    pub fn describe(&self) -> String {
        match *self {
            ModelConfig::Context { k1, k2 } => format!("context o0-2 (k1={k1}, k2={k2})"),
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
        assert!(ModelConfig::from_bytes(&[MODEL_CONTEXT, 0, 1]).is_err());
        assert!(ModelConfig::from_bytes(&[]).is_err());
    }
}
