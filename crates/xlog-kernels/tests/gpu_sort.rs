//! GPU suite of the radix sort (`xlog_kernels::sort`), opt-in with
//! `--features gpu-tests`; every test fails without a device. Every key type, both
//! orders, keys alone and with their permutation, against a CPU stable sort, on
//! sizes around the block (256), the tiles (4096, and 7168 for 32-bit keys alone),
//! 2^k ± 1 and 2^24 + 7 (capped by
//! `XLOG_TEST_MAX_LEN` for the compute-sanitizer passes), and on all-equal,
//! sorted, reverse-sorted, few-distinct and full-range data; stability is checked
//! through the permutation.

use std::cmp::Ordering;

use xlog::{Error, Runtime, Stream};
use xlog_kernels::sort::{self, Key, Order, TILE, WIDE_TILE};
use xlog_test_support::{gpu_runtime, within_test_cap as within_cap, Rng};

const SIZES: &[usize] = &[
    0,
    1,
    2,
    255,
    256,
    257,
    TILE - 1,
    TILE,
    TILE + 1,
    WIDE_TILE - 1,
    WIDE_TILE,
    WIDE_TILE + 1,
    3 * WIDE_TILE + 5,
    (1 << 16) - 1,
    (1 << 16) + 1,
    32 * TILE + 1,
    (1 << 20) + 1,
    (1 << 24) + 7,
];

/// Sizes past which only the cheaper combinations run (the CPU reference takes
/// seconds there).
const LARGE: usize = 1 << 20;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// Every bit pattern (floats: NaNs, infinities, subnormals, both zeros).
    FullRange,
    AllEqual,
    Sorted,
    Reversed,
    FewDistinct,
}

const KINDS: [Kind; 5] = [
    Kind::FullRange,
    Kind::AllEqual,
    Kind::Sorted,
    Kind::Reversed,
    Kind::FewDistinct,
];

trait TestKey: Key + Copy + std::fmt::Debug {
    fn from_bits(b: u64) -> Self;
    fn from_rank(i: usize) -> Self;
    /// The key order, written independently of the kernels' bit map.
    fn order(a: &Self, b: &Self) -> Ordering;
    fn bits(self) -> u64;
}

macro_rules! int_key {
    ($($t:ty),*) => {$(
        impl TestKey for $t {
            fn from_bits(b: u64) -> Self { b as $t }
            fn from_rank(i: usize) -> Self { (i as $t).wrapping_sub(1000) }
            fn order(a: &Self, b: &Self) -> Ordering { a.cmp(b) }
            fn bits(self) -> u64 { self as u64 }
        }
    )*};
}
int_key!(u32, i32, u64, i64);

macro_rules! float_key {
    ($($t:ty, $b:ty),*) => {$(
        impl TestKey for $t {
            fn from_bits(b: u64) -> Self { <$t>::from_bits(b as $b) }
            fn from_rank(i: usize) -> Self { i as $t * 0.25 - 100.0 }
            fn order(a: &Self, b: &Self) -> Ordering {
                match (a.is_nan(), b.is_nan()) {
                    (true, true) => Ordering::Equal,
                    (true, false) => Ordering::Greater,
                    (false, true) => Ordering::Less,
                    // total_cmp puts -0.0 before +0.0, as the sort does.
                    (false, false) => a.total_cmp(b),
                }
            }
            fn bits(self) -> u64 { self.to_bits() as u64 }
        }
    )*};
}
float_key!(f32, u32, f64, u64);

fn make<K: TestKey>(kind: Kind, n: usize, seed: u64) -> Vec<K> {
    let mut r = Rng::from_state(seed | 1);
    (0..n)
        .map(|i| match kind {
            Kind::FullRange => K::from_bits(r.next_u64()),
            Kind::AllEqual => K::from_rank(7),
            Kind::Sorted => K::from_rank(i),
            Kind::Reversed => K::from_rank(n - i),
            Kind::FewDistinct => K::from_rank((r.next_u64() % 5) as usize * 1000),
        })
        .collect()
}

