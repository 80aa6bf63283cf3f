use xlog_runtime::resource::HostResource;
use xlog_runtime::{Error, LaunchConfig, Runtime, WorkRecorder};

use crate::common::*;

#[test]
fn manual_launch_of_hand_written_ptx() {
    let rt = rt();
    let s = rt.stream().unwrap();
    let f = kernel(&rt, "scale_add");
    let x: Vec<f32> = random_u32(6, 50_000)
        .iter()
        .map(|&v| (v % 1000) as f32)
        .collect();
    let y0: Vec<f32> = random_u32(7, 50_000)
        .iter()
        .map(|&v| (v % 1000) as f32)
        .collect();
    let xb = rt.upload_on(&s, &x).unwrap();
    let mut yb = rt.upload_on(&s, &y0).unwrap();
    let (xp, yp, n, a) = (xb.device_ptr(), yb.device_ptr(), x.len() as u64, 2.0f32);
    let pre = WorkRecorder::new(&s)
        .read(&xb)
        .read_write(&mut yb)
        .preflight()
        .unwrap();
    let mut params = [param(&xp), param(&yp), param(&n), param(&a)];
    // SAFETY: scale_add(u64 x, u64 y, u64 n, f32 a); reads x, reads and writes y.
    let c = unsafe { pre.launch(&f, LaunchConfig::for_len(x.len()), &mut params) }.unwrap();
    assert!(c.epoch > 0);
    let got = yb.download(&s).unwrap();
    for i in 0..x.len() {
        assert_eq!(got[i], 2.0 * x[i] + y0[i], "element {i}");
    }
}

#[test]
fn invalid_configurations_are_refused_before_anything_is_queued() {
    let rt = rt();
    let s = rt.new_stream().unwrap();
    let f = kernel(&rt, "slow_fill");
    let mut y = rt.alloc_zeroed_on::<u32>(&s, 16).unwrap();
    s.synchronize().unwrap();
    let max_shared = rt.device().info().max_shared_per_block_optin;
    for cfg in [
        LaunchConfig::for_len(0),
        LaunchConfig::new([1, 1, 1], [2048, 1, 1]),
        LaunchConfig::for_len(16).with_shared_bytes(max_shared + 1),
    ] {
        let (dp, n, v, spins) = (y.device_ptr(), 16u64, 5u32, 0u32);
        let pre = WorkRecorder::new(&s).write(&mut y).preflight().unwrap();
        let mut params = [param(&dp), param(&n), param(&v), param(&spins)];
        // SAFETY: matching parameter list; the launch is refused anyway.
        let e = unsafe { pre.launch(&f, cfg, &mut params) }.unwrap_err();
        assert!(
            matches!(e, Error::InvalidLaunch { ref kernel, .. } if kernel == "slow_fill"),
            "{e}"
        );
    }
    // Nothing ran and nothing was committed: y is still zero and same-stream clean.
    assert!(y.download(&s).unwrap().iter().all(|&v| v == 0));
}

#[test]
fn missing_kernel_names_kernel_and_module() {
    let rt = rt();
    let e = rt
        .load_module(&KERNELS)
        .unwrap()
        .function("no_such_kernel")
        .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("no_such_kernel") && msg.contains("runtime-test-kernels"),
        "{msg}"
    );
}

#[test]
fn buffers_of_another_runtime_are_refused() {
    let rt = rt();
    let other = Runtime::builder(0).backend(backend()).build().unwrap();
    let s = rt.stream().unwrap();
    let foreign_rt_buf = other.upload(&[1u32, 2, 3]).unwrap();
    let e = WorkRecorder::new(&s)
        .read(&foreign_rt_buf)
        .preflight()
        .err()
        .unwrap();
    assert!(
        matches!(e, Error::WrongRuntime { what: "buffer", .. }),
        "{e}"
    );
    // Copies go through the same check.
    let mut mine = rt.alloc_zeroed::<u32>(3).unwrap();
    let e = mine.copy_from(&s, &foreign_rt_buf).unwrap_err();
    assert!(matches!(e, Error::WrongRuntime { .. }), "{e}");
    // Allocating with another runtime's stream is refused too.
    let e = other.upload_on(&s, &[1u32]).unwrap_err();
    assert!(
        matches!(e, Error::WrongRuntime { what: "stream", .. }),
        "{e}"
    );
}

