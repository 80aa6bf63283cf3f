use std::sync::Barrier;

use xlog_runtime::Runtime;

#[test]
fn runtime_creation_raced_from_16_threads_creates_one() {
    let barrier = Barrier::new(16);
    let ids: Vec<u64> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..16)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    Runtime::get(0).expect("device 0").id()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(ids.windows(2).all(|w| w[0] == w[1]), "{ids:?}");
}

#[test]
fn device_info_reads_the_hardware() {
    let rt = crate::common::rt();
    let info = rt.device().info();
    assert!(!info.name.is_empty());
    assert!(
        info.compute_capability.0 >= 7,
        "{:?}",
        info.compute_capability
    );
    // Every NVIDIA GPU xlog runs on has a few to a few hundred multiprocessors; the
    // Hopper parts of the GPU machines have 132 (SXM) or 114 (PCIe), which no other
    // attribute of theirs equals.
    let sms = info.multiprocessors;
    assert!((1..=1024).contains(&sms), "{sms}");
    if info.name.contains("H100") || info.name.contains("H200") {
        assert!([132, 114].contains(&sms), "{sms}");
    }
    assert!(info.max_threads_per_block >= 1024);
    assert!(info.total_memory > 0);
    assert!(info.free_memory > 0 && info.free_memory <= info.total_memory);
}

#[test]
fn default_stack_tracks_streams_and_has_a_budget_and_stats() {
    let rt = crate::common::rt();
    let d = rt.describe_resource();
    // The statistics are the backend's own: no counting layer in the stack. The
    // caching pool is on top when `XLOG_POOL=1` asks for it (`0` leaves it out),
    // else as `DEFAULT_CACHING` says, but never over the direct backend
    // (compute-sanitizer runs).
    let direct = std::env::var(xlog_runtime::BACKEND_ENV).as_deref() == Ok("direct");
    let pooled = match std::env::var(xlog_runtime::POOL_ENV).as_deref() {
        Ok("1") => true,
        Ok("0") => false,
        _ => xlog_runtime::DEFAULT_CACHING && !direct,
    };
    let want: &[&str] = if pooled {
        &["pool(budget(async))", "pool(budget(direct))"]
    } else {
        &["budget(async)", "budget(direct)"]
    };
    assert!(want.contains(&d.as_str()), "{d}");
    assert_eq!(rt.pool_stats().is_some(), pooled);
    assert!(rt.budget().unwrap().limit() > 0);
    if std::env::var_os("XLOG_BUDGET_BYTES").is_none() {
        // By default the budget is the memory the device had free when opened, so
        // an allocation too large is refused by the budget before the driver fails.
        let info = rt.device().info();
        let reserve = (info.total_memory / 64).max(1 << 30);
        assert_eq!(
            rt.budget().unwrap().limit(),
            info.free_memory.saturating_sub(reserve)
        );
    }
    assert!(rt.stats().is_some());
}

#[test]
fn threads_allocate_and_launch_on_shared_buffers() {
    let rt = crate::common::rt();
    let shared = rt.upload(&crate::common::random_u32(9, 4096)).unwrap();
    let want = shared.download(&rt.stream().unwrap()).unwrap();
    std::thread::scope(|sc| {
        for _ in 0..16 {
            let (rt, shared, want) = (&rt, &shared, &want);
            sc.spawn(move || {
                let s = rt.new_stream().unwrap();
                for _ in 0..20 {
                    let mut out = rt.alloc_zeroed_on::<u32>(&s, 4096).unwrap();
                    crate::common::slow_copy(rt, &s, shared, &mut out, 0);
                    assert_eq!(&out.download(&s).unwrap(), want);
                }
            });
        }
    });
    rt.reap().unwrap();
}
