//! GPU suite of the query-engine library (`reduce`, `scan`, `gather`), opt-in with
//! `--features gpu-tests`; every test fails without a device. Each operation runs
//! against a CPU reference on sizes 0, 1, block ± 1, tile ± 1, 2^k ± 1 and a large
//! size (capped by `XLOG_TEST_MAX_LEN` for the compute-sanitizer passes), on random
//! and adversarial data, with inputs uploaded on another stream.

use xlog::{DeviceBuffer, Error, Runtime, Stream};
use xlog_test_support::{gpu_runtime, within_test_cap as within_cap, Rng};

/// Sizes around every boundary the kernels have: the reduction's block (256
/// threads × 4 elements) and two-launch threshold, the scans' tiles (4096 and 2048
/// elements) and the look-back window (32 tiles), and a large input.
const SIZES: &[usize] = &[
    0,
    1,
    3,
    255,
    256,
    257,
    1023,
    1024,
    1025,
    2047,
    2049,
    4095,
    4096,
    4097,
    (1 << 16) - 1,
    (1 << 16) + 1,
    32 * 4096 + 1,
    (1 << 20) + 1,
    (1 << 24) + 7,
];

fn sizes() -> impl Iterator<Item = usize> {
    SIZES.iter().copied().filter(|&n| within_cap(n))
}

fn streams(rt: &Runtime) -> (Stream, Stream) {
    (rt.new_stream().unwrap(), rt.new_stream().unwrap())
}

fn upload<T: xlog::DeviceCopy>(rt: &Runtime, p: &Stream, v: &[T]) -> DeviceBuffer<T> {
    rt.upload_on(p, v).unwrap()
}

/// One `#[test]` per element type, `<type>_matches_the_cpu`, each calling
/// `$check::<type>()`.
macro_rules! each_type_matches_the_cpu {
    ($check:ident) => {
        each_type_matches_the_cpu!($check: u32_matches_the_cpu u32, i32_matches_the_cpu i32,
            u64_matches_the_cpu u64, i64_matches_the_cpu i64,
            f32_matches_the_cpu f32, f64_matches_the_cpu f64);
    };
    ($check:ident: $($name:ident $t:ty),*) => {$(
        #[test]
        fn $name() {
            $check::<$t>();
        }
    )*};
}

/// Data kinds: random, all equal, ascending, descending, extremes.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Random,
    AllEqual,
    Ascending,
    Descending,
    Extremes,
}
const KINDS: [Kind; 5] = [
    Kind::Random,
    Kind::AllEqual,
    Kind::Ascending,
    Kind::Descending,
    Kind::Extremes,
];

trait Num: Copy + PartialEq + std::fmt::Debug + xlog::DeviceCopy {
    fn make(kind: Kind, i: usize, n: usize, r: &mut Rng) -> Self;
    fn add(a: Self, b: Self) -> Self;
    fn min(a: Self, b: Self) -> Self;
    fn max(a: Self, b: Self) -> Self;
    const ZERO: Self;
    const LOWEST: Self;
    const HIGHEST: Self;
    /// Whether `got` is within rounding of `want`, the sum computed in `f64` for
    /// floats (`exact`) or in `Self` for integers: exact for integers; for floats
    /// within the error bound of a tree-then-sequential sum of `n` terms whose
    /// absolute values add up to `magnitude`.
    fn close(got: Self, want: Self, exact: f64, n: usize, magnitude: f64) -> bool;
    /// `acc + v` in `f64` (the float reference); unused for integers.
    fn add_exact(acc: f64, v: Self) -> f64 {
        acc + v.as_f64()
    }
    fn as_f64(self) -> f64;
}

macro_rules! int {
    ($t:ty) => {
        impl Num for $t {
            fn make(kind: Kind, i: usize, n: usize, r: &mut Rng) -> Self {
                match kind {
                    Kind::Random => r.next_u64() as $t,
                    Kind::AllEqual => 7 as $t,
                    Kind::Ascending => i as $t,
                    Kind::Descending => (n - i) as $t,
                    Kind::Extremes => {
                        if r.next_u64() % 2 == 0 {
                            <$t>::MAX
                        } else {
                            <$t>::MIN
                        }
                    }
                }
            }
            fn add(a: Self, b: Self) -> Self {
                a.wrapping_add(b)
            }
            fn min(a: Self, b: Self) -> Self {
                Ord::min(a, b)
            }
            fn max(a: Self, b: Self) -> Self {
                Ord::max(a, b)
            }
            const ZERO: Self = 0;
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            fn close(got: Self, want: Self, _: f64, _: usize, _: f64) -> bool {
                got == want
            }
            fn as_f64(self) -> f64 {
                self as f64
            }
        }
    };
}
int!(u32);
int!(i32);
int!(u64);
int!(i64);

