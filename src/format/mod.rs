//! The archive layout: header, length-prefixed block records, trailer with the block table.
//! FORMAT.md at the top of the project documents every field.

pub mod checksum;

use crate::error::{Error, Result};
use checksum::xxh3_64;
use std::io::{Read, Write};

/// First bytes of every archive.
pub const MAGIC: [u8; 4] = [0x89, b'S', b'E', b'P'];
/// Last bytes of every archive.
pub const END_MAGIC: [u8; 4] = [b'S', b'E', b'P', 0x89];
/// Format version written by this build, the only one it reads (FORMAT.md states the policy).
pub const VERSION: u16 = 2;
/// Largest block size an archive may declare.
pub const MAX_BLOCK_SIZE: u64 = 1 << 30;
/// Most original bytes a context-mixing block may hold per byte of its payload: it bounds the work
/// an archive can ask of the slowest decoder (about 10 µs a byte) by its size.
pub const CM_MAX_RATIO: u64 = 128;

/// Whether a context-mixing block of `raw_len` original bytes may have a payload of `payload_len`
/// (`CM_MAX_RATIO`): the rule decoders check and the encoder keeps.
pub fn cm_fits(raw_len: u64, payload_len: u64) -> bool {
    raw_len / CM_MAX_RATIO <= payload_len
}
/// Shortest block, other than an archive's first, that may start from a pack: setting a model
/// up from a pack takes tens of milliseconds whatever the block's length, which decoding this
/// many bytes outweighs, so that an archive of many tiny blocks cannot ask for hours.
pub const PACKED_MIN: u64 = 16 << 10;

/// Whether block `index` (of the whole input), of `raw_len` original bytes, may start from the
/// archive's pack (`PACKED_MIN`): the rule decoders check and the encoder keeps.
pub fn pack_allowed(index: u64, raw_len: u64) -> bool {
    index == 0 || raw_len >= PACKED_MIN
}

/// Largest model configuration an archive may declare.
const MAX_CONFIG_LEN: u32 = 4096;
/// Tag byte that ends the block sequence and starts the trailer.
const TAG_END: u8 = 0xFF;
/// Size of a block record header after its tag byte.
const RECORD_LEN: usize = 8 + 8 + 8 + 8 + 4;
/// Size of one block table entry in the trailer.
const TABLE_ENTRY_LEN: usize = 8 + 8 + 8 + 1;
/// Fixed tail of the archive: trailer length (u64) + end magic.
pub const TAIL_LEN: u64 = 12;

/// How a block's payload is coded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Codec {
    /// Payload is the raw bytes.
    Stored,
    /// Payload is the context-mixing codec's: lanes range-coded with the predictor's probabilities.
    Cm,
    /// Payload is a zstd frame.
    Zstd,
    /// Payload is the planes codec's: float planes, adaptive rANS, invariant bit packing.
    Planes,
    /// Payload is a tensor file's header with its offsets left out, in a zstd frame.
    TensorHeader,
    /// Payload is a tensor block coded as ranks among recent values.
    Recent,
    /// Payload is a tensor block coded as integers times scales.
    Scaled,
    /// Payload is a tensor block whose exactly repeated values are coded apart.
    Repeated,
    /// Payload is a tensor block coded as copies of earlier values at row distances, forwards
    /// or mirrored, and literals, with replays of earlier events.
    Copies,
    /// Payload is a float codec's, of the block with each value's bytes reversed (big-endian
    /// arrays): the inner codec's tag, the value width, then its payload.
    Swapped,
    /// Payload is the field codec's: a block of smooth 32-bit values as the context-mixing codec's
    /// payload of their residuals, after the flags and row width it needs.
    Field,
    /// Payload is a raw LZMA2 stream (liblzma), its dictionary sized from the block's length.
    Lzma,
    /// Payload is a float array coded against the same array in the archive's base file
    /// (`--patch-from`): the values' width, where they start in the base, the differences.
    Delta,
    /// Payload is a tensor of one-byte values (fp8) rANS-coded from one table of their
    /// frequencies, which it holds.
    ByteTable,
    /// Payload is a JPEG file recompressed by Lepton's model: the image's size, then a Lepton
    /// file.
    Jpeg,
    /// Payload is a deflate stream's inflated data, coded by the context-mixing codec, with the
    /// record that rebuilds the stream and the bytes around it (`codecs::deflate`).
    Deflate,
}

