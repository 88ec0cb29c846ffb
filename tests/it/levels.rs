//! The levels against each other: level 9 never makes a file larger than the default level
//! does (a block it does not start from a pack is coded with the default level's model where
//! that is smaller), and its archives decode at any thread count and kernel level.

use crate::common::{corpus_file, decodes_in_memory};
use sep::{Kernels, Options};

fn archive(data: &[u8], level: u8) -> Vec<u8> {
    let mut o = Options::default();
    o.level = level;
    o.threads = 1;
    let mut out = Vec::new();
    sep::compress_bytes(data, &mut out, &o).unwrap();
    out
}

/// A small table of fixed-length binary records: counters, flags and short names.
fn records() -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0u32..900 {
        out.extend_from_slice(&(i * 37 % 1000).to_le_bytes());
        out.extend_from_slice(&[(i % 3) as u8, 0, 0xFF, (i % 7) as u8]);
        out.extend_from_slice(format!("n{:05}", i * 13 % 4096).as_bytes());
        out.extend_from_slice(&[0; 2]);
    }
    out
}

#[test]
fn level_9_is_never_larger_than_the_default() {
    for (name, data) in [
        ("dirname", corpus_file("binary/dirname")),
        ("records", records()),
        ("text", corpus_file("text/sed.1")),
        ("bitmap", crate::common::mandelbrot_bitmap(90, 400)),
    ] {
        let default = archive(&data, sep::DEFAULT_LEVEL).len();
        let a = archive(&data, 9);
        assert!(
            a.len() <= default,
            "{name}: level 9 {} > {default}",
            a.len()
        );
        let runs = [(2, Kernels::Scalar), (1, Kernels::detect())];
        decodes_in_memory(&a, &data, &runs, &format!("{name} at level 9"));
    }
}

#[test]
fn level_9_codes_machine_code_with_the_wide_model() {
    // An executable: the wide model's binary contexts and run inputs make it smaller than the
    // default level's model, which level 9 kept for it before.
    let data = corpus_file("binary/dirname");
    let default = archive(&data, sep::DEFAULT_LEVEL).len();
    let best = archive(&data, 9).len();
    assert!(
        (best as f64) < 0.97 * default as f64,
        "level 9 {best}, default {default}"
    );
}

#[test]
fn level_9_codes_a_bitmap_by_its_pixels() {
    // A 1-bit image: the bilevel expert (level 9) codes each pixel by those around it on the
    // rows above, which no byte context sees.
    let data = crate::common::mandelbrot_bitmap(90, 400);
    let default = archive(&data, sep::DEFAULT_LEVEL).len();
    let best = archive(&data, 9).len();
    assert!(
        (best as f64) < 0.85 * default as f64,
        "level 9 {best}, default {default}"
    );
}
