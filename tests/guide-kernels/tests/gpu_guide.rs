//! GPU suite of the guide's kernels (opt-in: `--features gpu-tests`; every test
//! fails without a device): each kernel against a CPU model on awkward sizes (empty,
//! one element, a block ± 1, a prime, 2^24 + 7) and block shapes; and the guide's
//! filter, join and group-by against the same query on the CPU.

use xlog::{DeviceBuffer, LaunchConfig, Runtime, Stream};
use xlog_guide_kernels as k;
use xlog_kernels::compact::select_flagged;
use xlog_kernels::predicate::{compare_scalar, Cmp};
use xlog_kernels::{dense_group, gather::gather, join::inner_join};
use xlog_test_support::{gpu_runtime, within_test_cap as within_cap, Rng};

/// Inputs uploaded on a producer stream, kernels on a consumer stream.
fn streams(rt: &Runtime) -> (Stream, Stream) {
    (rt.new_stream().unwrap(), rt.new_stream().unwrap())
}

fn f32s(seed: u64, n: usize) -> Vec<f32> {
    let mut r = Rng::from_state(seed | 1);
    (0..n)
        .map(|_| (r.next_u64() % 20_001) as f32 / 100.0 - 100.0)
        .collect()
}

fn u64s(seed: u64, n: usize) -> Vec<u64> {
    let mut r = Rng::from_state(seed | 1);
    (0..n).map(|_| r.next_u64()).collect()
}

const SIZES: [usize; 7] = [0, 1, 255, 256, 257, 100_003, (1 << 24) + 7];

fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut r = Rng::from_state(seed | 1);
    // Skewed, so some bins see heavy contention.
    (0..n)
        .map(|_| {
            let v = r.next_u64();
            if v % 4 == 0 {
                7
            } else {
                (v >> 8) as u8
            }
        })
        .collect()
}

fn u32s(seed: u64, n: usize, below: u32) -> Vec<u32> {
    let mut r = Rng::from_state(seed | 1);
    (0..n).map(|_| r.next_u32() % below).collect()
}

fn cfg(blocks: usize, block: u32) -> LaunchConfig {
    LaunchConfig::new([blocks.max(1) as u32, 1, 1], [block, 1, 1])
}

#[test]
fn histogram_matches_the_cpu() {
    let rt = gpu_runtime();
    let (p, c) = streams(&rt);
    for n in SIZES.into_iter().filter(|&n| within_cap(n)) {
        let data = bytes(n as u64, n);
        let db = rt.upload_on(&p, &data).unwrap();
        let mut bins = rt.alloc_zeroed_on::<u32>(&c, 256).unwrap();
        if n > 0 {
            k::histogram_u8::launch(&c, cfg(n.div_ceil(256).min(4096), 256), &db, &mut bins)
                .unwrap();
        }
        let got = bins.download(&c).unwrap();
        let mut want = vec![0u32; 256];
        for &b in &data {
            want[b as usize] += 1;
        }
        assert_eq!(got, want, "n = {n}");
    }
}

