//! GPU suite of the kernel library (opt-in: `--features gpu-tests`; every test
//! fails without a device). Each kernel runs against a CPU reference on random
//! data, with inputs produced on other streams so the generated launchers' fences
//! are exercised too.

use xlog::{Error, Runtime, Stream};
use xlog_test_support::{gpu_runtime, within_test_cap as within_cap, Rng};

trait Sample: Copy + PartialEq + std::fmt::Debug + xlog_kernels::Element {
    fn sample(r: &mut Rng) -> Self;
}
impl Sample for f32 {
    fn sample(r: &mut Rng) -> Self {
        (r.next_u64() % 20_001) as f32 / 100.0 - 100.0
    }
}
impl Sample for f64 {
    fn sample(r: &mut Rng) -> Self {
        (r.next_u64() % 2_000_001) as f64 / 1000.0 - 1000.0
    }
}
impl Sample for i32 {
    fn sample(r: &mut Rng) -> Self {
        r.next_u64() as i32
    }
}
impl Sample for u32 {
    fn sample(r: &mut Rng) -> Self {
        r.next_u64() as u32
    }
}
impl Sample for u64 {
    fn sample(r: &mut Rng) -> Self {
        r.next_u64()
    }
}

fn data<T: Sample>(seed: u64, n: usize) -> Vec<T> {
    let mut r = Rng::from_state(seed | 1);
    (0..n).map(|_| T::sample(&mut r)).collect()
}

/// Inputs uploaded on a producer stream, ops on a consumer stream.
fn streams(rt: &Runtime) -> (Stream, Stream) {
    (rt.new_stream().unwrap(), rt.new_stream().unwrap())
}

macro_rules! suite {
    ($m:ident, $t:ty, add = $add:expr, sub = $sub:expr, mul = $mul:expr, min = $min:expr, max = $max:expr) => {
        mod $m {
            use super::*;
            const N: usize = 100_003;

            #[test]
            fn binary_ops_match_the_cpu() {
                let rt = gpu_runtime();
                let (p, c) = streams(&rt);
                let (x, y) = (data::<$t>(1, N), data::<$t>(2, N));
                let (xb, yb) = (rt.upload_on(&p, &x).unwrap(), rt.upload_on(&p, &y).unwrap());
                let cases: [(&str, fn($t, $t) -> $t, xlog_kernels::Binary); 5] = [
                    ("add", $add, xlog_kernels::Binary::Add),
                    ("sub", $sub, xlog_kernels::Binary::Sub),
                    ("mul", $mul, xlog_kernels::Binary::Mul),
                    ("min", $min, xlog_kernels::Binary::Min),
                    ("max", $max, xlog_kernels::Binary::Max),
                ];
                for (name, f, op) in cases {
                    let got = xlog_kernels::binary(&c, op, &xb, &yb)
                        .unwrap()
                        .download(&c)
                        .unwrap();
                    for i in 0..N {
                        assert_eq!(got[i], f(x[i], y[i]), "{name} at {i}");
                    }
                }
            }

            #[test]
            fn unary_ops_match_the_cpu() {
                let rt = gpu_runtime();
                let (p, c) = streams(&rt);
                let x = data::<$t>(3, N);
                let xb = rt.upload_on(&p, &x).unwrap();
                let a: $t = data::<$t>(4, 1)[0];
                assert_eq!(
                    xlog_kernels::copy(&c, &xb).unwrap().download(&c).unwrap(),
                    x
                );
                let f = xlog_kernels::fill(&c, N, a).unwrap().download(&c).unwrap();
                assert!(f.iter().all(|&v| v == a));
                let s = xlog_kernels::scale(&c, &xb, a)
                    .unwrap()
                    .download(&c)
                    .unwrap();
                let mul: fn($t, $t) -> $t = $mul;
                let add: fn($t, $t) -> $t = $add;
                for i in 0..N {
                    assert_eq!(s[i], mul(a, x[i]), "scale at {i}");
                }
                let c32 = xlog_kernels::cast_f32(&c, &xb)
                    .unwrap()
                    .download(&c)
                    .unwrap();
                let c64 = xlog_kernels::cast_f64(&c, &xb)
                    .unwrap()
                    .download(&c)
                    .unwrap();
                for i in 0..N {
                    assert_eq!(c32[i], x[i] as f32, "cast_f32 at {i}");
                    assert_eq!(c64[i], x[i] as f64, "cast_f64 at {i}");
                }
                // axpy in place, on a view of y, launched on a third stream.
                let y = data::<$t>(5, N);
                let mut yb = rt.upload_on(&p, &y).unwrap();
                let third = rt.new_stream().unwrap();
                xlog_kernels::axpy(&third, a, &xb.slice(10..N), &mut yb.slice_mut(0..N - 10))
                    .unwrap();
                let got = yb.download(&c).unwrap();
                for i in 0..N - 10 {
                    assert_eq!(got[i], add(mul(a, x[i + 10]), y[i]), "axpy at {i}");
                }
                assert_eq!(got[N - 10..], y[N - 10..]);
            }
        }
    };
}

