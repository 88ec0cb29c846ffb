//! The sep predictor. Per byte, each lane's contexts (orders 2-12, words, sparse, aligned and
//! column patterns) select bit histories (one byte per node of a nibble's bit tree, in a hash
//! table shared by every context); per bit, each history's learnt probability, dense order-0/1
//! counters, a match model, a chain in which each order refines the order below it, and the
//! neural network's byte prediction (where the configuration has one) are mixed by four gated
//! logistic mixers and a second-layer mixer, then refined by three adaptive probability maps
//! (orders 0, 1 and 2). The wide model (`Params::wide`) adds the contexts of `experts::WIDE`,
//! run inputs (`runs`), one-sided histories as inputs of their own, and four mixers selected
//! by the bytes before. Everything trains online, one byte per lane per step, and the decoder
//! replays it exactly. Lanes share all statistics and are processed in lane order.

use super::bilevel::{Bilevel, Windows, BILEVEL_SETS, N_BILEVEL, WIDTH_MIN};
use super::experts::{
    back, context_hash, expected_hash, select, ContextKind, LaneState, MatchTable, CATALOGUE_LEN,
    MAX_HASHED,
};
use super::mixing::{counter_p12, counter_update, stretch_table, Apm, Mixer, COUNTER_INIT};
use super::net_inputs::{NetInputs, NET_BUCKETS, N_NET};
use super::pack::{Geometry, Pack};
use super::runs::Runs;
use super::states::{Histories, HistoryMap};
use super::tables::{refill, Workspace};
use crate::codecs::lanes::Lanes;
use crate::codecs::net::frozen::Frozen;
use crate::codecs::net::NetConfig;
use std::sync::Arc;

mod learnt;
mod sizes;

/// Mixer inputs besides the hashed contexts: order 0, order 1, match, network, bias, match
/// strength, chain.
const N_EXTRA: usize = 7;
/// Most mixer inputs: the hashed contexts, the others, and in the wide model a run input per
/// order and a one-sided input per context.
const MAX_IN: usize = 3 * MAX_HASHED + N_EXTRA + N_NET + N_BILEVEL;
/// Weight sets of the wide model's four mixers, selected by: the byte two back and the bit
/// position; a 4-bit hash of the two bytes before and the partial byte; the byte three back
/// and the bit position; the top two bits of each of the four bytes before and the bit
/// position.
const WIDE_SETS: [usize; 4] = [256 * 8, 16 * 256, 256 * 8, 256 * 8];
/// Learning rate of the chain's weights.
const CHAIN_LR: f32 = 0.02;
/// Bytes at the end of a pack's history that lane 0 reads as if coding them (`prime`).
const PRIME_TAIL: usize = 64 << 10;
/// Counter limit of the dense low orders.
const LIMIT_DENSE: u32 = 1023;

/// Settings of the predictor, recorded in the archive header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Most lanes a block is cut into.
    pub max_lanes: u16,
    /// Fewest bytes per lane (small inputs get fewer lanes).
    pub min_lane: u32,
    /// Mixer learning rate once trained, in 1e-4 units.
    pub mix_lr: u16,
    /// Mixer learning rate of a fresh weight set, in 1e-4 units.
    pub mix_lr_start: u16,
    /// The network's shape and learning rate.
    pub net: NetConfig,
    /// Whether a network runs at all: a pack's pre-trained one where the pack has one, else
    /// an online one of `net`'s shape where `net` has hidden units (false: `--net none`).
    pub network: bool,
    /// The hashed contexts (bit i: the catalogue's context i, `experts::CATALOGUE`).
    pub contexts: u32,
    /// One mixer and one probability map instead of five and three, no refinement chain: the
    /// fastest levels.
    pub lean: bool,
    /// The fast predictor (`fast`) instead of this one: the fastest level.
    pub fast: bool,
    /// Code the block with the default level's model (`default_variant`) instead: the
    /// encoder's choice for one block, which the payload's transforms byte records (never in
    /// the archive's configuration).
    pub default_model: bool,
    /// Row length (bytes) of the bilevel image expert (`bilevel`) that joins the mixers (0:
    /// none): the encoder's choice for one block that starts fresh, which the payload's
    /// transforms byte records (never in the archive's configuration).
    pub bilevel: u32,
    /// The wide model: the contexts of `experts::WIDE` besides the level's, run inputs,
    /// one-sided inputs and four more mixers, for a block of the level's own model that starts
    /// fresh: the encoder's choice for one block, which the payload's transforms byte records
    /// (never in the archive's configuration).
    pub wide: bool,
}

