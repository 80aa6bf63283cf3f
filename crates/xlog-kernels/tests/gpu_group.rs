//! GPU suite of the dense group-by (`dense_group`: count, sum, min, max by a key
//! in `[0, domain)`), opt-in with `--features gpu-tests`; every test fails without
//! a device. Each aggregate runs against a CPU reference for every key and value
//! type, on sizes 0, 1, odd sizes, the block ± 1, the rows a block takes ± 1 and a
//! larger size, over domains whose accumulators fit the shared copy, fill it, and
//! overflow it into global atomics; inputs are uploaded on another stream.
//! `a_hundred_million_rows_match_the_cpu` runs 10^8 rows (fewer under
//! `XLOG_TEST_MAX_LEN`, the simulator's and the sanitizers' cap).

use std::fmt::Debug;

use xlog::{DeviceBuffer, Error, GraphArena, GraphRecorder, Runtime, Stream};
use xlog_kernels::dense_group::{self, Count, Extreme, Key, Sum};
use xlog_test_support::{gpu_runtime, within_test_cap, Rng};

/// Row counts around the kernels' boundaries: a block (256 threads) and the rows
/// one block takes before the grid grows (4096), and a larger input.
const SIZES: &[usize] = &[0, 1, 3, 255, 256, 257, 4095, 4096, 4097, 65_537, 1 << 20];

/// Domains: one key, a few, a byte's worth, one-word accumulators that fill 48 KiB
/// of shared memory and one more (12288, 12289), two-word ones that do (6144) and
/// one more.
const DOMAINS: &[usize] = &[1, 7, 256, 3000, 6144, 6145, 12_288, 12_289];

fn sizes() -> impl Iterator<Item = usize> {
    SIZES.iter().copied().filter(|&n| within_test_cap(n))
}

fn streams(rt: &Runtime) -> (Stream, Stream) {
    (rt.new_stream().unwrap(), rt.new_stream().unwrap())
}

/// A key type of the tests, made from a number below the domain.
trait TestKey: Key + Copy + Debug {
    const NAME: &'static str;
    /// The largest domain this type can name every key of.
    const MAX: usize;
    fn of(k: usize) -> Self;
}

macro_rules! test_key {
    ($($t:ty),*) => {$(
        impl TestKey for $t {
            const NAME: &'static str = stringify!($t);
            const MAX: usize = <$t>::MAX as usize + 1;
            fn of(k: usize) -> Self {
                k as $t
            }
        }
    )*};
}
test_key!(u8, u16, u32);

/// A value type of the tests: random values, and the CPU's aggregates.
trait TestValue: xlog::DeviceCopy + PartialEq + Debug {
    const NAME: &'static str;
    const FLOAT: bool;
    fn random(rng: &mut Rng) -> Self;
    /// The sum the kernel computes, exactly (integers wrap); for floats an `f64`
    /// sum with a bound on the difference the order of the additions can make.
    fn sum(v: &[Self]) -> (Self, f64);
    fn distance(a: Self, b: Self) -> f64;
    /// `a < b`, NaNs unordered.
    fn less(a: Self, b: Self) -> bool;
    fn is_nan(self) -> bool;
    fn highest() -> Self;
    fn lowest() -> Self;
}

macro_rules! test_int {
    ($($t:ty),*) => {$(
        impl TestValue for $t {
            const NAME: &'static str = stringify!($t);
            const FLOAT: bool = false;
            fn random(rng: &mut Rng) -> Self {
                rng.next_u64() as $t
            }
            fn sum(v: &[Self]) -> (Self, f64) {
                (v.iter().fold(0 as $t, |a, &b| a.wrapping_add(b)), 0.0)
            }
            fn distance(a: Self, b: Self) -> f64 {
                if a == b { 0.0 } else { f64::INFINITY }
            }
            fn less(a: Self, b: Self) -> bool {
                a < b
            }
            fn is_nan(self) -> bool {
                false
            }
            fn highest() -> Self {
                <$t>::MAX
            }
            fn lowest() -> Self {
                <$t>::MIN
            }
        }
    )*};
}
test_int!(u32, i32, u64, i64);

