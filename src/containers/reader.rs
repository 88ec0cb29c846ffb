//! The one byte reader of the container parsers: little-endian fields read in order, failing
//! (`None`) at the first that would pass the end, so a parser never reads outside its input.

/// A little-endian reader over `data` that fails past its end.
pub(super) struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `data`.
    pub(super) fn new(data: &'a [u8]) -> Self {
        Reader { data, at: 0 }
    }

    /// Where the next field starts.
    pub(super) fn at(&self) -> usize {
        self.at
    }

    /// Bytes not yet read.
    pub(super) fn left(&self) -> usize {
        self.data.len() - self.at
    }

    /// The next `n` bytes.
    pub(super) fn take(&mut self, n: u64) -> Option<&'a [u8]> {
        let n = usize::try_from(n).ok()?;
        let s = self.data.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }

    pub(super) fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    pub(super) fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.take(2)?.try_into().ok()?))
    }

    pub(super) fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    pub(super) fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_stop_at_the_end() {
        let mut r = Reader::new(&[1, 2, 0, 3, 0, 0, 0, 9]);
        assert_eq!(r.u8(), Some(1));
        assert_eq!(r.u16(), Some(2));
        assert_eq!(r.u32(), Some(3));
        assert_eq!((r.at(), r.left()), (7, 1));
        assert_eq!(r.u16(), None);
        assert_eq!(r.take(u64::MAX), None);
        assert_eq!(r.take(1), Some(&[9u8][..]));
        assert_eq!(r.u8(), None);
    }
}
