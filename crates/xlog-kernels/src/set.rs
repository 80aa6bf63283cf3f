//! Set operations on sorted runs: merge two runs into one, and the distinct
//! elements of one run that are (or are not) in another.
//!
//! - [`merge`]: the sorted union of two sorted runs, every element kept (`a`'s
//!   before `b`'s where they are equal), a new buffer of `a.len() + b.len()`.
//! - [`difference`]: the distinct elements of sorted `a` that do not occur in sorted
//!   `b`, in order (`a ∖ b`, deduplicated on the way).
//! - [`intersection`]: the distinct elements of sorted `a` that occur in sorted `b`.
//!
//! Element types `u32`, `i32`, `u64`, `i64`: integers, whose order is total; each
//! kernel is generic over them (one entry point per type, `merge_runs__u64`). The
//! inputs must be sorted ascending (`xlog_kernels::sort`); an unsorted input gives
//! a result of unspecified order and content, or a device panic (a search window
//! out of order, reported as `KernelPanic`), never an out-of-range access.
//!
//! # Algorithm and cost
//!
//! [`merge`] takes three launches, each a grid-stride loop. The first gives each
//! element of `b` its place in the output, `j + |{a ≤ b[j]}|`, by a binary search
//! in `a`. The second cuts the output into tiles of 256 positions and finds, by a
//! binary search among the places, how many of `b`'s elements land before each
//! tile. The third has one thread per output position `k`: a search among the few
//! places inside its tile says whether `k` holds an element of `b` or which element
//! of `a` it holds. So a position costs a read of its tile's bounds and of its
//! source, and a write: about the cost of copying both inputs, plus `O(log |a|)`
//! for each element of `b`. Temporary memory: one `u64` for each element of `b`
//! and for each tile of the output.
//!
//! [`difference`] and [`intersection`] cut `a` into tiles of 256 elements and find
//! where each tile's first element lies in `b` (a binary search a tile). Each
//! element of `a` that starts a run of equal elements is then looked up in the
//! window of `b` between its tile's place and the next tile's: a short search in
//! memory its whole block reads, instead of a search through all of `b`. The
//! flagged elements are compacted (`compact::select_flagged`, which reads the count
//! back, so they synchronise the stream). Temporary memory: one byte for each
//! element of `a`, one `u64` for each tile.
//!
//! ```no_run
//! # fn main() -> xlog::Result<()> {
//! let rt = xlog::Runtime::get(0)?;
//! let s = rt.stream()?;
//! let a = rt.upload_on(&s, &[1u64, 3, 5, 7])?;
//! let b = rt.upload_on(&s, &[2u64, 3, 8])?;
//! assert_eq!(xlog_kernels::set::merge(&s, &a, &b)?.download(&s)?, [1, 2, 3, 3, 5, 7, 8]);
//! assert_eq!(xlog_kernels::set::difference(&s, &a, &b)?.download(&s)?, [1, 5, 7]);
//! assert_eq!(xlog_kernels::set::intersection(&s, &a, &b)?.download(&s)?, [3]);
//! # Ok(()) }
//! ```

use xlog::prelude::*;

