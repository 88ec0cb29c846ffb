//! The settings of a run and the sizes it reports.

use crate::choice::base::Base;
use crate::choice::cm_predicted;
use crate::choice::text::{pick_pack, TEXT_HEAD};
use crate::codecs::cm::{looks_like_text, pack, CmConfig, Pack, PackId, DEFAULT_LEVEL, LEVELS};
use crate::codecs::float::DType;
use crate::error::{Error, Result};
use crate::format::checksum::hex;
use crate::format::{self, BaseId};
use std::sync::Arc;

/// Default maximum raw bytes per block: large, since the context-mixing codec's model learns from
/// everything before a byte in its block (a 10 MB text cut in two codes 3% larger). Float
/// arrays are cut into blocks of at most `TENSOR_BLOCK_SIZE` whatever this is.
pub const DEFAULT_BLOCK_SIZE: u64 = 32 << 20;
/// Most raw bytes per block of a float array: its codecs gain nothing from longer blocks, and
/// shorter ones spread a file over more cores.
pub const TENSOR_BLOCK_SIZE: u64 = 8 << 20;
/// Most raw bytes per block of general data at the lean level (2): their model
/// gains less from long blocks than it loses by leaving cores idle.
pub const LEAN_BLOCK_SIZE: u64 = 4 << 20;
/// Most raw bytes per block of general data at the fastest level (1), whose model gains least
/// from long blocks: short ones put every core to work on small files too.
pub const FAST_BLOCK_SIZE: u64 = 512 << 10;
/// Default most memory a decoding may take (`Options::memory`): what two of the default
/// level's largest blocks take at once (their model's tables, about 330 MiB each), so that two
/// threads decode side by side.
pub const DEFAULT_MEMORY: u64 = 1 << 30;

/// Shortest input the built-in pack is chosen for: on text of 256 bytes it saves about as
/// much as its name adds to the header.
const AUTO_PACK_MIN: usize = 256;

/// Which pack the context-mixing blocks' models start from.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub enum PackChoice {
    /// The built-in text pack, for the blocks that look like text, where the input's start looks
    /// like text that the context-mixing codec would code and the level's model is the one the pack
    /// was trained for (the default level's); otherwise none.
    #[default]
    Auto,
    /// None: every model starts fresh.
    Off,
    /// This pack, for every context-mixing block.
    Given(Arc<Pack>),
}

/// Settings of a compression or decompression run.
#[derive(Clone)]
#[non_exhaustive]
pub struct Options {
    /// Blocks coded at once (worker threads).
    pub threads: usize,
    /// Maximum raw bytes per block (compression only; decoding uses the archive's).
    pub block_size: u64,
    /// Compression level, 1 (fastest) to 9 (smallest): which model the context-mixing codec runs
    /// (compression only; the archive records it).
    pub level: u8,
    /// Whether the context-mixing codec runs a network: the pack's pre-trained one where the
    /// pack has one, else the level's own where it has one (level 9); false: none at any
    /// level (compression only; the archive records it).
    pub network: bool,
    /// Element type of an input that is a raw float array (compression only).
    pub dtype: Option<DType>,
    /// Called with the number of input bytes finished, from worker threads.
    pub progress: Option<Arc<dyn Fn(u64) + Send + Sync>>,
    /// Called after each block is written with its original and archived sizes.
    pub on_block: Option<Arc<dyn Fn(u64, u64) + Send + Sync>>,
    /// Most bytes a decoding may take (decompression only): the archive's pack and every block in
    /// flight (its payload, its bytes and its codec's tables, which grow with its length) are
    /// counted before they are allocated; a block waits while the blocks before it hold the room,
    /// and an archive that needs more at once (or whose header allows blocks larger than this) is
    /// refused. Code, stacks and per-thread scratch come on top (docs/design.md).
    pub memory: u64,
    /// Which pack the context-mixing blocks' models start from (compression only; the archive
    /// records its name and hash).
    pub pack: PackChoice,
    /// Packs an archive may need (decompression; `pack` counts too).
    pub packs: Vec<Arc<Pack>>,
    /// Called (decompression) only when an archive needs a pack that neither `pack`, `packs`
    /// nor the built-in pack is, with its name and SHA-256 in hex: the pack, `None` where there
    /// is none (the archive is then refused as needing a missing pack), or an error.
    pub pack_lookup: Option<PackLookup>,
    /// An earlier file of the same model (`--patch-from`): compressing a safetensors file,
    /// its tensors that match the base's by name, dtype and shape are coded against them, and
    /// the archive then needs this base to decode (it records its SHA-256 and length).
    pub base: Option<Arc<Base>>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            block_size: DEFAULT_BLOCK_SIZE,
            level: DEFAULT_LEVEL,
            network: true,
            dtype: None,
            progress: None,
            on_block: None,
            memory: DEFAULT_MEMORY,
            pack: PackChoice::Auto,
            packs: Vec::new(),
            pack_lookup: None,
            base: None,
        }
    }
}