impl Params {
    /// The default level's model in the place of this larger one (a higher level's: the
    /// default's contexts and more, or an online network): its contexts, no online network;
    /// `None` for any other model.
    pub fn default_variant(self) -> Option<Params> {
        let variant = Params {
            contexts: DEFAULT_CONTEXTS,
            net: NetConfig {
                hidden: 0,
                ..self.net
            },
            default_model: false,
            bilevel: 0,
            wide: false,
            ..self
        };
        let same = variant.contexts == self.contexts
            && variant.net.hidden == self.net.hidden
            && self.bilevel == 0
            && !self.wide;
        let larger = self.contexts & DEFAULT_CONTEXTS == DEFAULT_CONTEXTS;
        (!self.fast && !self.lean && larger && !same).then_some(variant)
    }
}

/// The contexts of the default model: the catalogue's first 18.
pub const DEFAULT_CONTEXTS: u32 = (1 << 18) - 1;

impl Default for Params {
    fn default() -> Self {
        Params {
            // One lane: lanes cut the history each byte is predicted from; they pay only where
            // a network is batched over them.
            max_lanes: 1,
            min_lane: 32 << 10,
            mix_lr: 20,
            mix_lr_start: 300,
            // No network: it costs most of the time for little of the ratio on a CPU.
            net: NetConfig {
                hidden: 0,
                ..NetConfig::default()
            },
            network: true,
            default_model: false,
            bilevel: 0,
            wide: false,
            contexts: DEFAULT_CONTEXTS,
            lean: false,
            fast: false,
        }
    }
}

/// Per-lane coding state within a byte, with room for `N` hashed contexts.
#[derive(Clone, Copy)]
struct LaneBits<const N: usize> {
    /// Hash of each hashed context for the current byte.
    ctx: [u64; N],
    /// Slot (index of its first counter) of each hashed context for the current nibble.
    slot: [usize; N],
    /// Bits of the current byte seen so far, with a leading 1.
    c0: u32,
    /// Bits of the current nibble seen so far, with a leading 1.
    nib: u32,
    /// Byte before the current one.
    b1: u32,
    /// Byte two before the current one.
    b2: u32,
    /// Bytes three and four before the current one.
    b34: u32,
    /// The two bytes before the current one, hashed for the order-2 probability map.
    h2: u32,
    /// Byte predicted by the match model, if any.
    match_byte: Option<u8>,
    /// Whether the match still agrees with the bits seen.
    match_ok: bool,
    /// Match-length bucket.
    match_bucket: usize,
    /// Position in the lane modulo 4.
    pos_mod: u32,
    /// The pixels around the byte, for the bilevel image expert.
    pixels: Windows,
}

/// The predictor state of one block, with room for `N` hashed contexts: the catalogue's
/// (`Predictor`, every model but the wide one) or the wide model's too (`WidePredictor`).
/// The room is a type's, not a block's, so that the per-bit arrays of the models without the
/// wide model's contexts stay as small as their contexts.
pub struct Predictor<const N: usize = CATALOGUE_LEN> {
    lanes: Lanes,
    /// The hashed contexts, orders first (shortest first), each with its place (the
    /// catalogue's, then the wide model's).
    kinds: Vec<(ContextKind, usize)>,
    /// How many of `kinds` are orders: the refinement chain's stages, and what the novelty of
    /// a context is counted over.
    orders: usize,
    hist: Vec<u8>,
    states: Vec<LaneState>,
    bits: Vec<LaneBits<N>>,
    matches: MatchTable,
    slots: Vec<u8>,
    slot_mask: usize,
    /// While training a pack: per slot, the 8 hash bits above the table's index bits, so that
    /// a block with a larger table can put each slot where its hash leads (`load`).
    tiles: Option<Vec<u8>>,
    maps: Vec<HistoryMap>,
    t0: Vec<u32>,
    t1: Vec<u32>,
    tm: Vec<u32>,
    mix_a: Mixer,
    mix_b: Mixer,
    mix_c: Mixer,
    mix_d: Mixer,
    mix_final: Mixer,
    apm_a: Apm,
    apm_b: Apm,
    apm_c: Apm,
    /// Bits of the order-2 map's hash of the two bytes before (more for longer blocks).
    order2_bits: u32,
    lean: bool,
    x: [f32; MAX_IN],
    /// The chain's weight pairs, per stage and bit history.
    chain_w: Vec<[f32; 2]>,
    /// Per stage: weight index, input and output of the last prediction.
    chain_at: Vec<(usize, f32, f32)>,
    /// The network and what the mixers take of it.
    net: NetInputs,
    /// The bilevel image expert and the mixer its pixels select, where the model has them.
    bilevel: Option<(Bilevel, Mixer)>,
    /// The wide model's run inputs and mixers, where it is one.
    wide: Option<Wide>,
}