macro_rules! float {
    ($t:ty) => {
        impl Num for $t {
            fn make(kind: Kind, i: usize, n: usize, r: &mut Rng) -> Self {
                match kind {
                    // Small integers in a float: sums are exact up to 2^24 (f32).
                    Kind::Random => (r.next_u64() % 2001) as $t / 8.0 - 125.0,
                    Kind::AllEqual => 0.5,
                    Kind::Ascending => (i % 1000) as $t,
                    Kind::Descending => ((n - i) % 1000) as $t,
                    Kind::Extremes => match r.next_u64() % 4 {
                        0 => -0.0,
                        1 => 0.0,
                        2 => 1e30 as $t,
                        _ => -1e30 as $t,
                    },
                }
            }
            fn add(a: Self, b: Self) -> Self {
                a + b
            }
            fn min(a: Self, b: Self) -> Self {
                a.min(b)
            }
            fn max(a: Self, b: Self) -> Self {
                a.max(b)
            }
            const ZERO: Self = 0.0;
            const LOWEST: Self = <$t>::NEG_INFINITY;
            const HIGHEST: Self = <$t>::INFINITY;
            fn close(got: Self, want: Self, exact: f64, n: usize, magnitude: f64) -> bool {
                if got == want || (got.is_nan() && want.is_nan()) {
                    return true;
                }
                // Tree sums within a tile, then a chain across tiles (n / 2048 at
                // most): the error grows with the depth of both.
                let depth = (n as f64).log2().max(1.0) + (n as f64 / 2048.0).sqrt() + 8.0;
                let tol = <$t>::EPSILON as f64 * 2.0 * depth * magnitude.max(1.0);
                ((got as f64) - exact).abs() <= tol
            }
            fn as_f64(self) -> f64 {
                self as f64
            }
        }
    };
}
float!(f32);
float!(f64);

fn make<T: Num>(kind: Kind, n: usize, seed: u64) -> Vec<T> {
    let mut r = Rng::from_state(seed | 1);
    (0..n).map(|i| T::make(kind, i, n, &mut r)).collect()
}

/// The largest partial sum's magnitude, for float tolerances.
fn magnitude<T: Num>(x: &[T]) -> f64 {
    x.iter().map(|&v| v.as_f64().abs()).sum()
}

mod reduce {
    use super::*;
    use xlog_kernels::reduce;

    fn check<T: Num>()
    where
        reduce::Sum: reduce::FoldKernel<T>,
        reduce::Min: reduce::FoldKernel<T>,
        reduce::Max: reduce::FoldKernel<T>,
    {
        let rt = gpu_runtime();
        let (p, c) = streams(&rt);
        for n in sizes() {
            for (k, kind) in KINDS.into_iter().enumerate() {
                let x = make::<T>(kind, n, 11 + n as u64 + k as u64);
                let xb = upload(&rt, &p, &x);
                let sum = reduce::sum(&c, &xb).unwrap().download(&c).unwrap();
                let min = reduce::min(&c, &xb).unwrap().download(&c).unwrap();
                let max = reduce::max(&c, &xb).unwrap().download(&c).unwrap();
                let want_sum = x.iter().fold(T::ZERO, |a, &b| T::add(a, b));
                let exact = x.iter().fold(0.0, |a, &b| T::add_exact(a, b));
                let want_min = x.iter().fold(T::HIGHEST, |a, &b| T::min(a, b));
                let want_max = x.iter().fold(T::LOWEST, |a, &b| T::max(a, b));
                assert!(
                    T::close(sum[0], want_sum, exact, n, magnitude(&x)),
                    "sum of {n} {kind:?}: {:?} vs {want_sum:?}",
                    sum[0]
                );
                assert_eq!(min, [want_min], "min of {n} {kind:?}");
                assert_eq!(max, [want_max], "max of {n} {kind:?}");
            }
        }
    }

