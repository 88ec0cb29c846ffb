//! Whether bytes look like text, for the choice of the text pack.

/// Share of bytes in a text (printable ASCII, tabs, line ends, and any byte of 128 or more,
/// as in UTF-8) at or above which data looks like text: binaries measured here stay under
/// three quarters, a terminal transcript with escape sequences is above nine tenths.
const TEXT_MIN: f64 = 0.85;

/// Bytes of an input's start that decide whether its archive names the text pack.
pub const TEXT_HEAD: usize = 64 << 10;

/// Whether `data` looks like text, for the choice of a text pack.
pub fn looks_like_text(data: &[u8]) -> bool {
    let texty = data
        .iter()
        .filter(|&&b| matches!(b, b'\t' | b'\n' | b'\r' | 0x20..=0x7e | 0x80..))
        .count();
    !data.is_empty() && texty as f64 >= TEXT_MIN * data.len() as f64
}