/// The predictor of the wide model (`Params::wide`).
pub type WidePredictor = Predictor<MAX_HASHED>;

/// What the wide model adds besides its contexts.
struct Wide {
    runs: Runs,
    /// Mixers of every input, their weight sets as `WIDE_SETS` says.
    mixers: [Mixer; 4],
}

impl Wide {
    /// The wide model's inputs of lane `l`'s next bit (`c0` the byte's bits so far, `bitpos`
    /// their count) from its contexts' histories `states`, into `x`: the contexts' inputs
    /// where a history is unseen set to 0, then from `at` on the run inputs of the `orders`
    /// orders and the one-sided inputs. Out of line: the other models' hot loop stays as it
    /// was.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn inputs(
        &mut self,
        l: usize,
        c0: u32,
        bitpos: u32,
        states: &[u8],
        orders: usize,
        x: &mut [f32],
        at: usize,
    ) {
        // A context not seen yet says nothing (and its weight learns nothing from it).
        for (xk, &s) in x.iter_mut().zip(states) {
            if s == 0 {
                *xk = 0.0;
            }
        }
        self.runs.inputs(l, c0, bitpos, &mut x[at..]);
        // A history that has seen only one bit value, again as its own input: such contexts
        // are the surest, and the mixers weigh them apart.
        let hist = Histories::get();
        let at = at + orders;
        for (k, &s) in states.iter().enumerate() {
            x[at + k] = if hist.one_sided(s) { x[k] } else { 0.0 };
        }
    }

    /// The outputs of the wide model's mixers (stretched) for the bit after the bits `c0`
    /// (`bitpos` of them), from inputs `x`; `bytes` are the four bytes before, the last first.
    #[inline(never)]
    fn mix(&mut self, x: &[f32], bytes: [u32; 4], c0: u32, bitpos: u32) -> [f32; 4] {
        let [b1, b2, b3, b4] = bytes;
        let pair = (b1 | b2 << 8).wrapping_mul(0x9E37_79B1) >> 28;
        let tops = (b1 >> 6) | (b2 >> 6) << 2 | (b3 >> 6) << 4 | (b4 >> 6) << 6;
        let sets = [
            b2 << 3 | bitpos,
            pair << 8 | c0,
            b3 << 3 | bitpos,
            tops << 3 | bitpos,
        ];
        let mut out = [0.0; 4];
        for ((o, m), set) in out.iter_mut().zip(&mut self.mixers).zip(sets) {
            *o = m.mix(x, set as usize).0;
        }
        out
    }

    /// Learns the bit `bit` (after `mix`).
    #[inline(never)]
    fn update(&mut self, bit: u32) {
        self.runs.update(bit);
        for m in &mut self.mixers {
            m.update(bit);
        }
    }
}

/// Whether a model of `cfg` for a block starting from a pack of `geometry` (if any) is wide:
/// only the level's own model of a fresh block may be.
fn is_wide(cfg: Params, geometry: Option<(Geometry, Fit)>) -> bool {
    cfg.wide && geometry.is_none() && !cfg.lean && !cfg.fast
}

/// The bit histories in `slots` of the contexts' slots `slot` at nibble node `nib` (0 past
/// them).
#[inline]
fn states_at<const N: usize>(slots: &[u8], slot: &[usize], nib: u32) -> [u8; N] {
    let mut states = [0u8; N];
    for (s, &at) in states.iter_mut().zip(slot) {
        *s = slots[at + nib as usize];
    }
    states
}

/// A probability in (0, 1) as 16 bits, kept within 1..=65535.
#[inline]
fn to_p16(p: f32) -> u32 {
    // SAFETY of the cast: p is in (0, 1), so p * 65536 is finite and in range.
    unsafe { (p * 65536.0).to_int_unchecked::<i32>() }.clamp(1, 65535) as u32
}

