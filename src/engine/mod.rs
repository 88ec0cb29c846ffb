//! Deterministic numeric engine of the context-mixing codec and its networks: the float
//! kernels (`kernels`, and again in CUDA C, `cuda`), the pre-trained network's integer ones
//! (`int8`), and the determinism version archives record.
//!
//! Every value that reaches a probability is computed with a fixed operation order, so results
//! are identical whatever SIMD level (`crate::simd`) runs them.

#[cfg(feature = "cuda")]
pub mod cuda;
pub mod int8;
pub mod kernels;

/// Determinism version of the engine (kernels, the predictor's fixed parts and its update
/// schedule); archives record it and decoders refuse other versions.
pub const ENGINE_VERSION: u32 = 3;
