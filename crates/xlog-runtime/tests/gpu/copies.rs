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
