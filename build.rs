//! Build script: records the kernel sources' location; needs CUDA only under the `cuda` feature.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=kernels");
    // Kernel sources are compiled at run time through NVRTC when the `cuda` feature is on; the
    // default build embeds nothing and needs no CUDA toolkit.
    let kernels = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    println!("cargo:rustc-env=SEP_KERNEL_DIR={}", kernels.display());
}
