//! The benches' timer and results table.
//!
//! Every bench times its contenders with [`interleaved`]: untimed warm-up rounds,
//! then rounds that sample each contender once in turn, so clock and thermal drift
//! hit all of them alike; each contender's figure is the median of its samples.
//! [`compare`] is the host-cost case (wall-clock batches of calls, xlog against one
//! peer); a bench that times on the device passes its own sampler (CUDA events).
//!
//! With the `gpu` feature, `header` and `runtime_or_exit` open device 0 and
//! print the report's heading.

use std::time::Instant;

/// The median cost of each contender, sampled in `rounds` interleaved rounds after
/// `warmup` untimed ones.
///
/// A contender is a sampler: it runs the work being measured and returns its cost
/// in the unit it measures (nanoseconds per call, milliseconds, ...). A round calls
/// every sampler once, in order, and runs `between` (untimed) after each call.
/// Panics if `rounds` is zero.
///
/// # Example
///
/// ```
/// use xlog_test_support::bench::interleaved;
///
/// let (mut a, mut b) = (0.0, 10.0);
/// let [ma, mb] = interleaved(1, 5, [&mut || { a += 1.0; a }, &mut || { b += 1.0; b }], || {});
/// assert_eq!((ma, mb), (4.0, 14.0)); // samples 2..=6 and 12..=16, after a warm-up
/// ```
pub fn interleaved<const N: usize>(
    warmup: usize,
    rounds: usize,
    mut contenders: [&mut dyn FnMut() -> f64; N],
    mut between: impl FnMut(),
) -> [f64; N] {
    assert!(rounds > 0, "a timing needs at least one round");
    for _ in 0..warmup {
        for sample in contenders.iter_mut() {
            sample();
            between();
        }
    }
    let mut samples: [Vec<f64>; N] = std::array::from_fn(|_| Vec::with_capacity(rounds));
    for _ in 0..rounds {
        for (sample, taken) in contenders.iter_mut().zip(&mut samples) {
            taken.push(sample());
            between();
        }
    }
    samples.map(median)
}

/// Median nanoseconds per call of `ours` and of `peer`, each timed by the wall clock
/// over batches of `batch` calls, in `batches` interleaved rounds after one warm-up
/// round. `between` runs untimed after every batch (to synchronise, reap, ...).
///
/// # Example
///
/// ```
/// use xlog_test_support::bench::compare;
///
/// let (mut x, mut y) = (0u64, 0u64);
/// let (ours, peer) = compare(3, 100, || x += 1, || y += 2, || {});
/// assert!(ours >= 0.0 && peer >= 0.0);
/// assert_eq!((x, y), (400, 800)); // warm-up and three batches of 100
/// ```
pub fn compare(
    batches: usize,
    batch: usize,
    ours: impl FnMut(),
    peer: impl FnMut(),
    between: impl FnMut(),
) -> (f64, f64) {
    let [ours, peer] = interleaved(
        1,
        batches,
        [&mut per_call_ns(batch, ours), &mut per_call_ns(batch, peer)],
        between,
    );
    (ours, peer)
}

/// A sampler: nanoseconds per call of `f` over a batch of `batch` calls. The batch
/// loop is compiled for `f` itself, so no dynamic call is timed.
fn per_call_ns(batch: usize, mut f: impl FnMut()) -> impl FnMut() -> f64 {
    move || {
        let t = Instant::now();
        for _ in 0..batch {
            f();
        }
        t.elapsed().as_nanos() as f64 / batch as f64
    }
}

/// The median of `v` (the upper one of an even count). Panics if `v` is empty.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Prints one row of the host-cost table: xlog, the peer, and their ratio.
pub fn row(scenario: &str, xlog: f64, peer: f64, peer_name: &str, unit: &str, target: &str) {
    println!(
        "| {scenario} | {xlog:.1} {unit} | {peer:.1} {unit} | {peer_name} | {:.3} | {target} |",
        xlog / peer
    );
}

/// Device 0's runtime; without one, says why and exits with status 2 (a bench
/// cannot pass without a GPU).
#[cfg(feature = "gpu")]
pub fn runtime_or_exit() -> xlog_runtime::Runtime {
    xlog_runtime::Runtime::get(0).unwrap_or_else(|e| {
        eprintln!("benchmarks need a GPU: {e}");
        std::process::exit(2);
    })
}

/// Prints the title, the device and the host-cost table's header ([`row`] prints
/// its rows); exits with status 2 without a GPU.
#[cfg(feature = "gpu")]
pub fn header(title: &str) {
    let rt = runtime_or_exit();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_takes_the_middle_sample() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 3.0);
    }

    #[test]
    fn rounds_interleave_and_warm_up_first() {
        let log = std::cell::RefCell::new(Vec::new());
        let mut a = || {
            log.borrow_mut().push('a');
            1.0
        };
        let mut b = || {
            log.borrow_mut().push('b');
            2.0
        };
        let got = interleaved(1, 2, [&mut a, &mut b], || log.borrow_mut().push('|'));
        assert_eq!(got, [1.0, 2.0]);
        assert_eq!(log.into_inner().iter().collect::<String>(), "a|b|a|b|a|b|");
    }
}
