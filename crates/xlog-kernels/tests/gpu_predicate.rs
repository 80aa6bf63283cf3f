//! GPU suite of the comparison and predicate kernels (`predicate::*`), opt-in with
//! `--features gpu-tests`; every test fails without a device. Each compares with a
//! CPU reference over every element type, on sizes 0, 1, odd sizes, one past a
//! block and a large size (capped by `XLOG_TEST_MAX_LEN`), with many equal values
//! (so `=`/`≤`/`≥` are exercised) and, for floats, NaNs and infinities.

use xlog::{Error, Stream};
use xlog_kernels::compact::select_flagged;
use xlog_kernels::predicate::{
    and, and_not, between, compare, compare_scalar, not, or, Cmp, Comparable,
};
use xlog_test_support::{gpu_runtime, within_test_cap, Rng};

const SIZES: &[usize] = &[0, 1, 3, 255, 257, 4097, (1 << 20) + 7];
const OPS: [Cmp; 6] = [Cmp::Lt, Cmp::Le, Cmp::Eq, Cmp::Ne, Cmp::Gt, Cmp::Ge];

fn sizes() -> impl Iterator<Item = usize> {
    SIZES.iter().copied().filter(|&n| within_test_cap(n))
}

/// Element types made from a few random bits (so values repeat often).
trait Elem: Comparable + std::fmt::Debug {
    fn from_bits(x: u64) -> Self;
    /// Values a float has that an integer has not (NaN, infinities).
    fn specials() -> Vec<Self> {
        Vec::new()
    }
}
macro_rules! ints {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            fn from_bits(x: u64) -> Self {
                (x % 17) as $t
            }
        }
    )*};
}
ints!(u8, u16, u32, u64);
impl Elem for i32 {
    fn from_bits(x: u64) -> Self {
        (x % 17) as i32 - 8
    }
}
impl Elem for i64 {
    fn from_bits(x: u64) -> Self {
        (x % 17) as i64 - 8
    }
}
impl Elem for f32 {
    fn from_bits(x: u64) -> Self {
        (x % 17) as f32 * 0.5 - 4.0
    }
    fn specials() -> Vec<Self> {
        vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0]
    }
}
impl Elem for f64 {
    fn from_bits(x: u64) -> Self {
        (x % 17) as f64 * 0.5 - 4.0
    }
    fn specials() -> Vec<Self> {
        vec![f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0]
    }
}

fn column<T: Elem>(rng: &mut Rng, n: usize) -> Vec<T> {
    let specials = T::specials();
    (0..n)
        .map(|i| {
            if !specials.is_empty() && i % 11 == 5 {
                specials[i / 11 % specials.len()]
            } else {
                T::from_bits(rng.next_u64())
            }
        })
        .collect()
}

fn check_type<T: Elem>(s: &Stream, seed: u64) {
    let rt = s.runtime().unwrap();
    let mut rng = Rng::new(seed);
    for n in sizes() {
        let x = column::<T>(&mut rng, n);
        let y = column::<T>(&mut rng, n);
        let (xb, yb) = (rt.upload_on(s, &x).unwrap(), rt.upload_on(s, &y).unwrap());
        let c = T::from_bits(3);
        for op in OPS {
            let want: Vec<u8> = x.iter().map(|&v| op.holds(v, c) as u8).collect();
            let got = compare_scalar(s, &xb, op, c).unwrap().download(s).unwrap();
            assert_eq!(
                got,
                want,
                "compare_scalar {op:?} over {n} {}",
                std::any::type_name::<T>()
            );
            let want: Vec<u8> = x
                .iter()
                .zip(&y)
                .map(|(&a, &b)| op.holds(a, b) as u8)
                .collect();
            let got = compare(s, &xb, &yb, op).unwrap().download(s).unwrap();
            assert_eq!(
                got,
                want,
                "compare {op:?} over {n} {}",
                std::any::type_name::<T>()
            );
        }
        let (lo, hi) = (T::from_bits(2), T::from_bits(9));
        let want: Vec<u8> = x.iter().map(|&v| (lo <= v && v <= hi) as u8).collect();
        let got = between(s, &xb, lo, hi).unwrap().download(s).unwrap();
        assert_eq!(got, want, "between over {n} {}", std::any::type_name::<T>());
        // Reversed bounds: nothing is between them.
        let got = between(s, &xb, hi, lo).unwrap().download(s).unwrap();
        assert!(got.iter().all(|&f| f == 0) || lo == hi);
    }
}

