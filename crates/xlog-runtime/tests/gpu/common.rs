use std::ffi::c_void;

use xlog_runtime::sim::SimEntry;
use xlog_runtime::{Backend, Function, LaunchConfig, ModuleImage, Runtime, Stream, WorkRecorder};
use xlog_test_support::Rng;

// SAFETY: the hand-written PTX's entry points are launched only with the
// parameter lists documented beside each of them in kernels.ptx.
pub static KERNELS: ModuleImage =
    unsafe { ModuleImage::from_ptx("runtime-test-kernels", include_str!("kernels.ptx")) };

/// Kernel `name` of [`KERNELS`], with its host build for the simulator.
pub fn kernel(rt: &Runtime, name: &str) -> Function {
    let host: SimEntry = match name {
        "scale_add" => host::scale_add,
        "slow_copy" => host::slow_copy,
        "slow_fill" => host::slow_fill,
        _ => host::empty,
    };
    // SAFETY: `host` is the host build of `name` (the match above).
    unsafe {
        rt.load_module(&KERNELS)
            .unwrap()
            .function_with_host(name, host)
    }
    .unwrap()
}

/// The host build of `slow_fill`, and one of another kernel (`empty`).
pub const SLOW_FILL_HOST: SimEntry = host::slow_fill;
/// See [`SLOW_FILL_HOST`].
pub const EMPTY_HOST: SimEntry = host::empty;

/// Host builds of the hand-written kernels, for the simulator: the same work per
/// element; the slow ones sleep once per block rather than once per thread.
mod host {
    use std::ffi::c_void;

    use xlog_device::thread;
    use xlog_runtime::sim::SimKernel;

    /// # Safety
    /// `p[i]` points to a `T` (the launch's parameter array).
    unsafe fn arg<T: Copy>(p: &[*mut c_void], i: usize) -> T {
        // SAFETY: the caller's obligation.
        unsafe { *(p[i] as *const T) }
    }

    fn sleep_once_per_block(spins: u32) {
        if spins > 0 && thread::block_thread_index() == 0 {
            std::thread::sleep(std::time::Duration::from_micros(spins as u64));
        }
    }

    /// `scale_add(u64 x, u64 y, u64 n, f32 a)`: `y[i] = a * x[i] + y[i]`.
    pub unsafe fn scale_add(p: &[*mut c_void]) -> SimKernel {
        // SAFETY: the parameter list above.
        let (x, y, n, a) = unsafe {
            (
                arg::<u64>(p, 0),
                arg::<u64>(p, 1),
                arg::<u64>(p, 2),
                arg::<f32>(p, 3),
            )
        };
        let body = move || {
            let i = thread::index_1d().get();
            if (i as u64) < n {
                // SAFETY: `i < n`, the lengths of both recorded buffers.
                unsafe {
                    let yi = (y as *mut f32).add(i);
                    *yi += a * *(x as *const f32).add(i);
                }
            }
        };
        // SAFETY: each thread touches only its own element.
        unsafe { SimKernel::new(body) }
    }

    /// `slow_copy(u64 src, u64 dst, u64 n, u32 spins)`.
    pub unsafe fn slow_copy(p: &[*mut c_void]) -> SimKernel {
        // SAFETY: the parameter list above.
        let (src, dst, n, spins) = unsafe {
            (
                arg::<u64>(p, 0),
                arg::<u64>(p, 1),
                arg::<u64>(p, 2),
                arg::<u32>(p, 3),
            )
        };
        let body = move || {
            sleep_once_per_block(spins);
            let i = thread::index_1d().get();
            if (i as u64) < n {
                // SAFETY: `i < n`, the lengths of both recorded buffers.
                unsafe { *(dst as *mut u32).add(i) = *(src as *const u32).add(i) };
            }
        };
        // SAFETY: each thread touches only its own element.
        unsafe { SimKernel::new(body) }
    }

    /// `slow_fill(u64 dst, u64 n, u32 value, u32 spins)`.
    pub unsafe fn slow_fill(p: &[*mut c_void]) -> SimKernel {
        // SAFETY: the parameter list above.
        let (dst, n, value, spins) = unsafe {
            (
                arg::<u64>(p, 0),
                arg::<u64>(p, 1),
                arg::<u32>(p, 2),
                arg::<u32>(p, 3),
            )
        };
        let body = move || {
            sleep_once_per_block(spins);
            let i = thread::index_1d().get();
            if (i as u64) < n {
                // SAFETY: `i < n`, the length of the recorded buffer.
                unsafe { *(dst as *mut u32).add(i) = value };
            }
        };
        // SAFETY: each thread touches only its own element.
        unsafe { SimKernel::new(body) }
    }

    /// `empty3(...)`: does nothing.
    pub unsafe fn empty(_: &[*mut c_void]) -> SimKernel {
        // SAFETY: shares nothing.
        unsafe { SimKernel::new(|| {}) }
    }
}

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
/// Set in the child process [`in_a_process_of_its_own`] starts.
const ALONE_ENV: &str = "XLOG_TEST_ALONE";

/// For a test that must not share its process with others (a graph capture in
/// global mode refuses the allocations and synchronisations of tests running beside
/// it): in the test process, runs test `name` (its path in the suite) alone in a
/// child process, checks that it passed there, and returns `false`; in that child,
/// returns `true`, and the test goes on.
pub fn in_a_process_of_its_own(name: &str) -> bool {
    in_a_process_of_its_own_with(name, &[])
}

/// [`in_a_process_of_its_own`], with `env` set in the child (what the driver reads
/// when it initialises, such as `CUDA_VISIBLE_DEVICES`).
pub fn in_a_process_of_its_own_with(name: &str, env: &[(&str, &str)]) -> bool {
    if std::env::var_os(ALONE_ENV).is_some() {
        return true;
    }
    let env: Vec<(&str, &str)> = env.iter().copied().chain([(ALONE_ENV, "1")]).collect();
    let out = xlog_test_support::child::run_test(name, &env);
    assert!(out.passed_one(), "{}", out.text());
    false
}

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
    let f = kernel(rt, "slow_copy");
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
    let f = kernel(rt, "slow_fill");
    let (dp, n) = (dst.device_ptr(), dst.len() as u64);
    let pre = WorkRecorder::new(s).write(dst).preflight().unwrap();
    let mut params = [param(&dp), param(&n), param(&value), param(&spins)];
    // SAFETY: slow_fill(u64 dst, u64 n, u32 value, u32 spins) matches the params;
    // it writes `dst`, recorded.
    let _ = unsafe { pre.launch(&f, LaunchConfig::for_len(n as usize), &mut params) }.unwrap();
}

/// An owned runtime of device 0 with the caching pool on top (budget `budget`
/// bytes, else the device's memory), on the suite's backend, with fencing off when
/// [`UNFENCED_ENV`] is set. Panics (fails the test) without a device.
pub fn pool_rt(budget: Option<usize>) -> Runtime {
    let _ = rt();
    let mut b = Runtime::builder(0).backend(backend()).caching(true);
    if let Some(bytes) = budget {
        b = b.budget(bytes);
    }
    b.build()
        .unwrap_or_else(|e| panic!("the GPU suite was requested but device 0 cannot be used: {e}"))
}
