//! Build script. The default build needs no CUDA toolkit; the built-in packs of pretrained/ are
//! embedded by `include_bytes!` (src/codecs/cm/pack.rs, feature `builtin-pack`), which rebuilds when they change.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
}