/// The stable sorting permutation of `x` on the CPU.
fn cpu_perm<K: TestKey>(x: &[K], order: Order) -> Vec<usize> {
    let mut p: Vec<usize> = (0..x.len()).collect();
    match order {
        Order::Ascending => p.sort_by(|&a, &b| K::order(&x[a], &x[b])),
        Order::Descending => p.sort_by(|&a, &b| K::order(&x[b], &x[a])),
    }
    p
}

fn streams(rt: &Runtime) -> (Stream, Stream) {
    (rt.new_stream().unwrap(), rt.new_stream().unwrap())
}

fn first_difference(got: &[u64], want: &[u64]) -> Option<(usize, u64, u64)> {
    got.iter()
        .zip(want)
        .enumerate()
        .find(|(_, (g, w))| g != w)
        .map(|(i, (&g, &w))| (i, g, w))
}

/// Sorts keys in place and through the permutation, both orders, and compares the
/// bits with the CPU's stable sort.
fn check<K: TestKey>() {
    let rt = gpu_runtime();
    let (p, s) = streams(&rt);
    for (case, &n) in SIZES.iter().filter(|&&n| within_cap(n)).enumerate() {
        for kind in KINDS {
            if n >= LARGE && !matches!(kind, Kind::FullRange | Kind::FewDistinct) {
                continue;
            }
            let x = make::<K>(kind, n, 0x5eed + case as u64);
            for order in [Order::Ascending, Order::Descending] {
                let perm = cpu_perm(&x, order);
                let want: Vec<u64> = perm.iter().map(|&i| x[i].bits()).collect();
                let what = format!("{} n={n} {kind:?} {order:?}", std::any::type_name::<K>());

                // In place (uploaded on another stream: the sort must fence on it).
                let mut buf = rt.upload_on(&p, &x).unwrap();
                sort::sort_keys(&s, &mut buf, order).unwrap();
                let got: Vec<u64> = buf.download(&s).unwrap().iter().map(|k| k.bits()).collect();
                assert_eq!(got.len(), n, "{what}: length");
                if let Some(d) = first_difference(&got, &want) {
                    panic!(
                        "{what}: sort_keys differs at {} (got {:#x}, want {:#x})",
                        d.0, d.1, d.2
                    );
                }

                // The permutation: equal to the CPU's stable one, so the sort is stable.
                if n >= LARGE && order == Order::Ascending {
                    continue;
                }
                let (keys, idx) =
                    sort::sort_with_indices::<K, u32>(&s, &buf_input(&rt, &p, &x), order).unwrap();
                let got: Vec<u64> = keys
                    .download(&s)
                    .unwrap()
                    .iter()
                    .map(|k| k.bits())
                    .collect();
                if let Some(d) = first_difference(&got, &want) {
                    panic!(
                        "{what}: sort_with_indices keys differ at {} (got {:#x}, want {:#x})",
                        d.0, d.1, d.2
                    );
                }
                let idx = idx.download(&s).unwrap();
                if let Some(i) = (0..n).find(|&i| idx[i] as usize != perm[i]) {
                    panic!(
                        "{what}: permutation differs at {i} (got {}, want {}): not stable",
                        idx[i], perm[i]
                    );
                }
            }
        }
    }
}

fn buf_input<K: TestKey>(rt: &Runtime, p: &Stream, x: &[K]) -> xlog::DeviceBuffer<K> {
    rt.upload_on(p, x).unwrap()
}

#[test]
fn u32_keys_match_a_cpu_stable_sort() {
    check::<u32>();
}
#[test]
fn i32_keys_match_a_cpu_stable_sort() {
    check::<i32>();
}
#[test]
fn f32_keys_match_a_cpu_stable_sort() {
    check::<f32>();
}
#[test]
fn u64_keys_match_a_cpu_stable_sort() {
    check::<u64>();
}
#[test]
fn i64_keys_match_a_cpu_stable_sort() {
    check::<i64>();
}
#[test]
fn f64_keys_match_a_cpu_stable_sort() {
    check::<f64>();
}