suite!(
    f32s,
    f32,
    add = |a, b| a + b,
    sub = |a, b| a - b,
    mul = |a, b| a * b,
    min = |a: f32, b| a.min(b),
    max = |a: f32, b| a.max(b)
);
suite!(
    f64s,
    f64,
    add = |a, b| a + b,
    sub = |a, b| a - b,
    mul = |a, b| a * b,
    min = |a: f64, b| a.min(b),
    max = |a: f64, b| a.max(b)
);
suite!(
    i32s,
    i32,
    add = |a: i32, b| a.wrapping_add(b),
    sub = |a: i32, b| a.wrapping_sub(b),
    mul = |a: i32, b| a.wrapping_mul(b),
    min = |a: i32, b| a.min(b),
    max = |a: i32, b| a.max(b)
);
suite!(
    u32s,
    u32,
    add = |a: u32, b| a.wrapping_add(b),
    sub = |a: u32, b| a.wrapping_sub(b),
    mul = |a: u32, b| a.wrapping_mul(b),
    min = |a: u32, b| a.min(b),
    max = |a: u32, b| a.max(b)
);
suite!(
    u64s,
    u64,
    add = |a: u64, b| a.wrapping_add(b),
    sub = |a: u64, b| a.wrapping_sub(b),
    mul = |a: u64, b| a.wrapping_mul(b),
    min = |a: u64, b| a.min(b),
    max = |a: u64, b| a.max(b)
);

#[test]
fn empty_inputs_give_empty_outputs_without_launching() {
    let rt = gpu_runtime();
    let s = rt.stream().unwrap();
    let e = rt.upload_on::<f32>(&s, &[]).unwrap();
    assert!(xlog_kernels::add(&s, &e, &e).unwrap().is_empty());
    assert!(xlog_kernels::fill(&s, 0, 1u32).unwrap().is_empty());
}

