//! The learnt state of a model that a pack holds: given out after training (`state`), taken
//! in where a block starts from a pack (`load`, `start_from`), checked against a model
//! (`check_pack`).

use super::{Fit, Params, Predictor, SLOT};
use crate::codecs::cm::mixing::{Apm, Mixer};
use crate::codecs::cm::pack::{Pack, State};
use crate::codecs::cm::tables::Workspace;
use crate::error::{Error, Result};

impl Predictor {
    /// Whether `pack` can start the model of `cfg`.
    pub fn check_pack(cfg: Params, pack: &Pack) -> Result<()> {
        let mut model = Self::fresh(
            cfg,
            1,
            Workspace::default(),
            Some((pack.geometry, Fit::Exact)),
            &[],
            pack.network.clone(),
        );
        model.load(&pack.state)
    }
}

impl<const N: usize> Predictor<N> {
    /// Takes a base pack's shared tables (`pack::BASE_TENSORS` but the history) into a model
    /// being trained (`for_training`) with the base's geometry, so that a pack trained on top
    /// of another starts where that one ended; refused unless every table has this model's
    /// shape.
    pub fn start_from(&mut self, base: &State) -> Result<()> {
        let tiles = self.tiles.as_mut();
        if base.slots.len() != self.slots.len()
            || tiles.as_ref().is_none_or(|t| t.len() != base.tiles.len())
            || base.t0.len() != self.t0.len()
            || base.t1.len() != self.t1.len()
            || base.tm.len() != self.tm.len()
            || base.apms[1].len() != self.apm_b.table().len()
            || base.apms[2].len() != self.apm_c.table().len()
        {
            return Err(Error::BadPack(
                "the base's tables do not fit this model".into(),
            ));
        }
        if let Some(t) = tiles {
            t.copy_from_slice(&base.tiles);
        }
        self.slots.copy_from_slice(&base.slots);
        self.t0.copy_from_slice(&base.t0);
        self.t1.copy_from_slice(&base.t1);
        self.tm.copy_from_slice(&base.tm);
        self.apm_b.load(&base.apms[1]);
        self.apm_c.load(&base.apms[2]);
        Ok(())
    }

    /// The five mixers, in the order a pack holds them.
    fn mixers(&mut self) -> [&mut Mixer; 5] {
        [
            &mut self.mix_a,
            &mut self.mix_b,
            &mut self.mix_c,
            &mut self.mix_d,
            &mut self.mix_final,
        ]
    }

    /// The three probability maps, in the order a pack holds them.
    fn apms(&mut self) -> [&mut Apm; 3] {
        [&mut self.apm_a, &mut self.apm_b, &mut self.apm_c]
    }

    /// Replaces the learnt state by `s` if every part of it has this model's shape, else
    /// changes nothing.
    pub(super) fn load(&mut self, s: &State) -> Result<()> {
        let bad = |what: &str| Err(Error::BadPack(format!("its {what} do not fit the model")));
        let grow = self.slots.len() / s.slots.len().max(1);
        if s.slots.len() * grow != self.slots.len()
            || !grow.is_power_of_two()
            || grow > 256
            || s.tiles.len() * SLOT != s.slots.len()
        {
            return bad("hashed contexts");
        }
        if s.maps.len() != self.maps.len() * 256 {
            return bad("history maps");
        }
        if s.t0.len() != self.t0.len() || s.t1.len() != self.t1.len() || s.tm.len() != self.tm.len()
        {
            return bad("counters");
        }
        if s.chain.len() != self.chain_w.len() * 2 {
            return bad("chain weights");
        }
        // A model without a network (`--net none`) leaves a pack's online weights unread.
        if self.net.params().is_some_and(|p| p.len() != s.net.len()) {
            return bad("network weights");
        }
        if self.mixers().iter().zip(&s.mixers).any(|(m, (w, uses))| {
            let (mw, mu) = m.state();
            mw.len() != w.len() || mu.len() != uses.len()
        }) {
            return bad("mixer weights");
        }
        // The order-2 map may have 2^k times the pack's contexts (`fresh`), the others its own.
        let spread = self.apm_c.table().len() / s.apms[2].len().max(1);
        if self.apm_a.table().len() != s.apms[0].len()
            || self.apm_b.table().len() != s.apms[1].len()
            || s.apms[2].len() * spread != self.apm_c.table().len()
            || !spread.is_power_of_two()
            || !s.apms[2].len().is_multiple_of(256 * 33)
        {
            return bad("probability maps");
        }
        if grow == 1 {
            self.slots.copy_from_slice(&s.slots);
        } else {
            // Each slot goes to the copy of its place that its hash's next bits select.
            let size = s.slots.len();
            for ((i, slot), &tile) in s.slots.chunks_exact(SLOT).enumerate().zip(&s.tiles) {
                let at = i * SLOT + (tile as usize & (grow - 1)) * size;
                self.slots[at..at + SLOT].copy_from_slice(slot);
            }
        }
        for (map, row) in self.maps.iter_mut().zip(s.maps.chunks_exact(256)) {
            map.p.copy_from_slice(row);
        }
        self.t0.copy_from_slice(&s.t0);
        self.t1.copy_from_slice(&s.t1);
        self.tm.copy_from_slice(&s.tm);
        for (w, c) in self.chain_w.iter_mut().zip(s.chain.chunks_exact(2)) {
            *w = [c[0], c[1]];
        }
        self.net.load(&s.net);
        for (m, (w, uses)) in self.mixers().into_iter().zip(&s.mixers) {
            m.load(w, uses);
        }
        self.apm_a.load(&s.apms[0]);
        self.apm_b.load(&s.apms[1]);
        self.apm_c.load_spread(&s.apms[2], 256);
        Ok(())
    }

    /// The learnt state: what a pack holds.
    pub fn state(&mut self) -> State {
        let tiles = self.tiles.clone();
        State {
            slots: self.slots.clone(),
            tiles: tiles.unwrap_or_else(|| vec![0; self.slots.len() / SLOT]),
            maps: self.maps.iter().flat_map(|m| m.p.iter().copied()).collect(),
            t0: self.t0.clone(),
            t1: self.t1.clone(),
            tm: self.tm.clone(),
            mixers: self.mixers().map(|m| {
                let (w, u) = m.state();
                (w.to_vec(), u.to_vec())
            }),
            apms: self.apms().map(|a| a.table().to_vec()),
            chain: self.chain_w.iter().flatten().copied().collect(),
            net: self.net.params().map_or(Vec::new(), |p| p.to_vec()),
            history: Vec::new(),
        }
    }
}
