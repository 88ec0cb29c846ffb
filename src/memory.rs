//! The memory a decoding may take (`Options::memory`), shared by everything an archive makes
//! it allocate: its pack, each block in flight (payload, output and its codec's tables) and the
//! tables kept between blocks for reuse. Each is reserved before it is allocated and given back
//! once freed; a reservation that does not fit now either waits for blocks in flight to finish
//! or, where nothing else holds any, is refused: that one need alone is over the limit.

use crate::error::{Error, Result};
use std::sync::Mutex;

/// Bytes that may be reserved at once, and how many are.
#[derive(Debug)]
pub struct Budget {
    limit: u64,
    held: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    /// Reserved for the whole run (its pack).
    fixed: u64,
    /// Reserved by blocks in flight.
    busy: u64,
    /// Held by tables kept for reuse, which may be freed to make room.
    kept: u64,
    /// The most reserved at once (kept tables left out: they are freed where room is needed).
    peak: u64,
}

impl Held {
    fn total(&self) -> u64 {
        self.fixed + self.busy + self.kept
    }

    /// Notes what is reserved as the peak where it is.
    fn note(&mut self) {
        self.peak = self.peak.max(self.fixed + self.busy);
    }
}

/// Bytes reserved from a budget, given back when dropped.
#[derive(Debug)]
pub struct Reservation<'a> {
    budget: &'a Budget,
    bytes: u64,
}

/// What a reservation that does not fit now comes to.
#[derive(Debug)]
pub enum Wait<'a> {
    /// Reserved.
    Ready(Reservation<'a>),
    /// Blocks in flight hold the room: try again once one has finished.
    Later,
}

impl Budget {
    /// A budget of `limit` bytes.
    pub fn new(limit: u64) -> Self {
        Budget {
            limit,
            held: Mutex::default(),
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reserves `bytes` if they fit beside what is reserved now, first freeing kept tables
    /// (`free_kept`, which returns the bytes it freed) if that makes room. Where they do not
    /// fit: `Later` while something else is reserved, else the limit error (`bytes` alone is
    /// more than the limit allows).
    pub fn reserve(&self, bytes: u64, free_kept: impl FnOnce() -> u64) -> Result<Wait<'_>> {
        let mut r = Reservation {
            budget: self,
            bytes: 0,
        };
        Ok(match r.grow(bytes, free_kept)? {
            true => Wait::Ready(r),
            false => Wait::Later,
        })
    }

    /// Reserves `bytes` with nothing else in flight to wait for: the limit error where they do
    /// not fit.
    pub fn reserve_now(
        &self,
        bytes: u64,
        free_kept: impl FnOnce() -> u64,
    ) -> Result<Reservation<'_>> {
        match self.reserve(bytes, free_kept)? {
            Wait::Ready(r) => Ok(r),
            Wait::Later => Err(Error::MemoryNeed {
                needed: bytes,
                limit: self.limit,
            }),
        }
    }

    /// Reserves `bytes` for the whole run (a pack the archive needs), or the limit error.
    pub fn reserve_for_run(&self, bytes: u64) -> Result<()> {
        let mut held = self.held();
        if held.fixed.saturating_add(bytes) > self.limit {
            return Err(Error::MemoryNeed {
                needed: held.fixed.saturating_add(bytes),
                limit: self.limit,
            });
        }
        held.fixed += bytes;
        held.note();
        Ok(())
    }

    /// Counts `bytes` of tables kept for reuse.
    pub fn keep(&self, bytes: u64) {
        self.held().kept += bytes;
    }

    /// Stops counting `bytes` of kept tables (freed, or taken up by a reservation).
    pub fn forget_kept(&self, bytes: u64) {
        let mut held = self.held();
        held.kept = held.kept.saturating_sub(bytes);
    }

    /// Bytes reserved or kept now.
    #[cfg(test)]
    fn in_use(&self) -> u64 {
        self.held().total()
    }

    /// The most bytes reserved at once so far (not counting kept tables): the least limit
    /// under which the same reservations would have been made.
    pub fn peak(&self) -> u64 {
        self.held().peak
    }
}

