use crate::common::*;

#[test]
fn upload_download_round_trip() {
    let rt = rt();
    let s = rt.stream().unwrap();
    let host = random_u32(1, 100_003);
    let buf = rt.upload_on(&s, &host).unwrap();
    assert_eq!(buf.download(&s).unwrap(), host);
}

#[test]
fn fill_and_memset_cover_every_pattern() {
    let rt = rt();
    let s = rt.stream().unwrap();
    let mut a = rt.alloc_zeroed_on::<u32>(&s, 4097).unwrap();
    assert!(a.download(&s).unwrap().iter().all(|&v| v == 0));
    a.fill(&s, 0xDEAD_BEEF).unwrap();
    assert!(a.download(&s).unwrap().iter().all(|&v| v == 0xDEAD_BEEF));
    let mut f = rt.alloc_zeroed_on::<f64>(&s, 333).unwrap();
    f.fill(&s, 2.5).unwrap();
    assert!(f.download(&s).unwrap().iter().all(|&v| v == 2.5));
    // Memsets of 16 bits, and of 32 bits for 8-byte values with equal halves.
    f.fill(&s, 0.0).unwrap();
    assert!(f.download(&s).unwrap().iter().all(|&v| v == 0.0));
    let mut h = rt.alloc_zeroed_on::<i16>(&s, 1001).unwrap();
    h.fill(&s, -2).unwrap();
    assert!(h.download(&s).unwrap().iter().all(|&v| v == -2));
    let mut w = rt.alloc_zeroed_on::<i64>(&s, 999).unwrap();
    w.fill(&s, -1).unwrap();
    assert!(w.download(&s).unwrap().iter().all(|&v| v == -1));
    w.fill(&s, 1 << 40).unwrap();
    assert!(w.download(&s).unwrap().iter().all(|&v| v == 1 << 40));
    let mut b = rt.alloc_zeroed_on::<u8>(&s, 77).unwrap();
    b.fill(&s, 9).unwrap();
    assert_eq!(b.download(&s).unwrap(), vec![9u8; 77]);
    // SAFETY: every byte pattern is a valid u8.
    unsafe { xlog_runtime::memset_bytes(&s, &mut b, 0xFF) }.unwrap();
    assert_eq!(b.download(&s).unwrap(), vec![0xFFu8; 77]);
}

/// Buffers of a zero-sized element type hold no bytes (their block is the empty
/// one, at address 0): allocating, uploading, copying, filling and downloading
/// them queues nothing, so no null address reaches the driver (the simulator
/// refuses one, as `core::ptr` would be handed it there).
#[test]
fn zero_sized_elements_queue_nothing() {
    let rt = rt();
    let s = rt.stream().unwrap();
    let mut a = rt.alloc_zeroed_on::<()>(&s, 3).unwrap();
    let b = rt.upload_on(&s, &[(); 3]).unwrap();
    a.copy_from(&s, &b).unwrap();
    a.fill(&s, ()).unwrap();
    let mut c = rt.alloc_zeroed_on::<[u32; 0]>(&s, 5).unwrap();
    c.fill(&s, []).unwrap();
    assert_eq!(a.download(&s).unwrap(), [(); 3]);
    assert_eq!(c.download(&s).unwrap().len(), 5);
    s.synchronize().unwrap();
}

#[test]
fn device_to_device_and_views() {
    let rt = rt();
    let s = rt.stream().unwrap();
    let host = random_u32(2, 10_000);
    let src = rt.upload_on(&s, &host).unwrap();
    let mut dst = rt.alloc_zeroed_on::<u32>(&s, 10_000).unwrap();
    dst.copy_from(&s, &src).unwrap();
    assert_eq!(dst.download(&s).unwrap(), host);

    // Into a mutable view, from a read view.
    let mut half = rt.alloc_zeroed_on::<u32>(&s, 5_000).unwrap();
    half.copy_from(&s, &src.slice(2_500..7_500)).unwrap();
    assert_eq!(half.download(&s).unwrap(), host[2_500..7_500]);
    dst.slice_mut(0..5_000).copy_from(&s, &half).unwrap();
    let mut want = host.clone();
    want[..5_000].copy_from_slice(&host[2_500..7_500]);
    assert_eq!(dst.download(&s).unwrap(), want);

    // Host into a view, view to host, fill a view.
    dst.slice_mut(9_000..)
        .copy_from_host(&s, &[7; 1_000])
        .unwrap();
    assert_eq!(dst.slice(9_000..).download(&s).unwrap(), vec![7; 1_000]);
    dst.slice_mut(100..200).fill(&s, 1).unwrap();
    let got = dst.download(&s).unwrap();
    assert!(got[100..200].iter().all(|&v| v == 1));
    assert_eq!(got[..100], want[..100]);
    assert_eq!(got[200..9_000], want[200..9_000]);

    // Lengths must match.
    let e = dst.copy_from(&s, &half).unwrap_err().to_string();
    assert!(e.contains("10000 elements") && e.contains("5000"), "{e}");
}

#[test]
fn split_views_write_disjoint_halves() {
    let rt = rt();
    let (a, b) = (rt.new_stream().unwrap(), rt.new_stream().unwrap());
    let mut buf = rt.alloc_zeroed_on::<u32>(&a, 2_000).unwrap();
    {
        let whole = buf.slice_mut(..);
        let (mut left, mut right) = whole.split_at_mut(1_000);
        left.fill(&a, 1).unwrap();
        right.fill(&b, 2).unwrap();
    }
    let got = buf.download(&a).unwrap();
    assert!(got[..1_000].iter().all(|&v| v == 1));
    assert!(got[1_000..].iter().all(|&v| v == 2));
}

