//! Work from a thread whose current context is not xlog's (none, or another
//! library's context of the same device) lands, in stream order: every driver call
//! that needs a context binds the runtime's own first. (On the simulator, which has
//! no contexts, only the fresh-thread part runs.)

use std::ptr::null_mut;

use cudarc::driver::sys;
use xlog_runtime::WorkRecorder;
use xlog_runtime::{AllocTag, DeviceBuffer, Function, LaunchConfig, Result, Runtime, Stream};

use crate::common::{in_a_process_of_its_own, kernel, param, rt};

/// The context current on the calling thread (null when none is).
fn current() -> usize {
    let mut c = null_mut();
    // SAFETY: writes one handle to `c`.
    unsafe { sys::cuCtxGetCurrent(&mut c) }.result().unwrap();
    c as usize
}

/// `dst = value` through `f` (`slow_fill`), each thread sleeping about `spins` µs first.
fn fill(
    f: &Function,
    s: &Stream,
    dst: &mut DeviceBuffer<u32>,
    value: u32,
    spins: u32,
) -> Result<()> {
    let (dp, n) = (dst.device_ptr(), dst.len() as u64);
    let pre = WorkRecorder::new(s).write(dst).preflight()?;
    let mut params = [param(&dp), param(&n), param(&value), param(&spins)];
    // SAFETY: slow_fill(u64 dst, u64 n, u32 value, u32 spins) matches the params;
    // it writes `dst`, recorded.
    unsafe { pre.launch(f, LaunchConfig::for_len(n as usize), &mut params) }.map(|_| ())
}

/// On the calling thread: allocate, fill slowly with 1 and then at once with 2
/// (stream order must keep the 2), and allocate and free a scratch buffer.
fn stream_work(rt: &Runtime, f: &Function, s: &Stream) -> DeviceBuffer<u32> {
    // SAFETY: the fills write every element before anything reads it.
    let mut y = unsafe { rt.alloc_uninit::<u32>(s, 1 << 16, AllocTag("contexts")) }.unwrap();
    fill(f, s, &mut y, 1, 2_000).unwrap();
    fill(f, s, &mut y, 2, 0).unwrap();
    // SAFETY: never read.
    let scratch = unsafe { rt.alloc_uninit::<u32>(s, 1 << 10, AllocTag("scratch")) }.unwrap();
    drop(scratch);
    y
}

/// A context of device 0 that is not the primary one, created current on this
/// thread and destroyed when dropped (even if the test panics first).
struct Foreign(sys::CUcontext);

impl Foreign {
    fn create() -> Foreign {
        let mut dev = 0;
        // SAFETY: writes one handle.
        unsafe { sys::cuDeviceGet(&mut dev, 0) }.result().unwrap();
        let mut c = null_mut();
        // SAFETY: creates a context and makes it current; destroyed on drop.
        unsafe { sys::cuCtxCreate_v2(&mut c, 0, dev) }
            .result()
            .unwrap();
        Foreign(c)
    }
}

impl Drop for Foreign {
    fn drop(&mut self) {
        // SAFETY: created in `create`; no work of xlog's runs in it.
        let _ = unsafe { sys::cuCtxDestroy_v2(self.0) };
    }
}

