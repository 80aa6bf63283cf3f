//! Compiles this crate's kernels to PTX for the GPU; `xlog::kernel_module!()`
//! embeds the result. `Builder::new().arch("sm_90")` targets a newer GPU only.
fn main() {
    xlog_build::Builder::new().run();
}