/// Every public function of the library takes empty inputs: a launch of zero
/// blocks is refused (`docs/guide.md`, "Empty inputs"), so each one must skip such
/// launches, and returns empty results, or the identity where a result has one
/// element (a reduction), or zeros (a histogram's bins).
#[test]
fn every_library_function_accepts_empty_inputs() {
    use xlog_kernels::{compact, gather, histogram, join, reduce, scan, segmented, set, sort};
    let rt = gpu_runtime();
    let s = rt.stream().unwrap();
    let f = rt.upload_on::<f32>(&s, &[]).unwrap();
    let u = rt.upload_on::<u32>(&s, &[]).unwrap();
    let u8s = rt.upload_on::<u8>(&s, &[]).unwrap();
    let u64s = rt.upload_on::<u64>(&s, &[]).unwrap();
    let empty = |len: usize| assert_eq!(len, 0);

    // The elementwise kernels and the single-pass scans and transposes.
    empty(xlog_kernels::copy(&s, &f).unwrap().len());
    empty(xlog_kernels::cast_f32(&s, &u).unwrap().len());
    empty(xlog_kernels::cast_f64(&s, &f).unwrap().len());
    empty(xlog_kernels::scale(&s, &f, 2.0).unwrap().len());
    let mut y = rt.upload_on::<f32>(&s, &[]).unwrap();
    xlog_kernels::axpy(&s, 2.0, &f, &mut y).unwrap();
    for op in [
        xlog_kernels::sub::<f32>,
        xlog_kernels::mul::<f32>,
        xlog_kernels::min::<f32>,
        xlog_kernels::max::<f32>,
    ] {
        empty(op(&s, &f, &f).unwrap().len());
    }
    empty(xlog_kernels::scan_u32(&s, &u).unwrap().len());
    empty(xlog_kernels::max_scan_u32(&s, &u).unwrap().len());
    empty(xlog_kernels::scan_f32(&s, &f).unwrap().len());
    empty(
        xlog_kernels::transpose_matrix_f32(&s, &f, 0, 0)
            .unwrap()
            .len(),
    );

    // The query-engine library.
    assert_eq!(reduce::sum(&s, &u).unwrap().download(&s).unwrap(), [0]);
    assert_eq!(
        reduce::min(&s, &u).unwrap().download(&s).unwrap(),
        [u32::MAX]
    );
    assert_eq!(reduce::max(&s, &u).unwrap().download(&s).unwrap(), [0]);
    assert_eq!(
        reduce::sum_widened(&s, &u8s).unwrap().download(&s).unwrap(),
        [0u64]
    );
    assert_eq!(reduce::min(&s, &u8s).unwrap().download(&s).unwrap(), [255]);
    assert_eq!(reduce::max(&s, &u8s).unwrap().download(&s).unwrap(), [0]);
    empty(scan::inclusive_sum(&s, &u).unwrap().len());
    empty(scan::exclusive_sum(&s, &u).unwrap().len());
    empty(gather::gather(&s, &f, &u).unwrap().len());
    let mut out = rt.upload_on::<f32>(&s, &[]).unwrap();
    gather::scatter(&s, &f, &u, &mut out).unwrap();
    assert_eq!(
        histogram::even(&s, &f, 0.0, 1.0, 4)
            .unwrap()
            .download(&s)
            .unwrap(),
        [0; 4]
    );
    assert_eq!(
        histogram::counts(&s, &u, 4).unwrap().download(&s).unwrap(),
        [0; 4]
    );
    empty(compact::select_flagged(&s, &u, &u8s).unwrap().len());
    let mut out = rt.upload_on::<u32>(&s, &[]).unwrap();
    let count = compact::select_flagged_into(&s, &u, &u8s, &mut out).unwrap();
    assert_eq!(count.download(&s).unwrap(), [0]);
    empty(
        compact::partition_flagged(&s, &u, &u8s)
            .unwrap()
            .values
            .len(),
    );
    empty(compact::unique_counts(&s, &u).unwrap().values.len());
    empty(
        segmented::segmented_reduce::<u32, segmented::Sum>(&s, &u, &u64s)
            .unwrap()
            .len(),
    );
    empty(
        segmented::reduce_by_key::<u32, u32, segmented::Sum>(&s, &u, &u)
            .unwrap()
            .keys
            .len(),
    );
    let mut keys = rt.upload_on::<u32>(&s, &[]).unwrap();
    let mut values = rt.upload_on::<u32>(&s, &[]).unwrap();
    sort::sort_keys(&s, &mut keys, sort::Order::Ascending).unwrap();
    sort::sort_keys_low_bits(&s, &mut keys, sort::Order::Ascending, 8).unwrap();
    sort::sort_pairs(&s, &mut keys, &mut values, sort::Order::Descending).unwrap();
    empty(sort::sorted(&s, &u, sort::Order::Ascending).unwrap().len());
    let (k, i) = sort::sort_with_indices::<u32, u32>(&s, &u, sort::Order::Ascending).unwrap();
    empty(k.len() + i.len());
    empty(set::merge(&s, &u, &u).unwrap().len());
    empty(set::difference(&s, &u, &u).unwrap().len());
    empty(set::intersection(&s, &u, &u).unwrap().len());
    empty(join::inner_join(&s, &u, &u).unwrap().build_rows.len());
    empty(join::semi_join(&s, &u, &u).unwrap().len());
    empty(join::anti_join(&s, &u, &u).unwrap().len());
    let table = join::JoinTable::build(&s, &u).unwrap();
    empty(table.inner_join(&s, &u).unwrap().probe_rows.len());
    s.synchronize().unwrap();
}