#[test]
fn foreign_memory_is_refused_unless_skipped_explicitly() {
    let rt = rt();
    let (producer, s) = (rt.new_stream().unwrap(), rt.new_stream().unwrap());
    let owner = rt.upload_on(&producer, &[0u32; 8]).unwrap();
    // SAFETY: `owner` outlives `f`; its upload is queued on `producer`, the stream
    // named as the one after which the memory is ready.
    let f = unsafe {
        xlog_runtime::ForeignBuffer::<u32>::from_raw(owner.device_ptr(), 8, 0, &producer)
    };
    let e = WorkRecorder::new(&s).foreign(&f).preflight().err().unwrap();
    assert!(matches!(e, Error::Untracked { .. }), "{e}");
    assert!(e.to_string().contains("skip_untracked"), "{e}");
    // SAFETY: the foreign memory is ordered by its ready point and unused elsewhere.
    let pre = unsafe { WorkRecorder::new(&s).skip_untracked() }
        .foreign(&f)
        .preflight()
        .unwrap();
    assert_eq!(
        pre.wait_count(),
        1,
        "the work waits for the stream the buffer is ready on"
    );
    // A foreign buffer of another device is refused even when skipping.
    // SAFETY: never used: refused at preflight.
    let other = unsafe {
        xlog_runtime::ForeignBuffer::<u32>::from_raw(owner.device_ptr(), 8, 7, &producer)
    };
    // SAFETY: refused before anything is queued.
    let e = unsafe { WorkRecorder::new(&s).skip_untracked() }
        .foreign(&other)
        .preflight()
        .err()
        .unwrap();
    assert!(e.to_string().contains("device 7"), "{e}");
}

#[test]
fn a_stack_that_cannot_track_streams_is_refused_before_launch() {
    let device = rt().device().clone();
    let host_rt = Runtime::with_resource(&device, HostResource::new(device.ordinal())).unwrap();
    let s = host_rt.new_stream().unwrap();
    // SAFETY: never read.
    let buf =
        unsafe { host_rt.alloc_uninit::<u32>(&s, 16, xlog_runtime::AllocTag::UNTAGGED) }.unwrap();
    let e = WorkRecorder::new(&s).read(&buf).preflight().err().unwrap();
    assert!(matches!(e, Error::UntrackableResource { .. }), "{e}");
    assert!(e.to_string().contains("host"), "{e}");
}

/// A tracing subscriber that panics on the launch event, the first user code a
/// launch runs after `cuLaunchKernel`.
struct PanicOnLaunch;

impl tracing::Subscriber for PanicOnLaunch {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        if event.metadata().target() == "xlog::launch" {
            panic!("subscriber panics on the launch event");
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn a_launch_unwinding_in_its_subscriber_stays_recorded() {
    let rt = rt();
    // `tracing` caches each callsite's interest process-wide, and other tests
    // launch from other threads with no subscriber: run alone in a child, where
    // this thread's subscriber is the only one that ever sees the event.
    if !in_a_process_of_its_own("launch::a_launch_unwinding_in_its_subscriber_stays_recorded") {
        return;
    }
    let (a, b) = (rt.new_stream().unwrap(), rt.new_stream().unwrap());
    let f = kernel(&rt, "slow_fill");
    let n = 1 << 16;
    let mut y = rt.alloc_zeroed_on::<u32>(&a, n).unwrap();
    a.synchronize().unwrap();
    // A first, ordinary write on `a`: the buffer's last write is on `a`.
    let (dp, len, spins) = (y.device_ptr(), n as u64, 0u32);
    let v0 = 1u32;
    let pre = WorkRecorder::new(&a).write(&mut y).preflight().unwrap();
    let mut params = [param(&dp), param(&len), param(&v0), param(&spins)];
    // SAFETY: slow_fill(u64 y, u64 n, u32 v, u32 spins) writes y[0..n].
    let _ = unsafe { pre.launch(&f, LaunchConfig::for_len(n), &mut params) }.unwrap();
    // A slow write on `b` whose launch event panics in the subscriber.
    let (v1, slow) = (2u32, 20_000u32);
    let panicked = tracing::subscriber::with_default(PanicOnLaunch, || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let pre = WorkRecorder::new(&b).write(&mut y).preflight().unwrap();
            let mut params = [param(&dp), param(&len), param(&v1), param(&slow)];
            // SAFETY: as above.
            unsafe { pre.launch(&f, LaunchConfig::for_len(n), &mut params) }.map(|_| ())
        }))
    });
    if let Ok(r) = &panicked {
        panic!("the subscriber did not panic: the launch returned {r:?}");
    }
    // The kernel on `b` is in flight but was committed before the panic: a reader
    // on `a` must wait for `b` (an uncommitted launch would leave the last write on
    // `a`, needing no wait), and the download sees its values.
    let pre = WorkRecorder::new(&a).read(&y).preflight().unwrap();
    assert_eq!(pre.wait_count(), 1, "the panicked launch was not recorded");
    drop(pre);
    let got = y.download(&a).unwrap();
    assert!(
        got.iter().all(|&x| x == v1),
        "the download did not wait for the kernel"
    );
    // Freeing it now must wait for the kernel too (checked by the sanitizer runs).
    drop(y);
    rt.synchronize().unwrap();
}