impl Codec {
    /// Tag byte of the codec.
    pub fn tag(self) -> u8 {
        match self {
            Codec::Stored => 0,
            Codec::Cm => 1,
            Codec::Zstd => 2,
            Codec::Planes => 3,
            Codec::TensorHeader => 4,
            Codec::Recent => 5,
            Codec::Scaled => 6,
            Codec::Repeated => 7,
            Codec::Copies => 8,
            Codec::Swapped => 9,
            Codec::Field => 10,
            Codec::Lzma => 11,
            Codec::Delta => 12,
            Codec::ByteTable => 13,
            Codec::Jpeg => 14,
            Codec::Deflate => 15,
        }
    }

    /// Codec of a tag byte.
    pub fn from_tag(tag: u8) -> Result<Self> {
        match tag {
            0 => Ok(Codec::Stored),
            1 => Ok(Codec::Cm),
            2 => Ok(Codec::Zstd),
            3 => Ok(Codec::Planes),
            4 => Ok(Codec::TensorHeader),
            5 => Ok(Codec::Recent),
            6 => Ok(Codec::Scaled),
            7 => Ok(Codec::Repeated),
            8 => Ok(Codec::Copies),
            9 => Ok(Codec::Swapped),
            10 => Ok(Codec::Field),
            11 => Ok(Codec::Lzma),
            12 => Ok(Codec::Delta),
            13 => Ok(Codec::ByteTable),
            14 => Ok(Codec::Jpeg),
            15 => Ok(Codec::Deflate),
            t => Err(Error::Corrupt(format!("unknown block codec {t}"))),
        }
    }

    /// Lower-case name for `sep info`.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Stored => "stored",
            Codec::Cm => "cm",
            Codec::Zstd => "zstd",
            Codec::Planes => "planes",
            Codec::TensorHeader => "tensor-header",
            Codec::Recent => "recent",
            Codec::Scaled => "scaled",
            Codec::Repeated => "repeated",
            Codec::Copies => "copies",
            Codec::Swapped => "swapped",
            Codec::Field => "field",
            Codec::Lzma => "lzma",
            Codec::Delta => "delta",
            Codec::ByteTable => "bytes",
            Codec::Jpeg => "jpeg",
            Codec::Deflate => "deflate",
        }
    }
}

/// Archive header: everything a decoder needs before the first block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Format version (`VERSION` when writing).
    pub version: u16,
    /// Flags, all reserved (zero).
    pub flags: u16,
    /// Engine determinism version the model blocks were coded with.
    pub engine_version: u32,
    /// Maximum raw length of a block.
    pub block_size: u64,
    /// Serialised configuration of the context-mixing codec (`codecs::cm::CmConfig`).
    pub cm_config: Vec<u8>,
    /// Where this archive's blocks sit in a larger input, if it is a part of one (`Part`).
    pub part: Option<Part>,
    /// The file its delta blocks were coded against, if any (`--patch-from`).
    pub base: Option<BaseId>,
}

/// What identifies the base file of an archive's delta blocks: its SHA-256 and length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BaseId {
    /// SHA-256 of the whole base file.
    pub sha256: [u8; 32],
    /// Its length in bytes.
    pub len: u64,
}

/// Header flag: the archive has delta blocks coded against a base file (`BaseId`).
const FLAG_BASE: u16 = 2;
/// Bytes of the base's fields in the header.
const BASE_LEN: usize = 32 + 8;

/// Header flag: the archive is a part (`Part`).
const FLAG_PART: u16 = 1;
/// Bytes of a part's fields in the header.
const PART_LEN: usize = 4 + 4 + 8 * 5;

/// A part: the blocks `first_block..` of an input cut into `count` parts of whole blocks,
/// compressed apart (`sep compress --shard`) and joined by `concat` into the archive of the
/// whole input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    /// Which part, from 0.
    pub index: u32,
    /// How many parts the input was cut into.
    pub count: u32,
    /// Index of the part's first block among the input's blocks.
    pub first_block: u64,
    /// Offset of the part's first original byte in the input.
    pub start: u64,
    /// Length of the whole input.
    pub whole_len: u64,
    /// Blocks of the whole input.
    pub whole_blocks: u64,
    /// Checksum of the whole input (`DataHash` over all its blocks).
    pub whole_hash: u64,
}

