//! Kernels of the Datalog example: the join step of each program, expanded over
//! an edge index.
//!
//! A relation of pairs `(x, y)` of dense node ids is one column of `u64` keys,
//! `x << shift | y` (`shift` bits hold any node id), so sorting the keys sorts the
//! pairs. The edges are an index in compressed-row form: node `v`'s successors are
//! `targets[offsets[v]..offsets[v + 1]]`. A join step runs in three launches:
//! count each delta tuple's matches ([`count`]), an inclusive scan of the counts
//! (the library's), and the expansion ([`expand`]), one thread per output tuple,
//! which finds its delta tuple by a binary search in the scan: [`owners`] first
//! finds the delta tuple of every [`TILE`]-th output, so each thread searches only
//! the few scan entries of its own tile. The expansion can run in pieces (a range
//! of output positions at a time), so the derived tuples of one step need not fit
//! in memory at once.

use xlog::prelude::*;

xlog::kernel_module!();

/// The first position of sorted `ends` holding a value greater than `k`: the
/// delta tuple whose matches include output `k`.
#[inline(always)]
fn owner(ends: &[u64], k: u64) -> usize {
    let (mut lo, mut hi) = (0, ends.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if ends[mid] <= k {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Output positions a tile: [`owners`] finds the owner of each tile's first.
pub const TILE: usize = 256;

/// `bounds[g]`: the delta tuple that owns output `first + g · TILE` (`ends`: the
/// inclusive scan of the counts), or `ends.len()` past the last output.
#[xlog_kernel(read(ends), write(bounds))]
pub fn owners(ends: &[u64], first: u64, bounds: &mut [u64]) {
    for g in thread::grid_stride(bounds.len()) {
        bounds[g] = owner(ends, first + (g.get() * TILE) as u64) as u64;
    }
}

/// The delta tuple that owns output `first + k`, and the matches before it.
#[inline(always)]
fn locate(ends: &[u64], bounds: &[u64], first: u64, k: usize) -> (usize, u64) {
    let g = k / TILE;
    let lo = bounds[g] as usize;
    let hi = (bounds[g + 1] as usize + 1).min(ends.len());
    let i = lo + owner(&ends[lo..hi], first + k as u64);
    (i, if i == 0 { 0 } else { ends[i - 1] })
}

/// The successors of `v`: where they start in `targets`, and how many.
#[inline(always)]
fn successors(offsets: &[u32], v: usize) -> (usize, u64) {
    let start = offsets[v];
    (start as usize, (offsets[v + 1] - start) as u64)
}

/// [`count`] and [`expand`] for transitive closure, `path(x, z) :- path(x, y),
/// edge(y, z)`: delta tuple `(x, y)` matches `y`'s successors `z`, giving `(x, z)`.
pub const TRANSITIVE_CLOSURE: u32 = 0;

/// [`count`] and [`expand`] for same generation, `sg(x, y) :- edge(a, x), sg(a,
/// b), edge(b, y)`: delta tuple `(a, b)` matches each pair of a successor `x` of
/// `a` and a successor `y` of `b` (those of `b` varying fastest), giving `(x, y)`.
pub const SAME_GENERATION: u32 = 1;

/// `counts[i]`: the number of matches of delta tuple `i` under `program`
/// ([`TRANSITIVE_CLOSURE`] or [`SAME_GENERATION`]).
#[xlog_kernel(read(delta, offsets), write(counts))]
pub fn count(delta: &[u64], offsets: &[u32], shift: u32, program: u32, counts: &mut [u64]) {
    let mask = (1u64 << shift) - 1;
    for i in thread::grid_stride(counts.len()) {
        let t = delta[i.get()];
        let right = successors(offsets, (t & mask) as usize).1;
        counts[i] = if program == SAME_GENERATION {
            successors(offsets, (t >> shift) as usize).1 * right
        } else {
            right
        };
    }
}

/// `out[k]`: output `first + k` under `program`, the derived pair of the delta
/// tuple that owns it (`ends`: the inclusive scan of [`count`]; `bounds`:
/// [`owners`] from `first`) and the match it stands for.
#[xlog_kernel(read(delta, ends, bounds, offsets, targets), write(out))]
#[allow(clippy::too_many_arguments)]
pub fn expand(
    delta: &[u64],
    ends: &[u64],
    bounds: &[u64],
    offsets: &[u32],
    targets: &[u32],
    shift: u32,
    program: u32,
    first: u64,
    out: &mut [u64],
) {
    let mask = (1u64 << shift) - 1;
    for k in thread::grid_stride(out.len()) {
        let (i, before) = locate(ends, bounds, first, k.get());
        let local = first + k.get() as u64 - before;
        let t = delta[i];
        let (from_right, degree_right) = successors(offsets, (t & mask) as usize);
        out[k] = if program == SAME_GENERATION {
            let (from_left, _) = successors(offsets, (t >> shift) as usize);
            // Both factors are below 2^32 (degrees), so 32-bit division
            // suffices when the product does.
            let (row, col) = if local < 1 << 32 {
                let (l, d) = (local as u32, degree_right as u32);
                ((l / d) as usize, (l % d) as usize)
            } else {
                (
                    (local / degree_right) as usize,
                    (local % degree_right) as usize,
                )
            };
            (targets[from_left + row] as u64) << shift | targets[from_right + col] as u64
        } else {
            (t & !mask) | targets[from_right + local as usize] as u64
        };
    }
}

/// `flags[i] = 1` where pair `x[i] = (a, b)` has `a != b`: same generation's
/// `x != y` in its first rule.
#[xlog_kernel(read(x), write(flags))]
pub fn off_diagonal(x: &[u64], shift: u32, flags: &mut [u8]) {
    let mask = (1u64 << shift) - 1;
    for i in thread::grid_stride(flags.len()) {
        let t = x[i.get()];
        flags[i] = ((t >> shift) != (t & mask)) as u8;
    }
}
