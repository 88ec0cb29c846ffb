//! Residuals carried by the coder's initial states (format version 8). An rANS encoder may
//! start from any state in `[LOW, LOW << 16)` and its decoder ends on exactly that state, so a
//! start state is 31 bits of payload under a set top bit instead of the constant `LOW`: the
//! block's last residuals ride there, and the 4 bytes a way's final state costs are mostly
//! paid back. The decoder has them once its last batch is decoded, which is when it needs them.

use super::ibp;
use crate::entropy::rans::{LOW, WAYS};
use crate::error::{Error, Result};

/// Payload bits of a start state (its top bit is set, which keeps it at least `LOW`).
const BITS: u32 = 31;
/// The top bit of a start state that carries payload.
const TOP: u32 = 1 << BITS;

/// How many residuals of `rbits` bits the start states of `ways` ways carry when the
/// block's last batch has `last` residuals (only those: the earlier ones are joined before
/// the decoder reaches the start states).
pub(super) fn count(ways: usize, rbits: u32, last: usize) -> usize {
    (ways * BITS as usize / rbits as usize).min(last)
}

/// Start states for `ways` ways carrying `res` (`rbits` bits each, at most `count` of
/// them), packed low bits first; ways past `ways` start at `LOW`.
pub(super) fn states(res: impl IntoIterator<Item = u64>, rbits: u32, ways: usize) -> [u32; WAYS] {
    let mut x = [LOW; WAYS];
    x[..ways].iter_mut().for_each(|s| *s = TOP);
    let (mut acc, mut held, mut way) = (0u128, 0u32, 0usize);
    let mask = (1u64 << rbits) - 1;
    for r in res {
        acc |= u128::from(r & mask) << held;
        held += rbits;
        while held >= BITS {
            x[way] = TOP | (acc as u32 & (TOP - 1));
            acc >>= BITS;
            held -= BITS;
            way += 1;
        }
    }
    if held > 0 {
        x[way] = TOP | acc as u32;
    }
    x
}

/// Appends to `out` the `v` residuals of `rbits` bits carried by the final decoder states `x`
/// of `ways` ways; an error unless `x` is exactly what `states` makes of them.
pub(super) fn take<R: ibp::Word>(
    x: &[u32; WAYS],
    rbits: u32,
    ways: usize,
    v: usize,
    out: &mut Vec<R>,
) -> Result<()> {
    let at = out.len();
    let (mut acc, mut held, mut way) = (0u128, 0u32, 0usize);
    let mask = (1u128 << rbits) - 1;
    for _ in 0..v {
        while held < rbits && way < ways {
            acc |= u128::from(x[way] & (TOP - 1)) << held;
            held += BITS;
            way += 1;
        }
        out.push(R::from_u64((acc & mask) as u64));
        acc >>= rbits;
        held = held.saturating_sub(rbits);
    }
    if states(out[at..].iter().map(|r| r.to_u64()), rbits, ways) != *x {
        return Err(Error::Corrupt(
            "entropy-coded stream does not decode".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::xorshift;

    #[test]
    fn carried_residuals_come_back_and_damage_is_found() {
        let mut seed = 7u64;
        for (rbits, ways) in [(4, 32), (7, 64), (20, 64), (21, 16), (52, 64), (53, 32)] {
            for last in [0, 1, 5, 1000] {
                let v = count(ways, rbits, last);
                assert!(v * rbits as usize <= ways * BITS as usize);
                let res: Vec<u64> = (0..v)
                    .map(|_| xorshift(&mut seed) & ((1 << rbits) - 1))
                    .collect();
                let x = states(res.iter().copied(), rbits, ways);
                assert!(x.iter().all(|&s| s >= LOW));
                assert!(x[ways..].iter().all(|&s| s == LOW));
                // Appended after what the vector held.
                let mut back = vec![9u64];
                take(&x, rbits, ways, v, &mut back).unwrap();
                assert_eq!(back[0], 9);
                assert_eq!(back[1..], res[..]);
                // A flipped payload bit past the residuals, or a cleared top bit, is caught.
                let mut bad = x;
                bad[ways - 1] ^= 1 << 30;
                if v * (rbits as usize) < ways * BITS as usize - 1 {
                    assert!(take(&bad, rbits, ways, v, &mut Vec::<u64>::new()).is_err());
                }
                let mut bad = x;
                bad[0] &= !TOP;
                assert!(take(&bad, rbits, ways, v, &mut Vec::<u64>::new()).is_err());
            }
        }
    }
}
