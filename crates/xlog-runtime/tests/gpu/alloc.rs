use xlog_runtime::{AllocTag, Backend, Device, Error, Runtime};

use crate::common::*;

#[test]
fn device_accounting_counts_live_then_pending_then_nothing() {
    // The backend's own accounting: no caching pool holding freed blocks.
    let rt = Runtime::builder(0)
        .backend(backend())
        .caching(false)
        .build()
        .unwrap();
    let s = rt.new_stream().unwrap();
    assert_eq!(rt.bytes_outstanding(), 0);
    let a = rt.alloc_zeroed_on::<u32>(&s, 1 << 20).unwrap();
    let b = rt.upload_on(&s, &[1u64; 1000]).unwrap();
    // SAFETY: an empty buffer has nothing to read.
    let empty = unsafe { rt.alloc_uninit::<u8>(&s, 0, AllocTag("empty")) }.unwrap();
    assert_eq!(rt.bytes_outstanding(), (4 << 20) + 8000);
    let st = rt.stats().unwrap();
    assert_eq!((st.current_bytes, st.current_count), ((4 << 20) + 8000, 3));
    drop(a);
    drop(b);
    drop(empty);
    rt.reap().unwrap();
    assert_eq!(rt.bytes_outstanding(), 0);
    let st = rt.stats().unwrap();
    assert_eq!(
        (
            st.current_bytes,
            st.peak_bytes,
            st.current_count,
            st.total_count
        ),
        (0, (4 << 20) + 8000, 0, 3)
    );
    assert_eq!(rt.drop_errors(), 0);
}

#[test]
fn budget_refusal_on_device_changes_nothing() {
    let rt = Runtime::builder(0)
        .backend(backend())
        .caching(false)
        .budget(1 << 20)
        .build()
        .unwrap();
    let s = rt.new_stream().unwrap();
    let keep = rt.alloc_zeroed_on::<u8>(&s, 600 << 10).unwrap();
    let before = (rt.bytes_outstanding(), rt.stats().unwrap());
    // SAFETY: the refused buffer never exists.
    let err = unsafe { rt.alloc_uninit::<u8>(&s, 500 << 10, AllocTag("too-big")) }.unwrap_err();
    match err {
        Error::BudgetExceeded {
            requested,
            remaining,
            limit,
            cached,
        } => assert_eq!(
            (requested, remaining, limit, cached),
            (500 << 10, (1 << 20) - (600 << 10), 1 << 20, 0)
        ),
        e => panic!("expected a budget refusal, got {e}"),
    }
    assert_eq!((rt.bytes_outstanding(), rt.stats().unwrap()), before);
    drop(keep);
    rt.reap().unwrap();
    assert_eq!(rt.budget().unwrap().used(), 0);
    // After the free, the same request fits.
    let again = rt.alloc_zeroed_on::<u8>(&s, 500 << 10).unwrap();
    assert_eq!(again.len(), 500 << 10);
}

#[test]
fn zero_length_buffers_work_everywhere() {
    let rt = rt();
    let s = rt.stream().unwrap();
    let mut z = rt.upload_on::<f32>(&s, &[]).unwrap();
    assert!(z.is_empty());
    assert_eq!(z.download(&s).unwrap(), Vec::<f32>::new());
    z.fill(&s, 1.0).unwrap();
    let z2 = rt.alloc_zeroed::<f32>(0).unwrap();
    z.copy_from(&s, &z2).unwrap();
}

#[test]
fn bad_ordinal_is_a_clear_error() {
    let count = Device::count().unwrap();
    match Runtime::get(count + 3) {
        Err(Error::DeviceOutOfRange { ordinal, count: c }) => {
            assert_eq!((ordinal, c), (count + 3, count))
        }
        other => panic!("expected DeviceOutOfRange, got {other:?}"),
    }
}

#[test]
fn a_driver_that_sees_no_gpu_is_no_device() {
    const NAME: &str = "alloc::a_driver_that_sees_no_gpu_is_no_device";
    if xlog_runtime::sim::is_active() {
        println!("{NAME}: needs the real driver (the simulator reads no CUDA_VISIBLE_DEVICES)");
        return;
    }
    // The driver reads the variable once, when it initialises: in a child process.
    if !in_a_process_of_its_own_with(NAME, &[("CUDA_VISIBLE_DEVICES", "")]) {
        return;
    }
    assert_eq!(
        Device::count().unwrap(),
        0,
        "a driver that sees no GPU counts none"
    );
    match Runtime::get(0) {
        Err(e @ Error::NoDevice) => {
            assert!(e.is_no_gpu());
            let shown = format!("{e:?}");
            assert!(shown.contains("CUDA_VISIBLE_DEVICES"), "{shown}");
        }
        other => panic!("expected NoDevice with every GPU hidden, got {other:?}"),
    }
}

