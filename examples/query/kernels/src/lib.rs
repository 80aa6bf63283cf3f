//! Kernels of the query example: the filter and the grouped sum. The join between
//! them is the library's (`xlog_kernels::join`).

use xlog::prelude::*;

xlog::kernel_module!();

/// The filter `WHERE amount >= min`: the ids of the rows that pass, compacted into
/// `rows[0..count[0]]` (`count` must start at 0). Within a block the rows keep
/// their order; blocks reserve their ranges with one atomic add each, in the order
/// they run, so the ids are not sorted. One row per thread.
#[xlog_kernel(read(amount), atomic(rows, count))]
pub fn select_at_least(amount: &[u32], min: u32, rows: &mut [u32], count: &mut [u32]) {
    let i = thread::index_1d();
    let keep = i < amount.len() && amount[i] >= min;
    let (rank, total) = collective::block_rank(keep);
    let mut base = 0;
    if thread::block_leader().is_some() && total > 0 {
        base = count.fetch_add(0, total);
    }
    let base = collective::block_broadcast(base, 0);
    if keep {
        rows.store((base + rank) as usize, i.get() as u32);
    }
}

/// `GROUP BY group SUM(amount)` over joined pairs: for each pair `k`,
/// `sums[group[build_rows[k]]] += amount[probe_rows[k]]` (atomic adds). A
/// grid-stride loop over the pairs.
#[xlog_kernel(read(build_rows, probe_rows, group, amount), atomic(sums))]
pub fn sum_by_group(
    build_rows: &[u32],
    probe_rows: &[u32],
    group: &[u32],
    amount: &[u32],
    sums: &mut [u64],
) {
    for k in thread::grid_stride(build_rows.len()) {
        let g = group[build_rows[k] as usize] as usize;
        let a = amount[probe_rows[k.get()] as usize];
        sums.fetch_add(g, a as u64);
    }
}
