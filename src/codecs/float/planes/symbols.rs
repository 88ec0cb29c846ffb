//! The planes codec's symbols and the constants of its tables, batches and groups, shared by
//! its encoder, decoder, tables and kernels.

/// Precision of the exponent table.
pub(crate) const E_BITS: u32 = 12;
/// Precision of the mantissa-top tables.
pub(crate) const M_BITS: u32 = 8;
/// Slots of the exponent table kept for the escape.
pub(crate) const ESCAPE: u32 = 1;
/// Index of the escape's slot range among a context's `E` symbols (after `ZERO`'s).
pub(crate) const ESCAPE_SYM: usize = ZERO + 1;
/// Entries of a context's `E` symbol row: 256 exponents, `ZERO` and the escape, and room
/// to load 64 entries from any exponent on.
pub(crate) const E_SYMS: usize = 256 + 64;
/// Bytes of a context's exponent decode table: a slot per 12-bit state, and room for a
/// 64-byte store at the last.
pub(crate) const E_STRIDE: usize = (1 << E_BITS) + 64;
/// `E` symbol of a value that is +0.0 exactly (after the 256 exponents).
pub(crate) const ZERO: usize = 256;
/// `E << 4 | M` of a +0.0 value, as the decoder reports it.
pub(crate) const ZERO_EM: u16 = (ZERO as u16) << 4;
/// Bits of an escaped `E` symbol (raw values 256 and up all mean `ZERO`).
pub(crate) const RAW_BITS: u32 = 9;
/// A table is refitted once its count grew by a quarter since its last fit (a mantissa-top
/// table after a block prior: by a half, and from `PRIOR_M_MIN` counts on).
pub(crate) const LAZY: u32 = 4;
pub(crate) const PRIOR_M_LAZY: u32 = 2;
/// Fewest own counts for which a mantissa-top table after a block prior is refitted for its
/// own counts' sake (below, the prior's weight dwarfs them).
pub(crate) const PRIOR_M_MIN: u32 = 16;
/// Largest batch between two refits.
pub(crate) const MAX_BATCH: usize = 4096;
/// First value of the first batch of which only every other group is
/// counted: past it the tables are fitted from enough values that half of them predict as
/// well, and counting and refitting take half the time.
pub(crate) const SAMPLE_FROM: usize = 4 * MAX_BATCH;
/// Fewest values of a block coded in 64 ways.
pub(crate) const WIDE_FROM: usize = 0x4000;
/// Mantissa-top counts per exponent are halved when they reach this total.
pub(crate) const M_HALVE: u32 = 1 << 12;