#[test]
fn every_atomic_operation_matches_the_cpu() {
    let rt = gpu_runtime();
    let s = rt.stream().unwrap();
    for n in [1usize, 257, 100_003, (1 << 24) + 7]
        .into_iter()
        .filter(|&n| within_cap(n))
    {
        let mut r = Rng::from_state(n as u64 | 1);
        let data: Vec<i64> = (0..n)
            .map(|_| (r.next_u64() % (1 << 21)) as i64 - (1 << 20))
            .collect();
        let db = rt.upload_on(&s, &data).unwrap();
        let init = [0, i64::MAX, i64::MIN, -1, 0, 0, 0, i64::MIN, 0];
        let mut stats = rt.upload_on(&s, &init).unwrap();
        let mut sums = rt.upload_on(&s, &[0.0f64, f64::NAN]).unwrap();
        let mut small = rt.upload_on(&s, &[0.0f32]).unwrap();
        k::atomic_fold_i64::launch(
            &s,
            cfg(n.div_ceil(256).min(2048), 256),
            &db,
            &mut stats,
            &mut sums,
            &mut small,
        )
        .unwrap();
        let got = stats.download(&s).unwrap();
        let want = [
            data.iter().fold(0i64, |a, &v| a.wrapping_add(v)),
            *data.iter().min().unwrap(),
            *data.iter().max().unwrap(),
            data.iter().fold(-1, |a, &v| a & v),
            data.iter().fold(0, |a, &v| a | v),
            data.iter().fold(0, |a, &v| a ^ v),
            n.div_ceil(64) as i64,
        ];
        assert_eq!(got[..7], want, "n = {n}");
        assert!(data.contains(&got[7]), "exchange left {} (n = {n})", got[7]);
        assert_eq!(got[8], 42);
        let sums = sums.download(&s).unwrap();
        assert_eq!(sums[0], data.iter().sum::<i64>() as f64, "n = {n}");
        assert!(data.contains(&(sums[1] as i64)), "n = {n}");
        assert_eq!(small.download(&s).unwrap()[0], n.min(1000) as f32);
    }
}

#[test]
fn block_sums_give_one_partial_per_block() {
    let rt = gpu_runtime();
    let s = rt.stream().unwrap();
    for (n, blocks, block) in [
        (0usize, 3usize, 256u32),
        (1, 1, 32),
        (255, 2, 256),
        (257, 2, 256),
        (100_003, 37, 100),
        ((1 << 24) + 7, 1024, 256),
        (5_000, 9, 1024),
        (77, 5, 1),
    ]
    .into_iter()
    .filter(|&(n, _, _)| within_cap(n))
    {
        let x: Vec<u64> = {
            let mut r = Rng::from_state(n as u64 + 5);
            (0..n).map(|_| r.next_u64()).collect()
        };
        let xb = rt.upload_on(&s, &x).unwrap();
        let mut partials = rt.upload_on(&s, &vec![u64::MAX; blocks]).unwrap();
        k::block_sum_u64::launch(&s, cfg(blocks, block), &xb, &mut partials).unwrap();
        let got = partials.download(&s).unwrap();
        let threads = blocks * block as usize;
        let mut want = vec![0u64; blocks];
        for (i, &v) in x.iter().enumerate() {
            let b = (i % threads) / block as usize;
            want[b] = want[b].wrapping_add(v);
        }
        assert_eq!(got, want, "n = {n}, {blocks} × {block}");
    }
}

/// The guide's two launches: a partial per block, then one block over the
/// partials.
#[test]
fn two_pass_sums_match_the_cpu() {
    let rt = gpu_runtime();
    let s = rt.stream().unwrap();
    for n in SIZES.into_iter().filter(|&n| within_cap(n)) {
        let x = u64s(n as u64 + 11, n);
        let xb = rt.upload_on(&s, &x).unwrap();
        let blocks = n.div_ceil(256).clamp(1, 1024);
        let mut partials = rt.upload_on(&s, &vec![u64::MAX; blocks]).unwrap();
        k::block_sum_u64::launch(&s, cfg(blocks, 256), &xb, &mut partials).unwrap();
        let mut total = rt.upload_on(&s, &[u64::MAX]).unwrap();
        k::block_sum_u64::launch(&s, cfg(1, 1024), &partials, &mut total).unwrap();
        assert_eq!(
            total.download(&s).unwrap(),
            [x.iter().fold(0u64, |a, &v| a.wrapping_add(v))],
            "n = {n}"
        );
    }
}

