//! Launches, stream-ordered allocations and frees do not bind their stream's
//! context first: the driver runs them in the stream's own context. These tests
//! check that such work lands, in stream order, whatever context the calling
//! thread has current (none, or another library's), and that a call the driver
//! refuses binds the context and is retried once. (The direct backend, which the
//! sanitizer runs use, allocates and frees synchronously: those calls bind.)

use std::ptr::null_mut;

use cudarc::driver::sys;
use xlog_runtime::testing::{self, Site};
use xlog_runtime::{AllocTag, Backend, DeviceBuffer, Error, Function, LaunchConfig, Runtime};
use xlog_runtime::{Result, Stream, WorkRecorder};

use crate::common::{backend, kernel, param, rt};

/// The context current on the calling thread (null when none is).
fn current() -> usize {
    let mut c = null_mut();
    // SAFETY: writes one handle to `c`.
    unsafe { sys::cuCtxGetCurrent(&mut c) }.result().unwrap();
    c as usize
}

/// The driver's CUDA version (13000 for CUDA 13.0).
fn driver_version() -> i32 {
    let mut v = 0;
    // SAFETY: writes one integer to `v`.
    unsafe { sys::cuDriverGetVersion(&mut v) }.result().unwrap();
    v
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

/// Create a context of device 0 that is not the primary one, current on this thread.
fn foreign_context() -> sys::CUcontext {
    let mut dev = 0;
    // SAFETY: writes one handle.
    unsafe { sys::cuDeviceGet(&mut dev, 0) }.result().unwrap();
    let mut c = null_mut();
    // SAFETY: creates a context and makes it current; destroyed by the caller.
    unsafe { sys::cuCtxCreate_v2(&mut c, 0, dev) }
        .result()
        .unwrap();
    c
}

#[test]
fn stream_calls_need_no_current_context() {
    if xlog_runtime::sim::is_active() {
        println!("stream_calls_need_no_current_context: the simulator has no contexts");
        return;
    }
    let rt = rt();
    let s = rt.new_stream().unwrap();
    // Loading binds the context on this thread; the work runs on fresh threads.
    let f = kernel(&rt, "slow_fill");
    // Whether nothing in `stream_work` binds: CUDA 13's driver (what was checked)
    // and the async backend (the direct one binds for `cuMemAlloc`).
    let unbound = driver_version() >= 13000 && backend() == Backend::Async;

    let (y, before, after) = std::thread::scope(|sc| {
        sc.spawn(|| {
            let before = current();
            let y = stream_work(&rt, &f, &s);
            (y, before, current())
        })
        .join()
        .unwrap()
    });
    assert_eq!(before, 0, "a fresh thread has no current context");
    if unbound {
        // Not a promise to the caller (xlog may leave its context current after
        // any call) but what the saving rests on: the driver ran every call in the
        // stream's context, none was refused and retried, so none bound.
        assert_eq!(
            after, 0,
            "a stream call was refused without the context current"
        );
    }
    assert!(
        y.download(&s).unwrap().iter().all(|&v| v == 2),
        "no context current"
    );

    let (y, foreign, after) = std::thread::scope(|sc| {
        sc.spawn(|| {
            let foreign = foreign_context();
            let y = stream_work(&rt, &f, &s);
            let after = current();
            s.synchronize().unwrap();
            // SAFETY: created above; nothing of xlog's belongs to it.
            unsafe { sys::cuCtxDestroy_v2(foreign) }.result().unwrap();
            (y, foreign as usize, after)
        })
        .join()
        .unwrap()
    });
    if unbound {
        assert_eq!(
            after, foreign,
            "a stream call was refused with another context current"
        );
    }
    assert!(
        y.download(&s).unwrap().iter().all(|&v| v == 2),
        "another context current"
    );
}

/// Set in the child process that runs [`a_refused_stream_call_binds_and_retries_once`].
const REFUSAL_CHILD_ENV: &str = "XLOG_TEST_REFUSAL_CHILD";

#[test]
fn a_refused_stream_call_binds_and_retries_once() {
    if std::env::var_os(REFUSAL_CHILD_ENV).is_none() {
        // Injected faults are process-wide: run alone in a child, where no other
        // test's launch can take them.
        let name = "contexts::a_refused_stream_call_binds_and_retries_once";
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--test-threads=1"])
            .env(REFUSAL_CHILD_ENV, "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("1 passed"),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    let rt = rt();
    let s = rt.new_stream().unwrap();
    let f = kernel(&rt, "slow_fill");
    let mut y = rt.alloc_zeroed_on::<u32>(&s, 4096).unwrap();
    s.synchronize().unwrap();
    let gpu = !xlog_runtime::sim::is_active();
    let used = || rt.budget().unwrap().used();

    std::thread::scope(|sc| {
        sc.spawn(|| {
            // No context current: a refused launch binds ours and runs again. (The
            // simulator has no context to bind: the refusal is returned.)
            testing::inject(Site::Unbound, 1);
            let launched = fill(&f, &s, &mut y, 7, 0);
            assert_eq!(testing::pending(Site::Unbound), 0);
            if gpu {
                launched.unwrap();
                assert_ne!(current(), 0, "the retry did not bind the context");
            } else {
                assert!(
                    matches!(launched, Err(Error::InjectedFault { .. })),
                    "{launched:?}"
                );
            }
        })
        .join()
        .unwrap()
    });
    let want = if gpu { 7 } else { 0 };
    assert!(y.download(&s).unwrap().iter().all(|&v| v == want));

    if gpu {
        // Refused twice: the retry's refusal is returned; nothing ran.
        std::thread::scope(|sc| {
            sc.spawn(|| {
                testing::inject(Site::Unbound, 2);
                let launched = fill(&f, &s, &mut y, 8, 0);
                assert!(
                    matches!(launched, Err(Error::InjectedFault { .. })),
                    "{launched:?}"
                );
                assert_eq!(testing::pending(Site::Unbound), 0, "not retried");
                assert_ne!(current(), 0, "the retry did not bind the context");
            })
            .join()
            .unwrap()
        });
        assert!(y.download(&s).unwrap().iter().all(|&v| v == want));
    }

    // The same for an allocation on the async backend (the direct one binds for
    // `cuMemAlloc`); a refusal leaves the budget as it was.
    std::thread::scope(|sc| {
        sc.spawn(|| {
            if backend() != Backend::Async {
                return;
            }
            let before = used();
            testing::inject(Site::Unbound, 1);
            // SAFETY: never read.
            let b = unsafe { rt.alloc_uninit::<u32>(&s, 256, AllocTag("refused")) };
            assert_eq!(testing::pending(Site::Unbound), 0);
            match b {
                Ok(b) if gpu => drop(b),
                Err(Error::InjectedFault { .. }) if !gpu => assert_eq!(used(), before),
                other => panic!("{other:?}"),
            }
        })
        .join()
        .unwrap()
    });

    // With our context current (the download bound it), a refusal is the driver's
    // answer, not the context's: it is returned, nothing runs, nothing is recorded.
    s.synchronize().unwrap();
    testing::inject(Site::Unbound, 1);
    let refused = fill(&f, &s, &mut y, 9, 0);
    assert!(
        matches!(refused, Err(Error::InjectedFault { .. })),
        "{refused:?}"
    );
    assert_eq!(testing::pending(Site::Unbound), 0);
    assert!(y.download(&s).unwrap().iter().all(|&v| v == want));
}