/// NaNs of both signs and several payloads, both zeros and both infinities,
/// repeated so that stability shows.
#[test]
fn float_specials_sort_with_nans_last_and_negative_zero_first() {
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let specials = [
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7f80_0001),
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1.0,
        -1.0,
        f32::MIN_POSITIVE / 2.0,
    ];
    let x: Vec<f32> = (0..3 * TILE + 5)
        .map(|i| specials[(i * 7) % specials.len()])
        .collect();
    for order in [Order::Ascending, Order::Descending] {
        let perm = cpu_perm(&x, order);
        let b = rt.upload_on(&s, &x).unwrap();
        let (keys, idx) = sort::sort_with_indices::<f32, u64>(&s, &b, order).unwrap();
        let keys = keys.download(&s).unwrap();
        let idx = idx.download(&s).unwrap();
        assert_eq!(
            idx,
            perm.iter().map(|&i| i as u64).collect::<Vec<_>>(),
            "{order:?}"
        );
        let bits: Vec<u32> = keys.iter().map(|k| k.to_bits()).collect();
        let want: Vec<u32> = perm.iter().map(|&i| x[i].to_bits()).collect();
        assert_eq!(bits, want, "{order:?}");
        let nan_at = keys.iter().position(|k| k.is_nan()).unwrap();
        match order {
            Order::Ascending => {
                assert!(keys[nan_at..].iter().all(|k| k.is_nan()), "NaNs last");
                let neg = keys.iter().position(|k| k.to_bits() == (-0.0f32).to_bits());
                let pos = keys.iter().position(|k| k.to_bits() == 0);
                assert!(neg < pos, "-0.0 before +0.0");
            }
            Order::Descending => assert_eq!(nan_at, 0, "NaNs first when descending"),
        }
    }
}

/// Pairs sorted in place carry their values; `u64` values, 64-bit keys.
#[test]
fn pairs_in_place_carry_their_values() {
    let rt = gpu_runtime();
    let (p, s) = streams(&rt);
    for n in [1, 300, TILE + 1, 3 * TILE + 17, (1 << 18) + 3] {
        let x = make::<i64>(Kind::FewDistinct, n, 99);
        let v: Vec<u64> = (0..n as u64).map(|i| i * 3 + 1).collect();
        for order in [Order::Ascending, Order::Descending] {
            let perm = cpu_perm(&x, order);
            let mut kb = rt.upload_on(&p, &x).unwrap();
            let mut vb = rt.upload_on(&p, &v).unwrap();
            sort::sort_pairs(&s, &mut kb, &mut vb, order).unwrap();
            let want: Vec<u64> = perm.iter().map(|&i| v[i]).collect();
            assert_eq!(vb.download(&s).unwrap(), want, "n={n} {order:?}");
            let want: Vec<i64> = perm.iter().map(|&i| x[i]).collect();
            assert_eq!(kb.download(&s).unwrap(), want, "n={n} {order:?}");
        }
        let y = make::<f32>(Kind::FullRange, n, 7);
        let w: Vec<u32> = (0..n as u32).rev().collect();
        let perm = cpu_perm(&y, Order::Ascending);
        let mut kb = rt.upload_on(&p, &y).unwrap();
        let mut vb = rt.upload_on(&p, &w).unwrap();
        sort::sort_pairs(&s, &mut kb, &mut vb, Order::Ascending).unwrap();
        let want: Vec<u32> = perm.iter().map(|&i| w[i]).collect();
        assert_eq!(vb.download(&s).unwrap(), want, "f32/u32 n={n}");
    }
}

