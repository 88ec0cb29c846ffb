//! sep: a lossless compressor whose general-data codec predicts every bit with a model that
//! learns while it codes, and whose float codecs make tensor files small and fast to decode.
//!
//! The library compresses and decompresses whole archives (see FORMAT.md) from bytes in
//! memory, a reader, or a mapped file, and reads an archive's block table:
//!
//! ```
//! let data = b"an example, an example, an example of what sep compresses".repeat(20);
//! let opts = sep::Options::default();
//! let mut archive = Vec::new();
//! sep::compress_bytes(&data, &mut archive, &opts)?;
//! let mut back = Vec::new();
//! sep::decompress_to_vec(&archive, &mut back, &opts)?;
//! assert_eq!(back, data);
//! let info = sep::inspect(std::io::Cursor::new(&archive))?;
//! assert_eq!(info.original_bytes, data.len() as u64);
//! # Ok::<(), sep::Error>(())
//! ```
//!
//! Layers, top to bottom (a module uses only those below it): this API -> `pipeline` (blocks on
//! workers, in order) -> `choice` (which codec a block gets) -> `codecs` (one module per block
//! codec) -> `entropy` (range coder, rANS), `engine` (the network's kernels), `simd` (the SIMD
//! level) -> `format` (the container), `error`. docs/design.md tells the data flow.

mod choice;
mod codecs;
mod containers;
mod engine;
mod entropy;
mod error;
mod format;
mod memory;
mod pipeline;
mod simd;
#[cfg(test)]
mod testing;

pub use choice::base::Base;
pub use codecs::cm::{Pack, DEFAULT_LEVEL, LEVELS};
pub use codecs::float::DType;
pub use error::{Error, Result};
pub use format::{Codec, Part};
pub use simd::Kernels;

use codecs::cm::CmConfig;
use format::{Header, Trailer};
use pipeline::{After, InMemory, Known, Streamed};
pub use pipeline::{Options, PackChoice, PackLookup, Stats, DEFAULT_BLOCK_SIZE, DEFAULT_MEMORY};
use std::io::{Read, Seek, Write};

/// Sets the SIMD level of every kernel of the process, capped at what the CPU supports (the
/// detected level until set); returns the level in force. Every level gives the same bits.
pub fn set_kernels(level: Kernels) -> Kernels {
    simd::set_kernels(level)
}

/// Compresses everything `input` yields into a complete archive on `output`. Without a dtype in
/// `opts`, a stream that starts like a safetensors or .npy file takes the float codecs from its
/// header.
pub fn compress(input: impl Read, output: impl Write, opts: &Options) -> Result<Stats> {
    compress_stream(input, output, opts, None)
}

/// `compress` of a stream of `len` bytes if known (its blocks are then cut evenly).
fn compress_stream(
    mut input: impl Read,
    mut output: impl Write,
    opts: &Options,
    len: Option<u64>,
) -> Result<Stats> {
    let mut known = Known {
        len,
        ..Known::default()
    };
    if opts.dtype.is_some() {
        let cm = opts.cm_for(&[], known.tensors())?;
        return pipeline::compress(&mut Streamed(input), &mut output, opts, &cm, known);
    }
    let (mut head, layout) = containers::sniff_stream(&mut input)?;
    known.layout = layout;
    // The start the text pack is chosen by, as `compress_whole` sees it.
    let more = choice::text::TEXT_HEAD.saturating_sub(head.len());
    input.by_ref().take(more as u64).read_to_end(&mut head)?;
    let cm = opts.cm_for(&head, known.tensors())?;
    let mut input = Streamed(head.as_slice().chain(input));
    pipeline::compress(&mut input, &mut output, opts, &cm, known)
}

/// Compresses `input`, whole in memory, into a complete archive on `output`, coding its blocks
/// in place; its structure is detected from the bytes.
pub fn compress_bytes(input: &[u8], output: impl Write, opts: &Options) -> Result<Stats> {
    compress_whole(InMemory::new(input), input, output, opts)
}

/// `compress_bytes` of a mapped file, whose pages are given back as blocks finish, so resident
/// memory does not grow with the file.
pub fn compress_mapped(input: &memmap2::Mmap, output: impl Write, opts: &Options) -> Result<Stats> {
    compress_whole(InMemory::mapped(input), input, output, opts)
}

