//! The engine on a CUDA GPU (feature `cuda`): the kernels of `kernels`, written again in CUDA C
//! (kernels/engine.cu) and compiled at run time by NVRTC, computing the CPU's
//! bits. The build needs no CUDA toolkit: the driver and NVRTC libraries are loaded when a `Gpu`
//! is opened, and their absence is an error, not a panic.
//!
//! Determinism rests on three things: the compile flags (no FMA contraction, no flush to zero,
//! IEEE division and square root), every operation written as a round-to-nearest intrinsic,
//! and each output element computed by one thread in the CPU's operation order.

use crate::engine::kernels::AdamStep;
use crate::error::{Error, Result};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions, Ptx};
use std::sync::Arc;

/// The kernels' CUDA C source.
const SOURCE: &str = include_str!("../../kernels/engine.cu");
/// Threads per block of every launch.
const THREADS: u32 = 128;

/// A float buffer in the GPU's memory.
pub type Buf = CudaSlice<f32>;

fn device_error(what: &str, e: impl std::fmt::Debug) -> Error {
    Error::Device(format!("{what}: {e:?}"))
}

/// The compiled kernels.
struct Kernels {
    matmul_acc: CudaFunction,
    outer_acc: CudaFunction,
    transpose: CudaFunction,
    softmax_rows: CudaFunction,
    relu: CudaFunction,
    relu_backward: CudaFunction,
    adam: CudaFunction,
    scalar_fn: CudaFunction,
    cross_entropy_grad: CudaFunction,
}

/// The engine's scalar functions, for `Gpu::scalar`.
#[derive(Clone, Copy, Debug)]
pub enum Scalar {
    /// `kernels::exp_fixed`.
    Exp = 0,
    /// `kernels::sigmoid`.
    Sigmoid = 1,
    /// `kernels::ln_fixed`.
    Ln = 2,
}

/// One GPU with the engine's kernels loaded.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    k: Kernels,
}

/// Launch shape for `items` independent outputs, one per thread.
fn shape(items: usize) -> Result<(LaunchConfig, i32)> {
    let n =
        i32::try_from(items).map_err(|_| Error::Device(format!("{items} items in one launch")))?;
    Ok((
        LaunchConfig {
            grid_dim: ((n as u32).div_ceil(THREADS).max(1), 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        },
        n,
    ))
}

/// Refuses a launch whose buffer is shorter than the kernel will index.
fn need(buf: &Buf, len: usize, what: &str) -> Result<()> {
    if buf.len() < len {
        return Err(Error::Device(format!(
            "{what}: buffer of {} for {len} values",
            buf.len()
        )));
    }
    Ok(())
}

fn int(v: usize) -> Result<i32> {
    i32::try_from(v).map_err(|_| Error::Device(format!("size {v} too large for one launch")))
}

/// The kernels compiled to PTX with the flags that keep the CPU's bits.
pub fn compile() -> Result<Ptx> {
    // SAFETY: only probes whether the shared library can be loaded.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(Error::Device("no NVRTC library (libnvrtc) found".into()));
    }
    let opts = CompileOptions {
        ftz: Some(false),
        prec_sqrt: Some(true),
        prec_div: Some(true),
        fmad: Some(false),
        name: Some("engine.cu".into()),
        ..Default::default()
    };
    compile_ptx_with_opts(SOURCE, opts).map_err(|e| device_error("NVRTC", e))
}

