//! Compiles this crate's kernels to PTX (see xlog-build); `kernel_module!` embeds it.
fn main() {
    xlog_build::Builder::new().run();
}