#[test]
fn warp_sums_give_one_result_per_warp() {
    let rt = gpu_runtime();
    let s = rt.stream().unwrap();
    for (n, block) in [
        (1usize, 32u32),
        (100_003, 96),
        (1_001, 100),
        (5_000, 1024),
        (33, 1),
        (257, 31),
    ]
    .into_iter()
    .filter(|&(n, _)| within_cap(n))
    {
        let x = u32s(n as u64, n, u32::MAX);
        let xb = rt.upload_on(&s, &x).unwrap();
        let blocks = n.div_ceil(block as usize);
        let per_block = (block as usize).div_ceil(32);
        let warps = blocks * per_block;
        let mut sums = rt.upload_on(&s, &vec![7u32; warps]).unwrap();
        k::warp_sum_u32::launch(&s, cfg(blocks, block), &xb, &mut sums).unwrap();
        let got = sums.download(&s).unwrap();
        let mut want = vec![0u32; warps];
        for (i, &v) in x.iter().enumerate() {
            let (b, t) = (i / block as usize, i % block as usize);
            let w = b * per_block + t / 32;
            want[w] = want[w].wrapping_add(v);
        }
        assert_eq!(got, want, "n = {n}, block {block}");
    }
}

/// Asserts that `got` is `x` reversed within each block of 256, with `zero`
/// where the mirrored element lies past the end of `x`.
fn assert_block_reversed<T: PartialEq + Copy + std::fmt::Debug>(got: &[T], x: &[T], zero: T) {
    let n = x.len();
    for (i, &g) in got.iter().enumerate() {
        let mirror = i / 256 * 256 + 255 - i % 256;
        let want = if mirror < n { x[mirror] } else { zero };
        assert_eq!(g, want, "n = {n}, at {i}");
    }
}

#[test]
fn tile_reverses_each_block() {
    let rt = gpu_runtime();
    let s = rt.stream().unwrap();
    for n in SIZES.into_iter().filter(|&n| n > 0 && within_cap(n)) {
        let x = f32s(n as u64 + 21, n);
        let xb = rt.upload_on(&s, &x).unwrap();
        let mut out = rt.alloc_zeroed_on::<f32>(&s, n).unwrap();
        k::block_reverse_f32::launch(&s, k::block_reverse_f32::config(n), &xb, &mut out).unwrap();
        assert_block_reversed(&out.download(&s).unwrap(), &x, 0.0);
    }
}

#[test]
fn dynamic_tile_reverses_u64s_in_each_block() {
    let rt = gpu_runtime();
    let s = rt.stream().unwrap();
    for n in SIZES.into_iter().filter(|&n| n > 0 && within_cap(n)) {
        // Both halves of every value differ from every other value's.
        let x: Vec<u64> = u64s(n as u64 + 5, n)
            .into_iter()
            .enumerate()
            .map(|(i, v)| v ^ ((i as u64) << 32 | i as u64))
            .collect();
        let xb = rt.upload_on(&s, &x).unwrap();
        let mut out = rt.upload_on(&s, &vec![u64::MAX; n]).unwrap();
        k::block_reverse_u64::launch(&s, k::block_reverse_u64::config(n), &xb, &mut out).unwrap();
        assert_block_reversed(&out.download(&s).unwrap(), &x, 0);
    }
}

#[test]
fn compaction_keeps_the_odd_elements_and_counts_them_on_the_device() {
    let rt = gpu_runtime();
    let s = rt.stream().unwrap();
    for n in SIZES.into_iter().filter(|&n| n > 0 && within_cap(n)) {
        let x = u32s(n as u64 + 8, n, 1000);
        let xb = rt.upload_on(&s, &x).unwrap();
        let mut out = rt.upload_on(&s, &vec![u32::MAX; n]).unwrap();
        let mut count = rt.alloc_zeroed_on::<u32>(&s, 1).unwrap();
        k::select_odd_u32::launch(&s, LaunchConfig::for_len(n), &xb, &mut out, &mut count).unwrap();
        let mut want: Vec<u32> = x.iter().copied().filter(|v| v % 2 == 1).collect();
        let count = count.download(&s).unwrap()[0] as usize;
        assert_eq!(count, want.len(), "n = {n}");
        let mut got = out.download(&s).unwrap();
        assert!(got[count..].iter().all(|&v| v == u32::MAX), "n = {n}");
        got.truncate(count);
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "n = {n}");
    }
}

