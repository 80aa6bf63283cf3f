//! GPU suite of the set operations on sorted runs (`set::merge`, `difference`,
//! `intersection`) and the sort by low bits (`sort::sort_keys_low_bits`), opt-in
//! with `--features gpu-tests`; every test fails without a device. Each runs
//! against a CPU reference on sizes 0, 1, tile ± 1 (the merge's tiles of 256
//! output positions), 2^k ± 1 and a large size (capped by `XLOG_TEST_MAX_LEN`),
//! with runs of very different lengths, many equal keys, no overlap and full
//! overlap.

use xlog::{DeviceBuffer, Error, Runtime, Stream};
use xlog_kernels::set::{difference, intersection, merge, Ordered};
use xlog_kernels::sort::{sort_keys_low_bits, Order};
use xlog_test_support::{gpu_runtime, within_test_cap as within_cap, Rng};

const SIZES: &[usize] = &[
    0,
    1,
    2,
    255,
    256,
    257,
    511,
    513,
    4097,
    (1 << 16) + 1,
    (1 << 20) + 3,
    (1 << 23) + 5,
];

fn sizes() -> impl Iterator<Item = usize> {
    SIZES.iter().copied().filter(|&n| within_cap(n))
}

/// Element types of the set operations, made from random bits.
trait Elem: Ordered + Ord + std::fmt::Debug {
    fn from_bits(x: u64) -> Self;
}
impl Elem for u32 {
    fn from_bits(x: u64) -> Self {
        x as u32
    }
}
impl Elem for i32 {
    fn from_bits(x: u64) -> Self {
        x as i32
    }
}
impl Elem for u64 {
    fn from_bits(x: u64) -> Self {
        x
    }
}
impl Elem for i64 {
    fn from_bits(x: u64) -> Self {
        x as i64
    }
}

/// A sorted run of `n` elements drawn from `range` values centred on zero (so
/// signed types get negatives), or the full range of the type when `range` is 0.
fn run<T: Elem>(n: usize, range: u64, seed: u64) -> Vec<T> {
    let mut r = Rng::from_state(seed | 1);
    let mut v: Vec<T> = (0..n)
        .map(|_| {
            let x = r.next_u64();
            if range == 0 {
                T::from_bits(x)
            } else {
                T::from_bits((x % range).wrapping_sub(range / 2))
            }
        })
        .collect();
    v.sort();
    v
}

fn upload<T: xlog::DeviceCopy>(rt: &Runtime, s: &Stream, v: &[T]) -> DeviceBuffer<T> {
    rt.upload_on(s, v).unwrap()
}

/// The pairs of runs every operation is checked on: lengths `(n, m)` for `n` in
/// the sizes and `m` much shorter, as long, and longer; value ranges that make
/// many equal keys, few, or none shared.
fn cases() -> Vec<(usize, usize, u64)> {
    let mut c = Vec::new();
    for n in sizes() {
        for m in [0, 1, n / 64 + 3, n, 2 * n + 1] {
            if !within_cap(m) {
                continue;
            }
            for range in [8, (n as u64 + 1) * 4, 0] {
                if n > 1 << 20 && range != 8 {
                    continue;
                }
                c.push((n, m, range));
            }
        }
    }
    c
}

fn merge_matches_the_cpu<T: Elem>() {
    let rt = gpu_runtime();
    let (s, p) = (rt.new_stream().unwrap(), rt.new_stream().unwrap());
    for (i, (n, m, range)) in cases().into_iter().enumerate() {
        let (a, b) = (
            run::<T>(n, range, 2 * i as u64),
            run::<T>(m, range, 2 * i as u64 + 1),
        );
        // Uploaded on another stream: the merge must wait for the uploads.
        let (da, db) = (upload(&rt, &p, &a), upload(&rt, &p, &b));
        let got = merge(&s, &da, &db).unwrap().download(&s).unwrap();
        let mut want = [a.as_slice(), b.as_slice()].concat();
        want.sort();
        assert_eq!(
            got.len(),
            want.len(),
            "merge of {n} and {m} (range {range})"
        );
        assert!(
            got == want,
            "merge of {n} and {m} (range {range}) differs from the CPU"
        );
    }
}

