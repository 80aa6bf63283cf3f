//! Host cost of a launch with 3 recorded buffers: xlog's recorder vs a raw
//! `cuLaunchKernel` and vs cudarc's `launch_builder`, on one stream and
//! alternating between two streams; plus launch throughput from 8 threads on 8
//! streams vs 1 thread (bench id `launch_overhead`; targets in `bench::TARGETS`).

use std::ffi::c_void;
use std::time::Instant;

use cudarc::driver::{sys, CudaContext, LaunchConfig as CuConfig, PushKernelArg};
use xlog_runtime::{DeviceBuffer, Function, LaunchConfig, ModuleImage, Stream, WorkRecorder};
use xlog_test_support::bench::{self, peer};

// SAFETY: the hand-written PTX's entry points are launched only with the
// parameter lists documented beside each of them in kernels.ptx.
static KERNELS: ModuleImage =
    unsafe { ModuleImage::from_ptx("bench-kernels", include_str!("../tests/gpu/kernels.ptx")) };

const N: u64 = 1024;

fn p<T>(v: &T) -> *mut c_void {
    v as *const T as *mut c_void
}

fn xlog_launch(
    f: &Function,
    s: &Stream,
    a: &DeviceBuffer<u32>,
    b: &DeviceBuffer<u32>,
    c: &mut DeviceBuffer<u32>,
) {
    let (ap, bp, cp) = (a.device_ptr(), b.device_ptr(), c.device_ptr());
    let pre = WorkRecorder::new(s)
        .read(a)
        .read(b)
        .write(c)
        .preflight()
        .unwrap();
    let mut params = [p(&ap), p(&bp), p(&cp), p(&N)];
    // SAFETY: empty3(u64, u64, u64, u64) touches nothing.
    let _ =
        unsafe { pre.launch(f, LaunchConfig::new([1, 1, 1], [32, 1, 1]), &mut params) }.unwrap();
}

/// One thread's stream and buffers; the output behind an (uncontended) mutex for `&mut`.
type ThreadSet = (
    Stream,
    DeviceBuffer<u32>,
    DeviceBuffer<u32>,
    std::sync::Mutex<DeviceBuffer<u32>>,
);

fn raw_launch(f: sys::CUfunction, s: sys::CUstream, ptrs: &[u64; 3]) {
    let mut params = [p(&ptrs[0]), p(&ptrs[1]), p(&ptrs[2]), p(&N)];
    // SAFETY: empty3 takes four u64 values; it touches nothing.
    unsafe {
        sys::cuLaunchKernel(
            f,
            1,
            1,
            1,
            32,
            1,
            1,
            0,
            s,
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    }
    .result()
    .unwrap();
}

/// Launches per second from `threads` threads, each on its own stream.
fn throughput(
    threads: usize,
    per_thread: usize,
    launch: impl Fn(usize) + Sync,
    sync: impl Fn(usize) + Sync,
) -> f64 {
    let barrier = std::sync::Barrier::new(threads + 1);
    let (launch, sync, barrier) = (&launch, &sync, &barrier);
    let start = std::thread::scope(|sc| {
        for t in 0..threads {
            sc.spawn(move || {
                barrier.wait();
                for i in 0..per_thread {
                    launch(t);
                    if i % 512 == 511 {
                        sync(t);
                    }
                }
                sync(t);
            });
        }
        barrier.wait();
        Instant::now()
    });
    (threads * per_thread) as f64 / start.elapsed().as_secs_f64()
}

/// A host-cost case of this bench.
fn case(case: &str) -> bench::Case<'_> {
    bench::Case {
        bench: "launch_overhead",
        case,
        size: None,
        unit: "ns",
    }
}

