//! The dense group-by against PyTorch on the same GPU, in one run (bench id
//! `dense_group`): counts, sums, minima and maxima of 10^8 rows by a `u32` key
//! over 1000 keys (and sums over 16 keys, where every block's rows pile onto few
//! accumulators), each host call timed with CUDA events (median of 30 rounds
//! after 3 warm-ups), then PyTorch's `bincount`, `index_add_` and `scatter_reduce`
//! on the same data, timed the same way by `dense_group_torch.py`, which this bench
//! runs as a child process. Figures are rates (10^9 rows per second), so a ratio
//! is xlog's speed over PyTorch's. xlog's eager calls include their read-back of
//! the error word (one 8-byte download, which waits for the stream); PyTorch's do
//! not check their indices on the device.
//!
//! The script is `XLOG_GROUP_SCRIPT` or `benches/dense_group_torch.py` of this crate;
//! the interpreter `XLOG_PYTHON` or `python3`. Without PyTorch the peers are
//! missing and the bench fails (a comparison without its peer is not a result).

use std::collections::HashMap;

use xlog_kernels::dense_group;
use xlog_test_support::bench;

/// The cases, in the order both sides run them: (case, PyTorch's operation).
const CASES: &[(&str, &str)] = &[
    ("count by u32 key, 1000 keys", "torch.bincount"),
    ("sum f32 by u32 key, 1000 keys", "torch index_add_"),
    ("sum f32 by u32 key, 16 keys", "torch index_add_"),
    ("sum f64 by u32 key, 1000 keys", "torch index_add_"),
    ("sum i64 by u32 key, 1000 keys", "torch index_add_"),
    ("min f32 by u32 key, 1000 keys", "torch scatter_reduce amin"),
    ("max f32 by u32 key, 1000 keys", "torch scatter_reduce amax"),
];

/// Row `i`'s key over `domain` keys: a multiplicative hash, as the script computes it.
fn key(i: usize, domain: usize) -> u32 {
    (((i as u64).wrapping_mul(2_654_435_761) >> 7) % domain as u64) as u32
}

fn main() {
    let rt = bench::runtime_or_exit();
    let info = rt.device().info();
    let n: usize = std::env::var("XLOG_GROUP_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000_000);
    println!("## dense group-by vs PyTorch (n = {n}, CUDA events, median of 30)\n");
    println!(
        "device: {} (sm_{}{})\n",
        info.name, info.compute_capability.0, info.compute_capability.1
    );
    let s = rt.new_stream().unwrap();
    let mut ours: HashMap<&str, f64> = HashMap::new();
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.001).collect();
    let xb = rt.upload_on(&s, &x).unwrap();
    let xd: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let xdb = rt.upload_on(&s, &xd).unwrap();
    drop(xd);
    let xl: Vec<i64> = (0..n).map(|i| (i % 1000) as i64 - 500).collect();
    let xlb = rt.upload_on(&s, &xl).unwrap();
    drop(xl);
    for domain in [1000usize, 16] {
        let keys: Vec<u32> = (0..n).map(|i| key(i, domain)).collect();
        let kb = rt.upload_on(&s, &keys).unwrap();
        let mut want = vec![0u32; domain];
        for &k in &keys {
            want[k as usize] += 1;
        }
        if domain == 16 {
            let sums = dense_group::sum(&s, &kb, &xb, domain).unwrap();
            let total: f64 = sums.download(&s).unwrap().iter().map(|&v| v as f64).sum();
            let exact: f64 = x.iter().map(|&v| v as f64).sum();
            assert!(
                (total - exact).abs() <= exact * 1e-3,
                "the timed sum is wrong"
            );
            ours.insert(
                "sum f32 by u32 key, 16 keys",
                bench::median_event_ms(&s, &mut || {
                    let _ = dense_group::sum(&s, &kb, &xb, domain).unwrap();
                }),
            );
            continue;
        }
        let counts = dense_group::count::<u32, u32>(&s, &kb, domain).unwrap();
        assert_eq!(
            counts.download(&s).unwrap(),
            want,
            "the timed count is wrong"
        );
        ours.insert(
            "count by u32 key, 1000 keys",
            bench::median_event_ms(&s, &mut || {
                let _ = dense_group::count::<u32, u32>(&s, &kb, domain).unwrap();
            }),
        );
        ours.insert(
            "sum f32 by u32 key, 1000 keys",
            bench::median_event_ms(&s, &mut || {
                let _ = dense_group::sum(&s, &kb, &xb, domain).unwrap();
            }),
        );
        ours.insert(
            "sum f64 by u32 key, 1000 keys",
            bench::median_event_ms(&s, &mut || {
                let _ = dense_group::sum(&s, &kb, &xdb, domain).unwrap();
            }),
        );
        ours.insert(
            "sum i64 by u32 key, 1000 keys",
            bench::median_event_ms(&s, &mut || {
                let _ = dense_group::sum(&s, &kb, &xlb, domain).unwrap();
            }),
        );
        let min = dense_group::min(&s, &kb, &xb, domain).unwrap();
        assert!(
            min.download(&s).unwrap().iter().all(|&v| v >= 0.0),
            "the timed min is wrong"
        );
        ours.insert(
            "min f32 by u32 key, 1000 keys",
            bench::median_event_ms(&s, &mut || {
                let _ = dense_group::min(&s, &kb, &xb, domain).unwrap();
            }),
        );
        ours.insert(
            "max f32 by u32 key, 1000 keys",
            bench::median_event_ms(&s, &mut || {
                let _ = dense_group::max(&s, &kb, &xb, domain).unwrap();
            }),
        );
    }
    drop((xb, xdb, xlb));
    s.synchronize().unwrap();

    // PyTorch, on the same GPU, after ours (its memory freed).
    let peers = bench::python_peers(
        "XLOG_GROUP_SCRIPT",
        concat!(env!("CARGO_MANIFEST_DIR"), "/benches/dense_group_torch.py"),
        &[n.to_string()],
    );
    bench::peer_table("dense_group", "Grows/s", n, CASES, &ours, &peers);
}
