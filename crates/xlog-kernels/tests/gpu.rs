//! GPU suite of the kernel library (opt-in: `--features gpu-tests`; every test
//! fails without a device). Each kernel runs against a CPU reference on random
//! data, with inputs produced on other streams so the generated launchers' fences
//! are exercised too.

use xlog::{Error, Runtime, Stream};
use xlog_test_support::{gpu_runtime, Rng};

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
    use xlog_kernels::elementwise::f32 as k;
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
    let e = xlog_kernels::elementwise::f32::copy::launch(
        &s,
        LaunchConfig::new([1, 1, 1], [2048, 1, 1]),
        &x,
        &mut out,
    )
    .unwrap_err();
    assert!(
        matches!(e, Error::InvalidLaunch { ref kernel, .. } if kernel == "copy_f32"),
        "{e}"
    );
    let e =
        xlog_kernels::elementwise::f32::copy::launch(&s, LaunchConfig::for_len(0), &x, &mut out)
            .unwrap_err();
    assert!(e.to_string().contains("grid dimension x is 0"), "{e}");
    assert!(
        out.download(&s).unwrap().iter().all(|&v| v == 0.0),
        "nothing ran"
    );
}