/// Compresses `bytes`, whole in memory and read through `source`, onto `output`.
fn compress_whole(
    mut source: InMemory,
    bytes: &[u8],
    mut output: impl Write,
    opts: &Options,
) -> Result<Stats> {
    let known = Known::whole(bytes, opts);
    let cm = opts.cm_for(bytes, known.tensors())?;
    pipeline::compress(&mut source, &mut output, opts, &cm, known)
}

/// Crates whose calls the codecs run under `catch_unwind` (the JPEG and deflate codecs), so
/// that a panic in them on hostile input becomes the codec's error.
const GUARDED: [&str; 2] = ["lepton_jpeg", "preflate-rs"];

/// Installs a panic hook that prints nothing for a panic inside a crate the codecs guard
/// (`GUARDED`: it is caught and reported as the codec's one-line error) and leaves every other
/// panic to the hook installed before. For programs (the command line calls it first).
pub fn quiet_guarded_panics() {
    let before = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let guarded = info
            .location()
            .is_some_and(|l| GUARDED.iter().any(|c| l.file().contains(c)));
        if !guarded {
            before(info);
        }
    }));
}

/// Decompresses a complete archive from `input` onto `output`, verifying every checksum.
pub fn decompress(input: impl Read, mut output: impl Write, opts: &Options) -> Result<Stats> {
    pipeline::decompress(&mut Streamed(input), &mut output, opts, After::Nothing)
}

/// `decompress` of the archive at the start of `input`, reading its bytes and no more: what
/// follows it (another archive, other data) is left unread in `input`.
pub fn decompress_first(input: impl Read, mut output: impl Write, opts: &Options) -> Result<Stats> {
    pipeline::decompress(&mut Streamed(input), &mut output, opts, After::Anything)
}

/// `decompress` of an archive whole in memory, its blocks decoded in place.
pub fn decompress_bytes(archive: &[u8], mut output: impl Write, opts: &Options) -> Result<Stats> {
    pipeline::decompress(
        &mut InMemory::new(archive),
        &mut output,
        opts,
        After::Nothing,
    )
}

/// `decompress_bytes` onto the end of `out`, which is left as it was if the archive is
/// refused; with one thread, every block is decoded straight into `out` (no copy).
pub fn decompress_to_vec(archive: &[u8], out: &mut Vec<u8>, opts: &Options) -> Result<Stats> {
    pipeline::decompress_to_vec(&mut InMemory::new(archive), out, opts)
}

/// `decompress_bytes` of a mapped archive, whose pages are given back as blocks finish.
pub fn decompress_mapped(
    archive: &memmap2::Mmap,
    mut output: impl Write,
    opts: &Options,
) -> Result<Stats> {
    pipeline::decompress(
        &mut InMemory::mapped(archive),
        &mut output,
        opts,
        After::Nothing,
    )
}

/// Compresses part `index` (from 0) of `count` of `input` into `output`: the input is cut into
/// `count` runs of whole blocks, as `compress_bytes` would cut it, and only this part's blocks
/// are coded. The part is an archive of its own bytes; `concat` joins all of them into the
/// archive `compress_bytes` writes. Every worker needs the whole input, and the same options.
pub fn compress_part(
    input: &[u8],
    mut output: impl Write,
    opts: &Options,
    index: u32,
    count: u32,
) -> Result<Stats> {
    pipeline::compress_part(input, &mut output, opts, index, count)
}

/// Joins the parts `compress_part` wrote, given in order, into the archive of the whole input,
/// without recompressing; refuses parts that do not fit together before writing anything.
pub fn concat<R: Read + Seek>(parts: &mut [R], mut output: impl Write) -> Result<Stats> {
    pipeline::concat(parts, &mut output)
}

/// What a pack is called, what it was trained on and the sizes of its tables.
#[derive(Clone, Debug)]
pub struct PackSpec {
    /// Its name, recorded in every archive that uses it (1..=64 bytes).
    pub name: String,
    /// The kind of data it is for (`text`, `code`, `exe`, ...).
    pub kind: String,
    /// Where its training data came from.
    pub description: String,
    /// The compression level whose model it starts (not 1).
    pub level: u8,
    /// log2 of the hashed contexts' slots (16 bytes each; 12..=24): the pack's size, and the
    /// table of every block that uses it.
    pub slots_log: u32,
    /// Bytes of the training data's end the pack keeps, which every block using it continues
    /// (its contexts and matches see them; at most 16 MiB).
    pub history: usize,
    /// A pre-trained network file (pretrained/export.py) the pack carries: the blocks that
    /// start from the pack mix in its predictions, and the pack's mixers learn them.
    pub network: Option<Vec<u8>>,
    /// The built-in pack (by name) whose tables the pack shares: training starts from them,
    /// and the pack holds only what depends on its own model (its level, its network), which
    /// makes it small. Its table size and history are the base's.
    pub base: Option<String>,
}