#[test]
fn mismatched_lengths_are_refused() {
    let rt = gpu_runtime();
    let s = rt.stream().unwrap();
    let a = rt.upload_on(&s, &[1.0f32; 4]).unwrap();
    let b = rt.upload_on(&s, &[1.0f32; 5]).unwrap();
    let e = xlog_kernels::add(&s, &a, &b).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
    assert!(e.to_string().contains("4 and 5"), "{e}");
}

#[test]
fn typed_launch_takes_views_of_one_buffer_and_fences_across_streams() {
    use xlog::LaunchConfig;
    use xlog_kernels::elementwise as k;
    let rt = gpu_runtime();
    let (p, c) = streams(&rt);
    let host = data::<f32>(9, 2_000);
    let both = rt.upload_on(&p, &host).unwrap();
    let mut out = rt.alloc_zeroed_on::<f32>(&p, 3_000).unwrap();
    // Two read views of one buffer (one use after dedup) into a mutable view.
    k::add::launch(
        &c,
        LaunchConfig::for_len(1_000),
        &both.slice(..1_000),
        &both.slice(1_000..),
        &mut out.slice_mut(500..1_500),
    )
    .unwrap();
    let got = out.download(&p).unwrap();
    for i in 0..1_000 {
        assert_eq!(got[500 + i], host[i] + host[1_000 + i], "at {i}");
    }
    assert!(got[..500].iter().chain(&got[1_500..]).all(|&v| v == 0.0));
}

#[test]
fn typed_launch_refuses_invalid_configurations_by_kernel_name() {
    use xlog::LaunchConfig;
    let rt = gpu_runtime();
    let s = rt.stream().unwrap();
    let x = rt.upload_on(&s, &[1.0f32; 8]).unwrap();
    let mut out = rt.alloc_zeroed_on::<f32>(&s, 8).unwrap();
    let e = xlog_kernels::elementwise::copy::launch(
        &s,
        LaunchConfig::new([1, 1, 1], [2048, 1, 1]),
        &x,
        &mut out,
    )
    .unwrap_err();
    assert!(
        matches!(e, Error::InvalidLaunch { ref kernel, .. } if kernel == "copy__f32"),
        "{e}"
    );
    let e = xlog_kernels::elementwise::copy::launch(&s, LaunchConfig::for_len(0), &x, &mut out)
        .unwrap_err();
    assert!(e.to_string().contains("grid dimension x is 0"), "{e}");
    assert!(
        out.download(&s).unwrap().iter().all(|&v| v == 0.0),
        "nothing ran"
    );
}

/// The vectorised axpy (`per chunk(4)` writes) against a CPU model, on awkward
/// sizes and view offsets.
mod vector_chunks {
    use super::*;
    use xlog::LaunchConfig;