#[test]
fn comparisons_match_the_cpu_for_every_type() {
    let rt = gpu_runtime();
    let s = rt.stream().unwrap();
    check_type::<u8>(&s, 1);
    check_type::<u16>(&s, 2);
    check_type::<u32>(&s, 3);
    check_type::<i32>(&s, 4);
    check_type::<f32>(&s, 5);
    check_type::<u64>(&s, 6);
    check_type::<i64>(&s, 7);
    check_type::<f64>(&s, 8);
}

#[test]
fn flags_combine_as_booleans() {
    let rt = gpu_runtime();
    let s = rt.stream().unwrap();
    let mut rng = Rng::new(9);
    for n in sizes() {
        // Any non-zero byte is true.
        let a: Vec<u8> = (0..n).map(|_| (rng.next_u32() % 3) as u8 * 100).collect();
        let b: Vec<u8> = (0..n).map(|_| (rng.next_u32() % 2) as u8).collect();
        let (ab, bb) = (rt.upload_on(&s, &a).unwrap(), rt.upload_on(&s, &b).unwrap());
        let t = |v: u8| v != 0;
        let want = |f: &dyn Fn(bool, bool) -> bool| -> Vec<u8> {
            a.iter()
                .zip(&b)
                .map(|(&x, &y)| f(t(x), t(y)) as u8)
                .collect()
        };
        assert_eq!(
            and(&s, &ab, &bb).unwrap().download(&s).unwrap(),
            want(&|x, y| x && y)
        );
        assert_eq!(
            or(&s, &ab, &bb).unwrap().download(&s).unwrap(),
            want(&|x, y| x || y)
        );
        assert_eq!(
            and_not(&s, &ab, &bb).unwrap().download(&s).unwrap(),
            want(&|x, y| x && !y)
        );
        assert_eq!(
            not(&s, &ab).unwrap().download(&s).unwrap(),
            want(&|x, _| !x)
        );
    }
}

#[test]
fn a_filter_keeps_the_rows_its_predicate_flags() {
    // price < 10 and qty between 2 and 5: the flags feed select_flagged.
    let rt = gpu_runtime();
    let s = rt.stream().unwrap();
    let price = [5.0f32, 12.5, 9.0, 30.0, 1.0, f32::NAN];
    let qty = [1u32, 3, 4, 2, 5, 3];
    let (pb, qb) = (
        rt.upload_on(&s, &price).unwrap(),
        rt.upload_on(&s, &qty).unwrap(),
    );
    let keep = and(
        &s,
        &compare_scalar(&s, &pb, Cmp::Lt, 10.0).unwrap(),
        &between(&s, &qb, 2, 5).unwrap(),
    )
    .unwrap();
    assert_eq!(keep.download(&s).unwrap(), [0, 0, 1, 0, 1, 0]);
    let kept = select_flagged(&s, &qb, &keep).unwrap();
    assert_eq!(kept.download(&s).unwrap(), [4, 5]);
}

#[test]
fn columns_of_different_lengths_are_refused() {
    let rt = gpu_runtime();
    let s = rt.stream().unwrap();
    let x = rt.upload_on(&s, &[1u32, 2, 3]).unwrap();
    let y = rt.upload_on(&s, &[1u32, 2]).unwrap();
    let e = compare(&s, &x, &y, Cmp::Eq).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
    assert!(e.to_string().contains("differ in length"), "{e}");
    let f = rt.upload_on(&s, &[1u8, 0]).unwrap();
    let g = rt.upload_on(&s, &[1u8]).unwrap();
    assert!(matches!(
        and(&s, &f, &g).unwrap_err(),
        Error::InvalidArgument { .. }
    ));
}
