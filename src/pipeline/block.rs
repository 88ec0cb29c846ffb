//! One block: run the predictor over its bytes and range-code them, or store them raw.

use crate::coder::{LaneDecoder, LaneEncoder};
use crate::error::{Error, Result};
use crate::format::Codec;
use crate::model::{ModelConfig, NeuralConfig, NeuralModel};

/// Bytes between two progress reports.
const PROGRESS_EVERY: usize = 1 << 16;

/// Progress callback: called with the number of input bytes just finished.
pub type ProgressFn<'a> = &'a (dyn Fn(u64) + Sync);

/// Codes one block; falls back to storing it when coding would not make it smaller.
pub fn encode_block(data: &[u8], model: &ModelConfig, progress: ProgressFn) -> (Codec, Vec<u8>) {
    let payload = match model {
        ModelConfig::Neural(_, cfg) => encode_lanes(data, *cfg, progress),
    };
    if payload.len() < data.len() {
        (Codec::Model, payload)
    } else {
        (Codec::Stored, data.to_vec())
    }
}

/// Decodes one block's payload back into `raw_len` bytes.
pub fn decode_block(
    codec: Codec,
    payload: Vec<u8>,
    raw_len: usize,
    model: &ModelConfig,
    progress: ProgressFn,
) -> Result<Vec<u8>> {
    match codec {
        Codec::Stored => {
            if payload.len() != raw_len {
                return Err(Error::Corrupt("stored block length mismatch".into()));
            }
            progress(raw_len as u64);
            Ok(payload)
        }
        Codec::Model => match model {
            ModelConfig::Neural(_, cfg) => decode_lanes(&payload, raw_len, *cfg, progress),
        },
    }
}

/// Lane payload: lane count (u16), each lane's coded length (u32), then the lanes' streams.
fn encode_lanes(data: &[u8], cfg: NeuralConfig, progress: ProgressFn) -> Vec<u8> {
    let mut model = NeuralModel::new(cfg, data.len());
    let lanes = model.lanes();
    let mut encs: Vec<LaneEncoder> = (0..lanes.count).map(|_| LaneEncoder::new()).collect();
    let mut bytes = vec![0u8; lanes.count];
    let mut pending = 0usize;
    for step in 0..lanes.steps() {
        let active = lanes.active(step);
        model.begin_step(step, active);
        for (l, enc) in encs.iter_mut().enumerate().take(active) {
            let b = data[lanes.start(l) + step];
            bytes[l] = b;
            for i in (0..8).rev() {
                let bit = (b >> i) & 1 != 0;
                enc.encode_bit(bit, model.predict_bit(l));
                model.update_bit(l, bit);
            }
        }
        model.end_step(step, &bytes[..active]);
        pending += active;
        if pending >= PROGRESS_EVERY {
            progress(pending as u64);
            pending = 0;
        }
    }
    progress(pending as u64);
    let streams: Vec<Vec<u8>> = encs.into_iter().map(LaneEncoder::finish).collect();
    let mut out =
        Vec::with_capacity(2 + 4 * streams.len() + streams.iter().map(Vec::len).sum::<usize>());
    out.extend_from_slice(&(lanes.count as u16).to_le_bytes());
    for s in &streams {
        out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    }
    for s in &streams {
        out.extend_from_slice(s);
    }
    out
}

fn decode_lanes(
    payload: &[u8],
    raw_len: usize,
    cfg: NeuralConfig,
    progress: ProgressFn,
) -> Result<Vec<u8>> {
    let mut model = NeuralModel::new(cfg, raw_len);
    let lanes = model.lanes();
    let corrupt = |what: &str| Error::Corrupt(format!("lane layout: {what}"));
    if payload.len() < 2 + 4 * lanes.count {
        return Err(corrupt("too short"));
    }
    if u16::from_le_bytes([payload[0], payload[1]]) as usize != lanes.count {
        return Err(corrupt("lane count does not match the block"));
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
        decs.push(LaneDecoder::new(&payload[at..end])?);
        at = end;
    }
    if at != payload.len() {
        return Err(corrupt("bytes after the last lane"));
    }
    let mut out = vec![0u8; raw_len];
    let mut bytes = vec![0u8; lanes.count];
    let mut pending = 0usize;
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
        pending += active;
        if pending >= PROGRESS_EVERY {
            progress(pending as u64);
            pending = 0;
        }
    }
    progress(pending as u64);
    Ok(out)
}
