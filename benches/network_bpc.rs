//! The online network alone: its own cross-entropy of each true byte of a file, coded on one
//! lane as the predictor runs it (forward, then learn), and its speed.
//!
//! `cargo bench --bench network_bpc -- FILE WIDTH LR_1E5`

use sep::internals::codecs::lanes::Lanes;
use sep::internals::codecs::net::{NetConfig, Network};

fn main() -> Result<(), String> {
    let usage = "usage: network_bpc FILE WIDTH LR_1E5";
    // `cargo bench` passes `--bench`.
    let a: Vec<String> = std::env::args().filter(|a| !a.starts_with("--")).collect();
    if a.len() == 1 {
        // A plain `cargo bench` runs every bench: nothing to measure without a file.
        eprintln!("{usage}");
        return Ok(());
    }
    if a.len() < 4 {
        return Err(usage.into());
    }
    let data = std::fs::read(&a[1]).map_err(|e| format!("{}: {e}", a[1]))?;
    let num = |s: &str| s.parse::<u16>().map_err(|_| usage.to_string());
    let (hidden, lr) = (num(&a[2])?, num(&a[3])?);
    let lanes = Lanes::new(data.len(), 1, 1);
    let mut net = Network::new(NetConfig { hidden, lr }, 1);
    let mut bits = 0f64;
    let t = std::time::Instant::now();
    for step in 0..data.len() {
        let p = net.forward(&data, &lanes, step, 1, &[(None, 0)]);
        bits -= (p[data[step] as usize].max(1e-9) as f64).log2();
        net.learn(&data[step..step + 1]);
    }
    println!(
        "{}: pac width {hidden} lr {lr}e-5: {:.4} bits per byte, {:.0} KB/s",
        a[1],
        bits / data.len().max(1) as f64,
        data.len() as f64 / t.elapsed().as_secs_f64() / 1e3
    );
    Ok(())
}
