//! Small pieces both directions use: a reader or writer that counts its bytes, and a progress
//! callback that ignores them.

use std::io::Write;

/// Reader or writer wrapper counting the bytes that pass through it.
pub(super) struct Counting<T> {
    pub(super) inner: T,
    pub(super) count: u64,
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

/// A progress callback that ignores what it is told.
pub(super) fn noop(_: u64) {}
