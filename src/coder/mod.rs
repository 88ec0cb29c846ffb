//! Entropy coding: model probabilities -> integer frequency tables -> range coding.

mod quantize;
mod range;
pub mod rans;
pub mod zstd;

pub use quantize::{quantize, FreqTable, PRECISION, TOTAL};
pub use range::{LaneDecoder, LaneEncoder};
