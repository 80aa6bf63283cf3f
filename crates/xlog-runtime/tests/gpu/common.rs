use std::ffi::c_void;

use xlog_runtime::{Backend, LaunchConfig, ModuleImage, Runtime, Stream, WorkRecorder};
use xlog_test_support::Rng;

// SAFETY: the hand-written PTX's entry points are launched only with the
// parameter lists documented beside each of them in kernels.ptx.
pub static KERNELS: ModuleImage =
    unsafe { ModuleImage::from_ptx("runtime-test-kernels", include_str!("kernels.ptx")) };

/// Set in a child process by `hazard_tests_have_teeth`: run with fencing disabled.
pub const UNFENCED_ENV: &str = "XLOG_TEST_UNFENCED";

/// The shared runtime of device 0, with fencing off when [`UNFENCED_ENV`] is set.
/// Panics (fails the test) without a device.
pub fn rt() -> Runtime {
    if std::env::var_os(UNFENCED_ENV).is_some() {
        // SAFETY: only `hazard_tests_have_teeth`'s child process sets the variable,
        // to observe the races fencing prevents on plain numbers it compares.
        unsafe { xlog_runtime::testing::set_fencing(false) };
    }
    xlog_test_support::gpu_runtime()
}

/// The backend the suite runs on (`XLOG_BACKEND`).
pub fn backend() -> Backend {
    match std::env::var("XLOG_BACKEND").as_deref() {
        Ok("direct") => Backend::Direct,
        _ => Backend::Async,
    }
}

pub fn param<T>(v: &T) -> *mut c_void {
    v as *const T as *mut c_void
}

/// Deterministic pseudo-random u32s: bits 16..48 of [`Rng::new`]`(seed)`'s values.
pub fn random_u32(seed: u64, n: usize) -> Vec<u32> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| (rng.next_u64() >> 16) as u32).collect()
}

/// `dst = src` after sleeping about `spins` microseconds per thread, on `s`.
pub fn slow_copy(
    rt: &Runtime,
    s: &Stream,
    src: &xlog_runtime::DeviceBuffer<u32>,
    dst: &mut xlog_runtime::DeviceBuffer<u32>,
    spins: u32,
) {
    let f = rt
        .load_module(&KERNELS)
        .unwrap()
        .function("slow_copy")
        .unwrap();
    let (sp, dp, n) = (src.device_ptr(), dst.device_ptr(), src.len() as u64);
    let pre = WorkRecorder::new(s)
        .read(src)
        .write(dst)
        .preflight()
        .unwrap();
    let mut params = [param(&sp), param(&dp), param(&n), param(&spins)];
    // SAFETY: slow_copy(u64 src, u64 dst, u64 n, u32 spins) matches the params;
    // it reads `src` and writes `dst`, both recorded.
    let _ = unsafe { pre.launch(&f, LaunchConfig::for_len(src.len()), &mut params) }.unwrap();
}

/// `dst = value` after sleeping about `spins` microseconds per thread, on `s`.
pub fn slow_fill(
    rt: &Runtime,
    s: &Stream,
    dst: &mut xlog_runtime::DeviceBuffer<u32>,
    value: u32,
    spins: u32,
) {
    let f = rt
        .load_module(&KERNELS)
        .unwrap()
        .function("slow_fill")
        .unwrap();
    let (dp, n) = (dst.device_ptr(), dst.len() as u64);
    let pre = WorkRecorder::new(s).write(dst).preflight().unwrap();
    let mut params = [param(&dp), param(&n), param(&value), param(&spins)];
    // SAFETY: slow_fill(u64 dst, u64 n, u32 value, u32 spins) matches the params;
    // it writes `dst`, recorded.
    let _ = unsafe { pre.launch(&f, LaunchConfig::for_len(n as usize), &mut params) }.unwrap();
}
