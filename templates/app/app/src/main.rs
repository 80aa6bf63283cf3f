//! Uploads data, runs two kernels on two streams (xlog orders them), checks the
//! result against the CPU. Without a GPU it says so and exits with status 2.

use std::process::ExitCode;

use kernels::{accumulate, affine_clamp};
use xlog::prelude::*;

/// What the kernels compute, on the CPU.
fn reference(a: f32, b: f32, x: &[f32]) -> Vec<f32> {
    x.iter()
        .map(|&v| kernels::clamp_unit(a * v + b) + v)
        .collect()
}

/// Runs both kernels over `n` elements; returns the first element (index, GPU
/// value, CPU value) where the GPU differs from the CPU, if any.
fn run(n: usize) -> xlog::Result<Option<(usize, f32, f32)>> {
    let x: Vec<f32> = (0..n).map(|i| (i % 100) as f32 / 50.0 - 1.0).collect();
    // `Runtime::get(0)`: the shared runtime of GPU 0 (budgeted, stream-ordered).
    let rt = Runtime::get(0)?;
    // `new_stream()` gives a stream of your own; `stream()` one from the shared pool.
    let (upload, compute) = (rt.new_stream()?, rt.new_stream()?);
    let xb = rt.upload_on(&upload, &x)?;
    let mut out = rt.alloc_zeroed_on::<f32>(&upload, n)?;
    // On `compute`: waits for the uploads on `upload` by itself.
    affine_clamp::launch(&compute, affine_clamp::config(n), 0.5, 0.25, &xb, &mut out)?;
    // A grid smaller than the data: the grid-stride loop covers the rest.
    accumulate::launch(&compute, LaunchConfig::for_len(n / 4 + 1), &xb, &mut out)?;
    // Back on `upload`: the download waits for both kernels.
    let got = out.download(&upload)?;
    let want = reference(0.5, 0.25, &x);
    let first_difference = got.iter().zip(&want).position(|(g, w)| g != w);
    Ok(first_difference.map(|i| (i, got[i], want[i])))
}

fn main() -> ExitCode {
    match run(1 << 20) {
        Ok(None) => {
            // XLOG_BACKEND=sim runs the same kernels on xlog's CPU simulator.
            let on = if xlog::sim::is_active() {
                "simulator"
            } else {
                "GPU"
            };
            println!("ok: the {on} result matches the CPU");
            ExitCode::SUCCESS
        }
        Ok(Some((i, gpu, cpu))) => {
            eprintln!("error: element {i} is {gpu} on the GPU, {cpu} on the CPU");
            ExitCode::FAILURE
        }
        // No driver, or a driver that sees no device: say what is needed, and exit
        // with status 2.
        Err(e) if e.is_no_gpu() => {
            eprintln!("error: this program needs an NVIDIA GPU: {e}");
            eprintln!("hint: run it on xlog's CPU simulator instead: XLOG_BACKEND=sim cargo run");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_reference_clamps_then_adds() {
        assert_eq!(super::reference(2.0, 0.0, &[1.0, -1.0]), [2.0, -1.0]);
    }
}
