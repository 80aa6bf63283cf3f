//! GPU suite for `xlog-device`: every kernel of `xlog-device-kernels` on random data,
//! checked against a CPU reference. Opt-in: `cargo test -p xlog-device-kernels
//! --features gpu --test gpu_intrinsics`. Without a device every test fails (a skip is
//! never a pass). With `XLOG_BACKEND=sim` the same tests run on the CPU simulator.
//!
//! The module is `MODULE` (loaded once per runtime by `load_module`). Launches are
//! manual (`WorkRecorder` + raw parameter pointers): these kernels
//! are hand-written entry points, not `#[xlog_kernel]` functions, so each is looked up
//! with its simulator entry point from `host_entry` (a kernel without one fails).
//!
//! The block reduction and scan tests run every block size from 32 to 1024 (and
//! odd sizes for the kernels that allow them): they are the regression test for the
//! barrier miscompilation rust-lang/rust#137086 that xlog-build guards against.

use std::ffi::c_void;
use std::sync::Arc;

use xlog_device_kernels::{bodies, host_entry, MATH_F32_OUTPUTS, MATH_F64_OUTPUTS, MODULE};
use xlog_runtime::{
    DeviceBuffer, DeviceCopy, Function, LaunchConfig, Module, Runtime, Stream, WorkRecorder,
};
use xlog_test_support::Rng;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// One kernel argument, kept alive while its address is passed to the driver.
enum Arg {
    U64(u64),
    F32(f32),
}

fn raw_params(args: &mut [Arg]) -> Vec<*mut c_void> {
    args.iter_mut()
        .map(|a| match a {
            Arg::U64(v) => v as *mut u64 as *mut c_void,
            Arg::F32(v) => v as *mut f32 as *mut c_void,
        })
        .collect()
}

fn ptr<T: DeviceCopy>(buf: &DeviceBuffer<T>) -> Arg {
    Arg::U64(buf.device_ptr())
}

fn len(n: usize) -> Arg {
    Arg::U64(n as u64)
}

struct Gpu {
    rt: Runtime,
    module: Arc<Module>,
    stream: Stream,
}

fn gpu() -> Result<Gpu, Box<dyn std::error::Error>> {
    let rt = Runtime::get(0).map_err(|e| format!("the GPU suite needs a CUDA device: {e}"))?;
    let module = rt.load_module(&MODULE)?;
    let stream = rt.stream()?;
    Ok(Gpu { rt, module, stream })
}

impl Gpu {
    /// Kernel `name` of the module, with its simulator entry point.
    fn function(&self, name: &str) -> Result<Function, Box<dyn std::error::Error>> {
        let host = host_entry(name)
            .ok_or_else(|| format!("kernel `{name}` has no simulator entry point"))?;
        // SAFETY: `host_entry(name)` is the host build of entry point `name`, made
        // by the crate's one definition of both (`entry_points!`).
        Ok(unsafe { self.module.function_with_host(name, host) }?)
    }

    /// Launches `kernel` reading `input` and writing `out`.
    fn run<I: DeviceCopy, O: DeviceCopy>(
        &self,
        kernel: &str,
        cfg: LaunchConfig,
        input: &DeviceBuffer<I>,
        out: &mut DeviceBuffer<O>,
        args: &mut [Arg],
    ) -> TestResult {
        let f = self.function(kernel)?;
        let mut params = raw_params(args);
        // SAFETY: `args` match the kernel's parameters (documented in entries.rs), the
        // kernel touches only `input` (read) and `out` (written), and the launch
        // shape follows the kernel's contract.
        let _committed = unsafe {
            WorkRecorder::new(&self.stream)
                .read(input)
                .write(out)
                .preflight()?
                .launch(&f, cfg, &mut params)?
        };
        Ok(())
    }
}

/// `out[i]`, `input[i]`, kernel `k`: the usual `(in_ptr, n, out_ptr, out_len)` launch.
fn run_in_out<I: DeviceCopy, O: DeviceCopy>(
    g: &Gpu,
    kernel: &str,
    cfg: LaunchConfig,
    input: &[I],
    out_init: &[O],
) -> Result<Vec<O>, Box<dyn std::error::Error>> {
    let x = g.rt.upload(input)?;
    let mut out = g.rt.upload(out_init)?;
    let mut args = [ptr(&x), len(input.len()), ptr(&out), len(out_init.len())];
    g.run(kernel, cfg, &x, &mut out, &mut args)?;
    Ok(out.download(&g.stream)?)
}

fn ulps32(a: f32, b: f32) -> u32 {
    if a == b || (a.is_nan() && b.is_nan()) {
        return 0;
    }
    (a.to_bits() as i64 - b.to_bits() as i64)
        .unsigned_abs()
        .min(u32::MAX as u64) as u32
}

fn ulps64(a: f64, b: f64) -> u64 {
    if a == b || (a.is_nan() && b.is_nan()) {
        return 0;
    }
    (a.to_bits() as i128 - b.to_bits() as i128)
        .unsigned_abs()
        .min(u64::MAX as u128) as u64
}