/// The packs built into this build (`text`, the default level's; `text9` and `code9`, level 9's; and
/// superseded ones), with which every archive naming one decodes, and whether
/// `PackChoice::Auto` may pick each; none in a build without the `builtin-pack` feature.
pub fn builtin_packs() -> Result<Vec<(std::sync::Arc<Pack>, bool)>> {
    codecs::cm::pack::builtins()
}

/// Trains a pack on `data` (the concatenated training files): the level's predictor learns
/// from every byte, as when compressing, and its learnt state is the pack. Returns the pack
/// file's bytes.
pub fn pretrain(data: &[u8], spec: &PackSpec, progress: &(dyn Fn(u64) + Sync)) -> Result<Vec<u8>> {
    use codecs::cm::{pack, Geometry};
    if !pack::name_valid(&spec.name) {
        return Err(Error::InvalidOption(format!(
            "a pack's name must be 1..={} bytes, no control character",
            pack::NAME_MAX
        )));
    }
    if !pack::SLOTS_LOG.contains(&spec.slots_log) {
        return Err(Error::InvalidOption(format!(
            "table size must be 2^{}..=2^{} slots",
            pack::SLOTS_LOG.start(),
            pack::SLOTS_LOG.end()
        )));
    }
    if !LEVELS.contains(&spec.level) {
        return Err(Error::InvalidOption(format!("no level {}", spec.level)));
    }
    let config = CmConfig::for_level(spec.level);
    if config.params.fast {
        return Err(Error::InvalidOption(
            "level 1 (the fast predictor) takes no pack".into(),
        ));
    }
    let base = match &spec.base {
        Some(name) => Some(pack::builtin(name)?),
        None => None,
    };
    let geometry = match &base {
        Some(b) => b.geometry,
        None => Geometry {
            slots_log: spec.slots_log,
            // A quarter of the order-2 map's hashed contexts of a block this table would
            // suit: the map is in the pack, and grows it by 16 KiB per context.
            order2_bits: (spec.slots_log.saturating_sub(14))
                .clamp(*pack::ORDER2_BITS.start(), *pack::ORDER2_BITS.end()),
        },
    };
    if spec.history > pack::HISTORY_MAX {
        return Err(Error::InvalidOption(format!(
            "a pack's history is at most {} bytes",
            pack::HISTORY_MAX
        )));
    }
    let network = match &spec.network {
        Some(file) => Some(std::sync::Arc::new(codecs::net::frozen::Frozen::from_file(
            file,
        )?)),
        None => None,
    };
    let state = codecs::cm::train(
        data,
        config.params,
        geometry,
        spec.history,
        network,
        base.as_ref().map(|b| &b.state),
        progress,
    )?;
    let label = pack::Label {
        name: &spec.name,
        kind: &spec.kind,
        description: &spec.description,
        config: &config.full_bytes(),
        geometry,
        base: base.as_ref().map(|b| &b.id),
    };
    Pack::to_file(&label, &state, spec.network.as_deref())
}

/// Writes the original bytes `range` of a seekable archive to `output`, reading and decoding
/// only the blocks that cover it (each verified against its checksums). The stats give the
/// range's length as `original_bytes` and the archive bytes read as `archive_bytes`.
pub fn decompress_range(
    input: impl Read + Seek,
    mut output: impl Write,
    opts: &Options,
    range: std::ops::Range<u64>,
) -> Result<Stats> {
    pipeline::decompress_range(input, &mut output, opts, range.start, range.end)
}