    #[test]
    fn vectorised_axpy_matches_the_cpu_on_awkward_sizes_and_offsets() {
        let rt = gpu_runtime();
        let s = rt.stream().unwrap();
        use xlog_kernels::elementwise::{axpy_vec, axpy_vec2};
        for n in [0usize, 1, 3, 4, 5, 255, 256, 257, 100_003, (1 << 24) + 7]
            .into_iter()
            .filter(|&n| within_cap(n))
        {
            for offset in [0usize, 1, 2] {
                let total = n + offset;
                let (x, y) = (
                    data::<f32>(n as u64, total),
                    data::<f32>(n as u64 + 1, total),
                );
                let xb = rt.upload_on(&s, &x).unwrap();
                let mut yb = rt.upload_on(&s, &y).unwrap();
                let a = 1.5f32;
                if n > 0 {
                    axpy_vec::launch(
                        &s,
                        LaunchConfig::for_len(n.div_ceil(4)),
                        a,
                        &xb.slice(offset..),
                        &mut yb.slice_mut(offset..),
                    )
                    .unwrap();
                }
                let got = yb.download(&s).unwrap();
                for i in 0..total {
                    let want = if i < offset { y[i] } else { a * x[i] + y[i] };
                    assert_eq!(got[i], want, "n = {n}, offset {offset}, at {i}");
                }
            }
            // x shorter than y: the rest of y is untouched; f64 chunks of two.
            let (x, y) = (data::<f64>(n as u64, n / 2), data::<f64>(n as u64 + 2, n));
            let xb = rt.upload_on(&s, &x).unwrap();
            let mut yb = rt.upload_on(&s, &y).unwrap();
            if n > 0 {
                axpy_vec2::launch(&s, LaunchConfig::for_len(n.div_ceil(2)), -0.5, &xb, &mut yb)
                    .unwrap();
            }
            let got = yb.download(&s).unwrap();
            for i in 0..n {
                let want = if i < n / 2 { -0.5 * x[i] + y[i] } else { y[i] };
                assert_eq!(got[i], want, "f64 n = {n}, at {i}");
            }
        }
    }
}

/// The single-pass kernels against CPU models: scans with decoupled look-back (one
/// block per tile, and fewer blocks than tiles, which then loop), and tiled
/// transposes on awkward shapes.
mod single_pass {
    use super::*;
    use xlog::device::lookback::status_words;
    use xlog::LaunchConfig;
    use xlog_kernels::single_pass as k;

    /// Empty, one, a block ± 1, a tile (1024 elements) ± 1, odd, a prime, 2^24 + 7.
    const SIZES: [usize; 11] = [
        0,
        1,
        255,
        256,
        257,
        1023,
        1024,
        1025,
        77_777,
        100_003,
        (1 << 24) + 7,
    ];

    fn sizes() -> impl Iterator<Item = usize> {
        SIZES.into_iter().filter(|&n| within_cap(n))
    }

    #[test]
    fn u32_and_u64_scans_match_the_cpu() {
        let rt = gpu_runtime();
        let (p, c) = streams(&rt);
        for n in sizes() {
            let x = data::<u32>(n as u64 + 31, n);
            let xb = rt.upload_on(&p, &x).unwrap();
            let got = xlog_kernels::scan_u32(&c, &xb)
                .unwrap()
                .download(&c)
                .unwrap();
            assert_inclusive_scan(
                &got,
                &x,
                0u32,
                |a, b| a.wrapping_add(b),
                &format!("u32 scan, n = {n}"),
            );
            let got = xlog_kernels::max_scan_u32(&c, &xb)
                .unwrap()
                .download(&c)
                .unwrap();
            assert_inclusive_scan(
                &got,
                &x,
                0u32,
                |a, b| a.max(b),
                &format!("max scan, n = {n}"),
            );
            let y = data::<u64>(n as u64 + 32, n);
            let yb = rt.upload_on(&p, &y).unwrap();
            let got = xlog_kernels::scan_u64(&c, &yb)
                .unwrap()
                .download(&c)
                .unwrap();
            assert_inclusive_scan(
                &got,
                &y,
                0u64,
                |a, b| a.wrapping_add(b),
                &format!("u64 scan, n = {n}"),
            );
        }
    }

