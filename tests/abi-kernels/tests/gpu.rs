//! GPU suite of the ABI regression kernels (opt-in: `--features gpu-tests`; every
//! test fails without a device): each kernel's output is checked on the host, so a
//! launcher that passed its parameters wrongly would show here.

use xlog::prelude::*;
use xlog_abi_kernels::{inner, names, scale, scale_u32, Elem, Wide};
use xlog_test_support::gpu_runtime;

#[test]
fn scalar_names_like_launcher_locals_reach_the_kernel() {
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let mut out = rt.alloc_zeroed::<u32>(7).unwrap();
    names::launch(
        &s,
        LaunchConfig::for_len(7),
        11,
        22,
        33,
        44,
        55,
        66,
        77,
        &mut out,
    )
    .unwrap();
    assert_eq!(out.download(&s).unwrap(), [11, 22, 33, 44, 55, 66, 77]);
}

#[test]
fn super_paths_name_the_same_type_on_both_sides() {
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let n = 1000;
    let mut o = rt.alloc_zeroed::<Wide>(n).unwrap();
    inner::fill_super::launch(&s, LaunchConfig::for_len(n), &mut o).unwrap();
    let got = o.download(&s).unwrap();
    for (i, w) in got.iter().enumerate() {
        assert_eq!(*w, Wide([i as u32; 16]), "element {i}");
    }
}

#[test]
fn the_feature_switched_element_type_computes() {
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let n = 4097;
    let x: Vec<Elem> = (0..n).map(|i| i as Elem * 0.5).collect();
    let dx = rt.upload_on(&s, &x).unwrap();
    let mut out = rt.alloc_zeroed::<Elem>(n).unwrap();
    scale::launch(&s, scale::config(n), 3.0, &dx, &mut out).unwrap();
    let got = out.download(&s).unwrap();
    for i in 0..n {
        assert_eq!(got[i], 3.0 * x[i], "element {i}");
    }
}

#[test]
fn a_macro_rules_kernel_computes() {
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let x: Vec<u32> = (0..300).collect();
    let dx = rt.upload_on(&s, &x).unwrap();
    let mut out = rt.alloc_zeroed::<u32>(300).unwrap();
    scale_u32::launch(&s, scale_u32::config(300), 7, &dx, &mut out).unwrap();
    let want: Vec<u32> = x.iter().map(|v| 7 * v).collect();
    assert_eq!(out.download(&s).unwrap(), want);
}

/// The generic kernels, every instantiation against the CPU.
mod generic_kernels {
    use xlog::prelude::*;
    use xlog::DeviceCopy;
    use xlog_abi_kernels::generic::{
        affine, block_sums, copy, count, pick, AffineType, BlockSumsType, CopyType, CountType,
        PickType, Rgb,
    };
    use xlog_test_support::{gpu_runtime, Rng};

    /// Values of each element type from one generator.
    trait Sample: DeviceCopy + PartialEq + std::fmt::Debug {
        fn sample(rng: &mut Rng) -> Self;
    }
    macro_rules! sample {
        ($($t:ty => |$r:ident| $e:expr;)*) => {$(
            impl Sample for $t {
                fn sample($r: &mut Rng) -> Self { $e }
            }
        )*};
    }
    sample! {
        u8 => |r| r.next_u64() as u8;
        u16 => |r| r.next_u64() as u16;
        u32 => |r| r.next_u64() as u32;
        u64 => |r| r.next_u64();
        i32 => |r| r.next_u64() as i32;
        i64 => |r| r.next_u64() as i64;
        f32 => |r| (r.next_u64() % 10_000) as f32 * 0.25;
        f64 => |r| (r.next_u64() % 10_000) as f64 * 0.125;
        Rgb => |r| Rgb([r.next_u64() as u8, r.next_u64() as u8, r.next_u64() as u8]);
    }

    fn copy_case<T: Sample + CopyType>(n: usize) {
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        let mut rng = Rng::new(n as u64);
        let x: Vec<T> = (0..n).map(|_| T::sample(&mut rng)).collect();
        let dx = rt.upload_on(&s, &x).unwrap();
        let mut out = rt.alloc_zeroed::<T>(n).unwrap();
        copy::launch(&s, copy::config(n), &dx, &mut out).unwrap();
        assert_eq!(
            out.download(&s).unwrap(),
            x,
            "copy::<{}>",
            std::any::type_name::<T>()
        );
    }

    #[test]
    fn copy_every_instantiation() {
        copy_case::<u8>(1001);
        copy_case::<u16>(1001);
        copy_case::<u32>(1001);
        copy_case::<u64>(1001);
        copy_case::<i32>(1001);
        copy_case::<i64>(1001);
        copy_case::<f32>(1001);
        copy_case::<f64>(1001);
        copy_case::<Rgb>(1001);
    }

    fn affine_case<T>(a: T, b: T, x: &[T])
    where
        T: AffineType
            + std::ops::Mul<Output = T>
            + std::ops::Add<Output = T>
            + PartialEq
            + std::fmt::Debug,
    {
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        let dx = rt.upload_on(&s, x).unwrap();
        let mut out = rt.alloc_zeroed::<T>(x.len()).unwrap();
        affine::launch(&s, affine::config(x.len()), a, &dx, b, &mut out).unwrap();
        let want: Vec<T> = x.iter().map(|&v| a * v + b).collect();
        assert_eq!(out.download(&s).unwrap(), want);
    }

    #[test]
    fn affine_every_instantiation() {
        let ints: Vec<i32> = (-300..300).collect();
        affine_case::<i32>(-3, 7, &ints);
        let uints: Vec<u32> = (0..600).collect();
        affine_case::<u32>(3, 7, &uints);
        let floats: Vec<f32> = (0..600).map(|i| i as f32 * 0.5).collect();
        affine_case::<f32>(1.5, -2.0, &floats);
        let doubles: Vec<f64> = (0..600).map(|i| i as f64 * 0.25).collect();
        affine_case::<f64>(-0.5, 3.0, &doubles);
    }

