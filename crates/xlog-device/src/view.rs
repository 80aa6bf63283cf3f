//! Device-side views of kernel buffer parameters.
//!
//! | declared access | device parameter |
//! | --- | --- |
//! | `read(p)` | `&[T]` (shared, immutable: any thread reads any element) |
//! | `write(p)` | [`Out<'_, T>`]: each thread writes the elements its [`ThreadIndex`] names |
//! | `read_write(p)` | [`InOut<'_, T>`]: as `Out`, and reading those elements too |
//! | `write(p per block)`, `read_write(p per block)` | `Out<'_, T, PerBlock>` / `InOut<..>`: indexed by [`BlockIndex`] (one thread per block) |
//! | `write(p per warp)`, `read_write(p per warp)` | `Out<'_, T, PerWarp>` / `InOut<..>`: indexed by [`WarpIndex`] (one thread per warp) |
//! | `write(p per chunk(K))`, `read_write(p per chunk(K))` | `Out<'_, T, Chunks<K>>` / `InOut<..>`: thread `c` owns elements `[K·c, K·c + K)`, stored as one vector |
//! | `atomic(p)` | [`&AtomicView<'_, T>`](AtomicView): any thread, any element, atomic operations only |
//! | `write(p per tile(K))`, `read_write(p per tile(K))` | `Out<'_, T, Tiles<K>>` / `InOut<..>`: chunks of look-back tiles ([`crate::lookback`]) |
//! | `lookback(p)` (`p: &mut [u64]`) | [`&mut LookBack<'_>`](LookBack): tile tickets and decoupled look-back ([`crate::lookback`]) |
//! | `write(p per transposed(TILE, rows))` | [`&mut TransposeOut<'_, T, TILE>`](TransposeOut): the transposed tile of each block ([`crate::transpose`]) |
//!
//! Writes from many GPU threads into one `&mut [T]` would alias, so the write views
//! hand out `&mut T` only for an index witnessed by a witness of the view's
//! [`Ownership`]. Sharing across threads goes through explicit tools instead: atomic
//! views, [`crate::shared`] tiles and [`crate::collective`]. A kernel declared
//! `unsafe fn` may take raw access ([`Out::as_mut_ptr`], [`Out::as_mut_slice`]); its
//! launcher is then `unsafe`.
//!
//! # Soundness
//!
//! Every thread of a launch receives its own copy of each view, all pointing at the
//! same buffer, and the host launcher guarantees that no other parameter of the
//! launch aliases a write or atomic view's buffer (it holds `&mut DeviceBuffer`).
//!
//! - **Write views.** Safe access to elements goes through one kind of witness only,
//!   fixed by the view's `Ownership` parameter (which the attribute chooses, so every
//!   thread's copy has the same one). Each value of each witness kind is held by at
//!   most one thread of the launch (see [`crate::thread`]) and names a set of elements
//!   disjoint from every other value's (one element, or one chunk of `K`). Two threads
//!   can therefore never obtain references to the same element, and within one thread
//!   the `&mut self` receiver serialises access as for any Rust collection.
//! - **Atomic views.** Every access is an atomic operation (relaxed, device scope),
//!   and atomics do not race, so any thread may use any element.
//!
//! Bounds are checked: an out-of-range index panics, like slice indexing.

use core::marker::PhantomData;
use core::ops::{Index, IndexMut};

use crate::atomic::{AtomicAdd, AtomicInt, AtomicStore};
use crate::thread::{BlockIndex, ThreadIndex, WarpIndex};
use crate::vector::Vector;

pub use crate::lookback::LookBack;
pub use crate::transpose::TransposeOut;

mod sealed {
    pub trait Ownership {}
    impl Ownership for super::PerThread {}
    impl Ownership for super::PerBlock {}
    impl Ownership for super::PerWarp {}
    impl<const K: usize> Ownership for super::Chunks<K> {}
    impl<const K: usize> Ownership for super::Tiles<K> {}

    pub trait WriteIndex<P> {}
    impl WriteIndex<super::PerThread> for crate::thread::ThreadIndex {}
    impl WriteIndex<super::PerBlock> for crate::thread::BlockIndex {}
    impl WriteIndex<super::PerWarp> for crate::thread::WarpIndex {}
}

