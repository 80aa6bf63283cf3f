//! Kernels of the distributed example: which rank a key goes to, a stable
//! ordering of rows by it (a counting pass and one scatter of keys and values
//! together), and the grouped sum over a local join's pairs.

use xlog::device::shared::DynamicShared;
use xlog::prelude::*;

xlog::kernel_module!();

/// The rank a key is sent to: a multiplicative hash of the key, modulo `ranks`.
#[inline(always)]
pub fn rank_of(key: u32, ranks: u32) -> u32 {
    let mut x = key.wrapping_mul(0x9E37_79B1);
    x ^= x >> 16;
    x % ranks
}

/// Rows each warp of [`rank_warp_counts`] and [`rank_scatter`] takes: 32 lanes
/// × [`ITEMS`] rows, lane `l` taking rows `l, l + 32, …` of the warp's block so
/// that every load and store of a round is one coalesced access.
pub const WARP_ROWS: usize = 32 * ITEMS;
/// Rows per lane in [`rank_warp_counts`] and [`rank_scatter`].
pub const ITEMS: usize = 8;
/// The most ranks [`rank_warp_counts`] and [`rank_scatter`] order rows for: each
/// lane keeps one counter a rank in registers.
pub const MAX_RANKS: usize = 8;

/// The warps [`rank_warp_counts`] and [`rank_scatter`] need for `rows` rows.
pub const fn warps_for(rows: usize) -> usize {
    rows.div_ceil(WARP_ROWS)
}

/// How many rows of each warp's block of `keys` go to each rank:
/// `counts[r * warps + w]` for rank `r` and warp `w` (rank-major, so that the
/// exclusive sum of `counts` is where [`rank_scatter`] writes each warp's rows of
/// each rank), with `warps = counts.len() / ranks` ([`warps_for`]`(keys.len())`).
/// Launch at least `warps` warps in blocks of 256 threads; `ranks` at most
/// [`MAX_RANKS`].
#[xlog_kernel(read(keys), atomic(counts), block = 256)]
pub fn rank_warp_counts(keys: &[u32], ranks: u32, counts: &mut [u32]) {
    let lane = thread::lane_id() as usize;
    let warp = thread::index_1d().get() / 32;
    let warps = counts.len() / ranks.max(1) as usize;
    let first = warp * WARP_ROWS + lane;
    let to = destinations(&lane_rows(keys, first), ranks, first, keys.len());
    for r in 0..ranks.min(MAX_RANKS as u32) {
        let mine = to.iter().filter(|&&t| t == r).count() as u32;
        let total = collective::warp_reduce(mine, |a, b| a + b);
        if lane == 0 && warp < warps {
            counts.store(r as usize * warps + warp, total);
        }
    }
}

/// Rows `first, first + 32, …` of `column` ([`ITEMS`] of them), 0 past the end.
#[inline(always)]
fn lane_rows(column: &[u32], first: usize) -> [u32; ITEMS] {
    let mut rows = [0; ITEMS];
    for (j, row) in rows.iter_mut().enumerate() {
        let i = first + j * 32;
        if i < column.len() {
            *row = column[i];
        }
    }
    rows
}

/// The destination rank of each of `keys` ([`lane_rows`] from row `first` of a
/// column of `len` rows), `u32::MAX` past the end.
#[inline(always)]
fn destinations(keys: &[u32; ITEMS], ranks: u32, first: usize, len: usize) -> [u32; ITEMS] {
    let mut to = [u32::MAX; ITEMS];
    for (j, t) in to.iter_mut().enumerate() {
        if first + j * 32 < len {
            *t = rank_of(keys[j], ranks);
        }
    }
    to
}

/// `starts[r] = offsets[r * warps]`: where rank `r`'s rows start once ordered,
/// from the exclusive sum of [`rank_warp_counts`]' counts. One thread a rank.
#[xlog_kernel(read(offsets), write(starts))]
pub fn rank_starts(offsets: &[u32], warps: u32, starts: &mut [u32]) {
    let r = thread::index_1d();
    if r < starts.len() {
        starts[r] = offsets[r.get() * warps as usize];
    }
}