impl Part {
    fn to_bytes(self) -> Vec<u8> {
        let mut b = Vec::with_capacity(PART_LEN);
        b.extend_from_slice(&self.index.to_le_bytes());
        b.extend_from_slice(&self.count.to_le_bytes());
        for v in [
            self.first_block,
            self.start,
            self.whole_len,
            self.whole_blocks,
            self.whole_hash,
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b
    }

    fn from_bytes(b: &[u8]) -> Result<Self> {
        let p = Part {
            index: u32_at(b, 0),
            count: u32_at(b, 4),
            first_block: u64_at(b, 8),
            start: u64_at(b, 16),
            whole_len: u64_at(b, 24),
            whole_blocks: u64_at(b, 32),
            whole_hash: u64_at(b, 40),
        };
        if p.index >= p.count || p.first_block > p.whole_blocks || p.start > p.whole_len {
            return Err(Error::Corrupt("part fields out of range".into()));
        }
        Ok(p)
    }
}

fn read_array<const N: usize>(r: &mut impl Read, what: &'static str) -> Result<[u8; N]> {
    let mut b = [0u8; N];
    r.read_exact(&mut b)
        .map_err(|e| Error::eof_as_truncated(e, what))?;
    Ok(b)
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

impl Header {
    /// Serialises the header including its checksum.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(32 + self.cm_config.len() + PART_LEN);
        let mut flags = self.flags & !(FLAG_PART | FLAG_BASE);
        if self.part.is_some() {
            flags |= FLAG_PART;
        }
        if self.base.is_some() {
            flags |= FLAG_BASE;
        }
        b.extend_from_slice(&MAGIC);
        b.extend_from_slice(&self.version.to_le_bytes());
        b.extend_from_slice(&flags.to_le_bytes());
        b.extend_from_slice(&self.engine_version.to_le_bytes());
        b.extend_from_slice(&self.block_size.to_le_bytes());
        b.extend_from_slice(&(self.cm_config.len() as u32).to_le_bytes());
        b.extend_from_slice(&self.cm_config);
        if let Some(p) = self.part {
            b.extend_from_slice(&p.to_bytes());
        }
        if let Some(base) = self.base {
            b.extend_from_slice(&base.sha256);
            b.extend_from_slice(&base.len.to_le_bytes());
        }
        let check = xxh3_64(&b);
        b.extend_from_slice(&check.to_le_bytes());
        b
    }

    /// Reads and validates a header; returns it with its length in bytes.
    pub fn read(r: &mut impl Read) -> Result<(Header, u64)> {
        let magic: [u8; 4] = match read_array(r, "no header") {
            Ok(m) => m,
            Err(Error::Truncated(_)) => return Err(Error::NotAnArchive),
            Err(e) => return Err(e),
        };
        if magic != MAGIC {
            return Err(Error::NotAnArchive);
        }
        let fixed: [u8; 20] = read_array(r, "inside the header")?;
        let version = u16_at(&fixed, 0);
        if version != VERSION {
            return Err(Error::UnsupportedVersion {
                found: version,
                supported: VERSION,
            });
        }
        let config_len = u32_at(&fixed, 16);
        if config_len > MAX_CONFIG_LEN {
            return Err(Error::Corrupt(format!(
                "header declares a {config_len}-byte model configuration"
            )));
        }
        let mut config = vec![0u8; config_len as usize];
        r.read_exact(&mut config)
            .map_err(|e| Error::eof_as_truncated(e, "inside the header"))?;
        let flags = u16_at(&fixed, 2);
        let part_bytes: Option<[u8; PART_LEN]> = match flags & FLAG_PART {
            0 => None,
            _ => Some(read_array(r, "inside the header")?),
        };
        let base_bytes: Option<[u8; BASE_LEN]> = match flags & FLAG_BASE {
            0 => None,
            _ => Some(read_array(r, "inside the header")?),
        };
        let check: [u8; 8] = read_array(r, "inside the header")?;
        let mut all = Vec::with_capacity(24 + config.len() + PART_LEN);
        all.extend_from_slice(&magic);
        all.extend_from_slice(&fixed);
        all.extend_from_slice(&config);
        if let Some(p) = &part_bytes {
            all.extend_from_slice(p);
        }
        if let Some(b) = &base_bytes {
            all.extend_from_slice(b);
        }
        if xxh3_64(&all) != u64::from_le_bytes(check) {
            return Err(Error::Checksum("the header".into()));
        }
        let h = Header {
            version,
            flags: flags & !(FLAG_PART | FLAG_BASE),
            engine_version: u32_at(&fixed, 4),
            block_size: u64_at(&fixed, 8),
            cm_config: config,
            part: part_bytes.map(|b| Part::from_bytes(&b)).transpose()?,
            base: base_bytes.map(|b| BaseId {
                sha256: b[..32].try_into().unwrap_or_default(),
                len: u64_at(&b, 32),
            }),
        };
        if h.flags != 0 {
            return Err(Error::Corrupt(format!(
                "unknown header flags {:#x}",
                h.flags
            )));
        }
        if h.block_size == 0 || h.block_size > MAX_BLOCK_SIZE {
            return Err(Error::Corrupt(format!(
                "block size {} out of range",
                h.block_size
            )));
        }
        Ok((h, all.len() as u64 + 8))
    }
}

/// Per-block header preceding each payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockRecord {
    /// How the payload is coded.
    pub codec: Codec,
    /// Length of the block's original bytes.
    pub raw_len: u64,
    /// Length of the payload that follows.
    pub payload_len: u64,
    /// xxh3-64 of the block's original bytes.
    pub raw_hash: u64,
    /// xxh3-64 of the payload bytes.
    pub payload_hash: u64,
}

