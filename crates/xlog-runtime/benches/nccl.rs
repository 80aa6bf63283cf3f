//! Two GPUs of one process: NCCL all-reduce through xlog's fenced `Group` (in
//! place, `f32`, sum) against `torch.cuda.nccl.all_reduce` over the same kind of
//! communicators (`ncclCommInitAll`), and `copy_peer` against PyTorch's copy
//! between tensors on two GPUs; PyTorch timed by `nccl_peers.py` in the same run
//! (`XLOG_NCCL_SCRIPT` overrides its path). Bench ids `nccl_all_reduce` and
//! `peer_copy`; targets in `bench::TARGETS`. Needs two GPUs (exits 2 otherwise);
//! NVLink multicast (NVLS) is off for both sides (`NCCL_NVLS_ENABLE=0`).

use std::time::Instant;

use xlog_runtime::nccl::{Communicator, Group, ReduceOp};
use xlog_runtime::{copy_peer, DeviceBuffer, Runtime, Stream};
use xlog_test_support::bench::{self, peer};

const SIZES: [(usize, &str); 3] = [
    (4 << 10, "4 KiB"),
    (256 << 20, "256 MiB"),
    (1 << 30, "1 GiB"),
];
const ROUNDS: usize = 15;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median seconds per call of `f` over `ROUNDS` batches of `batch` calls (after a
/// warm-up batch), `sync` ending each batch.
fn per_call(batch: usize, mut f: impl FnMut(), mut sync: impl FnMut()) -> f64 {
    let mut batch_of = || {
        let t = Instant::now();
        for _ in 0..batch {
            f();
        }
        sync();
        t.elapsed().as_secs_f64() / batch as f64
    };
    batch_of();
    median((0..ROUNDS).map(|_| batch_of()).collect())
}

fn main() {
    // SAFETY: set before any thread starts; NCCL reads it at its first call.
    unsafe { std::env::set_var("NCCL_NVLS_ENABLE", "0") };
    bench::header("NCCL all-reduce and peer copies, two GPUs of one process");
    let count = xlog_runtime::Device::count().unwrap_or(0);
    if count < 2 {
        eprintln!("this bench needs two GPUs (found {count})");
        std::process::exit(2);
    }
    let rts = [Runtime::get(0).unwrap(), Runtime::get(1).unwrap()];
    let (path, version) = xlog_runtime::nccl::library().unwrap();
    println!("NCCL {version} from {path}");
    println!();
    let comms = Communicator::init_all(&rts).unwrap();
    let s: Vec<Stream> = rts.iter().map(|rt| rt.new_stream().unwrap()).collect();
    let sync = || {
        for st in &s {
            st.synchronize().unwrap();
        }
    };
    let mut ours = Vec::new();
    for (bytes, name) in SIZES {
        let n = bytes / 4;
        let mut bufs: Vec<DeviceBuffer<f32>> = rts
            .iter()
            .zip(&s)
            .map(|(rt, st)| rt.upload_on(st, &vec![1.0f32; n]).unwrap())
            .collect();
        let mut all_reduce = || {
            let [b0, b1] = &mut bufs[..] else {
                unreachable!()
            };
            Group::new()
                .all_reduce_in_place(&comms[0], &s[0], b0, ReduceOp::Sum)
                .all_reduce_in_place(&comms[1], &s[1], b1, ReduceOp::Sum)
                .launch()
                .unwrap();
        };
        let secs = if bytes <= 1 << 20 {
            // End to end: each call waits for both GPUs.
            per_call(
                200,
                || {
                    all_reduce();
                    sync();
                },
                || {},
            )
        } else {
            per_call(if bytes >= 1 << 30 { 5 } else { 10 }, &mut all_reduce, sync)
        };
        ours.push((bytes, name, secs));
    }
    let mut copies = Vec::new();
    for (bytes, name) in &SIZES[1..] {
        let src = rts[0].upload_on(&s[0], &vec![7u8; *bytes]).unwrap();
        let mut dst = rts[1].alloc_zeroed_on::<u8>(&s[1], *bytes).unwrap();
        sync();
        let secs = per_call(
            10,
            || {
                let _ = copy_peer(&s[1], &mut dst, &s[0], &src).unwrap();
            },
            sync,
        );
        assert!(dst.download(&s[1]).unwrap().iter().all(|&b| b == 7));
        copies.push((*bytes, *name, secs));
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/nccl_peers.py");
    let torch = bench::python_peers("XLOG_NCCL_SCRIPT", script, &[]);
    let theirs = |case: &str| {
        *torch
            .get(case)
            .unwrap_or_else(|| panic!("no PyTorch figure for {case}"))
    };
    for (bytes, name, secs) in ours {
        let peer_s = theirs(&format!("all_reduce {bytes}")) / 1e3;
        if bytes <= 1 << 20 {
            let case = format!("end to end, {name}");
            bench::Case {
                bench: "nccl_all_reduce",
                case: &case,
                size: Some(bytes as u64),
                unit: "ns",
            }
            .row(secs * 1e9, peer_s * 1e9, peer::TORCH_NCCL);
        } else {
            // Bus bandwidth of two ranks: 2 (n - 1) / n = 1 times the algorithm's.
            let case = format!("bus bandwidth, {name}");
            bench::Case {
                bench: "nccl_all_reduce",
                case: &case,
                size: Some(bytes as u64),
                unit: "GB/s",
            }
            .row(
                bytes as f64 / secs / 1e9,
                bytes as f64 / peer_s / 1e9,
                peer::TORCH_NCCL,
            );
        }
    }
    for (bytes, name, secs) in copies {
        let peer_s = theirs(&format!("peer_copy {bytes}")) / 1e3;
        bench::Case {
            bench: "peer_copy",
            case: name,
            size: Some(bytes as u64),
            unit: "GB/s",
        }
        .row(
            bytes as f64 / secs / 1e9,
            bytes as f64 / peer_s / 1e9,
            peer::TORCH_PEER_COPY,
        );
    }
}
