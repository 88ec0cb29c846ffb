//! The sizes of a model's tables: those that grow with its block (`Tables::for_block`), against
//! the pack it starts from (`Fit`), and the most memory a block's model allocates (`need`).

use super::{is_wide, Fit, Params, Predictor, Tables, MAX_IN, SLOT, SLOTS_MAX_LOG, WIDE_SETS};
use crate::codecs::cm::bilevel::{Bilevel, BILEVEL_SETS};
use crate::codecs::cm::experts::{select, LaneState, MatchTable};
use crate::codecs::cm::mixing::Apm;
use crate::codecs::cm::net_inputs::NetInputs;
use crate::codecs::cm::pack::{Geometry, Pack};
use crate::codecs::cm::runs::Runs;
use crate::codecs::cm::tables::FIXED_MAX;

impl Tables {
    /// The tables of a block of `len` bytes: sized to the block, or to a pack's `geometry`
    /// where given, as `Fit` says.
    pub(super) fn for_block(cfg: Params, len: usize, geometry: Option<(Geometry, Fit)>) -> Self {
        let n = select(cfg.contexts, is_wide(cfg, geometry)).0.len();
        // Slots scaled to the block and to how many contexts claim them (four per byte with
        // 18 contexts): 2^12..=2^24 (256 MiB).
        let want = (len.saturating_mul(2 * n) / 9).max(1).next_power_of_two();
        // With a pack, more than the pack's table, which its slots fill, to leave the block
        // room; up to 2^8 times the pack's (`load`).
        let grown = |g: Geometry, least: u32| {
            want.clamp(
                1 << (g.slots_log + least).min(SLOTS_MAX_LOG),
                1 << (g.slots_log + 8).min(SLOTS_MAX_LOG),
            )
        };
        let slots = match geometry {
            Some((g, Fit::Exact)) => 1 << g.slots_log.min(SLOTS_MAX_LOG),
            Some((g, Fit::Sized)) => grown(g, if want <= 1 << g.slots_log { 1 } else { 2 }),
            Some((g, Fit::Grown)) => grown(g, 2),
            None => want.clamp(1 << 12, 1 << SLOTS_MAX_LOG),
        };
        // The order-2 map grows with the block: 2^2 to 2^10 hashed contexts of 256 each.
        // With a pack, at least the pack's (whose map is spread over it, `load`).
        let own = (len.max(1).ilog2()).saturating_sub(10).clamp(2, 10);
        let order2_bits = match geometry {
            Some((g, Fit::Exact)) => g.order2_bits.clamp(2, 10),
            Some((g, _)) => own.max(g.order2_bits).clamp(2, 10),
            None => own,
        };
        Tables { slots, order2_bits }
    }
}

impl Predictor {
    /// The most bytes a model for a block of `len` bytes allocates (besides the block),
    /// fresh or starting from a pack (`new_in`).
    pub fn need(cfg: Params, len: usize, pack: Option<(&Pack, Fit)>) -> u64 {
        let history = pack.map_or(0, |(p, _)| p.state.history.len());
        let tables = Tables::for_block(cfg, len, pack.map(|(p, fit)| (p.geometry, fit)));
        let hist = history + len;
        let order2 = 256usize << tables.order2_bits;
        let net_maps = NetInputs::bytes_for(pack.is_some_and(|(p, _)| p.network.is_some()));
        let bilevel = match cfg.bilevel != 0 && pack.is_none() {
            true => Bilevel::bytes() + 4 * BILEVEL_SETS * MAX_IN,
            false => 0,
        };
        let lanes = Self::lanes_for(cfg, len, history).count;
        let wide = match is_wide(cfg, pack.map(|(p, fit)| (p.geometry, fit))) {
            true => {
                let mixers = 4 * MAX_IN * WIDE_SETS.iter().sum::<usize>();
                let orders = select(cfg.contexts, true).1;
                Runs::bytes_for(orders, len) + lanes * LaneState::INDIRECT_BYTES + mixers
            }
            false => 0,
        };
        (tables.slots * SLOT
            + hist
            + MatchTable::bytes_for(hist)
            + Apm::bytes_for(65536 + order2)
            + net_maps
            + bilevel
            + wide) as u64
            + FIXED_MAX
    }
}
