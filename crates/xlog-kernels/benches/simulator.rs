//! The simulator's speed (bench id `simulator`), on this machine's CPU, no GPU:
//! thread executions per second per worker for an elementwise kernel (`axpy`, no
//! waits) and a reduction whose threads meet at block barriers and warp shuffles
//! (`reduce_sum_f32`: a chunk per thread, then a block reduce), each launched through
//! its typed launcher on a simulator runtime. Median of 5 timed launches (launch +
//! synchronise) after one warm-up; `XLOG_SIM_THREADS` sets the workers (default:
//! the host's cores), and the rate is divided by them.

use std::time::Instant;

use xlog::{LaunchConfig, Runtime, Stream};
use xlog_kernels::elementwise::f32::axpy;
use xlog_kernels::reduce::reduce_sum_f32;

const N: usize = 1 << 24;

fn median_s(s: &Stream, mut launch: impl FnMut()) -> f64 {
    launch();
    s.synchronize().unwrap();
    let mut times: Vec<f64> = (0..5)
        .map(|_| {
            let t = Instant::now();
            launch();
            s.synchronize().unwrap();
            t.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[2]
}

fn main() {
    let rt = Runtime::builder(0)
        .simulator()
        .build()
        .expect("the simulator runs on any machine");
    let workers: usize = std::env::var("XLOG_SIM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let s = rt.new_stream().unwrap();
    let x = rt.upload_on(&s, &vec![1.0f32; N]).unwrap();
    let mut y = rt.upload_on(&s, &vec![2.0f32; N]).unwrap();

    println!("## The simulator's speed ({workers} workers, {N} elements)\n");
    println!("| kernel | threads | time (ms) | thread executions / s / worker |");
    println!("| --- | --- | --- | --- |");
    let row = |name: &str, cfg: LaunchConfig, secs: f64| {
        let threads = cfg.grid[0] as f64 * cfg.block[0] as f64;
        println!(
            "| {name} | {threads} | {:.1} | {:.2e} |",
            secs * 1e3,
            threads / secs / workers as f64
        );
    };

    let cfg = axpy::config(N);
    let t = median_s(&s, || axpy::launch(&s, cfg, 0.5, &x, &mut y).unwrap());
    row("axpy f32 (elementwise)", cfg, t);

    let cfg = reduce_sum_f32::config(N / 4);
    let mut partials = rt.alloc_zeroed_on::<f32>(&s, cfg.grid[0] as usize).unwrap();
    let t = median_s(&s, || {
        reduce_sum_f32::launch(&s, cfg, &x, &mut partials).unwrap()
    });
    row("reduce_sum_f32 (barriers, shuffles)", cfg, t);
    let sum: f32 = partials.download(&s).unwrap().iter().sum();
    assert_eq!(sum, N as f32, "the reduction must be right to be timed");
}
