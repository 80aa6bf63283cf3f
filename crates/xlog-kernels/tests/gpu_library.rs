//! GPU suite of the query-engine library (`reduce`, `scan`, `gather`, `histogram`,
//! `compact`, `segmented`), opt-in with
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
int!(u8);
int!(u16);
int!(i8);
int!(i16);
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

    /// A generic operator kernel through the safe `Fold`: one implementation for
    /// both of its types, empty inputs giving the zeroed result.
    #[test]
    fn a_generic_user_operator_runs_through_the_safe_fold() {
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        for n in sizes() {
            let x: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2654435761)).collect();
            let want = x.iter().fold(0, |a, b| a ^ b);
            let xb = upload(&rt, &s, &x);
            let got = reduce::fold_safely::<u32, reduce::Xor>(&s, &xb).unwrap();
            assert_eq!(got.download(&s).unwrap(), [want], "u32 xor of {n}");
            let y: Vec<u64> = x.iter().map(|&v| (v as u64) << 17 | v as u64).collect();
            let want = y.iter().fold(0, |a, b| a ^ b);
            let yb = upload(&rt, &s, &y);
            let got = reduce::fold_safely::<u64, reduce::Xor>(&s, &yb).unwrap();
            assert_eq!(got.download(&s).unwrap(), [want], "u64 xor of {n}");
        }
    }

    /// A safe `Fold` whose launch writes nothing hands back the zeroed result, not
    /// unwritten memory.
    #[test]
    fn a_safe_fold_that_writes_nothing_returns_zeros() {
        struct Lazy;
        impl reduce::Fold<u64> for Lazy {
            fn launch(
                _: &xlog::Stream,
                _: xlog::LaunchConfig,
                _: &xlog::BufferView<'_, u64>,
                _: &mut DeviceBuffer<u64>,
            ) -> xlog::Result<()> {
                Ok(())
            }
        }
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        for n in [10, 100_000] {
            let xb = upload(&rt, &s, &vec![u64::MAX; n]);
            let got = reduce::fold_safely::<u64, Lazy>(&s, &xb).unwrap();
            assert_eq!(got.download(&s).unwrap(), [0], "{n} elements");
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

    /// The 8- and 16-bit integers: `sum_widened` (into `u64` / `i64`), `min` and
    /// `max` against the CPU on sizes around their one-block threshold (4096 `u8`s,
    /// 2048 `u16`s) and two-launch shapes, odd sizes and 10^8 elements, on random
    /// data, all-`MAX` data (where a sum in the element type would wrap) and all-`MIN`
    /// data, and through a view at an odd byte offset.
    mod narrow {
        use super::*;

        const NARROW_SIZES: &[usize] = &[
            0,
            1,
            3,
            255,
            257,
            2047,
            2048,
            2049,
            4095,
            4096,
            4097,
            16_383,
            16_385,
            100_003,
            (1 << 24) + 7,
            100_000_000,
        ];

        fn check<T>(from_bits: fn(u64) -> T, max: T, min: T)
        where
            T: reduce::Widened + Ord + std::fmt::Debug + Into<i128>,
            T::Total: PartialEq + std::fmt::Debug + TryFrom<i128>,
            <T::Total as TryFrom<i128>>::Error: std::fmt::Debug,
            reduce::Sum: reduce::FoldKernel<T::Total>,
            reduce::Min: reduce::FoldKernel<T>,
            reduce::Max: reduce::FoldKernel<T>,
        {
            let rt = gpu_runtime();
            let (p, c) = streams(&rt);
            for &n in NARROW_SIZES.iter().filter(|&&n| within_cap(n)) {
                let mut r = Rng::from_state(n as u64 * 3 + 1);
                let random: Vec<T> = (0..n).map(|_| from_bits(r.next_u64())).collect();
                for (kind, x) in [
                    ("random", random),
                    ("MAX", vec![max; n]),
                    ("MIN", vec![min; n]),
                ] {
                    let xb = upload(&rt, &p, &x);
                    let sum = reduce::sum_widened(&c, &xb).unwrap().download(&c).unwrap();
                    let want: i128 = x.iter().map(|&v| v.into()).sum();
                    assert_eq!(
                        sum,
                        [T::Total::try_from(want).unwrap()],
                        "sum of {n} {kind}"
                    );
                    let least = reduce::min(&c, &xb).unwrap().download(&c).unwrap();
                    assert_eq!(
                        least,
                        [x.iter().copied().min().unwrap_or(max)],
                        "min of {n} {kind}"
                    );
                    let most = reduce::max(&c, &xb).unwrap().download(&c).unwrap();
                    assert_eq!(
                        most,
                        [x.iter().copied().max().unwrap_or(min)],
                        "max of {n} {kind}"
                    );
                    if n > 7 {
                        let v = xb.slice(3..n - 1);
                        let part = &x[3..n - 1];
                        let sum = reduce::sum_widened(&c, &v).unwrap().download(&c).unwrap();
                        let want: i128 = part.iter().map(|&v| v.into()).sum();
                        assert_eq!(
                            sum,
                            [T::Total::try_from(want).unwrap()],
                            "view sum of {n} {kind}"
                        );
                        let least = reduce::min(&c, &v).unwrap().download(&c).unwrap();
                        assert_eq!(
                            least,
                            [*part.iter().min().unwrap()],
                            "view min of {n} {kind}"
                        );
                    }
                }
            }
        }

        #[test]
        fn u8_matches_the_cpu() {
            check::<u8>(|b| b as u8, u8::MAX, u8::MIN);
        }

        #[test]
        fn u16_matches_the_cpu() {
            check::<u16>(|b| b as u16, u16::MAX, u16::MIN);
        }

        #[test]
        fn i8_matches_the_cpu() {
            check::<i8>(|b| b as i8, i8::MAX, i8::MIN);
        }

        #[test]
        fn i16_matches_the_cpu() {
            check::<i16>(|b| b as i16, i16::MAX, i16::MIN);
        }
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

    const CHILD_ENV: &str = "XLOG_SCAN_FEWER_BLOCKS_CHILD";

    /// A scan kernel launched with fewer blocks than tiles would leave the later
    /// tiles unwritten; `scan_tile` refuses the launch with a device panic instead.
    /// Run in a child process: a device panic leaves the CUDA context unusable.
    #[test]
    fn fewer_blocks_than_tiles_is_a_device_panic() {
        child_reports("fewer blocks", "scan_tile needs a block per tile");
    }

    /// A status with fewer tiles than the output needs would leave the output's
    /// tail unwritten even with a block per status tile.
    #[test]
    fn a_status_shorter_than_the_output_is_a_device_panic() {
        child_reports("short status", "scan_tile needs a status with a tile");
    }

    /// Runs `child_launches_fewer_blocks_than_tiles` in a child process in `mode` and
    /// checks that its launch failed with the device panic `message`.
    fn child_reports(mode: &str, message: &str) {
        let out = xlog_test_support::child::run_test(
            "scan::child_launches_fewer_blocks_than_tiles",
            &[(CHILD_ENV, mode)],
        );
        let text = out.text();
        assert!(out.status.success(), "child process failed:\n{text}");
        assert!(
            text.contains("LAUNCH FAILED: kernel `scan_inclusive_sum__u32` panicked on the device"),
            "{text}"
        );
        assert!(text.contains(message), "{text}");
    }

    /// The child side: an output of three tiles, with two blocks and a status of
    /// three tiles, or three blocks and a status of one.
    #[test]
    #[ignore = "run by the scan's device-panic tests in a child process"]
    fn child_launches_fewer_blocks_than_tiles() {
        use xlog::device::lookback::status_words;
        use xlog::LaunchConfig;
        let Ok(mode) = std::env::var(CHILD_ENV) else {
            return;
        };
        let (blocks, status_tiles) = if mode == "short status" {
            (3, 1)
        } else {
            (2, 3)
        };
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        let tile = scan::BLOCK as usize * scan::ITEMS_32;
        let xb = upload(&rt, &s, &vec![1u32; 3 * tile]);
        let mut out = rt.alloc_zeroed_on::<u32>(&s, 3 * tile).unwrap();
        let mut status = rt
            .alloc_zeroed_on::<u64>(&s, status_words(status_tiles))
            .unwrap();
        let cfg = LaunchConfig::new([blocks, 1, 1], [scan::BLOCK, 1, 1]);
        let outcome = scan::scan_inclusive_sum::launch(&s, cfg, &xb, &mut out, &mut status)
            .and_then(|_| s.synchronize());
        match outcome {
            Ok(()) => println!("LAUNCH SUCCEEDED"),
            Err(e) => println!("LAUNCH FAILED: {e}"),
        }
    }

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

    /// Scans recorded into a graph: outputs read as zeros until a replay, and every
    /// replay (look-back words zeroed by the graph's own memset node before the
    /// kernel) writes what the eager scan gives.
    #[test]
    fn recorded_scans_replay_into_their_outputs() {
        let rt = gpu_runtime();
        let (p, c) = streams(&rt);
        for n in [0usize, 1, 4097, 32 * 4096 + 1]
            .into_iter()
            .filter(|&n| within_cap(n))
        {
            let x = make::<u32>(Kind::Random, n, 7 + n as u64);
            let xb = upload(&rt, &p, &x);
            let arena = xlog::GraphArena::new();
            let mut rec = xlog::GraphRecorder::new(&c);
            let incl = scan::record_inclusive_sum(&mut rec, &arena, &xb).unwrap();
            let excl = scan::record_exclusive_sum(&mut rec, &arena, &xb).unwrap();
            assert_eq!(
                rec.len(),
                if n == 0 { 0 } else { 4 },
                "a zeroing and a scan each"
            );
            let graph = rec.instantiate().unwrap();
            assert_eq!(
                incl.download(&c).unwrap(),
                vec![0; n],
                "zeros before a replay"
            );
            let want_incl = scan::inclusive_sum(&p, &xb).unwrap().download(&p).unwrap();
            let want_excl = scan::exclusive_sum(&p, &xb).unwrap().download(&p).unwrap();
            for replay in 0..2 {
                graph.launch(&c).unwrap();
                assert_eq!(
                    incl.download(&p).unwrap(),
                    want_incl,
                    "{n}, replay {replay}"
                );
                assert_eq!(
                    excl.download(&p).unwrap(),
                    want_excl,
                    "{n}, replay {replay}"
                );
            }
        }
    }

    /// A scan kernel generic over its element type through the safe `Scan`: one
    /// implementation for `u32` and `i32`.
    #[test]
    fn a_generic_user_operator_runs_through_the_safe_scan() {
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        for n in sizes() {
            let x: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2654435761)).collect();
            let xb = upload(&rt, &s, &x);
            let got = scan::scan_safely::<u32, scan::InclusiveXor>(&s, &xb)
                .unwrap()
                .download(&s)
                .unwrap();
            let y: Vec<i32> = x.iter().map(|&v| v as i32).collect();
            let yb = upload(&rt, &s, &y);
            let got_i = scan::scan_safely::<i32, scan::InclusiveXor>(&s, &yb)
                .unwrap()
                .download(&s)
                .unwrap();
            let (mut a, mut b) = (0u32, 0i32);
            for i in 0..n {
                a ^= x[i];
                b ^= y[i];
                assert_eq!(got[i], a, "u32 xor scan of {n} at {i}");
                assert_eq!(got_i[i], b, "i32 xor scan of {n} at {i}");
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

    /// Gather with repeats and scatter by a permutation, for one element and index
    /// type; `make` turns a number into an element.
    fn gather_and_scatter_as<T, I>(rt: &xlog::Runtime, n: usize, make: fn(u64) -> T)
    where
        T: gather::Indexed<I> + PartialEq + std::fmt::Debug + Default,
        I: gather::Index + TryFrom<u64, Error: std::fmt::Debug>,
    {
        let (p, c) = streams(rt);
        let mut r = Rng::from_state(11 + n as u64);
        let x: Vec<T> = (0..n as u64).map(make).collect();
        let idx: Vec<I> = (0..n)
            .map(|_| I::try_from(r.next_u64() % n as u64).unwrap())
            .collect();
        let mut perm: Vec<u64> = (0..n as u64).collect();
        for i in (1..n).rev() {
            perm.swap(i, (r.next_u64() % (i as u64 + 1)) as usize);
        }
        let perm: Vec<I> = perm.into_iter().map(|j| I::try_from(j).unwrap()).collect();
        let (xb, ib, pb) = (
            upload(rt, &p, &x),
            upload(rt, &p, &idx),
            upload(rt, &p, &perm),
        );
        let what = format!(
            "{} by {}",
            std::any::type_name::<T>(),
            std::any::type_name::<I>()
        );
        let got = gather::gather(&c, &xb, &ib).unwrap().download(&c).unwrap();
        let want: Vec<T> = idx.iter().map(|&j| x[j.into() as usize]).collect();
        assert_eq!(got, want, "gather of {what}");
        let mut out = rt.alloc_zeroed_on::<T>(&c, n).unwrap();
        gather::scatter(&c, &xb, &pb, &mut out).unwrap();
        let mut want = vec![T::default(); n];
        for (i, &j) in perm.iter().enumerate() {
            want[j.into() as usize] = x[i];
        }
        assert_eq!(out.download(&c).unwrap(), want, "scatter of {what}");
    }

    #[test]
    fn every_element_and_index_type_matches_the_cpu() {
        let rt = gpu_runtime();
        let n = if within_cap(100_000) { 100_000 } else { 3_000 };
        macro_rules! each_index {
            ($($t:ty => $make:expr;)*) => {$(
                gather_and_scatter_as::<$t, u32>(&rt, n, $make);
                gather_and_scatter_as::<$t, u64>(&rt, n, $make);
            )*};
        }
        each_index! {
            u8 => |v| (v * 7) as u8;
            u16 => |v| (v * 7) as u16;
            u32 => |v| v as u32 ^ 0x5555;
            i32 => |v| -(v as i32);
            f32 => |v| v as f32 * 0.5;
            u64 => |v| v << 20;
            i64 => |v| -(v as i64) << 20;
            f64 => |v| v as f64 * 0.25;
        }
    }

    #[test]
    fn narrow_scatters_with_repeated_indices_store_one_of_the_colliding_elements() {
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        // Four bytes of one word, each written by many threads at once: a byte store
        // that was a read-modify-write of its word would lose its neighbours.
        let n = 4096;
        let x: Vec<u8> = (0..n)
            .map(|i| (i % 4) as u8 * 10 + 1 + (i / 4 % 2) as u8)
            .collect();
        let idx: Vec<u32> = (0..n as u32).map(|i| i % 4).collect();
        let (xb, ib) = (upload(&rt, &s, &x), upload(&rt, &s, &idx));
        let mut out = rt.alloc_zeroed_on::<u8>(&s, 4).unwrap();
        gather::scatter(&s, &xb, &ib, &mut out).unwrap();
        let got = out.download(&s).unwrap();
        for (k, &v) in got.iter().enumerate() {
            let base = k as u8 * 10 + 1;
            assert!(v == base || v == base + 1, "byte {k}: {v}");
        }
        let x16: Vec<u16> = x.iter().map(|&v| v as u16 * 300).collect();
        let xb = upload(&rt, &s, &x16);
        let mut out = rt.alloc_zeroed_on::<u16>(&s, 4).unwrap();
        gather::scatter(&s, &xb, &ib, &mut out).unwrap();
        for (k, &v) in out.download(&s).unwrap().iter().enumerate() {
            let base = (k as u16 * 10 + 1) * 300;
            assert!(v == base || v == base + 300, "half-word {k}: {v}");
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

/// Sizes for the newer families: the same boundaries, plus their tiles (2048
/// elements a compaction tile).
fn lib_sizes() -> impl Iterator<Item = usize> {
    sizes().chain([2048, 2047 * 3].into_iter().filter(|&n| within_cap(n)))
}

/// Adversarial key shapes: random in `0..range`, all equal, sorted, reverse sorted,
/// few distinct, the full range of the type (cast from random bits).
const SHAPES: [&str; 6] = ["random", "equal", "sorted", "reverse", "few", "full"];

/// Inputs past a million elements run on the first shape or kind only, to keep
/// the suite's CPU references fast.
fn big(n: usize) -> bool {
    n > 1 << 20
}

fn shaped(shape: &str, n: usize, range: u64, seed: u64) -> Vec<u64> {
    let mut r = Rng::from_state(seed | 1);
    let mut v: Vec<u64> = match shape {
        "random" => (0..n).map(|_| r.next_u64() % range).collect(),
        "equal" => vec![range / 2; n],
        "few" => (0..n).map(|_| (r.next_u64() % 3) * (range / 3)).collect(),
        "full" => (0..n).map(|_| r.next_u64()).collect(),
        _ => (0..n)
            .map(|i| (i as u64 * range) / n.max(1) as u64)
            .collect(),
    };
    if shape == "reverse" {
        v.reverse();
    }
    v
}

mod histogram {
    use super::*;
    use xlog_kernels::histogram;

    /// The bins of the documented `f32` formula, over halved bounds.
    fn even_ref_f32(x: &[f32], lo: f32, hi: f32, bins: usize) -> Vec<u32> {
        let scale = bins as f32 / (hi * 0.5 - lo * 0.5);
        let mut h = vec![0u32; bins];
        for &v in x {
            if v >= lo && v < hi {
                h[((v.mul_add(0.5, -(lo * 0.5)) * scale) as usize).min(bins - 1)] += 1;
            }
        }
        h
    }

    #[test]
    fn f32_ranges_wider_than_f32_max_split_evenly() {
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        let x = [f32::MIN, -1e38, -1e37, 0.0, 1.0, 1e38, 3e38];
        let xb = upload(&rt, &s, &x);
        // Width 2·MAX/3 ≈ 2.27e38: [MIN, -1.13e38), [-1.13e38, 1.13e38), [1.13e38, MAX).
        let got = histogram::even(&s, &xb, f32::MIN, f32::MAX, 3).unwrap();
        assert_eq!(got.download(&s).unwrap(), [1, 5, 1]);
        assert_eq!(even_ref_f32(&x, f32::MIN, f32::MAX, 3), [1, 5, 1]);
        // Samples away from the edge at 0 (its rounding reaches far at this width).
        let x = [f32::MIN, -2e38, -1e37, 1e37, 2e38, 3e38];
        let got = histogram::even(&s, &upload(&rt, &s, &x), -3e38f32, 3e38, 2).unwrap();
        assert_eq!(got.download(&s).unwrap(), [2, 2], "MIN and hi are outside");
    }

    #[test]
    fn infinite_bounds_and_subnormal_bins_are_refused() {
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        let xb = upload(&rt, &s, &[0.0f32, 1.0, 7.0]);
        for (lo, hi, bins, want) in [
            (0.0, f32::INFINITY, 3, "not finite"),
            (f32::NEG_INFINITY, 0.0, 3, "not finite"),
            (f32::NEG_INFINITY, f32::INFINITY, 1, "not finite"),
            (0.0, 1e-44, 1 << 20, "narrower than the smallest normal"),
        ] {
            match histogram::even(&s, &xb, lo, hi, bins) {
                Err(Error::InvalidArgument { reason, .. }) => {
                    assert!(reason.contains(want), "[{lo}, {hi}): {reason}")
                }
                other => panic!("[{lo}, {hi}) {bins} bins: {other:?}"),
            }
        }
    }

    fn even_ref_int(x: &[i64], lo: i64, hi: i64, bins: usize) -> Vec<u32> {
        let mut h = vec![0u32; bins];
        for &v in x {
            if v >= lo && v < hi {
                h[((v - lo) as u128 * bins as u128 / (hi - lo) as u128) as usize] += 1;
            }
        }
        h
    }

    #[test]
    fn even_bins_match_the_cpu() {
        let rt = gpu_runtime();
        let (p, c) = streams(&rt);
        for n in lib_sizes() {
            for (k, shape) in SHAPES.into_iter().enumerate() {
                if big(n) && k > 0 {
                    break;
                }
                let seed = 3 + n as u64 * 7 + k as u64;
                for bins in [1usize, 7, 256, 1000, 20_000] {
                    // f32 over [-10, 30), some samples outside, a NaN or two.
                    let mut xf: Vec<f32> = shaped(shape, n, 50_000, seed)
                        .iter()
                        .map(|&v| (v % 50_000) as f32 * 0.001 - 12.5)
                        .collect();
                    if n > 10 {
                        xf[n / 2] = f32::NAN;
                    }
                    let xb = upload(&rt, &p, &xf);
                    let got = histogram::even(&c, &xb, -10.0f32, 30.0, bins).unwrap();
                    assert_eq!(
                        got.download(&c).unwrap(),
                        even_ref_f32(&xf, -10.0, 30.0, bins),
                        "f32 {n} {shape} {bins} bins"
                    );
                    // i32 over the full range and a small one; u32 likewise.
                    let raw = shaped(shape, n, 1 << 40, seed);
                    let xi: Vec<i32> = raw.iter().map(|&v| v as i32).collect();
                    let xib = upload(&rt, &p, &xi);
                    let wide: Vec<i64> = xi.iter().map(|&v| v as i64).collect();
                    for (lo, hi) in [(i32::MIN, i32::MAX), (-1000, 77_777)] {
                        let got = histogram::even(&c, &xib, lo, hi, bins).unwrap();
                        assert_eq!(
                            got.download(&c).unwrap(),
                            even_ref_int(&wide, lo as i64, hi as i64, bins),
                            "i32 {n} {shape} {bins} bins [{lo}, {hi})"
                        );
                    }
                    let xu: Vec<u32> = raw.iter().map(|&v| (v >> 8) as u32).collect();
                    let xub = upload(&rt, &p, &xu);
                    let wide: Vec<i64> = xu.iter().map(|&v| v as i64).collect();
                    for (lo, hi) in [(0u32, u32::MAX), (5, 1 << 20)] {
                        let got = histogram::even(&c, &xub, lo, hi, bins).unwrap();
                        assert_eq!(
                            got.download(&c).unwrap(),
                            even_ref_int(&wide, lo as i64, hi as i64, bins),
                            "u32 {n} {shape} {bins} bins [{lo}, {hi})"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn counts_by_key_match_the_cpu() {
        let rt = gpu_runtime();
        let (p, c) = streams(&rt);
        for n in lib_sizes() {
            for (k, shape) in SHAPES.into_iter().enumerate() {
                if big(n) && k > 0 {
                    break;
                }
                let raw = shaped(shape, n, 300, 17 + n as u64 + k as u64);
                for bins in [1usize, 256, 300, 13_000] {
                    let mut want = vec![0u32; bins];
                    let bytes: Vec<u8> = raw.iter().map(|&v| v as u8).collect();
                    for &b in &bytes {
                        if (b as usize) < bins {
                            want[b as usize] += 1;
                        }
                    }
                    let got = histogram::counts(&c, &upload(&rt, &p, &bytes), bins).unwrap();
                    assert_eq!(got.download(&c).unwrap(), want, "u8 {n} {shape} {bins}");
                    let keys: Vec<i32> = raw.iter().map(|&v| v as i32 - 20).collect();
                    let mut want = vec![0u32; bins];
                    for &kk in &keys {
                        if kk >= 0 && (kk as usize) < bins {
                            want[kk as usize] += 1;
                        }
                    }
                    let got = histogram::counts(&c, &upload(&rt, &p, &keys), bins).unwrap();
                    assert_eq!(got.download(&c).unwrap(), want, "i32 {n} {shape} {bins}");
                    let keys: Vec<u32> = raw.iter().map(|&v| v as u32).collect();
                    let mut want = vec![0u32; bins];
                    for &kk in &keys {
                        if (kk as usize) < bins {
                            want[kk as usize] += 1;
                        }
                    }
                    let got = histogram::counts(&c, &upload(&rt, &p, &keys), bins).unwrap();
                    assert_eq!(got.download(&c).unwrap(), want, "u32 {n} {shape} {bins}");
                }
            }
        }
    }

    /// The key and sample types beyond the 32-bit ones: `u16`, `u64`, `i64` keys
    /// (one at a time or as 16-byte vectors), `u8` and `u16` samples of even bins
    /// (one at a time), against the CPU.
    #[test]
    fn narrow_and_wide_types_match_the_cpu() {
        fn want_counts(keys: impl Iterator<Item = i128>, bins: usize) -> Vec<u32> {
            let mut want = vec![0u32; bins];
            for k in keys {
                if k >= 0 && k < bins as i128 {
                    want[k as usize] += 1;
                }
            }
            want
        }
        let rt = gpu_runtime();
        let (p, c) = streams(&rt);
        for n in lib_sizes() {
            for (k, shape) in SHAPES.into_iter().enumerate() {
                if big(n) && k > 0 {
                    break;
                }
                let raw = shaped(shape, n, 70_000, 29 + n as u64 + k as u64);
                for bins in [1usize, 300, 13_000, 70_000] {
                    let keys: Vec<u16> = raw.iter().map(|&v| v as u16).collect();
                    let got = histogram::counts(&c, &upload(&rt, &p, &keys), bins).unwrap();
                    let want = want_counts(keys.iter().map(|&k| k as i128), bins);
                    assert_eq!(got.download(&c).unwrap(), want, "u16 {n} {shape} {bins}");
                    // Keys past `u32::MAX` must not wrap into a bin.
                    let keys: Vec<u64> = raw.iter().map(|&v| v | (v & 1) << 32).collect();
                    let got = histogram::counts(&c, &upload(&rt, &p, &keys), bins).unwrap();
                    let want = want_counts(keys.iter().map(|&k| k as i128), bins);
                    assert_eq!(got.download(&c).unwrap(), want, "u64 {n} {shape} {bins}");
                    let keys: Vec<i64> = raw.iter().map(|&v| v as i64 - 100).collect();
                    let got = histogram::counts(&c, &upload(&rt, &p, &keys), bins).unwrap();
                    let want = want_counts(keys.iter().map(|&k| k as i128), bins);
                    assert_eq!(got.download(&c).unwrap(), want, "i64 {n} {shape} {bins}");

                    let x8: Vec<u8> = raw.iter().map(|&v| v as u8).collect();
                    let wide: Vec<i64> = x8.iter().map(|&v| v as i64).collect();
                    for (lo, hi) in [(0u8, u8::MAX), (3, 200)] {
                        let got = histogram::even(&c, &upload(&rt, &p, &x8), lo, hi, bins).unwrap();
                        assert_eq!(
                            got.download(&c).unwrap(),
                            even_ref_int(&wide, lo as i64, hi as i64, bins),
                            "u8 {n} {shape} {bins} bins [{lo}, {hi})"
                        );
                    }
                    let x16: Vec<u16> = raw.iter().map(|&v| v as u16).collect();
                    let wide: Vec<i64> = x16.iter().map(|&v| v as i64).collect();
                    for (lo, hi) in [(0u16, u16::MAX), (1000, 60_001)] {
                        let got =
                            histogram::even(&c, &upload(&rt, &p, &x16), lo, hi, bins).unwrap();
                        assert_eq!(
                            got.download(&c).unwrap(),
                            even_ref_int(&wide, lo as i64, hi as i64, bins),
                            "u16 {n} {shape} {bins} bins [{lo}, {hi})"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn bad_arguments_are_refused_before_anything_runs() {
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        let x = upload(&rt, &s, &[1.0f32, 2.0]);
        for (lo, hi, bins) in [
            (1.0, 1.0, 4),
            (2.0, 1.0, 4),
            (f32::NAN, 1.0, 4),
            (0.0, 1.0, 0),
        ] {
            assert!(matches!(
                histogram::even(&s, &x, lo, hi, bins),
                Err(Error::InvalidArgument { .. })
            ));
        }
    }
}

mod compact {
    use super::*;
    use xlog_kernels::compact;

    fn check<T: Num + PartialOrd + compact::Compactable>() {
        let rt = gpu_runtime();
        let (p, c) = streams(&rt);
        for n in lib_sizes() {
            for (k, kind) in KINDS.into_iter().enumerate() {
                if big(n) && k > 0 {
                    break;
                }
                let x = make::<T>(kind, n, 31 + n as u64 + k as u64);
                let xb = upload(&rt, &p, &x);
                for (f, shape) in ["random", "equal", "sorted", "reverse", "few"]
                    .iter()
                    .enumerate()
                {
                    let flags: Vec<u8> = shaped(shape, n, 2, 5 + f as u64 + n as u64)
                        .iter()
                        .map(|&v| (v % 2) as u8 * (1 + f as u8))
                        .collect();
                    let fb = upload(&rt, &p, &flags);
                    let kept: Vec<T> = x
                        .iter()
                        .zip(&flags)
                        .filter(|(_, &f)| f != 0)
                        .map(|(&v, _)| v)
                        .collect();
                    let rejected: Vec<T> = x
                        .iter()
                        .zip(&flags)
                        .filter(|(_, &f)| f == 0)
                        .map(|(&v, _)| v)
                        .collect();
                    let got = compact::select_flagged(&c, &xb, &fb)
                        .unwrap()
                        .download(&c)
                        .unwrap();
                    assert_eq!(got, kept, "select {n} {kind:?} {shape}");
                    if k == 0 && f == 0 {
                        // Views at byte offsets 1 to 3, ending at n, n - 1 or n - 2: the
                        // flags start unaligned, so their count takes the bytes before
                        // the first whole word and after the last (tails of 0 to 3)
                        // one by one, and the tiles read every flag singly.
                        for o in 1..4 {
                            for end in (n.saturating_sub(2)..=n).filter(|&e| e > o) {
                                let got = compact::select_flagged(
                                    &c,
                                    &xb.slice(o..end),
                                    &fb.slice(o..end),
                                )
                                .unwrap()
                                .download(&c)
                                .unwrap();
                                let want: Vec<T> = x[o..end]
                                    .iter()
                                    .zip(&flags[o..end])
                                    .filter(|(_, &f)| f != 0)
                                    .map(|(&v, _)| v)
                                    .collect();
                                assert_eq!(got, want, "select of {o}..{end}, {n} {kind:?}");
                            }
                        }
                    }
                    let mut out = rt.alloc_zeroed_on::<T>(&c, n).unwrap();
                    let count = compact::select_flagged_into(&c, &xb, &fb, &mut out).unwrap();
                    assert_eq!(count.download(&c).unwrap(), [kept.len() as u64]);
                    assert_eq!(out.download(&c).unwrap()[..kept.len()], kept[..]);
                    let part = compact::partition_flagged(&c, &xb, &fb).unwrap();
                    assert_eq!(part.kept_on_host(&c).unwrap(), kept.len());
                    let mut want = kept.clone();
                    want.extend_from_slice(&rejected);
                    assert_eq!(
                        part.values.download(&c).unwrap(),
                        want,
                        "partition {n} {kind:?} {shape}"
                    );
                }
                // Runs of a sorted copy, and of the data as it is.
                let mut sorted = x.clone();
                sorted.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
                for input in [&sorted, &x] {
                    let mut values = Vec::new();
                    let mut counts: Vec<u64> = Vec::new();
                    for (i, &v) in input.iter().enumerate() {
                        if i == 0 || v != input[i - 1] {
                            values.push(v);
                            counts.push(0);
                        }
                        *counts.last_mut().unwrap() += 1;
                    }
                    let runs = compact::unique_counts(&c, &upload(&rt, &p, input)).unwrap();
                    assert_eq!(
                        runs.values.download(&c).unwrap(),
                        values,
                        "unique {n} {kind:?}"
                    );
                    assert_eq!(
                        runs.counts.download(&c).unwrap(),
                        counts,
                        "run lengths {n} {kind:?}"
                    );
                    assert_eq!(runs.runs.download(&c).unwrap(), [values.len() as u64]);
                    let offsets = runs.offsets.download(&c).unwrap();
                    assert_eq!(offsets.len(), values.len() + 1);
                    assert_eq!(offsets[values.len()], n as u64);
                }
            }
        }
    }

    each_type_matches_the_cpu!(check);
    // The 8- and 16-bit types: selection, partition and runs.
    each_type_matches_the_cpu!(check: u8_matches_the_cpu u8, u16_matches_the_cpu u16,
        i8_matches_the_cpu i8, i16_matches_the_cpu i16);

    /// A selection launched with fewer blocks than tiles: each block takes tiles
    /// in turn and reuses its staging array in shared memory from tile to tile
    /// (the library's own launches give every tile a block). 32- and 64-bit
    /// elements (a 64-bit one is staged as two words).
    #[test]
    fn fewer_blocks_than_tiles_reuse_the_staging_array() {
        use xlog::device::lookback::status_words;
        use xlog::LaunchConfig;
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        let tile = compact::BLOCK as usize * compact::ITEMS;
        let n = 5 * tile + 123;
        let tiles = n.div_ceil(tile);
        let mut r = Rng::from_state(77);
        let x: Vec<u64> = (0..n).map(|_| r.next_u64()).collect();
        let flags: Vec<u8> = (0..n).map(|_| (r.next_u64() % 3 == 0) as u8).collect();
        let kept: Vec<u64> = x
            .iter()
            .zip(&flags)
            .filter(|p| *p.1 != 0)
            .map(|p| *p.0)
            .collect();
        let fb = upload(&rt, &s, &flags);
        let x32: Vec<u32> = x.iter().map(|&v| v as u32).collect();
        let kept32: Vec<u32> = kept.iter().map(|&v| v as u32).collect();
        let (xb, xb32) = (upload(&rt, &s, &x), upload(&rt, &s, &x32));
        for blocks in [1u32, 2, 3] {
            let cfg = LaunchConfig::new([blocks, 1, 1], [compact::BLOCK, 1, 1]);
            let mut count = rt.alloc_zeroed_on::<u64>(&s, 1).unwrap();
            let mut status = rt.alloc_zeroed_on::<u64>(&s, status_words(tiles)).unwrap();
            let mut out = rt.alloc_zeroed_on::<u64>(&s, kept.len()).unwrap();
            compact::select_by_flags64::launch(
                &s,
                cfg,
                &xb,
                &fb,
                &mut out,
                &mut count,
                &mut status,
            )
            .unwrap();
            assert_eq!(out.download(&s).unwrap(), kept, "u64, {blocks} blocks");
            assert_eq!(count.download(&s).unwrap(), [kept.len() as u64]);
            let mut out = rt.alloc_zeroed_on::<u32>(&s, kept.len()).unwrap();
            compact::select_by_flags::launch(
                &s,
                cfg,
                &xb32,
                &fb,
                &mut out,
                &mut count,
                &mut status,
            )
            .unwrap();
            assert_eq!(out.download(&s).unwrap(), kept32, "u32, {blocks} blocks");
        }
    }

    /// Each run's value and length, the CPU reference of `unique_counts`.
    fn cpu_runs<T: Copy + PartialEq>(x: &[T]) -> (Vec<T>, Vec<u64>) {
        let (mut values, mut counts) = (Vec::new(), Vec::<u64>::new());
        for (i, &v) in x.iter().enumerate() {
            if i == 0 || v != x[i - 1] {
                values.push(v);
                counts.push(0);
            }
            *counts.last_mut().unwrap() += 1;
        }
        (values, counts)
    }

    /// Runs of 1 to 40 equal elements, so that they cross threads' chunks and
    /// tiles at every position: over views starting 0 to 3 elements past an
    /// aligned address (the tiles then load element by element) and ending at
    /// `n`, `n − 1` or `n − 2`; and launched with fewer blocks than tiles (each
    /// block takes tiles in turn and reuses its staging array), 32- and 64-bit,
    /// for both unique kernels (that of `unique_counts` also names each tile's
    /// last run, whose length the ends kernel fills in).
    #[test]
    fn runs_of_unaligned_views_and_of_fewer_blocks_than_tiles_match_the_cpu() {
        use xlog::device::lookback::status_words;
        use xlog::LaunchConfig;
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        let tile = compact::BLOCK as usize * compact::ITEMS;
        let n = 5 * tile + 123;
        let mut r = Rng::from_state(41);
        let mut x: Vec<u64> = Vec::with_capacity(n);
        while x.len() < n {
            let (v, len) = (r.next_u64(), 1 + r.next_u64() % 40);
            x.extend(std::iter::repeat_n(v, (len as usize).min(n - x.len())));
        }
        let xb = upload(&rt, &s, &x);
        for o in 0..4 {
            for end in n - 2..=n {
                let runs = compact::unique_counts(&s, &xb.slice(o..end)).unwrap();
                let (values, counts) = cpu_runs(&x[o..end]);
                assert_eq!(runs.values.download(&s).unwrap(), values, "{o}..{end}");
                assert_eq!(runs.counts.download(&s).unwrap(), counts, "{o}..{end}");
            }
        }
        let x32: Vec<u32> = x.iter().map(|&v| v as u32).collect();
        let xb32 = upload(&rt, &s, &x32);
        let tiles = n.div_ceil(tile);
        let (values, counts) = cpu_runs(&x);
        let mut starts: Vec<u64> = counts
            .iter()
            .scan(0, |at, &c| {
                *at += c;
                Some(*at - c)
            })
            .collect();
        starts.push(n as u64);
        let values32: Vec<u32> = values.iter().map(|&v| v as u32).collect();
        assert_eq!(cpu_runs(&x32).0, values32, "the 32-bit runs are the same");
        for blocks in [1u32, 2, 3] {
            let cfg = LaunchConfig::new([blocks, 1, 1], [compact::BLOCK, 1, 1]);
            let mut count = rt.alloc_zeroed_on::<u64>(&s, 1).unwrap();
            let mut status = rt.alloc_zeroed_on::<u64>(&s, status_words(tiles)).unwrap();
            let mut got_starts = rt.alloc_zeroed_on::<u64>(&s, starts.len()).unwrap();
            let mut got = rt.alloc_zeroed_on::<u64>(&s, values.len()).unwrap();
            compact::unique::launch(
                &s,
                cfg,
                &xb,
                &mut got,
                &mut got_starts,
                &mut count,
                &mut status,
            )
            .unwrap();
            assert_eq!(got.download(&s).unwrap(), values, "u64, {blocks} blocks");
            assert_eq!(got_starts.download(&s).unwrap(), starts, "{blocks} blocks");
            assert_eq!(count.download(&s).unwrap(), [values.len() as u64]);
            let mut got = rt.alloc_zeroed_on::<u32>(&s, values.len()).unwrap();
            compact::unique::launch(
                &s,
                cfg,
                &xb32,
                &mut got,
                &mut got_starts,
                &mut count,
                &mut status,
            )
            .unwrap();
            assert_eq!(got.download(&s).unwrap(), values32, "u32, {blocks} blocks");
            assert_eq!(got_starts.download(&s).unwrap(), starts, "{blocks} blocks");
            // The kernels of `unique_counts`: the runs with their lengths, but each
            // tile's last, then those from the starts.
            let m = values.len();
            let mut got = rt.alloc_zeroed_on::<u64>(&s, m).unwrap();
            let mut got_starts = rt.alloc_zeroed_on::<u64>(&s, m + 1).unwrap();
            let mut got_counts = rt.alloc_zeroed_on::<u64>(&s, m).unwrap();
            let mut ends = rt.alloc_zeroed_on::<u64>(&s, tiles).unwrap();
            let mut count = rt.alloc_zeroed_on::<u64>(&s, 1).unwrap();
            compact::unique_runs::launch(
                &s,
                cfg,
                &xb,
                &mut got,
                &mut got_starts,
                &mut got_counts,
                &mut ends,
                &mut count,
                &mut status,
            )
            .unwrap();
            let tile_ends = ends.download(&s).unwrap();
            let want_ends: Vec<u64> = (0..tiles)
                .map(|k| {
                    let last = starts[..m]
                        .iter()
                        .rposition(|&p| (p as usize) < (k + 1) * tile);
                    match last {
                        Some(r) if starts[r] as usize >= k * tile => r as u64,
                        _ => u64::MAX,
                    }
                })
                .collect();
            assert_eq!(tile_ends, want_ends, "tile ends, {blocks} blocks");
            compact::run_ends::launch(
                &s,
                LaunchConfig::for_len(tiles),
                &got_starts,
                &ends,
                &mut got_counts,
            )
            .unwrap();
            assert_eq!(got.download(&s).unwrap(), values, "runs, {blocks} blocks");
            assert_eq!(got_starts.download(&s).unwrap(), starts, "{blocks} blocks");
            assert_eq!(got_counts.download(&s).unwrap(), counts, "{blocks} blocks");
            assert_eq!(count.download(&s).unwrap(), [m as u64]);
        }
    }

    #[test]
    fn mismatched_lengths_are_refused() {
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        let x = upload(&rt, &s, &[1u32, 2, 3]);
        let f = upload(&rt, &s, &[1u8, 0]);
        assert!(matches!(
            compact::select_flagged(&s, &x, &f),
            Err(Error::InvalidArgument { .. })
        ));
        assert!(matches!(
            compact::partition_flagged(&s, &x, &f),
            Err(Error::InvalidArgument { .. })
        ));
        let f = upload(&rt, &s, &[1u8, 0, 1]);
        let mut short = rt.alloc_zeroed_on::<u32>(&s, 2).unwrap();
        assert!(matches!(
            compact::select_flagged_into(&s, &x, &f, &mut short),
            Err(Error::InvalidArgument { .. })
        ));
    }
}

mod segmented {
    use super::*;
    use xlog_kernels::segmented::{self, Max, Min, Sum};

    fn check<T: Num + xlog_kernels::compact::Compactable>()
    where
        Sum: segmented::SegmentKernel<T>,
        Min: segmented::SegmentKernel<T>,
        Max: segmented::SegmentKernel<T>,
    {
        let rt = gpu_runtime();
        let (p, c) = streams(&rt);
        for n in lib_sizes() {
            for (k, kind) in KINDS.into_iter().enumerate() {
                if big(n) && k > 0 {
                    break;
                }
                let x = make::<T>(kind, n, 71 + n as u64 + k as u64);
                let xb = upload(&rt, &p, &x);
                // Segment shapes: random cuts (empty ones included), one segment,
                // every element its own segment (capped), and keys of few runs.
                let mut r = Rng::from_state(9 + n as u64);
                let mut cuts: Vec<u64> = (0..n.min(5000) / 7)
                    .map(|_| r.next_u64() % (n as u64 + 1))
                    .collect();
                cuts.extend([0, n as u64, 0]);
                cuts.sort();
                let singles: Vec<u64> = (0..=n.min(3000) as u64).collect();
                for offsets in [cuts, vec![0, n as u64], singles] {
                    let ob = upload(&rt, &p, &offsets);
                    let sum = segmented::segmented_reduce::<T, Sum>(&c, &xb, &ob)
                        .unwrap()
                        .download(&c)
                        .unwrap();
                    let min = segmented::segmented_reduce::<T, Min>(&c, &xb, &ob)
                        .unwrap()
                        .download(&c)
                        .unwrap();
                    let max = segmented::segmented_reduce::<T, Max>(&c, &xb, &ob)
                        .unwrap()
                        .download(&c)
                        .unwrap();
                    assert_eq!(sum.len(), offsets.len() - 1);
                    for s in 0..offsets.len() - 1 {
                        let seg = &x[offsets[s] as usize..offsets[s + 1] as usize];
                        let want = seg.iter().fold(T::ZERO, |a, &b| T::add(a, b));
                        let exact = seg.iter().fold(0.0, |a, &b| T::add_exact(a, b));
                        assert!(
                            T::close(sum[s], want, exact, seg.len(), magnitude(seg)),
                            "sum of segment {s} of {n} {kind:?}"
                        );
                        assert_eq!(
                            min[s],
                            seg.iter().fold(T::HIGHEST, |a, &b| T::min(a, b)),
                            "min {s} {n} {kind:?}"
                        );
                        assert_eq!(
                            max[s],
                            seg.iter().fold(T::LOWEST, |a, &b| T::max(a, b)),
                            "max {s} {n} {kind:?}"
                        );
                    }
                }
                // Reduce-by-key over sorted keys with few distinct values.
                let mut keys: Vec<u32> = shaped("few", n, 1000, 4 + n as u64)
                    .iter()
                    .map(|&v| v as u32)
                    .collect();
                keys.sort();
                let by = segmented::reduce_by_key::<u32, T, Sum>(&c, &upload(&rt, &p, &keys), &xb)
                    .unwrap();
                let got_keys = by.keys.download(&c).unwrap();
                let got = by.values.download(&c).unwrap();
                let mut start = 0;
                for (j, &kk) in got_keys.iter().enumerate() {
                    let end = start + keys[start..].iter().take_while(|&&v| v == kk).count();
                    let seg = &x[start..end];
                    let want = seg.iter().fold(T::ZERO, |a, &b| T::add(a, b));
                    let exact = seg.iter().fold(0.0, |a, &b| T::add_exact(a, b));
                    assert!(
                        T::close(got[j], want, exact, seg.len(), magnitude(seg)),
                        "by key {kk} of {n} {kind:?}"
                    );
                    start = end;
                }
                assert_eq!(start, n);
            }
        }
    }

    each_type_matches_the_cpu!(check);

    /// Both shapes of the built-in operators against the CPU, over views of `x`
    /// starting 0 to 3 elements past an aligned address: segments short on
    /// average (a warp each) of every length from 0 to 40 and some of hundreds,
    /// so they start and end at every alignment, with one of 9000 among them (a
    /// warp folds it alone); and three long ones (a block each).
    fn shapes_match_the_cpu<T: Num + xlog_kernels::compact::Compactable>()
    where
        Sum: segmented::SegmentKernel<T>,
        Min: segmented::SegmentKernel<T>,
        Max: segmented::SegmentKernel<T>,
    {
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        let n = 13_001;
        let mut r = Rng::from_state(5);
        let x: Vec<T> = (0..n)
            .map(|i| T::make(Kind::Random, i, n, &mut r))
            .collect();
        let xb = upload(&rt, &s, &x);
        for o in 0..4 {
            let len = (n - o) as u64;
            let mut short = vec![0u64];
            let mut j = 0;
            while *short.last().unwrap() < len {
                let next = match j % 50 {
                    17 if j == 67 => 9000,
                    17 => 300 + j as u64,
                    k => k as u64 % 41,
                };
                short.push((short.last().unwrap() + next).min(len));
                j += 1;
            }
            let long = vec![0, 1, len / 2, len];
            assert!(len <= (short.len() as u64 - 1) * segmented::WARP_SEGMENT_LEN as u64);
            assert!(len > 3 * segmented::WARP_SEGMENT_LEN as u64);
            for offsets in [short, long] {
                let view = xb.slice(o..n);
                let ob = upload(&rt, &s, &offsets);
                let sum = segmented::segmented_reduce::<T, Sum>(&s, &view, &ob).unwrap();
                let min = segmented::segmented_reduce::<T, Min>(&s, &view, &ob).unwrap();
                let max = segmented::segmented_reduce::<T, Max>(&s, &view, &ob).unwrap();
                let (sum, min, max) = (
                    sum.download(&s).unwrap(),
                    min.download(&s).unwrap(),
                    max.download(&s).unwrap(),
                );
                for (k, w) in offsets.windows(2).enumerate() {
                    let seg = &x[o + w[0] as usize..o + w[1] as usize];
                    let want = seg.iter().fold(T::ZERO, |a, &b| T::add(a, b));
                    let exact = seg.iter().fold(0.0, |a, &b| T::add_exact(a, b));
                    assert!(
                        T::close(sum[k], want, exact, seg.len(), magnitude(seg)),
                        "sum of segment {k} ({} long) at view offset {o}",
                        seg.len()
                    );
                    let lo = seg.iter().fold(T::HIGHEST, |a, &b| T::min(a, b));
                    let hi = seg.iter().fold(T::LOWEST, |a, &b| T::max(a, b));
                    assert_eq!(min[k], lo, "min of segment {k} at view offset {o}");
                    assert_eq!(max[k], hi, "max of segment {k} at view offset {o}");
                }
            }
        }
    }

    #[test]
    fn both_shapes_match_the_cpu_at_every_alignment_u32() {
        shapes_match_the_cpu::<u32>();
    }

    #[test]
    fn both_shapes_match_the_cpu_at_every_alignment_f32() {
        shapes_match_the_cpu::<f32>();
    }

    #[test]
    fn both_shapes_match_the_cpu_at_every_alignment_i64() {
        shapes_match_the_cpu::<i64>();
    }

    #[test]
    fn both_shapes_match_the_cpu_at_every_alignment_f64() {
        shapes_match_the_cpu::<f64>();
    }

    #[test]
    fn a_user_operator_runs_per_segment() {
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        let x: Vec<u32> = (0..10_000).map(|i| 1u32 << (i % 31)).collect();
        let offsets: Vec<u64> = vec![0, 1, 40, 40, 9_999, 10_000];
        let got = segmented::segmented_reduce::<u32, segmented::BitOr>(
            &s,
            &upload(&rt, &s, &x),
            &upload(&rt, &s, &offsets),
        )
        .unwrap()
        .download(&s)
        .unwrap();
        let want: Vec<u32> = offsets
            .windows(2)
            .map(|w| x[w[0] as usize..w[1] as usize].iter().fold(0, |a, b| a | b))
            .collect();
        assert_eq!(got, want);
    }

    /// The user-style operator is a generic kernel: `u64` bits past the low 32
    /// reach the result.
    #[test]
    fn a_user_operator_is_generic_over_its_types() {
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        let x: Vec<u64> = (0..10_000).map(|i| 1u64 << (i % 64)).collect();
        let offsets: Vec<u64> = vec![0, 1, 40, 40, 9_999, 10_000];
        let got = segmented::segmented_reduce::<u64, segmented::BitOr>(
            &s,
            &upload(&rt, &s, &x),
            &upload(&rt, &s, &offsets),
        )
        .unwrap()
        .download(&s)
        .unwrap();
        let want: Vec<u64> = offsets
            .windows(2)
            .map(|w| x[w[0] as usize..w[1] as usize].iter().fold(0, |a, b| a | b))
            .collect();
        assert_eq!(got, want);
        assert_eq!(want[2], 0, "an empty segment gives 0");
        assert_eq!(want[3], u64::MAX);
    }
}

/// 10^8 elements, the largest size the library is held to, once per operation on
/// its benchmark's types, against the CPU element by element. Skipped when
/// `XLOG_TEST_MAX_LEN` is lower (the sanitizer passes, the simulator in CI).
#[test]
fn ten_to_the_eighth_elements_match_the_cpu() {
    use xlog_kernels::{compact, gather, histogram, reduce, scan};
    const N: usize = 100_000_000;
    // The runtime first: without a GPU the test fails, whatever the cap.
    let rt = gpu_runtime();
    if !within_cap(N) {
        return;
    }
    let s = rt.new_stream().unwrap();
    let mut r = Rng::from_state(108);

    let x: Vec<i32> = (0..N)
        .map(|_| (r.next_u64() % 2001) as i32 - 1000)
        .collect();
    let xb = upload(&rt, &s, &x);
    let got = scan::inclusive_sum(&s, &xb).unwrap().download(&s).unwrap();
    let mut acc = 0i32;
    for (i, (&v, &g)) in x.iter().zip(&got).enumerate() {
        acc = acc.wrapping_add(v);
        assert_eq!(g, acc, "inclusive scan at {i}");
    }
    drop(got);
    assert_eq!(reduce::sum(&s, &xb).unwrap().download(&s).unwrap(), [acc]);

    let flags: Vec<u8> = (0..N).map(|_| (r.next_u64() & 1) as u8).collect();
    let fb = upload(&rt, &s, &flags);
    let kept: Vec<i32> = x
        .iter()
        .zip(&flags)
        .filter(|p| *p.1 != 0)
        .map(|p| *p.0)
        .collect();
    let got = compact::select_flagged(&s, &xb, &fb)
        .unwrap()
        .download(&s)
        .unwrap();
    assert!(
        got == kept,
        "select: {} kept, {} expected",
        got.len(),
        kept.len()
    );
    drop((got, kept, fb));

    let bytes: Vec<u8> = x.iter().map(|&v| v as u8).collect();
    let mut want_bytes = vec![0u32; 256];
    for &b in &bytes {
        want_bytes[usize::from(b)] += 1;
    }
    let bb = upload(&rt, &s, &bytes);
    let bins = histogram::counts(&s, &bb, 256)
        .unwrap()
        .download(&s)
        .unwrap();
    assert_eq!(bins, want_bytes, "histogram");
    drop((bb, bytes, flags));

    let idx: Vec<u32> = (0..N).map(|_| (r.next_u64() % N as u64) as u32).collect();
    let ib = upload(&rt, &s, &idx);
    let got = gather::gather(&s, &xb, &ib).unwrap().download(&s).unwrap();
    for (i, (&j, &g)) in idx.iter().zip(&got).enumerate() {
        assert_eq!(g, x[j as usize], "gather at {i}");
    }
    drop((got, idx, ib));

    // Runs of sorted keys, one to eight long, and their lengths.
    let mut key = 0i32;
    let keys: Vec<i32> = (0..N)
        .map(|_| {
            key += i32::from(r.next_u64() % 4 == 0);
            key
        })
        .collect();
    let runs = compact::unique_counts(&s, &upload(&rt, &s, &keys)).unwrap();
    let (values, counts) = (
        runs.values.download(&s).unwrap(),
        runs.counts.download(&s).unwrap(),
    );
    assert_eq!(values.len(), key as usize + 1, "number of runs");
    let mut at = 0;
    for (j, (&v, &c)) in values.iter().zip(&counts).enumerate() {
        let len = keys[at..].iter().take_while(|&&k| k == v).count();
        assert!(v == j as i32 && c == len as u64, "run {j}: {v} x {c}");
        at += len;
    }
    assert_eq!(at, N);
    drop((runs, values, counts, keys));

    // Sums of segments of 1000 (the benchmark's shape: a warp each).
    let offsets: Vec<u64> = (0..=N / 1000).map(|j| (j * 1000) as u64).collect();
    let sums = xlog_kernels::segmented::segmented_reduce::<i32, xlog_kernels::segmented::Sum>(
        &s,
        &xb,
        &upload(&rt, &s, &offsets),
    )
    .unwrap()
    .download(&s)
    .unwrap();
    for (j, seg) in x.chunks(1000).enumerate() {
        let want = seg.iter().fold(0i32, |a, &b| a.wrapping_add(b));
        assert_eq!(sums[j], want, "segment {j}");
    }
}
