//! Byte buffers that go round between the pipeline's stages instead of being allocated for
//! every block: fresh memory costs a page fault every 4 KiB, which took a fifth of a core
//! decoding at 1 GB/s.

use crate::memory::Budget;
use crossbeam_channel::{unbounded, Receiver, Sender};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A counted buffer is reused for a length down to this fraction less than its room (a
/// block's reservation allows for it, `slack`).
const SLACK: usize = 8;

/// The room counted buffers of `len` bytes may have beyond it.
pub(crate) fn slack(len: u64) -> u64 {
    len / SLACK as u64
}

/// A pool of byte buffers; any stage may take one and give it back.
pub(crate) struct Buffers {
    back: Sender<Vec<u8>>,
    ready: Receiver<Vec<u8>>,
    /// The largest length asked for so far: new buffers get this much room.
    largest: AtomicUsize,
    /// Where given-back buffers are counted (decoding), which may free them to make room.
    budget: Option<Arc<Budget>>,
}

impl Buffers {
    /// An empty pool.
    pub fn new() -> Self {
        let (back, ready) = unbounded();
        Buffers {
            back,
            ready,
            largest: AtomicUsize::new(0),
            budget: None,
        }
    }

    /// An empty pool whose given-back buffers count against `budget`.
    pub fn within(budget: Arc<Budget>) -> Self {
        Buffers {
            budget: Some(budget),
            ..Self::new()
        }
    }

    /// Stops counting a given-back buffer of `capacity` bytes as kept (taken, or dropped).
    fn unkeep(&self, capacity: usize) {
        if let Some(budget) = &self.budget {
            budget.forget_kept(capacity as u64);
        }
    }

    /// Frees the given-back buffers; returns the bytes they held.
    pub fn free_kept(&self) -> u64 {
        let mut bytes = 0;
        for b in self.ready.try_iter() {
            bytes += b.capacity() as u64;
        }
        bytes
    }

    /// A given-back buffer with room for `len` bytes (those too small are dropped), or else the
    /// room a new one gets: the largest length asked for so far (counted buffers: `len`).
    fn find(&self, len: usize) -> Result<Vec<u8>, usize> {
        // Counted buffers are as long as asked: a block's reservation covers its length.
        let room = match self.budget {
            Some(_) => len,
            None => self.largest.fetch_max(len, Ordering::Relaxed).max(len),
        };
        self.ready
            .try_iter()
            .find(|b| {
                self.unkeep(b.capacity());
                let within = b.capacity() as u64 <= (len as u64 + slack(len as u64));
                b.capacity() >= len && (self.budget.is_none() || within)
            })
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
        if let Some(budget) = &self.budget {
            budget.keep(b.capacity() as u64);
        }
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