mod indices {
    use super::*;

    /// Where the module has cubins for the device, each kernel loads alone, with its
    /// own copy of the module's globals: `Module::global` is refused and
    /// `kernel_global` gives each kernel's copy. Loaded whole (PTX, the
    /// simulator), both name the one copy.
    #[test]
    fn module_globals_are_per_kernel_where_kernels_load_alone() -> TestResult {
        let g = gpu()?;
        let sink = xlog_device::panic::PANIC_SINK_SYMBOL;
        let a = g
            .module
            .kernel_global("saxpy", sink)?
            .ok_or("saxpy's sink")?;
        let b = g
            .module
            .kernel_global("deliberate_panic", sink)?
            .ok_or("a sink")?;
        assert_eq!((a.1, b.1), (8, 8));
        match g.module.global(sink) {
            Ok(whole) => {
                assert_eq!(whole, Some(a));
                assert_eq!(a, b);
            }
            Err(e) => {
                assert!(
                    matches!(e, xlog_runtime::Error::InvalidArgument { .. }),
                    "{e}"
                );
                assert!(e.to_string().contains("kernel_global"), "{e}");
                assert_ne!(a.0, b.0, "each kernel has its own copy");
                let missing = g.module.kernel_global("no_such_kernel", sink).unwrap_err();
                assert!(
                    matches!(missing, xlog_runtime::Error::KernelNotFound { .. }),
                    "{missing}"
                );
            }
        }
        Ok(())
    }

    #[test]
    fn saxpy_matches_cpu() -> TestResult {
        let g = gpu()?;
        let mut rng = Rng::from_state(1);
        let n = (1 << 20) + 7;
        let x: Vec<f32> = (0..n).map(|_| rng.range(-1.0, 1.0) as f32).collect();
        let y0: Vec<f32> = (0..n).map(|_| rng.range(-1.0, 1.0) as f32).collect();
        let dx = g.rt.upload(&x)?;
        let mut dy = g.rt.upload(&y0)?;
        let a = 2.5f32;
        let mut args = [Arg::F32(a), ptr(&dx), len(n), ptr(&dy), len(n)];
        let f = g.function("saxpy")?;
        let mut params = raw_params(&mut args);
        // SAFETY: saxpy(a, x, x_len, y, y_len): reads x, reads and writes y.
        let _committed = unsafe {
            WorkRecorder::new(&g.stream)
                .read(&dx)
                .read_write(&mut dy)
                .preflight()?
                .launch(&f, LaunchConfig::for_len(n), &mut params)?
        };
        let y = dy.download(&g.stream)?;
        for i in 0..n {
            assert_eq!(y[i], a * x[i] + y0[i], "saxpy at {i}");
        }
        Ok(())
    }

    #[test]
    fn index_1d_is_a_permutation_for_every_launch_shape() -> TestResult {
        let g = gpu()?;
        let shapes = [
            ([5, 1, 1], [96, 1, 1]),
            ([3, 2, 2], [8, 4, 2]),
            ([1, 7, 3], [1, 1, 32]),
            ([2, 3, 4], [5, 6, 7]),
            ([1000, 1, 1], [1024, 1, 1]),
        ];
        for (grid, block) in shapes {
            let cfg = LaunchConfig::new(grid, block);
            let total = cfg.threads() as usize;
            let mut out = g.rt.upload(&vec![u64::MAX; total])?;
            let dummy = g.rt.alloc_zeroed::<u64>(1)?;
            let mut args = [ptr(&out), len(total)];
            g.run("thread_indices", cfg, &dummy, &mut out, &mut args)?;
            let got = out.download(&g.stream)?;
            let expected: Vec<u64> = (0..total as u64).collect();
            assert_eq!(got, expected, "grid {grid:?} block {block:?}");
        }
        Ok(())
    }
}

mod warps {
    use super::*;

    const N: usize = 32 * 256;

    #[test]
    fn shuffles_idx_up_down_xor() -> TestResult {
        let g = gpu()?;
        let input = Rng::from_state(2).u32s(N);
        let out = run_in_out(
            &g,
            "warp_shuffles_u32",
            LaunchConfig::for_len_with_block(N, 128),
            &input,
            &vec![0u32; 4 * N],
        )?;
        for i in 0..N {
            let (base, lane) = (i - i % 32, i % 32);
            assert_eq!(out[i], input[base + (7 * lane + 3) % 32], "idx at {i}");
            assert_eq!(
                out[N + i],
                if lane >= 3 { input[i - 3] } else { input[i] },
                "up at {i}"
            );
            assert_eq!(
                out[2 * N + i],
                if lane + 5 < 32 {
                    input[i + 5]
                } else {
                    input[i]
                },
                "down at {i}"
            );
            assert_eq!(out[3 * N + i], input[base + (lane ^ 6)], "xor at {i}");
        }
        Ok(())
    }