/// Every value type moves with every key type: values made from the input
/// position, so a value that moved with the wrong key, or was torn by its narrow
/// stores, shows as a wrong value; both orders and a partial last tile.
#[test]
fn pairs_carry_values_of_every_type_with_every_key_type() {
    fn case<K: TestKey, V>(rt: &Runtime, n: usize, make_value: fn(usize) -> V)
    where
        V: sort::Value + PartialEq + std::fmt::Debug,
    {
        let (p, s) = streams(rt);
        let x = make::<K>(Kind::FewDistinct, n, 5);
        let v: Vec<V> = (0..n).map(make_value).collect();
        for order in [Order::Ascending, Order::Descending] {
            let perm = cpu_perm(&x, order);
            let mut kb = rt.upload_on(&p, &x).unwrap();
            let mut vb = rt.upload_on(&p, &v).unwrap();
            sort::sort_pairs(&s, &mut kb, &mut vb, order).unwrap();
            let want: Vec<V> = perm.iter().map(|&i| make_value(i)).collect();
            let what = format!(
                "{} keys, {} values, n={n} {order:?}",
                std::any::type_name::<K>(),
                std::any::type_name::<V>()
            );
            assert_eq!(vb.download(&s).unwrap(), want, "{what}");
            let want: Vec<u64> = perm.iter().map(|&i| x[i].bits()).collect();
            let got: Vec<u64> = kb
                .download(&s)
                .unwrap()
                .into_iter()
                .map(TestKey::bits)
                .collect();
            assert_eq!(got, want, "{what}");
        }
    }
    fn values<K: TestKey>(rt: &Runtime, n: usize) {
        case::<K, u8>(rt, n, |i| (i * 7) as u8);
        case::<K, u16>(rt, n, |i| (i * 7) as u16);
        case::<K, u32>(rt, n, |i| i as u32 ^ 0xdead);
        case::<K, i32>(rt, n, |i| -(i as i32));
        case::<K, f32>(rt, n, |i| i as f32 * -0.5);
        case::<K, u64>(rt, n, |i| (i as u64) << 33);
        case::<K, i64>(rt, n, |i| -((i as i64) << 33));
        case::<K, f64>(rt, n, |i| i as f64 * 0.25);
    }
    let rt = gpu_runtime();
    let n = if within_cap(3 * TILE + 17) {
        3 * TILE + 17
    } else {
        300
    };
    values::<u32>(&rt, n);
    values::<i32>(&rt, n);
    values::<f32>(&rt, n);
    values::<u64>(&rt, n);
    values::<i64>(&rt, n);
    values::<f64>(&rt, n);
}

/// An input longer than one launch handles (about 2^30 keys) runs each pass as
/// one launch per portion; forced here to portions of one or two tiles, on keys
/// alone (the wide tiles of 32-bit keys) and with their permutation (`u32` and
/// `u64` values). Every pass
/// after the first reads the previous pass's output, whose portions hold other
/// keys than the input's: a sort that counted them on the input only wrote some
/// positions twice and others never.
#[test]
fn several_portions_per_pass_sort_as_one_does() {
    let rt = gpu_runtime();
    let (p, s) = streams(&rt);
    portions::<u32>(&rt, &p, &s);
    portions::<f32>(&rt, &p, &s);
    portions::<i64>(&rt, &p, &s);
}

fn portions<K: TestKey>(rt: &Runtime, p: &Stream, s: &Stream) {
    let cases = [
        (2 * WIDE_TILE + 100, 1),
        (3 * TILE + 17, 2),
        (4 * TILE + 3, 1),
    ];
    for (case, &(n, tiles)) in cases.iter().enumerate() {
        for kind in [Kind::FullRange, Kind::FewDistinct] {
            let x = make::<K>(kind, n, 0x9017 + case as u64);
            for order in [Order::Ascending, Order::Descending] {
                let perm = cpu_perm(&x, order);
                let want: Vec<u64> = perm.iter().map(|&i| x[i].bits()).collect();
                let what = format!(
                    "{} n={n} in portions of {tiles} tiles, {kind:?} {order:?}",
                    std::any::type_name::<K>()
                );
                let mut buf = rt.upload_on(p, &x).unwrap();
                sort::__sort_keys_in_portions(s, &mut buf, order, tiles).unwrap();
                let got: Vec<u64> = buf.download(s).unwrap().iter().map(|k| k.bits()).collect();
                if let Some(d) = first_difference(&got, &want) {
                    panic!(
                        "{what}: keys differ at {} (got {:#x}, want {:#x})",
                        d.0, d.1, d.2
                    );
                }
                let (keys, idx) = sort::__sort_with_indices_in_portions::<K, u32>(
                    s,
                    &buf_input(rt, p, &x),
                    order,
                    tiles,
                )
                .unwrap();
                let got: Vec<u64> = keys.download(s).unwrap().iter().map(|k| k.bits()).collect();
                if let Some(d) = first_difference(&got, &want) {
                    panic!(
                        "{what}: keys with indices differ at {} (got {:#x}, want {:#x})",
                        d.0, d.1, d.2
                    );
                }
                let idx = idx.download(s).unwrap();
                if let Some(i) = (0..n).find(|&i| idx[i] as usize != perm[i]) {
                    panic!(
                        "{what}: permutation differs at {i} (got {}, want {})",
                        idx[i], perm[i]
                    );
                }
                // The kernels with 64-bit values.
                let (_, idx) = sort::__sort_with_indices_in_portions::<K, u64>(
                    s,
                    &buf_input(rt, p, &x),
                    order,
                    tiles,
                )
                .unwrap();
                let idx = idx.download(s).unwrap();
                if let Some(i) = (0..n).find(|&i| idx[i] as usize != perm[i]) {
                    panic!(
                        "{what}: u64 permutation differs at {i} (got {}, want {})",
                        idx[i], perm[i]
                    );
                }
            }
        }
    }
}

