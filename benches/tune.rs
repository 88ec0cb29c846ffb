//! The context-mixing codec's tuning harness: codes files with parameters from the environment and
//! prints sizes. `cargo bench --bench tune -- FILE...` (env: SEP_LEVEL, the level whose model
//! is the start, default 6; SEP_LANES, SEP_MIN_LANE, SEP_MIX_LR, SEP_HIDDEN). Encode only; the
//! round trip is covered by the tests and the corpus bench.

use sep::internals::codecs::cm::{self, CmConfig};
use std::time::Instant;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let level = env_or("SEP_LEVEL", cm::DEFAULT_LEVEL);
    let mut cfg = CmConfig::for_level(level).params;
    cfg.max_lanes = env_or("SEP_LANES", cfg.max_lanes);
    cfg.min_lane = env_or("SEP_MIN_LANE", cfg.min_lane);
    cfg.mix_lr = env_or("SEP_MIX_LR", cfg.mix_lr);
    cfg.mix_lr_start = env_or("SEP_MIX_LR0", cfg.mix_lr_start);
    cfg.net.hidden = env_or("SEP_HIDDEN", cfg.net.hidden);
    cfg.net.lr = env_or("SEP_NET_LR", cfg.net.lr);
    let mut total = 0usize;
    // `cargo bench` passes `--bench`.
    for path in std::env::args().skip(1).filter(|a| !a.starts_with("--")) {
        let data = std::fs::read(&path).expect("read input");
        let t = Instant::now();
        let (payload, _) = cm::encode(&data, cfg, None, Default::default(), &|_| {});
        let secs = t.elapsed().as_secs_f64();
        total += payload.len();
        println!(
            "{path}: {} -> {} ({:.3} bpc, {:.0} KB/s)",
            data.len(),
            payload.len(),
            payload.len() as f64 * 8.0 / data.len() as f64,
            data.len() as f64 / 1000.0 / secs
        );
    }
    println!("total {total}");
}
