//! Copy bandwidth between page-locked host memory and the device, both ways:
//! xlog's asynchronous copies (queued, then awaited through their handle) vs
//! PyTorch's non-blocking copies from and to pinned memory, timed on the same GPU
//! by `pinned_peers.py` (`XLOG_CUB_SCRIPT` overrides its path) (bench id
//! `pinned_copy`; targets in `bench::TARGETS`).

use std::time::Instant;

use xlog_test_support::bench::{self, peer};

const BYTES: usize = 256 << 20;

/// Median milliseconds of `f` over 20 calls after 3 warm-ups.
fn median_ms(mut f: impl FnMut()) -> f64 {
    for _ in 0..3 {
        f();
    }
    let mut ts: Vec<f64> = (0..20)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    ts.sort_by(f64::total_cmp);
    ts[ts.len() / 2]
}

fn main() {
    bench::header("page-locked copy bandwidth, 256 MiB (median of 20)");
    let rt = bench::runtime_or_exit();
    let s = rt.new_stream().unwrap();
    let mut host = rt.alloc_pinned::<u8>(BYTES).unwrap();
    host.as_mut_slice().unwrap().fill(1);
    let mut dev = rt.alloc_zeroed_on::<u8>(&s, BYTES).unwrap();
    let up = median_ms(|| dev.upload_from_pinned(&s, &host).unwrap().wait().unwrap());
    let down = median_ms(|| {
        let _ = dev
            .download_to_pinned(&s, &mut host)
            .unwrap()
            .wait()
            .unwrap();
    });
    assert!(host.as_slice().unwrap().iter().all(|&b| b == 1));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/pinned_peers.py");
    // Its own variable: `XLOG_CUB_SCRIPT`, which the GPU run script sets for the
    // library's benches, names another script.
    let torch = bench::python_peers("XLOG_PINNED_SCRIPT", script, &[BYTES.to_string()]);
    let gbps = |ms: f64| BYTES as f64 / ms / 1e6;
    for (case, ours) in [("host to device", up), ("device to host", down)] {
        let theirs = *torch
            .get(case)
            .unwrap_or_else(|| panic!("no PyTorch figure for {case}"));
        bench::Case {
            bench: "pinned_copy",
            case,
            size: Some(BYTES as u64),
            unit: "GB/s",
        }
        .row(gbps(ours), gbps(theirs), peer::TORCH_PINNED);
    }
}
