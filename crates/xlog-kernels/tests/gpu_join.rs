//! GPU suite of the hash join (`xlog_kernels::join`), opt-in with `--features
//! gpu-tests`; every test fails without a device. Each case runs the inner, semi
//! and anti joins on `u32` and `u64` keys against a CPU reference, with the inputs
//! uploaded on another stream than the join's.

use std::collections::HashMap;
use std::hash::Hash;

use xlog::{DeviceBuffer, Error, Runtime, Stream};
use xlog_kernels::join::{self, JoinKey, JoinTable};
use xlog_test_support::{gpu_runtime, within_test_cap, Rng};

trait TestKey: JoinKey + Eq + Hash + Ord + std::fmt::Debug {
    /// `v` truncated to the key type.
    fn from_u64(v: u64) -> Self;
    const TOP: Self;
}
impl TestKey for u32 {
    fn from_u64(v: u64) -> Self {
        v as u32
    }
    const TOP: Self = u32::MAX;
}
impl TestKey for u64 {
    fn from_u64(v: u64) -> Self {
        v
    }
    const TOP: Self = u64::MAX;
}

/// Every `(build row, probe row)` with equal keys, sorted by probe row then build
/// row.
fn cpu_inner<K: TestKey>(build: &[K], probe: &[K]) -> Vec<(u32, u32)> {
    let mut rows: HashMap<K, Vec<u32>> = HashMap::new();
    for (r, &k) in build.iter().enumerate() {
        rows.entry(k).or_default().push(r as u32);
    }
    let mut out = Vec::new();
    for (p, k) in probe.iter().enumerate() {
        if let Some(bs) = rows.get(k) {
            out.extend(bs.iter().map(|&b| (b, p as u32)));
        }
    }
    out
}

/// The probe rows whose key is (`keep = true`) or is not in `build`.
fn cpu_select<K: TestKey>(build: &[K], probe: &[K], keep: bool) -> Vec<u32> {
    let keys: std::collections::HashSet<K> = build.iter().copied().collect();
    (0..probe.len() as u32)
        .filter(|&p| keys.contains(&probe[p as usize]) == keep)
        .collect()
}

/// Runs the three joins on the device (inputs uploaded on another stream) and
/// compares them with the CPU; returns the inner join's length.
fn check<K: TestKey>(rt: &Runtime, build: &[K], probe: &[K]) -> usize {
    let (up, s) = (rt.new_stream().unwrap(), rt.new_stream().unwrap());
    let b = rt.upload_on(&up, build).unwrap();
    let p = rt.upload_on(&up, probe).unwrap();
    let table = JoinTable::build(&s, &b).unwrap();
    assert_eq!(table.rows(), build.len());
    assert!(table.capacity() >= 4 * build.len() && table.capacity().is_power_of_two());

    let pairs = table.inner_join(&s, &p).unwrap();
    let (got_b, got_p) = (
        pairs.build_rows.download(&s).unwrap(),
        pairs.probe_rows.download(&s).unwrap(),
    );
    assert_eq!(got_b.len(), pairs.len());
    assert!(
        got_p.windows(2).all(|w| w[0] <= w[1]),
        "pairs are not ordered by probe row"
    );
    let mut got: Vec<(u32, u32)> = got_b.into_iter().zip(got_p).collect();
    got.sort_unstable_by_key(|&(b, p)| (p, b));
    let want = cpu_inner(build, probe);
    assert_eq!(got.len(), want.len(), "inner join count");
    assert!(got == want, "inner join pairs differ from the CPU");

    let semi = table.semi_join(&s, &p).unwrap().download(&s).unwrap();
    assert!(
        semi == cpu_select(build, probe, true),
        "semi join differs from the CPU"
    );
    let anti = table.anti_join(&s, &p).unwrap().download(&s).unwrap();
    assert!(
        anti == cpu_select(build, probe, false),
        "anti join differs from the CPU"
    );
    // The one-call forms agree with the table's.
    assert_eq!(join::inner_join(&s, &b, &p).unwrap().len(), want.len());
    assert_eq!(join::semi_join(&s, &b, &p).unwrap().len(), semi.len());
    assert_eq!(join::anti_join(&s, &b, &p).unwrap().len(), anti.len());
    want.len()
}

