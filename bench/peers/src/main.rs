//! xlog against its nearest peers, timed in one process so that every ratio comes
//! from the same run, device and conditions:
//!
//! - `axpy_bandwidth`: `y = a·x + y` over f32, 2^20..2^28 elements — xlog's typed
//!   `axpy_f32`, the same PTX launched by cudarc's `launch_builder` on cudarc's own
//!   stream and buffers, the same kernel in CUDA C++ compiled by NVRTC and launched
//!   with a raw `cuLaunchKernel`, the same kernel in CubeCL (scalar, and with 4-wide
//!   vectors), and a device-to-device copy of one input as the memory roofline.
//! - `launch_peers`: host cost of one launch of a 3-buffer kernel
//!   (`out = x + y`, 256 elements) — xlog's typed launch, a raw `cuLaunchKernel`,
//!   cudarc's `launch_builder` and CubeCL.
//!
//! - `sum_peers`: the sum of 10^8 f32 — xlog's `reduce::sum` and CubeCL's
//!   reductions from its `cubek-reduce` crate: `shared_sum` (its sum of a whole
//!   tensor over many cubes) and `reduce` with `Sum` over the tensor's one axis.
//!
//! CubeCL queues work on a stream it owns, from a device thread of its own, so no
//! contender can be timed with events on a shared stream: each sample is the wall
//! clock over a batch of launches *and* the synchronisation that ends it
//! ([`bench::per_call_ns_then`]), the same for every contender. The launch bench
//! also gives the caller-thread cost alone (synchronised untimed), where CubeCL's
//! figure is only the hand-off to its device thread.
//!
//! Figures go to the markdown on stdout and to `XLOG_BENCH_RESULTS` (see
//! `xlog_test_support::bench`). Needs NVRTC and the CUDA headers at run time (CubeCL
//! compiles its kernels through NVRTC with `/usr/local/cuda/include`).

use std::ffi::c_void;

use cubecl::cuda::{CudaDevice, CudaRuntime};
use cubecl::prelude::*;
use cudarc::driver::{
    sys, CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig as CuConfig, PushKernelArg,
};
use xlog::{DeviceBuffer, LaunchConfig, Stream};
use xlog_kernels::elementwise as k;
use xlog_test_support::bench::{self, peer, XLOG};

/// `y = a·x + y` in CubeCL, one f32 a thread.
#[cube(launch_unchecked)]
fn cube_axpy(a: f32, x: &Array<f32>, y: &mut Array<f32>) {
    if ABSOLUTE_POS < y.len() {
        y[ABSOLUTE_POS] = a * x[ABSOLUTE_POS] + y[ABSOLUTE_POS];
    }
}

/// `y = a·x + y` in CubeCL over `N`-wide vectors. A kernel of its own rather than
/// `cube_axpy` at width 1: both widths of one generic kernel got the same compiled
/// entry point here (the vector size is a dynamic generic).
#[cube(launch_unchecked)]
fn cube_axpy_vec<N: Size>(a: f32, x: &Array<Vector<f32, N>>, y: &mut Array<Vector<f32, N>>) {
    if ABSOLUTE_POS < y.len() {
        y[ABSOLUTE_POS] = Vector::new(a) * x[ABSOLUTE_POS] + y[ABSOLUTE_POS];
    }
}

/// `out = x + y` in CubeCL: the 3-buffer launch.
#[cube(launch_unchecked)]
fn cube_add(x: &Array<f32>, y: &Array<f32>, out: &mut Array<f32>) {
    if ABSOLUTE_POS < out.len() {
        out[ABSOLUTE_POS] = x[ABSOLUTE_POS] + y[ABSOLUTE_POS];
    }
}

/// The same axpy in CUDA C++, with xlog's parameter list (a, x, len, y, len).
const CUDA_SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float* x, unsigned long long xn, float* y, unsigned long long yn) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < yn && i < xn) { y[i] = a * x[i] + y[i]; }
}
"#;

