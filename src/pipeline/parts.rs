//! Parts: an input cut into `count` runs of whole blocks, each compressed apart (on another
//! machine, say) into a part archive, and the parts joined into the archive of the whole
//! input without recompressing: the one `compress` writes, byte for byte. The cut is a pure
//! function of the input and the options, so workers agree on it without talking.

use super::buffers::Buffers;
use super::compress::compress_blocks;
use super::options::{Options, Stats};
use super::plan::{Known, Plan};
use super::source::InMemory;
use crate::error::{Error, Result};
use crate::format::{BlockRecord, DataHash, Header, Next, Part, TableEntry, Trailer};
use std::io::{Read, Seek, SeekFrom, Write};

/// Compresses part `index` of `count` of `data` (whole in memory) into `output`: a complete
/// archive of the part's bytes whose header records where they sit in the whole.
pub(crate) fn compress_part(
    data: &[u8],
    output: &mut impl Write,
    opts: &Options,
    index: u32,
    count: u32,
) -> Result<Stats> {
    let known = Known::whole(data, opts);
    let cm = &opts.cm_for(data, known.tensors())?;
    opts.validate()?;
    if index >= count {
        return Err(Error::InvalidOption(format!(
            "part {index} of {count}: parts are numbered 0 to {}",
            count.saturating_sub(1)
        )));
    }
    // The whole input's blocks, as `compress` cuts them: their lengths and checksums.
    let mut plan = Plan::new(opts, known.clone());
    let (mut source, buffers) = (InMemory::new(data), Buffers::new());
    let mut blocks = Vec::new();
    let mut whole = DataHash::default();
    while let Some((bytes, _, hash)) = plan.next_block(&mut source, &buffers)? {
        blocks.push(bytes.len() as u64);
        whole.block(hash);
    }
    let n = blocks.len() as u64;
    let (lo, hi) = (
        n * index as u64 / count as u64,
        n * (index as u64 + 1) / count as u64,
    );
    let part = Part {
        index,
        count,
        first_block: lo,
        start: blocks[..lo as usize].iter().sum(),
        whole_len: data.len() as u64,
        whole_blocks: n,
        whole_hash: whole.digest(),
    };
    compress_blocks(
        &mut InMemory::new(data),
        output,
        opts,
        cm,
        known,
        Some((part, hi - lo)),
    )
}

/// One part as `concat` reads it.
struct Read1 {
    header: Header,
    part: Part,
    header_len: u64,
    trailer: Trailer,
}

/// Joins `parts`, in order, into the archive of the whole input. Each part is checked (its
/// header, block table, and every block record's checksums against the whole input's), and
/// parts that do not fit together (missing, repeated or reordered, from another input or
/// other options) are refused before anything is written.
pub(crate) fn concat<R: Read + Seek>(parts: &mut [R], output: &mut impl Write) -> Result<Stats> {
    let mut read = Vec::with_capacity(parts.len());
    let bad = |i: usize, what: &str| Error::Corrupt(format!("part {i}: {what}"));
    for (i, r) in parts.iter_mut().enumerate() {
        r.seek(SeekFrom::Start(0))?;
        let (header, header_len) = Header::read(r)?;
        let part = header
            .part
            .ok_or_else(|| bad(i, "not a part (no --shard)"))?;
        let trailer = Trailer::read_from_end(r)?;
        let end = r.seek(SeekFrom::End(0))?;
        trailer.check_table(header_len, end - trailer.encoded_len(), header.block_size)?;
        read.push(Read1 {
            header,
            part,
            header_len,
            trailer,
        });
    }
    let first = read
        .first()
        .ok_or_else(|| Error::InvalidOption("no parts to join".into()))?;
    let (count, whole) = (first.part.count, first.part);
    if read.len() != count as usize {
        return Err(Error::Corrupt(format!(
            "{} parts given, the input was cut into {count}",
            read.len()
        )));
    }
    let (mut blocks, mut start) = (0u64, 0u64);
    for (i, p) in read.iter().enumerate() {
        let same_input = p.part.count == count
            && p.part.whole_len == whole.whole_len
            && p.part.whole_blocks == whole.whole_blocks
            && p.part.whole_hash == whole.whole_hash;
        let same_options = Header {
            part: None,
            ..p.header.clone()
        } == Header {
            part: None,
            ..first.header.clone()
        };
        if !same_input || !same_options {
            return Err(bad(i, "from another input or other options than part 0"));
        }
        if p.part.index as usize != i || p.part.first_block != blocks || p.part.start != start {
            return Err(bad(i, &format!("is part {}, out of order", p.part.index)));
        }
        blocks += p.trailer.table.len() as u64;
        start += p.trailer.total_len;
    }
    if blocks != whole.whole_blocks || start != whole.whole_len {
        return Err(Error::Corrupt("the parts do not cover the input".into()));
    }
    // Every block's record, checked against the whole input's checksum before writing.
    let mut hasher = DataHash::default();
    for (i, (p, r)) in read.iter().zip(parts.iter_mut()).enumerate() {
        for e in &p.trailer.table {
            r.seek(SeekFrom::Start(e.offset))?;
            match BlockRecord::read_next(r, p.header.block_size)? {
                Next::Block(rec)
                    if rec.raw_len == e.raw_len && rec.payload_len == e.payload_len =>
                {
                    hasher.block(rec.raw_hash)
                }
                _ => return Err(bad(i, "a block is not as its table lists it")),
            }
        }
    }
    if hasher.digest() != whole.whole_hash {
        return Err(Error::Checksum("the joined parts".into()));
    }
    let header = Header {
        part: None,
        ..first.header.clone()
    }
    .to_bytes();
    output.write_all(&header)?;
    let mut at = header.len() as u64;
    let mut table = Vec::new();
    for (p, r) in read.iter().zip(parts.iter_mut()) {
        let blocks_end = p.trailer.table.last().map_or(p.header_len, |e| {
            e.offset + BlockRecord::LEN + e.payload_len
        });
        r.seek(SeekFrom::Start(p.header_len))?;
        let len = blocks_end - p.header_len;
        if std::io::copy(&mut r.take(len), output)? != len {
            return Err(Error::Truncated("inside a part"));
        }
        let shift = at as i128 - p.header_len as i128;
        table.extend(p.trailer.table.iter().map(|e| TableEntry {
            offset: (e.offset as i128 + shift) as u64,
            ..*e
        }));
        at += blocks_end - p.header_len;
    }
    let trailer = Trailer {
        total_len: whole.whole_len,
        data_hash: whole.whole_hash,
        table,
    };
    trailer.write(output)?;
    output.flush()?;
    Ok(Stats {
        original_bytes: whole.whole_len,
        archive_bytes: at + trailer.encoded_len(),
        blocks: trailer.table.len() as u64,
        memory_peak: 0,
    })
}
