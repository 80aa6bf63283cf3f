//! Throughput of the single-pass kernels (bench id `single_pass`; each kernel reads
//! and writes every element once, as a copy does): the decoupled look-back scan of
//! 2^26 `u32`s against a device-to-device copy of the same bytes, and the tiled
//! transpose of an 8192 × 8192 matrix of `f32` and of `f64` against the classic CUDA
//! C++ transpose (a 32 × 32 tile in `__shared__ T tile[32][33]`, 32 × 8 threads each
//! moving four elements) compiled by NVRTC and launched in this process, and against
//! the copy. The peer's output is checked against the CPU before it is timed. Each
//! call is timed with CUDA events ([`bench::event_ms`]), median of 30 interleaved
//! rounds after 3 warm-ups. Figures are GB/s (bytes read and written over time).
//!
//! Needs NVRTC at run time (on the GPU machine: `LD_LIBRARY_PATH` including
//! `/usr/local/cuda/targets/x86_64-linux/lib`).

use std::ffi::c_void;

use cudarc::driver::{sys, CudaContext};
use xlog::device::lookback::status_words;
use xlog::DeviceCopy;
use xlog::LaunchConfig;
use xlog_test_support::bench::{self, peer, Case};

/// The peer: the textbook shared-memory transpose, one 32 × 32 tile per 32 × 8 block,
/// the tile padded to 33 columns so the column-wise reads hit 32 banks.
const CUDA_TRANSPOSE: &str = r#"
template <typename T>
__device__ void transpose_tile(const T* __restrict__ x, T* __restrict__ out,
                               unsigned long long rows, unsigned long long cols) {
    __shared__ T tile[32][33];
    unsigned long long c = blockIdx.x * 32ull + threadIdx.x;
    unsigned long long r = blockIdx.y * 32ull + threadIdx.y;
    for (int j = 0; j < 32; j += 8) {
        if (r + j < rows && c < cols) tile[threadIdx.y + j][threadIdx.x] = x[(r + j) * cols + c];
    }
    __syncthreads();
    // Output (cols × rows): row blockIdx.x·32 + .., column blockIdx.y·32 + ..
    unsigned long long oc = blockIdx.y * 32ull + threadIdx.x;
    unsigned long long orow = blockIdx.x * 32ull + threadIdx.y;
    for (int j = 0; j < 32; j += 8) {
        if (orow + j < cols && oc < rows) out[(orow + j) * rows + oc] = tile[threadIdx.x][threadIdx.y + j];
    }
}
extern "C" __global__ void transpose_f32(const float* x, float* out, unsigned long long rows, unsigned long long cols) {
    transpose_tile<float>(x, out, rows, cols);
}
extern "C" __global__ void transpose_f64(const double* x, double* out, unsigned long long rows, unsigned long long cols) {
    transpose_tile<double>(x, out, rows, cols);
}
"#;

/// The peer's name in the results.
const PEER: &str = "CUDA C++ 32×32 padded-tile transpose via NVRTC";

fn p<T>(v: &T) -> *mut c_void {
    v as *const T as *mut c_void
}

/// Times xlog's transpose of a `side × side` matrix of `T` against the NVRTC peer
/// `peer` and a copy, after checking both against the CPU.
fn transpose_case<
    T: xlog_kernels::single_pass::TransposeType + DeviceCopy + PartialEq + std::fmt::Debug,