    fn pick_case<T, I>(len: usize, n: usize)
    where
        T: Sample + PickType<I>,
        I: DeviceCopy + Into<u64> + TryFrom<u64>,
    {
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        let mut rng = Rng::new(7 + n as u64);
        let x: Vec<T> = (0..len).map(|_| T::sample(&mut rng)).collect();
        // Some indices out of range: they pick `missing`.
        let idx: Vec<I> = (0..n)
            .map(|_| {
                let j = rng.next_u64() % (len as u64 + 40);
                I::try_from(j).ok().unwrap()
            })
            .collect();
        let missing = T::sample(&mut rng);
        let (dx, di) = (
            rt.upload_on(&s, &x).unwrap(),
            rt.upload_on(&s, &idx).unwrap(),
        );
        let mut out = rt.alloc_zeroed::<T>(n).unwrap();
        pick::launch(&s, pick::config(n), &dx, &di, missing, &mut out).unwrap();
        let want: Vec<T> = idx
            .iter()
            .map(|&j| x.get(j.into() as usize).copied().unwrap_or(missing))
            .collect();
        assert_eq!(out.download(&s).unwrap(), want);
    }

    #[test]
    fn pick_every_instantiation() {
        pick_case::<u8, u16>(300, 2000);
        pick_case::<u8, u32>(300, 2000);
        pick_case::<u8, u64>(300, 2000);
        pick_case::<f64, u16>(300, 2000);
        pick_case::<f64, u32>(300, 2000);
        pick_case::<f64, u64>(300, 2000);
        pick_case::<i64, u16>(300, 2000);
        pick_case::<i64, u32>(300, 2000);
        pick_case::<i64, u64>(300, 2000);
    }

    fn count_case<T: CountType + std::ops::Add<Output = T> + PartialEq + std::fmt::Debug>(
        zero: T,
        one: T,
    ) {
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        let x: Vec<u32> = (0..5000u32)
            .map(|i| i.wrapping_mul(2654435761) >> 7)
            .collect();
        let dx = rt.upload_on(&s, &x).unwrap();
        let mut bins = rt.alloc_zeroed::<T>(17).unwrap();
        count::launch(&s, LaunchConfig::for_len(x.len()), &dx, one, &mut bins).unwrap();
        let mut want = vec![zero; 17];
        for v in &x {
            let b = *v as usize % 17;
            want[b] = want[b] + one;
        }
        assert_eq!(bins.download(&s).unwrap(), want);
    }

    #[test]
    fn count_every_instantiation() {
        count_case::<u32>(0, 1);
        count_case::<u64>(0, 1);
        count_case::<f32>(0.0, 1.0);
    }

    fn block_sums_case<T>(x: &[T], zero: T)
    where
        T: BlockSumsType + std::ops::Add<Output = T> + PartialEq + std::fmt::Debug,
    {
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        let dx = rt.upload_on(&s, x).unwrap();
        let blocks = x.len().div_ceil(128);
        let mut sums = rt.alloc_zeroed::<T>(blocks).unwrap();
        block_sums::launch(&s, block_sums::config(x.len()), &dx, zero, &mut sums).unwrap();
        let want: Vec<T> = x
            .chunks(128)
            .map(|c| c.iter().fold(zero, |a, &b| a + b))
            .collect();
        assert_eq!(sums.download(&s).unwrap(), want);
    }

    #[test]
    fn block_sums_every_instantiation() {
        let x: Vec<u32> = (0..1000).collect();
        block_sums_case::<u32>(&x, 0);
        let x: Vec<u64> = (0..1000).map(|i| i << 33).collect();
        block_sums_case::<u64>(&x, 0);
        // Sums of small integers are exact in any order.
        let x: Vec<f64> = (0..1000).map(|i| i as f64).collect();
        block_sums_case::<f64>(&x, 0.0);
    }

    #[test]
    fn an_instantiation_records_into_a_graph_and_updates() {
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        let x: Vec<f32> = (0..500).map(|i| i as f32).collect();
        let dx = rt.upload_on(&s, &x).unwrap();
        let out = rt.alloc_zeroed::<f32>(500).unwrap();
        let mut rec = xlog::GraphRecorder::new(&s);
        let node =
            affine::record::<f32>(&mut rec, affine::config(500), 2.0, &dx, 1.0, &out).unwrap();
        let mut graph = rec.instantiate().unwrap();
        graph.launch(&s).unwrap();
        let want: Vec<f32> = x.iter().map(|v| 2.0 * v + 1.0).collect();
        assert_eq!(out.download(&s).unwrap(), want);
        affine::update(&mut graph, node, affine::config(500), 3.0, &dx, 0.0, &out).unwrap();
        graph.launch(&s).unwrap();
        let want: Vec<f32> = x.iter().map(|v| 3.0 * v).collect();
        assert_eq!(out.download(&s).unwrap(), want);
    }

    #[test]
    fn a_refused_launch_names_the_instantiation() {
        let rt = gpu_runtime();
        let s = rt.new_stream().unwrap();
        let dx = rt.upload_on(&s, &[1u64; 256]).unwrap();
        let mut sums = rt.alloc_zeroed::<u64>(4).unwrap();
        // `block_sums` declares `block = 128`.
        let e = block_sums::launch(
            &s,
            LaunchConfig::for_len_with_block(256, 64),
            &dx,
            0,
            &mut sums,
        )
        .unwrap_err();
        assert!(e.to_string().contains("block_sums_blocks__u64"), "{e}");
    }
}