    #[test]
    fn shuffle_xor_moves_64_bit_values() -> TestResult {
        let g = gpu()?;
        let mut rng = Rng::from_state(3);
        let input: Vec<f64> = (0..N).map(|_| rng.range(-1e6, 1e6)).collect();
        let out = run_in_out(
            &g,
            "warp_shuffle_xor_f64",
            LaunchConfig::for_len_with_block(N, 256),
            &input,
            &vec![0f64; N],
        )?;
        for w in 0..N / 32 {
            // The same butterfly, in the same order, on the CPU: bit-exact.
            let mut v: Vec<f64> = input[32 * w..32 * w + 32].to_vec();
            let mut m = 16;
            while m > 0 {
                let prev = v.clone();
                for lane in 0..32 {
                    v[lane] = prev[lane] + prev[lane ^ m];
                }
                m /= 2;
            }
            assert_eq!(&out[32 * w..32 * w + 32], &v[..], "warp {w}");
        }
        Ok(())
    }

    #[test]
    fn votes_all_any_ballot() -> TestResult {
        let g = gpu()?;
        let mut rng = Rng::from_state(4);
        // Warps alternate: random, all true, all false, sparse.
        let pred: Vec<u32> = (0..N)
            .map(|i| match (i / 32) % 4 {
                0 => rng.next_u32() & 1,
                1 => 1,
                2 => 0,
                _ => u32::from(rng.next_u32() % 29 == 0),
            })
            .collect();
        let out = run_in_out(
            &g,
            "warp_votes",
            LaunchConfig::for_len_with_block(N, 64),
            &pred,
            &vec![9u32; 4 * N],
        )?;
        for i in 0..N {
            let (base, lane) = (i - i % 32, i % 32);
            let warp = &pred[base..base + 32];
            let ballot = warp
                .iter()
                .enumerate()
                .fold(0u32, |b, (l, p)| b | ((*p != 0) as u32) << l);
            assert_eq!(out[i], warp.iter().all(|p| *p != 0) as u32, "all at {i}");
            assert_eq!(
                out[N + i],
                warp.iter().any(|p| *p != 0) as u32,
                "any at {i}"
            );
            assert_eq!(out[2 * N + i], ballot, "ballot at {i}");
            let odd = if lane % 2 == 1 {
                ballot & 0xaaaa_aaaa
            } else {
                0
            };
            assert_eq!(out[3 * N + i], odd, "masked ballot at {i}");
        }
        Ok(())
    }

    #[test]
    fn lanes_agree_on_a_bit_and_match_on_low_bits() -> TestResult {
        let g = gpu()?;
        let mut rng = Rng::from_state(6);
        // Warps alternate: random labels, one label everywhere, two labels.
        let label: Vec<u32> = (0..N)
            .map(|i| match (i / 32) % 3 {
                0 => rng.next_u32(),
                1 => 0xdead_beef,
                _ => 4 * (i as u32 % 2),
            })
            .collect();
        let out = run_in_out(
            &g,
            "warp_match_labels",
            LaunchConfig::for_len_with_block(N, 64),
            &label,
            &vec![9u32; 5 * N],
        )?;
        for i in 0..N {
            let warp = &label[i - i % 32..i - i % 32 + 32];
            let lanes = |same: &dyn Fn(u32) -> bool| {
                warp.iter()
                    .enumerate()
                    .fold(0u32, |m, (l, &x)| m | (same(x) as u32) << l)
            };
            let bit2 = lanes(&|x| (x ^ label[i]) & 4 == 0);
            assert_eq!(out[i], bit2, "agree_on_bit at {i}");
            let low3 = lanes(&|x| (x ^ label[i]) & 7 == 0);
            assert_eq!(out[N + i], low3, "warp_match_bits at {i}");
            assert_eq!(out[2 * N + i], low3, "full_warp_match_bits at {i}");
            assert_eq!(
                out[3 * N + i],
                warp[31 - i % 32],
                "full_warp_shuffle_from at {i}"
            );
            assert_eq!(
                out[4 * N + i],
                warp[(i + 1) % 32],
                "warp_shuffle_from at {i}"
            );
        }
        Ok(())
    }

    #[test]
    fn redux_sum_min_max() -> TestResult {
        let g = gpu()?;
        let input = Rng::from_state(5).u32s(N);
        let out = run_in_out(
            &g,
            "warp_reduce_u32",
            LaunchConfig::for_len_with_block(N, 256),
            &input,
            &vec![0u32; 3 * N / 32],
        )?;
        for (w, chunk) in input.chunks(32).enumerate() {
            let sum = chunk.iter().fold(0u32, |a, b| a.wrapping_add(*b));
            assert_eq!(out[3 * w], sum, "sum of warp {w}");
            assert_eq!(
                out[3 * w + 1],
                *chunk.iter().min().unwrap(),
                "min of warp {w}"
            );
            assert_eq!(
                out[3 * w + 2],
                *chunk.iter().max().unwrap(),
                "max of warp {w}"
            );
        }
        Ok(())
    }
}

mod atomics {
    use super::*;

