//! Byte buffers that go round between the pipeline's stages instead of being allocated for
//! every block: fresh memory costs a page fault every 4 KiB, which took a fifth of a core
//! decoding at 1 GB/s.

use crossbeam_channel::{unbounded, Receiver, Sender};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A pool of byte buffers; any stage may take one and give it back.
pub(crate) struct Buffers {
    back: Sender<Vec<u8>>,
    ready: Receiver<Vec<u8>>,
    /// The largest length asked for so far: new buffers get this much room.
    largest: AtomicUsize,
}

impl Buffers {
    /// An empty pool.
    pub fn new() -> Self {
        Self::with_room(0)
    }

    /// An empty pool whose new buffers get room for at least `room` bytes (the largest block
    /// expected, so that one buffer serves every block instead of one per larger block).
    pub fn with_room(room: usize) -> Self {
        let (back, ready) = unbounded();
        Buffers {
            back,
            ready,
            largest: AtomicUsize::new(room),
        }
    }

    /// A given-back buffer with room for `len` bytes (those too small are dropped), or else the
    /// room a new one gets: the largest length asked for so far.
    fn find(&self, len: usize) -> Result<Vec<u8>, usize> {
        let room = self.largest.fetch_max(len, Ordering::Relaxed).max(len);
        self.ready
            .try_iter()
            .find(|b| b.capacity() >= len)
            .ok_or(room)
    }

    /// An empty buffer with room for `len` bytes.
    pub fn empty(&self, len: usize) -> Vec<u8> {
        match self.find(len) {
            Ok(mut b) => {
                b.clear();
                b
            }
            Err(room) => Vec::with_capacity(room),
        }
    }

    /// A buffer of `len` bytes to read into; its contents are zeros or bytes of earlier blocks.
    pub fn sized(&self, len: usize) -> Vec<u8> {
        let mut b = match self.find(len) {
            Ok(b) => b,
            // Zeroed by the allocator (fresh pages), not written here.
            Err(room) => vec![0; room],
        };
        // Zeroes only bytes beyond the buffer's last length.
        b.resize(len, 0);
        b
    }

    /// Gives a buffer back for later blocks.
    pub fn give(&self, b: Vec<u8>) {
        // Cannot fail: the receiver lives in `self`.
        let _ = self.back.send(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_reused_when_large_enough() {
        let pool = Buffers::new();
        let a = pool.sized(1000);
        assert_eq!(a.len(), 1000);
        let p = a.as_ptr();
        pool.give(a);
        let b = pool.empty(500);
        assert!(b.is_empty() && b.capacity() >= 1000);
        assert_eq!(b.as_ptr(), p);
        pool.give(b);
        // Too small: dropped, and the new one has room for the request.
        let c = pool.sized(5000);
        assert_eq!(c.len(), 5000);
        assert!(pool.ready.is_empty());
        // A new buffer gets the largest length asked for so far.
        assert!(pool.empty(10).capacity() >= 5000);
    }
}