impl Options {
    /// Checks that the settings are in range.
    pub fn validate(&self) -> Result<()> {
        if self.threads == 0 || self.threads > 1024 {
            return Err(Error::InvalidOption(format!(
                "threads must be 1..=1024, got {}",
                self.threads
            )));
        }
        if !LEVELS.contains(&self.level) {
            return Err(Error::InvalidOption(format!(
                "level must be {}..={}, got {}",
                LEVELS.start(),
                LEVELS.end(),
                self.level
            )));
        }
        if self.block_size == 0 || self.block_size > format::MAX_BLOCK_SIZE {
            return Err(Error::InvalidOption(format!(
                "block size must be 1..={} bytes, got {}",
                format::MAX_BLOCK_SIZE,
                self.block_size
            )));
        }
        Ok(())
    }

    /// Most raw bytes per block of general data: the block size, or less at the fastest levels.
    pub(crate) fn general_block_size(&self) -> u64 {
        let p = self.cm().params;
        match (p.fast, p.lean) {
            (true, _) => self.block_size.min(FAST_BLOCK_SIZE),
            (_, true) => self.block_size.min(LEAN_BLOCK_SIZE),
            _ => self.block_size,
        }
    }

    /// The context-mixing codec's configuration these options give, without a pack.
    pub(crate) fn cm(&self) -> CmConfig {
        let mut c = CmConfig::for_level(self.level);
        c.params.network = self.network;
        c
    }

    /// The context-mixing codec's configuration to compress `input` (its start, or all of it),
    /// known to hold tensors or not, starting from the pack chosen. The automatic choice looks
    /// at the first `TEXT_HEAD` bytes, and at none of a file with tensors.
    pub(crate) fn cm_for(&self, input: &[u8], tensors: bool) -> Result<CmConfig> {
        let plain = self.cm();
        match &self.pack {
            PackChoice::Given(p) => plain.attach(p.clone()),
            PackChoice::Off => Ok(plain),
            PackChoice::Auto => {
                // A compressed file's own start says nothing: its data's does, which the
                // deflate codec's blocks code.
                let inflated = (!tensors)
                    .then(|| crate::codecs::deflate::inflated_head(input, TEXT_HEAD))
                    .flatten();
                let head = match (tensors, &inflated) {
                    (true, _) => &[][..],
                    (false, Some(data)) => &data[..],
                    (false, None) => &input[..input.len().min(TEXT_HEAD)],
                };
                // Where the start is not text bound for the context-mixing codec, the archive names
                // no pack, which its decoder would otherwise need; nor for inputs so short that the
                // pack's name in the header costs more than the pack saves. A build without the
                // built-in pack names none.
                if !pack::BUILTIN
                    || head.len() < AUTO_PACK_MIN
                    || !looks_like_text(head)
                    || !cm_predicted(head)
                {
                    return Ok(plain);
                }
                // The built-in pack of this level that suits the input, where it has one.
                let fitting = pack::current()?.into_iter().filter(|p| plain.fits(p));
                match pick_pack(fitting.collect(), head) {
                    Some(text) => {
                        let mut c = plain.attach(text)?;
                        c.text_only = true;
                        Ok(c)
                    }
                    None => Ok(plain),
                }
            }
        }
    }

    /// The bytes of the base an archive names (`id`), which must be the base given.
    pub(crate) fn base_for(&self, id: Option<BaseId>) -> Result<Option<&[u8]>> {
        let Some(id) = id else {
            return Ok(None);
        };
        match &self.base {
            Some(b) if b.id == id => Ok(Some(b.bytes())),
            given => Err(Error::BaseMissing {
                sha256: hex(&id.sha256),
                len: id.len,
                given: given.is_some(),
            }),
        }
    }

    /// The pack of `id` among those given, if any.
    pub(crate) fn find_pack(&self, id: &PackId) -> Result<Arc<Pack>> {
        let given = match &self.pack {
            PackChoice::Given(p) => Some(p),
            _ => None,
        };
        if let Some(p) = given.into_iter().chain(&self.packs).find(|p| p.id == *id) {
            return Ok(p.clone());
        }
        if let Some(p) = pack::builtin_of(id)? {
            return Ok(p);
        }
        let found = match &self.pack_lookup {
            Some(lookup) => lookup(&id.name, &id.hex())?,
            None => None,
        };
        match found {
            Some(p) if p.id == *id => Ok(p),
            _ => Err(Error::PackMissing {
                name: id.name.clone(),
                sha256: id.hex(),
            }),
        }
    }
}

/// Finds a pack by its name and SHA-256 in hex (`Options::pack_lookup`).
pub type PackLookup = Arc<dyn Fn(&str, &str) -> Result<Option<Arc<Pack>>> + Send + Sync>;

/// Sizes of a finished run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Bytes of original data.
    pub original_bytes: u64,
    /// Bytes of archive.
    pub archive_bytes: u64,
    /// Number of blocks.
    pub blocks: u64,
    /// Decoding: the most bytes it reserved at once, not counting tables kept for reuse (which
    /// are freed where a block needs their room): `Options::memory` must allow this much for
    /// the archive at this many threads. Compressing: 0.
    pub memory_peak: u64,
}
