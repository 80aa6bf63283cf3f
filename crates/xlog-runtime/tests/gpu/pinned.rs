//! Page-locked buffers and asynchronous copies: each copy returns while its
//! stream is still busy, and the host cannot reach bytes a copy still uses, even
//! when the handle that borrowed them is dropped or forgotten (slowed down on the
//! device so that a missing wait would be seen).

use crate::common::*;

const N: usize = 1 << 16;
const SLOW: u32 = 20_000; // about 20 ms per thread

#[test]
fn an_upload_returns_before_it_runs_and_lands() {
    let rt = rt();
    let s = rt.new_stream().unwrap();
    let mut host = rt.alloc_pinned::<u32>(N).unwrap();
    let values = random_u32(11, N);
    host.as_mut_slice().unwrap().copy_from_slice(&values);
    let mut busy = rt.alloc_zeroed_on::<u32>(&s, 1024).unwrap();
    slow_fill(&rt, &s, &mut busy, 0, SLOW);
    let mut dev = rt.alloc_zeroed_on::<u32>(&s, N).unwrap();
    let pending = dev.upload_from_pinned(&s, &host).unwrap();
    if !xlog_runtime::sim::is_active() {
        assert!(!pending.is_done(), "the upload waited for the slow kernel");
    }
    pending.wait().unwrap();
    assert!(host.is_idle());
    assert_eq!(dev.download(&s).unwrap(), values);
}

#[test]
fn a_forgotten_download_still_fences_the_hosts_reads() {
    let rt = rt();
    let (a, b) = (rt.new_stream().unwrap(), rt.new_stream().unwrap());
    let mut x = rt.alloc_zeroed_on::<u32>(&a, N).unwrap();
    a.synchronize().unwrap();
    slow_fill(&rt, &a, &mut x, 5, SLOW);
    let mut host = rt.alloc_pinned::<u32>(N).unwrap();
    // b waits for a's write on the device, then copies; the handle is forgotten, so
    // the borrow ends with the copy still queued. (It has no destructor: forgetting
    // it is dropping it, and nothing may rest on one.)
    #[allow(clippy::forget_non_drop)]
    std::mem::forget(x.download_to_pinned(&b, &mut host).unwrap());
    assert!(
        host.as_slice().unwrap().iter().all(|&v| v == 5),
        "the host read the buffer before the download landed"
    );
}

#[test]
fn writing_a_pinned_buffer_waits_for_its_upload() {
    let rt = rt();
    let s = rt.new_stream().unwrap();
    let mut host = rt.alloc_pinned::<u32>(N).unwrap();
    host.as_mut_slice().unwrap().fill(1);
    let mut busy = rt.alloc_zeroed_on::<u32>(&s, 1024).unwrap();
    slow_fill(&rt, &s, &mut busy, 0, SLOW);
    let mut dev = rt.alloc_zeroed_on::<u32>(&s, N).unwrap();
    drop(dev.upload_from_pinned(&s, &host).unwrap());
    host.as_mut_slice().unwrap().fill(2);
    assert!(
        dev.download(&s).unwrap().iter().all(|&v| v == 1),
        "the host wrote the buffer before the upload read it"
    );
}

#[test]
fn a_download_into_a_buffer_being_uploaded_waits_on_the_device() {
    let rt = rt();
    let (a, b) = (rt.new_stream().unwrap(), rt.new_stream().unwrap());
    let mut host = rt.alloc_pinned::<u32>(N).unwrap();
    host.as_mut_slice().unwrap().fill(1);
    let mut busy = rt.alloc_zeroed_on::<u32>(&a, 1024).unwrap();
    slow_fill(&rt, &a, &mut busy, 0, SLOW);
    let mut first = rt.alloc_zeroed_on::<u32>(&a, N).unwrap();
    drop(first.upload_from_pinned(&a, &host).unwrap()); // behind the slow kernel
    let twos = rt.upload_on(&b, &vec![2u32; N]).unwrap();
    let got = twos.download_to_pinned(&b, &mut host).unwrap();
    assert!(
        got.wait().unwrap().iter().all(|&v| v == 2),
        "the host read the downloaded bytes before they landed"
    );
    assert!(
        first.download(&a).unwrap().iter().all(|&v| v == 1),
        "the download overwrote the pinned bytes before the upload read them"
    );
}