/// How a block's tables are sized against the pack it starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fit {
    /// The pack's own sizes (training it, checking it).
    Exact,
    /// Sized to the block: twice the pack's context table where the block asks no more than
    /// the pack's, else at least four times (payloads with transforms bit 2).
    Sized,
    /// At least four times the pack's context table, whatever the block (payloads without
    /// transforms bit 2, which encoders before it wrote).
    Grown,
}

/// The sizes of a model's tables that grow with its block.
struct Tables {
    /// Slots shared by the hashed contexts.
    slots: usize,
    /// Hashed contexts of the order-2 probability map (log2, of 256 each).
    order2_bits: u32,
}

/// Slot layout: 16 bytes, byte 0 is the check tag (0: empty), 1..16 the bit histories of a
/// nibble's bit tree.
const SLOT: usize = 16;
/// Slots a context may take, side by side in one cache line.
const WAYS: usize = 4;
/// Most slots of a model (log2).
const SLOTS_MAX_LOG: u32 = 24;

impl Predictor {
    /// A fresh model to train a pack on `len` bytes, with the pack's table sizes (a pack is
    /// never of the wide model).
    pub fn for_training(
        cfg: Params,
        len: usize,
        geometry: Geometry,
        network: Option<Arc<Frozen>>,
    ) -> Self {
        let geometry = Some((geometry, Fit::Exact));
        let mut model = Self::fresh(cfg, len, Workspace::default(), geometry, &[], network);
        model.tiles = Some(vec![0; model.slots.len() / SLOT]);
        model
    }

    /// The lanes of a block of `len` bytes after `history` bytes (a pack's, `new_in`).
    pub fn lanes_for(cfg: Params, len: usize, history: usize) -> Lanes {
        Lanes::new(len, cfg.max_lanes as usize, cfg.min_lane as usize).after(history)
    }
}

impl<const N: usize> Predictor<N> {
    /// Whether this predictor has room for the wide model's contexts: a constant, so that
    /// the code of the other models leaves out the wide model's steps (`wide` is `None`
    /// there), as if they had never been written.
    const WIDE: bool = N >= MAX_HASHED;

    /// Gives the model's large tables back for the next block.
    pub fn into_workspace(self) -> Workspace {
        Workspace {
            hist: self.hist,
            slots: self.slots,
            matches: self.matches.into_buffer(),
            apm_order1: self.apm_b.into_buffer(),
            apm_order2: self.apm_c.into_buffer(),
        }
    }

    /// A model for a block of `len` bytes, built in `ws`'s memory: fresh (every table is
    /// reset), or starting from `pack`'s state, its tables fitted to the pack's as the `Fit`
    /// says (`check_pack` has found the pack to fit `cfg`).
    pub fn new_in(cfg: Params, len: usize, ws: Workspace, pack: Option<(&Pack, Fit)>) -> Self {
        let geometry = pack.map(|(p, fit)| (p.geometry, fit));
        let history = pack.map_or(&[][..], |(p, _)| &p.state.history);
        let network = pack.and_then(|(p, _)| p.network.clone());
        let mut model = Self::fresh(cfg, len, ws, geometry, history, network);
        if let Some((p, _)) = pack {
            // A pack that does not fit leaves the model fresh (with the history before the
            // block, unread), the same way for the encoder and the decoder; `check_pack`
            // refuses such a pack before any block is coded.
            if model.load(&p.state).is_ok() {
                model.prime();
            }
        }
        model
    }

    /// Reads the history before the block (`fresh` put it there): its positions go into the
    /// match table, and lane 0 reads its end as it would have coded it, so that its words,
    /// lines, record length and match carry on into the block.
    fn prime(&mut self) {
        let prefix = self.lanes.prefix;
        if prefix == 0 {
            return;
        }
        let tail = prefix.saturating_sub(PRIME_TAIL);
        self.matches.insert(&self.hist, 0, tail + 1);
        for q in tail..prefix {
            self.matches
                .update(&self.hist, 0, q, &mut self.states[0], |k| k < prefix);
        }
    }