macro_rules! test_float {
    ($($t:ty),*) => {$(
        impl TestValue for $t {
            const NAME: &'static str = stringify!($t);
            const FLOAT: bool = true;
            fn random(rng: &mut Rng) -> Self {
                // Values in [-1000, 1000) with a fraction, and an occasional NaN,
                // infinity or signed zero.
                match rng.below(1000) {
                    0 => <$t>::NAN,
                    1 => -0.0,
                    2 => 0.0,
                    3 => <$t>::INFINITY,
                    _ => (rng.below(2_000_000) as f64 / 1000.0 - 1000.0) as $t,
                }
            }
            fn sum(v: &[Self]) -> (Self, f64) {
                let exact: f64 = v.iter().map(|&x| x as f64).sum();
                let magnitude: f64 = v.iter().map(|&x| (x as f64).abs()).sum();
                (exact as $t, magnitude * v.len() as f64 * <$t>::EPSILON as f64)
            }
            fn distance(a: Self, b: Self) -> f64 {
                if a.is_nan() && b.is_nan() || a == b {
                    0.0
                } else {
                    (a as f64 - b as f64).abs()
                }
            }
            fn less(a: Self, b: Self) -> bool {
                a < b || (a == 0.0 && b == 0.0 && a.is_sign_negative() && b.is_sign_positive())
            }
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            fn highest() -> Self {
                <$t>::INFINITY
            }
            fn lowest() -> Self {
                <$t>::NEG_INFINITY
            }
        }
    )*};
}
test_float!(f32, f64);

/// Keys below `domain` (most of them; a few keys repeat heavily) and values.
fn rows<K: TestKey, T: TestValue>(n: usize, domain: usize, seed: u64) -> (Vec<K>, Vec<T>) {
    let mut rng = Rng::new(seed);
    let keys = (0..n)
        .map(|_| {
            let k = if rng.chance(20) {
                rng.below(domain.min(3))
            } else {
                rng.below(domain)
            };
            K::of(k)
        })
        .collect();
    let values = (0..n).map(|_| T::random(&mut rng)).collect();
    (keys, values)
}

/// Each key's values.
fn groups<K: TestKey, T: TestValue>(keys: &[K], values: &[T], domain: usize) -> Vec<Vec<T>> {
    let mut g = vec![Vec::new(); domain];
    for (k, &v) in keys.iter().zip(values) {
        g[Into::<u64>::into(*k) as usize].push(v);
    }
    g
}

fn check_sums<T: TestValue>(got: &[T], groups: &[Vec<T>], what: &str) {
    assert_eq!(got.len(), groups.len(), "{what}");
    for (k, (g, &v)) in groups.iter().zip(got).enumerate() {
        let (want, slack) = T::sum(g);
        // With a NaN or an infinity among the values the sum is that (or NaN, for
        // infinities of both signs), whatever the order; else within the slack.
        let ok = if slack.is_finite() {
            T::distance(v, want) <= slack
        } else {
            T::distance(v, want) == 0.0
        };
        assert!(
            ok,
            "{what}: key {k}: got {v:?}, want {want:?} (slack {slack})"
        );
    }
}

fn extreme<T: TestValue>(g: &[T], greatest: bool) -> T {
    let mut best = if greatest { T::lowest() } else { T::highest() };
    for &v in g {
        if v.is_nan() {
            continue;
        }
        let better = if greatest {
            T::less(best, v)
        } else {
            T::less(v, best)
        };
        if better {
            best = v;
        }
    }
    best
}

/// Bitwise for floats (the sign of a zero counts), `==` for integers.
fn same<T: TestValue>(a: T, b: T) -> bool {
    if T::FLOAT {
        a == b && (T::less(a, b) == T::less(b, a)) || (a.is_nan() && b.is_nan())
    } else {
        a == b
    }
}

