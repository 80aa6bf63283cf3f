//! Bandwidth of the typed-launched Rust axpy (y = a·x + y, f32), scalar
//! (`axpy__f32`, one element per thread) and vectorised (`axpy_vec__f32`, a chunk of
//! four per thread, one 128-bit load and store), vs the same kernels in CUDA C++
//! compiled by NVRTC, and vs a device-to-device copy, timed with CUDA events on one
//! stream (bench id `elementwise_bandwidth`; targets in `bench::TARGETS`). The size
//! sweep against CubeCL is `bench/peers`.
//!
//! Needs NVRTC at run time (on the GPU machine: LD_LIBRARY_PATH including
//! /usr/local/cuda/targets/x86_64-linux/lib).

use std::ffi::c_void;

use cudarc::driver::{result, sys, CudaContext};
use xlog::LaunchConfig;
use xlog_test_support::bench::{self, peer};

const CUDA_SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float* x, unsigned long long xn, float* y, unsigned long long yn) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < yn && i < xn) { y[i] = a * x[i] + y[i]; }
}
"#;

/// The float4 form: one thread per four elements (`n` a multiple of 4 here).
const CUDA_SAXPY4: &str = r#"
extern "C" __global__ void saxpy4(float a, const float* x, unsigned long long xn, float* y, unsigned long long yn) {
    unsigned long long c = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (4 * c + 3 < yn && 4 * c + 3 < xn) {
        float4 xv = reinterpret_cast<const float4*>(x)[c];
        float4 yv = reinterpret_cast<float4*>(y)[c];
        yv.x = a * xv.x + yv.x; yv.y = a * xv.y + yv.y; yv.z = a * xv.z + yv.z; yv.w = a * xv.w + yv.w;
        reinterpret_cast<float4*>(y)[c] = yv;
    }
}
"#;

fn p<T>(v: &T) -> *mut c_void {
    v as *const T as *mut c_void
}

/// Event-timed milliseconds of one call of `f` on `s`.
fn time_once(s: sys::CUstream, f: &mut dyn FnMut()) -> f64 {
    // SAFETY: fresh events recorded on a live stream, synchronised before use and
    // destroyed after.
    unsafe {
        let a = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT).unwrap();
        let b = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT).unwrap();
        result::event::record(a, s).unwrap();
        f();
        result::event::record(b, s).unwrap();
        result::event::synchronize(b).unwrap();
        let ms = result::event::elapsed(a, b).unwrap() as f64;
        result::event::destroy(a).unwrap();
        result::event::destroy(b).unwrap();
        ms
    }
}

