//! GPU suite of the library calls recorded into graphs, opt-in with
//! `--features gpu-tests`; every test fails without a device (the simulator runs
//! it on the CPU, with the hazard detector checking each replay's nodes). Each
//! recorded call is replayed twice and must give what the eager call gives and
//! what a CPU reference gives, on sizes 0, 1, odd and a tile ± 1; a replay after
//! `Graph::update` re-points a call at new inputs; and a recorded call is fenced,
//! as one operation, against eager work on another stream.

use xlog::{DeviceBuffer, GraphArena, GraphRecorder, Runtime, Stream};
use xlog_kernels::sort::{self, Order};
use xlog_kernels::{compact, gather, histogram, reduce, segmented, set};
use xlog_test_support::{gpu_runtime, within_test_cap as within_cap, Rng};

/// 0, 1, odd, and one more or less than the tiles: the reduction's block of
/// 1024 `u32`s, the compaction's tile of 4096, the sets' tile of 256.
const SIZES: &[usize] = &[0, 1, 3, 255, 257, 1023, 1025, 4095, 4097, 3 * 4096 + 5];

fn sizes() -> impl Iterator<Item = usize> {
    SIZES.iter().copied().filter(|&n| within_cap(n))
}

fn streams(rt: &Runtime) -> (Stream, Stream) {
    (rt.new_stream().unwrap(), rt.new_stream().unwrap())
}

fn random(n: usize, range: u32, seed: u64) -> Vec<u32> {
    let mut r = Rng::new(seed);
    (0..n)
        .map(|_| (r.next_u64() % range as u64) as u32)
        .collect()
}

fn sorted(n: usize, range: u32, seed: u64) -> Vec<u32> {
    let mut v = random(n, range, seed);
    v.sort_unstable();
    v
}

#[test]
fn recorded_reductions_match_eager_and_cpu() {
    let rt = gpu_runtime();
    let (p, c) = streams(&rt);
    for n in sizes() {
        let x = random(n, 1 << 20, 11 + n as u64);
        let x64: Vec<u64> = x.iter().map(|&v| (v as u64) << 20 | 5).collect();
        let xb = rt.upload_on(&p, &x).unwrap();
        let xb64 = rt.upload_on(&p, &x64).unwrap();
        let arena = GraphArena::new();
        let mut rec = GraphRecorder::new(&c);
        let sum = reduce::record_sum(&mut rec, &arena, &xb).unwrap();
        let min = reduce::record_min(&mut rec, &arena, &xb).unwrap();
        let max = reduce::record_max(&mut rec, &arena, &xb).unwrap();
        let xor = reduce::record_fold::<u64, reduce::Xor>(&mut rec, &arena, &xb64).unwrap();
        let graph = rec.instantiate().unwrap();
        let want_sum = x.iter().fold(0u32, |a, &b| a.wrapping_add(b));
        let want_min = x.iter().copied().min().unwrap_or(u32::MAX);
        let want_max = x.iter().copied().max().unwrap_or(0);
        let want_xor = x64.iter().fold(0u64, |a, &b| a ^ b);
        assert_eq!(
            reduce::sum(&p, &xb).unwrap().download(&p).unwrap(),
            [want_sum]
        );
        let eager_xor = reduce::fold_safely::<u64, reduce::Xor>(&p, &xb64).unwrap();
        assert_eq!(eager_xor.download(&p).unwrap(), [want_xor]);
        for replay in 0..2 {
            graph.launch(&c).unwrap();
            assert_eq!(
                sum.download(&p).unwrap(),
                [want_sum],
                "sum of {n}, {replay}"
            );
            assert_eq!(
                min.download(&p).unwrap(),
                [want_min],
                "min of {n}, {replay}"
            );
            assert_eq!(
                max.download(&p).unwrap(),
                [want_max],
                "max of {n}, {replay}"
            );
            assert_eq!(
                xor.download(&p).unwrap(),
                [want_xor],
                "xor of {n}, {replay}"
            );
        }
    }
}