    #[test]
    fn histogram_under_contention() -> TestResult {
        let g = gpu()?;
        let mut rng = Rng::from_state(6);
        let n = 1 << 20;
        let nbins = 37;
        let keys: Vec<u32> = (0..n).map(|_| rng.next_u32() % 1000).collect();
        let bins = run_in_out(
            &g,
            "atomic_histogram",
            LaunchConfig::for_len(n),
            &keys,
            &vec![0u32; nbins],
        )?;
        let mut expected = vec![0u32; nbins];
        for k in &keys {
            expected[*k as usize % nbins] += 1;
        }
        assert_eq!(bins, expected);
        Ok(())
    }

    #[test]
    fn min_max_i64_and_u32() -> TestResult {
        let g = gpu()?;
        let mut rng = Rng::from_state(7);
        let n = 300_000;
        let v64: Vec<i64> = (0..n).map(|_| rng.next_u64() as i64).collect();
        let out = run_in_out(
            &g,
            "atomic_min_max_i64",
            LaunchConfig::for_len(n),
            &v64,
            &[i64::MAX, i64::MIN],
        )?;
        assert_eq!(
            out,
            [*v64.iter().min().unwrap(), *v64.iter().max().unwrap()]
        );
        let v32 = rng.u32s(n);
        let init = [u32::MAX, 0, i32::MAX as u32, i32::MIN as u32];
        let out = run_in_out(
            &g,
            "atomic_min_max_u32",
            LaunchConfig::for_len(n),
            &v32,
            &init,
        )?;
        let as_i32 = v32.iter().map(|v| *v as i32);
        assert_eq!(
            out,
            [
                *v32.iter().min().unwrap(),
                *v32.iter().max().unwrap(),
                as_i32.clone().min().unwrap() as u32,
                as_i32.max().unwrap() as u32
            ]
        );
        Ok(())
    }

    #[test]
    fn compare_exchange_loop_hands_out_each_value_once() -> TestResult {
        let g = gpu()?;
        let n = 100_000;
        let counter_init = [0u64];
        let mut counter = g.rt.upload(&counter_init)?;
        let mut taken = g.rt.upload(&vec![u64::MAX; n])?;
        let f = g.function("atomic_cas_counter")?;
        let mut args = [ptr(&counter), len(n), ptr(&taken), len(n)];
        let mut params = raw_params(&mut args);
        // SAFETY: atomic_cas_counter(counter, n, taken, taken_len) reads and writes both.
        let _committed = unsafe {
            WorkRecorder::new(&g.stream)
                .read_write(&mut counter)
                .write(&mut taken)
                .preflight()?
                .launch(&f, LaunchConfig::for_len(n), &mut params)?
        };
        assert_eq!(counter.download(&g.stream)?, [n as u64]);
        let mut got = taken.download(&g.stream)?;
        got.sort_unstable();
        assert_eq!(got, (0..n as u64).collect::<Vec<_>>());
        Ok(())
    }

    #[test]
    fn exchange_keeps_every_value() -> TestResult {
        let g = gpu()?;
        let n = 50_000;
        let mut slot = g.rt.upload(&[u32::MAX])?;
        let mut old = g.rt.upload(&vec![0u32; n])?;
        let mut slot_f = g.rt.upload(&[-1.0f32])?;
        let f = g.function("atomic_exchange")?;
        let mut args = [ptr(&slot), len(n), ptr(&old), ptr(&slot_f)];
        let mut params = raw_params(&mut args);
        // SAFETY: atomic_exchange(slot, n, old, slot_f32) writes all three.
        let _committed = unsafe {
            WorkRecorder::new(&g.stream)
                .read_write(&mut slot)
                .write(&mut old)
                .read_write(&mut slot_f)
                .preflight()?
                .launch(&f, LaunchConfig::for_len(n), &mut params)?
        };
        let mut all = old.download(&g.stream)?;
        all.extend(slot.download(&g.stream)?);
        all.sort_unstable();
        let mut expected: Vec<u32> = (0..n as u32).collect();
        expected.push(u32::MAX);
        assert_eq!(all, expected);
        let last = slot_f.download(&g.stream)?[0];
        assert!(
            last >= 0.0 && last < n as f32 && last.fract() == 0.0,
            "f32 slot holds {last}"
        );
        Ok(())
    }

    #[test]
    fn bitwise_or_and_xor() -> TestResult {
        let g = gpu()?;
        let mut rng = Rng::from_state(8);
        let n = 200_000;
        let v: Vec<u32> = (0..n).map(|_| rng.next_u32() | rng.next_u32()).collect();
        let out = run_in_out(
            &g,
            "atomic_bitwise_u32",
            LaunchConfig::for_len(n),
            &v,
            &[0, u32::MAX, 0],
        )?;
        let or = v.iter().fold(0, |a, b| a | b);
        let and = v.iter().fold(u32::MAX, |a, b| a & b);
        let xor = v.iter().fold(0, |a, b| a ^ b);
        assert_eq!(out, [or, and, xor]);
        Ok(())
    }