fn last_nonzero<T: PartialEq + Default + Copy>(a: T, b: T) -> T {
    if b == T::default() {
        a
    } else {
        b
    }
}

#[test]
fn block_collectives_match_the_cpu_for_every_block_shape() {
    let rt = gpu_runtime();
    let s = rt.stream().unwrap();
    for block in [1u32, 31, 32, 33, 100, 256, 1000, 1024] {
        for n in [block as usize * 3 + 5, 1, (1 << 20) + 7]
            .into_iter()
            .filter(|&n| within_cap(n))
        {
            let x = u32s(n as u64 * 31 + block as u64, n, 1 << 30);
            let xb = rt.upload_on(&s, &x).unwrap();
            let mut outs: Vec<_> = (0..6)
                .map(|_| rt.alloc_zeroed_on::<u32>(&s, n).unwrap())
                .collect();
            let [incl, excl, agg, rank, bcast, last] = &mut outs[..] else {
                unreachable!()
            };
            let blocks = n.div_ceil(block as usize);
            k::block_collectives_u32::launch(
                &s,
                cfg(blocks, block),
                &xb,
                incl,
                excl,
                agg,
                rank,
                bcast,
                last,
            )
            .unwrap();
            let got: Vec<Vec<u32>> = outs.iter().map(|b| b.download(&s).unwrap()).collect();
            let b = block as usize;
            for start in (0..n).step_by(b) {
                let v = |t: usize| x.get(start + t).copied().unwrap_or(0);
                let total = (0..b).fold(0u32, |a, t| a.wrapping_add(v(t)));
                let odd = (0..b).filter(|&t| v(t) % 2 == 1).count() as u32;
                let (mut sum, mut ranked, mut lastnz) = (0u32, 0u32, 0u32);
                for t in 0..b.min(n - start) {
                    let i = start + t;
                    let m3 = if v(t) % 3 == 0 { v(t) } else { 0 };
                    lastnz = last_nonzero(lastnz, m3);
                    let want = [
                        sum.wrapping_add(v(t)),
                        7u32.wrapping_add(sum),
                        total,
                        (ranked << 16) | odd,
                        v(b - 1),
                        lastnz,
                    ];
                    let have: Vec<u32> = got.iter().map(|g| g[i]).collect();
                    assert_eq!(have, want, "block {block}, n = {n}, at {i}");
                    sum = sum.wrapping_add(v(t));
                    ranked += v(t) % 2;
                }
            }
        }
    }
}

#[test]
fn warp_collectives_match_the_cpu_for_every_block_shape() {
    let rt = gpu_runtime();
    let s = rt.stream().unwrap();
    for block in [1u32, 5, 31, 32, 33, 100, 1024] {
        for n in [block as usize * 3 + 5, (1 << 18) + 3]
            .into_iter()
            .filter(|&n| within_cap(n))
        {
            let mut r = Rng::from_state(n as u64 + block as u64);
            let x: Vec<u64> = (0..n).map(|_| r.next_u64() % 100_000).collect();
            let xb = rt.upload_on(&s, &x).unwrap();
            let mut outs: Vec<_> = (0..5)
                .map(|_| rt.alloc_zeroed_on::<u64>(&s, n).unwrap())
                .collect();
            let [incl, excl, red, rank, bcast] = &mut outs[..] else {
                unreachable!()
            };
            let blocks = n.div_ceil(block as usize);
            k::warp_collectives_u64::launch(
                &s,
                cfg(blocks, block),
                &xb,
                incl,
                excl,
                red,
                rank,
                bcast,
            )
            .unwrap();
            let got: Vec<Vec<u64>> = outs.iter().map(|b| b.download(&s).unwrap()).collect();
            let b = block as usize;
            for bstart in (0..n).step_by(b) {
                for wstart in (0..b).step_by(32) {
                    let lanes = 32.min(b - wstart);
                    let v = |l: usize| x.get(bstart + wstart + l).copied().unwrap_or(0);
                    let red_all = (0..lanes)
                        .map(|l| if v(l) % 3 == 0 { v(l) } else { 0 })
                        .fold(0, last_nonzero);
                    let odd = (0..lanes).filter(|&l| v(l) % 2 == 1).count() as u64;
                    let (mut sum, mut ranked) = (0u64, 0u64);
                    for l in 0..lanes {
                        let i = bstart + wstart + l;
                        if i >= n {
                            break;
                        }
                        let want = [
                            sum + v(l),
                            5 + sum,
                            red_all,
                            (ranked << 16) | odd,
                            v(lanes - 1),
                        ];
                        let have: Vec<u64> = got.iter().map(|g| g[i]).collect();
                        assert_eq!(have, want, "block {block}, n = {n}, at {i}");
                        sum += v(l);
                        ranked += v(l) % 2;
                    }
                }
            }
        }
    }
}

