//! Shared bench helpers: timing, medians and the report table.

#![allow(dead_code)]

use std::time::Instant;

/// Alternate batches of `ours` and `peer` (so drift hits both alike) and return
/// the median nanoseconds per call of each. `between` runs untimed after every batch.
pub fn compare(
    batches: usize,
    batch: usize,
    mut ours: impl FnMut(),
    mut peer: impl FnMut(),
    mut between: impl FnMut(),
) -> (f64, f64) {
    for _ in 0..batch {
        ours();
        peer();
    }
    between();
    let (mut a, mut b) = (Vec::with_capacity(batches), Vec::with_capacity(batches));
    for _ in 0..batches {
        let t = Instant::now();
        for _ in 0..batch {
            ours();
        }
        a.push(t.elapsed().as_nanos() as f64 / batch as f64);
        between();
        let t = Instant::now();
        for _ in 0..batch {
            peer();
        }
        b.push(t.elapsed().as_nanos() as f64 / batch as f64);
        between();
    }
    (median(a), median(b))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Print the device and the table header; exit 2 without a GPU.
pub fn header(title: &str) {
    let rt = xlog_runtime::Runtime::get(0).unwrap_or_else(|e| {
        eprintln!("benchmarks need a GPU: {e}");
        std::process::exit(2);
    });
    let info = rt.device().info();
    println!("## {title}");
    println!();
    println!(
        "device: {} (sm_{}{}), {}",
        info.name,
        info.compute_capability.0,
        info.compute_capability.1,
        std::env::consts::ARCH
    );
    println!();
    println!("| scenario | xlog | peer | peer name | ratio (xlog/peer) | target |");
    println!("| --- | --- | --- | --- | --- | --- |");
}

/// Print one row: xlog, the peer, and their ratio.
pub fn row(scenario: &str, xlog: f64, peer: f64, peer_name: &str, unit: &str, target: &str) {
    println!(
        "| {scenario} | {xlog:.1} {unit} | {peer:.1} {unit} | {peer_name} | {:.3} | {target} |",
        xlog / peer
    );
}
