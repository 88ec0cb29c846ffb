//! Build script. The default build needs no CUDA toolkit; the built-in packs of pretrained/ are
//! embedded by `include_bytes!` (src/codecs/neural/pack.rs), which rebuilds when they change.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
}
