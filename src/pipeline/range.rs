//! Random access: decodes only the blocks that cover a range of the original bytes, found
//! through the block table at the archive's end. Each block read is verified against its own
//! checksums; the whole-data checksum covers every block, so it is not checked here.

use super::counting::{noop, Counting};
use super::decompress::{decode_block, read_header};
use super::options::{Options, Stats};
use crate::codecs::cm::CpuBackend;
use crate::codecs::{Decoder, ProgressFn};
use crate::error::{Error, Result};
use crate::format::checksum::xxh3_64;
use crate::format::{BlockRecord, Next, Trailer};
use crate::memory::Budget;
use std::io::{Read, Seek, SeekFrom, Write};
use std::sync::Arc;

/// Writes original bytes `start..end` of the archive `input` to `output`. The stats give the
/// range's length as `original_bytes` and the archive bytes read as `archive_bytes`.
pub(crate) fn decompress_range(
    input: impl Read + Seek,
    output: &mut impl Write,
    opts: &Options,
    start: u64,
    end: u64,
) -> Result<Stats> {
    opts.validate()?;
    let mut input = Counting {
        inner: input,
        count: 0,
    };
    let budget = Arc::new(Budget::new(opts.memory));
    let (header, header_len, cm, base) = read_header(&mut input, opts, &budget)?;
    let trailer = Trailer::read_from_end(&mut input.inner)?;
    let archive_end = input.inner.seek(SeekFrom::End(0))?;
    trailer.check_table(
        header_len,
        archive_end - trailer.encoded_len(),
        header.block_size,
    )?;
    input.count += trailer.encoded_len();
    if start > end || end > trailer.total_len {
        return Err(Error::InvalidOption(format!(
            "range {start}:{end} is not within the {} original bytes",
            trailer.total_len
        )));
    }
    let progress: ProgressFn = match &opts.progress {
        Some(p) => p.as_ref(),
        None => &noop,
    };
    let backend = CpuBackend::within(budget.clone());
    let decoder = Decoder {
        cm: &cm,
        backend: &backend,
        progress,
        base,
    };
    let (mut at, mut blocks) = (0u64, 0u64);
    for (index, e) in trailer.table.iter().enumerate() {
        let (from, to) = (at, at + e.raw_len);
        at = to;
        if to <= start || from >= end {
            continue;
        }
        input.inner.seek(SeekFrom::Start(e.offset))?;
        let rec = match BlockRecord::read_next(&mut input, header.block_size)? {
            Next::Block(rec)
                if rec.codec == e.codec
                    && rec.raw_len == e.raw_len
                    && rec.payload_len == e.payload_len =>
            {
                rec
            }
            _ => return Err(Error::Corrupt(format!("block {index} is not as listed"))),
        };
        let free_kept = || backend.arena.free_kept();
        let mut reserved = budget.reserve_now(rec.payload_len, free_kept)?;
        // Its length is within the archive's (`check_table`), and reserved.
        let mut payload = Vec::with_capacity(rec.payload_len as usize);
        (&mut input)
            .take(rec.payload_len)
            .read_to_end(&mut payload)?;
        if payload.len() as u64 != rec.payload_len {
            return Err(Error::Truncated("inside a block"));
        }
        if xxh3_64(&payload) != rec.payload_hash {
            return Err(Error::Checksum(format!("block {index}")));
        }
        let need = decoder.memory(rec.codec, &payload, rec.raw_len);
        reserved.grow_now(need, free_kept)?;
        let mut data = Vec::new();
        decode_block(&decoder, index, &rec, &payload, &mut data)?;
        let lo = (start.max(from) - from) as usize;
        let hi = (end.min(to) - from) as usize;
        output.write_all(&data[lo..hi])?;
        blocks += 1;
    }
    output.flush()?;
    Ok(Stats {
        original_bytes: end - start,
        archive_bytes: input.count,
        blocks,
        memory_peak: budget.peak(),
    })
}