>(
    rt: &xlog::Runtime,
    s: &xlog::Stream,
    peer_fn: &cudarc::driver::CudaFunction,
    name: &'static str,
    side: usize,
    value: impl Fn(usize) -> T,
) -> String {
    let n = side * side;
    let host: Vec<T> = (0..n).map(&value).collect();
    let m = rt.upload_on(s, &host).unwrap();
    let mut t = rt.alloc_zeroed_on::<T>(s, n).unwrap();
    let q = rt.alloc_zeroed_on::<T>(s, n).unwrap();
    let mut c = rt.alloc_zeroed_on::<T>(s, n).unwrap();
    s.synchronize().unwrap();
    let tcfg = LaunchConfig::new([(side / 32 * (side / 32)) as u32, 1, 1], [256, 1, 1]);
    let (mp, qp, dim) = (m.device_ptr(), q.device_ptr(), side as u64);
    let mut peer_call = || {
        let mut params = [p(&mp), p(&qp), p(&dim), p(&dim)];
        // SAFETY: transpose_*(const T*, T*, u64 rows, u64 cols) over live buffers of
        // `side²` elements of its type, on the stream that owns them (synchronised
        // above), a 32 × 8 block per 32 × 32 tile.
        unsafe {
            sys::cuLaunchKernel(
                peer_fn.cu_function(),
                (side / 32) as u32,
                (side / 32) as u32,
                1,
                32,
                8,
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
    let want = |got: &[T], who: &str| {
        for r in 0..side {
            for col in 0..side {
                assert_eq!(
                    got[col * side + r],
                    host[r * side + col],
                    "{who} at ({r}, {col})"
                );
            }
        }
    };
    peer_call();
    want(&q.download(s).unwrap(), "the NVRTC peer");
    xlog_kernels::single_pass::transpose::launch(s, tcfg, &m, &mut t, side).unwrap();
    want(&t.download(s).unwrap(), "xlog's transpose");
    let [t_ms, p_ms, c_ms] = bench::interleaved(
        3,
        30,
        [
            &mut || {
                bench::event_ms(s, &mut || {
                    xlog_kernels::single_pass::transpose::launch(s, tcfg, &m, &mut t, side).unwrap()
                })
            },
            &mut || bench::event_ms(s, &mut peer_call),
            &mut || bench::event_ms(s, &mut || xlog::copy_device(s, &mut c, &m).unwrap()),
        ],
        || {},
    );
    want(&t.download(s).unwrap(), "the timed transpose");
    let bytes = n * std::mem::size_of::<T>();
    let gbs = |ms: f64| 2.0 * bytes as f64 / ms / 1e6;
    let case = Case {
        bench: "single_pass",
        case: name,
        size: Some(n as u64),
        unit: "GB/s",
    };
    case.row(gbs(t_ms), gbs(p_ms), PEER);
    case.row_against(gbs(t_ms), gbs(c_ms), peer::D2D);
    format!("{name}: xlog {t_ms:.4} ms, NVRTC {p_ms:.4} ms, copy {c_ms:.4} ms")
}

fn main() {
    let rt = bench::runtime_or_exit();
    let info = rt.device().info();
    println!("## single-pass kernels vs a device-to-device copy and the NVRTC transpose (CUDA events, median of 30 interleaved rounds)\n");
    println!(
        "device: {} (sm_{}{})\n",
        info.name, info.compute_capability.0, info.compute_capability.1
    );
    println!("| scenario | xlog | peer | peer name | ratio (xlog/peer) | target |");
    println!("| --- | --- | --- | --- | --- | --- |");
    let s = rt.new_stream().unwrap();
    // Bytes read and written per call over milliseconds: GB/s.
    let gbs = |bytes: usize, ms: f64| 2.0 * bytes as f64 / ms / 1e6;
    let case = |name, size: usize| Case {
        bench: "single_pass",
        case: name,
        size: Some(size as u64),
        unit: "GB/s",
    };

    let n: usize = 1 << 26;
    let x = rt.upload_on(&s, &vec![3u32; n]).unwrap();
    let mut out = rt.alloc_zeroed_on::<u32>(&s, n).unwrap();
    let mut copy = rt.alloc_zeroed_on::<u32>(&s, n).unwrap();
    let tiles = n.div_ceil(1024);
    let mut status = rt.alloc_zeroed_on::<u64>(&s, status_words(tiles)).unwrap();
    let cfg = LaunchConfig::new([tiles as u32, 1, 1], [256, 1, 1]);
    let [scan_ms, copy_ms] = bench::interleaved(
        3,
        30,
        [
            &mut || {
                bench::event_ms(&s, &mut || {
                    xlog_kernels::single_pass::inclusive_scan_u32::launch(
                        &s,
                        cfg,
                        &x,
                        &mut out,
                        &mut status,
                    )
                    .unwrap()
                })
            },
            &mut || bench::event_ms(&s, &mut || xlog::copy_device(&s, &mut copy, &x).unwrap()),
        ],
        || {},
    );
    let got = out.download(&s).unwrap();
    assert_eq!(
        got[n - 1],
        3u32.wrapping_mul(n as u32),
        "the timed scan is wrong"
    );
    case("inclusive_scan_u32, elements", n).row(
        gbs(n * 4, scan_ms),
        gbs(n * 4, copy_ms),
        peer::D2D,
    );
    drop((x, out, copy, status, got));

    let ctx = CudaContext::new(0).unwrap();
    let ptx = cudarc::nvrtc::compile_ptx(CUDA_TRANSPOSE)
        .expect("NVRTC (set LD_LIBRARY_PATH to CUDA's lib dir)");
    let module = ctx.load_module(ptx).unwrap();
    let side = 8192usize;
    let f32_ms = transpose_case::<f32>(
        &rt,
        &s,
        &module.load_function("transpose_f32").unwrap(),
        "transpose_f32 8192 × 8192, elements",
        side,
        |i| i as f32,
    );
    let f64_ms = transpose_case::<f64>(
        &rt,
        &s,
        &module.load_function("transpose_f64").unwrap(),
        "transpose_f64 8192 × 8192, elements",
        side,
        |i| i as f64 * 0.5,
    );
    println!();
    println!("inclusive_scan_u32 {scan_ms:.3} ms, copy {copy_ms:.3} ms; {f32_ms}; {f64_ms}");
}