/// The counts are zeroed by the graph itself: a second replay counts afresh
/// instead of adding to the first.
#[test]
fn recorded_histograms_count_afresh_at_every_replay() {
    let rt = gpu_runtime();
    let (p, c) = streams(&rt);
    let bins = 37;
    for n in sizes() {
        let x = random(n, 50, 3 + n as u64);
        let keys: Vec<u8> = x.iter().map(|&v| v as u8).collect();
        let xb = rt.upload_on(&p, &x).unwrap();
        let kb = rt.upload_on(&p, &keys).unwrap();
        let arena = GraphArena::new();
        let mut rec = GraphRecorder::new(&c);
        let even = histogram::record_even(&mut rec, &arena, &xb, 0u32, 37, bins).unwrap();
        let counts = histogram::record_counts(&mut rec, &arena, &kb, bins).unwrap();
        let graph = rec.instantiate().unwrap();
        let mut want = vec![0u32; bins];
        for &v in &x {
            if (v as usize) < bins {
                want[v as usize] += 1;
            }
        }
        let eager = histogram::even(&p, &xb, 0u32, 37, bins).unwrap();
        assert_eq!(eager.download(&p).unwrap(), want, "eager {n}");
        for replay in 0..2 {
            graph.launch(&c).unwrap();
            assert_eq!(even.download(&p).unwrap(), want, "even {n}, {replay}");
            assert_eq!(counts.download(&p).unwrap(), want, "counts {n}, {replay}");
        }
    }
}

#[test]
fn recorded_gathers_and_scatters_match_eager_and_cpu() {
    let rt = gpu_runtime();
    let (p, c) = streams(&rt);
    for n in sizes().filter(|&n| n > 0) {
        let x = random(n, u32::MAX, 5 + n as u64);
        let idx = random(n, n as u32, 9 + n as u64);
        // A permutation, so the scatter writes every position once.
        let perm: Vec<u32> = {
            let mut v: Vec<u32> = (0..n as u32).collect();
            v.reverse();
            v
        };
        let xb = rt.upload_on(&p, &x).unwrap();
        let ib = rt.upload_on(&p, &idx).unwrap();
        let pb = rt.upload_on(&p, &perm).unwrap();
        let out = rt.alloc_zeroed_on::<u32>(&p, n).unwrap();
        let arena = GraphArena::new();
        let mut rec = GraphRecorder::new(&c);
        let g = gather::record_gather(&mut rec, &arena, &xb, &ib).unwrap();
        let bad = gather::record_scatter(&mut rec, &arena, &xb, &pb, &out).unwrap();
        let graph = rec.instantiate().unwrap();
        let want: Vec<u32> = idx.iter().map(|&i| x[i as usize]).collect();
        let mut want_scatter = vec![0u32; n];
        for (i, &j) in perm.iter().enumerate() {
            want_scatter[j as usize] = x[i];
        }
        assert_eq!(
            gather::gather(&p, &xb, &ib).unwrap().download(&p).unwrap(),
            want
        );
        for replay in 0..2 {
            graph.launch(&c).unwrap();
            assert_eq!(g.out.download(&p).unwrap(), want, "gather {n}, {replay}");
            assert_eq!(g.first_bad.download(&p).unwrap(), [u64::MAX]);
            assert_eq!(
                out.download(&p).unwrap(),
                want_scatter,
                "scatter {n}, {replay}"
            );
            assert_eq!(bad.download(&p).unwrap(), [u64::MAX]);
        }
    }
}

/// A bad index cannot become an error inside a graph: the replay reports the
/// first bad position in the error word, which the next replay with good indices
/// resets; `Graph::update` re-points the gather at other indices.
#[test]
fn a_recorded_gather_reports_bad_indices_and_follows_an_update() {
    let rt = gpu_runtime();
    let (p, c) = streams(&rt);
    let n = 1025;
    let x = random(n, u32::MAX, 1);
    let mut idx = random(n, n as u32, 2);
    idx[700] = n as u32;
    idx[900] = u32::MAX;
    let good = random(n, n as u32, 3);
    let xb = rt.upload_on(&p, &x).unwrap();
    let bad_b = rt.upload_on(&p, &idx).unwrap();
    let good_b = rt.upload_on(&p, &good).unwrap();
    let arena = GraphArena::new();
    let mut rec = GraphRecorder::new(&c);
    let first = gather::record_gather(&mut rec, &arena, &xb, &bad_b).unwrap();
    let graph = rec.instantiate().unwrap();
    graph.launch(&c).unwrap();
    assert_eq!(first.first_bad.download(&p).unwrap(), [700]);
    assert_eq!(
        first.out.download(&p).unwrap()[700],
        0,
        "a bad index gathers 0"
    );
    let mut rec = GraphRecorder::new(&c);
    let second = gather::record_gather(&mut rec, &arena, &xb, &good_b).unwrap();
    let graph = graph.update(rec).unwrap();
    for _ in 0..2 {
        graph.launch(&c).unwrap();
        let want: Vec<u32> = good.iter().map(|&i| x[i as usize]).collect();
        assert_eq!(second.out.download(&p).unwrap(), want);
        assert_eq!(second.first_bad.download(&p).unwrap(), [u64::MAX]);
    }
}