#[test]
fn work_lands_whatever_context_the_thread_has_current() {
    // The simulator has no contexts: there the test checks only that work from a
    // fresh thread lands, in stream order.
    let gpu = !xlog_runtime::sim::is_active();
    let rt = rt();
    let s = rt.new_stream().unwrap();
    let f = kernel(&rt, "slow_fill");
    // A synchronisation binds the runtime's context on this thread; the work runs
    // on fresh threads, which must end with that context current too.
    s.synchronize().unwrap();
    let ours = if gpu { current() } else { 0 };
    assert!(ours != 0 || !gpu);

    let (y, before, after) = std::thread::scope(|sc| {
        sc.spawn(|| {
            let before = if gpu { current() } else { 0 };
            let y = stream_work(&rt, &f, &s);
            (y, before, if gpu { current() } else { 0 })
        })
        .join()
        .unwrap()
    });
    assert_eq!(before, 0, "a fresh thread has no current context");
    assert_eq!(after, ours, "the work did not bind the runtime's context");
    assert!(
        y.download(&s).unwrap().iter().all(|&v| v == 2),
        "no context current"
    );
    if !gpu {
        return;
    }

    let y = std::thread::scope(|sc| {
        sc.spawn(|| {
            let foreign = Foreign::create();
            assert_eq!(current(), foreign.0 as usize);
            let y = stream_work(&rt, &f, &s);
            assert_eq!(
                current(),
                ours,
                "the work did not bind the runtime's context"
            );
            s.synchronize().unwrap();
            y
        })
        .join()
        .unwrap()
    });
    assert!(
        y.download(&s).unwrap().iter().all(|&v| v == 2),
        "another context current"
    );
}

/// A foreign stream or event that belongs to a CUDA graph capture in progress is
/// refused: an xlog stream waiting on it would join the capture, and its later work
/// (a copy of borrowed host memory included) would be recorded into the graph
/// instead of run. The same calls succeed once the capture has ended. (The
/// simulator refuses foreign work altogether.)
#[test]
fn foreign_streams_and_events_inside_a_graph_capture_are_refused() {
    use xlog_runtime::{Access, ForeignEvent, ForeignStream, ReadyAfter};
    let rt = rt();
    let s = rt.new_stream().unwrap();
    let buf = rt.alloc_zeroed_on::<u32>(&s, 64).unwrap();
    if xlog_runtime::sim::is_active() {
        // SAFETY: never used on the simulator, which refuses it first.
        let consumer = unsafe { ForeignStream::from_raw(std::ptr::null_mut()) };
        assert!(buf
            .core()
            .record_foreign_use(consumer, Access::Read)
            .is_err());
        return;
    }
    let ctx = cudarc::driver::CudaContext::new(0).unwrap();
    ctx.bind_to_thread().unwrap();
    let capturing = ctx.new_stream().unwrap();
    let raw = capturing.cu_stream();
    // SAFETY: 256 bytes of device memory another library owns; freed below.
    let foreign = unsafe { cudarc::driver::result::malloc_sync(256) }.unwrap();
    let mut ev = null_mut();
    let flags = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
    // SAFETY: creates one event in the bound context; destroyed below.
    unsafe { sys::cuEventCreate(&mut ev, flags) }
        .result()
        .unwrap();
    let local = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
    // SAFETY: the handles are live until the end of the test.
    let (consumer, event) = unsafe {
        (
            ForeignStream::from_raw(raw.cast()),
            ForeignEvent::from_raw(ev.cast()),
        )
    };
    let import = |ready| {
        // SAFETY: `foreign` is 64 u32s of device memory no xlog buffer holds, alive
        // until freed below, after the buffer (if any) is dropped.
        unsafe { DeviceBuffer::<u32>::import_raw(&s, foreign, 64, ready, ()) }
    };
    let joined = || {
        let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        // SAFETY: `s` is live; writes one status.
        unsafe { sys::cuStreamIsCapturing(s.raw(), &mut status) }
            .result()
            .unwrap();
        status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE
    };
    // Ends the capture on `raw`; the graph, if any, is destroyed.
    let end = || {
        let mut graph = null_mut();
        // SAFETY: ends the capture begun on `raw`; the graph is destroyed.
        let ended = unsafe { sys::cuStreamEndCapture(raw, &mut graph) }.result();
        if !graph.is_null() {
            // SAFETY: made by the capture just ended, used by nothing.
            unsafe { sys::cuGraphDestroy(graph) }.result().unwrap();
        }
        ended
    };

    // A capturing stream: asking whether it captures leaves the capture intact.
    // SAFETY: `raw` is live; the capture ends below.
    unsafe { sys::cuStreamBeginCapture_v2(raw, local) }
        .result()
        .unwrap();
    assert!(buf
        .core()
        .record_foreign_use(consumer, Access::Read)
        .is_err());
    assert!(import(ReadyAfter::Stream(consumer)).is_err());
    assert!(!joined(), "an xlog stream joined the capture");
    end().unwrap();

    // An event recorded in a capture: the driver refuses the probe and, doing so,
    // invalidates that capture (it then fails at its end); nothing is recorded.
    // SAFETY: `raw` is live; the capture ends below, and records `ev` meanwhile.
    unsafe {
        sys::cuStreamBeginCapture_v2(raw, local).result().unwrap();
        sys::cuEventRecord(ev, raw).result().unwrap();
    }
    assert!(import(ReadyAfter::Event(event)).is_err());
    assert!(!joined(), "an xlog stream joined the capture");
    let _ = end();

    // After the captures, the same calls succeed.
    // SAFETY: `ev` and `raw` are live.
    unsafe { sys::cuEventRecord(ev, raw) }.result().unwrap();
    buf.core()
        .record_foreign_use(consumer, Access::Read)
        .unwrap();
    drop(import(ReadyAfter::Event(event)).unwrap());
    drop(import(ReadyAfter::Stream(consumer)).unwrap());
    rt.synchronize().unwrap();
    // SAFETY: nothing uses them any more.
    unsafe {
        sys::cuEventDestroy_v2(ev).result().unwrap();
        cudarc::driver::result::free_sync(foreign).unwrap();
    }
}