/// The one-call launch generated launchers use locks every buffer's use state from
/// the plan to the commit. Two threads naming the same two buffers in opposite
/// orders would each hold one lock and wait for the other; locking in address
/// order makes that impossible. (Without the ordering this test deadlocks within a
/// few thousand launches, on the GPU and on the simulator.)
#[test]
fn typed_launches_naming_shared_buffers_in_opposite_orders_never_deadlock() {
    use std::sync::mpsc;
    use std::time::Duration;
    use xlog_runtime::__private::{launch_typed, BufferUse};
    use xlog_runtime::{Access, ReadBuffer};

    let rt = rt();
    let f = kernel(&rt, "empty3");
    let s0 = rt.new_stream().unwrap();
    let a = rt.alloc_zeroed_on::<u32>(&s0, 64).unwrap();
    let b = rt.alloc_zeroed_on::<u32>(&s0, 64).unwrap();
    s0.synchronize().unwrap();
    let launches = if xlog_runtime::sim::is_active() {
        3_000
    } else {
        20_000
    };
    let (done, finished) = mpsc::channel();
    std::thread::scope(|scope| {
        for flip in [false, true] {
            let (rt, f, a, b, done) = (&rt, &f, &a, &b, done.clone());
            scope.spawn(move || {
                let s = rt.new_stream().unwrap();
                let (first, second) = if flip { (b, a) } else { (a, b) };
                for i in 0..launches {
                    let (p0, p1, p2, n) = (first.device_ptr(), second.device_ptr(), 0u64, 0u64);
                    let mut uses = [
                        BufferUse::new(ReadBuffer::<u32>::arg(first), Access::Read),
                        BufferUse::new(ReadBuffer::<u32>::arg(second), Access::Read),
                    ];
                    let mut params = [param(&p0), param(&p1), param(&p2), param(&n)];
                    // SAFETY: empty3(u64, u64, u64, u64) touches nothing.
                    let _ = unsafe {
                        launch_typed(&s, f, LaunchConfig::for_len(1), &mut params, &[], &mut uses)
                    }
                    .unwrap();
                    if i % 512 == 511 {
                        s.synchronize().unwrap();
                    }
                }
                s.synchronize().unwrap();
                done.send(()).unwrap();
            });
        }
        for _ in 0..2 {
            if finished.recv_timeout(Duration::from_secs(120)).is_err() {
                // Straight to stderr (the test harness captures `eprintln!`): the
                // stuck threads would keep a panic from ever ending the scope.
                let _ = std::io::Write::write_all(
                    &mut std::io::stderr(),
                    b"typed launches deadlocked: two threads wait on each other's buffer\n",
                );
                std::process::abort();
            }
        }
    });
}