/// One stable pass ordering rows by destination rank: row `i` of `keys` and
/// `values` goes to `out_*[offsets[r * warps + w] + k]`, where `r` is the rank its
/// key goes to, `w` its warp's block ([`WARP_ROWS`] rows) and `k` the number of
/// rows before it in that block going to `r`. `offsets` is the exclusive sum of
/// [`rank_warp_counts`]' counts over the same `keys` and `ranks`, `warps =
/// offsets.len() / ranks`. Each lane loads its rows' destinations and values
/// first, then, rank by rank, ranks its rows in order with one warp ballot a
/// round: no shared memory, no barrier.
#[xlog_kernel(read(keys, values, offsets), atomic(out_keys, out_values), block = 256)]
pub fn rank_scatter(
    keys: &[u32],
    values: &[u32],
    ranks: u32,
    offsets: &[u32],
    out_keys: &mut [u32],
    out_values: &mut [u32],
) {
    let lane = thread::lane_id() as usize;
    let warp = thread::index_1d().get() / 32;
    let warps = offsets.len() / ranks.max(1) as usize;
    if warp >= warps || values.len() != keys.len() {
        return;
    }
    let first = warp * WARP_ROWS + lane;
    let (k, v) = (lane_rows(keys, first), lane_rows(values, first));
    let to = destinations(&k, ranks, first, keys.len());
    // Rank by rank, the rows in order: one ballot a round.
    for r in 0..ranks.min(MAX_RANKS as u32) {
        let mut at = offsets[r as usize * warps + warp];
        for j in 0..ITEMS {
            let (below, count) = collective::warp_rank(to[j] == r);
            if to[j] == r {
                let o = (at + below) as usize;
                out_keys.store(o, k[j]);
                out_values.store(o, v[j]);
            }
            at += count;
        }
    }
}

/// `GROUP BY group SUM(amount)` over joined pairs: for each pair `k`,
/// `sums[group[build_rows[k]]] += amount[probe_rows[k]]`. Each block adds its
/// pairs into a private copy of the sums in its dynamic shared memory (two
/// 32-bit words a group, low then high, [`SUM_SHARED_BYTES`] for every group of
/// `sums`), then adds its copy into `sums` with one atomic add a group. A grid-stride
/// loop over the pairs; a group past the shared copy is added in `sums` directly.
#[xlog_kernel(read(build_rows, probe_rows, group, amount), atomic(sums), block = 256)]
pub fn sum_by_group(
    build_rows: &[u32],
    probe_rows: &[u32],
    group: &[u32],
    amount: &[u32],
    sums: &mut [u64],
) {
    let words = DynamicShared::<u32>::get().words();
    let kept = core::cmp::min(sums.len(), words.len() / 2);
    for w in thread::block_stride(2 * kept) {
        words.store(w.get(), 0);
    }
    barrier::sync_threads();
    for k in thread::grid_stride(build_rows.len()) {
        let g = group[build_rows[k] as usize] as usize;
        let a = amount[probe_rows[k.get()] as usize];
        if g < kept {
            // The low add's old word says whether this add wrapped it: the carry
            // goes to the high word, so the pair is the exact 64-bit sum.
            let old = words.fetch_add(2 * g, a);
            if old.checked_add(a).is_none() {
                words.fetch_add(2 * g + 1, 1);
            }
        } else {
            sums.fetch_add(g, a as u64);
        }
    }
    barrier::sync_threads();
    for g in thread::block_stride(kept) {
        let g = g.get();
        let v = words.load(2 * g) as u64 | (words.load(2 * g + 1) as u64) << 32;
        if v != 0 {
            sums.fetch_add(g, v);
        }
    }
}

/// The dynamic shared memory [`sum_by_group`] needs to keep `groups` sums per
/// block.
pub const fn sum_shared_bytes(groups: usize) -> u32 {
    (groups * 8) as u32
}

/// [`sum_shared_bytes`] of the example's 256 groups.
pub const SUM_SHARED_BYTES: u32 = sum_shared_bytes(256);
