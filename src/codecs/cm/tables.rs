//! The large tables of the context-mixing models, kept between blocks for reuse, and how
//! they are refilled without holding more memory than a block needs.

/// Most bytes of a model's parts whose size does not grow with its block (mixers, maps,
/// counters, the network, per-lane state), for every configuration an archive may name
/// (tests/memory.rs checks it).
pub const FIXED_MAX: u64 = 3 << 20;

/// The large tables of a model, kept between blocks so that a worker allocates them once.
#[derive(Default)]
pub struct Workspace {
    pub(super) hist: Vec<u8>,
    pub(super) slots: Vec<u8>,
    pub(super) matches: Vec<u32>,
    pub(super) apm_order1: Vec<u16>,
    pub(super) apm_order2: Vec<u16>,
}

impl Workspace {
    /// Bytes the tables hold.
    pub fn bytes(&self) -> u64 {
        (self.hist.capacity()
            + self.slots.capacity()
            + 4 * self.matches.capacity()
            + 2 * (self.apm_order1.capacity() + self.apm_order2.capacity())) as u64
    }
}

/// `v`'s memory as `len` copies of `value`: reused where it has room, else freed before a
/// table of exactly `len` is allocated (never both at once, nor more room than asked).
pub fn refill<T: Clone>(mut v: Vec<T>, len: usize, value: T) -> Vec<T> {
    v.clear();
    if v.capacity() < len {
        v = Vec::new();
        v.reserve_exact(len);
    }
    v.resize(len, value);
    v
}
