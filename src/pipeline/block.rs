//! One block: run the predictor over its bytes and range-code them, or store them raw.

use crate::coder::{quantize, FreqTable, LaneDecoder, LaneEncoder};
use crate::error::{Error, Result};
use crate::format::Codec;
use crate::model::ModelConfig;

/// Bytes between two progress reports.
const PROGRESS_EVERY: usize = 1 << 16;

/// Progress callback: called with the number of input bytes just finished.
pub type ProgressFn<'a> = &'a (dyn Fn(u64) + Sync);

/// Codes one block; falls back to storing it when coding would not make it smaller.
pub fn encode_block(data: &[u8], model: &ModelConfig, progress: ProgressFn) -> (Codec, Vec<u8>) {
    let mut predictor = model.build();
    let mut probs = [0f32; 256];
    let mut table = FreqTable::default();
    let mut enc = LaneEncoder::new();
    for chunk in data.chunks(PROGRESS_EVERY) {
        for &b in chunk {
            predictor.predict(&mut probs);
            quantize(&probs, &mut table);
            enc.encode(b, &table);
            predictor.update(b);
        }
        progress(chunk.len() as u64);
    }
    let payload = enc.finish();
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
        Codec::Model => {
            let mut predictor = model.build();
            let mut probs = [0f32; 256];
            let mut table = FreqTable::default();
            let mut dec = LaneDecoder::new(&payload)?;
            let mut out = vec![0u8; raw_len];
            for chunk in out.chunks_mut(PROGRESS_EVERY) {
                for slot in chunk.iter_mut() {
                    predictor.predict(&mut probs);
                    quantize(&probs, &mut table);
                    let b = dec.decode(&table)?;
                    *slot = b;
                    predictor.update(b);
                }
                progress(chunk.len() as u64);
            }
            Ok(out)
        }
    }
}