/// The range a typed launch zeroes must lie inside an argument whose own use
/// writes: a read view of a buffer does not borrow the write access of another
/// view of the same buffer (the uses merge into one read-write use of the buffer,
/// but zeroing the read view would race with a reader of it). Refused before
/// anything is queued; the write view itself is accepted.
#[test]
fn typed_launches_zero_only_ranges_they_write() {
    use xlog_runtime::__private::{launch_typed, BufferUse};
    use xlog_runtime::{Access, ReadBuffer, WriteBuffer};

    let rt = rt();
    let f = kernel(&rt, "empty3");
    let s = rt.new_stream().unwrap();
    let mut buf = rt.upload_on(&s, &[7u32; 64]).unwrap();
    let (read_half, mut write_half) = buf.slice_mut(..).split_at_mut(32);
    let read = ReadBuffer::<u32>::arg(&read_half);
    let write = WriteBuffer::<u32>::arg_mut(&mut write_half);
    let (p0, p1, p2, n) = (read.ptr(), write.ptr(), 0u64, 0u64);
    let mut params = [param(&p0), param(&p1), param(&p2), param(&n)];
    for (zero, refused) in [
        ((read.ptr(), read.bytes()), true),
        ((write.ptr(), write.bytes()), false),
    ] {
        let mut uses = [
            BufferUse::new(read, Access::Read),
            BufferUse::new(write, Access::Write),
        ];
        // SAFETY: empty3(u64, u64, u64, u64) touches nothing.
        let r = unsafe {
            launch_typed(
                &s,
                &f,
                LaunchConfig::for_len(1),
                &mut params,
                &[zero],
                &mut uses,
            )
        };
        match r {
            Err(xlog_runtime::Error::InvalidArgument { reason, .. }) if refused => {
                assert!(reason.contains("writes"), "{reason}")
            }
            Ok(_) if !refused => {}
            other => panic!("zeroing {zero:?} (refused: {refused}) gave {other:?}"),
        }
    }
    s.synchronize().unwrap();
    assert_eq!(buf.download(&s).unwrap(), [[7u32; 32], [0u32; 32]].concat());
}

/// `cuStreamQuery` of `s`: whether everything queued on it has run.
fn idle(s: &xlog_runtime::Stream) -> bool {
    use cudarc::driver::sys;
    // SAFETY: `s` is a live stream of the current context (bound by the launch).
    match unsafe { sys::cuStreamQuery(s.raw().cast()) } {
        sys::CUresult::CUDA_SUCCESS => true,
        sys::CUresult::CUDA_ERROR_NOT_READY => false,
        e => panic!("cuStreamQuery: {e:?}"),
    }
}

/// A kernel can outlive its stream and buffers, and a module can be dropped while
/// one of its kernels runs (`load_ptx` modules are not cached, an owned runtime's
/// go with it). xlog then unloads the module, and frees its panic record, without
/// waiting itself: a context-wide wait would break other threads' graph captures.
/// It rests on `cuModuleUnload` waiting for the module's running kernels, which
/// the driver does not document; this checks that the driver does wait (the
/// kernel runs when the unload starts and has finished when it returns), and that
/// the device is healthy after. On the simulator, which has no driver, it says so
/// and returns.
#[test]
fn unloading_a_module_waits_for_its_running_kernel() {
    let rt = rt();
    if xlog_runtime::sim::is_active() {
        println!("unloading_a_module_waits_for_its_running_kernel: checks the CUDA driver only");
        return;
    }
    let s = rt.new_stream().unwrap();
    let module = rt
        .load_ptx("unload-while-running", include_str!("kernels.ptx"))
        .unwrap();
    let f = module.function("slow_fill").unwrap();
    let mut y = rt.alloc_zeroed_on::<u32>(&s, 32).unwrap();
    let (dp, n, value, spins) = (y.device_ptr(), 32u64, 2u32, 200_000u32);
    let pre = WorkRecorder::new(&s).write(&mut y).preflight().unwrap();
    let mut params = [param(&dp), param(&n), param(&value), param(&spins)];
    // SAFETY: slow_fill(u64 dst, u64 n, u32 value, u32 spins) matches the params;
    // it writes `y`, recorded.
    let _ = unsafe { pre.launch(&f, LaunchConfig::for_len(32), &mut params) }.unwrap();
    drop(f);
    assert!(
        !idle(&s),
        "the kernel (about 0.2 s of sleeping) ended before the unload"
    );
    let start = std::time::Instant::now();
    drop(module); // the last holder: cuModuleUnload
    let unloaded = start.elapsed();
    assert!(
        idle(&s),
        "cuModuleUnload returned after {unloaded:?} with the module's kernel still running: \
         the driver no longer waits for a module's running kernels, so xlog must"
    );
    println!("cuModuleUnload waited {unloaded:?} for the running kernel");
    // The kernel ran to its end, and the device is healthy.
    assert_eq!(y.download(&s).unwrap(), [2; 32]);
    let z = rt.upload_on(&s, &[5u32; 8]).unwrap();
    assert_eq!(z.download(&s).unwrap(), [5; 8]);
}