    /// A fresh model for a block of `len` bytes in `ws`'s memory, with its tables sized to the
    /// block, or to a pack's `geometry` where given, as the `Fit` says;
    /// `history` (a pack's) lies before the block, not yet read (`prime`).
    fn fresh(
        cfg: Params,
        len: usize,
        ws: Workspace,
        geometry: Option<(Geometry, Fit)>,
        history: &[u8],
        network: Option<Arc<Frozen>>,
    ) -> Self {
        let lanes = Predictor::lanes_for(cfg, len, history.len());
        let wide = is_wide(cfg, geometry);
        assert!(
            !wide || Self::WIDE,
            "the wide model's contexts need a WidePredictor"
        );
        let (kinds, orders) = select(cfg.contexts, wide);
        let n = kinds.len();
        let net = NetInputs::new(cfg.net, cfg.network, lanes.count, network);
        // A network's confidence selects the novelty mixer's weight sets and the order-0
        // map's contexts, and its extra inputs join every mixer.
        let (n_in, buckets) = match net.shaped() {
            true => (n + N_EXTRA + N_NET, NET_BUCKETS),
            false => (n + N_EXTRA, 1),
        };
        // The bilevel expert's inputs follow the others in every mixer.
        let width = cfg.bilevel as usize;
        let with_bilevel = width >= WIDTH_MIN && geometry.is_none() && !cfg.lean;
        let n_in = n_in + with_bilevel as usize * N_BILEVEL;
        // The wide model's run inputs (one per order) and one-sided histories (one per
        // context) follow.
        let n_in = n_in + wide as usize * (orders + n);
        let stages = if cfg.lean { 0 } else { orders };
        let Tables {
            slots: n_slots,
            order2_bits,
        } = Tables::for_block(cfg, len, geometry);
        let n_first =
            4 + net.shaped() as usize + with_bilevel as usize + WIDE_SETS.len() * wide as usize;
        let blank = LaneBits {
            ctx: [0; N],
            slot: [0; N],
            c0: 1,
            nib: 1,
            b1: 0,
            b2: 0,
            b34: 0,
            h2: 0,
            match_byte: None,
            match_ok: false,
            match_bucket: 0,
            pos_mod: 0,
            pixels: Windows::default(),
        };
        let lr = cfg.mix_lr as f32 * 1e-4;
        // The wide model's many inputs start with small weights, which fresh weight sets
        // move more slowly; other models keep the weights their packs were trained with.
        let (lr0, w0) = match wide {
            true => (cfg.mix_lr_start as f32 * 0.5e-4, 3.0 / n_in as f32),
            false => (cfg.mix_lr_start as f32 * 1e-4, 0.3),
        };
        let slots = refill(ws.slots, n_slots * SLOT, 0);
        let mut hist = refill(ws.hist, history.len() + len, 0);
        hist[..history.len()].copy_from_slice(history);
        let matches = MatchTable::new_in(hist.len(), ws.matches);
        Predictor {
            lanes,
            kinds,
            orders,
            hist,
            states: vec![
                match wide {
                    true => LaneState::with_indirect(),
                    false => LaneState::default(),
                };
                lanes.count
            ],
            bits: vec![blank; lanes.count],
            matches,
            slots,
            slot_mask: n_slots - 1,
            tiles: None,
            maps: (0..n).map(|_| HistoryMap::new()).collect(),
            t0: vec![COUNTER_INIT; 256],
            t1: vec![COUNTER_INIT; 65536],
            tm: vec![COUNTER_INIT; 64 * 2],
            mix_a: Mixer::new(n_in, 256, lr, lr0, w0),
            mix_b: Mixer::new(n_in, 16 * 8, lr, lr0, w0),
            mix_c: Mixer::new(n_in, 256 * 4, lr, lr0, w0),
            mix_d: Mixer::new(n_in, 8 * 8 * 4 * buckets, lr, lr0, w0),
            mix_final: Mixer::new(
                n_first,
                256 * buckets,
                lr * 0.5,
                lr0 * 0.5,
                // The wide model's several mixers start as their average.
                if wide { 1.0 / n_first as f32 } else { 0.25 },
            ),
            apm_a: Apm::new(256 * buckets, 7),
            apm_b: Apm::new_in(65536, 7, ws.apm_order1),
            apm_c: Apm::new_in(256 << order2_bits, 7, ws.apm_order2),
            order2_bits,
            lean: cfg.lean,
            x: [0.0; MAX_IN],
            chain_w: vec![[1.0, 0.0]; stages * 256],
            chain_at: vec![(0, 0.0, 0.0); stages],
            net,
            bilevel: with_bilevel.then(|| {
                (
                    Bilevel::new(width),
                    Mixer::new(n_in, BILEVEL_SETS, lr, lr0, w0),
                )
            }),
            wide: wide.then(|| Wide {
                runs: Runs::new(orders, lanes.count, len),
                mixers: WIDE_SETS.map(|sets| Mixer::new(n_in, sets, lr, lr0, w0)),
            }),
        }
    }