    #[test]
    fn float_add_f32_and_f64() -> TestResult {
        let g = gpu()?;
        let mut rng = Rng::from_state(9);
        let n = 1 << 16;
        let v32: Vec<f32> = (0..n).map(|_| rng.unit() as f32).collect();
        let got = run_in_out(
            &g,
            "atomic_add_f32",
            LaunchConfig::for_len(n),
            &v32,
            &[0f32],
        )?[0];
        let want: f64 = v32.iter().map(|v| *v as f64).sum();
        assert!(
            ((got as f64) - want).abs() <= 1e-4 * want,
            "f32 sum {got} vs {want}"
        );
        let v64: Vec<f64> = (0..n).map(|_| rng.range(-1.0, 1.0)).collect();
        let got = run_in_out(
            &g,
            "atomic_add_f64",
            LaunchConfig::for_len(n),
            &v64,
            &[0f64],
        )?[0];
        let want: f64 = v64.iter().sum();
        assert!(
            (got - want).abs() <= 1e-9 * n as f64,
            "f64 sum {got} vs {want}"
        );
        Ok(())
    }
}

/// Block-level reductions and scans: the rust-lang/rust#137086 regression suite.
mod blocks {
    use super::*;

    fn block_sizes(any_size: bool) -> Vec<u32> {
        let mut sizes: Vec<u32> = (1..=32).map(|k| 32 * k).collect();
        if any_size {
            sizes.extend([1, 7, 33, 100, 255, 257, 1000, 1023]);
        }
        sizes
    }

    #[test]
    fn reduce_with_dynamic_shared_memory_every_block_size() -> TestResult {
        let g = gpu()?;
        for bs in block_sizes(true) {
            let n = 40_000 + bs as usize;
            let x = Rng::from_state(10 + bs as u64).u32s(n);
            let blocks = n.div_ceil(bs as usize);
            let cfg = LaunchConfig::for_len_with_block(n, bs).with_shared_bytes(4 * bs);
            let out = run_in_out(&g, "block_reduce_sum", cfg, &x, &vec![0u32; blocks])?;
            for (b, chunk) in x.chunks(bs as usize).enumerate() {
                let want = chunk.iter().fold(0u32, |a, v| a.wrapping_add(*v));
                assert_eq!(out[b], want, "block size {bs}, block {b}");
            }
        }
        Ok(())
    }

    #[test]
    fn reduce_with_shuffles_and_static_shared_memory() -> TestResult {
        let g = gpu()?;
        for bs in block_sizes(false) {
            let n = 30_000 + 3 * bs as usize;
            let x = Rng::from_state(20 + bs as u64).u32s(n);
            let blocks = n.div_ceil(bs as usize);
            let out = run_in_out(
                &g,
                "block_reduce_warp",
                LaunchConfig::for_len_with_block(n, bs),
                &x,
                &vec![0u32; blocks],
            )?;
            for (b, chunk) in x.chunks(bs as usize).enumerate() {
                let want = chunk.iter().fold(0u32, |a, v| a.wrapping_add(*v));
                assert_eq!(out[b], want, "block size {bs}, block {b}");
            }
        }
        Ok(())
    }

    #[test]
    fn inclusive_scan_every_block_size() -> TestResult {
        let g = gpu()?;
        for bs in block_sizes(true) {
            let n = 20_000 + 5 * bs as usize;
            let x = Rng::from_state(30 + bs as u64).u32s(n);
            let cfg = LaunchConfig::for_len_with_block(n, bs).with_shared_bytes(8 * bs);
            let out = run_in_out(&g, "block_scan_inclusive", cfg, &x, &vec![0u32; n])?;
            for (b, chunk) in x.chunks(bs as usize).enumerate() {
                let mut acc = 0u32;
                for (k, v) in chunk.iter().enumerate() {
                    acc = acc.wrapping_add(*v);
                    let i = b * bs as usize + k;
                    assert_eq!(out[i], acc, "block size {bs}, element {i}");
                }
            }
        }
        Ok(())
    }

    #[test]
    fn barrier_count_and_or() -> TestResult {
        let g = gpu()?;
        for bs in block_sizes(true) {
            let blocks = 24usize;
            let n = blocks * bs as usize;
            let mut rng = Rng::from_state(40 + bs as u64);
            // Block b: mostly random, with some blocks all set or all clear.
            let pred: Vec<u32> = (0..n)
                .map(|i| match (i / bs as usize) % 3 {
                    0 => rng.next_u32() & 1,
                    1 => 1,
                    _ => 0,
                })
                .collect();
            let out = run_in_out(
                &g,
                "block_barrier_reductions",
                LaunchConfig::for_len_with_block(n, bs),
                &pred,
                &vec![7u32; 3 * blocks],
            )?;
            for (b, chunk) in pred.chunks(bs as usize).enumerate() {
                let count = chunk.iter().filter(|p| **p != 0).count() as u32;
                assert_eq!(out[3 * b], count, "count, block size {bs}, block {b}");
                assert_eq!(
                    out[3 * b + 1],
                    (count == bs) as u32,
                    "and, block size {bs}, block {b}"
                );
                assert_eq!(
                    out[3 * b + 2],
                    (count > 0) as u32,
                    "or, block size {bs}, block {b}"
                );
            }
        }
        Ok(())
    }