fn check_all<K: TestKey, T>()
where
    u32: Count<K>,
    u64: Count<K>,
    T: TestValue + Sum<K> + Extreme<K>,
{
    let rt = gpu_runtime();
    let (p, c) = streams(&rt);
    for n in sizes() {
        for &domain in DOMAINS.iter().filter(|&&d| d <= K::MAX) {
            // The large input only over a few domains: the shapes repeat.
            if n > 100_000 && ![7, 6145, 12_289].contains(&domain) {
                continue;
            }
            let what = format!(
                "{} keys, {} values, n {n}, domain {domain}",
                K::NAME,
                T::NAME
            );
            let seed = n as u64 * 31 + domain as u64;
            let (keys, values) = rows::<K, T>(n, domain, seed);
            let g = groups(&keys, &values, domain);
            let kb = rt.upload_on(&p, &keys).unwrap();
            let vb = rt.upload_on(&p, &values).unwrap();

            let counts = dense_group::count::<u32, K>(&c, &kb, domain).unwrap();
            let want: Vec<u32> = g.iter().map(|g| g.len() as u32).collect();
            assert_eq!(counts.download(&c).unwrap(), want, "count u32, {what}");
            let counts = dense_group::count::<u64, K>(&c, &kb, domain).unwrap();
            let want: Vec<u64> = g.iter().map(|g| g.len() as u64).collect();
            assert_eq!(counts.download(&c).unwrap(), want, "count u64, {what}");

            let sums = dense_group::sum(&c, &kb, &vb, domain).unwrap();
            check_sums(&sums.download(&c).unwrap(), &g, &format!("sum, {what}"));

            for greatest in [false, true] {
                let got = if greatest {
                    dense_group::max(&c, &kb, &vb, domain)
                } else {
                    dense_group::min(&c, &kb, &vb, domain)
                }
                .unwrap()
                .download(&c)
                .unwrap();
                for (k, (g, &v)) in g.iter().zip(&got).enumerate() {
                    let want = extreme(g, greatest);
                    assert!(
                        same(v, want),
                        "{} {what}: key {k}: got {v:?}, want {want:?}",
                        if greatest { "max" } else { "min" }
                    );
                }
            }
        }
    }
}

/// One `#[test]` per key and value type.
macro_rules! each_pair_matches_the_cpu {
    ($($name:ident: $k:ty, $t:ty;)*) => {$(
        #[test]
        fn $name() {
            check_all::<$k, $t>();
        }
    )*};
}

// Every value type once with `u32` keys; the narrow keys with two value types each.
each_pair_matches_the_cpu! {
    u32_keys_u32_values_match_the_cpu: u32, u32;
    u32_keys_i32_values_match_the_cpu: u32, i32;
    u32_keys_f32_values_match_the_cpu: u32, f32;
    u32_keys_u64_values_match_the_cpu: u32, u64;
    u32_keys_i64_values_match_the_cpu: u32, i64;
    u32_keys_f64_values_match_the_cpu: u32, f64;
    u8_keys_i32_values_match_the_cpu: u8, i32;
    u8_keys_f64_values_match_the_cpu: u8, f64;
    u16_keys_u64_values_match_the_cpu: u16, u64;
    u16_keys_f32_values_match_the_cpu: u16, f32;
}

/// 10^8 rows over 4096 keys (the largest size `XLOG_TEST_MAX_LEN` allows of
/// 10^8, 2^20 and 2^14): counts, 64-bit sums and maxima, 32-bit minima.
#[test]
fn a_hundred_million_rows_match_the_cpu() {
    let rt = gpu_runtime();
    let n = [100_000_000, 1 << 20, 1 << 14]
        .into_iter()
        .find(|&n| within_test_cap(n))
        .unwrap_or(1000);
    let s = rt.new_stream().unwrap();
    let domain = 4096;
    let mut rng = Rng::new(77);
    let keys: Vec<u32> = (0..n).map(|_| rng.below(domain) as u32).collect();
    let values: Vec<i64> = (0..n).map(|_| rng.next_u64() as i64 >> 20).collect();
    let mut count = vec![0u32; domain];
    let mut sum = vec![0i64; domain];
    let mut max = vec![i64::MIN; domain];
    for (&k, &v) in keys.iter().zip(&values) {
        count[k as usize] += 1;
        sum[k as usize] = sum[k as usize].wrapping_add(v);
        max[k as usize] = max[k as usize].max(v);
    }
    let kb = rt.upload_on(&s, &keys).unwrap();
    let vb = rt.upload_on(&s, &values).unwrap();
    let got = dense_group::count::<u32, u32>(&s, &kb, domain).unwrap();
    assert_eq!(got.download(&s).unwrap(), count);
    let got = dense_group::sum(&s, &kb, &vb, domain).unwrap();
    assert_eq!(got.download(&s).unwrap(), sum);
    let got = dense_group::max(&s, &kb, &vb, domain).unwrap();
    assert_eq!(got.download(&s).unwrap(), max);
    // The 32-bit paths on the same keys: u32 values, summed and minimised.
    let small: Vec<f32> = values.iter().map(|&v| (v & 0xffff) as f32).collect();
    let vb = rt.upload_on(&s, &small).unwrap();
    let mut min = vec![f32::INFINITY; domain];
    for (&k, &v) in keys.iter().zip(&small) {
        min[k as usize] = min[k as usize].min(v);
    }
    let got = dense_group::min(&s, &kb, &vb, domain).unwrap();
    assert_eq!(got.download(&s).unwrap(), min);
}