    /// Asserts that `got` is the inclusive scan of `x` under `op` starting from
    /// `init`, naming the first difference (`what` says which case).
    fn assert_inclusive_scan<T: PartialEq + Copy>(
        got: &[T],
        x: &[T],
        init: T,
        op: impl Fn(T, T) -> T,
        what: &str,
    ) {
        let mut acc = init;
        let want: Vec<T> = x
            .iter()
            .map(|&v| {
                acc = op(acc, v);
                acc
            })
            .collect();
        assert!(
            got == want,
            "{what}: first difference at {:?}",
            first_diff(got, &want)
        );
    }

    fn first_diff<T: PartialEq>(a: &[T], b: &[T]) -> Option<usize> {
        if a.len() != b.len() {
            return Some(a.len().min(b.len()));
        }
        a.iter().zip(b).position(|(x, y)| x != y)
    }

    #[test]
    fn f32_scan_matches_the_cpu_within_rounding() {
        let rt = gpu_runtime();
        let s = rt.stream().unwrap();
        for n in sizes() {
            let x = data::<f32>(n as u64 + 33, n);
            let xb = rt.upload_on(&s, &x).unwrap();
            let got = xlog_kernels::scan_f32(&s, &xb)
                .unwrap()
                .download(&s)
                .unwrap();
            assert_eq!(got.len(), n);
            let (mut acc, mut mag) = (0f64, 0f64);
            for (i, (&v, &g)) in x.iter().zip(&got).enumerate() {
                acc += v as f64;
                mag += v.abs() as f64;
                assert!(
                    (g as f64 - acc).abs() <= 1e-5 * (mag + 1.0),
                    "n = {n}, at {i}: {g} vs {acc}"
                );
            }
        }
    }

    #[test]
    fn fewer_blocks_than_tiles_take_the_remaining_tiles_in_turn() {
        let rt = gpu_runtime();
        let s = rt.stream().unwrap();
        for (n, blocks) in [
            (100_003usize, 1u32),
            (100_003, 3),
            (5_000, 64),
            (1 << 20, 7),
        ] {
            if !within_cap(n) {
                continue;
            }
            let x = u32_ramp(n);
            let xb = rt.upload_on(&s, &x).unwrap();
            let mut out = rt.upload_on(&s, &vec![7u32; n]).unwrap();
            let tiles = n.div_ceil(1024);
            // Dirty status words: the launcher must zero them.
            let mut status = rt
                .upload_on(&s, &vec![u64::MAX; status_words(tiles)])
                .unwrap();
            let cfg = LaunchConfig::new([blocks, 1, 1], [256, 1, 1]);
            for _ in 0..2 {
                k::inclusive_scan_u32::launch(&s, cfg, &xb, &mut out, &mut status).unwrap();
                let got = out.download(&s).unwrap();
                assert_inclusive_scan(
                    &got,
                    &x,
                    0u32,
                    |a, b| a.wrapping_add(b),
                    &format!("n = {n}, {blocks} blocks"),
                );
            }
        }
    }

    fn u32_ramp(n: usize) -> Vec<u32> {
        (0..n as u32)
            .map(|i| i.wrapping_mul(2_654_435_761) >> 7)
            .collect()
    }

    #[test]
    fn a_status_buffer_too_small_stops_early_without_writing_past_it() {
        let rt = gpu_runtime();
        let s = rt.stream().unwrap();
        let n = 10_000;
        let x = u32_ramp(n);
        let xb = rt.upload_on(&s, &x).unwrap();
        let mut out = rt.upload_on(&s, &vec![7u32; n]).unwrap();
        // Room for 3 tiles of 1024: the rest of `out` stays untouched.
        let mut status = rt.alloc_zeroed_on::<u64>(&s, status_words(3)).unwrap();
        let cfg = LaunchConfig::new([10, 1, 1], [256, 1, 1]);
        k::inclusive_scan_u32::launch(&s, cfg, &xb, &mut out, &mut status).unwrap();
        let got = out.download(&s).unwrap();
        let mut acc = 0u32;
        for i in 0..n {
            acc = acc.wrapping_add(x[i]);
            let want = if i < 3 * 1024 { acc } else { 7 };
            assert_eq!(got[i], want, "at {i}");
        }
    }

