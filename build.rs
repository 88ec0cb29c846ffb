//! Build script. The default build embeds nothing and needs no CUDA toolkit; kernel sources and
//! pre-trained packs will be embedded from kernels/ and pretrained/ once they exist.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
}
