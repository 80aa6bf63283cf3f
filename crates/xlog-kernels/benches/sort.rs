//! The radix sort against CUB on the same GPU, in one run (bench id `sort`):
//! xlog's `sort::sorted` and `sort::sort_with_indices` at n = 10^8 on uniformly
//! random keys over the full range, each host call timed with CUDA events (median
//! of 30 rounds after 3 warm-ups, temporaries allocated and freed inside the call
//! as the peers' are), then `cupy.sort` and `torch.sort` (both CUB's radix sort)
//! timed the same way by `library_cub.py N sort`, run as a child process. Figures
//! are rates (10^9 keys per second), so a ratio is xlog's speed over the peer's.
//! The targets are at least 0.8 for every row.
//!
//! `torch.sort` returns `int64` indices; xlog's `u32` and `u64` permutations are
//! both compared with it. The script is `XLOG_CUB_SCRIPT` or
//! `benches/library_cub.py` of this crate; the interpreter `XLOG_PYTHON` or
//! `python3`. Without PyTorch and CuPy the bench fails.

use std::collections::HashMap;

use xlog::{DeviceBuffer, Stream};
use xlog_kernels::sort::{self, Order};
use xlog_test_support::bench;

/// The cases, in the order both sides run them: (case, the CUB peer's name).
const CASES: &[(&str, &str)] = &[
    ("sort u32 keys", bench::peer::CUPY_SORT),
    ("sort i32 keys + u32 indices", bench::peer::TORCH_SORT),
    ("sort i32 keys + u64 indices", bench::peer::TORCH_SORT),
    ("sort i64 keys", bench::peer::CUPY_SORT),
];

/// Panics unless `keys` is sorted (and, with `perm`, `keys[i] == input[perm[i]]`
/// with equal keys in increasing `perm` order), checked on a sample of positions.
fn check<K: PartialOrd + Copy + std::fmt::Debug + xlog::DeviceCopy>(
    s: &Stream,
    case: &str,
    input: &[K],
    keys: &DeviceBuffer<K>,
    perm: Option<Vec<u64>>,
) {
    let keys = keys.download(s).unwrap();
    assert_eq!(keys.len(), input.len(), "{case}: length");
    assert!(
        keys.windows(2).all(|w| w[0] <= w[1]),
        "{case}: the timed sort is not sorted"
    );
    if let Some(p) = perm {
        for i in (0..keys.len()).step_by(9973) {
            assert_eq!(keys[i], input[p[i] as usize], "{case}: permutation at {i}");
            if i + 1 < keys.len() && keys[i] == keys[i + 1] {
                assert!(p[i] < p[i + 1], "{case}: not stable at {i}");
            }
        }
    }
}

fn main() {
    let rt = bench::runtime_or_exit();
    let info = rt.device().info();
    let n: usize = std::env::var("XLOG_LIBRARY_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000_000);
    println!("## radix sort vs CUB through CuPy / PyTorch (n = {n}, random keys, CUDA events, median of 30)\n");
    println!(
        "device: {} (sm_{}{})\n",
        info.name, info.compute_capability.0, info.compute_capability.1
    );
    let s = rt.new_stream().unwrap();
    let mut ours: HashMap<&str, f64> = HashMap::new();
    let mut r = xlog_test_support::Rng::from_state(12345);
    let raw: Vec<u64> = (0..n).map(|_| r.next_u64()).collect();

    let x: Vec<u32> = raw.iter().map(|&v| v as u32).collect();
    let xb = rt.upload_on(&s, &x).unwrap();
    let out = sort::sorted(&s, &xb, Order::Ascending).unwrap();
    check(&s, "sort u32 keys", &x, &out, None);
    drop(out);
    ours.insert(
        "sort u32 keys",
        bench::median_event_ms(&s, &mut || {
            let _ = sort::sorted(&s, &xb, Order::Ascending).unwrap();
        }),
    );
    drop((x, xb));

    let x: Vec<i32> = raw.iter().map(|&v| v as i32).collect();
    let xb = rt.upload_on(&s, &x).unwrap();
    let (out, perm) = sort::sort_with_indices::<i32, u32>(&s, &xb, Order::Ascending).unwrap();
    let perm = perm
        .download(&s)
        .unwrap()
        .into_iter()
        .map(u64::from)
        .collect();
    check(&s, "sort i32 keys + u32 indices", &x, &out, Some(perm));
    drop(out);
    ours.insert(
        "sort i32 keys + u32 indices",
        bench::median_event_ms(&s, &mut || {
            let _ = sort::sort_with_indices::<i32, u32>(&s, &xb, Order::Ascending).unwrap();
        }),
    );
    let (out, perm) = sort::sort_with_indices::<i32, u64>(&s, &xb, Order::Ascending).unwrap();
    check(
        &s,
        "sort i32 keys + u64 indices",
        &x,
        &out,
        Some(perm.download(&s).unwrap()),
    );
    drop((out, perm));
    ours.insert(
        "sort i32 keys + u64 indices",
        bench::median_event_ms(&s, &mut || {
            let _ = sort::sort_with_indices::<i32, u64>(&s, &xb, Order::Ascending).unwrap();
        }),
    );
    drop((x, xb));

    let x: Vec<i64> = raw.iter().map(|&v| v as i64).collect();
    let xb = rt.upload_on(&s, &x).unwrap();
    let out = sort::sorted(&s, &xb, Order::Ascending).unwrap();
    check(&s, "sort i64 keys", &x, &out, None);
    drop(out);
    ours.insert(
        "sort i64 keys",
        bench::median_event_ms(&s, &mut || {
            let _ = sort::sorted(&s, &xb, Order::Ascending).unwrap();
        }),
    );
    drop((x, xb, raw));
    s.synchronize().unwrap();
    rt.reap().unwrap();

    // The CUB side, on the same GPU, after ours (its memory freed).
    let peers = bench::cub_peers(
        concat!(env!("CARGO_MANIFEST_DIR"), "/benches/library_cub.py"),
        &[n.to_string(), "sort".to_owned()],
    );
    bench::peer_table("sort", "Gkeys/s", n, CASES, &ours, &peers);
}
