//! Deterministic numeric engine of the context-mixing codec's network: its kernels, and the
//! determinism version archives record.
//!
//! Every value that reaches a probability is computed with a fixed operation order, so results
//! are identical whatever SIMD level (`crate::simd`) runs them.

pub mod attention;
// The frozen networks' kernels (issue 55): tested here, used once a network pack lands.
#[cfg(feature = "cuda")]
pub mod cuda;
#[allow(dead_code)]
pub mod int8;
pub mod kernels;

/// Determinism version of the engine (kernels, the predictor's fixed parts and its update
/// schedule); archives record it and decoders refuse other versions.
pub const ENGINE_VERSION: u32 = 3;
