//! Compiles this crate's kernels to PTX; `xlog::kernel_module!()` embeds it.
fn main() {
    xlog_build::Builder::new().run();
}
