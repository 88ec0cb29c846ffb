//! The context-mixing codec's block loop: the predictor's bits range-coded lane by lane, the
//! encoder's coding on a second thread beside the predictor, the decoder's inline.

use super::bilevel::WIDTH_MIN;
use super::fast::FastPredictor;
use super::pack::{Geometry, Pack};
use super::predictor::{Fit, Params, Predictor, WidePredictor};
use super::tables::Workspace;
use crate::codecs::block_codec::ProgressFn;
use crate::codecs::net::frozen::Frozen;
use crate::entropy::{BitDecoder, BitEncoder};
use crate::error::{Error, Result};
use crossbeam_channel::bounded;
use std::borrow::Cow;
use std::sync::Arc;

/// Bytes between two progress reports.
const PROGRESS_EVERY: usize = 1 << 16;
/// Coded bits per message from the producer to the coding consumer.
const BATCH: usize = 4096;
/// Messages in flight between producer and consumer.
const QUEUE: usize = 4;
/// Transforms byte: the x86 call transform.
const X86: u8 = 1;
/// Transforms byte: the model starts from the archive's pack.
const PACKED: u8 = 2;
/// Transforms byte (with `PACKED`): the model's tables are sized to the block (`Fit::Sized`;
/// without it, `Fit::Grown`).
const SIZED: u8 = 4;
/// Transforms byte (without `PACKED`): the block is coded with the default level's model
/// (`Params::default_variant`) rather than the archive's level's.
const DEFAULT_MODEL: u8 = 8;
/// Transforms byte (without `PACKED` or `DEFAULT_MODEL`): the bilevel image expert joins the
/// model, for rows of the length (`u32`) that follows the byte (`Params::bilevel`).
const BILEVEL: u8 = 16;
/// Transforms byte (without `PACKED` or `DEFAULT_MODEL`): the wide model (`Params::wide`).
const WIDE: u8 = 32;
/// Shortest block the wide model may code: its tables and mixers take a few milliseconds to
/// set up whatever the block's length, which decoding this many bytes outweighs, so that an
/// archive of many tiny blocks cannot multiply that.
const WIDE_MIN: usize = 4 << 10;

/// Reports coded bytes to a progress callback, `PROGRESS_EVERY` or more at a time.
struct Reporter<'a> {
    progress: ProgressFn<'a>,
    pending: usize,
}

impl<'a> Reporter<'a> {
    fn new(progress: ProgressFn<'a>) -> Self {
        Reporter {
            progress,
            pending: 0,
        }
    }

    /// Counts `n` more bytes, reporting once enough have gathered.
    fn add(&mut self, n: usize) {
        self.pending += n;
        if self.pending >= PROGRESS_EVERY {
            (self.progress)(self.pending as u64);
            self.pending = 0;
        }
    }

    /// Reports what is left.
    fn finish(self) {
        (self.progress)(self.pending as u64);
    }
}

/// Packs a lane index, a 16-bit probability and a bit into one queue entry.
#[inline]
fn pack(lane: usize, p: u32, bit: bool) -> u64 {
    (lane as u64) << 17 | (p as u64) << 1 | bit as u64
}

/// `data` through the x86 call transform where it looks like machine code (then owned), else
/// as it is.
fn through_calls(data: &[u8]) -> Cow<'_, [u8]> {
    match crate::codecs::x86::detect(data) {
        true => {
            let mut t = data.to_vec();
            crate::codecs::x86::encode(&mut t);
            Cow::Owned(t)
        }
        false => Cow::Borrowed(data),
    }
}

