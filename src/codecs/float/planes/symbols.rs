//! The planes codec's symbols and the constants of its tables, batches and groups, shared by
//! its encoder, decoder, tables and kernels; the coder states and the buffers of a block's
//! symbols.

use crate::entropy::rans::WAYS;
use std::cell::RefCell;

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

/// Coder states, one per way.
pub(crate) type States = [u32; WAYS];

/// A block's symbols in the order the encoder needs them.
pub(crate) struct Symbols {
    /// Per value: its `E` symbol `start | freq << 16` (the escape if escaped).
    pub e: Vec<u32>,
    /// Per value: its `M` symbol `start | freq << 16` (0: none, the value is +0.0).
    pub m: Vec<u32>,
    /// Escaped `E` symbols as (value index, symbol), in value order.
    pub escapes: Vec<(u32, u16)>,
    /// Groups as (first value, number of values), in value order.
    pub groups: Vec<(u32, u32)>,
    /// Values in a whole group (16, 32 or 64).
    pub ways: usize,
    /// Space for the stream's words.
    pub words: Vec<u16>,
}

thread_local! {
    /// The buffers of the last block this thread encoded: reused, so that encoding large
    /// blocks does not fault in fresh pages each time.
    static SPARE: RefCell<Option<Symbols>> = const { RefCell::new(None) };
}

impl Symbols {
    /// Room for the symbols of `n` values in groups of `ways` (every entry to be overwritten:
    /// a reused buffer keeps its old contents).
    pub(crate) fn new(n: usize, ways: usize) -> Self {
        let mut s = SPARE
            .with(|spare| spare.borrow_mut().take())
            .unwrap_or(Symbols {
                e: Vec::new(),
                m: Vec::new(),
                escapes: Vec::new(),
                groups: Vec::new(),
                ways,
                words: Vec::new(),
            });
        set_len(&mut s.e, n);
        set_len(&mut s.m, n);
        s.escapes.clear();
        s.groups.clear();
        s.ways = ways;
        s
    }

    /// Keeps the buffers for this thread's next block.
    pub(crate) fn recycle(self) {
        SPARE.with(|spare| *spare.borrow_mut() = Some(self));
    }
}

/// Gives `v` length `n`, zeroing only entries it never held (a reused buffer is not cleared:
/// its user writes every entry before reading it).
pub(crate) fn set_len<T: Copy + Default>(v: &mut Vec<T>, n: usize) {
    if v.len() >= n {
        v.truncate(n);
    } else {
        v.resize(n, T::default());
    }
}