const BLOCK: u32 = 256;
const A: f32 = 1.0001;

fn p<T>(v: &T) -> *mut c_void {
    v as *const T as *mut c_void
}

/// CubeCL's device 0.
struct Cube {
    client: ComputeClient<CudaRuntime>,
}

impl Cube {
    fn new() -> Self {
        Cube {
            client: CudaRuntime::client(&CudaDevice { index: 0 }),
        }
    }

    fn zeros(&self, n: usize) -> cubecl::server::Handle {
        self.client
            .create_from_slice(f32::as_bytes(&vec![0.0f32; n]))
    }

    fn upload(&self, v: &[f32]) -> cubecl::server::Handle {
        self.client.create_from_slice(f32::as_bytes(v))
    }

    fn download(&self, h: &cubecl::server::Handle) -> Vec<f32> {
        let bytes = self.client.read_one(h.clone()).expect("CubeCL read");
        f32::from_bytes(&bytes).to_vec()
    }

    fn sync(&self) {
        cubecl::future::block_on(self.client.sync()).expect("CubeCL sync");
    }

    /// `y = A·x + y` over `n` f32 in `width`-wide vectors.
    fn axpy(&self, width: usize, n: usize, x: &cubecl::server::Handle, y: &cubecl::server::Handle) {
        let len = n / width;
        let blocks = len.div_ceil(BLOCK as usize) as u32;
        let (count, dim) = (CubeCount::Static(blocks, 1, 1), CubeDim::new_1d(BLOCK));
        // SAFETY: both handles hold `n` f32 (`len` vectors of `width`), and the kernels
        // guard their index with the array's length, which CubeCL 0.10 takes in
        // scalars whatever the vector width (given in vectors, the vectorised
        // kernel's results were wrong).
        unsafe {
            let (x, y) = (
                ArrayArg::from_raw_parts(x.clone(), n),
                ArrayArg::from_raw_parts(y.clone(), n),
            );
            if width == 1 {
                cube_axpy::launch_unchecked::<CudaRuntime>(&self.client, count, dim, A, x, y)
            } else {
                cube_axpy_vec::launch_unchecked::<CudaRuntime>(
                    &self.client,
                    count,
                    dim,
                    width,
                    A,
                    x,
                    y,
                )
            }
        };
    }
}

/// The NVRTC-compiled saxpy, launched with a raw `cuLaunchKernel` on xlog's stream
/// and buffers (CUDA C++'s code generation, no launch layer).
struct Nvrtc {
    f: cudarc::driver::CudaFunction,
}

impl Nvrtc {
    fn new(ctx: &std::sync::Arc<CudaContext>) -> Self {
        let ptx = cudarc::nvrtc::compile_ptx(CUDA_SAXPY)
            .expect("NVRTC (set LD_LIBRARY_PATH to CUDA's lib dir)");
        let f = ctx
            .load_module(ptx)
            .unwrap()
            .load_function("saxpy")
            .unwrap();
        Nvrtc { f }
    }

