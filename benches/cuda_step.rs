//! The GPU harness (feature `cuda`): one online-training step of an MLP shaped like the neural
//! codec's network (96 inputs, a hidden layer, 256 outputs, 16 lanes a step: forward, softmax,
//! cross-entropy backward, Adam), run on the CPU engine and on the GPU.
//!
//! 1. Checks that a long run of steps gives the same probabilities and weights, bit for bit.
//! 2. Times the step: the CPU on 1 and on every core, the GPU with 1 to 64 streams (one CPU
//!    thread driving each), each step's inputs copied in and its probabilities copied out as
//!    the range coder would need them.
//!
//! `cargo bench --features cuda --bench cuda_step [-- STEPS]` (default 2000 steps); on a GPU
//! machine without Rust, `scripts/gpu_check.sh prepare` builds it and `scripts/gpu_check.sh` runs it.

use sep::internals::engine::cuda::{Buf, Gpu};
use sep::internals::engine::kernels::{
    adam, matmul_acc, outer_acc, relu, relu_backward, softmax_rows, transpose, AdamStep,
};
use std::sync::Arc;
use std::time::Instant;

const IN: usize = 96;
const OUT: usize = 256;
const ROWS: usize = 16;
const STEP: AdamStep = AdamStep {
    lr: 2e-3,
    b1: 0.9,
    b2: 0.999,
    eps: 1e-8,
};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn uniform(&mut self, scale: f32) -> f32 {
        ((self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
    }
}

/// One step's inputs: sparse rows (about a third zeros, as after ReLU and one-hots) and targets.
fn inputs(rng: &mut Rng) -> (Vec<f32>, Vec<i32>) {
    let x = (0..ROWS * IN)
        .map(|_| {
            if rng.next().is_multiple_of(3) {
                0.0
            } else {
                rng.uniform(1.0)
            }
        })
        .collect();
    let y = (0..ROWS).map(|_| (rng.next() % 256) as i32).collect();
    (x, y)
}

/// The network on the CPU.
#[derive(Clone)]
struct Cpu {
    hid: usize,
    w1: Vec<f32>,
    w2: Vec<f32>,
    g1: Vec<f32>,
    g2: Vec<f32>,
    m1: Vec<f32>,
    v1: Vec<f32>,
    m2: Vec<f32>,
    v2: Vec<f32>,
    w2t: Vec<f32>,
    h: Vec<f32>,
    z: Vec<f32>,
    dh: Vec<f32>,
}

impl Cpu {
    fn new(hid: usize) -> Self {
        let mut rng = Rng(0x5EED);
        let s1 = (6.0 / (IN + hid) as f32).sqrt();
        let s2 = (6.0 / (hid + OUT) as f32).sqrt();
        Cpu {
            hid,
            w1: (0..IN * hid).map(|_| rng.uniform(s1)).collect(),
            w2: (0..hid * OUT).map(|_| rng.uniform(s2)).collect(),
            g1: vec![0.0; IN * hid],
            g2: vec![0.0; hid * OUT],
            m1: vec![0.0; IN * hid],
            v1: vec![0.0; IN * hid],
            m2: vec![0.0; hid * OUT],
            v2: vec![0.0; hid * OUT],
            w2t: vec![0.0; hid * OUT],
            h: vec![0.0; ROWS * hid],
            z: vec![0.0; ROWS * OUT],
            dh: vec![0.0; ROWS * hid],
        }
    }

    /// One step; `probs` receives the forward pass's probabilities.
    fn step(&mut self, x: &[f32], y: &[i32], probs: &mut [f32]) {
        let hid = self.hid;
        self.h.fill(0.0);
        matmul_acc(x, &self.w1, &mut self.h, IN, hid);
        relu(&mut self.h);
        self.z.fill(0.0);
        matmul_acc(&self.h, &self.w2, &mut self.z, hid, OUT);
        softmax_rows(&mut self.z, OUT);
        probs.copy_from_slice(&self.z);
        for (b, &c) in y.iter().enumerate() {
            self.z[b * OUT + c as usize] -= 1.0;
        }
        outer_acc(&self.h, &self.z, &mut self.g2, hid, OUT);
        transpose(&self.w2, &mut self.w2t, hid, OUT);
        self.dh.fill(0.0);
        matmul_acc(&self.z, &self.w2t, &mut self.dh, OUT, hid);
        relu_backward(&self.h, &mut self.dh);
        outer_acc(x, &self.dh, &mut self.g1, IN, hid);
        adam(&mut self.w1, &mut self.g1, &mut self.m1, &mut self.v1, STEP);
        adam(&mut self.w2, &mut self.g2, &mut self.m2, &mut self.v2, STEP);
    }
}

/// The same network on a GPU stream.
struct Device {
    hid: usize,
    s: Arc<cudarc::driver::CudaStream>,
    x: Buf,
    y: cudarc::driver::CudaSlice<i32>,
    w1: Buf,
    w2: Buf,
    g1: Buf,
    g2: Buf,
    m1: Buf,
    v1: Buf,
    m2: Buf,
    v2: Buf,
    w2t: Buf,
    h: Buf,
    z: Buf,
    dh: Buf,
}

impl Device {
    fn new(gpu: &Gpu, cpu: &Cpu) -> sep::Result<Self> {
        let s = gpu.stream()?;
        let up = |v: &[f32]| gpu.upload(&s, v);
        Ok(Device {
            hid: cpu.hid,
            x: up(&vec![0.0; ROWS * IN])?,
            y: gpu.upload_classes(&s, &[0; ROWS])?,
            w1: up(&cpu.w1)?,
            w2: up(&cpu.w2)?,
            g1: up(&cpu.g1)?,
            g2: up(&cpu.g2)?,
            m1: up(&cpu.m1)?,
            v1: up(&cpu.v1)?,
            m2: up(&cpu.m2)?,
            v2: up(&cpu.v2)?,
            w2t: up(&cpu.w2t)?,
            h: up(&cpu.h)?,
            z: up(&cpu.z)?,
            dh: up(&cpu.dh)?,
            s,
        })
    }

    fn step(&mut self, gpu: &Gpu, x: &[f32], y: &[i32], probs: &mut [f32]) -> sep::Result<()> {
        let (s, hid) = (&self.s, self.hid);
        let err = |e: cudarc::driver::DriverError| sep::Error::Device(format!("{e:?}"));
        gpu.write(s, x, &mut self.x)?;
        s.memcpy_htod(y, &mut self.y).map_err(err)?;
        s.memset_zeros(&mut self.h).map_err(err)?;
        gpu.matmul_acc(s, &self.x, &self.w1, &mut self.h, (ROWS, IN, hid))?;
        gpu.relu(s, &mut self.h, ROWS * hid)?;
        s.memset_zeros(&mut self.z).map_err(err)?;
        gpu.matmul_acc(s, &self.h, &self.w2, &mut self.z, (ROWS, hid, OUT))?;
        gpu.softmax_rows(s, &mut self.z, ROWS, OUT)?;
        s.memcpy_dtoh(&self.z, probs).map_err(err)?;
        gpu.cross_entropy_grad(s, &mut self.z, &self.y, ROWS, OUT)?;
        gpu.outer_acc(s, &self.h, &self.z, &mut self.g2, (ROWS, hid, OUT))?;
        gpu.transpose(s, &self.w2, &mut self.w2t, hid, OUT)?;
        s.memset_zeros(&mut self.dh).map_err(err)?;
        gpu.matmul_acc(s, &self.z, &self.w2t, &mut self.dh, (ROWS, OUT, hid))?;
        gpu.relu_backward(s, &self.h, &mut self.dh, ROWS * hid)?;
        gpu.outer_acc(s, &self.x, &self.dh, &mut self.g1, (ROWS, IN, hid))?;
        let n1 = IN * hid;
        let n2 = hid * OUT;
        gpu.adam(
            s,
            &mut self.w1,
            &mut self.g1,
            &mut self.m1,
            &mut self.v1,
            n1,
            STEP,
        )?;
        gpu.adam(
            s,
            &mut self.w2,
            &mut self.g2,
            &mut self.m2,
            &mut self.v2,
            n2,
            STEP,
        )?;
        Ok(())
    }
}

fn bits_equal(a: &[f32], b: &[f32]) -> Option<usize> {
    (0..a.len()).find(|&i| a[i].to_bits() != b[i].to_bits())
}

fn main() -> sep::Result<()> {
    // `cargo bench` passes `--bench`.
    let steps: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let gpu = Gpu::open()?;
    println!("GPU: {}", gpu.name());
    // No fused or approximate instruction may reach the machine code.
    let ptx = sep::internals::engine::cuda::compile()?.to_src();
    let fused = ptx
        .lines()
        .filter(|l| l.contains("fma.") || l.contains(".approx"))
        .count();
    println!(
        "PTX: {} lines, {fused} with fma or approx",
        ptx.lines().count()
    );
    if let Some(path) = std::env::var_os("PTX_OUT") {
        std::fs::write(path, &ptx)?;
    }

    // 1. The same bits, step after step.
    for hid in [32, 256] {
        let mut cpu = Cpu::new(hid);
        let mut dev = Device::new(&gpu, &cpu)?;
        let mut rng = Rng(42);
        let (mut pc, mut pg) = (vec![0.0; ROWS * OUT], vec![0.0; ROWS * OUT]);
        let check = 500;
        for t in 0..check {
            let (x, y) = inputs(&mut rng);
            cpu.step(&x, &y, &mut pc);
            dev.step(&gpu, &x, &y, &mut pg)?;
            if let Some(i) = bits_equal(&pc, &pg) {
                println!(
                    "hidden {hid}: step {t}: probability {i} differs: CPU {:e} GPU {:e}",
                    pc[i], pg[i]
                );
                std::process::exit(1);
            }
        }
        let w1 = gpu.download(&dev.s, &dev.w1)?;
        let w2 = gpu.download(&dev.s, &dev.w2)?;
        if bits_equal(&w1, &cpu.w1).is_some() || bits_equal(&w2, &cpu.w2).is_some() {
            println!("hidden {hid}: weights differ after {check} steps");
            std::process::exit(1);
        }
        println!("hidden {hid}: {check} training steps, every probability and weight identical on CPU and GPU");
    }

    // 2. Time per step; a step codes 16 bytes, one per lane.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("\n| backend | hidden | streams or threads | steps/s | network bytes/s |");
    println!("|---|---:|---:|---:|---:|");
    for hid in [32, 256] {
        for threads in [1, cores] {
            let t0 = Instant::now();
            let n = steps;
            std::thread::scope(|sc| {
                for w in 0..threads {
                    sc.spawn(move || {
                        let mut cpu = Cpu::new(hid);
                        let mut rng = Rng(7 + w as u64);
                        let mut p = vec![0.0; ROWS * OUT];
                        let (x, y) = inputs(&mut rng);
                        for _ in 0..n {
                            cpu.step(&x, &y, &mut p);
                        }
                    });
                }
            });
            let rate = (n * threads) as f64 / t0.elapsed().as_secs_f64();
            println!(
                "| CPU | {hid} | {threads} | {rate:.0} | {:.0} |",
                rate * ROWS as f64
            );
        }
        for streams in [1, 4, 16, 64] {
            let cpu = Cpu::new(hid);
            let mut devs = (0..streams)
                .map(|_| Device::new(&gpu, &cpu))
                .collect::<sep::Result<Vec<_>>>()?;
            let t0 = Instant::now();
            let n = steps;
            let gpu = &gpu;
            let failed = std::thread::scope(|sc| {
                let handles: Vec<_> = devs
                    .iter_mut()
                    .enumerate()
                    .map(|(w, dev)| {
                        sc.spawn(move || -> sep::Result<()> {
                            let mut rng = Rng(7 + w as u64);
                            let mut p = vec![0.0; ROWS * OUT];
                            let (x, y) = inputs(&mut rng);
                            for _ in 0..n {
                                dev.step(gpu, &x, &y, &mut p)?;
                            }
                            Ok(())
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join())
                    .filter(|r| !matches!(r, Ok(Ok(()))))
                    .count()
            });
            if failed > 0 {
                println!("{failed} streams failed");
                std::process::exit(1);
            }
            let rate = (n * streams) as f64 / t0.elapsed().as_secs_f64();
            println!(
                "| GPU | {hid} | {streams} | {rate:.0} | {:.0} |",
                rate * ROWS as f64
            );
        }
    }
    Ok(())
}