const PINNED_N: usize = 1 << 16;

/// Page-locked host memory of [`PINNED_N`] `u32`s from the device's primary context
/// (xlog's), allocated through another library as a user's crate would; freed on drop.
struct Pinned {
    ptr: *mut u32,
    _ctx: std::sync::Arc<cudarc::driver::CudaContext>,
}

impl Pinned {
    fn new() -> Pinned {
        let ctx = cudarc::driver::CudaContext::new(0).unwrap();
        ctx.bind_to_thread().unwrap();
        // SAFETY: allocates PINNED_N u32s of page-locked memory in the current
        // context; freed in `drop`.
        let ptr = unsafe { cudarc::driver::result::malloc_host(PINNED_N * 4, 0) }.unwrap();
        Pinned {
            ptr: ptr.cast(),
            _ctx: ctx,
        }
    }

    fn slice(&mut self) -> &mut [u32] {
        // SAFETY: the allocation holds PINNED_N u32s, aligned for them, and lives
        // while `self` does; `&mut self` makes this the only view.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, PINNED_N) }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: allocated in `new`; no view outlives `self`.
        unsafe { cudarc::driver::result::free_host(self.ptr.cast()) }.unwrap();
    }
}

/// Uploads `host` (all 1) into a fresh buffer behind 20 ms of work on `s`, runs
/// `meanwhile`, overwrites `host` with 2 as soon as the upload returns (safe code
/// may: the borrow has ended), and counts the elements that arrived as 2.
fn late_reads(rt: &xlog_runtime::Runtime, s: &xlog_runtime::Stream, host: &mut [u32]) -> usize {
    let mut busy = rt.alloc_zeroed_on::<u32>(s, host.len()).unwrap();
    let mut dst = rt.alloc_zeroed_on::<u32>(s, host.len()).unwrap();
    host.fill(1);
    slow_fill(rt, s, &mut busy, 0, 20_000);
    dst.copy_from_host(s, host).unwrap();
    host.fill(2);
    dst.download(s).unwrap().iter().filter(|&&v| v != 1).count()
}

/// An upload has read its source when it returns, also from page-locked memory,
/// which the driver reads when the stream reaches the copy. On the simulator,
/// which has no page-locked memory, the source is an ordinary vector.
#[test]
fn an_upload_from_page_locked_memory_has_read_it_when_it_returns() {
    let rt = rt();
    let s = rt.new_stream().unwrap();
    let late = if xlog_runtime::sim::is_active() {
        late_reads(&rt, &s, &mut vec![0; PINNED_N])
    } else {
        late_reads(&rt, &s, Pinned::new().slice())
    };
    assert_eq!(late, 0, "the upload read the source after it returned");
}

/// Set in the child process of
/// `an_upload_waits_for_its_copy_while_another_thread_captures_a_graph`.
/// The same while another thread captures a CUDA graph in global mode, which
/// refuses a plain synchronisation (and allocations) on every thread that has not
/// relaxed its capture mode: the upload still waits for its copy. The capture
/// would refuse the allocations of tests running beside it, so the scenario runs
/// alone in a child process. (The simulator has no graphs: there it is the test
/// above.)
#[test]
fn an_upload_waits_for_its_copy_while_another_thread_captures_a_graph() {
    let rt = rt();
    if xlog_runtime::sim::is_active() {
        let s = rt.new_stream().unwrap();
        assert_eq!(late_reads(&rt, &s, &mut vec![0; PINNED_N]), 0);
        return;
    }
    let name = "copies::an_upload_waits_for_its_copy_while_another_thread_captures_a_graph";
    if !in_a_process_of_its_own(name) {
        return;
    }
    use cudarc::driver::sys;
    let s = rt.new_stream().unwrap();
    let mut pinned = Pinned::new();
    let host = pinned.slice();
    let mut busy = rt.alloc_zeroed_on::<u32>(&s, PINNED_N).unwrap();
    let mut dst = rt.alloc_zeroed_on::<u32>(&s, PINNED_N).unwrap();
    host.fill(1);
    let ctx = cudarc::driver::CudaContext::new(0).unwrap();
    let capturing = ctx.new_stream().unwrap();
    let raw = capturing.cu_stream() as usize;
    let (started, start) = std::sync::mpsc::channel();
    let (finish, finished) = std::sync::mpsc::channel::<()>();
    let capture = std::thread::spawn(move || {
        ctx.bind_to_thread().unwrap();
        let raw = raw as sys::CUstream;
        let global = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL;
        // SAFETY: `raw` is a live stream of the bound context; the capture ends below.
        unsafe { sys::cuStreamBeginCapture_v2(raw, global) }
            .result()
            .unwrap();
        started.send(()).unwrap();
        let _ = finished.recv();
        let mut graph = std::ptr::null_mut();
        // SAFETY: ends the capture begun above; the (empty) graph is destroyed.
        unsafe {
            sys::cuStreamEndCapture(raw, &mut graph).result().unwrap();
            sys::cuGraphDestroy(graph).result().unwrap();
        }
    });
    start.recv().unwrap();
    slow_fill(&rt, &s, &mut busy, 0, 20_000);
    let uploaded = dst.copy_from_host(&s, host);
    host.fill(2);
    finish.send(()).unwrap();
    capture.join().unwrap();
    uploaded.unwrap();
    let late = dst
        .download(&s)
        .unwrap()
        .iter()
        .filter(|&&v| v != 1)
        .count();
    assert_eq!(late, 0, "the upload read the source after it returned");
}