fn main() {
    let rt = bench::runtime_or_exit();
    let info = rt.device().info();
    let n: usize = 1 << 26;
    println!("## elementwise bandwidth ({n} f32 elements, median of 50 interleaved event-timed rounds)\n");
    println!(
        "device: {} (sm_{}{})\n",
        info.name, info.compute_capability.0, info.compute_capability.1
    );
    let s = rt.new_stream().unwrap();
    let x = rt.upload_on(&s, &vec![1.5f32; n]).unwrap();
    let mut y = rt.upload_on(&s, &vec![0.5f32; n]).unwrap();
    let mut z = rt.alloc_zeroed_on::<f32>(&s, n).unwrap();
    s.synchronize().unwrap();
    let cfg = LaunchConfig::for_len(n);
    let cfg4 = LaunchConfig::for_len(n / 4);

    let (xp, yp, nn, a) = (x.device_ptr(), y.device_ptr(), n as u64, 1.0001f32);
    let mut rust_f = || {
        xlog_kernels::elementwise::axpy::launch(&s, cfg, 1.0001, &x, &mut y).unwrap();
    };

    let ctx = CudaContext::new(0).unwrap();
    let ptx = cudarc::nvrtc::compile_ptx(CUDA_SAXPY)
        .expect("NVRTC (set LD_LIBRARY_PATH to CUDA's lib dir)");
    let module = ctx.load_module(ptx).unwrap();
    let f = module.load_function("saxpy").unwrap();
    // The same source without FMA contraction, as Rust compiles `a * x + y`.
    let unfused = cudarc::nvrtc::compile_ptx_with_opts(
        CUDA_SAXPY,
        cudarc::nvrtc::CompileOptions {
            fmad: Some(false),
            ..Default::default()
        },
    )
    .unwrap();
    let f_unfused = ctx
        .load_module(unfused)
        .unwrap()
        .load_function("saxpy")
        .unwrap();
    let f4 = ctx
        .load_module(
            cudarc::nvrtc::compile_ptx_with_opts(
                CUDA_SAXPY4,
                cudarc::nvrtc::CompileOptions {
                    fmad: Some(false),
                    ..Default::default()
                },
            )
            .unwrap(),
        )
        .unwrap()
        .load_function("saxpy4")
        .unwrap();
    let launch_raw = |func: &cudarc::driver::CudaFunction, cfg: LaunchConfig| {
        let mut params = [p(&a), p(&xp), p(&nn), p(&yp), p(&nn)];
        // SAFETY: saxpy(float, const float*, u64, float*, u64) and saxpy4 (same
        // parameters, one thread per four elements) over live buffers of n elements,
        // on the stream that owns them (synchronised above).
        unsafe {
            sys::cuLaunchKernel(
                func.cu_function(),
                cfg.grid[0],
                1,
                1,
                cfg.block[0],
                1,
                1,
                0,
                s.raw(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .unwrap();
    };
    let mut cuda_f = || launch_raw(&f, cfg);
    let mut cuda_unfused_f = || launch_raw(&f_unfused, cfg);
    let mut cuda4_f = || launch_raw(&f4, cfg4);
    let mut copy_f = || {
        z.copy_from(&s, &x).unwrap();
    };
    // Median event-timed milliseconds of each, after five warm-up rounds.
    let raw_s = s.raw();
    let mut y2 = rt.upload_on(&s, &vec![0.5f32; n]).unwrap();
    let mut rust4_f = || {
        xlog_kernels::elementwise::axpy_vec::launch(&s, cfg4, 1.0001, &x, &mut y2).unwrap();
    };
    let [rust, cuda, cuda_unfused, rust4, cuda4, copy] = bench::interleaved(
        5,
        50,
        [
            &mut || time_once(raw_s, &mut rust_f),
            &mut || time_once(raw_s, &mut cuda_f),
            &mut || time_once(raw_s, &mut cuda_unfused_f),
            &mut || time_once(raw_s, &mut rust4_f),
            &mut || time_once(raw_s, &mut cuda4_f),
            &mut || time_once(raw_s, &mut copy_f),
        ],
        || {},
    );

    let gbs = |bytes: f64, ms: f64| bytes / (ms * 1e-3) / 1e9;
    let three = 3.0 * 4.0 * n as f64;
    let two = 2.0 * 4.0 * n as f64;
    let (rb, cb, ub, db) = (
        gbs(three, rust),
        gbs(three, cuda),
        gbs(three, cuda_unfused),
        gbs(two, copy),
    );
    let (r4b, c4b) = (gbs(three, rust4), gbs(three, cuda4));
    println!("| scenario | xlog | peer | peer name | ratio (xlog/peer) | target |");
    println!("| --- | --- | --- | --- | --- | --- |");
    let case = |case| bench::Case {
        bench: "elementwise_bandwidth",
        case,
        size: Some(n as u64),
        unit: "GB/s",
    };
    case("axpy_f32, event-timed").row(rb, cb, peer::NVRTC);
    case("axpy_f32, event-timed").row(rb, ub, "CUDA C++ via NVRTC, --fmad=false");
    case("axpy_f32, event-timed").row(rb, db, peer::D2D);
    case("axpy_vec_f32, event-timed").row(r4b, c4b, peer::NVRTC_VEC4);
    case("axpy_vec_f32, event-timed").row(r4b, db, peer::D2D);
    println!("\n(xlog {rust:.3} ms, vectorised {rust4:.3} ms, NVRTC {cuda:.3} ms, NVRTC unfused {cuda_unfused:.3} ms, NVRTC float4 {cuda4:.3} ms, copy {copy:.3} ms)");
}