/// Which threads own which elements of a write view: the partition of the buffer
/// among the launch's threads, fixed per parameter by the attribute.
///
/// | ownership | attribute | witness | owns |
/// | --- | --- | --- | --- |
/// | [`PerThread`] | `write(p)` | [`ThreadIndex`] | element `i` |
/// | [`PerBlock`] | `write(p per block)` | [`BlockIndex`] | element `blockIdx.x` |
/// | [`PerWarp`] | `write(p per warp)` | [`WarpIndex`] | element = the warp's number in the launch |
/// | [`Chunks<K>`] | `write(p per chunk(K))` | [`ThreadIndex`] | elements `[K·c, K·c + K)` |
/// | [`Tiles<K>`] | `write(p per tile(K))` | [`TileChunk`](crate::lookback::TileChunk) of a look-back ticket | elements `[K·c, K·c + K)`, `c = ticket·blockDim.x + threadIdx.x` |
///
/// # Soundness
///
/// Sealed: the partitions above are the only ones, and each pairs with exactly one
/// witness kind whose values are unique per launch.
pub trait Ownership: sealed::Ownership {}
impl Ownership for PerThread {}
impl Ownership for PerBlock {}
impl Ownership for PerWarp {}
impl<const K: usize> Ownership for Chunks<K> {}
impl<const K: usize> Ownership for Tiles<K> {}

/// One element per thread, indexed by [`ThreadIndex`] (the default).
#[derive(Debug)]
pub enum PerThread {}

/// One element per block, indexed by [`BlockIndex`] (only thread 0 of each block
/// holds one).
#[derive(Debug)]
pub enum PerBlock {}

/// One element per warp, indexed by [`WarpIndex`] (only lane 0 of each warp holds
/// one).
#[derive(Debug)]
pub enum PerWarp {}

/// `K` consecutive elements per thread: thread `c` (its [`ThreadIndex`]) owns
/// `[K·c, K·c + K)` and may load and store them as one vector
/// ([`Out::set_vector`]), with a shorter last chunk as a slice ([`Out::chunk_mut`]).
#[derive(Debug)]
pub enum Chunks<const K: usize> {}

/// `K` consecutive elements per thread of a look-back tile: the thread `t` of the
/// block holding tile `k` ([`lookback::Ticket`](crate::lookback::Ticket)) owns
/// chunk `c = k·blockDim.x + t`, elements `[K·c, K·c + K)`, through its
/// [`TileChunk`](crate::lookback::TileChunk). The tile is `blockIdx.x` with a block
/// per tile and a ticket in start order otherwise; either way the chunk comes from
/// the `Ticket`, so these views take no [`ThreadIndex`].
#[derive(Debug)]
pub enum Tiles<const K: usize> {}

/// What indexes a write view of ownership `P`: [`ThreadIndex`] for [`PerThread`],
/// [`BlockIndex`] for [`PerBlock`], [`WarpIndex`] for [`PerWarp`]. The trait exists
/// so that indexing a write view with anything else (`out[i.get()]`, `out[5]`, a
/// thread's index into a per-block view) says so, instead of "mismatched types".
///
/// # Soundness
///
/// Sealed: implemented for those three pairs only, and no other crate can add an
/// implementation (for `usize`, say), so every index reaching a write view is a
/// witness of the view's own partition.
#[diagnostic::on_unimplemented(
    message = "a `{P}` write view is not indexed by `{Self}`",
    label = "not this view's witness",
    note = "writes go only to elements this thread owns: `write(p)` views take `thread::index_1d()` or an item of `thread::grid_stride(..)`; `write(p per block)` views take the `BlockIndex` of `thread::block_leader()`; `write(p per warp)` views the `WarpIndex` of `thread::warp_leader()`; `per chunk(K)` views use `chunk_mut` / `set_vector`; read slices take `x[i]` or `x[i.get()]`",
    note = "for writes elsewhere declare `atomic(p)`, use shared-memory tiles and collectives, or declare the kernel `unsafe fn` and use `as_mut_ptr()`"
)]
pub trait WriteIndex<P: Ownership = PerThread>: sealed::WriteIndex<P> + Copy {
    #[doc(hidden)]
    fn __witnessed(self) -> usize;
}

impl WriteIndex<PerThread> for ThreadIndex {
    #[inline(always)]
    fn __witnessed(self) -> usize {
        self.get()
    }
}

impl WriteIndex<PerBlock> for BlockIndex {
    #[inline(always)]
    fn __witnessed(self) -> usize {
        self.get()
    }
}