    each_type_matches_the_cpu!(check);

    #[test]
    fn float_specials_follow_min_max_and_propagate_in_sums() {
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        let n = 5000.min(if within_cap(5000) { 5000 } else { 300 });
        let mut x = vec![1.0f32; n];
        x[n / 2] = f32::NAN;
        x[n / 3] = -0.0;
        x[1] = f32::NEG_INFINITY;
        let xb = upload(&rt, &s, &x);
        // A NaN is ignored by min and max, propagates through a sum.
        assert_eq!(
            reduce::min(&s, &xb).unwrap().download(&s).unwrap(),
            [f32::NEG_INFINITY]
        );
        assert_eq!(reduce::max(&s, &xb).unwrap().download(&s).unwrap(), [1.0]);
        assert!(reduce::sum(&s, &xb).unwrap().download(&s).unwrap()[0].is_nan());
        // Every NaN ignored: the identity.
        let all_nan = upload(&rt, &s, &vec![f64::NAN; 3000]);
        assert_eq!(
            reduce::min(&s, &all_nan).unwrap().download(&s).unwrap(),
            [f64::INFINITY]
        );
    }

    #[test]
    fn a_user_operator_runs_through_fold() {
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        for n in sizes() {
            let x: Vec<u32> = (0..n).map(|i| 1u32 << (i % 29)).collect();
            let want = x.iter().fold(0, |a, b| a | b);
            let xb = upload(&rt, &s, &x);
            let got = reduce::fold::<u32, reduce::BitOr>(&s, &xb).unwrap();
            assert_eq!(got.download(&s).unwrap(), [want], "or of {n}");
        }
    }

    #[test]
    fn views_at_odd_offsets_reduce_the_view_only() {
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        let x: Vec<u64> = (0..10_001).collect();
        let xb = upload(&rt, &s, &x);
        let got = reduce::sum(&s, &xb.slice(3..9_998)).unwrap();
        assert_eq!(got.download(&s).unwrap(), [(3..9_998u64).sum::<u64>()]);
    }
}

mod scan {
    use super::*;
    use xlog_kernels::scan;

    fn check<T: Num>()
    where
        scan::InclusiveSum: scan::ScanKernel<T>,
        scan::ExclusiveSum: scan::ScanKernel<T>,
    {
        let rt = gpu_runtime();
        let (p, c) = streams(&rt);
        for n in sizes() {
            for (k, kind) in KINDS.into_iter().enumerate() {
                let x = make::<T>(kind, n, 101 + n as u64 + k as u64);
                let xb = upload(&rt, &p, &x);
                let incl = scan::inclusive_sum(&c, &xb).unwrap().download(&c).unwrap();
                let excl = scan::exclusive_sum(&c, &xb).unwrap().download(&c).unwrap();
                assert_eq!((incl.len(), excl.len()), (n, n));
                let mag = magnitude(&x);
                let (mut acc, mut exact) = (T::ZERO, 0.0);
                for i in 0..n {
                    assert!(
                        T::close(excl[i], acc, exact, n, mag),
                        "exclusive {n} {kind:?} at {i}: {:?} vs {exact}",
                        excl[i]
                    );
                    acc = T::add(acc, x[i]);
                    exact = T::add_exact(exact, x[i]);
                    assert!(
                        T::close(incl[i], acc, exact, n, mag),
                        "inclusive {n} {kind:?} at {i}: {:?} vs {exact}",
                        incl[i]
                    );
                }
            }
        }
    }

    each_type_matches_the_cpu!(check);

    #[test]
    fn user_operators_combine_in_order() {
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        for n in sizes() {
            let mut r = Rng::from_state(77 + n as u64);
            // Mostly zeros, so the last non-zero often lies many tiles back and the
            // look-back must cross whole windows.
            let x: Vec<u32> = (0..n)
                .map(|_| {
                    if r.next_u64() % 50_000 == 0 {
                        r.next_u64() as u32 | 1
                    } else {
                        0
                    }
                })
                .collect();
            let xb = upload(&rt, &s, &x);
            let last = scan::scan::<u32, scan::LastNonZeroU32>(&s, &xb)
                .unwrap()
                .download(&s)
                .unwrap();
            let max = scan::scan::<u32, scan::InclusiveMaxU32>(&s, &xb)
                .unwrap()
                .download(&s)
                .unwrap();
            let (mut l, mut m) = (0u32, 0u32);
            for i in 0..n {
                if x[i] != 0 {
                    l = x[i];
                }
                m = m.max(x[i]);
                assert_eq!(last[i], l, "last non-zero of {n} at {i}");
                assert_eq!(max[i], m, "max of {n} at {i}");
            }
        }
    }

