//! Allocation + free through the stack without the caching pool (budget(async),
//! statistics kept by the backend) vs raw
//! `cuMemAllocAsync` / `cuMemFreeAsync` on the same stream (bench id `alloc_free`;
//! target in `bench::TARGETS`).

use cudarc::driver::{result, sys};
use xlog_runtime::AllocTag;
use xlog_test_support::bench;

fn main() {
    bench::header(
        "allocation + free, host cost per pair (median of 60 alternating batches of 2000)",
    );
    bench::in_processes(bench::PROCESSES, || {
        let _ = bench::runtime_or_exit();
        let rt = xlog_runtime::Runtime::builder(0)
            .caching(false)
            .build()
            .unwrap();
        let s = rt.new_stream().unwrap();
        for &bytes in &[256usize, 64 << 10, 16 << 20] {
            let (xlog, raw) = bench::compare(
                60,
                2000,
                || {
                    // SAFETY: the buffer is dropped unread.
                    let b = unsafe { rt.alloc_uninit::<u8>(&s, bytes, AllocTag("bench")) }.unwrap();
                    drop(b);
                },
                || {
                    // SAFETY: a fresh pool allocation freed at once on the same stream.
                    unsafe {
                        let p = result::malloc_async(s.raw(), bytes).unwrap();
                        result::free_async(p, s.raw()).unwrap();
                    }
                },
                || {
                    rt.reap().unwrap();
                    // SAFETY: the stream is alive.
                    unsafe { sys::cuStreamSynchronize(s.raw()) }
                        .result()
                        .unwrap();
                },
            );
            bench::Case {
                bench: "alloc_free",
                case: "alloc+free, bytes",
                size: Some(bytes as u64),
                unit: "ns",
            }
            .row(xlog, raw, bench::peer::RAW_ALLOC);
        }
    });
}
