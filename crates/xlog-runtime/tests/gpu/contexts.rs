//! Work from a thread whose current context is not xlog's (none, or another
//! library's context of the same device) lands, in stream order: every driver call
//! that needs a context binds the runtime's own first. (On the simulator, which has
//! no contexts, only the fresh-thread part runs.)

use std::ptr::null_mut;

use cudarc::driver::sys;
use xlog_runtime::WorkRecorder;
use xlog_runtime::{AllocTag, DeviceBuffer, Function, LaunchConfig, Result, Runtime, Stream};

use crate::common::{kernel, param, rt};

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
