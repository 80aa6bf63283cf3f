//! Runs a Rust saxpy kernel on the GPU through its generated launcher and checks
//! the result against the CPU. On a machine without a GPU it says so and runs the
//! same kernels on xlog's CPU simulator; `XLOG_BACKEND=gpu` demands a GPU (exit
//! status 2 without one), `XLOG_BACKEND=sim` the simulator.
//!
//! Usage: `saxpy [ELEMENTS]` (default 2^24).

use std::process::ExitCode;
use std::time::Instant;

use saxpy_kernels::{saxpy, square};
use xlog::prelude::*;

/// Runs the example over `n` elements; returns how many results differ from the
/// CPU reference.
fn run(n: usize) -> xlog::Result<usize> {
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5).collect();
    let y0: Vec<f32> = (0..n).map(|i| (i % 777) as f32).collect();
    let a = 2.0f32;

    // The GPU, or the simulator on a machine without one (unless XLOG_BACKEND chose).
    let (rt, fell_back) = Runtime::get_or_simulator(0)?;
    if let Some(why) = fell_back {
        let what = match why {
            xlog::Error::NoDriver => "no NVIDIA driver",
            _ => "the NVIDIA driver sees no GPU",
        };
        println!("no GPU here ({what}): running on xlog's CPU simulator instead");
        println!(
            "(XLOG_BACKEND=gpu demands a GPU; docs/simulator.md says what the simulator checks)"
        );
    }
    let info = rt.device().info();
    println!(
        "device: {} (sm_{}{})",
        info.name, info.compute_capability.0, info.compute_capability.1
    );

    let (s1, s2) = (rt.new_stream()?, rt.new_stream()?);
    let xb = rt.upload_on(&s1, &x)?;
    let mut yb = rt.upload_on(&s1, &y0)?;
    let t = Instant::now();
    // Launched on s2: xlog makes s2 wait for the uploads queued on s1.
    saxpy::launch(&s2, LaunchConfig::for_len(n), a, &xb, &mut yb)?;
    let mut sq = rt.alloc_zeroed_on::<f32>(&s1, n)?;
    // Back on s1: waits for the saxpy's write to y on s2.
    square::launch(&s1, LaunchConfig::for_len(n), &yb, &mut sq)?;
    let got_y = yb.download(&s1)?;
    let got_sq = sq.download(&s1)?;
    let elapsed = t.elapsed();

    let mut bad = 0usize;
    for i in 0..n {
        let want = a * x[i] + y0[i];
        if got_y[i] != want || got_sq[i] != want * want {
            if bad < 5 {
                eprintln!(
                    "mismatch at {i}: y {} (want {want}), y² {} (want {})",
                    got_y[i],
                    got_sq[i],
                    want * want
                );
            }
            bad += 1;
        }
    }
    println!(
        "saxpy + square over {n} elements on two streams: {} mismatches, {:.2} ms including downloads",
        bad,
        elapsed.as_secs_f64() * 1e3
    );
    println!(
        "outstanding bytes: {} (stack: {})",
        rt.bytes_outstanding(),
        rt.describe_resource()
    );
    Ok(bad)
}

fn main() -> ExitCode {
    let n = match std::env::args().nth(1).map(|a| a.parse::<usize>()) {
        None => 1 << 24,
        Some(Ok(n)) => n,
        Some(Err(_)) => {
            eprintln!("usage: saxpy [ELEMENTS]");
            return ExitCode::from(2);
        }
    };
    match run(n) {
        Ok(0) => {
            println!(
                "ok: the {} result matches the CPU",
                if xlog::sim::is_active() {
                    "simulator"
                } else {
                    "GPU"
                }
            );
            ExitCode::SUCCESS
        }
        Ok(bad) => {
            eprintln!("error: {bad} elements differ from the CPU reference");
            ExitCode::FAILURE
        }
        Err(e) if e.is_no_gpu() => {
            // Only with XLOG_BACKEND set to a GPU backend: otherwise the example
            // falls back to the simulator.
            eprintln!("error: this example needs an NVIDIA GPU: {e}");
            eprintln!(
                "hint: without XLOG_BACKEND (or with XLOG_BACKEND=sim) it runs on xlog's CPU simulator"
            );
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
