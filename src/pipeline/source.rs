//! Where the pipeline's bytes come from: a stream read into pooled buffers, or an input already
//! in memory (a mapped file) whose blocks are lent out in place, with no copy.

use super::buffers::Buffers;
use crate::format::checksum::Xxh3;
use std::io::Read;
use std::ops::Deref;

/// Bytes of a block or payload read (and hashed) at a time.
const READ_PIECE: usize = 128 << 10;

/// A block's or payload's bytes: a pooled buffer they were read into, or the input's own.
pub(crate) enum Bytes<'a> {
    /// Read into a buffer of the pool.
    Pooled(Vec<u8>),
    /// Lent from an input in memory.
    Lent(&'a [u8]),
}

impl Deref for Bytes<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Pooled(v) => v,
            Bytes::Lent(s) => s,
        }
    }
}

/// An archive or input read front to back: small records through `Read`, blocks through `take`.
pub(crate) trait Source<'a>: Read {
    /// The next `len` bytes (fewer where the input ends) and their xxh3-64.
    fn next_bytes(&mut self, len: usize, pool: &Buffers) -> std::io::Result<(Bytes<'a>, u64)>;

    /// What gives finished bytes back.
    fn returns(&self) -> Returns<'a>;
}

/// Gives finished bytes back: buffers to their pool, lent pages of a mapped file to the
/// system (they are read again from the page cache if needed), so resident memory stays
/// bounded by the blocks in flight.
#[derive(Clone, Copy)]
pub(crate) struct Returns<'a> {
    map: Option<&'a memmap2::Mmap>,
}

impl Returns<'_> {
    /// Done with `bytes`.
    pub fn give(&self, bytes: Bytes<'_>, pool: &Buffers) {
        match bytes {
            Bytes::Pooled(v) => pool.give(v),
            Bytes::Lent(s) => self.release(s),
        }
    }

    #[cfg(unix)]
    fn release(&self, s: &[u8]) {
        let Some(map) = self.map else { return };
        let start = (s.as_ptr() as usize).wrapping_sub(map.as_ptr() as usize);
        if s.is_empty() || start >= map.len() || s.len() > map.len() - start {
            return;
        }
        // SAFETY: the map is a read-only mapping of a file; dropping its pages only makes a
        // later read fault them in again from the file, so every reference stays valid.
        // Failure only leaves the pages resident.
        let _ = unsafe {
            map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, s.len())
        };
    }

    #[cfg(not(unix))]
    fn release(&self, _: &[u8]) {}
}

/// `read_full` in pieces of `READ_PIECE` bytes, each hashed right after it is read (while it is
/// in cache); returns the number of bytes read and the xxh3-64 of them.
fn read_hashed(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<(usize, u64)> {
    let (mut n, mut h) = (0, Xxh3::new());
    for piece in buf.chunks_mut(READ_PIECE) {
        let got = read_full(r, piece)?;
        h.update(&piece[..got]);
        n += got;
        if got < piece.len() {
            break;
        }
    }
    Ok((n, h.digest()))
}

/// Reads until `buf` is full or the input ends; returns the number of bytes read.
pub(super) fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// A stream, read into pooled buffers.
pub(crate) struct Streamed<R>(pub R);

impl<R: Read> Read for Streamed<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl<'a, R: Read> Source<'a> for Streamed<R> {
    fn next_bytes(&mut self, len: usize, pool: &Buffers) -> std::io::Result<(Bytes<'a>, u64)> {
        let mut buf = pool.sized(len);
        let (n, hash) = read_hashed(&mut self.0, &mut buf)?;
        buf.truncate(n);
        Ok((Bytes::Pooled(buf), hash))
    }

    fn returns(&self) -> Returns<'a> {
        Returns { map: None }
    }
}

/// Bytes already in memory, lent out block by block.
pub(crate) struct InMemory<'a> {
    rest: &'a [u8],
    map: Option<&'a memmap2::Mmap>,
}

impl<'a> InMemory<'a> {
    /// Bytes in memory.
    pub fn new(bytes: &'a [u8]) -> Self {
        InMemory {
            rest: bytes,
            map: None,
        }
    }

    /// A mapped file, whose pages are given back once their block is finished.
    pub fn mapped(map: &'a memmap2::Mmap) -> Self {
        InMemory {
            rest: &map[..],
            map: Some(map),
        }
    }
}

impl Read for InMemory<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.rest.read(buf)
    }
}

impl<'a> Source<'a> for InMemory<'a> {
    fn next_bytes(&mut self, len: usize, _: &Buffers) -> std::io::Result<(Bytes<'a>, u64)> {
        let (head, rest) = self.rest.split_at(len.min(self.rest.len()));
        self.rest = rest;
        Ok((Bytes::Lent(head), crate::format::checksum::xxh3_64(head)))
    }

    fn returns(&self) -> Returns<'a> {
        Returns { map: self.map }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sources_yield_the_same_bytes_and_hashes() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let pool = Buffers::new();
        let mut a = Streamed(&data[..]);
        let mut b = InMemory::new(&data);
        for len in [0, 5, 200_000, 99_990, 10] {
            let (x, hx) = a.next_bytes(len, &pool).unwrap();
            let (y, hy) = b.next_bytes(len, &pool).unwrap();
            assert_eq!((&x[..], hx), (&y[..], hy));
            assert!(matches!(y, Bytes::Lent(_)));
            a.returns().give(x, &pool);
            b.returns().give(y, &pool);
        }
        let mut tail = [0u8; 8];
        assert_eq!(read_full(&mut a, &mut tail).unwrap(), 0);
        assert_eq!(read_full(&mut b, &mut tail).unwrap(), 0);
    }

    #[test]
    fn released_pages_of_a_map_read_back_the_same() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i * 13 % 256) as u8).collect();
        let mut f = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut f, &data).unwrap();
        // SAFETY: a private temporary file nobody else changes.
        let map = unsafe { memmap2::Mmap::map(&f) }.unwrap();
        let mut src = InMemory::mapped(&map);
        let pool = Buffers::new();
        let (first, _) = src.next_bytes(70_001, &pool).unwrap();
        src.returns().give(first, &pool);
        // The released range (rounded out to pages) reads the file's bytes again.
        assert_eq!(&map[..], &data[..]);
    }
}
