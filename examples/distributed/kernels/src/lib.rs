//! Kernels of the distributed example: which rank a key goes to, the flags that
//! order rows by it, where each rank's rows start, and the grouped sum over a
//! local join's pairs.

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

/// Where each rank's rows start in `keys`, ordered by destination rank:
/// `starts[r]` is the first row whose key goes to rank `r` or a later one, for
/// every `r` in `0..=ranks` (so `starts[ranks] = keys.len()`). Thread `i` (one
/// per row and one past the end) stores `i` for the ranks between the previous
/// row's and its own: every entry is stored exactly once.
#[xlog_kernel(read(keys), atomic(starts))]
pub fn rank_starts(keys: &[u32], ranks: u32, starts: &mut [u32]) {
    let i = thread::index_1d().get();
    let n = keys.len();
    if i > n {
        return;
    }
    let mut r = if i == 0 {
        0
    } else {
        rank_of(keys[i - 1], ranks) + 1
    };
    let here = if i == n {
        ranks
    } else {
        rank_of(keys[i], ranks)
    };
    while r <= here {
        if (r as usize) < starts.len() {
            starts.store(r as usize, i as u32);
        }
        r += 1;
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