impl Reservation<'_> {
    /// Bytes reserved.
    #[cfg(test)]
    fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Reserves `bytes` more, as `Budget::reserve` does (`true`; `false` for later), where
    /// only what others hold is waited for.
    pub fn grow(&mut self, bytes: u64, free_kept: impl FnOnce() -> u64) -> Result<bool> {
        let budget = self.budget;
        let over = |h: &Held| h.total().saturating_add(bytes) > budget.limit;
        if over(&budget.held()) {
            let freed = free_kept();
            budget.forget_kept(freed);
        }
        let mut held = budget.held();
        if over(&held) {
            if held.busy == self.bytes {
                return Err(Error::MemoryNeed {
                    needed: held.fixed + self.bytes.saturating_add(bytes),
                    limit: budget.limit,
                });
            }
            return Ok(false);
        }
        held.busy += bytes;
        held.note();
        self.bytes += bytes;
        Ok(true)
    }

    /// `grow` with nothing else in flight to wait for: the limit error where it does not fit.
    pub fn grow_now(&mut self, bytes: u64, free_kept: impl FnOnce() -> u64) -> Result<()> {
        match self.grow(bytes, free_kept)? {
            true => Ok(()),
            false => Err(Error::MemoryNeed {
                needed: self.bytes.saturating_add(bytes),
                limit: self.budget.limit,
            }),
        }
    }

    /// Gives back all but `bytes` (a block whose tables are freed, its output still held).
    pub fn shrink_to(&mut self, bytes: u64) {
        let back = self.bytes.saturating_sub(bytes);
        self.budget.held().busy -= back;
        self.bytes -= back;
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        self.budget.held().busy -= self.bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_wait_for_room_and_one_over_the_limit_is_refused() {
        let budget = Budget::new(100);
        let Wait::Ready(a) = budget.reserve(60, || 0).unwrap() else {
            panic!("room for the first")
        };
        assert!(matches!(budget.reserve(50, || 0), Ok(Wait::Later)));
        let mut a = a;
        a.shrink_to(10);
        let b = budget.reserve_now(50, || 0).unwrap();
        assert_eq!(budget.in_use(), 60);
        drop((a, b));
        assert_eq!(budget.in_use(), 0);
        assert!(matches!(
            budget.reserve(101, || 0),
            Err(Error::MemoryNeed {
                needed: 101,
                limit: 100
            })
        ));
        // What the run holds counts; nothing in flight to wait for: refused, naming both.
        budget.reserve_for_run(30).unwrap();
        assert!(matches!(
            budget.reserve(71, || 0),
            Err(Error::MemoryNeed {
                needed: 101,
                limit: 100
            })
        ));
        assert!(budget.reserve_for_run(71).is_err());
    }

    #[test]
    fn a_reservation_grows_waiting_only_for_others() {
        let budget = Budget::new(100);
        let mut own = budget.reserve_now(40, || 0).unwrap();
        let other = budget.reserve_now(40, || 0).unwrap();
        assert!(!own.grow(30, || 0).unwrap());
        drop(other);
        assert!(own.grow(30, || 0).unwrap());
        assert_eq!(own.bytes(), 70);
        // Alone and still too large: refused, naming the whole need.
        assert!(matches!(
            own.grow(31, || 0),
            Err(Error::MemoryNeed {
                needed: 101,
                limit: 100
            })
        ));
    }

    #[test]
    fn kept_tables_are_freed_to_make_room() {
        let budget = Budget::new(100);
        budget.keep(80);
        let mut freed = false;
        let r = budget
            .reserve_now(50, || {
                freed = true;
                80
            })
            .unwrap();
        assert!(freed);
        assert_eq!(budget.in_use(), 50);
        drop(r);
        // Kept tables that cannot be freed (in use elsewhere) leave the reservation waiting
        // only if something is in flight; alone, it is refused.
        budget.keep(80);
        assert!(budget.reserve(50, || 0).is_err());
    }
}
