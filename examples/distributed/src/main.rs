//! Several GPUs: a distributed hash join and group-by (the library,
//! [`distributed::query`]: rows partitioned by key hash and exchanged with
//! all-to-all and sends and receives, joined and summed on each GPU, the sums
//! added with an all-reduce; one host thread per GPU), then a data-parallel loop:
//! each GPU computes an update from its shard, an all-reduce adds them, and every
//! GPU applies the sum to its copy of the weights, driven from one thread.
//!
//! Both are checked against the CPU. Needs two devices: GPUs, or the simulator
//! (`XLOG_BACKEND=sim XLOG_SIM_DEVICES=2`); exits 2 with a message otherwise.
//! `join_bench` (`src/bin/join_bench.rs`) times the join on one GPU and on two.

use std::process::ExitCode;
use std::time::Instant;

use distributed::{query, spread, Rank, Sizes, Tables, GROUPS, TIMEOUT};
use xlog::nccl::{Group, ReduceOp};
use xlog::prelude::*;

/// The data-parallel loop: `w -= 0.5 * sum over ranks of (step + 1) * x_r` for
/// `steps` steps, each rank holding its shard `x_r` and a copy of `w`.
fn data_parallel(ranks: &[Rank], len: usize, steps: usize) -> xlog::Result<Vec<f32>> {
    let shard = |r: usize| -> Vec<f32> { (0..len).map(|i| ((i * 7 + r * 3) % 5) as f32).collect() };
    let shards: Vec<Vec<f32>> = (0..ranks.len()).map(shard).collect();
    let mut xs = Vec::new();
    let mut ws = Vec::new();
    for (k, host) in ranks.iter().zip(&shards) {
        xs.push(k.rt.upload_on(&k.s, host)?);
        ws.push(k.rt.alloc_zeroed_on::<f32>(&k.s, len)?);
    }
    for step in 0..steps {
        let mut grads = Vec::new();
        for (k, x) in ranks.iter().zip(&xs) {
            grads.push(xlog_kernels::scale(&k.s, x, (step + 1) as f32)?);
        }
        let mut g = Group::new();
        for (k, grad) in ranks.iter().zip(grads.iter_mut()) {
            g = g.all_reduce_in_place(&k.comm, &k.s, grad, ReduceOp::Sum);
        }
        g.launch()?;
        for ((k, grad), w) in ranks.iter().zip(&grads).zip(ws.iter_mut()) {
            xlog_kernels::axpy(&k.s, -0.5, grad, w)?;
        }
    }
    for k in ranks {
        k.comm.wait(&k.s, TIMEOUT)?;
    }
    let w0 = ws[0].download(&ranks[0].s)?;
    for (k, w) in ranks.iter().zip(&ws).skip(1) {
        assert_eq!(w.download(&k.s)?, w0, "every rank holds the same weights");
    }
    let want: Vec<f32> = (0..len)
        .map(|i| {
            let x: f32 = shards.iter().map(|h| h[i]).sum();
            let mut w = 0.0f32;
            for step in 0..steps {
                w += -0.5 * ((step + 1) as f32 * x);
            }
            w
        })
        .collect();
    assert_eq!(w0, want, "the weights match the CPU");
    Ok(w0)
}

fn main() -> ExitCode {
    let count = xlog::Device::count().unwrap_or(0);
    if count < 2 {
        eprintln!(
            "this example needs two devices (found {count}): run it on a machine with two \
             GPUs, or on the simulator with XLOG_BACKEND=sim XLOG_SIM_DEVICES=2"
        );
        return ExitCode::from(2);
    }
    match run(count.min(4) as usize) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(n: usize) -> xlog::Result<()> {
    let sim = xlog::sim::is_active();
    let rts: Vec<Runtime> = (0..n as u32)
        .map(Runtime::get)
        .collect::<xlog::Result<_>>()?;
    let ranks = Rank::all(&rts)?;
    let sizes = if sim {
        Sizes {
            orders: 1 << 16,
            customers: 1 << 12,
        }
    } else {
        Sizes {
            orders: 1 << 24,
            customers: 1 << 20,
        }
    };
    println!(
        "{n} {}, {} orders, {} customers, {GROUPS} groups",
        if sim { "simulated devices" } else { "GPUs" },
        sizes.orders,
        sizes.customers
    );
    let t = Tables::generate(sizes);
    let want = t.cpu_sums();
    let rounds = if sim { 1 } else { 5 };
    let mut times = Vec::new();
    for _ in 0..rounds {
        let start = Instant::now();
        let data = spread(&ranks, &t)?;
        let (got, _) = query(&ranks, &data, false)?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
        assert_eq!(got, want, "the distributed query matches the CPU");
    }
    times.sort_by(f64::total_cmp);
    println!(
        "join + group-by over {n} devices: matches the CPU ({} groups, total {}), median {:.2} ms \
         of {rounds} (uploads included)",
        GROUPS,
        want.iter().sum::<u64>(),
        times[times.len() / 2]
    );
    let len = if sim { 1 << 12 } else { 1 << 22 };
    data_parallel(&ranks, len, 8)?;
    println!("data-parallel loop: 8 steps over {len} weights on {n} devices, matches the CPU");
    if sim {
        for k in &ranks {
            k.s.synchronize()?;
        }
        let hazards = xlog::sim::hazard_count();
        assert_eq!(hazards, 0, "the hazard detector found unfenced accesses");
        println!("hazard detector: no unfenced access");
    }
    Ok(())
}