#[test]
fn recorded_compactions_match_eager_and_cpu() {
    let rt = gpu_runtime();
    let (p, c) = streams(&rt);
    for n in sizes() {
        let x = random(n, 1000, 21 + n as u64);
        let flags: Vec<u8> = x.iter().map(|&v| (v % 3 == 0) as u8).collect();
        let runs_in = sorted(n, 64, 23 + n as u64);
        let xb = rt.upload_on(&p, &x).unwrap();
        let fb = rt.upload_on(&p, &flags).unwrap();
        let rb = rt.upload_on(&p, &runs_in).unwrap();
        let into = rt.alloc_zeroed_on::<u32>(&p, n).unwrap();
        let arena = GraphArena::new();
        let mut rec = GraphRecorder::new(&c);
        let sel = compact::record_select_flagged(&mut rec, &arena, &xb, &fb).unwrap();
        let into_count =
            compact::record_select_flagged_into(&mut rec, &arena, &xb, &fb, &into).unwrap();
        let (parted, kept) = compact::record_partition_flagged(&mut rec, &arena, &xb, &fb).unwrap();
        let runs = compact::record_unique(&mut rec, &arena, &rb).unwrap();
        let graph = rec.instantiate().unwrap();

        let want_sel: Vec<u32> = x
            .iter()
            .zip(&flags)
            .filter(|(_, &f)| f != 0)
            .map(|(&v, _)| v)
            .collect();
        let mut want_part = want_sel.clone();
        want_part.extend(
            x.iter()
                .zip(&flags)
                .filter(|(_, &f)| f == 0)
                .map(|(&v, _)| v),
        );
        let mut want_vals = runs_in.clone();
        want_vals.dedup();
        let mut want_offsets: Vec<u64> = (0..n)
            .filter(|&i| i == 0 || runs_in[i] != runs_in[i - 1])
            .map(|i| i as u64)
            .collect();
        want_offsets.push(n as u64);
        let k = want_sel.len();
        let r = want_vals.len();
        let eager = compact::select_flagged(&p, &xb, &fb).unwrap();
        assert_eq!(eager.download(&p).unwrap(), want_sel, "eager {n}");
        let eager_runs = compact::unique_counts(&p, &rb).unwrap();
        assert_eq!(
            eager_runs.values.download(&p).unwrap(),
            want_vals,
            "eager {n}"
        );
        for replay in 0..2 {
            graph.launch(&c).unwrap();
            let what = format!("{n}, replay {replay}");
            assert_eq!(sel.count.download(&p).unwrap(), [k as u64], "{what}");
            assert_eq!(
                sel.values.download(&p).unwrap()[..k],
                want_sel[..],
                "{what}"
            );
            assert_eq!(into_count.download(&p).unwrap(), [k as u64], "{what}");
            assert_eq!(into.download(&p).unwrap()[..k], want_sel[..], "{what}");
            assert_eq!(kept.download(&p).unwrap(), [k as u64], "{what}");
            assert_eq!(parted.download(&p).unwrap(), want_part, "{what}");
            assert_eq!(runs.runs.download(&p).unwrap(), [r as u64], "{what}");
            assert_eq!(
                runs.values.download(&p).unwrap()[..r],
                want_vals[..],
                "{what}"
            );
            if n > 0 {
                assert_eq!(
                    runs.offsets.download(&p).unwrap()[..=r],
                    want_offsets[..],
                    "{what}"
                );
            }
        }
    }
}