impl WriteIndex<PerWarp> for WarpIndex {
    #[inline(always)]
    fn __witnessed(self) -> usize {
        self.get()
    }
}

/// The `Debug` output shared by the views and tiles over `len` elements at `ptr`:
/// `Name { ptr: .., len: .. }`.
pub(crate) fn debug_ptr_len<T>(
    f: &mut core::fmt::Formatter<'_>,
    name: &str,
    ptr: *const T,
    len: usize,
) -> core::fmt::Result {
    f.debug_struct(name)
        .field("ptr", &ptr)
        .field("len", &len)
        .finish()
}

/// Element `i` of the `len` elements at `ptr`, bounds-checked: the one check behind
/// every indexed view, atomic view and shared tile. Past the end it panics with
/// "`{what}index out of bounds: the len is {len} but the index is {i}`".
///
/// # Safety
///
/// `ptr` is valid for `len` consecutive `T`s (it may dangle when `len == 0`).
#[inline(always)]
#[track_caller]
pub(crate) unsafe fn checked_element<T>(
    ptr: *mut T,
    len: usize,
    i: usize,
    what: &'static str,
) -> *mut T {
    if i >= len {
        crate::panic::cold::out_of_bounds(what, len, i);
    }
    // SAFETY: `i < len`: inside the `len` elements at `ptr` (the caller's obligation).
    unsafe { ptr.add(i) }
}