/// What follows a tag byte in the block sequence.
pub enum Next {
    /// A block record; its payload follows.
    Block(BlockRecord),
    /// The end tag; the trailer follows.
    End,
}

impl BlockRecord {
    /// Serialised length including the tag byte.
    pub const LEN: u64 = 1 + RECORD_LEN as u64;

    /// Writes the record (tag byte first).
    pub fn write(&self, w: &mut impl Write) -> std::io::Result<()> {
        let mut b = [0u8; 1 + RECORD_LEN];
        b[0] = self.codec.tag();
        b[1..9].copy_from_slice(&self.raw_len.to_le_bytes());
        b[9..17].copy_from_slice(&self.payload_len.to_le_bytes());
        b[17..25].copy_from_slice(&self.raw_hash.to_le_bytes());
        b[25..33].copy_from_slice(&self.payload_hash.to_le_bytes());
        let check = xxh3_64(&b[..33]) as u32;
        b[33..37].copy_from_slice(&check.to_le_bytes());
        w.write_all(&b)
    }

    /// Reads the next tag and, for a block, its record; validates it against `block_size`.
    pub fn read_next(r: &mut impl Read, block_size: u64) -> Result<Next> {
        let [tag] = read_array::<1>(r, "missing end of archive")?;
        if tag == TAG_END {
            return Ok(Next::End);
        }
        let codec = Codec::from_tag(tag)?;
        let rest: [u8; RECORD_LEN] = read_array(r, "inside a block header")?;
        let mut all = [0u8; 1 + RECORD_LEN];
        all[0] = tag;
        all[1..].copy_from_slice(&rest);
        if xxh3_64(&all[..33]) as u32 != u32_at(&all, 33) {
            return Err(Error::Checksum("a block header".into()));
        }
        let rec = BlockRecord {
            codec,
            raw_len: u64_at(&all, 1),
            payload_len: u64_at(&all, 9),
            raw_hash: u64_at(&all, 17),
            payload_hash: u64_at(&all, 25),
        };
        rec.validate(block_size)?;
        Ok(Next::Block(rec))
    }

    /// Checks the lengths against the archive's block size and the codec's rules.
    fn validate(&self, block_size: u64) -> Result<()> {
        lengths_valid(self.codec, self.raw_len, self.payload_len, block_size)
    }
}

/// Checks a block's lengths (`raw_len` original, `payload_len` coded by `codec`) against the
/// archive's block size and the codec's rules, as its record and its table entry must.
fn lengths_valid(codec: Codec, raw_len: u64, payload_len: u64, block_size: u64) -> Result<()> {
    if raw_len == 0 {
        return Err(Error::Corrupt("a block of length 0".into()));
    }
    if raw_len > block_size {
        return Err(Error::Corrupt(format!(
            "block length {raw_len} exceeds the block size {block_size}"
        )));
    }
    let ok = match codec {
        Codec::Stored => payload_len == raw_len,
        // The context-mixing codec decodes at tens of KB/s: a block may not claim more than
        // `CM_MAX_RATIO` bytes per payload byte (its encoder keeps to that).
        Codec::Cm | Codec::Field => payload_len < raw_len && cm_fits(raw_len, payload_len),
        Codec::Zstd
        | Codec::Planes
        | Codec::TensorHeader
        | Codec::Recent
        | Codec::Scaled
        | Codec::Repeated
        | Codec::Copies
        | Codec::Swapped
        | Codec::Lzma
        | Codec::Delta
        | Codec::ByteTable
        | Codec::Jpeg
        | Codec::Deflate => payload_len < raw_len,
    };
    if !ok {
        return Err(Error::Corrupt(format!(
            "{} block of {raw_len} bytes has a {payload_len}-byte payload",
            codec.name()
        )));
    }
    Ok(())
}

