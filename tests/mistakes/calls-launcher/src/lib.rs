//! Host code that calls a kernel like a function instead of through its launcher.
use xlog::prelude::*;

xlog::kernel_module!();

#[xlog_kernel(read(x), write(y))]
pub fn double(x: &[f32], y: &mut [f32]) {
    let i = thread::index_1d();
    if i < x.len() && i < y.len() {
        y[i] = 2.0 * x[i];
    }
}

/// The launch, written as a call (host code: the device build does not see it).
#[cfg(not(target_arch = "nvptx64"))]
pub fn run(x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>) {
    double(x, y);
}