/// Asks the GPU to bring the cache line holding `s[i]` into L2 ahead of a later
/// read (PTX `prefetch.L2`): a hint with no effect on any value, and nothing at
/// all when `i` is out of range, for a zero-sized `T`, or on the host. Any thread
/// may prefetch any element.
#[inline(always)]
pub fn prefetch_l2<T>(s: &[T], i: usize) {
    #[cfg(target_arch = "nvptx64")]
    if let Some(e) = s.get(i).filter(|_| core::mem::size_of::<T>() != 0) {
        // SAFETY: a prefetch reads nothing into a register and writes nothing; the
        // address is that of a live element of `s`, in memory the slice borrows
        // (not a zero-sized element's dangling address: those are skipped). In
        // shared memory the prefetch does nothing.
        unsafe {
            core::arch::asm!(
                "prefetch.L2 [{p}];",
                p = in(reg64) e as *const T,
                options(readonly, nostack, preserves_flags)
            )
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (s, i);
}

/// Reads chunk `c` of a read slice, `[K·c, K·c + K)`, as one vector load when its
/// address is aligned for it (otherwise element by element): `None` when the chunk
/// is not entirely inside `s`. Any thread may read any chunk.
#[inline(always)]
pub fn read_chunk<T, const K: usize>(s: &[T], c: usize) -> Option<[T; K]>
where
    [T; K]: Vector,
{
    let start = c.checked_mul(K)?;
    let chunk = s.get(start..start.checked_add(K)?)?;
    // SAFETY: `chunk` is `K` initialised, readable `T`s (a sub-slice of `s`), and the
    // shared borrow excludes writes while it lives.
    Some(unsafe { <[T; K]>::__load(chunk.as_ptr().cast::<[T; K]>()) })
}

/// The whole 4-byte words of a byte slice, when it starts at a 4-byte aligned
/// address (`None` otherwise): word `q` is bytes `[4q, 4q + 4)` as stored, so
/// `u32::from_le(word)` has byte `4q + b` in bits `8b..8b + 8`. The bytes past the
/// last whole word are not in it. Lets a kernel read flags or other byte data with
/// 4- or 16-byte loads ([`read_chunk`] of the words).
#[inline(always)]
pub fn as_words(s: &[u8]) -> Option<&[u32]> {
    if s.as_ptr() as usize % core::mem::align_of::<u32>() != 0 {
        return None;
    }
    // SAFETY: the address is aligned for `u32` (checked); `len / 4` words cover
    // bytes of `s` only, which are initialised, and every bit pattern is a valid
    // `u32`; the result borrows `s`, so the bytes stay unwritten while it lives.
    Some(unsafe { core::slice::from_raw_parts(s.as_ptr().cast::<u32>(), s.len() / 4) })
}

/// Reads chunks `first`, `first + stride`, …, `first + (U - 1)·stride` of a read
/// slice (chunk `c` is `[K·c, K·c + K)`), all `U` or none: `None` unless the last
/// of them lies entirely inside `s` (and when `U` is 0). The slice's alignment is
/// tested once and the `U` loads are issued together, one vector instruction each
/// when `s` starts aligned for the vector (element by element otherwise), before
/// any of their values is used: a memory-bound loop keeps `U` loads in flight per
/// thread with one bounds check. Any thread may read any chunk.
#[inline(always)]
pub fn read_chunks<T, const K: usize, const U: usize>(
    s: &[T],
    first: usize,
    stride: usize,
) -> Option<[[T; K]; U]>
where
    [T; K]: Vector,
{
    let last = stride.checked_mul(U.checked_sub(1)?)?.checked_add(first)?;
    if last.checked_add(1)?.checked_mul(K)? > s.len() {
        return None;
    }
    let base = s.as_ptr().cast::<[T; K]>();
    // Chunk `c` starts `c · size_of::<[T; K]>()` bytes past `base`, so every chunk
    // is aligned for the vector exactly when `base` is.
    let aligned = base as usize % core::mem::size_of::<[T; K]>() == 0;
    // Each chunk index `first + u·stride` (`u < U`) is at most `last` (no overflow:
    // `last` was computed with checks), and chunk `last` ends inside `s`, so every
    // chunk is `K` initialised, readable `T`s of `s`, which the shared borrow keeps
    // free of writes.
    Some(if aligned {
        core::array::from_fn(|u| {
            // SAFETY: the chunk is inside `s` (above); `base` is aligned for the vector
            // (tested), so the chunk is too.
            unsafe { <[T; K]>::__load_aligned(base.add(first + u * stride)) }
        })
    } else {
        core::array::from_fn(|u| {
            // SAFETY: the chunk is inside `s` (above), aligned for `T` as `s` is.
            unsafe { base.add(first + u * stride).read() }
        })
    })
}

macro_rules! write_view {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        pub struct $name<'a, T, P: Ownership = PerThread> {
            ptr: *mut T,
            len: usize,
            _buffer: PhantomData<(&'a mut [T], *const P)>,
        }

        impl<'a, T, P: Ownership> $name<'a, T, P> {
            /// Builds the view from a kernel's pointer and length parameters.
            ///
            /// # Safety
            ///
            /// Only the code `#[xlog_kernel]` generates calls this; the generated entry
            /// point and launcher uphold:
            ///
            /// 1. `ptr` is valid for reads and writes of `len` consecutive `T`s in
            ///    device memory for `'a` (the kernel's run), and aligned for `T`
            ///    (`ptr` may dangle when `len == 0`);
            /// 2. nothing but the views built for this parameter, one per thread of
            ///    the launch, accesses that memory while the kernel runs;
            /// 3. every thread builds its view from the same `ptr` and `len`, with the
            ///    same `P`, in a one-dimensional launch.
            #[doc(hidden)]
            #[inline(always)]
            pub unsafe fn __from_raw_parts(ptr: *mut T, len: usize) -> Self {
                $name { ptr, len, _buffer: PhantomData }
            }

            /// Number of elements in the buffer.
            #[inline(always)]
            pub fn len(&self) -> usize {
                self.len
            }

            /// Whether the buffer has no elements.
            #[inline(always)]
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }

            /// The element `i` names, or `None` when `i` is out of bounds.
            #[inline(always)]
            pub fn get_mut<I: WriteIndex<P>>(&mut self, i: I) -> Option<&mut T> {
                let i = i.__witnessed();
                if i < self.len {
                    // SAFETY: `i < len` keeps the access in bounds (obligation 1 of
                    // `__from_raw_parts`); `i` is witnessed by this thread's witness of
                    // the view's partition, so no other thread references element `i`
                    // (see the module's # Soundness), and `&mut self` rules out a
                    // second reference from this thread.
                    Some(unsafe { &mut *self.ptr.add(i) })
                } else {
                    None
                }
            }

            /// The raw pointer to the first element.
            ///
            /// # Safety
            ///
            /// The pointer itself is harmless; what is done with it is not. The caller
            /// (an `unsafe fn` kernel) must ensure that:
            ///
            /// 1. accesses stay within `0..len()`;
            /// 2. no two threads access the same element unless all those accesses
            ///    are reads, or atomics ([`crate::atomic`]), or are ordered by a
            ///    barrier ([`crate::barrier`]).
            #[inline(always)]
            pub unsafe fn as_mut_ptr(&mut self) -> *mut T {
                self.ptr
            }

            /// The whole buffer as a mutable slice, for `unsafe fn` kernels.
            ///
            /// # Safety
            ///
            /// Every other thread holds the same buffer. The caller must ensure that,
            /// while the returned slice lives, no element this thread reads or writes
            /// through it is written by another thread, and no element it writes is
            /// read by another thread, except where a barrier orders the accesses.
            #[inline(always)]
            pub unsafe fn as_mut_slice(&mut self) -> &mut [T] {
                // SAFETY: obligation 1 of `__from_raw_parts` makes (ptr, len) a valid
                // slice; the caller upholds exclusivity as documented above.
                unsafe { core::slice::from_raw_parts_mut(self.ptr, self.len) }
            }
        }

        impl<T, const K: usize> $name<'_, T, Chunks<K>> {
            const NONEMPTY_CHUNKS: () = assert!(K > 0, "a chunk holds at least one element");

            /// Number of chunks, `⌈len / K⌉`: the last one is shorter when `K` does not
            /// divide the length.
            #[inline(always)]
            pub fn chunk_count(&self) -> usize {
                let () = Self::NONEMPTY_CHUNKS;
                self.len.div_ceil(K)
            }

            /// The elements of chunk `c`, `[K·c, min(K·c + K, len))`: `K` of them, or
            /// fewer for the last chunk.
            ///
            /// # Panics
            ///
            /// When `c >= chunk_count()`.
            #[inline(always)]
            #[track_caller]
            pub fn chunk_mut(&mut self, c: ThreadIndex) -> &mut [T] {
                let c = c.get();
                if c >= self.chunk_count() {
                    crate::panic::cold::out_of_bounds("", self.chunk_count(), c);
                }
                let start = c * K;
                let n = core::cmp::min(K, self.len - start);
                // SAFETY: `start + n <= len` (obligation 1); the chunk belongs to this
                // thread's `ThreadIndex`, so no other thread references its elements,
                // and `&mut self` excludes a second reference from this thread.
                unsafe { core::slice::from_raw_parts_mut(self.ptr.add(start), n) }
            }

            /// Chunk `c` as one vector load when it is a whole chunk (`None` for the
            /// short last chunk, or past the end).
            #[inline(always)]
            pub fn vector(&self, c: ThreadIndex) -> Option<[T; K]>
            where
                [T; K]: Vector,
            {
                let start = c.get().checked_mul(K)?;
                if start.checked_add(K)? <= self.len {
                    // SAFETY: in bounds (checked); the chunk is this thread's own, so no
                    // other thread writes it.
                    Some(unsafe { <[T; K]>::__load(self.ptr.add(start).cast::<[T; K]>()) })
                } else {
                    None
                }
            }

            /// Stores `v` as chunk `c` with one vector store (element by element when
            /// the view's address is not aligned for the vector).
            ///
            /// # Panics
            ///
            /// When chunk `c` is not a whole chunk inside the view (use
            /// [`chunk_mut`](Self::chunk_mut) for the short last one).
            #[inline(always)]
            #[track_caller]
            pub fn set_vector(&mut self, c: ThreadIndex, v: [T; K])
            where
                [T; K]: Vector,
            {
                let c = c.get();
                match c.checked_mul(K).and_then(|s| s.checked_add(K)) {
                    Some(end) if end <= self.len => {
                        // SAFETY: in bounds (checked); the chunk is this thread's own
                        // and `&mut self` excludes other references from this thread.
                        unsafe { <[T; K]>::__store(self.ptr.add(c * K).cast::<[T; K]>(), v) }
                    }
                    _ => crate::panic::cold::out_of_bounds("", self.len / K, c),
                }
            }
        }

        impl<T, P: Ownership, I: WriteIndex<P>> Index<I> for $name<'_, T, P> {
            type Output = T;

            /// # Panics
            ///
            /// When `i` is out of bounds.
            #[inline(always)]
            #[track_caller]
            fn index(&self, i: I) -> &T {
                // SAFETY: the buffer holds `len` elements (obligation 1), so the
                // pointer is in bounds; element `i` belongs to this thread's witness,
                // so no other thread writes it.
                unsafe { &*checked_element(self.ptr, self.len, i.__witnessed(), "") }
            }
        }

        impl<T, P: Ownership, I: WriteIndex<P>> IndexMut<I> for $name<'_, T, P> {
            /// # Panics
            ///
            /// When `i` is out of bounds.
            #[inline(always)]
            #[track_caller]
            fn index_mut(&mut self, i: I) -> &mut T {
                // SAFETY: as in `get_mut`: in bounds (obligation 1 and the check),
                // owned by this thread's witness, and `&mut self` excludes other
                // references from this thread.
                unsafe { &mut *checked_element(self.ptr, self.len, i.__witnessed(), "") }
            }
        }

        impl<T, P: Ownership> core::fmt::Debug for $name<'_, T, P> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                debug_ptr_len(f, stringify!($name), self.ptr, self.len)
            }
        }
    };
}

