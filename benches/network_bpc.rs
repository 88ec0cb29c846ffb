//! The network alone: its own cross-entropy of each true byte of a file, coded on one lane as
//! the predictor runs it (forward, then learn), and its speed.
//!
//! `cargo bench --bench network_bpc -- FILE pac|trace WIDTH LR_1E5 [WINDOW]` (WINDOW: TRACE's
//! attention window, default 64).

use sep::internals::codecs::lanes::Lanes;
use sep::internals::codecs::net::{Backbone, NetConfig, Network, Trace};

fn main() -> Result<(), String> {
    let usage = "usage: network_bpc FILE pac|trace WIDTH LR_1E5 [WINDOW]";
    // `cargo bench` passes `--bench`.
    let a: Vec<String> = std::env::args().filter(|a| !a.starts_with("--")).collect();
    if a.len() == 1 {
        // A plain `cargo bench` runs every bench: nothing to measure without a file.
        eprintln!("{usage}");
        return Ok(());
    }
    if a.len() < 5 {
        return Err(usage.into());
    }
    let data = std::fs::read(&a[1]).map_err(|e| format!("{}: {e}", a[1]))?;
    let backbone = match a[2].as_str() {
        "pac" => Backbone::Pac,
        "trace" => Backbone::Trace,
        _ => return Err(usage.into()),
    };
    let num = |s: &str| s.parse::<usize>().map_err(|_| usage.to_string());
    let (hidden, lr) = (num(&a[3])? as u16, num(&a[4])? as u16);
    let window = a.get(5).map_or(Ok(64), |w| num(w))?;
    let cfg = NetConfig {
        backbone,
        hidden,
        lr,
    };
    let lanes = Lanes::new(data.len(), 1, 1);
    let mut net = match backbone {
        Backbone::Trace => Network::Trace(Box::new(Trace::new(cfg, 1, window))),
        _ => Network::new(cfg, 1),
    };
    let mut bits = 0f64;
    let t = std::time::Instant::now();
    for step in 0..data.len() {
        let p = net.forward(&data, &lanes, step, 1, &[(None, 0)]);
        bits -= (p[data[step] as usize].max(1e-9) as f64).log2();
        net.learn(&data[step..step + 1]);
    }
    println!(
        "{}: {} width {hidden} lr {lr}e-5 window {window}: {:.4} bits per byte, {:.0} KB/s",
        a[1],
        backbone.name(),
        bits / data.len().max(1) as f64,
        data.len() as f64 / t.elapsed().as_secs_f64() / 1e3
    );
    Ok(())
}