/// Groups of the guide's query.
const GROUPS: usize = 16;

/// The guide's query (chapter "The kernel library"): the total amount per
/// customer group of the orders of at least 2500. `tests/guide_text.rs` checks
/// that the guide prints this body, which borrows a stream `s` it has in scope.
#[allow(clippy::needless_borrow)]
fn query(
    s: &Stream,
    o_customer: DeviceBuffer<u32>,
    o_amount: DeviceBuffer<u32>,
    c_key: DeviceBuffer<u32>,
    c_group: DeviceBuffer<u32>,
) -> xlog::Result<Vec<u32>> {
    let flags = compare_scalar(&s, &o_amount, Cmp::Ge, 2500)?; // WHERE amount >= 2500
    let customer = select_flagged(&s, &o_customer, &flags)?;
    let amount = select_flagged(&s, &o_amount, &flags)?;
    let pairs = inner_join(&s, &c_key, &customer)?; // JOIN customers ON key
    let group = gather(&s, &c_group, &pairs.build_rows)?;
    let amount = gather(&s, &amount, &pairs.probe_rows)?;
    let totals = dense_group::sum(&s, &group, &amount, GROUPS)?; // GROUP BY group
    let totals = totals.download(&s)?; // totals[g]: group g's sum
    Ok(totals)
}

#[test]
fn the_guides_filter_join_and_group_by_match_the_cpu() {
    let rt = gpu_runtime();
    let s = rt.stream().unwrap();
    for (orders, customers) in [(0usize, 0usize), (1, 1), (257, 40), (5_000, 1_000)]
        .into_iter()
        .filter(|&(n, _)| within_cap(n))
    {
        let mut r = Rng::from_state(orders as u64 * 7 + 1);
        // Customer keys are distinct (an odd multiplier is a bijection); orders
        // also name keys no customer has.
        let key = |j: u32| j.wrapping_mul(0x2545_F491) ^ 0x1234_5678;
        let c_key: Vec<u32> = (0..customers as u32).map(key).collect();
        let c_group: Vec<u32> = (0..customers)
            .map(|_| r.next_u32() % GROUPS as u32)
            .collect();
        let o_customer: Vec<u32> = (0..orders)
            .map(|_| key(r.next_u32() % (customers as u32 + customers as u32 / 8 + 1)))
            .collect();
        let o_amount: Vec<u32> = (0..orders).map(|_| r.next_u32() % 10_000).collect();
        let mut want = vec![0u32; GROUPS];
        for (c, &a) in o_customer.iter().zip(&o_amount) {
            if let Some(j) = c_key.iter().position(|k| k == c) {
                if a >= 2500 {
                    let g = c_group[j] as usize;
                    want[g] = want[g].wrapping_add(a);
                }
            }
        }
        let got = query(
            &s,
            rt.upload_on(&s, &o_customer).unwrap(),
            rt.upload_on(&s, &o_amount).unwrap(),
            rt.upload_on(&s, &c_key).unwrap(),
            rt.upload_on(&s, &c_group).unwrap(),
        )
        .unwrap();
        assert_eq!(got, want, "{orders} orders, {customers} customers");
    }
}