write_view!(
    /// The device side of a `write(p)` parameter: each thread writes the elements its
    /// witness names (`out[i] = v`; see [`Ownership`] for `per block`, `per warp` and
    /// `per chunk(K)`). Reading back what this thread wrote is allowed; the buffer's
    /// prior contents are unspecified for a write-only parameter.
    ///
    /// See the module docs' # Soundness.
    Out
);

write_view!(
    /// The device side of a `read_write(p)` parameter: each thread reads and writes the
    /// elements its witness names (`y[i] = a * x[i.get()] + y[i]`).
    ///
    /// See the module docs' # Soundness.
    InOut
);

/// The device side of an `atomic(p)` parameter: every thread may access every
/// element, and every access is atomic (relaxed ordering, device scope:
/// [`crate::atomic`]). Indices are plain `usize`s, bounds-checked.
///
/// ```no_run
/// # use xlog_device::{thread, view::AtomicView};
/// /// The body of `#[xlog_kernel(read(data), atomic(bins))]`.
/// fn histogram(data: &[u8], bins: &AtomicView<'_, u32>) {
///     for i in thread::grid_stride(data.len()) {
///         bins.fetch_add(data[i] as usize, 1);
///     }
/// }
/// ```
///
/// There is no `bins[i] = v`: a plain store could race with another thread's
/// access, so the view has no `Index`/`IndexMut`; use [`store`](Self::store).
///
/// # Soundness
///
/// The launcher holds the buffer `&mut` for the launch, so nothing else in the launch
/// addresses it; every access through the view is an atomic instruction on an
/// in-bounds, aligned element; and atomics never race. The view is `!Send`/`!Sync`
/// like every view, but that is not needed for soundness here.
pub struct AtomicView<'a, T: AtomicStore> {
    ptr: *mut T,
    len: usize,
    _buffer: PhantomData<&'a mut [T]>,
}

