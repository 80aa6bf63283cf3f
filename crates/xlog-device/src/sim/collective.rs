//! The collectives of [`crate::collective`] in one exchange each.
//!
//! On the GPU a block reduction is five shuffles, a broadcast and two barriers; run
//! instruction by instruction, every thread of the block would suspend eight times.
//! Here each thread of the warp or block deposits its operand and suspends once; the
//! last to arrive replays the GPU algorithm over all the operands — the same
//! shuffle-down tree, the same scans, the same per-warp then cross-warp combination,
//! calling the operator on the same pairs in the same order — writes every thread's
//! result, and releases the others. The results are the GPU algorithm's, bit for bit
//! (floats included), as long as the operator is uniform and pure, which the
//! collectives' contract already asks.
//!
//! Participation is checked as on the instruction-by-instruction path: a warp
//! collective completes when every lane the block's shape gives the warp has reached
//! it, a block collective when every thread of the block has; a thread that reaches a
//! different collective meanwhile waits for ever. Either way, when no thread of the
//! block can run, the launch stops with [`Fault::Divergence`](super::Fault) naming the
//! collective.
//!
//! Only one-dimensional blocks take this path (the collectives' contract); others
//! run the instruction-by-instruction path, whatever it gives.

use core::cell::Cell;
use std::vec::Vec;

use super::block::{Block, Suspend};
use super::context::{current, ThreadCtx};
use crate::warp::{Shuffle, WARP_SIZE};

/// Who takes part in a collective.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Group {
    /// The lanes of the caller's warp.
    Warp,
    /// Every thread of the block.
    Block,
}

/// A collective some threads of its group have reached.
#[derive(Clone, Copy, Default)]
struct Pending {
    /// The collective, set by the first thread to arrive.
    what: &'static str,
    arrived: u32,
    /// The lowest thread waiting (for the divergence report).
    waiter: u32,
}

/// The exchange slots of one block: every thread's operand and result, and the
/// collective each warp and the block have pending.
pub(super) struct Gathers {
    values: Vec<Cell<u64>>,
    args: Vec<Cell<u32>>,
    results: Vec<Cell<[u64; 2]>>,
    warps: Vec<Cell<Pending>>,
    block: Cell<Pending>,
    /// A thread that reached a collective other than the one its group has pending:
    /// it is never released.
    stuck: Cell<Option<(&'static str, u32)>>,
}

impl Gathers {
    pub(super) fn new(threads: u32) -> Self {
        let warps = threads.div_ceil(WARP_SIZE);
        Gathers {
            values: (0..threads).map(|_| Cell::new(0)).collect(),
            args: (0..threads).map(|_| Cell::new(0)).collect(),
            results: (0..threads).map(|_| Cell::new([0; 2])).collect(),
            warps: (0..warps).map(|_| Cell::new(Pending::default())).collect(),
            block: Cell::new(Pending::default()),
            stuck: Cell::new(None),
        }
    }

    /// A collective that waits with no thread left to complete it, and the lowest
    /// thread waiting there, if any.
    pub(super) fn waiting(&self) -> Option<(&'static str, u32)> {
        let block = self.block.get();
        if block.arrived > 0 {
            return Some((block.what, block.waiter));
        }
        self.warps
            .iter()
            .map(Cell::get)
            .find(|p| p.arrived > 0)
            .map(|p| (p.what, p.waiter))
            .or(self.stuck.get())
    }
}

/// The operands of one completed collective, the group's threads in order.
struct Round<'a> {
    values: &'a [Cell<u64>],
    args: &'a [Cell<u32>],
    results: &'a [Cell<[u64; 2]>],
}

impl Round<'_> {
    fn value(&self, t: usize) -> u64 {
        self.values[t].get()
    }

    fn set(&self, t: usize, a: u64, b: u64) {
        self.results[t].set([a, b]);
    }

    /// The operands of warp `w` of the group.
    fn warp(&self, w: usize) -> &[Cell<u64>] {
        let start = w * WARP_SIZE as usize;
        let end = (start + WARP_SIZE as usize).min(self.values.len());
        &self.values[start..end]
    }

    fn warps(&self) -> usize {
        self.values.len().div_ceil(WARP_SIZE as usize)
    }
}

