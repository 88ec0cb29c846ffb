//! What computes the neural codec's predictions for a block. The CPU
//! backend runs them on the calling worker thread; a CUDA stream pool can implement the same
//! trait. Each backend owns one workspace arena shared by all of its workers.

use super::{decode, encode, NeuralConfig, ProgressFn, Workspace};
use crate::error::Result;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Runs the model over blocks.
pub trait Backend: Sync {
    /// Predicts and codes one block; returns the payload.
    fn encode(&self, data: &[u8], model: &NeuralConfig, progress: ProgressFn) -> Vec<u8>;
    /// Decodes one block's payload, appending its `raw_len` bytes to `out`.
    fn decode(
        &self,
        payload: &[u8],
        raw_len: usize,
        model: &NeuralConfig,
        progress: ProgressFn,
        out: &mut Vec<u8>,
    ) -> Result<()>;
}

/// Workspaces shared by a backend's workers: taken for a block, given back after it.
#[derive(Default)]
pub struct Arena {
    free: Mutex<Vec<Workspace>>,
    created: AtomicUsize,
}

impl Arena {
    /// A free workspace, or a new empty one if all are in use.
    pub fn take(&self) -> Workspace {
        let reused = self.free.lock().map(|mut f| f.pop()).unwrap_or(None);
        reused.unwrap_or_else(|| {
            self.created.fetch_add(1, Ordering::Relaxed);
            Workspace::default()
        })
    }

    /// Returns a workspace for reuse.
    pub fn put(&self, ws: Workspace) {
        if let Ok(mut f) = self.free.lock() {
            f.push(ws);
        }
    }

    /// Workspaces created so far (at most the number of blocks ever in flight at once).
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

impl Backend for CpuBackend {
    fn encode(&self, data: &[u8], model: &NeuralConfig, progress: ProgressFn) -> Vec<u8> {
        let (payload, ws) = encode(data, model.params, self.arena.take(), progress);
        self.arena.put(ws);
        payload
    }

    fn decode(
        &self,
        payload: &[u8],
        raw_len: usize,
        model: &NeuralConfig,
        progress: ProgressFn,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let (done, ws) = decode(
            payload,
            raw_len,
            model.params,
            self.arena.take(),
            progress,
            out,
        );
        self.arena.put(ws);
        done
    }
}