/// Chunks through three streams and three pairs of pinned slots, each slot reused
/// every third chunk: upload, kernel, download, all queued before any is awaited.
#[test]
fn a_chunked_pipeline_over_three_streams_matches_the_host() {
    let rt = rt();
    let streams: Vec<_> = (0..3).map(|_| rt.new_stream().unwrap()).collect();
    let (chunks, len) = (12, 1 << 14);
    let input: Vec<u32> = random_u32(12, chunks * len);
    let mut ins: Vec<_> = (0..3)
        .map(|_| rt.alloc_pinned::<u32>(len).unwrap())
        .collect();
    let mut outs: Vec<_> = (0..3)
        .map(|_| rt.alloc_pinned::<u32>(len).unwrap())
        .collect();
    let mut result = vec![0u32; chunks * len];
    let mut done: Vec<Option<usize>> = vec![None; 3];
    for k in 0..chunks {
        let slot = k % 3;
        let s = &streams[slot];
        if let Some(prev) = done[slot].take() {
            let out = outs[slot].as_slice().unwrap();
            result[prev * len..(prev + 1) * len].copy_from_slice(out);
        }
        ins[slot]
            .as_mut_slice()
            .unwrap()
            .copy_from_slice(&input[k * len..(k + 1) * len]);
        let mut d_in = rt.alloc_zeroed_on::<u32>(s, len).unwrap();
        drop(d_in.upload_from_pinned(s, &ins[slot]).unwrap());
        let mut d_out = rt.alloc_zeroed_on::<u32>(s, len).unwrap();
        slow_copy(&rt, s, &d_in, &mut d_out, 0);
        drop(d_out.download_to_pinned(s, &mut outs[slot]).unwrap());
        done[slot] = Some(k);
    }
    for slot in 0..3 {
        if let Some(prev) = done[slot].take() {
            let out = outs[slot].as_slice().unwrap();
            result[prev * len..(prev + 1) * len].copy_from_slice(out);
        }
    }
    assert_eq!(result, input);
}

/// One page-locked input and output split into chunks, each chunk's copies on its
/// own stream: the output, read whole, waits for every chunk's download.
#[test]
fn chunks_of_one_pinned_buffer_copy_independently() {
    let rt = rt();
    let streams: Vec<_> = (0..3).map(|_| rt.new_stream().unwrap()).collect();
    let (chunks, len) = (9, 1 << 13);
    let values = random_u32(13, chunks * len);
    let mut input = rt.alloc_pinned::<u32>(chunks * len).unwrap();
    input.as_mut_slice().unwrap().copy_from_slice(&values);
    let mut output = rt.alloc_pinned::<u32>(chunks * len).unwrap();
    {
        let ins = input.chunks_mut(len);
        let mut outs = output.chunks_mut(len);
        assert_eq!((ins.len(), outs.len()), (chunks, chunks));
        for (k, (src, dst)) in ins.iter().zip(outs.iter_mut()).enumerate() {
            let s = &streams[k % 3];
            let mut d = rt.alloc_zeroed_on::<u32>(s, len).unwrap();
            drop(d.upload_from_pinned(s, src).unwrap());
            let mut e = rt.alloc_zeroed_on::<u32>(s, len).unwrap();
            slow_copy(&rt, s, &d, &mut e, if k == 0 { SLOW / 4 } else { 0 });
            drop(e.download_to_pinned(s, dst).unwrap());
        }
        // The first chunk is slow; the last one's bytes are there once it is done.
        assert!(
            outs[chunks - 1].as_slice().unwrap() == &values[(chunks - 1) * len..],
            "the last chunk was read before every chunk landed"
        );
    }
    assert!(
        output.as_slice().unwrap() == &values[..],
        "the whole output was read before every chunk landed"
    );
}

