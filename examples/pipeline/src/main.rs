//! The pattern that motivated xlog: a producer writes a column on stream A; two
//! consumers read it on B and C; an overwriter modifies it on D; a download reads
//! it on E. Every edge between streams is fenced by the generated launchers; the
//! program only says which stream each step runs on. Checked against the CPU on
//! every round.

use std::process::ExitCode;

use pipeline_kernels::{flip, mix, modulo, produce, shift};
use xlog::prelude::*;

fn round(rt: &Runtime, s: &[Stream; 5], n: usize, seed: u32) -> xlog::Result<usize> {
    let [a, b, c, d, e] = s;
    let cfg = LaunchConfig::for_len(n);
    let mut col = rt.alloc_zeroed_on::<u32>(a, n)?;
    let mut m = rt.alloc_zeroed_on::<u32>(b, n)?;
    let mut h = rt.alloc_zeroed_on::<u32>(c, n)?;

    produce::launch(a, cfg, &mut col, seed)?; // A writes
    modulo::launch(b, cfg, &col, &mut m)?; // B waits for A, reads
    shift::launch(c, cfg, &col, &mut h, 7)?; // C waits for A, reads
    flip::launch(d, flip::config(n), &mut col, 0xFFFF_0000)?; // D waits for A, B and C
    let got_col = col.download(e)?; // E waits for D
    let (got_m, got_h) = (m.download(e)?, h.download(e)?);

    let mut bad = 0;
    for i in 0..n {
        let v = mix(i as u32, seed);
        bad += usize::from(got_col[i] != v ^ 0xFFFF_0000);
        bad += usize::from(got_m[i] != v % 1000);
        bad += usize::from(got_h[i] != v >> 7);
    }
    Ok(bad)
}

/// Runs the example; returns how many results differ from the CPU reference.
fn run() -> xlog::Result<usize> {
    let rt = Runtime::get(0)?;
    let info = rt.device().info();
    println!(
        "device: {} (sm_{}{})",
        info.name, info.compute_capability.0, info.compute_capability.1
    );
    let streams = [
        rt.new_stream()?,
        rt.new_stream()?,
        rt.new_stream()?,
        rt.new_stream()?,
        rt.new_stream()?,
    ];
    let mut total_bad = 0;
    for r in 0..20u32 {
        let n = 1 << (12 + r % 10);
        total_bad += round(&rt, &streams, n, r.wrapping_mul(2654435761))?;
    }
    rt.reap()?;
    println!(
        "20 rounds on 5 streams: {total_bad} mismatches; {} bytes outstanding after reap",
        rt.bytes_outstanding()
    );
    Ok(total_bad)
}

fn main() -> ExitCode {
    match run() {
        Ok(0) => {
            println!("ok: every round matches the CPU");
            ExitCode::SUCCESS
        }
        Ok(bad) => {
            eprintln!("error: {bad} values differ from the CPU reference");
            ExitCode::FAILURE
        }
        Err(e) if e.is_no_gpu() => {
            eprintln!("error: this example needs an NVIDIA GPU: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
