//! The simulator's speed (bench id `simulator`), on the host CPU: no GPU runs here,
//! and nothing this bench measures is GPU coverage. It times thread executions per
//! second per worker for an elementwise kernel (`axpy`, no waits) and a reduction
//! whose threads meet at block barriers and warp shuffles (`reduce_sum::<f32>`: a chunk
//! per thread, then a block reduce), each launched through its typed launcher on a
//! simulator runtime. Each sample is one launch and its synchronisation, timed by the
//! wall clock ([`bench::per_call_ns_then`]); the figure is the median of 5 rounds
//! after one warm-up, the two kernels taking turns ([`bench::interleaved`]).
//! `XLOG_SIM_THREADS` sets the workers (default: the host's cores), and the rate is
//! divided by them.
//!
//! There is no peer: no other simulator runs these kernels, so the rows are
//! recorded as xlog's figures alone and the report shows them without a ratio.

use xlog::{LaunchConfig, Runtime};
use xlog_kernels::elementwise::axpy;
use xlog_kernels::reduce::reduce_sum;
use xlog_test_support::bench::{self, Case, XLOG};

const N: usize = 1 << 24;

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
    let axpy_cfg = axpy::config(N);
    let reduce_cfg = reduce_sum::config(N / 4);
    let mut partials = rt
        .alloc_zeroed_on::<f32>(&s, reduce_cfg.grid[0] as usize)
        .unwrap();
    let sync = || s.synchronize().unwrap();

    let [axpy_ns, reduce_ns] = bench::interleaved(
        1,
        5,
        [
            &mut bench::per_call_ns_then(
                1,
                || axpy::launch(&s, axpy_cfg, 0.5, &x, &mut y).unwrap(),
                sync,
            ),
            &mut bench::per_call_ns_then(
                1,
                || reduce_sum::launch(&s, reduce_cfg, &x, &mut partials).unwrap(),
                sync,
            ),
        ],
        || {},
    );
    let sum: f32 = partials.download(&s).unwrap().iter().sum();
    assert_eq!(sum, N as f32, "the reduction must be right to be timed");

    println!(
        "## The simulator's speed on the host CPU, no GPU ({workers} workers, {N} elements)\n"
    );
    println!("| kernel | threads | time (ms) | thread executions / s / worker |");
    println!("| --- | --- | --- | --- |");
    let row = |case: &str, cfg: LaunchConfig, ns: f64| {
        let threads = cfg.grid[0] as u64 * cfg.block[0] as u64;
        let rate = threads as f64 / (ns * 1e-9) / workers as f64;
        println!("| {case} | {threads} | {:.1} | {rate:.2e} |", ns * 1e-6);
        Case {
            bench: "simulator",
            case,
            size: Some(threads),
            unit: "M thread executions/s/worker",
        }
        .record(XLOG, rate / 1e6);
    };
    row("simulated axpy f32 (elementwise)", axpy_cfg, axpy_ns);
    row(
        "simulated reduce_sum_f32 (barriers, shuffles)",
        reduce_cfg,
        reduce_ns,
    );
}
