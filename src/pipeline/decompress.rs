//! Decompressing: the header checked, each block read, checked and decoded on the workers, the
//! output written in order, the trailer checked.

use super::buffers::{slack, Buffers};
use super::counting::noop;
use super::options::{Options, Stats};
use super::source::{read_full, Bytes, Source};
use super::workers::{run_ordered, Pull, INLINE_MAX};
use crate::codecs::cm::{CmConfig, CpuBackend};
use crate::codecs::{self, Decoder, ProgressFn};
use crate::engine::ENGINE_VERSION;
use crate::error::{Error, Result};
use crate::format::{
    pack_allowed, BlockRecord, Codec, DataHash, Header, Next, TableEntry, Trailer,
};
use crate::memory::{Budget, Reservation, Wait};
use std::io::Write;
use std::sync::Arc;

/// A block to decode: its index, record, payload and the memory reserved for it.
type Job<'a, 'b> = (usize, BlockRecord, Bytes<'a>, Reservation<'b>);
/// A decoded block: its bytes, checksum and the memory still reserved for them.
type Done<'a, 'b> = (Bytes<'a>, u64, Reservation<'b>);

/// A block read whose memory is not reserved yet.
enum Pending<'a, 'b> {
    /// Its record: the payload's room is not.
    Payload(BlockRecord),
    /// The block with its payload: the room of its bytes and tables is not.
    Tables(Job<'a, 'b>),
}

/// Where decompressed blocks go.
enum Out<'o, W> {
    /// A writer, given each block's bytes.
    Writer(&'o mut W),
    /// A vector the blocks are appended to (with one thread, tensor blocks decoded into it).
    Vec(&'o mut Vec<u8>),
}

/// What may follow an archive in its input.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum After {
    /// Nothing: a byte after the end is an error.
    Nothing,
    /// Anything, left unread: the archive's bytes are read and no more.
    Anything,
}

/// Decompresses a complete archive from `input` into `output`, verifying every checksum.
pub(crate) fn decompress<'a>(
    input: &mut impl Source<'a>,
    output: &mut impl Write,
    opts: &Options,
    after: After,
) -> Result<Stats> {
    let stats = decode_archive(input, &mut Out::Writer(output), opts, after)?;
    output.flush()?;
    Ok(stats)
}

/// `decompress` onto the end of `out`, which is left as it was if the archive is refused.
pub(crate) fn decompress_to_vec<'a>(
    input: &mut impl Source<'a>,
    out: &mut Vec<u8>,
    opts: &Options,
) -> Result<Stats> {
    let start = out.len();
    let result = decode_archive(
        input,
        &mut Out::<std::io::Sink>::Vec(out),
        opts,
        After::Nothing,
    );
    if result.is_err() {
        out.truncate(start);
    }
    result
}

/// Appends block `index` (record `rec`, checked payload `payload`) to `data` through its
/// codec, checked against the record; returns its checksum.
pub(super) fn decode_block(
    decoder: &Decoder,
    index: usize,
    rec: &BlockRecord,
    payload: &[u8],
    data: &mut Vec<u8>,
) -> Result<u64> {
    let hashes = (rec.raw_hash, rec.payload_hash);
    // A block the pack may not start decodes without it: if its payload says it started from
    // the pack, the context-mixing codec refuses it before setting anything up.
    let unpacked;
    let decoder = match pack_allowed(index as u64, rec.raw_len) {
        true => decoder,
        false => {
            unpacked = decoder.cm.without_pack();
            &Decoder {
                cm: &unpacked,
                ..*decoder
            }
        }
    };
    decoder
        .decode(rec.codec, payload, rec.raw_len as usize, hashes, data)
        .map_err(|e| match e {
            Error::Checksum(_) => Error::Checksum(format!("block {index}")),
            Error::Corrupt(what) => Error::Corrupt(format!("block {index}: {what}")),
            e => e,
        })?;
    Ok(rec.raw_hash)
}

/// Reads an archive's header and refuses it before any block is read where its blocks may be
/// larger than `opts.memory`, it needs another engine, or a pack or base file not given, or a
/// pack larger than `budget` (which then holds the pack's bytes for the run); returns it with
/// its length, the context-mixing codec's configuration and the base's bytes.
pub(super) fn read_header<'o>(
    input: &mut impl std::io::Read,
    opts: &'o Options,
    budget: &Budget,
) -> Result<(Header, u64, CmConfig, Option<&'o [u8]>)> {
    let (header, header_len) = Header::read(input)?;
    if header.block_size > opts.memory {
        return Err(Error::MemoryLimit {
            needed: header.block_size,
            limit: opts.memory,
        });
    }
    if header.engine_version != ENGINE_VERSION {
        return Err(Error::EngineVersion {
            found: header.engine_version,
            supported: ENGINE_VERSION,
        });
    }
    let (mut cm, pack) = CmConfig::from_bytes(&header.cm_config)?;
    if let Some(id) = pack {
        let pack = opts.find_pack(&id)?;
        budget.reserve_for_run(pack.bytes())?;
        cm = cm.attach(pack)?;
    }
    let base = opts.base_for(header.base)?;
    Ok((header, header_len, cm, base))
}

