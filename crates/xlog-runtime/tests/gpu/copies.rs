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
    let mut b = rt.alloc_zeroed_on::<u8>(&s, 77).unwrap();
    b.fill(&s, 9).unwrap();
    assert_eq!(b.download(&s).unwrap(), vec![9u8; 77]);
    // SAFETY: every byte pattern is a valid u8.
    unsafe { xlog_runtime::memset_bytes(&s, &mut b, 0xFF) }.unwrap();
    assert_eq!(b.download(&s).unwrap(), vec![0xFFu8; 77]);
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

/// An upload has read its source when it returns, also from page-locked memory,
/// which the driver copies from only when the stream reaches the copy: the upload
/// is queued behind slow work, and the source is overwritten right after it
/// returns (safe code may: the borrow has ended). On the simulator, which has no
/// page-locked memory, the source is an ordinary vector.
#[test]
fn an_upload_from_page_locked_memory_has_read_it_when_it_returns() {
    const N: usize = 1 << 16;
    let rt = rt();
    let s = rt.new_stream().unwrap();
    let mut busy = rt.alloc_zeroed_on::<u32>(&s, N).unwrap();
    let mut dst = rt.alloc_zeroed_on::<u32>(&s, N).unwrap();
    let mut vector = Vec::new();
    // The device's primary context (xlog's), through another library, current here.
    let ctx = (!xlog_runtime::sim::is_active()).then(|| {
        let ctx = cudarc::driver::CudaContext::new(0).unwrap();
        ctx.bind_to_thread().unwrap();
        ctx
    });
    let pinned = ctx.as_ref().map(|_| {
        // SAFETY: allocates N u32s of page-locked memory in the current context, as
        // another CUDA library would; freed below.
        unsafe { cudarc::driver::result::malloc_host(N * 4, 0) }.unwrap()
    });
    let host: &mut [u32] = match pinned {
        // SAFETY: the allocation holds N u32s, aligned for them; written next.
        Some(p) => unsafe { std::slice::from_raw_parts_mut(p.cast::<u32>(), N) },
        None => {
            vector.resize(N, 0);
            &mut vector
        }
    };
    host.fill(1);
    slow_fill(&rt, &s, &mut busy, 0, 20_000);
    dst.copy_from_host(&s, host).unwrap();
    host.fill(2);
    let seen = dst.download(&s).unwrap();
    if let Some(p) = pinned {
        // SAFETY: allocated above; nothing reads it any more.
        unsafe { cudarc::driver::result::free_host(p) }.unwrap();
    }
    let overwritten = seen.iter().filter(|&&v| v != 1).count();
    assert_eq!(
        overwritten, 0,
        "the upload read the source after it returned"
    );
}