    /// Lane geometry of this block.
    pub fn lanes(&self) -> Lanes {
        self.lanes
    }

    /// Prepares the first `active` lanes for coding their byte at `step`.
    pub fn begin_step(&mut self, step: usize, active: usize) {
        let lanes = self.lanes;
        for l in 0..active {
            let start = lanes.history_start(l);
            let pos = lanes.history_pos(l, step);
            let ls = &self.states[l];
            let lb = &mut self.bits[l];
            for (c, &(kind, place)) in lb.ctx.iter_mut().zip(&self.kinds) {
                *c = context_hash(kind, place, &self.hist, start, pos, ls);
            }
            lb.c0 = 1;
            lb.nib = 1;
            lb.b1 = if pos > start {
                self.hist[pos - 1] as u32
            } else {
                0
            };
            let b2 = back(&self.hist, start, pos, 2) as u32;
            lb.b2 = b2;
            lb.b34 =
                (back(&self.hist, start, pos, 3) | back(&self.hist, start, pos, 4) << 8) as u32;
            lb.h2 = ((lb.b1 | b2 << 8).wrapping_mul(0x9E37_79B1) >> (32 - self.order2_bits)) << 8;
            lb.match_byte = MatchTable::predicted(&self.hist, ls, |q| lanes.known(q, step));
            lb.match_ok = lb.match_byte.is_some();

            lb.match_bucket = if lb.match_ok { ls.bucket() } else { 0 };
            if let Some(w) = self.wide.as_mut().filter(|_| Self::WIDE) {
                for (c, &(kind, place)) in lb.ctx.iter_mut().zip(&self.kinds) {
                    if let ContextKind::Expected(which) = kind {
                        *c = expected_hash(place, which, lb.match_byte, lb.match_bucket, lb.b1);
                    }
                }
                w.runs.begin(l, &lb.ctx);
            }
            lb.pos_mod = ((pos - start) & 3) as u32;
            if let Some((expert, _)) = &self.bilevel {
                lb.pixels = expert.windows(&self.hist, start, pos);
            }
            self.net.set_match(l, (lb.match_byte, lb.match_bucket));
        }
        self.net.forward(&self.hist, &lanes, step, active);
    }