/// Encodes `data` with the predictor built in `ws` (starting from `pack`'s state where given);
/// returns the payload and the workspace.
pub fn encode(
    data: &[u8],
    cfg: Params,
    pack: Option<&Pack>,
    ws: Workspace,
    progress: ProgressFn,
) -> (Vec<u8>, Workspace) {
    let data = through_calls(data);
    let x86 = matches!(data, Cow::Owned(_));
    let data = &data[..];
    // The default level's model for this block, where asked and there is one (never with a
    // pack, which was trained for the level's model).
    let variant = cfg.default_model.then(|| cfg.default_variant()).flatten();
    let variant = variant.filter(|_| pack.is_none());
    let mut cfg = variant.unwrap_or(cfg);
    // The bilevel expert and the wide model run in a block of the level's own model that
    // starts fresh.
    if pack.is_some() || cfg.fast || cfg.lean {
        cfg.bilevel = 0;
        cfg.wide = false;
    }
    cfg.wide &= data.len() >= WIDE_MIN;
    let (mut streams, ws) = match cfg.fast {
        // The fast predictor leaves little work to a coding thread: it codes inline.
        true => {
            let mut model = FastPredictor::new_in(cfg, data.len(), ws);
            let streams = code_inline(data, &mut model, progress);
            (streams, model.into_workspace())
        }
        false if cfg.wide => {
            let pack = pack.map(|p| (p, Fit::Sized));
            let mut model = WidePredictor::new_in(cfg, data.len(), ws, pack);
            let streams = code_beside(data, &mut model, progress);
            (streams, model.into_workspace())
        }
        false => {
            let pack = pack.map(|p| (p, Fit::Sized));
            let mut model = <Predictor>::new_in(cfg, data.len(), ws, pack);
            let streams = code_beside(data, &mut model, progress);
            (streams, model.into_workspace())
        }
    };
    // A payload holds at least 1/`CM_MAX_RATIO` of its block (which bounds the work an
    // archive may ask): a block predicted better than that (text a pack has seen) gets zero
    // words after its last lane's stream, which the range decoder reads as the stream's end.
    let bilevel = cfg.bilevel != 0;
    let size =
        3 + 4 * bilevel as usize + 4 * streams.len() + streams.iter().map(Vec::len).sum::<usize>();
    let least = (data.len() as u64 / crate::format::CM_MAX_RATIO) as usize;
    let pad = least.saturating_sub(size).next_multiple_of(4);
    if let Some(last) = streams.last_mut() {
        last.resize(last.len() + pad, 0);
    }
    let mut out = Vec::with_capacity(size + pad);
    let packed = pack.is_some() && !cfg.fast;
    let default_model = if variant.is_some() { DEFAULT_MODEL } else { 0 };
    let bilevel_flag = if bilevel { BILEVEL } else { 0 };
    out.push(
        if x86 { X86 } else { 0 }
            | if packed { PACKED | SIZED } else { 0 }
            | default_model
            | bilevel_flag
            | if cfg.wide { WIDE } else { 0 },
    );
    if bilevel {
        out.extend_from_slice(&cfg.bilevel.to_le_bytes());
    }
    out.extend_from_slice(&(streams.len() as u16).to_le_bytes());
    for s in &streams {
        out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    }
    for s in &streams {
        out.extend_from_slice(s);
    }
    (out, ws)
}

/// Trains the predictor of `cfg` on `data` (coding nothing), with tables of `geometry`;
/// returns its learnt state with the last `history` bytes of the data (rounded down to whole
/// `pack::HISTORY_ALIGN`s): what a pack holds. With a `base` pack's state, the model starts
/// from its shared tables (`Predictor::start_from`).
pub fn train(
    data: &[u8],
    cfg: Params,
    geometry: Geometry,
    history: usize,
    network: Option<Arc<Frozen>>,
    base: Option<&super::pack::State>,
    progress: ProgressFn,
) -> Result<super::pack::State> {
    // Blocks of machine code are seen through the call transform: so is their training data.
    let data = &through_calls(data)[..];
    let mut model = Predictor::for_training(cfg, data.len(), geometry, network);
    if let Some(b) = base {
        model.start_from(b)?;
    }
    run(data, &mut model, progress, |_, _, _| {});
    let mut state = model.state();
    let keep = history.min(data.len()) / super::pack::HISTORY_ALIGN * super::pack::HISTORY_ALIGN;
    state.history = data[data.len() - keep..].to_vec();
    Ok(state)
}

/// What the coding loops need of a predictor.
trait Model {
    fn lanes(&self) -> crate::codecs::lanes::Lanes;
    fn begin_step(&mut self, step: usize, active: usize);
    fn predict_bit(&mut self, lane: usize) -> u32;
    fn update_bit(&mut self, lane: usize, bit: bool);
    fn end_step(&mut self, step: usize, bytes: &[u8]);
    fn into_workspace(self) -> Workspace;
}

/// Implements `Model` by the predictor's own methods of the same names.
macro_rules! model {
    ($t:ty) => {
        impl Model for $t {
            fn lanes(&self) -> crate::codecs::lanes::Lanes {
                <$t>::lanes(self)
            }
            #[inline(always)]
            fn begin_step(&mut self, step: usize, active: usize) {
                <$t>::begin_step(self, step, active)
            }
            #[inline(always)]
            fn predict_bit(&mut self, lane: usize) -> u32 {
                <$t>::predict_bit(self, lane)
            }
            #[inline(always)]
            fn update_bit(&mut self, lane: usize, bit: bool) {
                <$t>::update_bit(self, lane, bit)
            }
            #[inline(always)]
            fn end_step(&mut self, step: usize, bytes: &[u8]) {
                <$t>::end_step(self, step, bytes)
            }
            fn into_workspace(self) -> Workspace {
                <$t>::into_workspace(self)
            }
        }
    };
}
model!(Predictor);
model!(WidePredictor);
model!(FastPredictor);

