//! Compiles another crate's kernels (the saxpy example's) into this crate's OUT_DIR.
fn main() {
    xlog_build::Builder::new()
        .kernel_crate(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../examples/saxpy/kernels"))
        .run();
}