/// One block table entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableEntry {
    /// Offset of the block's tag byte from the start of the archive.
    pub offset: u64,
    /// Original length of the block.
    pub raw_len: u64,
    /// Payload length of the block.
    pub payload_len: u64,
    /// Codec of the block.
    pub codec: Codec,
}

/// The trailer's whole-data checksum, built block by block: the xxh3-64 of the blocks'
/// original checksums in order (8 bytes each).
#[derive(Default)]
pub struct DataHash {
    hasher: checksum::Xxh3,
}

impl DataHash {
    /// Takes in the next block's (verified) checksum of its original bytes.
    pub fn block(&mut self, raw_hash: u64) {
        self.hasher.update(&raw_hash.to_le_bytes());
    }

    /// The checksum of the blocks taken in so far.
    pub fn digest(&self) -> u64 {
        self.hasher.digest()
    }
}

/// The trailer: totals, whole-data checksum and the block table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trailer {
    /// Total original length.
    pub total_len: u64,
    /// Checksum of the whole original data (see `DataHash`).
    pub data_hash: u64,
    /// One entry per block, in order.
    pub table: Vec<TableEntry>,
}

impl Trailer {
    /// Writes the end tag, trailer and tail.
    pub fn write(&self, w: &mut impl Write) -> std::io::Result<()> {
        let mut b = Vec::with_capacity(32 + self.table.len() * TABLE_ENTRY_LEN);
        b.push(TAG_END);
        b.extend_from_slice(&(self.table.len() as u64).to_le_bytes());
        b.extend_from_slice(&self.total_len.to_le_bytes());
        b.extend_from_slice(&self.data_hash.to_le_bytes());
        for e in &self.table {
            b.extend_from_slice(&e.offset.to_le_bytes());
            b.extend_from_slice(&e.raw_len.to_le_bytes());
            b.extend_from_slice(&e.payload_len.to_le_bytes());
            b.push(e.codec.tag());
        }
        let check = xxh3_64(&b);
        b.extend_from_slice(&check.to_le_bytes());
        let len = b.len() as u64;
        b.extend_from_slice(&len.to_le_bytes());
        b.extend_from_slice(&END_MAGIC);
        w.write_all(&b)
    }

    /// Bytes the end tag, trailer and tail occupy in the archive.
    pub fn encoded_len(&self) -> u64 {
        1 + 24 + (TABLE_ENTRY_LEN * self.table.len()) as u64 + 8 + TAIL_LEN
    }

    /// Reads the trailer after the end tag (already consumed) and the tail.
    pub fn read_after_tag(r: &mut impl Read) -> Result<Trailer> {
        let fixed: [u8; 24] = read_array(r, "inside the trailer")?;
        let count = u64_at(&fixed, 0);
        // A table larger than any possible archive is corruption, not a reason to allocate.
        if count > (u64::MAX / 2) / MAX_BLOCK_SIZE.max(1) || count > 1 << 32 {
            return Err(Error::Corrupt(format!("trailer declares {count} blocks")));
        }
        let mut hashed = vec![TAG_END];
        hashed.extend_from_slice(&fixed);
        let mut table = Vec::new();
        for _ in 0..count {
            let e: [u8; TABLE_ENTRY_LEN] = read_array(r, "inside the block table")?;
            hashed.extend_from_slice(&e);
            table.push(TableEntry {
                offset: u64_at(&e, 0),
                raw_len: u64_at(&e, 8),
                payload_len: u64_at(&e, 16),
                codec: Codec::from_tag(e[24])?,
            });
        }
        let tail: [u8; 8 + 8 + 4] = read_array(r, "inside the trailer")?;
        if xxh3_64(&hashed) != u64_at(&tail, 0) {
            return Err(Error::Checksum("the trailer".into()));
        }
        if u64_at(&tail, 8) != hashed.len() as u64 + 8 || tail[16..20] != END_MAGIC {
            return Err(Error::Corrupt("bad archive tail".into()));
        }
        Ok(Trailer {
            total_len: u64_at(&fixed, 8),
            data_hash: u64_at(&fixed, 16),
            table,
        })
    }

