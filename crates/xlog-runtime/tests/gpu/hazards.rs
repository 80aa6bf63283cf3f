//! Cross-stream hazards (a read waits on the last write, a write on the last write
//! and every read, a free on both), each arranged so that a missing fence would be
//! observed: the earlier work is slowed down on the device, so the later
//! work on another stream would overtake it without a wait.

use crate::common::*;

const N: usize = 1 << 16;
const SLOW: u32 = 20_000; // about 20 ms per thread

#[test]
fn two_readers_on_two_streams_then_a_writer_on_a_third() {
    let rt = rt();
    let (a, b, c) = (
        rt.new_stream().unwrap(),
        rt.new_stream().unwrap(),
        rt.new_stream().unwrap(),
    );
    let host = random_u32(3, N);
    let mut x = rt.upload_on(&a, &host).unwrap();
    a.synchronize().unwrap();
    let mut out_a = rt.alloc_zeroed_on::<u32>(&a, N).unwrap();
    let mut out_b = rt.alloc_zeroed_on::<u32>(&b, N).unwrap();
    // The first reader is the slow one: a tracker that keeps a single read event
    // (cudarc's) would let the writer wait only on the second, fast reader.
    slow_copy(&rt, &a, &x, &mut out_a, SLOW);
    slow_copy(&rt, &b, &x, &mut out_b, 0);
    x.fill(&c, 0xFFFF_FFFF).unwrap();
    assert_eq!(
        out_a.download(&a).unwrap(),
        host,
        "the slow reader saw the writer's data"
    );
    assert_eq!(out_b.download(&b).unwrap(), host);
    assert!(x.download(&c).unwrap().iter().all(|&v| v == 0xFFFF_FFFF));
}

#[test]
fn a_write_then_a_read_on_another_stream() {
    let rt = rt();
    let (a, b) = (rt.new_stream().unwrap(), rt.new_stream().unwrap());
    let mut x = rt.alloc_zeroed_on::<u32>(&a, N).unwrap();
    a.synchronize().unwrap();
    slow_fill(&rt, &a, &mut x, 42, SLOW);
    // The download on b must wait for the slow write on a.
    assert!(x.download(&b).unwrap().iter().all(|&v| v == 42));
}

#[test]
fn a_write_waits_for_an_earlier_write_on_another_stream() {
    let rt = rt();
    let (a, b) = (rt.new_stream().unwrap(), rt.new_stream().unwrap());
    let mut x = rt.alloc_zeroed_on::<u32>(&a, N).unwrap();
    a.synchronize().unwrap();
    slow_fill(&rt, &a, &mut x, 1, SLOW);
    x.fill(&b, 2).unwrap();
    assert!(
        x.download(&b).unwrap().iter().all(|&v| v == 2),
        "the earlier slow write landed last"
    );
}

#[test]
fn a_free_waits_for_a_reader_on_another_stream() {
    let rt = rt();
    let (a, b) = (rt.new_stream().unwrap(), rt.new_stream().unwrap());
    let host = random_u32(4, N);
    let x = rt.upload_on(&a, &host).unwrap();
    a.synchronize().unwrap();
    let mut out = rt.alloc_zeroed_on::<u32>(&b, N).unwrap();
    slow_copy(&rt, &b, &x, &mut out, SLOW);
    drop(x); // freed on a while b still reads it
             // Reuse the memory on a at once; without the fence the reader would see this.
    let mut scribble = Vec::new();
    for _ in 0..4 {
        let mut y = rt.alloc_zeroed_on::<u32>(&a, N).unwrap();
        y.fill(&a, 0xBAD0_BAD0).unwrap();
        scribble.push(y);
    }
    assert_eq!(
        out.download(&b).unwrap(),
        host,
        "the reader saw memory reused after the free"
    );
    drop(scribble);
    rt.synchronize().unwrap();
}

#[test]
fn a_fresh_allocation_is_fenced_for_other_streams() {
    let rt = rt();
    let (a, b) = (rt.new_stream().unwrap(), rt.new_stream().unwrap());
    // Keep a busy so the allocation and the fill on it are still queued when b
    // reads. (Not an upload: an upload waits for its copy before it returns.)
    let mut busy = rt.alloc_zeroed_on::<u32>(&a, 1024).unwrap();
    slow_fill(&rt, &a, &mut busy, 0, SLOW);
    let mut x = rt.alloc_zeroed_on::<u32>(&a, N).unwrap();
    x.fill(&a, 0xA5A5_5A5A).unwrap();
    assert_eq!(x.download(&b).unwrap(), vec![0xA5A5_5A5A; N]);
}

#[test]
fn same_stream_work_records_no_fence() {
    let rt = rt();
    let s = rt.new_stream().unwrap();
    let x = rt.upload_on(&s, &[1u32; 64]).unwrap();
    let mut y = rt.alloc_zeroed_on::<u32>(&s, 64).unwrap();
    let pre = xlog_runtime::WorkRecorder::new(&s)
        .read(&x)
        .write(&mut y)
        .preflight()
        .unwrap();
    assert_eq!(pre.wait_count(), 0);
    let other = rt.new_stream().unwrap();
    let pre = xlog_runtime::WorkRecorder::new(&other)
        .read(&x)
        .write(&mut y)
        .preflight()
        .unwrap();
    assert_eq!(
        pre.wait_count(),
        1,
        "one wait per source stream, shared by both buffers"
    );
}

/// Each hazard test above must fail when fencing is disabled, or it could not see
/// the hazard it guards. Runs them in a child process (fencing is process-wide).
///
/// Not listed: the write-after-write test, which passed unfenced on an H200 in
/// every try (the two kernels did not overlap even with 32 hardware queues), and
/// the free-while-reading test, whose outcome depends on the pool reusing the
/// address. The randomised stress's teeth test covers those orders statistically.
#[test]
fn hazard_tests_have_teeth() {
    // Without a device the children fail too, for the wrong reason: require one.
    let _ = crate::common::rt();
    for name in [
        "two_readers_on_two_streams_then_a_writer_on_a_third",
        "a_write_then_a_read_on_another_stream",
        "a_fresh_allocation_is_fenced_for_other_streams",
    ] {
        let out = xlog_test_support::child::run_test(
            &format!("hazards::{name}"),
            &[
                (crate::common::UNFENCED_ENV, "1"),
                // Streams share the GPU's hardware queues (8 by default), and two
                // streams on one queue serialise by accident, hiding the hazard:
                // use them all.
                ("CUDA_DEVICE_MAX_CONNECTIONS", "32"),
            ],
        );
        assert!(
            out.failed_one(),
            "`{name}` passed with fencing disabled: it cannot see its hazard\n{}",
            out.text()
        );
        // Failed on the values it compares, not on something else (a driver error).
        assert!(
            out.text().contains("assertion"),
            "`{name}` failed with fencing disabled, but not on its values\n{}",
            out.text()
        );
    }
}