fn keys<K: TestKey>(n: usize, mut f: impl FnMut(usize) -> u64) -> Vec<K> {
    (0..n).map(|i| K::from_u64(f(i))).collect()
}

/// One `#[test]` per key type for each case: `<case>_u32` and `<case>_u64`, each
/// calling `<case>::<K>()`.
macro_rules! for_each_key {
    ($($case:ident),* $(,)?) => {
        mod u32_keys {
            $(#[test] fn $case() { super::$case::<u32>(); })*
        }
        mod u64_keys {
            $(#[test] fn $case() { super::$case::<u64>(); })*
        }
    };
}

for_each_key!(
    empty_build,
    empty_probe,
    empty_both,
    no_matches,
    every_probe_key_missing,
    every_probe_key_matches_many_build_rows,
    duplicates_on_both_sides,
    all_keys_equal,
    zero_and_max_keys,
    sizes_around_the_tile,
    distinct_build_keys_around_the_write_tile,
    one_duplicate_key_probed_by_the_last_row_only,
    large_random,
    hundred_million_probe_rows,
);

fn empty_build<K: TestKey>() {
    let rt = gpu_runtime();
    let probe = keys::<K>(1000, |i| i as u64);
    assert_eq!(check::<K>(&rt, &[], &probe), 0);
}

fn empty_probe<K: TestKey>() {
    let rt = gpu_runtime();
    let build = keys::<K>(1000, |i| i as u64 % 7);
    assert_eq!(check::<K>(&rt, &build, &[]), 0);
}

fn empty_both<K: TestKey>() {
    assert_eq!(check::<K>(&gpu_runtime(), &[], &[]), 0);
}

fn no_matches<K: TestKey>() {
    let rt = gpu_runtime();
    let build = keys::<K>(3000, |i| 2 * i as u64);
    let probe = keys::<K>(5000, |i| 2 * i as u64 + 1);
    assert_eq!(check::<K>(&rt, &build, &probe), 0);
}

fn every_probe_key_missing<K: TestKey>() {
    let rt = gpu_runtime();
    let mut r = Rng::new(11);
    // Build keys with the top bit clear, probe keys with it set: disjoint, random.
    let top = if std::mem::size_of::<K>() == 4 {
        1u64 << 31
    } else {
        1u64 << 63
    };
    let build = keys::<K>(1 << 16, |_| r.next_u64() & (top - 1));
    let probe = keys::<K>(100_003, |_| r.next_u64() | top);
    assert_eq!(check::<K>(&rt, &build, &probe), 0);
}

fn every_probe_key_matches_many_build_rows<K: TestKey>() {
    let rt = gpu_runtime();
    // Four keys, 250 build rows each; every probe row matches 250 of them.
    let build = keys::<K>(1000, |i| (i % 4) as u64 * 1_000_003);
    let probe = keys::<K>(10_000, |i| (i * 7 % 4) as u64 * 1_000_003);
    assert_eq!(check::<K>(&rt, &build, &probe), 2_500_000);
}

fn duplicates_on_both_sides<K: TestKey>() {
    let rt = gpu_runtime();
    let mut r = Rng::new(12);
    let build = keys::<K>(20_000, |_| r.next_u64() % 5000);
    let probe = keys::<K>(30_000, |_| r.next_u64() % 8000);
    assert!(check::<K>(&rt, &build, &probe) > 0);
}

fn all_keys_equal<K: TestKey>() {
    let rt = gpu_runtime();
    let build = keys::<K>(3000, |_| 42);
    let probe = keys::<K>(3001, |_| 42);
    assert_eq!(check::<K>(&rt, &build, &probe), 3000 * 3001);
    // The same with the key whose complement is an empty slot.
    let build = vec![K::TOP; 2000];
    let probe = vec![K::TOP; 1000];
    assert_eq!(check::<K>(&rt, &build, &probe), 2_000_000);
}

fn zero_and_max_keys<K: TestKey>() {
    let rt = gpu_runtime();
    let m = K::TOP;
    let z = K::from_u64(0);
    let one = K::from_u64(1);
    let below = K::from_u64(u64::MAX - 1);
    let build = vec![z, m, one, m, z, below, z];
    let probe = vec![m, z, K::from_u64(2), one, m, below, K::from_u64(3), z];
    assert_eq!(check::<K>(&rt, &build, &probe), 2 + 3 + 1 + 2 + 1 + 3);
    // MAX only on one side, 0 only on the other.
    assert_eq!(check::<K>(&rt, &[m, m], &[z, z, one]), 0);
    assert_eq!(check::<K>(&rt, &[z], &[m, z, m]), 1);
}

fn sizes_around_the_tile<K: TestKey>() {
    let rt = gpu_runtime();
    let mut r = Rng::new(13);
    // Probe sides of n + 1 rows: around the 128-row count tile (a warp's), the
    // 256-row count block, the per-row write pass's 1024-row block and the staged
    // 4096-row block.
    for n in [
        1usize, 126, 127, 128, 255, 256, 257, 382, 384, 511, 1022, 1023, 1024, 2047, 4094, 4095,
        4097,
    ] {
        let build = keys::<K>(n, |_| r.next_u64() % (n as u64 + 3));
        let probe = keys::<K>(n + 1, |_| r.next_u64() % (n as u64 + 3));
        check::<K>(&rt, &build, &probe);
    }
}

/// Distinct build keys: every probe row has at most one build row, the inner
/// join's single-pair write pass, around its 4096-row tile (and a semi join's
/// compaction, on the same tile).
fn distinct_build_keys_around_the_write_tile<K: TestKey>() {
    let rt = gpu_runtime();
    let mut r = Rng::new(15);
    for n in [1usize, 1023, 1024, 1025, 4095, 4096, 4097, 8191, 12289] {
        let build = keys::<K>(n, |i| 3 * i as u64);
        // About a third of the probe keys are build keys.
        let probe = keys::<K>(n + 1, |_| r.next_u64() % (3 * n as u64 + 3));
        let pairs = check::<K>(&rt, &build, &probe);
        assert!(n < 1000 || pairs > n / 5, "{pairs} pairs for {n} rows");
    }
}

/// Distinct build keys but one with two build rows, which only the last probe row
/// (of a probe side one past a multiple of four, over several write tiles) has:
/// the one row whose match word is `MANY` sends the whole join to the per-row
/// write pass.
fn one_duplicate_key_probed_by_the_last_row_only<K: TestKey>() {
    let rt = gpu_runtime();
    let mut r = Rng::new(16);
    let mut build = keys::<K>(5000, |i| 3 * i as u64);
    build.push(K::from_u64(21));
    let n = 12289;
    let mut probe = keys::<K>(n, |_| match r.next_u64() % 15000 {
        21 => 22,
        k => k,
    });
    probe[n - 1] = K::from_u64(21);
    let pairs = check::<K>(&rt, &build, &probe);
    assert!(pairs > n / 5, "{pairs} pairs");
}

fn large_random<K: TestKey>() {
    let (b, p) = (1usize << 22, (1usize << 23) + 7);
    if !within_test_cap(p) {
        return;
    }
    let rt = gpu_runtime();
    let mut r = Rng::new(14);
    let build = keys::<K>(b, |_| r.next_u64());
    // Half the probe keys drawn from the build side, half random.
    let probe: Vec<K> = (0..p)
        .map(|_| {
            if r.chance(50) {
                build[r.below(b)]
            } else {
                K::from_u64(r.next_u64())
            }
        })
        .collect();
    assert!(check::<K>(&rt, &build, &probe) >= p / 3);
}

/// 10^8 probe rows against 2^24 distinct build keys: probe row `j` has build row
/// `j mod 2^25`'s key, which exists when that is below 2^24 (about half the rows
/// match), so every result is known without a CPU join.
fn hundred_million_probe_rows<K: TestKey>() {
    let (b, p) = (1usize << 24, 100_000_000usize);
    if !within_test_cap(p) {
        return;
    }
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    // Distinct `i` below 2^32 give distinct keys (an odd multiplier is a bijection).
    let key = |i: usize| K::from_u64((i as u32).wrapping_mul(0x9E37_79B1) as u64);
    let build: Vec<K> = (0..b).map(key).collect();
    let probe: Vec<K> = (0..p).map(|j| key(j % (2 * b))).collect();
    let bb = rt.upload_on(&s, &build).unwrap();
    let pb = rt.upload_on(&s, &probe).unwrap();
    let table = JoinTable::build(&s, &bb).unwrap();
    let matches = |j: usize| j % (2 * b) < b;
    let kept: Vec<u32> = (0..p).filter(|&j| matches(j)).map(|j| j as u32).collect();
    let pairs = table.inner_join(&s, &pb).unwrap();
    let build_rows = pairs.build_rows.download(&s).unwrap();
    assert_eq!(pairs.probe_rows.download(&s).unwrap(), kept);
    assert!(
        kept.iter()
            .zip(&build_rows)
            .all(|(&j, &r)| r as usize == j as usize % (2 * b)),
        "an inner join pair names the wrong build row"
    );
    drop(pairs);
    assert_eq!(
        table.semi_join(&s, &pb).unwrap().download(&s).unwrap(),
        kept
    );
    let dropped: Vec<u32> = (0..p).filter(|&j| !matches(j)).map(|j| j as u32).collect();
    assert_eq!(
        table.anti_join(&s, &pb).unwrap().download(&s).unwrap(),
        dropped
    );
}

#[test]
fn a_table_is_probed_from_several_streams() {
    let rt = gpu_runtime();
    let (s1, s2, s3) = (
        rt.new_stream().unwrap(),
        rt.new_stream().unwrap(),
        rt.new_stream().unwrap(),
    );
    let mut r = Rng::new(15);
    let build: Vec<u32> = (0..50_000).map(|_| r.next_u32() % 20_000).collect();
    let probes: Vec<Vec<u32>> = (0..2)
        .map(|_| (0..70_000).map(|_| r.next_u32() % 40_000).collect())
        .collect();
    let b = rt.upload_on(&s1, &build).unwrap();
    let table = JoinTable::build(&s1, &b).unwrap();
    let p0 = rt.upload_on(&s2, &probes[0]).unwrap();
    let p1 = rt.upload_on(&s3, &probes[1]).unwrap();
    let j0 = table.inner_join(&s2, &p0).unwrap();
    let j1 = table.semi_join(&s3, &p1).unwrap();
    assert_eq!(j0.len(), cpu_inner(&build, &probes[0]).len());
    assert_eq!(
        j1.download(&s1).unwrap(),
        cpu_select(&build, &probes[1], true)
    );
}

/// The bytes a runtime has outstanding once its streams are reaped.
fn settled(rt: &Runtime) -> usize {
    rt.synchronize().unwrap();
    rt.reap().unwrap();
    rt.bytes_outstanding()
}

fn is_budget(e: Error) -> bool {
    matches!(e, Error::BudgetExceeded { .. })
}

#[test]
fn a_budget_refusal_leaves_nothing_behind() {
    let rt = Runtime::builder(0).budget(64 << 20).build().unwrap();
    let s: Stream = rt.new_stream().unwrap();
    // The table of 2^21 keys needs 16 · (2^23 + 1) bytes: over the budget.
    let big: Vec<u32> = (0..1u32 << 21).collect();
    let big = rt.upload_on(&s, &big).unwrap();
    let before = settled(&rt);
    assert!(is_budget(JoinTable::build(&s, &big).unwrap_err()));
    assert!(is_budget(join::inner_join(&s, &big, &big).unwrap_err()));
    assert_eq!(settled(&rt), before, "a refused build left memory behind");

    // A table that fits, and an inner join whose 4096² pairs (128 MiB) do not.
    let equal: DeviceBuffer<u32> = rt.upload_on(&s, &[5u32; 4096]).unwrap();
    let table = JoinTable::build(&s, &equal).unwrap();
    let before = settled(&rt);
    assert!(is_budget(table.inner_join(&s, &equal).unwrap_err()));
    assert_eq!(settled(&rt), before, "a refused probe left memory behind");
    // The table is intact: a join that fits still runs.
    let one = rt.upload_on(&s, &[5u32, 6]).unwrap();
    assert_eq!(table.inner_join(&s, &one).unwrap().len(), 4096);
    assert_eq!(
        table.anti_join(&s, &one).unwrap().download(&s).unwrap(),
        [1]
    );
}