impl<T: AtomicStore> AtomicView<'_, T> {
    /// Builds the view from a kernel's pointer and length parameters.
    ///
    /// # Safety
    ///
    /// Only the code `#[xlog_kernel]` generates calls this; the generated entry point
    /// and launcher uphold:
    ///
    /// 1. `ptr` is valid for reads and writes of `len` consecutive `T`s in device
    ///    memory for the kernel's run, and aligned for `T` (`ptr` may dangle when
    ///    `len == 0`);
    /// 2. nothing but the atomic views built for this parameter accesses that memory
    ///    while the kernel runs.
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn __from_raw_parts(ptr: *mut T, len: usize) -> Self {
        AtomicView {
            ptr,
            len,
            _buffer: PhantomData,
        }
    }

    /// Number of elements in the buffer.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline(always)]
    #[track_caller]
    fn at(&self, i: usize) -> *mut T {
        // SAFETY: the buffer holds `len` elements (obligation 1).
        unsafe { checked_element(self.ptr, self.len, i, "") }
    }

    /// Atomic load of element `i`.
    ///
    /// # Panics
    ///
    /// When `i >= len()`, as every method of this view.
    #[inline(always)]
    #[track_caller]
    pub fn load(&self, i: usize) -> T {
        let p = self.at(i);
        // SAFETY: `p` is in bounds and aligned (obligation 1), and every access to the
        // buffer in this launch is atomic (obligation 2 and this type's API).
        unsafe { crate::atomic::load(p) }
    }

    /// Atomic store of `v` into element `i`.
    #[inline(always)]
    #[track_caller]
    pub fn store(&self, i: usize, v: T) {
        let p = self.at(i);
        // SAFETY: as in `load`.
        unsafe { crate::atomic::store(p, v) }
    }

    /// The raw pointer to the first element, for `unsafe fn` kernels.
    ///
    /// # Safety
    ///
    /// Every access through it to an element another thread may access concurrently
    /// must be atomic ([`crate::atomic`]), and within `0..len()`.
    #[inline(always)]
    pub unsafe fn as_ptr(&self) -> *mut T {
        self.ptr
    }
}

