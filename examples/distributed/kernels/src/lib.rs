//! Kernels of the distributed example: which rank a key goes to, the flags that
//! order rows by it, and the grouped sum over a local join's pairs.

use xlog::prelude::*;

xlog::kernel_module!();

/// The rank a key is sent to: a multiplicative hash of the key, modulo `ranks`.
#[inline(always)]
pub fn rank_of(key: u32, ranks: u32) -> u32 {
    let mut x = key.wrapping_mul(0x9E37_79B1);
    x ^= x >> 16;
    x % ranks
}

/// `parts[i] = rank_of(keys[i], ranks)`. One key per thread.
#[xlog_kernel(read(keys), write(parts))]
pub fn partition(keys: &[u32], ranks: u32, parts: &mut [u32]) {
    let i = thread::index_1d();
    if i < parts.len() && i < keys.len() {
        parts[i] = rank_of(keys[i.get()], ranks);
    }
}

/// `flags[i] = 1` when bit `bit` of `rank_of(keys[i], ranks)` is clear, else 0:
/// one pass of a stable partition by rank, least significant bit first (rows
/// with the flag set go first). One key per thread.
#[xlog_kernel(read(keys), write(flags))]
pub fn rank_bit_clear(keys: &[u32], ranks: u32, bit: u32, flags: &mut [u8]) {
    let i = thread::index_1d();
    if i < flags.len() && i < keys.len() {
        flags[i] = ((rank_of(keys[i.get()], ranks) >> bit) & 1 == 0) as u8;
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