    /// Asserts that `got` is the transpose of `x`, a row-major matrix of `rows`
    /// rows (`what` says which case).
    fn assert_transposed<T: PartialEq + std::fmt::Debug>(
        got: &[T],
        x: &[T],
        rows: usize,
        what: &str,
    ) {
        let cols = x.len().checked_div(rows).unwrap_or(0);
        for r in 0..rows {
            for col in 0..cols {
                assert_eq!(
                    got[col * rows + r],
                    x[r * cols + col],
                    "{what} at ({r}, {col})"
                );
            }
        }
    }

    /// Transposes `rows × cols` matrices of `T` and checks them against the CPU.
    fn transposes_of<T>(rt: &Runtime, p: &Stream, c: &Stream, seed: u64, sample: fn(u64) -> T)
    where
        T: k::TransposeType + xlog::DeviceCopy + PartialEq + std::fmt::Debug,
    {
        for (rows, cols) in [
            (0usize, 0usize),
            (0, 7),
            (7, 0),
            (1, 1),
            (1, 1000),
            (1000, 1),
            (33, 65),
            (32, 32),
            (31, 33),
            (64, 96),
            (1000, 1003),
            (4099, 4097),
        ] {
            if !within_cap(rows * cols) {
                continue;
            }
            let mut r = Rng::from_state((seed ^ (rows * 7 + cols) as u64) | 1);
            let x: Vec<T> = (0..rows * cols).map(|_| sample(r.next_u64())).collect();
            let xb = rt.upload_on(p, &x).unwrap();
            let got = k::transpose_matrix(c, &xb, rows, cols)
                .unwrap()
                .download(c)
                .unwrap();
            assert_eq!(got.len(), x.len());
            let what = format!("{} {rows} × {cols}", std::any::type_name::<T>());
            assert_transposed(&got, &x, rows, &what);
        }
    }

    #[test]
    fn transposes_match_the_cpu_on_awkward_shapes() {
        let rt = gpu_runtime();
        let (p, c) = streams(&rt);
        transposes_of(&rt, &p, &c, 1, |b| b as u32);
        transposes_of(&rt, &p, &c, 2, |b| b as i32);
        transposes_of(&rt, &p, &c, 3, |b| (b % 20_001) as f32 / 100.0 - 100.0);
        transposes_of(&rt, &p, &c, 4, |b| b);
        transposes_of(&rt, &p, &c, 5, |b| b as i64);
        transposes_of(&rt, &p, &c, 6, |b| (b as i64 >> 11) as f64 * 0.25);
        let x = rt.upload_on(&p, &[1.0f32; 6]).unwrap();
        assert!(matches!(
            xlog_kernels::transpose_matrix_f32(&c, &x, 4, 2),
            Err(Error::InvalidArgument { .. })
        ));
        assert!(matches!(
            k::transpose_matrix(&c, &x, usize::MAX, 2),
            Err(Error::InvalidArgument { .. })
        ));
    }

    #[test]
    fn transpose_with_other_block_sizes_and_extra_blocks() {
        let rt = gpu_runtime();
        let s = rt.stream().unwrap();
        let (rows, cols) = (70usize, 45usize);
        let x = data::<f32>(99, rows * cols);
        let xb = rt.upload_on(&s, &x).unwrap();
        for block in [32u32, 100, 256, 1024] {
            let mut out = rt.upload_on(&s, &vec![-1.0f32; rows * cols]).unwrap();
            let tiles = rows.div_ceil(32) * cols.div_ceil(32);
            let cfg = LaunchConfig::new([tiles as u32 + 5, 1, 1], [block, 1, 1]);
            k::transpose::launch(&s, cfg, &xb, &mut out, rows).unwrap();
            let got = out.download(&s).unwrap();
            assert_transposed(&got, &x, rows, &format!("block {block}"));
        }
    }
}
