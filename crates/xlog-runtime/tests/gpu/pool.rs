//! The caching pool on the device: a block freed on one stream and reused on
//! another waits for its last use there (slowed down so that a missing wait would
//! be seen), budget pressure trims the cache, the statistics follow.

use crate::common::*;

const N: usize = 1 << 16;
const SLOW: u32 = 20_000; // about 20 ms per thread

#[test]
fn a_block_reused_on_another_stream_waits_for_its_last_use() {
    let rt = pool_rt(None);
    let (a, b) = (rt.new_stream().unwrap(), rt.new_stream().unwrap());
    let mut x = rt.alloc_zeroed_on::<u32>(&a, N).unwrap();
    a.synchronize().unwrap();
    let ptr = x.device_ptr();
    slow_fill(&rt, &a, &mut x, 1, SLOW);
    drop(x); // cached, freed on a behind the slow write
    let mut y = rt.alloc_zeroed_on::<u32>(&b, N).unwrap();
    assert_eq!(y.device_ptr(), ptr, "the pool handed out another block");
    y.fill(&b, 2).unwrap();
    // Whatever the order on the device, it is over once a has drained.
    a.synchronize().unwrap();
    assert!(
        y.download(&b).unwrap().iter().all(|&v| v == 2),
        "the slow write of the block's previous user landed after the reuse"
    );
    assert!(rt.pool_stats().unwrap().waits >= 1);
}

#[test]
fn a_large_piece_reused_on_another_stream_waits_for_its_last_use() {
    let rt = pool_rt(None);
    let (a, b) = (rt.new_stream().unwrap(), rt.new_stream().unwrap());
    let big = 1 << 20; // 4 MiB of u32: the large pool
    let mut x = rt.alloc_zeroed_on::<u32>(&a, big).unwrap();
    a.synchronize().unwrap();
    let ptr = x.device_ptr();
    slow_fill(&rt, &a, &mut x, 1, SLOW / 4);
    drop(x);
    let mut y = rt.alloc_zeroed_on::<u32>(&b, big).unwrap();
    assert_eq!(y.device_ptr(), ptr, "the pool handed out another piece");
    y.fill(&b, 2).unwrap();
    a.synchronize().unwrap();
    assert!(
        y.download(&b).unwrap().iter().all(|&v| v == 2),
        "the slow write of the piece's previous user landed after the reuse"
    );
}

/// Both reuse tests fail with fencing off: they can see the hazard they guard.
#[test]
fn pool_reuse_tests_have_teeth() {
    let _ = crate::common::rt();
    for name in [
        "a_block_reused_on_another_stream_waits_for_its_last_use",
        "a_large_piece_reused_on_another_stream_waits_for_its_last_use",
    ] {
        let out = xlog_test_support::child::run_test(
            &format!("pool::{name}"),
            &[
                (crate::common::UNFENCED_ENV, "1"),
                ("CUDA_DEVICE_MAX_CONNECTIONS", "32"),
            ],
        );
        assert!(
            out.failed_one() && out.text().contains("landed after the reuse"),
            "`{name}` did not fail on its values with fencing disabled\n{}",
            out.text()
        );
    }
}

#[test]
fn budget_pressure_trims_the_cache_and_the_allocation_succeeds() {
    let rt = pool_rt(Some(13 << 19)); // 6.5 MiB
    let s = rt.new_stream().unwrap();
    let keep = rt.alloc_zeroed_on::<u8>(&s, 5 << 20).unwrap();
    drop(rt.alloc_zeroed_on::<u8>(&s, 256 << 10).unwrap()); // 256 KiB cached
    assert_eq!(rt.pool_stats().unwrap().cached_bytes, 256 << 10);
    // The cached block is within the cache's bound (a sixteenth of what is in
    // use), so it stays; beside it, 1.5 MiB more is past the budget: the pool
    // trims and retries.
    let mut more = rt.alloc_zeroed_on::<u32>(&s, 3 << 17).unwrap();
    more.fill(&s, 7).unwrap();
    assert!(more.download(&s).unwrap().iter().all(|&v| v == 7));
    let st = rt.pool_stats().unwrap();
    assert_eq!(
        (st.trims, st.cached_bytes, st.held_bytes),
        (1, 0, 13 << 19),
        "{st:?}"
    );
    // Past the budget with nothing cached: refused, nothing changed.
    let err = rt.alloc_zeroed_on::<u8>(&s, 6 << 20).unwrap_err();
    assert!(
        matches!(err, xlog_runtime::Error::BudgetExceeded { .. }),
        "{err}"
    );
    assert_eq!(rt.pool_stats().unwrap().held_bytes, 13 << 19);
    drop((keep, more));
}

#[test]
fn hot_sizes_are_served_from_the_cache_and_trim_gives_them_back() {
    let rt = pool_rt(None);
    let s = rt.new_stream().unwrap();
    for _ in 0..20 {
        for bytes in [256usize, 64 << 10, 16 << 20] {
            let mut b = rt.alloc_zeroed_on::<u8>(&s, bytes).unwrap();
            b.fill(&s, 3).unwrap();
        }
    }
    let st = rt.pool_stats().unwrap();
    assert_eq!(st.misses, 3, "{st:?}");
    assert_eq!(st.in_use_count, 0);
    assert_eq!(rt.trim().unwrap(), st.held_bytes);
    rt.reap().unwrap();
    assert_eq!(rt.bytes_outstanding(), 0);
    assert_eq!(rt.drop_errors(), 0);
}

/// Without the pool, frees stop counting once their stream has run them, with no
/// reap: a loop that keeps one 1.3 MB buffer live holds a bounded number of bytes
/// outstanding, not every free it ever queued.
#[test]
fn frees_retire_as_their_stream_passes_them_without_a_reap() {
    let rt = xlog_runtime::Runtime::builder(0)
        .backend(backend())
        .caching(false)
        .build()
        .unwrap();
    let s = rt.new_stream().unwrap();
    let len = 1_300_000 / 4;
    let iterations = 1000;
    for _ in 0..iterations {
        let mut b = rt.alloc_zeroed_on::<u32>(&s, len).unwrap();
        b.fill(&s, 1).unwrap();
    }
    s.synchronize().unwrap();
    // The next checks see the stream drained.
    for _ in 0..2 * 64 {
        drop(rt.alloc_zeroed_on::<u32>(&s, 1).unwrap());
    }
    let outstanding = rt.bytes_outstanding();
    assert!(
        outstanding < 200 * len * 4,
        "{outstanding} bytes outstanding after {iterations} frees of {} bytes",
        len * 4
    );
}

/// `Runtime::reap` gives the cache back too: afterwards the runtime holds its live
/// buffers only, as it does without the pool.
#[test]
fn reap_gives_the_cache_back_and_leaves_live_buffers() {
    let rt = pool_rt(None);
    let s = rt.new_stream().unwrap();
    let live = rt.alloc_zeroed_on::<u8>(&s, 3 << 20).unwrap();
    for bytes in [256usize, 64 << 10, 16 << 20] {
        drop(rt.alloc_zeroed_on::<u8>(&s, bytes).unwrap());
    }
    assert!(rt.pool_stats().unwrap().cached_bytes > 0);
    rt.reap().unwrap();
    let st = rt.pool_stats().unwrap();
    assert_eq!((st.cached_bytes, st.in_use_bytes), (0, 3 << 20), "{st:?}");
    assert_eq!(rt.bytes_outstanding(), 3 << 20);
    drop(live);
    rt.reap().unwrap();
    assert_eq!(rt.bytes_outstanding(), 0);
}