    #[test]
    fn barrier_between_branches_exchanges_pairs() -> TestResult {
        let g = gpu()?;
        for bs in (1..=32).map(|k| 32 * k).chain([2, 6, 100, 1022]) {
            let n = 16 * bs as usize;
            let x = Rng::from_state(60 + bs as u64).u32s(n);
            let out = run_in_out(
                &g,
                "barrier_between_branches",
                LaunchConfig::for_len_with_block(n, bs),
                &x,
                &vec![0u32; n],
            )?;
            for i in 0..n {
                let want = if i % 2 == 0 {
                    x[i + 1].wrapping_mul(2)
                } else {
                    x[i - 1]
                };
                assert_eq!(out[i], want, "block size {bs}, element {i}");
            }
        }
        Ok(())
    }

    #[test]
    fn static_shared_array_reverses_each_block() -> TestResult {
        let g = gpu()?;
        for bs in [1u32, 32, 100, 512, 1024] {
            let n = 64 * bs as usize;
            let x = Rng::from_state(50 + bs as u64).u32s(n);
            let out = run_in_out(
                &g,
                "static_shared_reverse",
                LaunchConfig::for_len_with_block(n, bs),
                &x,
                &vec![0u32; n],
            )?;
            for (b, chunk) in x.chunks(bs as usize).enumerate() {
                let mut rev = chunk.to_vec();
                rev.reverse();
                assert_eq!(
                    &out[b * bs as usize..(b + 1) * bs as usize],
                    &rev[..],
                    "block size {bs}, block {b}"
                );
            }
        }
        Ok(())
    }
}

mod math {
    use super::*;

    #[test]
    fn f32_functions_match_the_documented_accuracy() -> TestResult {
        let g = gpu()?;
        let mut rng = Rng::from_state(60);
        let n = 100_000;
        let x: Vec<f32> = (0..n)
            .map(|i| if i % 2 == 0 { rng.range(-10.0, 10.0) } else { rng.range(-3.2, 3.2) } as f32)
            .collect();
        let out = run_in_out(
            &g,
            "math_f32",
            LaunchConfig::for_len(n),
            &x,
            &vec![0f32; MATH_F32_OUTPUTS * n],
        )?;
        let _ = bodies::math_f32_values; // the order below follows this function
        for i in 0..n {
            let (v, ax) = (x[i], x[i].abs());
            let at = |k: usize| out[k * n + i];
            let d = v as f64;
            assert_eq!(at(0), ax.sqrt(), "sqrt({ax})");
            assert!(
                ulps32(at(1), d.exp() as f32) <= 1,
                "exp({v}) = {} vs {}",
                at(1),
                d.exp()
            );
            assert!(ulps32(at(2), (ax as f64).ln() as f32) <= 1, "ln({ax})");
            assert!(ulps32(at(3), d.sin() as f32) <= 1, "sin({v})");
            assert!(ulps32(at(4), d.cos() as f32) <= 1, "cos({v})");
            assert!(
                ulps32(at(5), (ax as f64).powf(1.7f32 as f64) as f32) <= 1,
                "pow({ax}, 1.7)"
            );
            assert_eq!(at(6), v.mul_add(2.5, -1.0), "fma({v})");
            assert_eq!(at(7), v.floor(), "floor({v})");
            let e = d.exp();
            assert!(
                ((at(8) as f64) - e).abs() <= (2e-6 + 2e-7 * d.abs()) * e,
                "fast exp({v}) = {} vs {e}",
                at(8)
            );
            if v.abs() <= std::f32::consts::PI {
                assert!(((at(9) as f64) - d.sin()).abs() <= 1e-6, "fast sin({v})");
                assert!(((at(10) as f64) - d.cos()).abs() <= 1e-6, "fast cos({v})");
            }
        }
        Ok(())
    }