#[test]
fn size_overflow_is_refused_before_the_driver() {
    let rt = rt();
    let s = rt.stream().unwrap();
    // SAFETY: the buffer is never created.
    let e = unsafe { rt.alloc_uninit::<u64>(&s, usize::MAX / 2, AllocTag::UNTAGGED) }.unwrap_err();
    assert!(matches!(e, Error::SizeOverflow { .. }), "{e}");
}

/// The driver's pool keeps the memory of freed blocks. A block larger than any
/// free one, which fits only once that memory is given back, is allocated after a
/// trim of the pool instead of failing with the driver's out-of-memory.
#[test]
fn a_block_the_driver_pool_cannot_place_is_allocated_after_a_trim() {
    let name = "alloc::a_block_the_driver_pool_cannot_place_is_allocated_after_a_trim";
    if xlog_runtime::sim::is_active() || backend() == Backend::Direct {
        println!("{name}: the driver's memory pool only (XLOG_BACKEND=async on a GPU)");
        return;
    }
    // It takes most of the device's memory: alone in a process.
    if !in_a_process_of_its_own(name) {
        return;
    }
    let rt = Runtime::builder(0).caching(false).build().unwrap();
    let s = rt.new_stream().unwrap();
    let free = rt.device().info().free_memory;
    let part = free / 10 * 4;
    let a = rt.alloc_zeroed_on::<u8>(&s, part).unwrap();
    let b = rt.alloc_zeroed_on::<u8>(&s, part).unwrap();
    drop(a);
    // `a`'s free has run and the budget no longer counts it; the pool still holds
    // its memory, so a block of half the device fits only once that is given back.
    rt.reap().unwrap();
    let c = rt.alloc_zeroed_on::<u8>(&s, free / 2);
    let c = c.unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!((b.len(), c.len()), (part, free / 2));
}

/// The caching pool under the driver's out-of-memory (a budget past the device's
/// memory, so the budget never refuses first): a block that fits only once the
/// pool's cache is given back is allocated after the pool trims, reaps and
/// retries, instead of failing.
#[test]
fn a_driver_out_of_memory_gives_the_pool_cache_back_and_retries() {
    let name = "alloc::a_driver_out_of_memory_gives_the_pool_cache_back_and_retries";
    if xlog_runtime::sim::is_active() || backend() == Backend::Direct {
        println!("{name}: the device's own out-of-memory (XLOG_BACKEND=async on a GPU)");
        return;
    }
    // It takes most of the device's memory: alone in a process.
    if !in_a_process_of_its_own(name) {
        return;
    }
    let rt = Runtime::builder(0)
        .caching(true)
        .budget(usize::MAX / 2)
        .build()
        .unwrap();
    let s = rt.new_stream().unwrap();
    let free = rt.device().info().free_memory;
    let mib = |percent: usize| (free / 100 * percent) >> 20 << 20; // whole MiB
    let keep = rt.alloc_zeroed_on::<u8>(&s, mib(78)).unwrap();
    // The cached block is within the cache's bound (a sixteenth of what is in use
    // after the next allocation), so it stays; beside it, the next allocation is
    // more than the device has: the driver refuses, the pool trims and retries,
    // and the allocation fits in the 98% left.
    drop(rt.alloc_zeroed_on::<u8>(&s, mib(5)).unwrap()); // cached
    assert_eq!(rt.pool_stats().unwrap().cached_bytes, mib(5));
    let c = rt.alloc_zeroed_on::<u8>(&s, mib(20));
    let mut c = c.unwrap_or_else(|e| panic!("{name}: {e}"));
    c.fill(&s, 7).unwrap();
    let st = rt.pool_stats().unwrap();
    assert_eq!((st.trims, st.cached_bytes), (1, 0), "{st:?}");
    assert_eq!(c.slice(0..4).download(&s).unwrap(), [7; 4]);
    drop((keep, c));
}

#[test]
fn a_truncated_buffer_keeps_its_allocation_and_gives_back_every_byte() {
    let rt = Runtime::builder(0)
        .backend(backend())
        .caching(false)
        .build()
        .unwrap();
    let s = rt.new_stream().unwrap();
    let mut b = rt.upload_on(&s, &(0..1000u32).collect::<Vec<_>>()).unwrap();
    let ptr = b.device_ptr();
    b.truncate(2000);
    assert_eq!(b.len(), 1000, "truncate never lengthens");
    b.truncate(10);
    assert_eq!((b.len(), b.device_ptr()), (10, ptr));
    assert_eq!(b.download(&s).unwrap(), (0..10).collect::<Vec<u32>>());
    assert_eq!(rt.bytes_outstanding(), 4000, "the allocation stays whole");
    let past = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        b.slice(..11);
    }));
    assert!(past.is_err(), "a view past the new length is refused");
    b.truncate(0);
    assert!(b.is_empty() && b.download(&s).unwrap().is_empty());
    drop(b);
    rt.reap().unwrap();
    assert_eq!(rt.bytes_outstanding(), 0, "every byte comes back on drop");
    assert_eq!(rt.drop_errors(), 0);
}