fn main() {
    bench::header(
        "launch host cost, 3 buffers (median of 100 alternating batches of 500 launches)",
    );
    bench::in_processes(bench::PROCESSES, || {
        let rt = bench::runtime_or_exit();
        let f = rt
            .load_module(&KERNELS)
            .unwrap()
            .function("empty3")
            .unwrap();
        let (s1, s2) = (rt.new_stream().unwrap(), rt.new_stream().unwrap());
        let a = rt.alloc_zeroed_on::<u32>(&s1, N as usize).unwrap();
        let b = rt.alloc_zeroed_on::<u32>(&s1, N as usize).unwrap();
        let mut c = rt.alloc_zeroed_on::<u32>(&s1, N as usize).unwrap();
        let ptrs = [a.device_ptr(), b.device_ptr(), c.device_ptr()];

        let ctx = CudaContext::new(0).unwrap();
        let module = ctx
            .load_module(cudarc::nvrtc::Ptx::from_src(include_str!(
                "../tests/gpu/kernels.ptx"
            )))
            .unwrap();
        let cu_f = module.load_function("empty3").unwrap();
        let raw_f: sys::CUfunction = cu_f.cu_function();
        let (cs1, cs2) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
        let ca = cs1.alloc_zeros::<u32>(N as usize).unwrap();
        let cb = cs1.alloc_zeros::<u32>(N as usize).unwrap();
        let mut cc = cs1.alloc_zeros::<u32>(N as usize).unwrap();
        cs1.synchronize().unwrap();
        let cfg = CuConfig {
            grid_dim: (1, 1, 1),
            block_dim: (32, 1, 1),
            shared_mem_bytes: 0,
        };
        let sync_all = || {
            s1.synchronize().unwrap();
            s2.synchronize().unwrap();
            cs1.synchronize().unwrap();
            cs2.synchronize().unwrap();
        };

        let (xlog_same, raw_same) = bench::compare(
            100,
            500,
            || xlog_launch(&f, &s1, &a, &b, &mut c),
            || raw_launch(raw_f, s1.raw(), &ptrs),
            sync_all,
        );
        case("same stream").row(xlog_same, raw_same, peer::RAW_LAUNCH);

        let (xlog_same, cudarc_same) = bench::compare(
            100,
            500,
            || xlog_launch(&f, &s1, &a, &b, &mut c),
            || {
                let mut l = cs1.launch_builder(&cu_f);
                l.arg(&ca).arg(&cb).arg(&mut cc).arg(&N);
                // SAFETY: empty3 takes four u64-sized values; it touches nothing.
                unsafe { l.launch(cfg) }.unwrap();
            },
            sync_all,
        );
        case("same stream").row(xlog_same, cudarc_same, peer::CUDARC);

        // Cross-stream: alternate streams so every launch must fence the previous one.
        let (mut flip_x, mut flip_c) = (false, false);
        let (xlog_cross, cudarc_cross) = bench::compare(
            100,
            500,
            || {
                flip_x = !flip_x;
                xlog_launch(&f, if flip_x { &s1 } else { &s2 }, &a, &b, &mut c);
            },
            || {
                flip_c = !flip_c;
                let st = if flip_c { &cs1 } else { &cs2 };
                let mut l = st.launch_builder(&cu_f);
                l.arg(&ca).arg(&cb).arg(&mut cc).arg(&N);
                // SAFETY: as above.
                unsafe { l.launch(cfg) }.unwrap();
            },
            sync_all,
        );
        case("cross-stream (alternating)").row(xlog_cross, cudarc_cross, peer::CUDARC);

        // Throughput: 8 threads on 8 streams vs 1 thread, for xlog and for raw launches.
        let per_thread = 20_000usize;
        let sets: Vec<ThreadSet> = (0..8)
            .map(|_| {
                let s = rt.new_stream().unwrap();
                let a = rt.alloc_zeroed_on::<u32>(&s, N as usize).unwrap();
                let b = rt.alloc_zeroed_on::<u32>(&s, N as usize).unwrap();
                let c = rt.alloc_zeroed_on::<u32>(&s, N as usize).unwrap();
                s.synchronize().unwrap();
                (s, a, b, std::sync::Mutex::new(c))
            })
            .collect();
        let raw_ptrs: Vec<[u64; 3]> = sets
            .iter()
            .map(|(_, a, b, c)| {
                [
                    a.device_ptr(),
                    b.device_ptr(),
                    c.lock().unwrap().device_ptr(),
                ]
            })
            .collect();
        // Each thread locks only its own output buffer's mutex (uncontended), to get `&mut`.
        let xlog_tp = |threads| {
            throughput(
                threads,
                per_thread,
                |t| {
                    let (s, a, b, c) = &sets[t];
                    xlog_launch(&f, s, a, b, &mut c.lock().unwrap());
                },
                |t| sets[t].0.synchronize().unwrap(),
            )
        };
        let raw_tp = |threads| {
            throughput(
                threads,
                per_thread,
                |t| raw_launch(cu_f.cu_function(), sets[t].0.raw(), &raw_ptrs[t]),
                |t| sets[t].0.synchronize().unwrap(),
            )
        };
        // Interleaved like every other figure: one sample of each per round.
        let [x1, r1, x8, r8] = bench::interleaved(
            1,
            9,
            [
                &mut || xlog_tp(1),
                &mut || raw_tp(1),
                &mut || xlog_tp(8),
                &mut || raw_tp(8),
            ],
            || {},
        );
        let rate = |case| bench::Case {
            bench: "launch_overhead",
            case,
            size: None,
            unit: "launches/s",
        };
        rate("throughput, 8 threads on 8 streams vs 1 thread").row(x8, x1, peer::XLOG_ONE_THREAD);
        rate("throughput, 1 thread").row(x1, r1, peer::RAW_LAUNCH);
        rate("throughput, 8 threads on 8 streams").row(x8, r8, peer::RAW_LAUNCH);
    });
}
