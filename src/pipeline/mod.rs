//! Streams an input through independent blocks: the calling thread reads blocks and writes
//! results in order, a pool of workers codes blocks concurrently (each through the backend),
//! and the number of blocks in flight is bounded so memory does not grow with the input.

mod buffers;
mod options;
mod parts;
mod plan;
mod range;
mod source;
mod workers;

pub use options::{Options, PackChoice, Stats, DEFAULT_BLOCK_SIZE, DEFAULT_MEMORY};

use crate::choice::base::find;
use crate::choice::{code_block, Place, Setup};
use crate::codecs::cm::{CmConfig, CpuBackend};
use crate::codecs::{self, Decoder, ProgressFn};
use crate::containers::Kind;
use crate::engine::ENGINE_VERSION;
use crate::error::{Error, Result};
use crate::format::checksum::xxh3_64;
use crate::format::{
    pack_allowed, BlockRecord, Codec, DataHash, Header, Next, Part, TableEntry, Trailer,
};
use buffers::Buffers;
use plan::{Plan, ROOM_MAX};
use source::{read_full, Bytes, Source};
use std::io::Write;
use workers::{run_ordered, INLINE_MAX};

pub(crate) use parts::{compress_part, concat};
pub use plan::Known;
pub(crate) use range::decompress_range;
pub(crate) use source::{InMemory, Streamed};

/// Reader or writer wrapper counting the bytes that pass through it.
struct Counting<T> {
    inner: T,
    count: u64,
}

impl<R: std::io::Read> std::io::Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count += n as u64;
        Ok(n)
    }
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.count += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn noop(_: u64) {}

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
fn compress_blocks<'a>(
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
                return Ok(None);
            };
            let block_at = at;
            (index, at) = (index + 1, at + block.0.len() as u64);
            match index - 1 {
                i if i >= end => return Ok(None),
                i if i < first => continue,
                i => return Ok(Some((block, (i, block_at)))),
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
            // Where the block's values start in the base, if it lies in a matched tensor whose
            // values the base holds.
            let against = base.and_then(|b| {
                let from = find(&deltas, block_at, data.len() as u64)?;
                b.bytes().get(from as usize..from as usize + data.len())?;
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
    })
}

/// Where decompressed blocks go.
enum Out<'o, W> {
    /// A writer, given each block's bytes.
    Writer(&'o mut W),
    /// A vector the blocks are appended to (with one thread, tensor blocks decoded into it).
    Vec(&'o mut Vec<u8>),
}

/// Decompresses a complete archive from `input` into `output`, verifying every checksum.
pub(crate) fn decompress<'a>(
    input: &mut impl Source<'a>,
    output: &mut impl Write,
    opts: &Options,
) -> Result<Stats> {
    let stats = decode_archive(input, &mut Out::Writer(output), opts)?;
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
    let result = decode_archive(input, &mut Out::<std::io::Sink>::Vec(out), opts);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

/// Appends block `index` (record `rec`, checked payload `payload`) to `data` through its
/// codec, checked against the record; returns its checksum.
fn decode_block(
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
/// larger than `opts.memory`, it needs another engine, or a pack or base file not given;
/// returns it with its length, the context-mixing codec's configuration and the base's bytes.
fn read_header<'o>(
    input: &mut impl std::io::Read,
    opts: &'o Options,
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
        cm = cm.attach(opts.find_pack(&id)?)?;
    }
    let base = opts.base_for(header.base)?;
    Ok((header, header_len, cm, base))
}

/// Decodes a complete archive from `input` into `out`, verifying every checksum.
fn decode_archive<'a, W: Write>(
    input: &mut impl Source<'a>,
    out: &mut Out<'_, W>,
    opts: &Options,
) -> Result<Stats> {
    opts.validate()?;
    let (header, header_len, cm, base) = read_header(input, opts)?;
    let progress: ProgressFn = match &opts.progress {
        Some(p) => p.as_ref(),
        None => &noop,
    };
    let mut offset = header_len;
    let mut seen: Vec<TableEntry> = Vec::new();
    let mut hasher = DataHash::default();
    let mut total = 0u64;
    let mut at_end = false;
    // Block buffers get room for the largest block the header allows (up to a bound: the
    // header is not trusted yet), so that one serves every block.
    let room = header.block_size.min(ROOM_MAX) as usize;
    let (payloads, blocks) = (Buffers::new(), Buffers::with_room(room));
    let returns = input.returns();
    let backend = CpuBackend::default();
    let decoder = Decoder {
        cm: &cm,
        backend: &backend,
        progress,
        base,
    };
    let mut source = || {
        if at_end {
            return Ok(None);
        }
        match BlockRecord::read_next(input, header.block_size)? {
            Next::End => {
                at_end = true;
                Ok(None)
            }
            Next::Block(rec) => {
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
                Ok(Some((seen.len() - 1, rec, payload)))
            }
        }
    };
    match out {
        // One thread into memory: each block decoded where it belongs (there is no write to
        // overlap with the next block's decoding).
        Out::Vec(v) if opts.threads == 1 => {
            while let Some((index, rec, payload)) = source()? {
                let raw_hash = decode_block(&decoder, index, &rec, &payload, v)?;
                returns.give(payload, &payloads);
                hasher.block(raw_hash);
                total += rec.raw_len;
            }
        }
        _ => run_ordered(
            opts.threads,
            source,
            |(index, rec, payload): (usize, BlockRecord, Bytes<'a>)| -> Result<(Bytes<'a>, u64)> {
                if rec.codec == Codec::Stored {
                    // The bytes are the payload's, passed on as they are.
                    progress(rec.raw_len);
                    let raw_len = rec.raw_len as usize;
                    codecs::stored::check(&payload, raw_len, rec.raw_hash, rec.payload_hash)
                        .map_err(|_| Error::Checksum(format!("block {index}")))?;
                    return Ok((payload, rec.raw_hash));
                }
                let mut data = blocks.empty(rec.raw_len as usize);
                let hash = decode_block(&decoder, index, &rec, &payload, &mut data)?;
                returns.give(payload, &payloads);
                Ok((Bytes::Pooled(data), hash))
            },
            |done| {
                let (data, raw_hash) = done?;
                hasher.block(raw_hash);
                total += data.len() as u64;
                match out {
                    Out::Writer(w) => w.write_all(&data)?,
                    Out::Vec(v) => v.extend_from_slice(&data),
                }
                returns.give(data, &blocks);
                Ok(())
            },
            |(_, rec, _)| rec.raw_len <= INLINE_MAX as u64,
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
    if read_full(input, &mut probe)? != 0 {
        return Err(Error::Corrupt(
            "trailing data after the end of the archive".into(),
        ));
    }
    Ok(Stats {
        original_bytes: total,
        archive_bytes: offset + trailer.encoded_len(),
        blocks: seen.len() as u64,
    })
}