/// What `inspect` reads of an archive: its header and block table, as `sep info` shows them.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Info {
    /// Format version.
    pub version: u16,
    /// Determinism version of the numeric engine the archive needs.
    pub engine_version: u32,
    /// Largest original length of a block.
    pub block_size: u64,
    /// The compression level the archive was written at.
    pub level: u8,
    /// Where its bytes sit in a larger input, if it is a part (`compress_part`).
    pub part: Option<Part>,
    /// The context-mixing codec's configuration, described.
    pub cm: String,
    /// The pack the context-mixing codec's blocks start from, if any: its name and SHA-256 (hex).
    pub pack: Option<(String, String)>,
    /// The base file its delta blocks were coded against (`--patch-from`), if any: its length
    /// and SHA-256 (hex).
    pub base: Option<(u64, String)>,
    /// Bytes of original data.
    pub original_bytes: u64,
    /// The trailer's checksum of the data (xxh3-64 of the blocks' checksums).
    pub checksum: u64,
    /// Size of the archive in bytes.
    pub archive_bytes: u64,
    /// The block table, in order.
    pub blocks: Vec<BlockInfo>,
}

/// One block of an archive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BlockInfo {
    /// Offset of the block's record from the start of the archive.
    pub offset: u64,
    /// The codec of its payload.
    pub codec: Codec,
    /// Bytes of original data.
    pub original_bytes: u64,
    /// Bytes of payload.
    pub payload_bytes: u64,
}

/// Reads the header and block table of a seekable archive without decoding any block.
pub fn inspect(mut input: impl Read + Seek) -> Result<Info> {
    let (header, header_len) = Header::read(&mut input)?;
    let (cm, pack) = CmConfig::from_bytes(&header.cm_config)?;
    let trailer = Trailer::read_from_end(&mut input)?;
    let archive_bytes = input.seek(std::io::SeekFrom::End(0))?;
    trailer.check_table(
        header_len,
        archive_bytes - trailer.encoded_len(),
        header.block_size,
    )?;
    Ok(Info {
        version: header.version,
        engine_version: header.engine_version,
        block_size: header.block_size,
        level: cm.level,
        part: header.part,
        cm: cm.describe(),
        pack: pack.map(|p| (p.name.clone(), p.hex())),
        base: header
            .base
            .map(|b| (b.len, format::checksum::hex(&b.sha256))),
        original_bytes: trailer.total_len,
        checksum: trailer.data_hash,
        archive_bytes,
        blocks: trailer
            .table
            .iter()
            .map(|e| BlockInfo {
                offset: e.offset,
                codec: e.codec,
                original_bytes: e.raw_len,
                payload_bytes: e.payload_len,
            })
            .collect(),
    })
}

/// Internals for the project's benchmarks, tuning harnesses and tests; not a stable API.
#[doc(hidden)]
pub mod internals {
    #![allow(missing_docs)]
    pub mod choice {
        pub use crate::choice::*;
    }
    pub mod codecs {
        pub use crate::codecs::*;
    }
    pub mod containers {
        pub use crate::containers::*;
    }
    pub mod engine {
        pub use crate::engine::*;
    }
    pub mod entropy {
        pub use crate::entropy::*;
    }
    pub mod format {
        pub use crate::format::*;
    }
    pub mod pipeline {
        pub use crate::pipeline::*;
    }
    pub mod memory {
        pub use crate::memory::*;
    }
    pub mod simd {
        pub use crate::simd::*;
    }