    #[test]
    fn views_at_odd_offsets_scan_the_view_only() {
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        let x: Vec<u32> = (0..20_001).collect();
        let xb = upload(&rt, &s, &x);
        let got = scan::inclusive_sum(&s, &xb.slice(1..19_999))
            .unwrap()
            .download(&s)
            .unwrap();
        let mut acc = 0u32;
        for (i, g) in got.iter().enumerate() {
            acc += x[i + 1];
            assert_eq!(*g, acc, "at {i}");
        }
    }
}

mod gather {
    use super::*;
    use xlog_kernels::gather;

    #[test]
    fn gather_and_scatter_match_the_cpu() {
        let rt = gpu_runtime();
        let (p, c) = streams(&rt);
        for n in sizes() {
            let mut r = Rng::from_state(5 + n as u64);
            let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
            let perm = {
                let mut v: Vec<u64> = (0..n as u64).collect();
                for i in (1..n).rev() {
                    v.swap(i, (r.next_u64() % (i as u64 + 1)) as usize);
                }
                v
            };
            // Gather with repeats (u32 indices), scatter by a permutation (u64).
            let idx: Vec<u32> = (0..n).map(|_| (r.next_u64() % n as u64) as u32).collect();
            let xb = upload(&rt, &p, &x);
            let ib = upload(&rt, &p, &idx);
            let got = gather::gather(&c, &xb, &ib).unwrap().download(&c).unwrap();
            let want: Vec<f32> = idx.iter().map(|&j| x[j as usize]).collect();
            assert_eq!(got, want, "gather of {n}");
            let pb = upload(&rt, &p, &perm);
            let mut out = rt.alloc_zeroed_on::<f32>(&c, n).unwrap();
            gather::scatter(&c, &xb, &pb, &mut out).unwrap();
            let mut want = vec![0.0f32; n];
            for (i, &j) in perm.iter().enumerate() {
                want[j as usize] = x[i];
            }
            assert_eq!(out.download(&c).unwrap(), want, "scatter of {n}");
            let xi: Vec<i64> = (0..n as i64).map(|v| -v).collect();
            let xib = upload(&rt, &p, &xi);
            let got = gather::gather(&c, &xib, &pb).unwrap().download(&c).unwrap();
            assert_eq!(
                got,
                perm.iter().map(|&j| xi[j as usize]).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn out_of_range_indices_are_reported_with_the_first_position() {
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        let n = if within_cap(100_000) { 100_000 } else { 1000 };
        let x = upload(&rt, &s, &vec![1u32; n]);
        let mut idx: Vec<u32> = (0..n as u32).collect();
        idx[n - 5] = n as u32;
        idx[n / 2] = u32::MAX;
        let ib = upload(&rt, &s, &idx);
        let err = gather::gather(&s, &x, &ib).unwrap_err();
        let Error::InvalidArgument { what, reason } = &err else {
            panic!("expected InvalidArgument, got {err:?}");
        };
        assert!(what.ends_with("gather"), "{what}");
        assert!(
            reason.contains(&format!("index {} at position {}", u32::MAX, n / 2)),
            "{reason}"
        );
        let mut out = rt.alloc_zeroed_on::<u32>(&s, n).unwrap();
        let err = gather::scatter(&s, &x, &ib, &mut out).unwrap_err();
        assert!(
            err.to_string().contains(&format!("position {}", n / 2)),
            "{err}"
        );
        // The valid indices were written; the bad ones wrote nothing.
        let got = out.download(&s).unwrap();
        assert_eq!(got.iter().filter(|&&v| v == 1).count(), n - 2);
        let short = upload(&rt, &s, &idx[..3]);
        assert!(matches!(
            gather::scatter(&s, &x, &short, &mut out),
            Err(Error::InvalidArgument { .. })
        ));
    }
}
