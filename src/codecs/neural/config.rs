//! The neural codec's configuration as recorded in the archive header.

use super::net::NetConfig;
use super::predictor::Params;
use crate::error::{Error, Result};

/// Backbone network of the predictor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Backbone {
    /// PAC-style MLP over SEP patch features (the default).
    #[default]
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

/// The neural codec's configuration: its backbone and parameters, serialised into the archive
/// header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NeuralConfig {
    /// Backbone network of the predictor.
    pub backbone: Backbone,
    /// Lanes, mixer and network parameters.
    pub params: Params,
}

/// Configuration id of the neural codec with the PAC backbone.
const NEURAL_PAC: u8 = 2;

impl NeuralConfig {
    /// Serialised form stored in the archive header.
    pub fn to_bytes(&self) -> Vec<u8> {
        let c = &self.params;
        let mut b = vec![NEURAL_PAC];
        b.extend_from_slice(&c.max_lanes.to_le_bytes());
        b.extend_from_slice(&c.min_lane.to_le_bytes());
        b.extend_from_slice(&c.mix_lr.to_le_bytes());
        b.extend_from_slice(&c.mix_lr_start.to_le_bytes());
        b.extend_from_slice(&c.net.hidden.to_le_bytes());
        b.extend_from_slice(&c.net.lr.to_le_bytes());
        b
    }

    /// Parses the serialised form, rejecting unknown backbones and bad parameters.
    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        match b {
            [NEURAL_PAC, rest @ ..] if rest.len() == 14 => {
                let u16_at = |i: usize| u16::from_le_bytes([rest[i], rest[i + 1]]);
                let c = Params {
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
                    return Err(Error::Corrupt("neural configuration out of range".into()));
                }
                Ok(NeuralConfig {
                    backbone: Backbone::Pac,
                    params: c,
                })
            }
            [id, ..] => Err(Error::Corrupt(format!(
                "unknown neural configuration (id {id}, {} bytes)",
                b.len()
            ))),
            [] => Err(Error::Corrupt("empty neural configuration".into())),
        }
    }

    /// Short human-readable description.
    pub fn describe(&self) -> String {
        let c = &self.params;
        let net = match c.net.hidden {
            0 => "no network".to_string(),
            h => format!("backbone {} ({h} hidden)", self.backbone.name()),
        };
        format!(
            "{net}; context mixing of bit histories of orders 2-12, words, sparse, column and \
             match experts; lanes <= {}, >= {} bytes each",
            c.max_lanes, c.min_lane
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_round_trips_and_rejects_unknown() {
        let c = NeuralConfig::default();
        assert_eq!(NeuralConfig::from_bytes(&c.to_bytes()).unwrap(), c);
        assert!(NeuralConfig::from_bytes(&[9, 1, 1]).is_err());
        let mut bad = c.to_bytes();
        bad[1] = 0;
        bad[2] = 0;
        assert!(
            NeuralConfig::from_bytes(&bad).is_err(),
            "zero lanes accepted"
        );
        assert!(NeuralConfig::from_bytes(&[]).is_err());
        assert!(NeuralConfig::from_bytes(&c.to_bytes()[..5]).is_err());
    }
}
