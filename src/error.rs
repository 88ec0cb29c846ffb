//! Typed errors of the library; `main.rs` turns them into one-line messages.

use std::io;

/// Everything that can go wrong while compressing, decompressing or inspecting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O error from the input or output stream.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The input does not start with the sep magic bytes.
    #[error("not a sep archive (bad magic bytes)")]
    NotAnArchive,
    /// The archive was written by a format version this build cannot read.
    #[error("unsupported archive version {found} (this sep reads version {supported})")]
    UnsupportedVersion {
        /// Version found in the archive.
        found: u16,
        /// Newest version this build reads.
        supported: u16,
    },
    /// The archive's numeric engine is not bit-compatible with this build's.
    #[error("archive needs engine determinism version {found}, this sep has {supported}")]
    EngineVersion {
        /// Version recorded in the archive.
        found: u32,
        /// Version of this build's engine.
        supported: u32,
    },
    /// The archive uses a feature this build no longer has.
    #[error(
        "archive uses {0}, which this sep no longer reads (a sep of before its retirement does)"
    )]
    Retired(&'static str),
    /// The archive ended before it was complete.
    #[error("archive is truncated ({0})")]
    Truncated(&'static str),
    /// A structural field of the archive is invalid.
    #[error("archive is corrupt: {0}")]
    Corrupt(String),
    /// Decoded data does not match the checksum stored in the archive.
    #[error("checksum mismatch in {0}: archive is corrupt")]
    Checksum(String),
    /// A mapped input changed while it was being compressed (the archive would not match it).
    #[error("the input changed while it was being compressed")]
    InputChanged,
    /// The base file (`--patch-from`) changed while the input was compressed against it.
    #[error("the base file changed while the input was being compressed against it")]
    BaseChanged,
    /// An option value is out of range.
    #[error("invalid option: {0}")]
    InvalidOption(String),
    /// The archive's blocks may be larger than the memory limit allows.
    #[error("archive has blocks of up to {needed} bytes, over the memory limit of {limit} bytes")]
    MemoryLimit {
        /// The archive's block size.
        needed: u64,
        /// The limit in force (`Options::memory`).
        limit: u64,
    },
    /// Decoding would need more memory at once than the limit allows.
    #[error(
        "decoding needs {} at once, over the memory limit of {}",
        mib(*needed),
        mib(*limit)
    )]
    MemoryNeed {
        /// Bytes needed at once: the pack's and one block's (its payload, its bytes and its
        /// codec's tables).
        needed: u64,
        /// The limit in force (`Options::memory`).
        limit: u64,
    },
    /// A pack file is not a valid pack, or does not fit the model it is used with.
    #[error("bad pack: {0}")]
    BadPack(String),
    /// The archive was made against a base file (`--patch-from`) that was not given, or
    /// another file was given.
    #[error("archive was made against a base file of {len} bytes (sha256 {sha256}); {}", if *given { "the file given is another" } else { "give it with --patch-from" })]
    BaseMissing {
        /// The base's SHA-256, in hex.
        sha256: String,
        /// Its length.
        len: u64,
        /// Whether a base was given (another one).
        given: bool,
    },
    /// Where packs are looked up (`Options::pack_lookup`: the command line's `SEP_PACKS`)
    /// could not be read, or holds a damaged copy of the pack an archive needs.
    #[error("{0}")]
    PackLookup(String),
    /// The archive needs a pack that was not given.
    #[error("archive needs pack {name} (sha256 {sha256}), which is not available")]
    PackMissing {
        /// The pack's name.
        name: String,
        /// The pack's SHA-256, in hex.
        sha256: String,
    },
    /// The GPU could not be used: no driver or GPU, a failed compilation, launch or copy.
    #[error("GPU: {0}")]
    Device(String),
}

/// Result alias used across the library.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Maps an unexpected end of stream to `Truncated(what)`, keeping other I/O errors.
    pub fn eof_as_truncated(e: io::Error, what: &'static str) -> Error {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            Error::Truncated(what)
        } else {
            Error::Io(e)
        }
    }
}

/// Bytes as MiB with one decimal (whole bytes under 1 MiB), for messages.
fn mib(bytes: u64) -> String {
    match bytes < 1 << 20 {
        true => format!("{bytes} bytes"),
        false => format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64),
    }
}