impl<T: AtomicAdd> AtomicView<'_, T> {
    /// `atomicAdd`: adds `v` to element `i` (integers wrap), returning the old value.
    #[inline(always)]
    #[track_caller]
    pub fn fetch_add(&self, i: usize, v: T) -> T {
        let p = self.at(i);
        // SAFETY: as in `load`.
        unsafe { crate::atomic::fetch_add(p, v) }
    }

    /// `atomicExch`: stores `v` into element `i`, returning the old value.
    #[inline(always)]
    #[track_caller]
    pub fn swap(&self, i: usize, v: T) -> T {
        let p = self.at(i);
        // SAFETY: as in `load`.
        unsafe { crate::atomic::swap(p, v) }
    }
}

/// Generates `AtomicView` read-modify-write methods that forward `(i, v)` to the
/// [`crate::atomic`] function of the same name on the bounds-checked element `i`.
macro_rules! atomic_view_rmw {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        #[track_caller]
        pub fn $name(&self, i: usize, v: T) -> T {
            let p = self.at(i);
            // SAFETY: as in `load`.
            unsafe { crate::atomic::$name(p, v) }
        }
    )*};
}

impl<T: AtomicInt> AtomicView<'_, T> {
    atomic_view_rmw! {
        /// `atomicMin` on element `i`, returning the old value.
        fetch_min;
        /// `atomicMax` on element `i`, returning the old value.
        fetch_max;
        /// `atomicAnd` on element `i`, returning the old value.
        fetch_and;
        /// `atomicOr` on element `i`, returning the old value.
        fetch_or;
        /// `atomicXor` on element `i`, returning the old value.
        fetch_xor;
    }

    /// `atomicCAS` on element `i`: stores `new` if the element equals `current`.
    /// `Ok(old)` when it did, `Err(found)` otherwise.
    #[inline(always)]
    #[track_caller]
    pub fn compare_exchange(&self, i: usize, current: T, new: T) -> Result<T, T> {
        let p = self.at(i);
        // SAFETY: as in `load`.
        unsafe { crate::atomic::compare_exchange(p, current, new) }
    }
}