#[test]
fn copies_of_the_wrong_length_are_refused_and_queue_nothing() {
    let rt = rt();
    let s = rt.new_stream().unwrap();
    let mut host = rt.alloc_pinned::<u32>(10).unwrap();
    let mut dev = rt.alloc_zeroed_on::<u32>(&s, 11).unwrap();
    assert!(matches!(
        dev.upload_from_pinned(&s, &host).map(|_| ()),
        Err(xlog_runtime::Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        dev.download_to_pinned(&s, &mut host).map(|_| ()),
        Err(xlog_runtime::Error::InvalidArgument { .. })
    ));
    assert!(host.is_idle());
    let empty = rt.alloc_pinned::<u32>(0).unwrap();
    assert!(empty.as_slice().unwrap().is_empty());
}

/// What `#[derive(DeviceCopy)]` generates for a `#[repr(C, align(256))]` struct of
/// numbers: 256 bytes is the most a kernel parameter's element may be aligned to.
/// (An element aligned past a page is refused when `alloc_pinned` is compiled:
/// `tests/ui/soundness/pinned_over_aligned_element.rs`.)
#[derive(Clone, Copy)]
#[repr(C, align(256))]
struct Aligned256([u64; 4]);
// SAFETY: what the derive emits for this struct: numbers only, `repr(C)`.
unsafe impl xlog_runtime::DeviceCopy for Aligned256 {}

/// `as_slice` builds a `&[T]` from the allocation's pointer: page-locked memory
/// must be aligned for `T` on every backend (the simulator's as the driver's).
#[test]
fn a_pinned_buffer_is_aligned_for_its_element_type() {
    let rt = rt();
    let mut misaligned = Vec::new();
    for len in 1..=8 {
        let a = rt.alloc_pinned::<Aligned256>(len).unwrap();
        // `black_box`: a `&[T]` is aligned by definition, so without it the
        // compiler folds the check below to "aligned".
        let at = std::hint::black_box(a.as_slice().unwrap().as_ptr() as usize);
        if at % 256 != 0 {
            misaligned.push(format!("Aligned256 x {len} at {at:#x}"));
        }
        // Any allocation, whatever its element type, is aligned to the most an
        // element type may ask for (256 bytes).
        let bytes = rt.alloc_pinned::<u8>(len).unwrap();
        let at = std::hint::black_box(bytes.as_slice().unwrap().as_ptr() as usize);
        if at % 256 != 0 {
            misaligned.push(format!("u8 x {len} at {at:#x}, not on 256 bytes"));
        }
    }
    assert!(
        misaligned.is_empty(),
        "page-locked slices not aligned for their element type: {misaligned:?}"
    );
}

/// While another thread captures a CUDA graph in global mode (which refuses a
/// plain synchronisation on every thread that has not relaxed its capture mode,
/// and is broken by one), waiting for an upload from and a download into
/// page-locked memory still works and leaves the capture intact. The capture
/// would refuse the allocations of tests running beside it, so the scenario runs
/// alone in a child process.
#[test]
fn a_pinned_download_is_read_while_another_thread_captures_a_graph() {
    let name = "pinned::a_pinned_download_is_read_while_another_thread_captures_a_graph";
    let rt = rt();
    if xlog_runtime::sim::is_active() {
        println!("{name}: checks the CUDA driver only (the simulator has no graphs)");
        return;
    }
    if !in_a_process_of_its_own(name) {
        return;
    }
    use cudarc::driver::sys;
    let s = rt.new_stream().unwrap();
    let mut src = rt.alloc_zeroed_on::<u32>(&s, 1 << 16).unwrap();
    let mut host = rt.alloc_pinned::<u32>(1 << 16).unwrap();
    host.as_mut_slice().unwrap().fill(7);
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
            let ended = sys::cuStreamEndCapture(raw, &mut graph).result();
            if ended.is_ok() {
                sys::cuGraphDestroy(graph).result().unwrap();
            }
            ended
        }
    });
    start.recv().unwrap();
    let uploaded = src.upload_from_pinned(&s, &host).unwrap().wait();
    let read = src
        .download_to_pinned(&s, &mut host)
        .unwrap()
        .wait()
        .map(|v| v.iter().all(|&x| x == 7));
    finish.send(()).unwrap();
    let ended = capture.join().unwrap();
    assert!(
        uploaded.is_ok(),
        "waiting for an upload during another thread's capture: {uploaded:?}"
    );
    assert!(
        matches!(read, Ok(true)),
        "reading a finished download during another thread's capture: {read:?}"
    );
    assert!(
        ended.is_ok(),
        "the other thread's capture was broken: {ended:?}"
    );
}

/// The fencing tests above fail with fencing off: they can see what they guard.
/// (On the simulator an upload reads its source when queued, as the driver
/// stages pageable memory, so only the download's order can be seen there.)
#[test]
fn pinned_tests_have_teeth() {
    let _ = crate::common::rt();
    let mut names = vec![
        (
            "a_forgotten_download_still_fences_the_hosts_reads",
            "before the download landed",
        ),
        (
            "chunks_of_one_pinned_buffer_copy_independently",
            "before every chunk landed",
        ),
    ];
    if !xlog_runtime::sim::is_active() {
        names.push((
            "writing_a_pinned_buffer_waits_for_its_upload",
            "before the upload read it",
        ));
        // Without fencing the host wait goes too, so the first check may fail first.
        names.push((
            "a_download_into_a_buffer_being_uploaded_waits_on_the_device",
            "before the upload read them|before they landed",
        ));
    }
    for (name, says) in names {
        let out = xlog_test_support::child::run_test(
            &format!("pinned::{name}"),
            &[
                (crate::common::UNFENCED_ENV, "1"),
                ("CUDA_DEVICE_MAX_CONNECTIONS", "32"),
            ],
        );
        assert!(
            out.failed_one() && says.split('|').any(|s| out.text().contains(s)),
            "`{name}` did not fail on its values with fencing disabled\n{}",
            out.text()
        );
    }
}