/// Dropping a module while another thread captures a graph (as PyTorch's CUDA
/// graphs do, in global mode) leaves the capture intact: `cuModuleUnload` waits
/// for the device, which in the default capture mode invalidates the capture, so
/// xlog unloads in relaxed mode. The capture would refuse the work of tests
/// running beside it, so this runs alone in a child process. On the simulator,
/// which has no captures of other libraries, it says so and returns.
#[test]
fn unloading_a_module_leaves_another_threads_capture_intact() {
    let name = "contexts::unloading_a_module_leaves_another_threads_capture_intact";
    let rt = rt();
    if xlog_runtime::sim::is_active() {
        println!("{name}: checks the CUDA driver only");
        return;
    }
    if !in_a_process_of_its_own(name) {
        return;
    }
    let module = rt
        .load_ptx("unload-during-capture", include_str!("kernels.ptx"))
        .unwrap();
    let ctx = cudarc::driver::CudaContext::new(0).unwrap();
    ctx.bind_to_thread().unwrap();
    let capturing = ctx.new_stream().unwrap();
    let raw = capturing.cu_stream();
    // SAFETY: 256 bytes of device memory of this test; freed below.
    let scratch = unsafe { cudarc::driver::result::malloc_sync(256) }.unwrap();
    let global = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL;
    // SAFETY: `raw` is live; the capture ends below.
    unsafe { sys::cuStreamBeginCapture_v2(raw, global) }
        .result()
        .unwrap();
    // SAFETY: `scratch` holds 256 bytes; captured, not run.
    unsafe { sys::cuMemsetD8Async(scratch, 1, 256, raw) }
        .result()
        .unwrap();
    std::thread::spawn(move || drop(module)).join().unwrap();
    // SAFETY: as above.
    unsafe { sys::cuMemsetD8Async(scratch, 2, 256, raw) }
        .result()
        .unwrap();
    let mut graph = null_mut();
    // SAFETY: ends the capture begun above; the graph is destroyed below.
    let ended = unsafe { sys::cuStreamEndCapture(raw, &mut graph) }.result();
    if !graph.is_null() {
        // SAFETY: made by the capture just ended, used by nothing.
        unsafe { sys::cuGraphDestroy(graph) }.result().unwrap();
    }
    // SAFETY: allocated above, used by nothing in flight (the capture ran nothing).
    unsafe { cudarc::driver::result::free_sync(scratch) }.unwrap();
    assert!(
        ended.is_ok(),
        "unloading a module on another thread broke the capture: {ended:?}"
    );
}
