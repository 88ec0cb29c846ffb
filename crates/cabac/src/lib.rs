//! An adaptive binary arithmetic coder with the interface of the `cabac` crate (0.15):
//! the `CabacWriter` and `CabacReader` traits and the `vp8` module's writer, reader and
//! context, for `preflate-rs`'s reconstruction records (see README.md).
//!
//! The coder is a carry-propagating range coder over 32 bits: each bit splits the range at
//! its context's 12-bit probability of a zero; bypass bits split it in halves. A context's
//! probability moves toward each bit it sees, quickly at first and then at a rate of 1/32.

#![forbid(unsafe_code)]

use std::io::Result;

/// Writes bits, each with a context of type `C` that learns their odds.
pub trait CabacWriter<C> {
    /// Writes a bit with odds one half.
    fn put_bypass(&mut self, bit: bool) -> Result<()>;

    /// Writes a bit with `ctx`'s odds, which then learn from it.
    fn put(&mut self, bit: bool, ctx: &mut C) -> Result<()>;

    /// Writes what is still held; nothing may be written after.
    fn finish(&mut self) -> Result<()>;

    /// Writes the low `n` bits of `value`, the highest first, bit `i` with context
    /// `min(i, A - 1)`.
    fn put_n_bits<const A: usize>(&mut self, value: u64, n: usize, ctx: &mut [C; A]) -> Result<()> {
        for i in (0..n).rev() {
            self.put(value >> i & 1 == 1, &mut ctx[i.min(A - 1)])?;
        }
        Ok(())
    }

    /// Writes `v` as `v` ones and a zero, the `i`-th with context `min(i, A - 1)`.
    fn put_unary_encoded<const A: usize>(&mut self, v: usize, ctx: &mut [C; A]) -> Result<()> {
        for i in 0..=v {
            self.put(i < v, &mut ctx[i.min(A - 1)])?;
        }
        Ok(())
    }

    /// Writes the `A` low bits of `v`, the highest first, each with the context of its
    /// place and of the bits above it: a binary tree of contexts (`B` is `2^(A-1)`).
    fn put_branched<const A: usize, const B: usize>(
        &mut self,
        v: u8,
        tree: &mut [[C; B]; A],
    ) -> Result<()> {
        let mut above = 0usize;
        for i in (0..A).rev() {
            let bit = v >> i & 1 == 1;
            self.put(bit, &mut tree[i][above % B])?;
            above = above << 1 | usize::from(bit);
        }
        Ok(())
    }
}

/// Reads what a `CabacWriter` wrote, with contexts that learn as the writer's did.
pub trait CabacReader<C> {
    /// Reads a bit with odds one half.
    fn get_bypass(&mut self) -> Result<bool>;

    /// Reads a bit with `ctx`'s odds, which then learn from it.
    fn get(&mut self, ctx: &mut C) -> Result<bool>;

    /// Reads what `put_n_bits` wrote.
    fn get_n_bits<const A: usize>(&mut self, n: usize, ctx: &mut [C; A]) -> Result<u64> {
        let mut v = 0u64;
        for i in (0..n).rev() {
            v = v << 1 | u64::from(self.get(&mut ctx[i.min(A - 1)])?);
        }
        Ok(v)
    }

    /// Reads what `put_unary_encoded` wrote.
    fn get_unary_encoded<const A: usize>(&mut self, ctx: &mut [C; A]) -> Result<usize> {
        let mut v = 0;
        while self.get(&mut ctx[v.min(A - 1)])? {
            v += 1;
        }
        Ok(v)
    }

    /// Reads what `put_branched` wrote.
    fn get_branched<const A: usize, const B: usize>(
        &mut self,
        tree: &mut [[C; B]; A],
    ) -> Result<u8> {
        let mut above = 0usize;
        for i in (0..A).rev() {
            let bit = self.get(&mut tree[i][above % B])?;
            above = above << 1 | usize::from(bit);
        }
        Ok(above as u8)
    }
}

pub mod vp8;
