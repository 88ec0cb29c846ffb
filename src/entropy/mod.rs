//! Entropy coding: a binary range coder (the context-mixing codec's) and interleaved rANS (the
//! float codecs').

mod range;
pub mod rans;

pub use range::{BitDecoder, BitEncoder};