    /// Finds (or claims) the slots of lane `l`'s contexts for the nibble that starts now.
    fn select_slots(&mut self, l: usize) {
        let lb = &mut self.bits[l];
        // Every context's cache line is asked for first, so that the memory fetches overlap.
        let n = self.kinds.len();
        let mut lines = [(0usize, 0u8, 0u64); N];
        let mut touched = 0u8;
        for (line, &ctx) in lines[..n].iter_mut().zip(&lb.ctx) {
            let h = ctx.wrapping_add((lb.c0 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let h = h ^ (h >> 29);
            let base = ((h as usize) & self.slot_mask & !(WAYS - 1)) * SLOT;
            *line = (base, ((h >> 56) as u8) | 1, h);
            touched ^= self.slots[base];
        }
        std::hint::black_box(touched);
        for (k, &(base, check, h)) in lines[..n].iter().enumerate() {
            let chosen = match (0..WAYS)
                .map(|j| base + j * SLOT)
                .find(|&a| self.slots[a] == check)
            {
                Some(a) => a,
                None => {
                    // Replace the least used (observations of its root), the first on ties.
                    let hist = Histories::get();
                    let v = (0..WAYS)
                        .map(|j| base + j * SLOT)
                        .min_by_key(|&a| hist.total(self.slots[a + 1]))
                        .unwrap_or(base);
                    self.slots[v] = check;
                    self.slots[v + 1..v + SLOT].fill(0);
                    if let Some(t) = self.tiles.as_mut() {
                        t[v / SLOT] = (h >> (self.slot_mask + 1).trailing_zeros()) as u8;
                    }
                    v
                }
            };
            lb.slot[k] = chosen;
        }
    }

    /// Probability (16 bits) that lane `l`'s next bit is 1.
    pub fn predict_bit(&mut self, l: usize) -> u32 {
        if self.bits[l].nib == 1 {
            self.select_slots(l);
        }
        let st = stretch_table();
        let lb = &self.bits[l];
        let x = &mut self.x;
        let n = self.kinds.len();
        let states: [u8; N] = states_at(&self.slots, &lb.slot[..n], lb.nib);
        let seen = states[..self.orders]
            .iter()
            .filter(|&&s| s != 0)
            .count()
            .min(7);
        for ((xk, map), &s) in x[..n].iter_mut().zip(&self.maps).zip(&states) {
            *xk = st[map.p12(s)];
        }
        x[n] = st[counter_p12(self.t0[lb.c0 as usize])];
        x[n + 1] = st[counter_p12(self.t1[(lb.b1 as usize) << 8 | lb.c0 as usize])];
        // The chain: each order's bit history scales and shifts the order below's prediction.
        let mut v = x[n + 1];
        for (k, (&s, at)) in states.iter().zip(&mut self.chain_at).enumerate() {
            let i = k * 256 + s as usize;
            let w = self.chain_w[i];
            let out = (w[0] * v + w[1]).clamp(-15.0, 15.0);
            *at = (i, v, out);
            v = out;
        }
        x[n + 6] = v;
        let bitpos = 31 - lb.c0.leading_zeros(); // bits already seen, 0..=7
        (x[n + 2], x[n + 5]) = match (lb.match_ok, lb.match_byte) {
            (true, Some(mb)) => {
                let expect = ((mb as u32) >> (7 - bitpos)) & 1;
                let sign = if expect == 1 { 1.0 } else { -1.0 };
                (
                    st[counter_p12(self.tm[lb.match_bucket * 2 + expect as usize])],
                    sign * lb.match_bucket as f32 * 0.25,
                )
            }
            _ => (0.0, 0.0),
        };
        let net = self.net.bit(l, lb.c0, bitpos);
        x[n + 3] = net.stretched;
        if self.net.shaped() {
            x[n + N_EXTRA..n + N_EXTRA + N_NET].copy_from_slice(&net.extra);
        }
        x[n + 4] = 0.25;
        let n_base = n + N_EXTRA + self.net.shaped() as usize * N_NET;
        if let Some(w) = self.wide.as_mut().filter(|_| Self::WIDE) {
            let at = n_base + self.bilevel.is_some() as usize * N_BILEVEL;
            w.inputs(l, lb.c0, bitpos, &states[..n], self.orders, x, at);
        }
        let mut bilevel_out = None;
        // The final mixer's weight set: by the partial byte, or in the wide model (whose
        // mixers see it) by the match and the bit position; in a bilevel image, by the pixels
        // where it has rows above.
        let mut final_sel = match (self.wide.as_ref().filter(|_| Self::WIDE), &self.bilevel) {
            (Some(_), None) => lb.match_bucket << 3 | bitpos as usize,
            _ => lb.c0 as usize,
        };
        if let Some((expert, mixer)) = self.bilevel.as_mut() {
            expert.predict(
                &lb.pixels,
                lb.c0,
                bitpos,
                &mut x[n_base..n_base + N_BILEVEL],
            );
            let sel = Bilevel::select(&lb.pixels, lb.c0, bitpos);
            bilevel_out = Some(mixer.mix(x, sel).0);
            // The pixels select the final mixer's set among those the partial byte selects
            // otherwise, which have learnt from the block's first row.
            if sel != 0 {
                final_sel = sel;
            }
        }
        let (sa, pa) = self.mix_a.mix(x, lb.c0 as usize);
        if self.lean {
            let p16 = to_p16(pa);
            let pb = self.apm_b.refine(sa, (lb.c0 | lb.b1 << 8) as usize);
            return ((p16 + pb) / 2).clamp(1, 65535);
        }
        let (sb, _) = self.mix_b.mix(x, lb.match_bucket * 8 + bitpos as usize);
        let (sc, _) = self.mix_c.mix(x, (lb.b1 * 4 + lb.pos_mod) as usize);
        // Weight set by how many orders have seen this context, the bit, whether a match
        // predicts, and whether the byte before is ASCII.
        let novelty = ((net.bucket * 8 + seen) * 8 + bitpos as usize) * 4;
        let (sd, _) = self.mix_d.mix(
            x,
            novelty + (lb.match_bucket > 0) as usize * 2 + (lb.b1 >= 128) as usize,
        );
        // The first layer's outputs, then the network's where it is shaped, then the bilevel
        // mixer's where there is one, then the wide model's mixers'.
        let mut first = [sa, sb, sc, sd, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        let net_at = 4 + self.net.shaped() as usize;
        first[4] = x[n + 3];
        first[net_at] = bilevel_out.unwrap_or(first[net_at]);
        if let Some(w) = self.wide.as_mut().filter(|_| Self::WIDE) {
            let at = net_at + self.bilevel.is_some() as usize;
            let bytes = [lb.b1, lb.b2, lb.b34 & 0xff, lb.b34 >> 8];
            first[at..at + 4].copy_from_slice(&w.mix(x, bytes, lb.c0, bitpos));
        }
        let (s, _) = self.mix_final.mix(&first, net.bucket << 8 | final_sel);
        let p16 = to_p16(super::mixing::squash(s));
        let pa = self.apm_a.refine(s, net.bucket << 8 | lb.c0 as usize);
        let pb = self.apm_b.refine(s, (lb.c0 | lb.b1 << 8) as usize);
        let pc = self.apm_c.refine(s, (lb.c0 | lb.h2) as usize);
        match self.bilevel.as_mut().and_then(|(e, _)| e.refine(s)) {
            Some(pd) => ((p16 * 2 + pa + pb + 2 * pc + 2 * pd) / 8).clamp(1, 65535),
            None => ((p16 * 2 + pa + pb + 2 * pc) / 6).clamp(1, 65535),
        }
    }

    /// Learns lane `l`'s bit (after `predict_bit`).
    pub fn update_bit(&mut self, l: usize, bit: bool) {
        let b = bit as u32;
        let lb = &mut self.bits[l];
        for &(i, input, out) in &self.chain_at {
            let err = (b as f32 - super::mixing::squash(out)) * CHAIN_LR;
            let w = &mut self.chain_w[i];
            w[0] += err * input;
            w[1] += err;
        }
        let hist = Histories::get();
        // The histories as predicted from (two contexts may share a slot, which the first
        // update then changes for the second).
        let states: [u8; N] = states_at(&self.slots, &lb.slot[..self.kinds.len()], lb.nib);
        for ((map, &s), &slot) in self.maps.iter_mut().zip(&states).zip(&lb.slot) {
            map.update(s, b);
            let s = &mut self.slots[slot + lb.nib as usize];
            *s = hist.next(*s, b);
        }
        counter_update(&mut self.t0[lb.c0 as usize], b, LIMIT_DENSE);
        counter_update(
            &mut self.t1[(lb.b1 as usize) << 8 | lb.c0 as usize],
            b,
            LIMIT_DENSE,
        );
        let bitpos = 31 - lb.c0.leading_zeros();
        if let (true, Some(mb)) = (lb.match_ok, lb.match_byte) {
            let expect = ((mb as u32) >> (7 - bitpos)) & 1;
            counter_update(
                &mut self.tm[lb.match_bucket * 2 + expect as usize],
                b,
                LIMIT_DENSE,
            );
            if expect != b {
                lb.match_ok = false;
            }
        }
        if let Some(w) = self.wide.as_mut().filter(|_| Self::WIDE) {
            w.update(b);
        }
        self.mix_a.update(b);
        self.apm_b.update(b);
        self.net.update(b);
        if let Some((expert, mixer)) = self.bilevel.as_mut() {
            expert.update(b);
            mixer.update(b);
        }
        if !self.lean {
            self.mix_b.update(b);
            self.mix_c.update(b);
            self.mix_d.update(b);
            self.mix_final.update(b);
            self.apm_a.update(b);
            self.apm_c.update(b);
        }
        lb.c0 = (lb.c0 << 1) | b;
        lb.nib = (lb.nib << 1) | b;
        if lb.nib >= 16 {
            lb.nib = 1;
        }
    }

    /// Ends `step`: records the lanes' bytes and updates per-lane and network state.
    pub fn end_step(&mut self, step: usize, bytes: &[u8]) {
        let lanes = self.lanes;
        self.net.learn(bytes);
        for (l, &y) in bytes.iter().enumerate() {
            self.hist[lanes.history_pos(l, step)] = y;
            if let Some(w) = self.wide.as_mut().filter(|_| Self::WIDE) {
                w.runs.end(l, &self.bits[l].ctx, y);
            }
        }
        let done = step + 1;
        for l in 0..bytes.len() {
            let (start, pos) = (lanes.history_start(l), lanes.history_pos(l, step));
            self.matches
                .update(&self.hist, start, pos, &mut self.states[l], |q| {
                    lanes.known(q, done)
                });
        }
    }
}
