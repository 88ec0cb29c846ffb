//! A set of fixed-width values for counting distinct ones fast: open addressing at a load of
//! at most a half, keys compared whole (so counts are exact), one key value set aside as the
//! free-slot marker and tracked apart.

/// Keys the set holds: unsigned integers, hashed through their `u64` value.
pub(crate) trait Key: Copy + Eq + Into<u64> {
    /// The free-slot marker.
    const EMPTY: Self;
}

impl Key for u32 {
    const EMPTY: Self = u32::MAX;
}

impl Key for u64 {
    const EMPTY: Self = u64::MAX;
}

/// A set of `K` values.
pub(crate) struct Distinct<K: Key> {
    slots: Vec<K>,
    /// Bits the hash is shifted right by to index `slots`.
    shift: u32,
    /// Whether `K::EMPTY` is in the set.
    empty_held: bool,
}

impl<K: Key> Distinct<K> {
    /// An empty set with room for `capacity` values.
    pub(crate) fn new(capacity: usize) -> Self {
        Self::in_slots(Vec::new(), capacity)
    }

    /// An empty set with room for `capacity` values in the memory of `slots` (another set's,
    /// from `into_slots`: fresh memory costs a page fault per 4 KiB touched).
    pub(crate) fn in_slots(mut slots: Vec<K>, capacity: usize) -> Self {
        let len = (2 * capacity).next_power_of_two();
        slots.clear();
        slots.resize(len, K::EMPTY);
        Distinct {
            slots,
            shift: 64 - len.trailing_zeros(),
            empty_held: false,
        }
    }

    /// The set's memory, for a later set.
    pub(crate) fn into_slots(self) -> Vec<K> {
        self.slots
    }

    /// Empties the set.
    pub(crate) fn clear(&mut self) {
        self.slots.fill(K::EMPTY);
        self.empty_held = false;
    }

    /// Adds `v`; whether it was new.
    #[inline(always)]
    pub(crate) fn insert(&mut self, v: K) -> bool {
        if v == K::EMPTY {
            return !std::mem::replace(&mut self.empty_held, true);
        }
        let slots = &mut self.slots[..];
        let mask = slots.len() - 1;
        let mut at = (v.into().wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize;
        loop {
            match slots[at] {
                t if t == v => return false,
                t if t == K::EMPTY => {
                    slots[at] = v;
                    return true;
                }
                _ => at = (at + 1) & mask,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::xorshift;

    #[test]
    fn distinct_values_are_counted_once() {
        let mut set = Distinct::<u64>::new(1000);
        let mut x = 5;
        let vals: Vec<u64> = (0..1000).map(|_| xorshift(&mut x) % 300).collect();
        let mut sorted = vals.clone();
        sorted.sort_unstable();
        sorted.dedup();
        let new = vals.iter().filter(|&&v| set.insert(v)).count();
        assert_eq!(new, sorted.len());
        // The free-slot marker is a value like any other, and `clear` empties the set.
        assert!(set.insert(u64::MAX) && !set.insert(u64::MAX));
        set.clear();
        assert!(set.insert(vals[0]) && set.insert(u64::MAX));
        // A set in another's memory starts empty, at its own size.
        let mut small = Distinct::<u32>::in_slots(vec![7; 5000], 3);
        assert!(small.insert(7) && !small.insert(7) && small.insert(u32::MAX));
        assert_eq!(small.into_slots().len(), 8);
    }
}