/// A key outside the domain: each eager call fails naming the first position
/// holding one; a recorded call leaves the position in its error word.
#[test]
fn keys_outside_the_domain_are_reported_at_their_first_position() {
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let domain = 10;
    for n in sizes().filter(|&n| n >= 3) {
        // Bad keys at positions n - 1 and 2 (the first), the rest inside.
        let mut keys: Vec<u16> = (0..n).map(|i| (i % domain) as u16).collect();
        keys[n - 1] = 10;
        keys[2] = 4000;
        // Small integers: every sum is exact in f32, whatever the order.
        let values: Vec<f32> = (0..n).map(|i| (i % 100) as f32).collect();
        let kb = rt.upload_on(&s, &keys).unwrap();
        let vb = rt.upload_on(&s, &values).unwrap();
        let want = "key 4000 at position 2 is outside the domain of 10 keys";
        let results = [
            dense_group::count::<u64, u16>(&s, &kb, domain).map(drop),
            dense_group::sum(&s, &kb, &vb, domain).map(drop),
            dense_group::min(&s, &kb, &vb, domain).map(drop),
            dense_group::max(&s, &kb, &vb, domain).map(drop),
        ];
        for (op, r) in ["count", "sum", "min", "max"].iter().zip(results) {
            match r {
                Err(Error::InvalidArgument { what, reason }) => {
                    assert!(what.ends_with(op), "{what}");
                    assert!(reason.contains(want), "{op} {n}: {reason}");
                }
                other => panic!("{op} {n}: {other:?}"),
            }
        }
        // Recorded: the rows inside the domain are aggregated, the word says where
        // the first bad key is, and a replay on good keys clears it.
        let arena = GraphArena::new();
        let mut rec = GraphRecorder::new(&s);
        let sums = dense_group::record_sum(&mut rec, &arena, &kb, &vb, domain).unwrap();
        let graph = rec.instantiate().unwrap();
        graph.launch(&s).unwrap();
        assert_eq!(sums.first_bad.download(&s).unwrap(), [2], "{n}");
        let mut want = vec![0.0f32; domain];
        for (i, &k) in keys.iter().enumerate() {
            if (k as usize) < domain {
                want[k as usize] += (i % 100) as f32;
            }
        }
        assert_eq!(sums.out.download(&s).unwrap(), want, "{n}");
    }
}

#[test]
fn bad_arguments_are_refused_before_anything_runs() {
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let kb = rt.upload_on(&s, &[1u8, 2, 3]).unwrap();
    let vb = rt.upload_on(&s, &[1.0f64, 2.0]).unwrap();
    let refused = |r: xlog::Result<DeviceBuffer<f64>>, want: &str| match r {
        Err(Error::InvalidArgument { reason, .. }) => {
            assert!(reason.contains(want), "{reason}")
        }
        other => panic!("{want}: {other:?}"),
    };
    refused(dense_group::sum(&s, &kb, &vb, 8), "3 keys but 2 values");
    refused(dense_group::min(&s, &kb, &vb, 8), "3 keys but 2 values");
    refused(dense_group::max(&s, &kb, &vb, 8), "3 keys but 2 values");
    let vb = rt.upload_on(&s, &[1.0f64, 2.0, 3.0]).unwrap();
    for domain in [0, dense_group::MAX_DOMAIN + 1] {
        refused(dense_group::sum(&s, &kb, &vb, domain), "pass from 1 to");
        assert!(matches!(
            dense_group::count::<u32, u8>(&s, &kb, domain),
            Err(Error::InvalidArgument { .. })
        ));
    }
}