impl Gpu {
    /// Opens GPU 0 and compiles the kernels; an error if there is no driver, no GPU or no NVRTC.
    pub fn open() -> Result<Gpu> {
        // SAFETY: only probes whether the shared libraries can be loaded.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(Error::Device("no CUDA driver (libcuda) found".into()));
        }
        let ctx = CudaContext::new(0).map_err(|e| device_error("no usable GPU", e))?;
        let ptx = compile()?;
        let module = ctx
            .load_module(ptx)
            .map_err(|e| device_error("loading kernels", e))?;
        let f = |name: &str| {
            module
                .load_function(name)
                .map_err(|e| device_error(name, e))
        };
        let k = Kernels {
            matmul_acc: f("matmul_acc")?,
            outer_acc: f("outer_acc")?,
            transpose: f("transpose")?,
            softmax_rows: f("softmax_rows")?,
            relu: f("relu")?,
            relu_backward: f("relu_backward")?,
            adam: f("adam")?,
            scalar_fn: f("scalar_fn")?,
            cross_entropy_grad: f("cross_entropy_grad")?,
        };
        Ok(Gpu { ctx, k })
    }

    /// The GPU's name.
    pub fn name(&self) -> String {
        self.ctx.name().unwrap_or_else(|_| "unknown GPU".into())
    }

    /// A new stream of this GPU.
    pub fn stream(&self) -> Result<Arc<CudaStream>> {
        self.ctx
            .new_stream()
            .map_err(|e| device_error("creating a stream", e))
    }

    /// Copies `data` to a new GPU buffer.
    pub fn upload(&self, s: &Arc<CudaStream>, data: &[f32]) -> Result<Buf> {
        s.clone_htod(data)
            .map_err(|e| device_error("copy to GPU", e))
    }

    /// Copies `data` into an existing GPU buffer of at least its length.
    pub fn write(&self, s: &Arc<CudaStream>, data: &[f32], buf: &mut Buf) -> Result<()> {
        need(buf, data.len(), "write")?;
        let mut view = buf.slice_mut(..data.len());
        s.memcpy_htod(data, &mut view)
            .map_err(|e| device_error("copy to GPU", e))
    }

    /// Copies class indices to a new GPU buffer.
    pub fn upload_classes(&self, s: &Arc<CudaStream>, data: &[i32]) -> Result<CudaSlice<i32>> {
        s.clone_htod(data)
            .map_err(|e| device_error("copy to GPU", e))
    }

    /// Copies a GPU buffer back (waits for the stream).
    pub fn download(&self, s: &Arc<CudaStream>, buf: &Buf) -> Result<Vec<f32>> {
        s.clone_dtoh(buf)
            .map_err(|e| device_error("copy from GPU", e))
    }

    /// Waits for everything queued on `s`.
    pub fn sync(&self, s: &Arc<CudaStream>) -> Result<()> {
        s.synchronize().map_err(|e| device_error("stream", e))
    }

    /// `kernels::matmul_acc`: `out[b][j] += sum_k x[b][k] * w[k][j]` (x: rows x k, w: k x n).
    pub fn matmul_acc(
        &self,
        s: &Arc<CudaStream>,
        x: &Buf,
        w: &Buf,
        out: &mut Buf,
        (rows, k, n): (usize, usize, usize),
    ) -> Result<()> {
        need(x, rows * k, "matmul_acc x")?;
        need(w, k * n, "matmul_acc w")?;
        need(out, rows * n, "matmul_acc out")?;
        let (cfg, _) = shape(rows * n)?;
        let (rows, k, n) = (int(rows)?, int(k)?, int(n)?);
        let mut b = s.launch_builder(&self.k.matmul_acc);
        b.arg(x).arg(w).arg(out).arg(&rows).arg(&k).arg(&n);
        // SAFETY: the arguments match the kernel's signature and every buffer holds what the
        // kernel indexes (checked above).
        unsafe { b.launch(cfg) }.map_err(|e| device_error("matmul_acc", e))?;
        Ok(())
    }

    /// `kernels::outer_acc`: `dw[kk][j] += sum_b x[b][kk] * dy[b][j]` (x: rows x k, dy: rows x n).
    pub fn outer_acc(
        &self,
        s: &Arc<CudaStream>,
        x: &Buf,
        dy: &Buf,
        dw: &mut Buf,
        (rows, k, n): (usize, usize, usize),
    ) -> Result<()> {
        need(x, rows * k, "outer_acc x")?;
        need(dy, rows * n, "outer_acc dy")?;
        need(dw, k * n, "outer_acc dw")?;
        let (cfg, _) = shape(k * n)?;
        let (rows, k, n) = (int(rows)?, int(k)?, int(n)?);
        let mut b = s.launch_builder(&self.k.outer_acc);
        b.arg(x).arg(dy).arg(dw).arg(&rows).arg(&k).arg(&n);
        // SAFETY: as in `matmul_acc`.
        unsafe { b.launch(cfg) }.map_err(|e| device_error("outer_acc", e))?;
        Ok(())
    }

    /// `kernels::transpose`: `out` (n x k) = `w` (k x n) transposed.
    pub fn transpose(
        &self,
        s: &Arc<CudaStream>,
        w: &Buf,
        out: &mut Buf,
        k: usize,
        n: usize,
    ) -> Result<()> {
        need(w, k * n, "transpose w")?;
        need(out, k * n, "transpose out")?;
        let (cfg, _) = shape(k * n)?;
        let (k, n) = (int(k)?, int(n)?);
        let mut b = s.launch_builder(&self.k.transpose);
        b.arg(w).arg(out).arg(&k).arg(&n);
        // SAFETY: as in `matmul_acc`.
        unsafe { b.launch(cfg) }.map_err(|e| device_error("transpose", e))?;
        Ok(())
    }

    /// `kernels::softmax_rows` over the first `rows` rows of `n`.
    pub fn softmax_rows(
        &self,
        s: &Arc<CudaStream>,
        z: &mut Buf,
        rows: usize,
        n: usize,
    ) -> Result<()> {
        need(z, rows * n, "softmax_rows")?;
        let (cfg, rows) = shape(rows)?;
        let n = int(n)?;
        let mut b = s.launch_builder(&self.k.softmax_rows);
        b.arg(z).arg(&rows).arg(&n);
        // SAFETY: as in `matmul_acc`.
        unsafe { b.launch(cfg) }.map_err(|e| device_error("softmax_rows", e))?;
        Ok(())
    }

    /// One elementwise kernel over `len` values of one or two buffers.
    fn elementwise(
        &self,
        s: &Arc<CudaStream>,
        f: &CudaFunction,
        a: Option<&Buf>,
        x: &mut Buf,
        len: usize,
        what: &str,
    ) -> Result<()> {
        need(x, len, what)?;
        if let Some(a) = a {
            need(a, len, what)?;
        }
        let (cfg, len) = shape(len)?;
        let mut b = s.launch_builder(f);
        if let Some(a) = a {
            b.arg(a);
        }
        b.arg(x).arg(&len);
        // SAFETY: as in `matmul_acc`; each elementwise kernel takes (in?, out, len).
        unsafe { b.launch(cfg) }.map_err(|e| device_error(what, e))?;
        Ok(())
    }

    /// `kernels::relu` in place over `len` values.
    pub fn relu(&self, s: &Arc<CudaStream>, x: &mut Buf, len: usize) -> Result<()> {
        self.elementwise(s, &self.k.relu, None, x, len, "relu")
    }

    /// `kernels::relu_backward`.
    pub fn relu_backward(
        &self,
        s: &Arc<CudaStream>,
        out: &Buf,
        grad: &mut Buf,
        len: usize,
    ) -> Result<()> {
        self.elementwise(
            s,
            &self.k.relu_backward,
            Some(out),
            grad,
            len,
            "relu_backward",
        )
    }

    /// `kernels::adam` over the first `len` parameters.
    #[allow(clippy::too_many_arguments)]
    pub fn adam(
        &self,
        s: &Arc<CudaStream>,
        p: &mut Buf,
        g: &mut Buf,
        m: &mut Buf,
        v: &mut Buf,
        len: usize,
        step: AdamStep,
    ) -> Result<()> {
        for (buf, what) in [
            (&*p, "adam p"),
            (&*g, "adam g"),
            (&*m, "adam m"),
            (&*v, "adam v"),
        ] {
            need(buf, len, what)?;
        }
        let (cfg, len) = shape(len)?;
        let mut b = s.launch_builder(&self.k.adam);
        b.arg(p).arg(g).arg(m).arg(v).arg(&len);
        b.arg(&step.lr).arg(&step.b1).arg(&step.b2).arg(&step.eps);
        // SAFETY: as in `matmul_acc`.
        unsafe { b.launch(cfg) }.map_err(|e| device_error("adam", e))?;
        Ok(())
    }

    /// The cross-entropy gradient over softmax rows, in place: `z[b][y[b]] -= 1` (the
    /// network's `backward` starts so).
    pub fn cross_entropy_grad(
        &self,
        s: &Arc<CudaStream>,
        z: &mut Buf,
        y: &CudaSlice<i32>,
        rows: usize,
        n: usize,
    ) -> Result<()> {
        need(z, rows * n, "cross_entropy_grad")?;
        if y.len() < rows {
            return Err(Error::Device("cross_entropy_grad: too few classes".into()));
        }
        let (cfg, rows) = shape(rows)?;
        let n = int(n)?;
        let mut b = s.launch_builder(&self.k.cross_entropy_grad);
        b.arg(z).arg(y).arg(&rows).arg(&n);
        // SAFETY: as in `matmul_acc`.
        unsafe { b.launch(cfg) }.map_err(|e| device_error("cross_entropy_grad", e))?;
        Ok(())
    }

    /// One of the engine's scalar functions over `len` values of `x`, into `out`.
    pub fn scalar(
        &self,
        s: &Arc<CudaStream>,
        which: Scalar,
        x: &Buf,
        out: &mut Buf,
        len: usize,
    ) -> Result<()> {
        need(x, len, "scalar x")?;
        need(out, len, "scalar out")?;
        let (cfg, len) = shape(len)?;
        let which = which as i32;
        let mut b = s.launch_builder(&self.k.scalar_fn);
        b.arg(x).arg(out).arg(&len).arg(&which);
        // SAFETY: as in `matmul_acc`.
        unsafe { b.launch(cfg) }.map_err(|e| device_error("scalar_fn", e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
