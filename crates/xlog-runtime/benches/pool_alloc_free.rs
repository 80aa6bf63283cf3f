//! Allocation + free through the caching pool (`pool(budget(async))`) vs raw
//! `cuMemAllocAsync` / `cuMemFreeAsync` on the same stream and vs the stack
//! without the pool, at hot sizes; and pairs per second from 8 threads on 8
//! streams vs 1 thread (bench id `pool_alloc_free`; targets in `bench::TARGETS`).

use std::time::Instant;

use cudarc::driver::{result, sys};
use xlog_runtime::{AllocTag, Runtime, Stream};
use xlog_test_support::bench::{self, peer};

const SIZES: [usize; 3] = [256, 64 << 10, 16 << 20];

fn alloc_free(rt: &Runtime, s: &Stream, bytes: usize) {
    // SAFETY: the buffer is dropped unread.
    let b = unsafe { rt.alloc_uninit::<u8>(s, bytes, AllocTag("bench")) }.unwrap();
    drop(b);
}

/// Allocation + free pairs per second from `threads` threads, each on its own stream.
fn throughput(rt: &Runtime, streams: &[Stream], threads: usize, bytes: usize) -> f64 {
    let per_thread = 200_000;
    let barrier = std::sync::Barrier::new(threads + 1);
    let barrier = &barrier;
    let start = std::thread::scope(|sc| {
        for s in &streams[..threads] {
            sc.spawn(move || {
                alloc_free(rt, s, bytes);
                barrier.wait();
                for _ in 0..per_thread {
                    alloc_free(rt, s, bytes);
                }
            });
        }
        barrier.wait();
        Instant::now()
    });
    (threads * per_thread) as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    bench::header(
        "allocation + free through the caching pool, host cost per pair (median of 60 alternating batches of 2000)",
    );
    bench::in_processes(bench::PROCESSES, || {
        let _ = bench::runtime_or_exit();
        let pooled = Runtime::builder(0).caching(true).build().unwrap();
        let plain = Runtime::builder(0).caching(false).build().unwrap();
        let s = pooled.new_stream().unwrap();
        let t = plain.new_stream().unwrap();
        let settle = || {
            plain.reap().unwrap();
            s.synchronize().unwrap();
            t.synchronize().unwrap();
        };
        for &bytes in &SIZES {
            let case = bench::Case {
                bench: "pool_alloc_free",
                case: "alloc+free, bytes",
                size: Some(bytes as u64),
                unit: "ns",
            };
            let (xlog, raw) = bench::compare(
                60,
                2000,
                || alloc_free(&pooled, &s, bytes),
                || {
                    // SAFETY: a fresh pool allocation freed at once on the same stream.
                    unsafe {
                        let p = result::malloc_async(s.raw(), bytes).unwrap();
                        result::free_async(p, s.raw()).unwrap();
                    }
                },
                || {
                    // SAFETY: the stream is alive.
                    unsafe { sys::cuStreamSynchronize(s.raw()) }
                        .result()
                        .unwrap();
                },
            );
            case.row(xlog, raw, peer::RAW_ALLOC);
            let (xlog, without) = bench::compare(
                60,
                2000,
                || alloc_free(&pooled, &s, bytes),
                || alloc_free(&plain, &t, bytes),
                settle,
            );
            bench::Case {
                case: "alloc+free vs the stack without the pool, bytes",
                ..case
            }
            .row(xlog, without, peer::XLOG_WITHOUT_POOL);
        }
        let streams: Vec<Stream> = (0..8).map(|_| pooled.new_stream().unwrap()).collect();
        for &bytes in &SIZES {
            let one = throughput(&pooled, &streams, 1, bytes);
            let eight = throughput(&pooled, &streams, 8, bytes);
            bench::Case {
                bench: "pool_alloc_free",
                case: "throughput, 8 threads on 8 streams, bytes",
                size: Some(bytes as u64),
                unit: "pairs/s",
            }
            .row(eight, one, peer::XLOG_ONE_THREAD);
        }
        let st = pooled.pool_stats().unwrap();
        println!(
            "<!-- pool: hits {} misses {} waits {} held {} bytes -->",
            st.hits, st.misses, st.waits, st.held_bytes
        );
    });
}