/// The calling thread's context when its collective can take the one-exchange path:
/// a one-dimensional block (and, in this crate's unit tests, unless a test asked
/// for the instruction-by-instruction path).
#[inline(always)]
fn fast_ctx(what: &'static str) -> Option<&'static ThreadCtx> {
    let ctx = current(what);
    #[cfg(test)]
    if tests::EMULATE.with(Cell::get) {
        return None;
    }
    let d = ctx.block_dim;
    (d.y == 1 && d.z == 1).then_some(ctx)
}

/// Deposits `value` and `arg` for the collective `what` of `group`, waits for the
/// group, and returns this thread's result; the last thread to arrive runs `finish`
/// over the group's operands, which sets every result.
fn gather(
    ctx: &ThreadCtx,
    what: &'static str,
    group: Group,
    value: u64,
    arg: u32,
    finish: impl FnOnce(&Round<'_>),
) -> [u64; 2] {
    let block: &Block<'_> = ctx.block();
    let g = &block.gathers;
    let t = ctx.linear;
    let (first, count, pending) = match group {
        Group::Warp => {
            let w = t / WARP_SIZE;
            let first = w * WARP_SIZE;
            let count = (block.threads - first).min(WARP_SIZE);
            (first, count, &g.warps[w as usize])
        }
        Group::Block => (0, block.threads, &g.block),
    };
    let mut p = pending.get();
    if p.arrived == 0 {
        p = Pending {
            what,
            arrived: 0,
            waiter: t,
        };
    } else if p.what != what || p.arrived == count {
        // Part of the group is at another collective: this thread never completes
        // (on the GPU the block hangs or exchanges garbage). A complete group is
        // one whose operator is running or panicked: only the thread that ran it
        // can arrive, from inside the operator or after catching its panic, while
        // the rest of the group waits for it.
        if g.stuck.get().is_none() {
            g.stuck.set(Some((what, t)));
        }
        loop {
            ctx.suspend(Suspend::Wait);
        }
    }
    g.values[t as usize].set(value);
    g.args[t as usize].set(arg);
    p.arrived += 1;
    if p.arrived < count {
        p.waiter = p.waiter.min(t);
        pending.set(p);
        ctx.suspend(Suspend::Wait);
        return g.results[t as usize].get();
    }
    // The group stays pending, complete, while `finish` runs the user's operator:
    // if that panics and the kernel catches the panic, the threads left waiting are
    // still where `Block::divergence` finds them.
    pending.set(p);
    let range = first as usize..(first + count) as usize;
    finish(&Round {
        values: &g.values[range.clone()],
        args: &g.args[range.clone()],
        results: &g.results[range.clone()],
    });
    pending.set(Pending::default());
    for other in range.filter(|&o| o != t as usize) {
        block.release(other as u32, 0);
    }
    g.results[t as usize].get()
}

#[inline(always)]
fn bits<T: Shuffle>(v: T) -> u64 {
    let (lo, hi) = v.__to_bits();
    lo as u64 | (hi as u64) << 32
}

#[inline(always)]
fn from_bits<T: Shuffle>(b: u64) -> T {
    T::__from_bits(b as u32, (b >> 32) as u32)
}

/// `op` on the bit patterns of two `T`s.
#[inline(always)]
fn on_bits<T: Shuffle>(op: &impl Fn(T, T) -> T) -> impl Fn(u64, u64) -> u64 + '_ {
    move |a, b| bits(op(from_bits(a), from_bits(b)))
}

/// `warp_reduce`'s shuffle-down tree over the lanes `vals`: every lane `l` with
/// `l + d` in the warp combines `op(own, lane l + d)` for `d` = 1, 2, 4, 8, 16; the
/// result is lane 0's.
fn warp_reduce_bits(vals: &[Cell<u64>], op: &impl Fn(u64, u64) -> u64) -> u64 {
    let n = vals.len();
    let mut v = [0u64; WARP_SIZE as usize];
    for (dst, src) in v.iter_mut().zip(vals) {
        *dst = src.get();
    }
    let mut d = 1;
    while d < WARP_SIZE as usize {
        // Ascending, so lane `l + d` still holds the value it had before this step.
        for l in 0..n.saturating_sub(d) {
            v[l] = op(v[l], v[l + d]);
        }
        d <<= 1;
    }
    v[0]
}

/// `warp_inclusive_scan`'s shuffle-up steps over the lanes `vals`: lane `l >= d`
/// combines `op(lane l - d, own)` for `d` = 1, 2, 4, 8, 16.
fn warp_scan_bits(vals: &[Cell<u64>], op: &impl Fn(u64, u64) -> u64) -> [u64; 32] {
    let n = vals.len();
    let mut v = [0u64; WARP_SIZE as usize];
    for (dst, src) in v.iter_mut().zip(vals) {
        *dst = src.get();
    }
    let mut d = 1;
    while d < WARP_SIZE as usize {
        // Descending, so lane `l - d` still holds the value it had before this step.
        for l in (d..n).rev() {
            v[l] = op(v[l - d], v[l]);
        }
        d <<= 1;
    }
    v
}

/// `collective::warp_reduce` in one exchange; `None` where it must run instruction
/// by instruction.
#[inline(always)]
pub(crate) fn warp_reduce<T: Shuffle>(v: T, op: &impl Fn(T, T) -> T) -> Option<T> {
    const WHAT: &str = "collective::warp_reduce";
    let ctx = fast_ctx(WHAT)?;
    let r = gather(ctx, WHAT, Group::Warp, bits(v), 0, |round| {
        let total = warp_reduce_bits(round.values, &on_bits(op));
        for t in 0..round.values.len() {
            round.set(t, total, 0);
        }
    });
    Some(from_bits(r[0]))
}

/// `collective::warp_inclusive_scan` in one exchange.
#[inline(always)]
pub(crate) fn warp_inclusive_scan<T: Shuffle>(v: T, op: &impl Fn(T, T) -> T) -> Option<T> {
    const WHAT: &str = "collective::warp_inclusive_scan";
    let ctx = fast_ctx(WHAT)?;
    let r = gather(ctx, WHAT, Group::Warp, bits(v), 0, |round| {
        let scan = warp_scan_bits(round.values, &on_bits(op));
        for (t, &r) in scan.iter().take(round.values.len()).enumerate() {
            round.set(t, r, 0);
        }
    });
    Some(from_bits(r[0]))
}

/// `collective::warp_exclusive_scan` in one exchange: the inclusive scan, shifted up
/// one lane, each combined with `init`.
#[inline(always)]
pub(crate) fn warp_exclusive_scan<T: Shuffle>(v: T, init: T, op: &impl Fn(T, T) -> T) -> Option<T> {
    const WHAT: &str = "collective::warp_exclusive_scan";
    let ctx = fast_ctx(WHAT)?;
    let r = gather(ctx, WHAT, Group::Warp, bits(v), 0, |round| {
        let op = on_bits(op);
        let scan = warp_scan_bits(round.values, &op);
        round.set(0, bits(init), 0);
        for t in 1..round.values.len() {
            round.set(t, op(bits(init), scan[t - 1]), 0);
        }
    });
    Some(from_bits(r[0]))
}

/// `collective::warp_broadcast` in one exchange (each lane reads the lane it names,
/// as `shfl.sync.idx` does; `src` is below the warp's lanes, checked by the caller).
#[inline(always)]
pub(crate) fn warp_broadcast<T: Shuffle>(v: T, src: u32) -> Option<T> {
    const WHAT: &str = "collective::warp_broadcast";
    let ctx = fast_ctx(WHAT)?;
    let r = gather(ctx, WHAT, Group::Warp, bits(v), src, |round| {
        for t in 0..round.values.len() {
            round.set(t, round.value(round.args[t].get() as usize), 0);
        }
    });
    Some(from_bits(r[0]))
}

/// The ballot of the group's lanes `vals` (each 0 or 1).
fn ballot_bits(vals: &[Cell<u64>]) -> u32 {
    vals.iter()
        .enumerate()
        .fold(0, |b, (l, v)| b | ((v.get() != 0) as u32) << l)
}

/// `(rank, count)` of lane `lane` in a ballot.
fn rank_in(votes: u32, lane: usize) -> (u32, u32) {
    let below = votes & ((1u32 << lane) - 1);
    (below.count_ones(), votes.count_ones())
}

/// `collective::warp_rank` in one exchange.
#[inline(always)]
pub(crate) fn warp_rank(pred: bool) -> Option<(u32, u32)> {
    const WHAT: &str = "collective::warp_rank";
    let ctx = fast_ctx(WHAT)?;
    let r = gather(ctx, WHAT, Group::Warp, pred as u64, 0, |round| {
        let votes = ballot_bits(round.values);
        for t in 0..round.values.len() {
            let (rank, count) = rank_in(votes, t);
            round.set(t, rank as u64, count as u64);
        }
    });
    Some((r[0] as u32, r[1] as u32))
}

/// `collective::block_reduce` in one exchange: each warp's shuffle-down tree, then
/// the warps' results folded left in warp order.
#[inline(always)]
pub(crate) fn block_reduce<T: Shuffle>(v: T, op: &impl Fn(T, T) -> T) -> Option<T> {
    const WHAT: &str = "collective::block_reduce";
    let ctx = fast_ctx(WHAT)?;
    let r = gather(ctx, WHAT, Group::Block, bits(v), 0, |round| {
        let op = on_bits(op);
        let mut total = warp_reduce_bits(round.warp(0), &op);
        for w in 1..round.warps() {
            total = op(total, warp_reduce_bits(round.warp(w), &op));
        }
        for t in 0..round.values.len() {
            round.set(t, total, 0);
        }
    });
    Some(from_bits(r[0]))
}

/// The warps' inclusive scans of a block, and each warp's total (its last lane's).
fn warp_scans(round: &Round<'_>, op: &impl Fn(u64, u64) -> u64) -> (Vec<[u64; 32]>, Vec<u64>) {
    let scans: Vec<[u64; 32]> = (0..round.warps())
        .map(|w| warp_scan_bits(round.warp(w), op))
        .collect();
    let totals = (0..round.warps())
        .map(|w| scans[w][round.warp(w).len() - 1])
        .collect();
    (scans, totals)
}

/// `collective::block_inclusive_scan` in one exchange: each warp's inclusive scan,
/// combined with the left fold of the earlier warps' totals.
#[inline(always)]
pub(crate) fn block_inclusive_scan<T: Shuffle>(v: T, op: &impl Fn(T, T) -> T) -> Option<T> {
    const WHAT: &str = "collective::block_inclusive_scan";
    let ctx = fast_ctx(WHAT)?;
    let r = gather(ctx, WHAT, Group::Block, bits(v), 0, |round| {
        let op = on_bits(op);
        let (scans, totals) = warp_scans(round, &op);
        // `before`: the left fold of the totals of warps `0..w` (none for warp 0).
        let mut before = None;
        for (w, scan) in scans.iter().enumerate() {
            let start = w * WARP_SIZE as usize;
            for (l, &s) in scan.iter().take(round.warp(w).len()).enumerate() {
                let r = before.map_or(s, |b| op(b, s));
                round.set(start + l, r, 0);
            }
            if w + 1 < scans.len() {
                before = Some(before.map_or(totals[w], |b| op(b, totals[w])));
            }
        }
    });
    Some(from_bits(r[0]))
}

/// `collective::block_exclusive_scan` in one exchange: `init` folded with the earlier
/// warps' totals, then with the lane before's inclusive scan; and the left fold of
/// every warp's total.
#[inline(always)]
pub(crate) fn block_exclusive_scan<T: Shuffle>(
    v: T,
    init: T,
    op: &impl Fn(T, T) -> T,
) -> Option<(T, T)> {
    const WHAT: &str = "collective::block_exclusive_scan";
    let ctx = fast_ctx(WHAT)?;
    let r = gather(ctx, WHAT, Group::Block, bits(v), 0, |round| {
        let op = on_bits(op);
        let (scans, totals) = warp_scans(round, &op);
        let mut total = totals[0];
        for &s in &totals[1..] {
            total = op(total, s);
        }
        let mut before = bits(init);
        for (w, scan) in scans.iter().enumerate() {
            let start = w * WARP_SIZE as usize;
            for l in 0..round.warp(w).len() {
                let r = if l == 0 {
                    before
                } else {
                    op(before, scan[l - 1])
                };
                round.set(start + l, r, total);
            }
            if w + 1 < scans.len() {
                before = op(before, totals[w]);
            }
        }
    });
    Some((from_bits(r[0]), from_bits(r[1])))
}

/// `collective::block_broadcast` in one exchange (`src` is below the block's
/// threads, checked by the caller).
#[inline(always)]
pub(crate) fn block_broadcast<T: Shuffle>(v: T, src: usize) -> Option<T> {
    const WHAT: &str = "collective::block_broadcast";
    let ctx = fast_ctx(WHAT)?;
    let r = gather(ctx, WHAT, Group::Block, bits(v), src as u32, |round| {
        for t in 0..round.values.len() {
            round.set(t, round.value(round.args[t].get() as usize), 0);
        }
    });
    Some(from_bits(r[0]))
}

/// `collective::block_rank` in one exchange: each warp's ballot, ranks offset by the
/// earlier warps' counts.
#[inline(always)]
pub(crate) fn block_rank(pred: bool) -> Option<(u32, u32)> {
    const WHAT: &str = "collective::block_rank";
    let ctx = fast_ctx(WHAT)?;
    let r = gather(ctx, WHAT, Group::Block, pred as u64, 0, |round| {
        let votes: Vec<u32> = (0..round.warps())
            .map(|w| ballot_bits(round.warp(w)))
            .collect();
        let total: u32 = votes.iter().map(|v| v.count_ones()).sum();
        let mut before = 0;
        for (w, &v) in votes.iter().enumerate() {
            let start = w * WARP_SIZE as usize;
            for l in 0..round.warp(w).len() {
                let (rank, _) = rank_in(v, l);
                round.set(start + l, (before + rank) as u64, total as u64);
            }
            before += v.count_ones();
        }
    });
    Some((r[0] as u32, r[1] as u32))
}

#[cfg(test)]
pub(super) mod tests {
    use core::cell::Cell;
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use std::vec::Vec;

    use crate::sim::{self, Fault, Launch};
    use crate::thread::{self, Dim3};
    use crate::{barrier, collective};

    std::thread_local! {
        /// Set by a test: collectives on this OS thread run instruction by
        /// instruction (shuffles and barriers), as before this fast path existed.
        pub(crate) static EMULATE: Cell<bool> = const { Cell::new(false) };
    }

    fn launch(block: u32) -> Launch {
        Launch {
            grid: Dim3 { x: 2, y: 1, z: 1 },
            block: Dim3 {
                x: block,
                y: 1,
                z: 1,
            },
            dynamic_shared_bytes: 0,
        }
    }

    /// An f32 whose magnitude and sign vary widely with `i`, so that sums round
    /// differently in every order.
    fn awkward(i: u32) -> f32 {
        let h = i.wrapping_mul(0x9e37_79b9) ^ i >> 3;
        let mantissa = (h % 1000) as f32 / 7.0 + 0.1;
        let scale = [1e-3f32, 1.0, 3e4, 1e7][(h >> 10) as usize % 4];
        if h >> 20 & 1 == 1 {
            -mantissa * scale
        } else {
            mantissa * scale
        }
    }

    /// Every collective's results, as bits, per thread of a two-block launch of
    /// `block` threads; `emulate` picks the instruction-by-instruction path.
    fn results(block: u32, emulate: bool) -> Vec<Vec<u64>> {
        const OUTPUTS: usize = 16;
        let threads = 2 * block as usize;
        let out: Vec<AtomicU64> = (0..threads * OUTPUTS).map(|_| AtomicU64::new(0)).collect();
        let body = || {
            let t = thread::linear_index();
            let v = awkward(t as u32);
            let wide = v as f64 * 1.000_000_1 + 1e-9;
            let add = |a: f32, b: f32| a + b;
            // Neither associative nor commutative: any change of order shows.
            let skew = |a: f32, b: f32| a * 1.5 - b;
            let lane = thread::thread_idx().x % 32;
            let n = (thread::block_dim().x - thread::thread_idx().x / 32 * 32).min(32);
            let pred = v > 0.0;
            let rank = collective::warp_rank(pred);
            let brank = collective::block_rank(pred);
            let (ex, total) = collective::block_exclusive_scan(v, 0.25, skew);
            let r = [
                collective::warp_reduce(v, add).to_bits() as u64,
                collective::warp_reduce(v, skew).to_bits() as u64,
                collective::warp_inclusive_scan(v, add).to_bits() as u64,
                collective::warp_exclusive_scan(v, -2.0, skew).to_bits() as u64,
                collective::warp_broadcast(v, (lane * 7 + 3) % n).to_bits() as u64,
                rank.0 as u64 | (rank.1 as u64) << 32,
                collective::block_reduce(v, add).to_bits() as u64,
                collective::block_reduce(v, skew).to_bits() as u64,
                collective::block_reduce(wide, |a, b| a + b).to_bits(),
                collective::block_inclusive_scan(v, add).to_bits() as u64,
                collective::block_inclusive_scan(v, skew).to_bits() as u64,
                ex.to_bits() as u64 | (total.to_bits() as u64) << 32,
                collective::block_exclusive_scan(wide, 1.0, |a, b| a + b)
                    .0
                    .to_bits(),
                collective::block_broadcast(v, (block as usize - 1) / 2).to_bits() as u64,
                brank.0 as u64 | (brank.1 as u64) << 32,
                barrier::sync_threads_count(pred) as u64,
            ];
            for (k, x) in r.into_iter().enumerate() {
                out[t * OUTPUTS + k].store(x, Relaxed);
            }
        };
        EMULATE.with(|e| e.set(emulate));
        // One worker: the launch runs on this OS thread, which `EMULATE` is read on.
        let run = sim::run(&launch(block), &body, 1);
        EMULATE.with(|e| e.set(false));
        run.unwrap();
        out.chunks(OUTPUTS)
            .map(|c| c.iter().map(|a| a.load(Relaxed)).collect())
            .collect()
    }

    #[test]
    fn one_exchange_collectives_give_the_bits_of_the_shuffle_path() {
        for block in [
            1, 2, 5, 31, 32, 33, 63, 64, 96, 100, 255, 256, 257, 777, 1000, 1024,
        ] {
            let fast = results(block, false);
            let emulated = results(block, true);
            for (t, (f, e)) in fast.iter().zip(&emulated).enumerate() {
                assert_eq!(f, e, "block of {block} threads, thread {t}");
            }
        }
    }

    fn divergence(r: Result<(), Fault>) -> (&'static str, Dim3) {
        match r {
            Err(Fault::Divergence { what, thread, .. }) => (what, thread),
            other => panic!("expected a divergence, got {other:?}"),
        }
    }

    #[test]
    fn a_collective_part_of_its_group_skips_or_mismatches_is_a_divergence() {
        let skip = |t: u32| {
            let r = sim::run(
                &launch(100),
                &|| {
                    if thread::thread_idx().x != t {
                        collective::block_reduce(1.5f32, |a, b| a + b);
                    }
                },
                1,
            );
            divergence(r)
        };
        assert_eq!(skip(99).0, "collective::block_reduce");
        assert_eq!(
            skip(0),
            ("collective::block_reduce", Dim3 { x: 1, y: 0, z: 0 })
        );
        // The partial last warp (lanes 96..100) without its last lane.
        let r = sim::run(
            &launch(100),
            &|| {
                if thread::thread_idx().x != 99 {
                    collective::warp_inclusive_scan(1u32, u32::wrapping_add);
                }
            },
            1,
        );
        assert_eq!(
            divergence(r),
            (
                "collective::warp_inclusive_scan",
                Dim3 { x: 96, y: 0, z: 0 }
            )
        );
        // Two different collectives at the same point: neither completes.
        let r = sim::run(
            &launch(64),
            &|| {
                if thread::thread_idx().x == 5 {
                    collective::block_broadcast(1u64, 0);
                } else {
                    collective::block_reduce(1u64, u64::wrapping_add);
                }
            },
            1,
        );
        assert_eq!(divergence(r).0, "collective::block_reduce");
    }
}