/// Reduce-by-key in a graph: the runs of the keys, then the segmented sum of
/// the values over their offsets; the first `runs` sums are `reduce_by_key`'s.
#[test]
fn recorded_segmented_reductions_match_reduce_by_key_and_cpu() {
    let rt = gpu_runtime();
    let (p, c) = streams(&rt);
    for n in sizes() {
        let keys = sorted(n, 40, 61 + n as u64);
        let vals = random(n, 1000, 67 + n as u64);
        let kb = rt.upload_on(&p, &keys).unwrap();
        let vb = rt.upload_on(&p, &vals).unwrap();
        let arena = GraphArena::new();
        let mut rec = GraphRecorder::new(&c);
        let runs = compact::record_unique(&mut rec, &arena, &kb).unwrap();
        let sums = segmented::record_segmented_reduce::<u32, segmented::Sum>(
            &mut rec,
            &arena,
            &vb,
            runs.offsets,
        )
        .unwrap();
        let graph = rec.instantiate().unwrap();
        let mut want_keys = keys.clone();
        want_keys.dedup();
        let mut want_sums = Vec::new();
        for (i, &k) in keys.iter().enumerate() {
            if i == 0 || keys[i - 1] != k {
                want_sums.push(0u32);
            }
            *want_sums.last_mut().unwrap() += vals[i];
        }
        let eager = segmented::reduce_by_key::<u32, u32, segmented::Sum>(&p, &kb, &vb).unwrap();
        assert_eq!(eager.keys.download(&p).unwrap(), want_keys, "eager {n}");
        assert_eq!(eager.values.download(&p).unwrap(), want_sums, "eager {n}");
        let r = want_keys.len();
        for replay in 0..2 {
            graph.launch(&c).unwrap();
            let what = format!("{n}, replay {replay}");
            assert_eq!(runs.runs.download(&p).unwrap(), [r as u64], "{what}");
            assert_eq!(
                runs.values.download(&p).unwrap()[..r],
                want_keys[..],
                "{what}"
            );
            assert_eq!(sums.download(&p).unwrap()[..r], want_sums[..], "{what}");
        }
    }
}

#[test]
fn recorded_set_operations_match_eager_and_cpu() {
    let rt = gpu_runtime();
    let (p, c) = streams(&rt);
    for n in sizes() {
        let a = sorted(n, 2 * n as u32 + 1, 31 + n as u64);
        let b = sorted(n / 2 + 1, 2 * n as u32 + 1, 37 + n as u64);
        let ab = rt.upload_on(&p, &a).unwrap();
        let bb = rt.upload_on(&p, &b).unwrap();
        let arena = GraphArena::new();
        let mut rec = GraphRecorder::new(&c);
        let merged = set::record_merge(&mut rec, &arena, &ab, &bb).unwrap();
        let diff = set::record_difference(&mut rec, &arena, &ab, &bb).unwrap();
        let inter = set::record_intersection(&mut rec, &arena, &ab, &bb).unwrap();
        let graph = rec.instantiate().unwrap();
        let mut want_merge = [a.clone(), b.clone()].concat();
        want_merge.sort_unstable();
        let mut distinct = a.clone();
        distinct.dedup();
        let want_diff: Vec<u32> = distinct
            .iter()
            .copied()
            .filter(|v| b.binary_search(v).is_err())
            .collect();
        let want_inter: Vec<u32> = distinct
            .iter()
            .copied()
            .filter(|v| b.binary_search(v).is_ok())
            .collect();
        assert_eq!(
            set::merge(&p, &ab, &bb).unwrap().download(&p).unwrap(),
            want_merge
        );
        assert_eq!(
            set::difference(&p, &ab, &bb).unwrap().download(&p).unwrap(),
            want_diff
        );
        for replay in 0..2 {
            graph.launch(&c).unwrap();
            let what = format!("{n}, replay {replay}");
            assert_eq!(merged.download(&p).unwrap(), want_merge, "{what}");
            let d = want_diff.len();
            assert_eq!(diff.count.download(&p).unwrap(), [d as u64], "{what}");
            assert_eq!(
                diff.values.download(&p).unwrap()[..d],
                want_diff[..],
                "{what}"
            );
            let i = want_inter.len();
            assert_eq!(inter.count.download(&p).unwrap(), [i as u64], "{what}");
            assert_eq!(
                inter.values.download(&p).unwrap()[..i],
                want_inter[..],
                "{what}"
            );
        }
    }
}

