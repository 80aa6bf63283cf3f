//! The query-engine library against CUB on the same GPU, in one run (bench id
//! `library`): xlog's reduce, scan, histograms, gather, scatter, compaction,
//! run-length encoding and segmented sum at n = 10^8,
//! each host call timed with CUDA events (median of 30 rounds after 3 warm-ups),
//! then the same operations in PyTorch and CuPy (which call CUB), timed the same
//! way by `library_cub.py`, which this bench runs as a child process. Figures are
//! rates (10^9 elements per second), so a ratio is xlog's speed over the peer's;
//! the targets are in `bench::TARGETS`.
//!
//! The script is `XLOG_CUB_SCRIPT` or `benches/library_cub.py` of this crate; the
//! interpreter `XLOG_PYTHON` or `python3`. Without PyTorch and CuPy the peers are
//! missing and the bench fails (a comparison without its peer is not a result).

use std::collections::HashMap;

use xlog::Stream;
use xlog_test_support::bench;

/// The cases, in the order both sides run them: (case, the CUB peer's name).
const CASES: &[(&str, &str)] = &[
    ("sum f32", bench::peer::CUPY_SUM),
    ("inclusive scan i32", bench::peer::TORCH_CUMSUM),
    ("histogram 256 bins u8", bench::peer::TORCH_BINCOUNT),
    ("random gather f32", bench::peer::TORCH_INDEXING),
    ("scatter f32", bench::peer::TORCH_INDEX_COPY),
    ("even histogram 256 bins f32", "torch.histc"),
    ("select 50% f32", bench::peer::TORCH_MASKED_SELECT),
    ("unique counts sorted i32", "torch.unique_consecutive"),
    (
        "segmented sum f32 (1000 per segment)",
        "torch.segment_reduce",
    ),
];

/// The even histogram, compaction, run-length and segmented cases, on the data
/// `library_cub.py` builds the same way.
fn compaction_and_segments(
    rt: &xlog::Runtime,
    s: &Stream,
    n: usize,
    x: &[f32],
    ours: &mut HashMap<&'static str, f64>,
) {
    use xlog_kernels::{compact, histogram, segmented};
    // Even bins over [0, 1): x is (i mod 1000) / 1000.
    let xb = rt.upload_on(s, x).unwrap();
    let h = histogram::even(s, &xb, 0.0f32, 1.0, 256).unwrap();
    let total: u64 = h.download(s).unwrap().iter().map(|&c| c as u64).sum();
    assert_eq!(total, n as u64, "the timed even histogram is wrong");
    ours.insert(
        "even histogram 256 bins f32",
        bench::median_event_ms(s, &mut || {
            let _ = histogram::even(s, &xb, 0.0f32, 1.0, 256).unwrap();
        }),
    );
    // Half the elements kept, in a pseudo-random pattern.
    let flags: Vec<u8> = (0..n)
        .map(|i| ((i.wrapping_mul(2_654_435_761) >> 13) & 1) as u8)
        .collect();
    let fb = rt.upload_on(s, &flags).unwrap();
    let kept = compact::select_flagged(s, &xb, &fb).unwrap();
    let want = flags.iter().filter(|&&f| f != 0).count();
    assert_eq!(kept.len(), want, "the timed select is wrong");
    drop(kept);
    ours.insert(
        "select 50% f32",
        bench::median_event_ms(s, &mut || {
            let _ = compact::select_flagged(s, &xb, &fb).unwrap();
        }),
    );
    drop(fb);
    // Sorted keys in runs of about 10, and segments of 1000 elements.
    let keys: Vec<i32> = (0..n).map(|i| (i / 10) as i32).collect();
    let kb = rt.upload_on(s, &keys).unwrap();
    let runs = compact::unique_counts(s, &kb).unwrap();
    assert_eq!(
        runs.values.len(),
        n.div_ceil(10),
        "the timed unique is wrong"
    );
    drop(runs);
    ours.insert(
        "unique counts sorted i32",
        bench::median_event_ms(s, &mut || {
            let _ = compact::unique_counts(s, &kb).unwrap();
        }),
    );
    drop(kb);
    let offsets: Vec<u64> = (0..=n.div_ceil(1000))
        .map(|j| (j * 1000).min(n) as u64)
        .collect();
    let ob = rt.upload_on(s, &offsets).unwrap();
    let sums = segmented::segmented_reduce::<f32, segmented::Sum>(s, &xb, &ob).unwrap();
    assert_eq!(sums.len(), offsets.len() - 1);
    ours.insert(
        "segmented sum f32 (1000 per segment)",
        bench::median_event_ms(s, &mut || {
            let _ = segmented::segmented_reduce::<f32, segmented::Sum>(s, &xb, &ob).unwrap();
        }),
    );
}