    #[test]
    fn f64_functions_match_the_documented_accuracy() -> TestResult {
        let g = gpu()?;
        let mut rng = Rng::from_state(61);
        let n = 100_000;
        let x: Vec<f64> = (0..n)
            .map(|i| {
                if i % 2 == 0 {
                    rng.range(-700.0, 700.0)
                } else {
                    rng.range(-4.0, 4.0)
                }
            })
            .collect();
        let out = run_in_out(
            &g,
            "math_f64",
            LaunchConfig::for_len(n),
            &x,
            &vec![0f64; MATH_F64_OUTPUTS * n],
        )?;
        for i in 0..n {
            let (v, ax) = (x[i], x[i].abs());
            let at = |k: usize| out[k * n + i];
            assert_eq!(at(0), ax.sqrt(), "sqrt({ax})");
            assert!(ulps64(at(1), v.exp()) <= 1, "exp({v})");
            assert!(ulps64(at(2), ax.ln()) <= 1, "ln({ax})");
            assert!(
                ulps64(at(3), v.sin()) <= 1 || (at(3) - v.sin()).abs() < 1e-16,
                "sin({v})"
            );
            assert!(
                ulps64(at(4), v.cos()) <= 1 || (at(4) - v.cos()).abs() < 1e-16,
                "cos({v})"
            );
            let p = ax.powf(1.7);
            assert!(
                (at(5) - p).abs() <= (1.0 + (1.7 * ax.ln()).abs()) * 4.0 * f64::EPSILON * p,
                "pow({ax}, 1.7)"
            );
            assert_eq!(at(6), v.mul_add(2.5, -1.0), "fma({v})");
            assert_eq!(at(7), v.floor(), "floor({v})");
            assert_eq!(at(8), v.ceil(), "ceil({v})");
        }
        Ok(())
    }
}

/// Device panics: each runs in a child process, because a `trap` leaves the CUDA
/// context unusable for the rest of the process.
mod panics {
    use super::*;

    const CHILD_ENV: &str = "XLOG_GPU_PANIC_CHILD";

    /// Runs `child_reports_a_device_panic` in a new process for `kernel` (children run
    /// one at a time: see `xlog_test_support::child`).
    fn run_child(kernel: &str) -> Result<String, Box<dyn std::error::Error>> {
        let out = xlog_test_support::child::run_test(
            "panics::child_reports_a_device_panic",
            &[(CHILD_ENV, kernel)],
        );
        assert!(
            out.status.success(),
            "child process failed:\n{}",
            out.text()
        );
        Ok(out.text())
    }

    /// Asserts that the child's output contains every one of `needles`.
    fn assert_reports(text: &str, needles: &[&str]) {
        for needle in needles {
            assert!(text.contains(needle), "no `{needle}` in:\n{text}");
        }
    }

    #[test]
    fn explicit_panic_fails_the_launch_and_reports_location_and_message() -> TestResult {
        let text = run_child("deliberate_panic")?;
        assert_reports(
            &text,
            &[
                "LAUNCH FAILED: kernel `deliberate_panic` panicked on the device",
                "tests/device-kernels/src/entries.rs",
                "deliberate device panic",
                // Thread 1000 = block 3, thread 232 of a 256-thread block.
                "(block (3, 0, 0), thread (232, 0, 0))",
            ],
        );
        Ok(())
    }

    /// Every thread of 16 blocks panics at once: the threads that lose the claim on
    /// the record wait for it to be complete before they trap (a trap ends the
    /// launch, so an early one would leave the record half written and the error
    /// without its message).
    #[test]
    fn every_thread_panicking_still_reports_the_message() -> TestResult {
        let text = run_child("deliberate_panic_everywhere")?;
        assert_reports(
            &text,
            &[
                "LAUNCH FAILED: kernel `deliberate_panic` panicked on the device",
                "deliberate device panic",
            ],
        );
        Ok(())
    }

    /// The first call after the panic is a download, not a synchronisation: the
    /// sticky launch failure surfaces from the copy (`cuMemcpyDtoHAsync` on the GPU),
    /// and must still be reported as the panic, with its message.
    #[test]
    fn a_panic_first_seen_by_a_download_still_reports_the_message() -> TestResult {
        let text = run_child("deliberate_panic_then_download")?;
        assert_reports(
            &text,
            &[
                "LAUNCH FAILED: kernel `deliberate_panic` panicked on the device",
                "deliberate device panic",
            ],
        );
        Ok(())
    }

    /// With cubins for the device, a module is loaded one kernel at a time, and
    /// its kernels' driver modules share one panic record, made with the first of
    /// them: here another kernel's. The panicking kernel's module, loaded second,
    /// must point its sink at that record for the panic to be named.
    #[test]
    fn a_panic_in_a_kernel_loaded_after_another_reports_the_message() -> TestResult {
        let text = run_child("deliberate_panic_after_another_kernel")?;
        assert_reports(
            &text,
            &[
                "LAUNCH FAILED: kernel `deliberate_panic` panicked on the device",
                "deliberate device panic",
            ],
        );
        Ok(())
    }

    /// A recursion 1,000 levels deep (about 150 KB of stack) in a kernel launched on
    /// the default GPU stack (1 KiB per thread) runs off it: the error names the
    /// recursion and the stack, not only the driver's illegal address. The
    /// simulator's threads have 512 KiB stacks, which hold it.
    #[test]
    fn a_recursion_past_the_stack_is_reported_as_a_stack_overflow() -> TestResult {
        let text = run_child("recursion_past_the_stack")?;
        if xlog_runtime::sim::is_active() {
            assert_reports(&text, &["LAUNCH SUCCEEDED"]);
        } else {
            assert_reports(
                &text,
                &[
                    "LAUNCH FAILED: kernel `recursion` most likely overflowed its GPU stack",
                    "it recurses (xlog_device_kernels::bodies::recurse → \
                     xlog_device_kernels::bodies::recurse)",
                    "Runtime::set_stack_size",
                ],
            );
        }
        Ok(())
    }