/// `sorted` leaves its input alone.
#[test]
fn sorted_copies_leave_the_input_alone() {
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let x = make::<u32>(Kind::FullRange, 10_000, 3);
    let b = rt.upload_on(&s, &x).unwrap();
    let out = sort::sorted(&s, &b, Order::Descending).unwrap();
    let mut want = x.clone();
    want.sort_by(|a, b| b.cmp(a));
    assert_eq!(out.download(&s).unwrap(), want);
    assert_eq!(b.download(&s).unwrap(), x);
}

#[test]
fn mismatched_pairs_are_refused_before_any_launch() {
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let mut k = rt.upload_on(&s, &[3u32, 1, 2]).unwrap();
    let mut v = rt.upload_on(&s, &[0u32, 1]).unwrap();
    match sort::sort_pairs(&s, &mut k, &mut v, Order::Ascending) {
        Err(Error::InvalidArgument { what, .. }) => assert!(what.contains("sort_pairs")),
        r => panic!("expected InvalidArgument, got {r:?}"),
    }
    assert_eq!(k.download(&s).unwrap(), [3, 1, 2]);
}

/// A budget too small for the second key buffer: `BudgetExceeded`, the keys
/// unchanged, no byte left allocated.
#[test]
fn a_budget_refusal_leaves_the_keys_unchanged() {
    let n = 1 << 20;
    let rt = Runtime::builder(0)
        .budget(n * 4 + (n * 4) / 2)
        .build()
        .unwrap();
    let s = rt.new_stream().unwrap();
    let x = make::<u32>(Kind::FullRange, n, 11);
    let mut b = rt.upload_on(&s, &x).unwrap();
    s.synchronize().unwrap();
    rt.reap().unwrap();
    let before = rt.bytes_outstanding();
    match sort::sort_keys(&s, &mut b, Order::Ascending) {
        Err(Error::BudgetExceeded { .. }) => {}
        r => panic!("expected BudgetExceeded, got {r:?}"),
    }
    s.synchronize().unwrap();
    rt.reap().unwrap();
    assert_eq!(rt.bytes_outstanding(), before);
    assert_eq!(b.download(&s).unwrap(), x);
    // With room, the same call sorts.
    let rt = Runtime::builder(0).budget(n * 16).build().unwrap();
    let s = rt.new_stream().unwrap();
    let mut b = rt.upload_on(&s, &x).unwrap();
    sort::sort_keys(&s, &mut b, Order::Ascending).unwrap();
    let mut want = x;
    want.sort();
    assert_eq!(b.download(&s).unwrap(), want);
}

/// 10^8 random u32 keys, the size the sort is held to, against the CPU's sort.
/// Skipped when `XLOG_TEST_MAX_LEN` is lower (the sanitizer passes, the simulator).
#[test]
fn ten_to_the_eighth_keys_sort_as_the_cpu_does() {
    const N: usize = 100_000_000;
    // The runtime first: without a GPU the test fails, whatever the cap.
    let rt = gpu_runtime();
    if !within_cap(N) {
        return;
    }
    let s = rt.new_stream().unwrap();
    let mut r = Rng::from_state(1_0000_0000);
    let mut keys: Vec<u32> = (0..N).map(|_| r.next_u64() as u32).collect();
    let mut buf = rt.upload_on(&s, &keys).unwrap();
    sort::sort_keys(&s, &mut buf, Order::Ascending).unwrap();
    keys.sort_unstable();
    assert!(buf.download(&s).unwrap() == keys, "10^8 keys differ");
}