    /// What the fuzz targets and their regression test run on one input (`fuzz/`): `target` is
    /// `archive-bytes`, `archive-vec`, `archive-stream` or `inspect` (the whole decoder on the
    /// input as an archive), `pack` (the input as a pack file), or `codec-NAME` (one codec's
    /// payload decoder on the input's bytes after the first four, which give the block's length: a
    /// `u32`, modulo 4 MiB). Every input must end in `Ok` or an error, never a panic, a hang or
    /// unbounded memory: archives decode within a memory limit of 256 MiB, which the fuzzing's
    /// RSS limit (scripts/fuzz.sh) holds them to, with room for the built-in pack's image.
    pub fn fuzz(target: &str, data: &[u8]) {
        // As in the command line: a panic inside the crates whose calls the codecs guard is
        // caught there and becomes the codec's error; only the others are findings.
        static QUIET: std::sync::Once = std::sync::Once::new();
        QUIET.call_once(crate::quiet_guarded_panics);
        let opts = crate::Options {
            threads: 1,
            memory: 256 << 20,
            ..Default::default()
        };
        match target {
            "archive-bytes" => {
                let _ = crate::decompress_bytes(data, std::io::sink(), &opts);
            }
            "archive-vec" => {
                let _ = crate::decompress_to_vec(data, &mut Vec::new(), &opts);
            }
            "archive-stream" => {
                let _ = crate::decompress(data, std::io::sink(), &opts);
            }
            "inspect" => {
                let _ = crate::inspect(std::io::Cursor::new(data));
            }
            "layout" => {
                // An input to compress: its containers found (safetensors, .npy, .npz, GGUF,
                // ONNX, CTranslate2, PyTorch), their parts covering it exactly.
                let parts = crate::containers::layout(data, None);
                let total: u64 = parts.iter().map(|p| p.len).sum();
                assert_eq!(
                    total,
                    data.len() as u64,
                    "layout parts do not cover the input"
                );
            }
            "pack" => {
                // A pack file as `--pack` reads it, then fitted to the default level's model;
                // and a network file as `sep pretrain --net` reads it, then run on the input.
                if let Ok(p) = crate::Pack::from_file(data) {
                    let config = crate::codecs::cm::CmConfig::default();
                    let _ = config.attach(std::sync::Arc::new(p));
                }
                if let Ok(net) = crate::codecs::net::frozen::Frozen::from_file(data) {
                    let mut state = net.state();
                    let mut counts = [0u32; 256];
                    for &b in data.iter().take(64) {
                        net.predict(&mut state, &mut counts);
                        net.update(&mut state, b);
                    }
                }
            }
            "archive-range" => {
                // Two offsets, then the archive.
                let [a, b, c, d, e, f, g, h, archive @ ..] = data else {
                    return;
                };
                let x = u32::from_le_bytes([*a, *b, *c, *d]) as u64;
                let y = u32::from_le_bytes([*e, *f, *g, *h]) as u64;
                let cursor = std::io::Cursor::new(archive);
                let _ = crate::decompress_range(cursor, std::io::sink(), &opts, x.min(y)..x.max(y));
            }
            codec => {
                let Some(codec) = codec
                    .strip_prefix("codec-")
                    .and_then(|name| (0..=255).find_map(|t| named(t, name)))
                else {
                    panic!("unknown fuzz target {target}");
                };
                let [a, b, c, d, payload @ ..] = data else {
                    return;
                };
                let raw_len = u32::from_le_bytes([*a, *b, *c, *d]) as usize % (4 << 20);
                // As a record is checked before its payload reaches a decoder; the context-mixing
                // codec's blocks (and the field codec's, which hold one) kept short, which its
                // decode speed makes slow to fuzz, and cut into short lanes so that short blocks
                // reach the lane paths; odd lengths decode with the fastest level's model, even
                // ones with the default's.
                let mixing = matches!(codec, crate::Codec::Cm | crate::Codec::Field);
                // A deflate block's sequence (the bytes around its streams and their data),
                // which a context-mixing model decodes, kept as short.
                let sequence = match codec {
                    crate::Codec::Deflate => {
                        crate::codecs::deflate::sequence_len(payload, raw_len).unwrap_or(0)
                    }
                    _ => 0,
                };
                if raw_len == 0
                    || mixing && !crate::format::cm_fits(raw_len as u64, payload.len() as u64)
                    || mixing && raw_len > 1 << 13
                    || sequence > 1 << 13
                {
                    return;
                }
                let level = match raw_len % 2 {
                    1 => *crate::LEVELS.start(),
                    _ => crate::DEFAULT_LEVEL,
                };
                let mut cm = crate::codecs::cm::CmConfig::for_level(level);
                cm.params.min_lane = 512;
                let backend = crate::codecs::cm::CpuBackend::default();
                // A base for delta blocks: 64 KiB of varied bytes.
                let base: Vec<u8> = (0..1u32 << 16)
                    .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
                    .collect();
                let decoder = crate::codecs::Decoder {
                    cm: &cm,
                    backend: &backend,
                    progress: &|_| {},
                    base: Some(&base),
                };
                let mut out = Vec::new();
                let _ = decoder.decode(codec, payload, raw_len, (0, 0), &mut out);
            }
        }
    }

    /// The codec of tag `tag` if its name is `name`.
    fn named(tag: u8, name: &str) -> Option<crate::Codec> {
        crate::Codec::from_tag(tag)
            .ok()
            .filter(|c| c.name() == name)
    }

    /// `compress` of a stream known to hold `len` bytes: its blocks are cut as
    /// `compress_bytes` cuts them (the tests check the two write the same archive).
    pub fn compress_sized(
        input: impl std::io::Read,
        output: impl std::io::Write,
        opts: &crate::Options,
        len: u64,
    ) -> crate::Result<crate::Stats> {
        crate::compress_stream(input, output, opts, Some(len))
    }
}