#[test]
fn recorded_sorts_match_eager_and_cpu() {
    let rt = gpu_runtime();
    let (p, c) = streams(&rt);
    // The sort's tiles: 256 threads × 16 to 32 keys.
    let sort_sizes = [0usize, 1, 3, 4095, 4097, 8191, 8193, 3 * 8192 + 5];
    for n in sort_sizes.into_iter().filter(|&n| within_cap(n)) {
        let x = random(n, u32::MAX, 51 + n as u64);
        let x64: Vec<i64> = x.iter().map(|&v| (v as i64 - (1 << 31)) * 3).collect();
        let vals: Vec<u16> = (0..n).map(|i| i as u16).collect();
        let xb = rt.upload_on(&p, &x).unwrap();
        let xb64 = rt.upload_on(&p, &x64).unwrap();
        let keys = rt.upload_on(&p, &x).unwrap();
        let pair_keys = rt.upload_on(&p, &x64).unwrap();
        let pair_vals = rt.upload_on(&p, &vals).unwrap();
        let arena = GraphArena::new();
        let mut rec = GraphRecorder::new(&c);
        let asc = sort::record_sorted(&mut rec, &arena, &xb, Order::Ascending).unwrap();
        let (desc, perm) =
            sort::record_sort_with_indices::<i64, u32>(&mut rec, &arena, &xb64, Order::Descending)
                .unwrap();
        sort::record_sort_keys(&mut rec, &arena, &keys, Order::Ascending).unwrap();
        sort::record_sort_pairs(&mut rec, &arena, &pair_keys, &pair_vals, Order::Ascending)
            .unwrap();
        let graph = rec.instantiate().unwrap();
        let mut want = x.clone();
        want.sort_unstable();
        let mut want_perm: Vec<u32> = (0..n as u32).collect();
        want_perm.sort_by(|&i, &j| x64[j as usize].cmp(&x64[i as usize]));
        let want_desc: Vec<i64> = want_perm.iter().map(|&i| x64[i as usize]).collect();
        let mut want_pairs: Vec<(i64, u16)> =
            x64.iter().copied().zip(vals.iter().copied()).collect();
        want_pairs.sort_by_key(|&(k, _)| k);
        let eager = sort::sorted(&p, &xb, Order::Ascending).unwrap();
        assert_eq!(eager.download(&p).unwrap(), want, "eager {n}");
        let (ek, ep) = sort::sort_with_indices::<i64, u32>(&p, &xb64, Order::Descending).unwrap();
        assert_eq!(ek.download(&p).unwrap(), want_desc, "eager {n}");
        assert_eq!(ep.download(&p).unwrap(), want_perm, "eager {n}");
        for replay in 0..2 {
            graph.launch(&c).unwrap();
            let what = format!("{n}, replay {replay}");
            assert_eq!(asc.download(&p).unwrap(), want, "{what}");
            assert_eq!(desc.download(&p).unwrap(), want_desc, "{what}");
            assert_eq!(perm.download(&p).unwrap(), want_perm, "{what}");
            assert_eq!(keys.download(&p).unwrap(), want, "{what}");
            let (k, v): (Vec<i64>, Vec<u16>) = want_pairs.iter().copied().unzip();
            assert_eq!(pair_keys.download(&p).unwrap(), k, "{what}");
            assert_eq!(pair_vals.download(&p).unwrap(), v, "{what}");
        }
    }
}

/// A sort of more keys than one portion cannot be recorded (its launches cover
/// parts of buffers): refused up front, the recording left empty. (Needs 4 GiB;
/// skipped under the sanitizers' length cap, and on the simulator's.)
#[test]
fn a_recorded_sort_refuses_more_than_a_portion() {
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    if !within_cap(sort::PORTION + 1) {
        return;
    }
    let keys = rt.alloc_zeroed_on::<u32>(&s, sort::PORTION + 1).unwrap();
    let arena = GraphArena::new();
    let mut rec = GraphRecorder::new(&s);
    let err = sort::record_sort_keys(&mut rec, &arena, &keys, Order::Ascending).unwrap_err();
    assert!(matches!(err, xlog::Error::Unsupported { .. }), "{err}");
    assert!(rec.is_empty() && arena.is_empty());
}

/// Records the guide's pipeline over `x` and `flags`.
fn record_pipeline<'g>(
    c: &Stream,
    arena: &'g GraphArena,
    x: &'g DeviceBuffer<u32>,
    flags: &'g DeviceBuffer<u8>,
) -> (
    GraphRecorder<'g>,
    compact::RecordedSelection<'g, u32>,
    compact::RecordedRuns<'g, u32>,
) {
    let mut rec = GraphRecorder::new(c);
    let kept = compact::record_select_flagged(&mut rec, arena, x, flags).unwrap();
    // Past the count, the selection holds zeros (never written): they sort
    // first, as one run of 0s, which the count tells apart.
    let ordered = sort::record_sorted(&mut rec, arena, kept.values, Order::Ascending).unwrap();
    let runs = compact::record_unique(&mut rec, arena, ordered).unwrap();
    // Select: a fill of the count, the status memset, the kernel; sort: a fill of
    // the histograms, the histogram, the offsets, and a status fill and a scatter
    // for each of 4 passes; unique: as select.
    assert_eq!(rec.len(), 3 + 11 + 3);
    (rec, kept, runs)
}

