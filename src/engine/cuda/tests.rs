//! The GPU kernels against the CPU engine, bit for bit. Tests marked `ignore` need a GPU:
//! `cargo test --release --features cuda -- --ignored engine::cuda`.

use super::*;
use crate::engine::kernels::{self, tests::rng};

/// Values that exercise the kernels' edge cases: exact zeros of both signs (skipped by the
/// matrix products), large magnitudes (exp's bounds), and ordinary values.
fn values(seed: &mut u64, len: usize) -> Vec<f32> {
    (0..len)
        .map(|i| match i % 11 {
            0 => 0.0,
            5 => -0.0,
            7 => rng(seed) * 120.0,
            _ => rng(seed) * 4.0,
        })
        .collect()
}

/// Asserts two results are the same bits, naming the first difference.
fn same(what: &str, gpu: &[f32], cpu: &[f32]) {
    assert_eq!(gpu.len(), cpu.len(), "{what}: lengths");
    if let Some(i) = (0..cpu.len()).find(|&i| gpu[i].to_bits() != cpu[i].to_bits()) {
        let d = (0..cpu.len())
            .filter(|&i| gpu[i].to_bits() != cpu[i].to_bits())
            .count();
        panic!(
            "{what}: {d} of {} values differ; first at {i}: GPU {:e} ({:#010x}), CPU {:e} ({:#010x})",
            cpu.len(),
            gpu[i],
            gpu[i].to_bits(),
            cpu[i],
            cpu[i].to_bits()
        );
    }
}