fn main() {
    let rt = bench::runtime_or_exit();
    let info = rt.device().info();
    let n: usize = std::env::var("XLOG_LIBRARY_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000_000);
    println!("## query-engine library vs CUB through PyTorch / CuPy (n = {n}, CUDA events, median of 30)\n");
    println!(
        "device: {} (sm_{}{})\n",
        info.name, info.compute_capability.0, info.compute_capability.1
    );
    let s = rt.new_stream().unwrap();
    let mut ours: HashMap<&str, f64> = HashMap::new();

    // sum f32
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.001).collect();
    let xb = rt.upload_on(&s, &x).unwrap();
    let want: f64 = x.iter().map(|&v| v as f64).sum();
    let got = xlog_kernels::reduce::sum(&s, &xb)
        .unwrap()
        .download(&s)
        .unwrap()[0] as f64;
    assert!(
        (got - want).abs() <= want * 1e-4,
        "the timed sum is wrong: {got} vs {want}"
    );
    ours.insert(
        "sum f32",
        bench::median_event_ms(&s, &mut || {
            let _ = xlog_kernels::reduce::sum(&s, &xb).unwrap();
        }),
    );
    drop(xb);

    // inclusive scan i32
    let xi: Vec<i32> = (0..n).map(|i| (i % 7) as i32 - 3).collect();
    let xib = rt.upload_on(&s, &xi).unwrap();
    let got = xlog_kernels::scan::inclusive_sum(&s, &xib)
        .unwrap()
        .download(&s)
        .unwrap();
    let want = xi.iter().fold(0i32, |a, &b| a.wrapping_add(b));
    assert_eq!(got[n - 1], want, "the timed scan is wrong");
    drop(got);
    ours.insert(
        "inclusive scan i32",
        bench::median_event_ms(&s, &mut || {
            let _ = xlog_kernels::scan::inclusive_sum(&s, &xib).unwrap();
        }),
    );
    drop(xib);

    // histogram of bytes, 256 bins (privatised per block)
    let bytes: Vec<u8> = (0..n)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8)
        .collect();
    let bb = rt.upload_on(&s, &bytes).unwrap();
    let bins = xlog_kernels::histogram::counts(&s, &bb, 256).unwrap();
    let total: u64 = bins.download(&s).unwrap().iter().map(|&c| c as u64).sum();
    assert_eq!(total, n as u64, "the timed histogram is wrong");
    ours.insert(
        "histogram 256 bins u8",
        bench::median_event_ms(&s, &mut || {
            let _ = xlog_kernels::histogram::counts(&s, &bb, 256).unwrap();
        }),
    );
    drop(bb);

    // random gather and permutation scatter, f32 values, 64-bit indices (as torch's)
    let mut r = xlog_test_support::Rng::from_state(12345);
    let idx: Vec<u64> = (0..n).map(|_| r.next_u64() % n as u64).collect();
    let mut perm: Vec<u64> = (0..n as u64).collect();
    for i in (1..n).rev() {
        perm.swap(i, (r.next_u64() % (i as u64 + 1)) as usize);
    }
    let xb = rt.upload_on(&s, &x).unwrap();
    let ib = rt.upload_on(&s, &idx).unwrap();
    let pb = rt.upload_on(&s, &perm).unwrap();
    let got = xlog_kernels::gather::gather(&s, &xb, &ib)
        .unwrap()
        .download(&s)
        .unwrap();
    assert_eq!(
        got[n / 3],
        x[idx[n / 3] as usize],
        "the timed gather is wrong"
    );
    drop(got);
    ours.insert(
        "random gather f32",
        bench::median_event_ms(&s, &mut || {
            let _ = xlog_kernels::gather::gather(&s, &xb, &ib).unwrap();
        }),
    );
    let mut out = rt.alloc_zeroed_on::<f32>(&s, n).unwrap();
    ours.insert(
        "scatter f32",
        bench::median_event_ms(&s, &mut || {
            xlog_kernels::gather::scatter(&s, &xb, &pb, &mut out).unwrap();
        }),
    );
    assert_eq!(
        out.download(&s).unwrap()[perm[7] as usize],
        x[7],
        "the timed scatter is wrong"
    );
    drop((xb, ib, pb, out));
    compaction_and_segments(&rt, &s, n, &x, &mut ours);
    s.synchronize().unwrap();

    // The CUB side, on the same GPU, after ours (its memory freed).
    let peers = bench::cub_peers(
        concat!(env!("CARGO_MANIFEST_DIR"), "/benches/library_cub.py"),
        &[n.to_string()],
    );
    bench::peer_table("library", "Gelem/s", n, CASES, &ours, &peers);
}