    fn axpy(&self, s: &Stream, x: &DeviceBuffer<f32>, y: &mut DeviceBuffer<f32>) {
        let (xp, yp, n) = (x.device_ptr(), y.device_ptr(), x.len() as u64);
        let cfg = LaunchConfig::for_len(x.len());
        let mut params = [p(&A), p(&xp), p(&n), p(&yp), p(&n)];
        // SAFETY: saxpy(float, const float*, u64, float*, u64) over two live buffers of
        // `n` elements, on the stream that owns them.
        unsafe {
            sys::cuLaunchKernel(
                self.f.cu_function(),
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
    }
}

/// xlog's `axpy_f32` (the machine code xlog launches), launched through cudarc's
/// `launch_builder` on a cudarc stream and cudarc buffers: the same device code as
/// xlog's, with cudarc's host path.
struct Cudarc {
    f: CudaFunction,
    stream: std::sync::Arc<CudaStream>,
}

impl Cudarc {
    fn new(ctx: &std::sync::Arc<CudaContext>) -> Self {
        let f = bench::cudarc_function(ctx, &xlog_kernels::MODULE, "axpy__f32");
        Cudarc {
            f,
            stream: ctx.new_stream().unwrap(),
        }
    }

    /// `y = A·x + y` with the launch shape xlog's axpy gets (`LaunchConfig::for_len`).
    fn axpy(&self, x: &CudaSlice<f32>, y: &mut CudaSlice<f32>) {
        let n = x.len() as u64;
        let cfg = LaunchConfig::for_len(x.len());
        let mut l = self.stream.launch_builder(&self.f);
        l.arg(&A).arg(x).arg(&n).arg(y).arg(&n);
        // SAFETY: axpy_f32(f32, ptr, len, ptr, len) over two buffers of `n` elements;
        // the kernel guards its index with both lengths.
        unsafe {
            l.launch(CuConfig {
                grid_dim: (cfg.grid[0], 1, 1),
                block_dim: (cfg.block[0], 1, 1),
                shared_mem_bytes: 0,
            })
        }
        .unwrap();
    }

    fn sync(&self) {
        self.stream.synchronize().unwrap();
    }
}

/// Every axpy contender computes `A·x + y` on a small input (no peer is timed doing
/// something else, or nothing). xlog, cudarc and NVRTC must; a CubeCL width that
/// does not is reported and left out of the timings. Returns whether CubeCL's scalar
/// and 4-wide kernels passed.
fn check_axpy(
    rt: &xlog::Runtime,
    s: &Stream,
    cube: &Cube,
    cu: &Cudarc,
    nvrtc: &Nvrtc,
) -> [bool; 2] {
    let n = 1 << 16;
    let xs: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.25).collect();
    let ys: Vec<f32> = (0..n).map(|i| (i % 13) as f32 - 6.0).collect();
    let want: Vec<f32> = xs.iter().zip(&ys).map(|(x, y)| A * x + y).collect();
    let wrong = |got: &[f32]| -> Option<String> {
        if got.len() != n {
            return Some(format!("{} elements, not {n}", got.len()));
        }
        let (i, (g, w)) = got
            .iter()
            .zip(&want)
            .enumerate()
            .find(|(_, (g, w))| (*g - *w).abs() > 1e-5 * w.abs().max(1.0))?;
        Some(format!("element {i}: {g} != {w}"))
    };
    let x = rt.upload_on(s, &xs).unwrap();
    let mut y = rt.upload_on(s, &ys).unwrap();
    k::axpy::launch(s, LaunchConfig::for_len(n), A, &x, &mut y).unwrap();
    if let Some(e) = wrong(&y.download(s).unwrap()) {
        panic!("{XLOG} axpy: {e}");
    }
    let mut y = rt.upload_on(s, &ys).unwrap();
    k::axpy_vec::launch(s, LaunchConfig::for_len(n.div_ceil(4)), A, &x, &mut y).unwrap();
    if let Some(e) = wrong(&y.download(s).unwrap()) {
        panic!("{XLOG} axpy_vec: {e}");
    }
    let mut y = rt.upload_on(s, &ys).unwrap();
    nvrtc.axpy(s, &x, &mut y);
    if let Some(e) = wrong(&y.download(s).unwrap()) {
        panic!("{} axpy: {e}", peer::NVRTC);
    }
    let cx = cu.stream.clone_htod(&xs).unwrap();
    let mut cy = cu.stream.clone_htod(&ys).unwrap();
    cu.axpy(&cx, &mut cy);
    if let Some(e) = wrong(&cu.stream.clone_dtoh(&cy).unwrap()) {
        panic!("{} axpy: {e}", peer::CUDARC);
    }
    [(1, peer::CUBECL), (4, peer::CUBECL_VEC4)].map(|(width, name)| {
        let (cx, cy) = (cube.upload(&xs), cube.upload(&ys));
        cube.axpy(width, n, &cx, &cy);
        let e = wrong(&cube.download(&cy));
        if let Some(e) = &e {
            println!("**{name} left out: its axpy is wrong ({e}).**\n");
            eprintln!("{name} left out: its axpy is wrong ({e})");
        }
        e.is_none()
    })
}

fn axpy_bandwidth(
    rt: &xlog::Runtime,
    s: &Stream,
    cube: &Cube,
    cu: &Cudarc,
    nvrtc: &Nvrtc,
    cube_ok: [bool; 2],
) {
    println!("## axpy bandwidth against CubeCL, cudarc and NVRTC (f32, wall clock over a batch + sync, median of 20 interleaved rounds)\n");
    println!("| scenario | xlog | peer | peer name | ratio (xlog/peer) | target |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for log2 in 20..=28u32 {
        let n = 1usize << log2;
        // About 1 ms of work a sample at the top speed; at least 4 launches.
        let batch = ((1usize << 30) / n).max(4);
        let x = rt.alloc_zeroed_on::<f32>(s, n).unwrap();
        let mut y = rt.alloc_zeroed_on::<f32>(s, n).unwrap();
        let mut z = rt.alloc_zeroed_on::<f32>(s, n).unwrap();
        let mut yv = rt.alloc_zeroed_on::<f32>(s, n).unwrap();
        let (cx, cy) = (cube.zeros(n), cube.zeros(n));
        let cux = cu.stream.alloc_zeros::<f32>(n).unwrap();
        let mut cuy = cu.stream.alloc_zeros::<f32>(n).unwrap();
        s.synchronize().unwrap();
        cube.sync();
        cu.sync();
        let cfg = LaunchConfig::for_len(n);
        let cfg4 = LaunchConfig::for_len(n.div_ceil(4));
        let sync = || s.synchronize().unwrap();
        let mut ns = {
            let y_nvrtc = std::cell::RefCell::new(&mut y);
            let [xlog, xlog4, nv, cud, c1, c4, copy] = bench::interleaved(
                2,
                20,
                [
                    &mut bench::per_call_ns_then(
                        batch,
                        || {
                            k::axpy::launch(s, cfg, A, &x, &mut **y_nvrtc.borrow_mut()).unwrap();
                        },
                        sync,
                    ),
                    &mut bench::per_call_ns_then(
                        batch,
                        || k::axpy_vec::launch(s, cfg4, A, &x, &mut yv).unwrap(),
                        sync,
                    ),
                    &mut bench::per_call_ns_then(
                        batch,
                        || nvrtc.axpy(s, &x, &mut y_nvrtc.borrow_mut()),
                        sync,
                    ),
                    &mut bench::per_call_ns_then(batch, || cu.axpy(&cux, &mut cuy), || cu.sync()),
                    &mut bench::per_call_ns_then(
                        batch,
                        || cube.axpy(1, n, &cx, &cy),
                        || cube.sync(),
                    ),
                    &mut bench::per_call_ns_then(
                        batch,
                        || cube.axpy(4, n, &cx, &cy),
                        || cube.sync(),
                    ),
                    &mut bench::per_call_ns_then(batch, || z.copy_from(s, &x).unwrap(), sync),
                ],
                || {},
            );
            [xlog, xlog4, nv, cud, c1, c4, copy]
        };
        // Bytes moved per call over ns per call: GB/s.
        let axpy_bytes = 3.0 * 4.0 * n as f64;
        for v in &mut ns[..6] {
            *v = axpy_bytes / *v;
        }
        ns[6] = 2.0 * 4.0 * n as f64 / ns[6];
        let [xlog, xlog4, nv, cud, c1, c4, copy] = ns;
        // The scalar kernel against the scalar peers; the vectorised one (chunks of
        // four, 128-bit accesses) against every peer, the copy included.
        for (case, xlog, peers) in [
            (
                "axpy f32, elements",
                xlog,
                &[
                    (peer::NVRTC, nv, true),
                    (peer::CUDARC, cud, true),
                    (peer::CUBECL, c1, cube_ok[0]),
                ][..],
            ),
            (
                "axpy_vec f32, elements",
                xlog4,
                &[
                    (peer::CUBECL, c1, cube_ok[0]),
                    (peer::CUBECL_VEC4, c4, cube_ok[1]),
                    (peer::D2D, copy, true),
                ][..],
            ),
        ] {
            let case = bench::Case {
                bench: "axpy_bandwidth",
                case,
                size: Some(n as u64),
                unit: "GB/s",
            };
            case.record(XLOG, xlog);
            for &(name, v, ok) in peers {
                if ok {
                    case.row_against(xlog, v, name);
                }
            }
        }
    }
    println!();
}

fn launch_peers(rt: &xlog::Runtime, s: &Stream, cube: &Cube, ctx: &std::sync::Arc<CudaContext>) {
    const N: usize = 256;
    const BATCH: usize = 1000;
    println!("## 3-buffer launch host cost against CubeCL and cudarc (add_f32, {N} elements; median of 60 interleaved batches of {BATCH})\n");
    println!("| scenario | xlog | peer | peer name | ratio (xlog/peer) | target |");
    println!("| --- | --- | --- | --- | --- | --- |");
    bench::in_processes(bench::PROCESSES, || {
        let x = rt.upload_on(s, &[1.0f32; N]).unwrap();
        let y = rt.upload_on(s, &[2.0f32; N]).unwrap();
        let out = std::cell::RefCell::new(rt.alloc_zeroed_on::<f32>(s, N).unwrap());
        let cfg = LaunchConfig::for_len(N);

        let f = bench::cudarc_function(ctx, &xlog_kernels::MODULE, "add__f32");
        let cs = ctx.new_stream().unwrap();
        let cx = cs.clone_htod(&[1.0f32; N]).unwrap();
        let cy = cs.clone_htod(&[2.0f32; N]).unwrap();
        let cout = std::cell::RefCell::new(cs.alloc_zeros::<f32>(N).unwrap());
        cs.synchronize().unwrap();
        let ccfg = CuConfig {
            grid_dim: (1, 1, 1),
            block_dim: (N as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        let (hx, hy, hout) = (
            cube.upload(&[1.0; N]),
            cube.upload(&[2.0; N]),
            cube.zeros(N),
        );
        cube.sync();
        let raw_ptrs = [x.device_ptr(), y.device_ptr(), out.borrow().device_ptr()];
        let n = N as u64;

        let xlog_launch = || k::add::launch(s, cfg, &x, &y, &mut *out.borrow_mut()).unwrap();
        let raw_launch = || {
            let mut params = [
                p(&raw_ptrs[0]),
                p(&n),
                p(&raw_ptrs[1]),
                p(&n),
                p(&raw_ptrs[2]),
                p(&n),
            ];
            // SAFETY: add_f32(ptr, len, ptr, len, ptr, len) over live buffers of N elements
            // owned by this stream.
            unsafe {
                sys::cuLaunchKernel(
                    f.cu_function(),
                    1,
                    1,
                    1,
                    N as u32,
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
        let cudarc_launch = || {
            let mut cout = cout.borrow_mut();
            let mut l = cs.launch_builder(&f);
            l.arg(&cx).arg(&n).arg(&cy).arg(&n).arg(&mut *cout).arg(&n);
            // SAFETY: add_f32's signature, over buffers of N elements.
            unsafe { l.launch(ccfg) }.unwrap();
        };
        let cube_launch = || {
            // SAFETY: three handles of N f32; the kernel guards its index.
            unsafe {
                cube_add::launch_unchecked::<CudaRuntime>(
                    &cube.client,
                    CubeCount::Static(1, 1, 1),
                    CubeDim::new_1d(N as u32),
                    ArrayArg::from_raw_parts(hx.clone(), N),
                    ArrayArg::from_raw_parts(hy.clone(), N),
                    ArrayArg::from_raw_parts(hout.clone(), N),
                )
            };
        };
        let sync_s = || s.synchronize().unwrap();
        let sync_c = || cs.synchronize().unwrap();
        let sync_cube = || cube.sync();

        // One launch each, checked, before timing: xlog and cudarc (the PTX the raw
        // launch also runs) must write x + y; CubeCL, if it does not, is left out.
        xlog_launch();
        cudarc_launch();
        cube_launch();
        assert!(
            out.borrow().download(s).unwrap().iter().all(|&v| v == 3.0),
            "xlog add"
        );
        assert!(
            cs.clone_dtoh(&*cout.borrow())
                .unwrap()
                .iter()
                .all(|&v| v == 3.0),
            "cudarc add"
        );
        let cube_ok = cube.download(&hout).iter().all(|&v| v == 3.0);
        if !cube_ok {
            println!("**{} left out: its add is wrong.**\n", peer::CUBECL);
        }

        // Every contender pays for its own synchronisation inside the sample.
        let [xs, raw, cu, cb] = bench::interleaved(
            2,
            60,
            [
                &mut bench::per_call_ns_then(BATCH, xlog_launch, sync_s),
                &mut bench::per_call_ns_then(BATCH, raw_launch, sync_s),
                &mut bench::per_call_ns_then(BATCH, cudarc_launch, sync_c),
                &mut bench::per_call_ns_then(BATCH, cube_launch, sync_cube),
            ],
            || {},
        );
        rows("launch + sync", N, [xs, raw, cu, cb], cube_ok);

        // The calling thread's cost alone; CubeCL's is the hand-off to its device thread.
        let [xs, raw, cu, cb] = bench::interleaved(
            2,
            60,
            [
                &mut bench::per_call_ns(BATCH, xlog_launch),
                &mut bench::per_call_ns(BATCH, raw_launch),
                &mut bench::per_call_ns(BATCH, cudarc_launch),
                &mut bench::per_call_ns(BATCH, cube_launch),
            ],
            || {
                sync_s();
                sync_c();
                sync_cube();
            },
        );
        rows("caller thread", N, [xs, raw, cu, cb], cube_ok);
    });
    println!();
}

fn rows(case: &str, n: usize, [xs, raw, cu, cb]: [f64; 4], cube_ok: bool) {
    let case = bench::Case {
        bench: "launch_peers",
        case,
        size: Some(n as u64),
        unit: "ns",
    };
    case.record(XLOG, xs);
    case.row_against(xs, raw, peer::RAW_LAUNCH);
    case.row_against(xs, cu, peer::CUDARC);
    if cube_ok {
        case.row_against(xs, cb, peer::CUBECL);
    }
}

fn main() {
    let rt = bench::runtime_or_exit();
    let info = rt.device().info();
    println!(
        "device: {} (sm_{}{}), {}\n",
        info.name,
        info.compute_capability.0,
        info.compute_capability.1,
        std::env::consts::ARCH
    );
    let s = rt.new_stream().unwrap();
    let ctx = CudaContext::new(0).unwrap();
    let cube = Cube::new();
    let nvrtc = Nvrtc::new(&ctx);
    let cu = Cudarc::new(&ctx);
    let cube_ok = check_axpy(&rt, &s, &cube, &cu, &nvrtc);
    launch_peers(&rt, &s, &cube, &ctx);
    axpy_bandwidth(&rt, &s, &cube, &cu, &nvrtc, cube_ok);
    sum_peers(&rt, &s, &cube);
}

/// Elements of the sum bench (the kernel library's size).
const SUM_N: usize = 100_000_000;

/// `reduce::sum` of `SUM_N` f32 against CubeCL's two reductions that can compute
/// it, each checked against the CPU's sum before it is timed (a wrong one is left
/// out). Rates in Gelem/s, from the wall clock over a batch and its sync.
fn sum_peers(rt: &xlog::Runtime, s: &Stream, cube: &Cube) {
    use cubecl::zspace::{Shape, Strides};
    use cubek_reduce::components::instructions::ReduceOperationConfig;
    use cubek_reduce::launch::{RoutineStrategy, VectorizationStrategy};
    use cubek_reduce::routines::{cube::CubeStrategy, BlueprintStrategy};
    use cubek_reduce::{ReduceDtypes, ReduceStrategy};

    println!("## full f32 sum against CubeCL's reductions (10^8 elements, wall clock over a batch + sync, median of 20 interleaved rounds)\n");
    println!("| scenario | xlog | peer | peer name | ratio (xlog/peer) | target |");
    println!("| --- | --- | --- | --- | --- | --- |");
    let n = SUM_N;
    let host: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.001).collect();
    let want: f64 = host.iter().map(|&v| f64::from(v)).sum();
    let close = |got: f32| (f64::from(got) - want).abs() <= want * 1e-3;
    let x = rt.upload_on(s, &host).unwrap();
    let (cx, out_shared, out_reduce) = (cube.upload(&host), cube.zeros(1), cube.zeros(1));
    drop(host);
    let f32_type = f32::as_type_native_unchecked().storage_type();
    // SAFETY (both bindings): `handle` holds `len` contiguous f32.
    let binding = |handle: &cubecl::server::Handle, len: usize| unsafe {
        TensorBinding::<CudaRuntime>::from_raw_parts(
            handle.clone(),
            Strides::new(&[1]),
            Shape::new([len]),
        )
    };
    let cubes = rt.device().info().multiprocessors * 4;
    let shared_sum = || {
        cubek_reduce::shared_sum::<CudaRuntime>(
            &cube.client,
            binding(&cx, n),
            binding(&out_shared, 1),
            cubes,
            f32_type.elem_type(),
        )
    };
    let reduce = || {
        cubek_reduce::reduce::<CudaRuntime>(
            &cube.client,
            binding(&cx, n),
            binding(&out_reduce, 1),
            0,
            ReduceStrategy {
                routine: RoutineStrategy::Cube(BlueprintStrategy::Inferred(CubeStrategy {
                    use_planes: true,
                })),
                vectorization: VectorizationStrategy {
                    parallel_output_vectorization: false,
                },
            },
            ReduceOperationConfig::Sum,
            ReduceDtypes {
                input: f32_type,
                output: f32_type,
                accumulation: f32_type,
            },
        )
    };
    // `shared_sum` adds into its output, which starts at zero: check the first call.
    let shared_ok = shared_sum().is_ok() && close(cube.download(&out_shared)[0]);
    let reduce_ok = reduce().is_ok() && close(cube.download(&out_reduce)[0]);
    let xlog_ok = close(
        xlog_kernels::reduce::sum(s, &x)
            .unwrap()
            .download(s)
            .unwrap()[0],
    );
    assert!(xlog_ok, "xlog's sum is wrong");
    for (name, ok) in [("shared_sum", shared_ok), ("reduce", reduce_ok)] {
        if !ok {
            println!("**CubeCL {name} left out: it failed or its sum is wrong.**\n");
        }
    }
    let batch = 10;
    let sync = || s.synchronize().unwrap();
    let [xs, cs, cr] = bench::interleaved(
        2,
        20,
        [
            &mut bench::per_call_ns_then(
                batch,
                || {
                    let _ = xlog_kernels::reduce::sum(s, &x).unwrap();
                },
                sync,
            ),
            &mut bench::per_call_ns_then(batch, || drop(shared_sum()), || cube.sync()),
            &mut bench::per_call_ns_then(batch, || drop(reduce()), || cube.sync()),
        ],
        || {},
    );
    let rate = |ns: f64| n as f64 / ns;
    let case = bench::Case {
        bench: "sum_peers",
        case: "sum f32",
        size: Some(n as u64),
        unit: "Gelem/s",
    };
    case.record(XLOG, rate(xs));
    for (name, v, ok) in [
        (peer::CUBECL_SHARED_SUM, cs, shared_ok),
        (peer::CUBECL_REDUCE, cr, reduce_ok),
    ] {
        if ok {
            case.row_against(rate(xs), rate(v), name);
        }
    }
    println!();
}
