//! Compressing: the archive's header, each block coded by the choice on the workers and
//! written in order, the block table and trailer.

use super::buffers::Buffers;
use super::counting::{noop, Counting};
use super::options::{Options, Stats};
use super::plan::{Known, Plan};
use super::source::{Bytes, Source};
use super::workers::{run_ordered, Pull, INLINE_MAX};
use crate::choice::base::find;
use crate::choice::{code_block, Place, Setup};
use crate::codecs::cm::{CmConfig, CpuBackend};
use crate::codecs::ProgressFn;
use crate::containers::Kind;
use crate::engine::ENGINE_VERSION;
use crate::error::{Error, Result};
use crate::format::checksum::xxh3_64;
use crate::format::{
    pack_allowed, BlockRecord, Codec, DataHash, Header, Part, TableEntry, Trailer,
};
use std::io::Write;

/// Compresses `input`, of which `known` is known, into `output` as a complete archive, its
/// context-mixing blocks with `cm`.
pub(crate) fn compress<'a>(
    input: &mut impl Source<'a>,
    output: &mut impl Write,
    opts: &Options,
    cm: &CmConfig,
    known: Known,
) -> Result<Stats> {
    compress_blocks(input, output, opts, cm, known, None)
}

/// `compress`, of every block or, for a part, of blocks `first_block..` up to the part's end
/// (the others are read and skipped).
pub(super) fn compress_blocks<'a>(
    input: &mut impl Source<'a>,
    output: &mut impl Write,
    opts: &Options,
    cm: &CmConfig,
    mut known: Known,
    part: Option<(Part, u64)>,
) -> Result<Stats> {
    opts.validate()?;
    let backend = CpuBackend::default();
    let deltas = std::mem::take(&mut known.deltas);
    // The archive needs the base only where a tensor matched one of it.
    let base = opts.base.as_ref().filter(|_| !deltas.is_empty());
    let mut plan = Plan::new(opts, known);
    let tensor_file = plan.segments.iter().any(|s| s.kind.is_tensor());
    let header = Header {
        version: crate::format::VERSION,
        flags: 0,
        engine_version: ENGINE_VERSION,
        block_size: plan.cap,
        cm_config: cm.to_bytes(),
        part: part.map(|(p, _)| p),
        base: base.map(|b| b.id),
    };
    let mut out = Counting {
        inner: output,
        count: 0,
    };
    out.write_all(&header.to_bytes())?;
    let mut hasher = DataHash::default();
    let mut table = Vec::new();
    let mut total = 0u64;
    let progress: ProgressFn = match &opts.progress {
        Some(p) => p.as_ref(),
        None => &noop,
    };
    let (blocks, payloads) = (Buffers::new(), Buffers::new());
    let returns = input.returns();
    let (first, end) = part.map_or((0, u64::MAX), |(p, n)| (p.first_block, p.first_block + n));
    let (mut index, mut at) = (0u64, 0u64);
    run_ordered(
        opts.threads,
        || loop {
            let Some(block) = plan.next_block(input, &blocks)? else {
                return Ok(Pull::End);
            };
            let block_at = at;
            (index, at) = (index + 1, at + block.0.len() as u64);
            match index - 1 {
                i if i >= end => return Ok(Pull::End),
                i if i < first => continue,
                i => return Ok(Pull::Job((block, (i, block_at)))),
            }
        },
        |((data, kind, raw_hash), (index, block_at)): ((Bytes<'a>, Kind, u64), (u64, u64))| {
            let spare = payloads.empty(0);
            let unpacked;
            let config = match pack_allowed(index, data.len() as u64) {
                true => cm,
                false => {
                    unpacked = cm.without_pack();
                    &unpacked
                }
            };
            // Where the block's values start in the base, if it lies in a matched tensor (the
            // delta codec declines a block whose values run past the base's end).
            let against = base.and_then(|b| {
                let from = find(&deltas, block_at, data.len() as u64)?;
                Some((from, b.bytes()))
            });
            let place = Place {
                kind,
                tensor_file,
                base: against,
            };
            let setup = Setup {
                cm: config,
                backend: &backend,
                progress,
            };
            let (codec, payload) = code_block(&data, place, &setup, spare);
            let payload_hash = match codec {
                Codec::Stored => raw_hash,
                _ => xxh3_64(&payload),
            };
            // Lent bytes are a mapped file another process may write: had they changed since
            // they were hashed, the block would not decode to what its checksum says.
            let changed = matches!(data, Bytes::Lent(_)) && xxh3_64(&data) != raw_hash;
            (data, raw_hash, codec, payload, payload_hash, changed)
        },
        |(data, raw_hash, codec, coded, payload_hash, changed)| {
            if changed {
                return Err(Error::InputChanged);
            }
            let payload = if codec == Codec::Stored {
                &data[..]
            } else {
                &coded[..]
            };
            hasher.block(raw_hash);
            total += data.len() as u64;
            let rec = BlockRecord {
                codec,
                raw_len: data.len() as u64,
                payload_len: payload.len() as u64,
                raw_hash,
                payload_hash,
            };
            table.push(TableEntry {
                offset: out.count,
                raw_len: rec.raw_len,
                payload_len: rec.payload_len,
                codec,
            });
            rec.write(&mut out)?;
            out.write_all(payload)?;
            if let Some(b) = &opts.on_block {
                b(rec.raw_len, BlockRecord::LEN + rec.payload_len);
            }
            returns.give(data, &blocks);
            payloads.give(coded);
            Ok(())
        },
        |((data, _, _), _)| data.len() <= INLINE_MAX,
    )?;
    // Deltas coded against base bytes that changed since they were hashed would not decode.
    if base.is_some_and(|b| !b.unchanged()) {
        return Err(Error::BaseChanged);
    }
    let trailer = Trailer {
        total_len: total,
        data_hash: hasher.digest(),
        table,
    };
    trailer.write(&mut out)?;
    out.flush()?;
    Ok(Stats {
        original_bytes: total,
        archive_bytes: out.count,
        blocks: trailer.table.len() as u64,
        memory_peak: 0,
    })
}
