//! What computes the context-mixing codec's predictions for a block. The CPU
//! backend runs them on the calling worker thread; a CUDA stream pool can implement the same
//! trait. Each backend owns one workspace arena shared by all of its workers.

use super::{decode, encode, need, CmConfig, ProgressFn, Workspace};
use crate::error::Result;
use crate::memory::Budget;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// Runs the model over blocks.
pub trait Backend: Sync {
    /// Predicts and codes one block; returns the payload.
    fn encode(&self, data: &[u8], config: &CmConfig, progress: ProgressFn) -> Vec<u8>;
    /// Decodes one block's payload, appending its `raw_len` bytes to `out`.
    fn decode(
        &self,
        payload: &[u8],
        raw_len: usize,
        config: &CmConfig,
        progress: ProgressFn,
        out: &mut Vec<u8>,
    ) -> Result<()>;
}

/// Workspaces shared by a backend's workers: taken for a block, given back after it. At most
/// `WORKSPACES` exist, each up to ~300 MB for large blocks, so that coding stays within 1 GB
/// whatever the number of workers (a worker with a context-mixing block waits for a workspace;
/// workers coding other blocks never do). Decoding, the workspaces kept between blocks count
/// against the run's memory budget, which may free them to make room.
#[derive(Default)]
pub struct Arena {
    free: Mutex<Vec<Workspace>>,
    returned: Condvar,
    created: AtomicUsize,
    budget: Option<Arc<Budget>>,
}

/// Most workspaces an arena creates.
pub const WORKSPACES: usize = 2;

impl Arena {
    /// An arena whose kept workspaces count against `budget`.
    pub fn within(budget: Arc<Budget>) -> Self {
        Arena {
            budget: Some(budget),
            ..Arena::default()
        }
    }

    /// A free workspace (a new empty one instead where it holds more than `room` bytes), a new
    /// empty one if fewer than `WORKSPACES` exist, or else the first one given back.
    fn take(&self, room: u64) -> Workspace {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(ws) = free.pop() {
                let bytes = ws.bytes();
                if let Some(budget) = &self.budget {
                    // Now the block's, whose reservation covers `room`.
                    budget.forget_kept(bytes);
                }
                return match bytes <= room {
                    true => ws,
                    false => Workspace::default(),
                };
            }
            if self.created.load(Ordering::Relaxed) < WORKSPACES {
                self.created.fetch_add(1, Ordering::Relaxed);
                return Workspace::default();
            }
            free = self.returned.wait(free).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Returns a workspace for reuse.
    fn put(&self, ws: Workspace) {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(budget) = &self.budget {
            budget.keep(ws.bytes());
        }
        free.push(ws);
        self.returned.notify_one();
    }

    /// Frees the workspaces kept for reuse; returns the bytes they held.
    pub fn free_kept(&self) -> u64 {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        let bytes = free.iter().map(Workspace::bytes).sum();
        self.created.fetch_sub(free.len(), Ordering::Relaxed);
        free.clear();
        self.returned.notify_all();
        bytes
    }

    /// Takes a workspace for `f` (one of at most `room` bytes), which gives it back; if `f`
    /// panics instead, the workspace is forgotten, so that another may be created and no
    /// waiting worker is left waiting.
    pub fn with<T>(&self, room: u64, f: impl FnOnce(Workspace) -> (T, Workspace)) -> T {
        struct Lost<'a>(&'a Arena);
        impl Drop for Lost<'_> {
            fn drop(&mut self) {
                self.0.created.fetch_sub(1, Ordering::Relaxed);
                self.0.returned.notify_one();
            }
        }
        let lost = Lost(self);
        let (done, ws) = f(self.take(room));
        std::mem::forget(lost);
        self.put(ws);
        done
    }

    /// Workspaces created so far (at most the number of blocks ever in flight at once, and at
    /// most `WORKSPACES`).
    pub fn created(&self) -> usize {
        self.created.load(Ordering::Relaxed)
    }
}

/// The CPU backend: the model runs on the worker thread with the engine's SIMD kernels.
#[derive(Default)]
pub struct CpuBackend {
    /// Workspaces of this backend's workers.
    pub arena: Arena,
}

impl CpuBackend {
    /// A backend whose kept workspaces count against `budget` (decoding).
    pub fn within(budget: Arc<Budget>) -> Self {
        CpuBackend {
            arena: Arena::within(budget),
        }
    }
}

impl Backend for CpuBackend {
    fn encode(&self, data: &[u8], config: &CmConfig, progress: ProgressFn) -> Vec<u8> {
        self.arena.with(u64::MAX, |ws| {
            encode(data, config.params, config.pack.as_deref(), ws, progress)
        })
    }

    fn decode(
        &self,
        payload: &[u8],
        raw_len: usize,
        config: &CmConfig,
        progress: ProgressFn,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let room = need(payload, raw_len, config.params, config.pack.as_deref());
        self.arena.with(room, |ws| {
            decode(
                payload,
                raw_len,
                config.params,
                config.pack.as_deref(),
                ws,
                progress,
                out,
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspaces_are_capped_and_a_panic_frees_its_own() {
        let arena = Arena::default();
        std::thread::scope(|s| {
            for _ in 0..6 {
                s.spawn(|| {
                    for _ in 0..20 {
                        arena.with(u64::MAX, |ws| {
                            std::thread::yield_now();
                            ((), ws)
                        });
                    }
                });
            }
        });
        assert_eq!(arena.created(), WORKSPACES);
        // Every workspace lost to a panic: the next worker still gets one.
        for _ in 0..WORKSPACES {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                arena.with(u64::MAX, |_| -> ((), Workspace) { panic!("lost") })
            }));
            assert!(r.is_err());
        }
        arena.with(u64::MAX, |ws| ((), ws));
    }
}