fn difference_and_intersection_match_the_cpu<T: Elem>() {
    let rt = gpu_runtime();
    let (s, p) = (rt.new_stream().unwrap(), rt.new_stream().unwrap());
    for (i, (n, m, range)) in cases().into_iter().enumerate() {
        let (a, b) = (
            run::<T>(n, range, 7 * i as u64),
            run::<T>(m, range, 7 * i as u64 + 3),
        );
        let (da, db) = (upload(&rt, &p, &a), upload(&rt, &p, &b));
        let mut distinct = a.clone();
        distinct.dedup();
        let (want_in, want_out): (Vec<T>, Vec<T>) =
            distinct.iter().partition(|v| b.binary_search(v).is_ok());
        let got_out = difference(&s, &da, &db).unwrap().download(&s).unwrap();
        let got_in = intersection(&s, &da, &db).unwrap().download(&s).unwrap();
        assert!(
            got_out == want_out,
            "{n} ∖ {m} (range {range}) differs from the CPU"
        );
        assert!(
            got_in == want_in,
            "{n} ∩ {m} (range {range}) differs from the CPU"
        );
    }
}

macro_rules! each_type {
    ($($name:ident: $check:ident::<$t:ty>;)*) => {$(
        #[test]
        fn $name() {
            $check::<$t>();
        }
    )*};
}

each_type! {
    merge_u32_matches_the_cpu: merge_matches_the_cpu::<u32>;
    merge_i32_matches_the_cpu: merge_matches_the_cpu::<i32>;
    merge_u64_matches_the_cpu: merge_matches_the_cpu::<u64>;
    merge_i64_matches_the_cpu: merge_matches_the_cpu::<i64>;
    difference_u32_matches_the_cpu: difference_and_intersection_match_the_cpu::<u32>;
    difference_i32_matches_the_cpu: difference_and_intersection_match_the_cpu::<i32>;
    difference_u64_matches_the_cpu: difference_and_intersection_match_the_cpu::<u64>;
    difference_i64_matches_the_cpu: difference_and_intersection_match_the_cpu::<i64>;
}

/// Equal elements of both runs all reach the output.
#[test]
fn merge_keeps_every_copy_of_a_tie_and_leaves_its_inputs_alone() {
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let a = upload(&rt, &s, &[1u64, 5, 5, 9]);
    let b = upload(&rt, &s, &[0u64, 5, 9, 9, 10]);
    let got = merge(&s, &a, &b).unwrap().download(&s).unwrap();
    assert_eq!(got, [0, 1, 5, 5, 5, 9, 9, 9, 10]);
    assert_eq!(a.download(&s).unwrap(), [1, 5, 5, 9]);
    assert_eq!(b.download(&s).unwrap(), [0, 5, 9, 9, 10]);
}

#[test]
fn sort_keys_low_bits_matches_a_stable_cpu_sort_by_those_bits() {
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    for n in sizes() {
        for bits in [1u32, 8, 13, 31, 32, 40, 64] {
            let mut r = Rng::from_state((n as u64 * 131 + bits as u64) | 1);
            let keys: Vec<u64> = (0..n).map(|_| r.next_u64()).collect();
            let mut want = keys.clone();
            // The passes cover whole bytes: the bits sorted by are `bits` rounded up to 8.
            let covered = bits.div_ceil(8) * 8;
            let mask = if covered == 64 {
                u64::MAX
            } else {
                (1u64 << covered) - 1
            };
            want.sort_by_key(|k| k & mask);
            let mut d = upload(&rt, &s, &keys);
            sort_keys_low_bits(&s, &mut d, Order::Ascending, bits).unwrap();
            assert!(d.download(&s).unwrap() == want, "{n} keys by {bits} bits");
            if n > 1 << 20 {
                break;
            }
        }
    }
}

#[test]
fn sort_keys_low_bits_refuses_zero_or_too_many_bits_and_leaves_the_keys() {
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let mut d = upload(&rt, &s, &[3u32, 1, 2]);
    for bits in [0, 33] {
        let e = sort_keys_low_bits(&s, &mut d, Order::Ascending, bits).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
        assert!(e.to_string().contains("pass 1 to 32"), "{e}");
    }
    assert_eq!(d.download(&s).unwrap(), [3, 1, 2]);
}
