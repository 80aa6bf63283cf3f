//! Host cost of a typed launch with 3 buffers (`elementwise::add::launch`)
//! vs a raw `cuLaunchKernel` of the same entry point and vs cudarc's
//! `launch_builder`, on one stream and alternating two streams (bench id
//! `typed_launch`; targets in `bench::TARGETS`).

use std::ffi::c_void;

use cudarc::driver::{sys, CudaContext, LaunchConfig as CuConfig, PushKernelArg};
use xlog::LaunchConfig;
use xlog_kernels::elementwise as k;
use xlog_test_support::bench::{self, peer};

const N: usize = 256;

fn p<T>(v: &T) -> *mut c_void {
    v as *const T as *mut c_void
}

/// A host-cost case of this bench.
fn case(case: &str) -> bench::Case<'_> {
    bench::Case {
        bench: "typed_launch",
        case,
        size: Some(N as u64),
        unit: "ns",
    }
}

fn main() {
    let rt = bench::runtime_or_exit();
    let info = rt.device().info();
    println!("## typed launch host cost, 3 buffers (add_f32, {N} elements; median of 100 alternating batches of 500)\n");
    println!(
        "device: {} (sm_{}{})\n",
        info.name, info.compute_capability.0, info.compute_capability.1
    );
    println!("| scenario | xlog typed | peer | peer name | ratio (xlog/peer) | target |");
    println!("| --- | --- | --- | --- | --- | --- |");
    bench::in_processes(bench::PROCESSES, || {
        let (s1, s2) = (rt.new_stream().unwrap(), rt.new_stream().unwrap());
        let x = rt.upload_on(&s1, &[1.0f32; N]).unwrap();
        let y = rt.upload_on(&s1, &[2.0f32; N]).unwrap();
        let mut out = rt.alloc_zeroed_on::<f32>(&s1, N).unwrap();
        let cfg = LaunchConfig::for_len(N);

        let ctx = CudaContext::new(0).unwrap();
        let f = bench::cudarc_function(&ctx, &xlog_kernels::MODULE, "add__f32");
        let (cs1, cs2) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
        let cx = cs1.clone_htod(&[1.0f32; N]).unwrap();
        let cy = cs1.clone_htod(&[2.0f32; N]).unwrap();
        let mut cout = cs1.alloc_zeros::<f32>(N).unwrap();
        cs1.synchronize().unwrap();
        let ccfg = CuConfig {
            grid_dim: (1, 1, 1),
            block_dim: (N as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        let ptrs = [
            x.device_ptr(),
            N as u64,
            y.device_ptr(),
            N as u64,
            out.device_ptr(),
            N as u64,
        ];
        let sync = || {
            s1.synchronize().unwrap();
            s2.synchronize().unwrap();
            cs1.synchronize().unwrap();
            cs2.synchronize().unwrap();
        };

        let (xs, raw) = bench::compare(
            100,
            500,
            || k::add::launch(&s1, cfg, &x, &y, &mut out).unwrap(),
            || {
                let mut params = [
                    p(&ptrs[0]),
                    p(&ptrs[1]),
                    p(&ptrs[2]),
                    p(&ptrs[3]),
                    p(&ptrs[4]),
                    p(&ptrs[5]),
                ];
                // SAFETY: add_f32(ptr, len, ptr, len, ptr, len) with live buffers of N elements.
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
                        s1.raw(),
                        params.as_mut_ptr(),
                        std::ptr::null_mut(),
                    )
                }
                .result()
                .unwrap();
            },
            sync,
        );
        case("same stream").row(xs, raw, peer::RAW_LAUNCH);

        let n = N as u64;
        let (xs, cu) = bench::compare(
            100,
            500,
            || k::add::launch(&s1, cfg, &x, &y, &mut out).unwrap(),
            || {
                let mut l = cs1.launch_builder(&f);
                l.arg(&cx).arg(&n).arg(&cy).arg(&n).arg(&mut cout).arg(&n);
                // SAFETY: same signature and buffers of N elements.
                unsafe { l.launch(ccfg) }.unwrap();
            },
            sync,
        );
        case("same stream").row(xs, cu, peer::CUDARC);

        let (mut fx, mut fc) = (false, false);
        let (xc, cc) = bench::compare(
            100,
            500,
            || {
                fx = !fx;
                k::add::launch(if fx { &s1 } else { &s2 }, cfg, &x, &y, &mut out).unwrap()
            },
            || {
                fc = !fc;
                let mut l = if fc { &cs1 } else { &cs2 }.launch_builder(&f);
                l.arg(&cx).arg(&n).arg(&cy).arg(&n).arg(&mut cout).arg(&n);
                // SAFETY: as above.
                unsafe { l.launch(ccfg) }.unwrap();
            },
            sync,
        );
        case("cross-stream (alternating)").row(xc, cc, peer::CUDARC);
    });
}