/// The number of elements of sorted `x` that are `< v` (`lt = true`) or `≤ v`
/// (`lt = false`): where `v` would go before (after) its equals.
#[inline(always)]
fn bound<T: PartialOrd + Copy>(x: &[T], v: T, lt: bool) -> usize {
    let (mut lo, mut hi) = (0, x.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let m = x[mid];
        let left = if lt { m < v } else { m <= v };
        if left {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Positions of a tile: a merge's third kernel finds each output position's
/// source among the few of `b`'s places that fall in its tile, and the flags of
/// a difference look each element of `a` up in the window of `b` its tile spans.
const TILE: usize = 256;

/// Whether sorted `x` holds `v`.
#[inline(always)]
fn holds<T: PartialOrd + Copy>(x: &[T], v: T) -> bool {
    let at = bound(x, v, true);
    at < x.len() && x[at] == v
}

/// `place[j] = j + |{a ≤ b[j]}|` for sorted runs: where `b[j]` lands in the merge.
/// The first kernel of [`merge`].
#[xlog_kernel(read(a, b), write(place), for T in [u32, i32, u64, i64])]
pub fn merge_places<T: PartialOrd>(a: &[T], b: &[T], place: &mut [u64]) {
    for j in thread::grid_stride(place.len()) {
        let at = bound(a, b[j.get()], false);
        place[j] = (j.get() + at) as u64;
    }
}

/// `bounds[g] = |{place < g · TILE}|` for the places of a merge: which of `b`'s
/// elements land before each tile of the output. The second kernel of [`merge`],
/// the same for every element type.
#[xlog_kernel(read(place), write(bounds))]
pub fn merge_bounds(place: &[u64], bounds: &mut [u64]) {
    for g in thread::grid_stride(bounds.len()) {
        bounds[g] = bound(place, (g.get() * TILE) as u64, true) as u64;
    }
}

/// `out[k]`: the `k`-th element of the merge of sorted runs `a` and `b`, given
/// `b`'s places and the tiles' bounds. The third kernel of [`merge`].
#[xlog_kernel(read(a, b, place, bounds), write(out), for T in [u32, i32, u64, i64])]
pub fn merge_runs<T>(a: &[T], b: &[T], place: &[u64], bounds: &[u64], out: &mut [T]) {
    for k in thread::grid_stride(out.len()) {
        let at = k.get() as u64;
        let g = k.get() / TILE;
        let (lo, hi) = (bounds[g] as usize, bounds[g + 1] as usize);
        // The number of `b`'s elements at or before position `k`: those before
        // this tile, and those of the tile's window up to `k`.
        let r = lo + bound(&place[lo..hi], at, false);
        out[k] = if r > 0 && place[r - 1] == at {
            b[r - 1]
        } else {
            a[k.get() - r]
        };
    }
}

/// `bounds[g] = |{b < a[g · TILE]}|` (`|b|` past the end of `a`) for sorted runs:
/// where each tile of `a` starts in `b`. The first kernel of [`difference`] and
/// [`intersection`].
#[xlog_kernel(read(a, b), write(bounds), for T in [u32, i32, u64, i64])]
pub fn set_windows<T: PartialOrd>(a: &[T], b: &[T], bounds: &mut [u64]) {
    for g in thread::grid_stride(bounds.len()) {
        let at = g.get() * TILE;
        bounds[g] = if at < a.len() {
            bound(b, a[at], true)
        } else {
            b.len()
        } as u64;
    }
}

/// `flags[i] = 1` where `a[i]` starts a run of equals in sorted run `a` and its
/// presence in sorted `b` is `present != 0`, searched for in its tile's window of
/// `b`. The second kernel of [`difference`] and [`intersection`].
#[xlog_kernel(read(a, b, bounds), write(flags), for T in [u32, i32, u64, i64])]
pub fn set_flags<T: PartialOrd>(a: &[T], b: &[T], bounds: &[u64], present: u32, flags: &mut [u8]) {
    for i in thread::grid_stride(flags.len()) {
        let v = a[i.get()];
        let first = i.get() == 0 || a[i.get() - 1] != v;
        // `v` lies between its tile's first element and the next tile's, so its
        // place in `b` lies between theirs.
        let g = i.get() / TILE;
        let lo = bounds[g] as usize;
        let hi = (bounds[g + 1] as usize + 1).min(b.len());
        flags[i] = (first && holds(&b[lo..hi], v) == (present != 0)) as u8;
    }
}

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use xlog::{
        AllocTag, DeviceBuffer, Error, GraphArena, GraphRecorder, ReadBuffer, Result, Stream,
    };

    use crate::compact::{
        select_on, Calls as CompactCalls, Compactable, Counts, RecordedSelection,
    };
    use crate::exec::{Now, Record};

    mod sealed {
        pub trait Ordered {}
    }

    /// Element types of the set operations: `u32`, `i32`, `u64`, `i64`, integers,
    /// whose order is total; the types the set kernels are compiled for. Sealed:
    /// [`merge`] returns an output it allocated uninitialised, which only its own
    /// kernels are trusted to write in full.
    pub trait Ordered:
        Compactable
        + sealed::Ordered
        + super::MergePlacesType
        + super::MergeRunsType
        + super::SetWindowsType
        + super::SetFlagsType
    {
    }

    impl sealed::Ordered for u32 {}
    impl Ordered for u32 {}
    impl sealed::Ordered for i32 {}
    impl Ordered for i32 {}
    impl sealed::Ordered for u64 {}
    impl Ordered for u64 {}
    impl sealed::Ordered for i64 {}
    impl Ordered for i64 {}

    use crate::per_element as config;

    /// The sorted union of sorted runs `a` and `b`, every element kept, `a`'s
    /// before `b`'s where equal: a new buffer of `a.len() + b.len()` elements.
    /// Three launches: about one read of each input and one write of the output,
    /// plus a binary search in `a` for each element of `b` and in the places for
    /// each tile of 256 outputs ([module docs](super)).
    /// Does not synchronise.
    ///
    /// # Errors
    ///
    /// `InvalidArgument` when the output would not fit in memory's address range;
    /// a budget refusal (`BudgetExceeded`, nothing launched); a launch error.
    pub fn merge<T: Ordered>(
        s: &Stream,
        a: &(impl ReadBuffer<T> + ?Sized),
        b: &(impl ReadBuffer<T> + ?Sized),
    ) -> Result<DeviceBuffer<T>> {
        let mut e = Now(s);
        let (a, b) = (e.input(a), e.input(b));
        merge_on(&mut e, a, b)
    }

    /// [`merge`] recorded into a graph (its output's size is known on the host):
    /// the same three kernel nodes; the output and temporaries are allocated now
    /// on the recorder's stream and kept in `arena`, which outlives the graph.
    ///
    /// # Errors
    ///
    /// As [`merge`], and those of recording.
    pub fn record_merge<'g, T: Ordered>(
        rec: &mut GraphRecorder<'g>,
        arena: &'g GraphArena,
        a: &'g impl ReadBuffer<T>,
        b: &'g impl ReadBuffer<T>,
    ) -> Result<&'g DeviceBuffer<T>> {
        let mut e = Record::new(rec, arena);
        let (a, b) = (e.input(a), e.input(b));
        merge_on(&mut e, a, b)
    }

    kernel_calls! {
        /// The set kernels.
        trait Calls<T: Ordered> {
            fn places = super::merge_places(a: r T, b: r T, place: w u64);
            fn bounds = super::merge_bounds(place: r u64, bounds: w u64);
            fn runs = super::merge_runs(a: r T, b: r T, place: r u64, bounds: r u64, out: w T);
            fn windows = super::set_windows(a: r T, b: r T, bounds: w u64);
            fn flags = super::set_flags(a: r T, b: r T, bounds: r u64, present: v u32, flags: w u8);
        }
    }

    /// [`merge`] through `e`.
    fn merge_on<E: Calls<T>, T: Ordered>(
        e: &mut E,
        a: E::In<'_, T>,
        b: E::In<'_, T>,
    ) -> Result<E::Buf<T>> {
        let (na, nb) = (E::len(&a), E::len(&b));
        let n = na.checked_add(nb).ok_or_else(|| Error::InvalidArgument {
            what: "xlog_kernels::set::merge".to_owned(),
            reason: format!("{na} + {nb} elements overflow a length"),
        })?;
        // SAFETY: the place kernel writes `place[j]` for every `j` (one grid-stride
        // pass over its length) before the bounds and merge kernels, its only
        // readers, run.
        let mut place = unsafe { e.alloc_uninit::<u64>(nb, AllocTag("merge places")) }?;
        // SAFETY: the merge kernel writes every position of `out` (one grid-stride
        // pass over its length) before anything reads it.
        let mut out = unsafe { e.alloc_uninit::<T>(n, AllocTag("merge output")) }?;
        if n == 0 {
            return Ok(out);
        }
        let tiles = n.div_ceil(super::TILE) + 1;
        // SAFETY: the bounds kernel writes every bound (one grid-stride pass over
        // their length) before the merge kernel, their only reader, runs.
        let mut bounds = unsafe { e.alloc_uninit::<u64>(tiles, AllocTag("merge bounds")) }?;
        if nb > 0 {
            e.places(config(nb), a, b, &mut place)?;
        }
        e.bounds(config(tiles), E::view(&place), &mut bounds)?;
        e.runs(config(n), a, b, E::view(&place), E::view(&bounds), &mut out)?;
        Ok(out)
    }

    /// The distinct elements of sorted `a` that do (`present`) or do not occur in
    /// sorted `b`, in order, through `e`, with their number on the device.
    fn filter_on<E: Calls<T> + CompactCalls<T> + Counts, T: Ordered>(
        e: &mut E,
        a: E::In<'_, T>,
        b: E::In<'_, T>,
        present: bool,
    ) -> Result<(E::Buf<T>, E::Buf<u64>)> {
        let n = E::len(&a);
        if n == 0 {
            return Ok((e.zeroed::<T>(0)?, e.zeroed::<u64>(1)?));
        }
        let tiles = n.div_ceil(super::TILE) + 1;
        // SAFETY: the window kernel writes every bound (one grid-stride pass over
        // their length) before the flag kernel, their only reader, runs.
        let mut bounds = unsafe { e.alloc_uninit::<u64>(tiles, AllocTag("set windows")) }?;
        // SAFETY: the flag kernel writes every flag (one grid-stride pass over
        // their length) before the selection, their only reader, runs.
        let mut flags = unsafe { e.alloc_uninit::<u8>(n, AllocTag("set flags")) }?;
        e.windows(config(tiles), a, b, &mut bounds)?;
        e.flags(
            config(n),
            a,
            b,
            E::view(&bounds),
            present as u32,
            &mut flags,
        )?;
        select_on(e, a, E::view(&flags))
    }

    /// `a ∖ b`: the distinct elements of sorted `a` that do not occur in sorted
    /// `b`, in order, as a new buffer of exactly their number. Two launches and a
    /// compaction; reads the count back, so it synchronises `s`
    /// ([module docs](super)).
    ///
    /// # Errors
    ///
    /// A budget refusal (`BudgetExceeded`; nothing launched when the flags are
    /// refused) or a launch error.
    pub fn difference<T: Ordered>(
        s: &Stream,
        a: &(impl ReadBuffer<T> + ?Sized),
        b: &(impl ReadBuffer<T> + ?Sized),
    ) -> Result<DeviceBuffer<T>> {
        let mut e = Now(s);
        let (a, b) = (e.input(a), e.input(b));
        Ok(filter_on(&mut e, a, b, false)?.0)
    }

    /// `a ∩ b`: the distinct elements of sorted `a` that occur in sorted `b`, in
    /// order. As [`difference`] otherwise.
    ///
    /// # Errors
    ///
    /// As [`difference`].
    pub fn intersection<T: Ordered>(
        s: &Stream,
        a: &(impl ReadBuffer<T> + ?Sized),
        b: &(impl ReadBuffer<T> + ?Sized),
    ) -> Result<DeviceBuffer<T>> {
        let mut e = Now(s);
        let (a, b) = (e.input(a), e.input(b));
        Ok(filter_on(&mut e, a, b, true)?.0)
    }

    /// [`difference`] recorded into a graph. Its size is the device's count, so,
    /// as [`record_select_flagged`](crate::compact::record_select_flagged), the
    /// output is as long as `a` and the count stays on the device: the result is
    /// the first [`RecordedSelection::count`] elements.
    ///
    /// # Errors
    ///
    /// As [`difference`], and those of recording.
    pub fn record_difference<'g, T: Ordered>(
        rec: &mut GraphRecorder<'g>,
        arena: &'g GraphArena,
        a: &'g impl ReadBuffer<T>,
        b: &'g impl ReadBuffer<T>,
    ) -> Result<RecordedSelection<'g, T>> {
        record_filter(rec, arena, a, b, false)
    }

    /// [`intersection`] recorded into a graph, as [`record_difference`].
    ///
    /// # Errors
    ///
    /// As [`intersection`], and those of recording.
    pub fn record_intersection<'g, T: Ordered>(
        rec: &mut GraphRecorder<'g>,
        arena: &'g GraphArena,
        a: &'g impl ReadBuffer<T>,
        b: &'g impl ReadBuffer<T>,
    ) -> Result<RecordedSelection<'g, T>> {
        record_filter(rec, arena, a, b, true)
    }

    /// [`filter_on`] recorded.
    fn record_filter<'g, T: Ordered>(
        rec: &mut GraphRecorder<'g>,
        arena: &'g GraphArena,
        a: &'g impl ReadBuffer<T>,
        b: &'g impl ReadBuffer<T>,
        present: bool,
    ) -> Result<RecordedSelection<'g, T>> {
        let mut e = Record::new(rec, arena);
        let (a, b) = (e.input(a), e.input(b));
        let (values, count) = filter_on(&mut e, a, b, present)?;
        Ok(RecordedSelection { values, count })
    }
}