/// Empty inputs give each key its identity; keys no row names too.
#[test]
fn keys_without_rows_get_the_identity() {
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let empty_k = rt.upload_on::<u32>(&s, &[]).unwrap();
    let empty_v = rt.upload_on::<f32>(&s, &[]).unwrap();
    let c = dense_group::count::<u32, u32>(&s, &empty_k, 3).unwrap();
    assert_eq!(c.download(&s).unwrap(), [0, 0, 0]);
    let sum = dense_group::sum(&s, &empty_k, &empty_v, 3).unwrap();
    assert_eq!(sum.download(&s).unwrap(), [0.0; 3]);
    let min = dense_group::min(&s, &empty_k, &empty_v, 3).unwrap();
    assert_eq!(min.download(&s).unwrap(), [f32::INFINITY; 3]);
    // Key 1 has only NaNs, key 2 no row; zeros are ordered by sign.
    let kb = rt.upload_on(&s, &[0u8, 0, 1, 0]).unwrap();
    let vb = rt.upload_on(&s, &[0.0f64, -0.0, f64::NAN, 0.0]).unwrap();
    let min = dense_group::min(&s, &kb, &vb, 3)
        .unwrap()
        .download(&s)
        .unwrap();
    assert_eq!(
        min.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        [
            (-0.0f64).to_bits(),
            f64::INFINITY.to_bits(),
            f64::INFINITY.to_bits()
        ]
    );
    let max = dense_group::max(&s, &kb, &vb, 3)
        .unwrap()
        .download(&s)
        .unwrap();
    assert_eq!(
        max.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        [
            0.0f64.to_bits(),
            f64::NEG_INFINITY.to_bits(),
            f64::NEG_INFINITY.to_bits()
        ]
    );
    let ib = rt.upload_on(&s, &[-5i32, 7, 1, -9]).unwrap();
    let max = dense_group::max(&s, &kb, &ib, 3).unwrap();
    assert_eq!(max.download(&s).unwrap(), [7, 1, i32::MIN]);
    let min = dense_group::min(&s, &kb, &ib, 3).unwrap();
    assert_eq!(min.download(&s).unwrap(), [-9, 1, i32::MAX]);
}

/// Recorded calls start from the identity at every replay, and match the eager
/// calls.
#[test]
fn recorded_group_bys_aggregate_afresh_at_every_replay() {
    let rt = gpu_runtime();
    let (p, c) = streams(&rt);
    for n in sizes() {
        let domain = 300;
        let (keys, values) = rows::<u16, i64>(n, domain, 5 + n as u64);
        let kb = rt.upload_on(&p, &keys).unwrap();
        let vb = rt.upload_on(&p, &values).unwrap();
        let arena = GraphArena::new();
        let mut rec = GraphRecorder::new(&c);
        let count = dense_group::record_count::<u32, u16>(&mut rec, &arena, &kb, domain).unwrap();
        let sum = dense_group::record_sum(&mut rec, &arena, &kb, &vb, domain).unwrap();
        let min = dense_group::record_min(&mut rec, &arena, &kb, &vb, domain).unwrap();
        let max = dense_group::record_max(&mut rec, &arena, &kb, &vb, domain).unwrap();
        let graph = rec.instantiate().unwrap();
        let eager = (
            dense_group::count::<u32, u16>(&p, &kb, domain)
                .unwrap()
                .download(&p)
                .unwrap(),
            dense_group::sum(&p, &kb, &vb, domain)
                .unwrap()
                .download(&p)
                .unwrap(),
            dense_group::min(&p, &kb, &vb, domain)
                .unwrap()
                .download(&p)
                .unwrap(),
            dense_group::max(&p, &kb, &vb, domain)
                .unwrap()
                .download(&p)
                .unwrap(),
        );
        for replay in 0..2 {
            graph.launch(&c).unwrap();
            let got = (
                count.out.download(&p).unwrap(),
                sum.out.download(&p).unwrap(),
                min.out.download(&p).unwrap(),
                max.out.download(&p).unwrap(),
            );
            assert_eq!(got, eager, "{n}, replay {replay}");
            for r in [count.first_bad, sum.first_bad, min.first_bad, max.first_bad] {
                assert_eq!(r.download(&p).unwrap(), [u64::MAX]);
            }
        }
    }
}