/// Decodes a complete archive from `input` into `out`, verifying every checksum.
fn decode_archive<'a, W: Write>(
    input: &mut impl Source<'a>,
    out: &mut Out<'_, W>,
    opts: &Options,
    after: After,
) -> Result<Stats> {
    opts.validate()?;
    let budget = Arc::new(Budget::new(opts.memory));
    let (header, header_len, cm, base) = read_header(input, opts, &budget)?;
    let progress: ProgressFn = match &opts.progress {
        Some(p) => p.as_ref(),
        None => &noop,
    };
    let mut offset = header_len;
    let mut seen: Vec<TableEntry> = Vec::new();
    let mut hasher = DataHash::default();
    let mut total = 0u64;
    let mut at_end = false;
    let payloads = Buffers::within(budget.clone());
    let blocks = Buffers::within(budget.clone());
    let returns = input.returns();
    let backend = CpuBackend::within(budget.clone());
    let decoder = Decoder {
        cm: &cm,
        backend: &backend,
        progress,
        base,
    };
    // A block whose memory is not free yet, to reserve again once one in flight has finished.
    let mut waiting: Option<Pending> = None;
    let free_kept = || backend.arena.free_kept() + payloads.free_kept() + blocks.free_kept();
    let mut source = || {
        if at_end {
            return Ok(Pull::End);
        }
        let (index, rec, payload, mut reserved) = match waiting.take() {
            Some(Pending::Tables(job)) => job,
            record => {
                let rec = match record {
                    Some(Pending::Payload(rec)) => rec,
                    _ => match BlockRecord::read_next(input, header.block_size)? {
                        Next::End => {
                            at_end = true;
                            return Ok(Pull::End);
                        }
                        Next::Block(rec) => rec,
                    },
                };
                // The payload's room first: what the codec's tables take depends on it.
                let room = rec.payload_len + slack(rec.payload_len);
                let reserved = match budget.reserve(room, free_kept)? {
                    Wait::Ready(r) => r,
                    Wait::Later => {
                        waiting = Some(Pending::Payload(rec));
                        return Ok(Pull::Later);
                    }
                };
                let want = rec.payload_len as usize;
                let (payload, hash) = input.next_bytes(want, &payloads)?;
                if payload.len() < want {
                    return Err(Error::Truncated("inside a block"));
                }
                if hash != rec.payload_hash {
                    return Err(Error::Checksum(format!("block {}", seen.len())));
                }
                seen.push(TableEntry {
                    offset,
                    raw_len: rec.raw_len,
                    payload_len: rec.payload_len,
                    codec: rec.codec,
                });
                offset += BlockRecord::LEN + rec.payload_len;
                (seen.len() - 1, rec, payload, reserved)
            }
        };
        let need = decoder.memory(rec.codec, &payload, rec.raw_len) + slack(rec.raw_len);
        match reserved.grow(need, free_kept)? {
            true => Ok(Pull::Job((index, rec, payload, reserved))),
            false => {
                waiting = Some(Pending::Tables((index, rec, payload, reserved)));
                Ok(Pull::Later)
            }
        }
    };
    match out {
        // One thread into memory: each block decoded where it belongs (there is no write to
        // overlap with the next block's decoding).
        Out::Vec(v) if opts.threads == 1 => {
            // With nothing in flight, a block that does not fit is refused, never `Later`.
            while let Pull::Job((index, rec, payload, _reserved)) = source()? {
                let raw_hash = decode_block(&decoder, index, &rec, &payload, v)?;
                returns.give(payload, &payloads);
                hasher.block(raw_hash);
                total += rec.raw_len;
            }
        }
        _ => run_ordered(
            opts.threads,
            source,
            |(index, rec, payload, mut reserved): Job<'a, '_>| -> Result<Done<'a, '_>> {
                if rec.codec == Codec::Stored {
                    // The bytes are the payload's, passed on as they are.
                    progress(rec.raw_len);
                    let raw_len = rec.raw_len as usize;
                    codecs::stored::check(&payload, raw_len, rec.raw_hash, rec.payload_hash)
                        .map_err(|_| Error::Checksum(format!("block {index}")))?;
                    return Ok((payload, rec.raw_hash, reserved));
                }
                let mut data = blocks.empty(rec.raw_len as usize);
                let hash = decode_block(&decoder, index, &rec, &payload, &mut data)?;
                returns.give(payload, &payloads);
                // The payload and the tables are free (or kept, and counted so); the bytes
                // are held until written.
                reserved.shrink_to(rec.raw_len + slack(rec.raw_len));
                Ok((Bytes::Pooled(data), hash, reserved))
            },
            |done| {
                let (data, raw_hash, _reserved) = done?;
                hasher.block(raw_hash);
                total += data.len() as u64;
                match out {
                    Out::Writer(w) => w.write_all(&data)?,
                    Out::Vec(v) => v.extend_from_slice(&data),
                }
                returns.give(data, &blocks);
                Ok(())
            },
            |(_, rec, _, _)| rec.raw_len <= INLINE_MAX as u64,
        )?,
    }
    if !at_end {
        return Err(Error::Truncated("missing end of archive"));
    }
    let trailer = Trailer::read_after_tag(input)?;
    if trailer.table != seen || trailer.total_len != total {
        return Err(Error::Corrupt(
            "block table does not match the blocks".into(),
        ));
    }
    if trailer.data_hash != hasher.digest() {
        return Err(Error::Checksum("the whole file".into()));
    }
    let mut probe = [0u8; 1];
    if after == After::Nothing && read_full(input, &mut probe)? != 0 {
        return Err(Error::Corrupt(
            "trailing data after the end of the archive".into(),
        ));
    }
    Ok(Stats {
        original_bytes: total,
        archive_bytes: offset + trailer.encoded_len(),
        blocks: seen.len() as u64,
        memory_peak: budget.peak(),
    })
}