impl<T: AtomicStore> core::fmt::Debug for AtomicView<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        debug_ptr_len(f, "AtomicView", self.ptr, self.len)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::thread::{block_witness, warp_witness, witness};

    #[test]
    fn indexing_through_witnesses() {
        let mut data = [0u32; 4];
        // SAFETY: `data` outlives the view and nothing else touches it.
        let mut out = unsafe { Out::__from_raw_parts(data.as_mut_ptr(), data.len()) };
        assert_eq!(out.len(), 4);
        assert!(!out.is_empty());
        out[witness(2)] = 7;
        *out.get_mut(witness(3)).unwrap() += 1;
        assert!(out.get_mut(witness(4)).is_none());
        assert_eq!(out[witness(2)], 7);
        assert_eq!(data, [0, 0, 7, 1]);
    }

    #[test]
    fn per_block_and_per_warp_views_take_their_witnesses() {
        let mut data = [0u32; 3];
        // SAFETY: `data` outlives the view and nothing else touches it.
        let mut partials =
            unsafe { Out::<u32, PerBlock>::__from_raw_parts(data.as_mut_ptr(), data.len()) };
        partials[block_witness(2)] = 5;
        assert!(partials.get_mut(block_witness(3)).is_none());
        // SAFETY: as above.
        let mut warps =
            unsafe { InOut::<u32, PerWarp>::__from_raw_parts(data.as_mut_ptr(), data.len()) };
        warps[warp_witness(0)] += 9;
        assert_eq!(data, [9, 0, 5]);
    }

    #[test]
    fn chunks_partition_the_view_with_a_short_tail() {
        let mut data = [1.0f32; 10];
        // SAFETY: `data` outlives the view and nothing else touches it.
        let mut y =
            unsafe { InOut::<f32, Chunks<4>>::__from_raw_parts(data.as_mut_ptr(), data.len()) };
        assert_eq!(y.chunk_count(), 3);
        let v = y.vector(witness(1)).unwrap();
        y.set_vector(witness(1), v.map(|e| e + 1.0));
        assert!(y.vector(witness(2)).is_none());
        assert_eq!(y.chunk_mut(witness(2)).len(), 2);
        y.chunk_mut(witness(2))[1] = 7.0;
        assert_eq!(data, [1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 1.0, 7.0]);
        let x = [0u32, 1, 2, 3, 4, 5, 6];
        assert_eq!(read_chunk::<u32, 2>(&x, 2), Some([4, 5]));
        assert_eq!(read_chunk::<u32, 2>(&x, 3), None);
        assert_eq!(read_chunk::<u32, 4>(&x, usize::MAX), None);
        assert_eq!(read_chunks::<u32, 2, 2>(&x, 0, 2), Some([[0, 1], [4, 5]]));
        assert_eq!(
            read_chunks::<u32, 2, 3>(&x, 0, 1),
            Some([[0, 1], [2, 3], [4, 5]])
        );
        assert_eq!(read_chunks::<u32, 2, 2>(&x, 1, 2), None);
        assert_eq!(read_chunks::<u32, 2, 0>(&x, 0, 1), None);
        assert_eq!(read_chunks::<u32, 4, 2>(&x, 0, usize::MAX), None);
        assert_eq!(read_chunks::<u32, 2, 2>(&x, usize::MAX, 0), None);
        let bytes: [u32; 3] = [
            u32::from_le_bytes([1, 2, 3, 4]),
            u32::from_le_bytes([5, 6, 7, 8]),
            0,
        ];
        // SAFETY: reading the initialised bytes of `bytes`.
        let b = unsafe { core::slice::from_raw_parts(bytes.as_ptr().cast::<u8>(), 9) };
        let words = as_words(b).unwrap();
        assert_eq!(words.len(), 2);
        assert_eq!(u32::from_le(words[1]).to_le_bytes(), [5, 6, 7, 8]);
        assert_eq!(as_words(&b[1..]), None);
    }

    #[test]
    #[should_panic(expected = "index out of bounds: the len is 3 but the index is 3")]
    fn chunk_past_the_end_panics() {
        let mut data = [0u32; 9];
        // SAFETY: `data` outlives the view and nothing else touches it.
        let mut y =
            unsafe { Out::<u32, Chunks<4>>::__from_raw_parts(data.as_mut_ptr(), data.len()) };
        y.chunk_mut(witness(3));
    }

    #[test]
    #[should_panic(expected = "index out of bounds: the len is 2 but the index is 2")]
    fn whole_chunk_store_past_the_end_panics() {
        let mut data = [0u32; 9];
        // SAFETY: `data` outlives the view and nothing else touches it.
        let mut y =
            unsafe { Out::<u32, Chunks<4>>::__from_raw_parts(data.as_mut_ptr(), data.len()) };
        y.set_vector(witness(2), [1; 4]);
    }

    #[test]
    #[should_panic(expected = "index out of bounds: the len is 4 but the index is 4")]
    fn atomic_view_checks_bounds_before_any_access() {
        let mut data = [0u64; 4];
        // SAFETY: `data` outlives the view and nothing else touches it.
        let v = unsafe { AtomicView::__from_raw_parts(data.as_mut_ptr(), data.len()) };
        assert_eq!(v.len(), 4);
        v.fetch_add(4, 1);
    }

    #[test]
    #[should_panic(expected = "index out of bounds: the len is 2 but the index is 2")]
    fn out_of_bounds_panics() {
        let mut data = [1.0f32; 2];
        // SAFETY: `data` outlives the view and nothing else touches it.
        let mut v = unsafe { InOut::__from_raw_parts(data.as_mut_ptr(), data.len()) };
        v[witness(2)] = 0.0;
    }

    #[test]
    fn raw_access() {
        let mut data = [1u8, 2, 3];
        // SAFETY: `data` outlives the view and nothing else touches it.
        let mut v = unsafe { InOut::<u8>::__from_raw_parts(data.as_mut_ptr(), data.len()) };
        // SAFETY: single-threaded test: no other accessor.
        let s = unsafe { v.as_mut_slice() };
        s.reverse();
        assert_eq!(data, [3, 2, 1]);
        // SAFETY: an empty view never dereferences its dangling pointer.
        let empty =
            unsafe { Out::<u64>::__from_raw_parts(core::ptr::NonNull::dangling().as_ptr(), 0) };
        assert!(empty.is_empty());
    }
}