    /// The same kernel 100 levels deep after `Runtime::set_stack_size(64 KiB)`:
    /// the raised stack holds it.
    #[test]
    fn a_raised_stack_holds_a_bounded_recursion() -> TestResult {
        let text = run_child("recursion_in_a_raised_stack")?;
        // The simulator's stacks are fixed at 512 KiB.
        let stack = if xlog_runtime::sim::is_active() {
            "stack 524288"
        } else {
            "stack 65536"
        };
        assert_reports(&text, &["LAUNCH SUCCEEDED", stack]);
        Ok(())
    }

    #[test]
    fn bounds_check_panic_reports_the_view_index_location() -> TestResult {
        let text = run_child("out_of_bounds_write")?;
        assert_reports(
            &text,
            &[
                "LAUNCH FAILED: kernel `out_of_bounds_write` panicked on the device",
                "tests/device-kernels/src/bodies.rs",
            ],
        );
        // The GPU's panic handler cannot format, so it records a fixed text for a
        // formatted message; the simulator formats it on the host (the documented
        // difference of `xlog_device::sim::Fault::Panic`).
        let message = if xlog_runtime::sim::is_active() {
            "index out of bounds: the len is 4095 but the index is 4095"
        } else {
            xlog_device::panic::FORMATTED_MESSAGE
        };
        assert!(text.contains(message), "{text}");
        Ok(())
    }

    /// The child side: launches the panicking kernel through the runtime and prints
    /// the error the runtime reports.
    #[test]
    #[ignore = "run by the panic tests in a child process"]
    fn child_reports_a_device_panic() -> TestResult {
        let Ok(kernel) = std::env::var(CHILD_ENV) else {
            return Ok(());
        };
        // The runtime points the module's panic sink at mapped host memory when it
        // loads the module, and turns the failed synchronisation into KernelPanic.
        let g = gpu()?;
        let everywhere = kernel == "deliberate_panic_everywhere";
        let download = kernel == "deliberate_panic_then_download";
        let after_another = kernel == "deliberate_panic_after_another_kernel";
        let kernel = if everywhere || download || after_another {
            "deliberate_panic"
        } else {
            &kernel
        };
        if after_another {
            g.function("out_of_bounds_write")?;
        }
        let mut unused = g.rt.alloc_zeroed::<u32>(1)?;
        if let Some(raised) = kernel.strip_prefix("recursion_") {
            let depth = if raised == "in_a_raised_stack" {
                g.rt.set_stack_size(64 * 1024)?;
                100
            } else {
                1000
            };
            println!("stack {}", g.rt.stack_size()?);
            let f = g.function("recursion")?;
            let mut args = [Arg::U64(depth), ptr(&unused)];
            let mut params = raw_params(&mut args);
            // SAFETY: recursion(depth, out) writes `out[0]` only.
            let launched = unsafe {
                WorkRecorder::new(&g.stream)
                    .write(&mut unused)
                    .preflight()?
                    .launch(&f, LaunchConfig::for_len(32), &mut params)
            };
            match launched.and_then(|_| g.stream.synchronize()) {
                Ok(()) => println!("LAUNCH SUCCEEDED"),
                Err(e) => println!("LAUNCH FAILED: {e}"),
            }
            return Ok(());
        }
        let f = g.function(kernel)?;
        let launched = if kernel == "deliberate_panic" {
            let mut args = [Arg::U64(if everywhere { u64::MAX } else { 1000 })];
            let mut params = raw_params(&mut args);
            // SAFETY: deliberate_panic(trigger: u64) touches no buffer.
            unsafe {
                WorkRecorder::new(&g.stream)
                    .write(&mut unused)
                    .preflight()?
                    .launch(&f, LaunchConfig::for_len(4096), &mut params)
            }
        } else {
            let total = 4096;
            let mut out = g.rt.alloc_zeroed::<u32>(total - 1)?;
            let mut args = [ptr(&out), len(total - 1)];
            let mut params = raw_params(&mut args);
            // SAFETY: out_of_bounds_write(out, out_len) writes `out` (and panics
            // before writing past it).
            unsafe {
                WorkRecorder::new(&g.stream)
                    .write(&mut out)
                    .preflight()?
                    .launch(&f, LaunchConfig::for_len(total), &mut params)
            }
        };
        let outcome = launched.and_then(|_| {
            if download {
                // Long enough for the kernel to have trapped: the copy's own call
                // then meets the sticky failure, before any synchronisation.
                std::thread::sleep(std::time::Duration::from_millis(500));
                unused.download(&g.stream).map(drop)
            } else {
                g.stream.synchronize()
            }
        });
        match outcome {
            Ok(()) => println!("LAUNCH SUCCEEDED"),
            Err(e) => println!("LAUNCH FAILED: {e}"),
        }
        Ok(())
    }
}