    /// Reads the trailer of a seekable archive from its end.
    pub fn read_from_end<R: Read + std::io::Seek>(r: &mut R) -> Result<Trailer> {
        use std::io::SeekFrom;
        let end = r.seek(SeekFrom::End(0))?;
        if end < TAIL_LEN {
            return Err(Error::Truncated("no trailer"));
        }
        r.seek(SeekFrom::End(-(TAIL_LEN as i64)))?;
        let tail: [u8; 12] = read_array(r, "no trailer")?;
        if tail[8..12] != END_MAGIC {
            return Err(Error::Truncated("no end marker"));
        }
        let len = u64_at(&tail, 0);
        if len < 33 || len > end - TAIL_LEN {
            return Err(Error::Corrupt("bad trailer length".into()));
        }
        r.seek(SeekFrom::Start(end - TAIL_LEN - len))?;
        let [tag] = read_array::<1>(r, "no trailer")?;
        if tag != TAG_END {
            return Err(Error::Corrupt(
                "trailer does not start with the end tag".into(),
            ));
        }
        Trailer::read_after_tag(r)
    }

    /// Checks that the block table describes an archive whose header is `header_len` bytes and
    /// whose end tag is at `end_at`: blocks one after the other from the header on, the end
    /// tag right after the last, the total length their sum, and each block's lengths within
    /// `block_size` and its codec's rules; what a decoder would find reading the archive
    /// through (two archives one after the other do not pass).
    pub fn check_table(&self, header_len: u64, end_at: u64, block_size: u64) -> Result<()> {
        let bad = || Error::Corrupt("block table does not match the archive".into());
        let (mut at, mut total) = (header_len, 0u64);
        for e in &self.table {
            if e.offset != at {
                return Err(bad());
            }
            lengths_valid(e.codec, e.raw_len, e.payload_len, block_size)?;
            at = at
                .checked_add(BlockRecord::LEN)
                .and_then(|a| a.checked_add(e.payload_len))
                .ok_or_else(bad)?;
            total = total.checked_add(e.raw_len).ok_or_else(bad)?;
        }
        if at != end_at || total != self.total_len {
            return Err(bad());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn header_round_trip_and_checks() {
        let h = Header {
            version: VERSION,
            flags: 0,
            engine_version: 1,
            block_size: 1 << 20,
            cm_config: vec![1, 4, 2],
            part: None,
            base: None,
        };
        let b = h.to_bytes();
        let (back, len) = Header::read(&mut Cursor::new(&b)).unwrap();
        assert_eq!(back, h);
        assert_eq!(len, b.len() as u64);
        let based = Header {
            base: Some(BaseId {
                sha256: [7; 32],
                len: 12345,
            }),
            ..h.clone()
        };
        let bb = based.to_bytes();
        assert_eq!(bb.len(), b.len() + BASE_LEN);
        assert_eq!(Header::read(&mut Cursor::new(&bb)).unwrap().0, based);
        let mut bad = b.clone();
        let next = VERSION + 1;
        bad[4..6].copy_from_slice(&next.to_le_bytes());
        assert!(matches!(
            Header::read(&mut Cursor::new(&bad)),
            Err(Error::UnsupportedVersion { found, .. }) if found == next
        ));
        let mut bad = b.clone();
        bad[13] ^= 1;
        assert!(matches!(
            Header::read(&mut Cursor::new(&bad)),
            Err(Error::Checksum(_))
        ));
        assert!(matches!(
            Header::read(&mut Cursor::new(&b[..10])),
            Err(Error::Truncated(_))
        ));
        assert!(matches!(
            Header::read(&mut Cursor::new(b"PK\x03\x04zz")),
            Err(Error::NotAnArchive)
        ));
    }

    #[test]
    fn trailer_round_trip() {
        let t = Trailer {
            total_len: 10,
            data_hash: 42,
            table: vec![TableEntry {
                offset: 30,
                raw_len: 10,
                payload_len: 10,
                codec: Codec::Stored,
            }],
        };
        let mut b = vec![0u8; 7];
        t.write(&mut b).unwrap();
        assert_eq!(b.len() as u64, 7 + t.encoded_len());
        assert_eq!(Trailer::read_from_end(&mut Cursor::new(&b)).unwrap(), t);
        assert_eq!(
            Trailer::read_after_tag(&mut Cursor::new(&b[8..])).unwrap(),
            t
        );
    }
}