/// The guide's pipeline, recorded once and replayed: keep the multiples of 3,
/// sort them, and take the runs of equal values; then re-pointed at another
/// input of the same length with `Graph::update`.
#[test]
fn a_recorded_filter_sort_unique_pipeline_replays_like_the_eager_calls() {
    let rt = gpu_runtime();
    let (p, c) = streams(&rt);
    for n in [1usize, 4097, 3 * 8192 + 5]
        .into_iter()
        .filter(|&n| within_cap(n))
    {
        let inputs: Vec<(Vec<u32>, Vec<u8>)> = [41, 43]
            .iter()
            .map(|&seed| {
                let x = random(n, 500, seed + n as u64);
                let flags = x.iter().map(|&v| (v % 3 == 0) as u8).collect();
                (x, flags)
            })
            .collect();
        let bufs: Vec<_> = inputs
            .iter()
            .map(|(x, f)| (rt.upload_on(&p, x).unwrap(), rt.upload_on(&p, f).unwrap()))
            .collect();
        let arena = GraphArena::new();
        let (rec, kept, runs) = record_pipeline(&c, &arena, &bufs[0].0, &bufs[0].1);
        let mut graph = rec.instantiate().unwrap();
        for (i, ((x, _), (xb, fb))) in inputs.iter().zip(&bufs).enumerate() {
            let (kept, runs) = if i == 0 {
                (kept, runs)
            } else {
                let (rec, kept, runs) = record_pipeline(&c, &arena, xb, fb);
                graph = graph.update(rec).unwrap();
                (kept, runs)
            };
            let eager_kept = compact::select_flagged(&p, xb, fb).unwrap();
            let eager_sorted = sort::sorted(&p, &eager_kept, Order::Ascending).unwrap();
            let eager_runs = compact::unique_counts(&p, &eager_sorted).unwrap();
            let want = eager_runs.values.download(&p).unwrap();
            let mut cpu: Vec<u32> = x.iter().copied().filter(|v| v % 3 == 0).collect();
            cpu.sort_unstable();
            cpu.dedup();
            assert_eq!(want, cpu);
            for replay in 0..2 {
                graph.launch(&c).unwrap();
                let what = format!("{n}, input {i}, replay {replay}");
                let k = kept.count.download(&p).unwrap()[0] as usize;
                assert_eq!(k, eager_kept.len(), "{what}");
                let r = runs.runs.download(&p).unwrap()[0] as usize;
                let got = runs.values.download(&p).unwrap();
                // The padding's run of 0s, when there is padding and no kept 0.
                let skip = usize::from(k < n && !cpu.contains(&0));
                assert_eq!(got[skip..r], want[..], "{what}");
            }
        }
    }
}

/// A recorded library call is one fenced operation: the graph's launch on `c`
/// waits for an eager fill of its input on `p`, and an eager reduction on `p`
/// of its output waits for the graph, with no synchronisation in between. On the
/// simulator the hazard detector reports a missing fence; on a GPU the large
/// input makes a missing one give a wrong sum.
#[test]
fn a_recorded_call_is_fenced_against_eager_work_on_another_stream() {
    let rt = gpu_runtime();
    let (p, c) = streams(&rt);
    let n = if within_cap(1 << 22) { 1 << 22 } else { 4097 };
    let mut x: DeviceBuffer<u32> = rt.alloc_zeroed_on(&p, n).unwrap();
    for round in 1..4u32 {
        x.fill(&p, round).unwrap();
        let arena = GraphArena::new();
        let mut rec = GraphRecorder::new(&c);
        let h = histogram::record_even(&mut rec, &arena, &x, 0u32, 8, 8).unwrap();
        let graph = rec.instantiate().unwrap();
        graph.launch(&c).unwrap();
        // Read on `p` right after the launch on `c`.
        let total = reduce::sum(&p, h).unwrap().download(&p).unwrap();
        assert_eq!(total, [n as u32], "round {round}");
        let bin = h.download(&p).unwrap()[round as usize];
        assert_eq!(bin, n as u32, "round {round}");
    }
}