#[test]
fn opening_without_a_gpu_is_an_error_not_a_panic() {
    match Gpu::open() {
        Ok(gpu) => assert!(!gpu.name().is_empty()),
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.starts_with("GPU: "), "{msg}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn scalar_functions_match_the_cpu() {
    let gpu = Gpu::open().expect("a GPU");
    let s = gpu.stream().expect("stream");
    let mut seed = 7u64;
    let mut x = values(&mut seed, 100_003);
    // Every exponent, both signs, subnormals, the bounds and NaN.
    for e in 0..=255u32 {
        for m in [0u32, 1, 0x40_0000, 0x7f_ffff, 0x12_3456] {
            x.push(f32::from_bits((e << 23) | m));
            x.push(f32::from_bits(0x8000_0000 | (e << 23) | m));
        }
    }
    let n = x.len();
    let xd = gpu.upload(&s, &x).expect("upload");
    let mut out = gpu.upload(&s, &vec![0.0; n]).expect("upload");
    for (which, cpu) in [
        (Scalar::Exp, kernels::exp_fixed as fn(f32) -> f32),
        (Scalar::Sigmoid, kernels::sigmoid),
        (Scalar::Ln, kernels::ln_fixed),
    ] {
        gpu.scalar(&s, which, &xd, &mut out, n).expect("launch");
        let got = gpu.download(&s, &out).expect("download");
        let want: Vec<f32> = x.iter().map(|&v| cpu(v)).collect();
        same(&format!("{which:?}"), &got, &want);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn matrix_kernels_match_the_cpu() {
    let gpu = Gpu::open().expect("a GPU");
    let s = gpu.stream().expect("stream");
    let mut seed = 11u64;
    for &(rows, k, n) in &[
        (1, 1, 1),
        (16, 96, 32),
        (16, 32, 256),
        (48, 64, 32),
        (7, 33, 65),
        (3, 17, 255),
    ] {
        let x = values(&mut seed, rows * k);
        let w = values(&mut seed, k * n);
        let out0 = values(&mut seed, rows * n);
        let tag = format!("{rows}x{k}x{n}");

        let mut want = out0.clone();
        kernels::matmul_acc(&x, &w, &mut want, k, n);
        let (xd, wd) = (gpu.upload(&s, &x).unwrap(), gpu.upload(&s, &w).unwrap());
        let mut od = gpu.upload(&s, &out0).unwrap();
        gpu.matmul_acc(&s, &xd, &wd, &mut od, (rows, k, n)).unwrap();
        same(
            &format!("matmul_acc {tag}"),
            &gpu.download(&s, &od).unwrap(),
            &want,
        );

        let dy = values(&mut seed, rows * n);
        let dw0 = values(&mut seed, k * n);
        let mut want = dw0.clone();
        kernels::outer_acc(&x, &dy, &mut want, k, n);
        let dyd = gpu.upload(&s, &dy).unwrap();
        let mut dwd = gpu.upload(&s, &dw0).unwrap();
        gpu.outer_acc(&s, &xd, &dyd, &mut dwd, (rows, k, n))
            .unwrap();
        same(
            &format!("outer_acc {tag}"),
            &gpu.download(&s, &dwd).unwrap(),
            &want,
        );

        let mut want = vec![0.0; k * n];
        kernels::transpose(&w, &mut want, k, n);
        let mut td = gpu.upload(&s, &vec![0.0; k * n]).unwrap();
        gpu.transpose(&s, &wd, &mut td, k, n).unwrap();
        same(
            &format!("transpose {tag}"),
            &gpu.download(&s, &td).unwrap(),
            &want,
        );

        let mut want = out0.clone();
        kernels::softmax_rows(&mut want, n);
        let mut zd = gpu.upload(&s, &out0).unwrap();
        gpu.softmax_rows(&s, &mut zd, rows, n).unwrap();
        same(
            &format!("softmax_rows {tag}"),
            &gpu.download(&s, &zd).unwrap(),
            &want,
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn elementwise_kernels_match_the_cpu() {
    let gpu = Gpu::open().expect("a GPU");
    let s = gpu.stream().expect("stream");
    let mut seed = 13u64;
    let len = 70_001;
    let x = values(&mut seed, len);
    let g = values(&mut seed, len);
    let xd = gpu.upload(&s, &x).unwrap();

    let mut want = x.clone();
    kernels::relu(&mut want);
    let mut d = gpu.upload(&s, &x).unwrap();
    gpu.relu(&s, &mut d, len).unwrap();
    same("relu", &gpu.download(&s, &d).unwrap(), &want);

    let mut want = g.clone();
    kernels::relu_backward(&x, &mut want);
    let mut d = gpu.upload(&s, &g).unwrap();
    gpu.relu_backward(&s, &xd, &mut d, len).unwrap();
    same("relu_backward", &gpu.download(&s, &d).unwrap(), &want);

    // Adam: moments must be non-negative where the CPU keeps them so.
    let p = values(&mut seed, len);
    let m = values(&mut seed, len);
    let v: Vec<f32> = values(&mut seed, len).iter().map(|a| a * a).collect();
    let step = AdamStep {
        lr: 1.3e-3,
        b1: 0.9,
        b2: 0.999,
        eps: 1e-8,
    };
    let (mut pw, mut gw, mut mw, mut vw) = (p.clone(), g.clone(), m.clone(), v.clone());
    kernels::adam(&mut pw, &mut gw, &mut mw, &mut vw, step);
    let mut pd = gpu.upload(&s, &p).unwrap();
    let mut gd = gpu.upload(&s, &g).unwrap();
    let mut md = gpu.upload(&s, &m).unwrap();
    let mut vd = gpu.upload(&s, &v).unwrap();
    gpu.adam(&s, &mut pd, &mut gd, &mut md, &mut vd, len, step)
        .unwrap();
    same("adam p", &gpu.download(&s, &pd).unwrap(), &pw);
    same("adam g", &gpu.download(&s, &gd).unwrap(), &gw);
    same("adam m", &gpu.download(&s, &md).unwrap(), &mw);
    same("adam v", &gpu.download(&s, &vd).unwrap(), &vw);

    // The cross-entropy gradient, as the network's backward pass starts.
    let rows = 16;
    let z = values(&mut seed, rows * 256);
    let y: Vec<i32> = (0..rows as i32).map(|b| (b * 37 + 5) % 256).collect();
    let mut want = z.clone();
    for (b, &c) in y.iter().enumerate() {
        want[b * 256 + c as usize] -= 1.0;
    }
    let mut zd = gpu.upload(&s, &z).unwrap();
    let yd = gpu.upload_classes(&s, &y).unwrap();
    gpu.cross_entropy_grad(&s, &mut zd, &yd, rows, 256).unwrap();
    same("cross_entropy_grad", &gpu.download(&s, &zd).unwrap(), &want);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_short_launch_is_refused_not_run() {
    let gpu = Gpu::open().expect("a GPU");
    let s = gpu.stream().expect("stream");
    let x = gpu.upload(&s, &[1.0; 4]).unwrap();
    let w = gpu.upload(&s, &[1.0; 4]).unwrap();
    let mut out = gpu.upload(&s, &[0.0; 3]).unwrap();
    let e = gpu.matmul_acc(&s, &x, &w, &mut out, (2, 2, 2)).unwrap_err();
    assert!(e.to_string().contains("matmul_acc out"), "{e}");
}