/// Range-codes `data` by `model`'s predictions on a second thread while the model runs on
/// this one; returns each lane's stream.
fn code_beside(data: &[u8], model: &mut impl Model, progress: ProgressFn) -> Vec<Vec<u8>> {
    let lanes = model.lanes();
    let (full_tx, full_rx) = bounded::<Vec<u64>>(QUEUE);
    let (free_tx, free_rx) = bounded::<Vec<u64>>(QUEUE + 2);
    for _ in 0..QUEUE + 2 {
        let _ = free_tx.send(Vec::with_capacity(BATCH));
    }
    std::thread::scope(|s| {
        // Consumer: owns the lanes' range coders.
        let consumer = s.spawn(move || {
            let mut encs: Vec<BitEncoder> = (0..lanes.count).map(|_| BitEncoder::new()).collect();
            for mut batch in full_rx {
                for &e in &batch {
                    let lane = (e >> 17) as usize;
                    encs[lane].encode_bit(e & 1 != 0, ((e >> 1) & 0xffff) as u32);
                }
                batch.clear();
                let _ = free_tx.send(batch);
            }
            encs.into_iter().map(BitEncoder::finish).collect::<Vec<_>>()
        });
        // Producer: the model.
        let mut batch = free_rx.recv().unwrap_or_default();
        run(data, model, progress, |l, p, bit| {
            batch.push(pack(l, p, bit));
            if batch.len() >= BATCH {
                let next = free_rx.recv().unwrap_or_default();
                let _ = full_tx.send(std::mem::replace(&mut batch, next));
            }
        });
        let _ = full_tx.send(batch);
        drop(full_tx);
        consumer
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// Range-codes `data` by `model`'s predictions on this thread; returns each lane's stream.
/// The loop of `run`, written out with the coders beside the lanes: through `run`'s closure
/// the range coder's step is not inlined, which costs the fast predictor 3% more instructions.
fn code_inline(data: &[u8], model: &mut impl Model, progress: ProgressFn) -> Vec<Vec<u8>> {
    let lanes = model.lanes();
    let mut encs: Vec<BitEncoder> = (0..lanes.count).map(|_| BitEncoder::new()).collect();
    let mut bytes = vec![0u8; lanes.count];
    let mut reported = Reporter::new(progress);
    for step in 0..lanes.steps() {
        let active = lanes.active(step);
        model.begin_step(step, active);
        for (l, (byte, enc)) in bytes.iter_mut().zip(&mut encs).enumerate().take(active) {
            let b = data[lanes.start(l) + step];
            *byte = b;
            for i in (0..8).rev() {
                let bit = (b >> i) & 1 != 0;
                enc.encode_bit(bit, model.predict_bit(l));
                model.update_bit(l, bit);
            }
        }
        model.end_step(step, &bytes[..active]);
        reported.add(active);
    }
    reported.finish();
    encs.into_iter().map(BitEncoder::finish).collect()
}

/// Runs `model` over `data` as the encoder does, lanes in lockstep: each bit is predicted,
/// handed to `coded(lane, probability, bit)`, then learnt.
fn run(
    data: &[u8],
    model: &mut impl Model,
    progress: ProgressFn,
    mut coded: impl FnMut(usize, u32, bool),
) {
    let lanes = model.lanes();
    let mut bytes = vec![0u8; lanes.count];
    let mut reported = Reporter::new(progress);
    for step in 0..lanes.steps() {
        let active = lanes.active(step);
        model.begin_step(step, active);
        for (l, byte) in bytes.iter_mut().enumerate().take(active) {
            let b = data[lanes.start(l) + step];
            *byte = b;
            for i in (0..8).rev() {
                let bit = (b >> i) & 1 != 0;
                coded(l, model.predict_bit(l), bit);
                model.update_bit(l, bit);
            }
        }
        model.end_step(step, &bytes[..active]);
        reported.add(active);
    }
    reported.finish();
}

/// The model the payload's transforms byte `t` says codes the block: the archive's level's
/// (`cfg`) or the default level's in its place (`Params::default_variant`), with the bilevel
/// expert for rows of `width` bytes (0: none, as `t` says) and wide where `t` says so, for a
/// block of `raw_len` bytes.
fn model_of(t: u8, width: u32, cfg: Params, raw_len: usize) -> Result<Params> {
    let corrupt = |what: &str| Err(Error::Corrupt(format!("context-mixing block: {what}")));
    let mut cfg = match t & DEFAULT_MODEL {
        0 => cfg,
        _ => match cfg.default_variant() {
            Some(v) => v,
            None => return corrupt("a default model where there is none"),
        },
    };
    if t & BILEVEL != 0 && (cfg.fast || cfg.lean || (width as usize) < WIDTH_MIN) {
        return corrupt("a bilevel image expert the model may not have");
    }
    if t & WIDE != 0 && (cfg.fast || cfg.lean) {
        return corrupt("a wide model of the fastest levels");
    }
    if t & WIDE != 0 && raw_len < WIDE_MIN {
        return corrupt("a wide model for a block under 4 KiB");
    }
    cfg.bilevel = width;
    cfg.wide = t & WIDE != 0;
    Ok(cfg)
}

/// The transforms byte of `payload`, the bilevel expert's row length (0: none) and the rest of
/// the payload; `None` where it is too short.
fn split_head(payload: &[u8]) -> Option<(u8, u32, &[u8])> {
    let (&t, rest) = payload.split_first()?;
    match t & BILEVEL {
        0 => Some((t, 0, rest)),
        _ => {
            let (w, rest) = rest.split_first_chunk::<4>()?;
            Some((t, u32::from_le_bytes(*w), rest))
        }
    }
}

/// How the payload's transforms byte `t` says the model starts: fresh, or from `pack` (the
/// archive's) fitted to it; an error where the byte is not one a decoder accepts.
fn start(t: u8, cfg: Params, pack: Option<&Pack>) -> Result<Option<(&Pack, Fit)>> {
    let corrupt = |what: &str| Err(Error::Corrupt(format!("context-mixing block: {what}")));
    let both = PACKED | DEFAULT_MODEL;
    if t & !(X86 | both | SIZED | BILEVEL | WIDE) != 0
        || t & (PACKED | SIZED) == SIZED
        || t & both == both
        || (t & (BILEVEL | WIDE) != 0 && t & both != 0)
    {
        return corrupt("unknown transforms");
    }
    let fit = match t & SIZED {
        0 => Fit::Grown,
        _ => Fit::Sized,
    };
    match (t & PACKED != 0, pack) {
        (false, _) => Ok(None),
        (true, Some(p)) if !cfg.fast => Ok(Some((p, fit))),
        (true, _) => corrupt("starts from a pack it may not use"),
    }
}

/// The most bytes decoding `payload`, a block of `raw_len` bytes, allocates besides the block
/// and the payload: its model's tables, fresh or from the pack (`pack`, the archive's) as the
/// payload says. 0 for a payload the decoder refuses before allocating.
pub fn need(payload: &[u8], raw_len: usize, cfg: Params, pack: Option<&Pack>) -> u64 {
    let Some(Ok((start, cfg))) = split_head(payload).map(|(t, width, _)| {
        start(t, cfg, pack).and_then(|s| Ok((s, model_of(t, width, cfg, raw_len)?)))
    }) else {
        return 0;
    };
    match cfg.fast {
        true => FastPredictor::need(cfg, raw_len),
        false => Predictor::need(cfg, raw_len, start),
    }
}

/// Decodes a payload of `raw_len` bytes with the predictor built in `ws` (starting from
/// `pack`'s state where the payload says so: `pack` is the archive's), appending them to
/// `out`; returns the workspace.
pub fn decode(
    payload: &[u8],
    raw_len: usize,
    cfg: Params,
    pack: Option<&Pack>,
    ws: Workspace,
    progress: ProgressFn,
    out: &mut Vec<u8>,
) -> (Result<()>, Workspace) {
    let corrupt = |what: &str| Err(Error::Corrupt(format!("context-mixing block: {what}")));
    let Some((t, width, rest)) = split_head(payload) else {
        return (corrupt("payload too short"), ws);
    };
    let (pack, cfg) =
        match start(t, cfg, pack).and_then(|p| Ok((p, model_of(t, width, cfg, raw_len)?))) {
            Ok(started) => started,
            Err(e) => return (Err(e), ws),
        };
    // A lane count the block does not have is refused before the model's tables are built.
    let lanes = match cfg.fast {
        true => FastPredictor::lanes_for(raw_len).count,
        false => {
            let history = pack.map_or(0, |(p, _)| p.state.history.len());
            Predictor::lanes_for(cfg, raw_len, history).count
        }
    };
    if rest.get(..2) != Some(&(lanes as u16).to_le_bytes()[..]) {
        return (corrupt("lane count does not match the block"), ws);
    }
    let (done, ws) = match cfg.fast {
        true => decode_in(
            FastPredictor::new_in(cfg, raw_len, ws),
            rest,
            raw_len,
            progress,
            out,
        ),
        false if cfg.wide => decode_in(
            WidePredictor::new_in(cfg, raw_len, ws, pack),
            rest,
            raw_len,
            progress,
            out,
        ),
        false => decode_in(
            <Predictor>::new_in(cfg, raw_len, ws, pack),
            rest,
            raw_len,
            progress,
            out,
        ),
    };
    let done = done.map(|()| {
        if t & X86 != 0 {
            let start = out.len() - raw_len;
            crate::codecs::x86::decode(&mut out[start..]);
        }
    });
    (done, ws)
}

/// Decodes the lanes of `payload` (after its transforms byte) with `model` onto `out`,
/// which is left as it was on an error.
fn decode_in(
    mut model: impl Model,
    payload: &[u8],
    raw_len: usize,
    progress: ProgressFn,
    out: &mut Vec<u8>,
) -> (Result<()>, Workspace) {
    let start = out.len();
    out.resize(start + raw_len, 0);
    let done = decode_with(&mut model, payload, &mut out[start..], progress);
    if done.is_err() {
        out.truncate(start);
    }
    (done, model.into_workspace())
}

/// Decodes the lanes of `payload` into `out`, the block's bytes.
fn decode_with(
    model: &mut impl Model,
    payload: &[u8],
    out: &mut [u8],
    progress: ProgressFn,
) -> Result<()> {
    let lanes = model.lanes();
    let corrupt = |what: &str| Error::Corrupt(format!("lane layout: {what}"));
    // The lane count, its first two bytes, `decode` has checked.
    if payload.len() < 2 + 4 * lanes.count {
        return Err(corrupt("too short"));
    }
    let mut at = 2 + 4 * lanes.count;
    let mut decs = Vec::with_capacity(lanes.count);
    for l in 0..lanes.count {
        let o = 2 + 4 * l;
        let len = u32::from_le_bytes([payload[o], payload[o + 1], payload[o + 2], payload[o + 3]])
            as usize;
        let end = at
            .checked_add(len)
            .filter(|&e| e <= payload.len())
            .ok_or_else(|| corrupt("lane overruns the payload"))?;
        decs.push(BitDecoder::new(&payload[at..end])?);
        at = end;
    }
    if at != payload.len() {
        return Err(corrupt("bytes after the last lane"));
    }
    let mut bytes = vec![0u8; lanes.count];
    let mut reported = Reporter::new(progress);
    for step in 0..lanes.steps() {
        let active = lanes.active(step);
        model.begin_step(step, active);
        for (l, dec) in decs.iter_mut().enumerate().take(active) {
            let mut b = 0u8;
            for _ in 0..8 {
                let bit = dec.decode_bit(model.predict_bit(l))?;
                model.update_bit(l, bit);
                b = (b << 1) | bit as u8;
            }
            bytes[l] = b;
            out[lanes.start(l) + step] = b;
        }
        model.end_step(step, &bytes[..active]);
        reported.add(active);
    }
    reported.finish();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wide_model_is_only_a_fresh_block_of_the_levels_own_model() {
        let nine = super::super::CmConfig::for_level(9).params;
        assert!(matches!(start(WIDE, nine, None), Ok(None)));
        assert!(model_of(WIDE, 0, nine, WIDE_MIN).is_ok_and(|p| p.wide));
        assert!(model_of(0, 0, nine, WIDE_MIN).is_ok_and(|p| !p.wide));
        // Not for a tiny block, whose set-up would outweigh its decoding.
        assert!(model_of(WIDE, 0, nine, WIDE_MIN - 1).is_err());
        // Not with the default level's model, nor from a pack.
        assert!(start(WIDE | DEFAULT_MODEL, nine, None).is_err());
        assert!(start(WIDE | PACKED | SIZED, nine, None).is_err());
        // Nor in the fastest levels' models.
        let one = super::super::CmConfig::for_level(1).params;
        assert!(model_of(WIDE, 0, one, WIDE_MIN).is_err());
    }
}
