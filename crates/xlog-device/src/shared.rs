//! Shared memory: per-block scratch memory, static ([`SharedArray`] via
//! [`static_shared!`](crate::static_shared)) and dynamic ([`DynamicShared`]).
//!
//! Shared memory is visible to every thread of a block, so it is accessed through
//! raw pointers and `unsafe` reads and writes whose obligations are ordinary data-race
//! freedom: between a write of an element and another thread's access to it there
//! must be a barrier ([`crate::barrier::sync_threads`]) or both accesses must be
//! atomic ([`crate::atomic`], which accepts shared addresses).
//!
//! # How the memory is declared
//!
//! - **Dynamic**: this crate declares, once per module,
//!   `.extern .shared .align 16 .b8 __xlog_dynamic_shared[];`. Its size is the launch's
//!   dynamic shared memory bytes (`%dynamic_smem_size`), and [`DynamicShared`] reads
//!   both with `cvta.shared.u64`. Every use in a kernel sees the same memory
//!   (alignment 16).
//! - **Static**: [`static_shared!`](crate::static_shared) emits a module-scope
//!   `.shared` array with a name built from the crate name, the given name, and the
//!   line and column of the invocation, so each invocation written out has its own
//!   array (shared by every call of the function containing it, like a `static`).
//!   Invocations made by one outer macro call share a line and column (as do
//!   invocations at the same place in two files): given the same name they would
//!   declare one array twice, which ptxas and the driver refuse, so `xlog-build`
//!   refuses such a module first, with a message; give them different names.
//! - **In the simulator** ([`crate::sim`]): each invocation site (keyed by a
//!   `static` of its own) and the dynamic shared memory get one host allocation per
//!   worker, refilled with the byte [`sim::SHARED_FILL`](crate::sim::SHARED_FILL)
//!   (`0xcd`) when a block first uses it, so every block starts from the same
//!   recognisable contents. [`SharedArray::read`] and the other unchecked accessors
//!   check their index there and panic past the end. Every handle (a
//!   [`SharedArray`], [`DynamicShared`], [`Tile`] or
//!   [`SharedWords`](crate::exchange::SharedWords)) records the simulated block that
//!   made it, and each access through it panics in any other block or outside a
//!   launch: the host allocation is the next block's, or freed when the launch
//!   ends, and safe host code can keep a handle longer (in a `thread_local!`, say),
//!   which a GPU kernel cannot.
//!
//! # Safe access: tiles and their phases
//!
//! [`SharedArray::tile`] and [`DynamicShared::tile`] turn a handle into a [`Tile`]
//! of 32- or 64-bit numbers, used in phases that a barrier separates:
//!
//! 1. a **write phase** (`Tile<T, Writing>`): each thread stores only into the slots
//!    it owns, named by its [`LocalIndex`] (`thread::local_index()`, or the items of
//!    `thread::block_stride(len)`), which no other thread of the block holds;
//! 2. [`Tile::sync`] consumes the tile, waits at the block barrier and returns it in
//!    its **read phase** (`Tile<T, Reading>`): any thread reads any slot;
//! 3. `sync` again returns to a write phase.
//!
//! ```no_run
//! # use xlog_device::{static_shared, thread};
//! /// Reverses each block's elements (1-D launch, 256 threads per block).
//! fn reverse_in_block(x: &[f32]) -> f32 {
//!     let t = thread::local_index();
//!     let mut tile = static_shared!(TILE: [f32; 256]).tile();
//!     tile.set(t, x[thread::index_1d().get()]);
//!     let tile = tile.sync();
//!     tile.get(255 - t.get())
//! }
//! ```
//!
//! A tile's *layout* fixes which witness names a slot in its write phases, so that
//! one tile never mixes two ways of handing out slots:
//!
//! - [`Linear`] (the default, from `tile()`): slot `s` belongs to thread
//!   `s mod blockDim.x`, named by a [`LocalIndex`];
//! - [`Padded<TILE>`](Padded) (from `padded_tile::<TILE>()`): the `TILE × (TILE + 1)`
//!   staging tile of a transpose, whose slots are named only by the
//!   [`PaddedSlot<TILE>`](crate::transpose::PaddedSlot)s of
//!   [`TransposeTile::loads`](crate::transpose::TransposeTile::loads). A padded slot
//!   `r·(TILE + 1) + c` belongs to the thread that loads item `r·TILE + c`, not to
//!   thread `(r·(TILE + 1) + c) mod blockDim.x`, so it is not a `LocalIndex`.
//!
//! Reading before the barrier, writing a slot by a plain number, writing in a
//! read phase, or writing a padded tile by `LocalIndex` (or a linear one by
//! `PaddedSlot`) does not compile (there is no `get` on a write phase, `set` takes a
//! `LocalIndex`, there is no `set` on a read phase); a tile is neither `Copy` nor
//! `Clone`, so an old phase cannot be kept.
//!
//! # Soundness
//!
//! The raw handles are plain addresses and safe to copy. Their element accesses are
//! `unsafe` with the obligations above, because nothing in the type system can tell
//! which thread last wrote an element.
//!
//! A tile's soundness does not rest on its phases: every tile access is a relaxed
//! atomic load or store of a 4-byte word at a 4-byte-aligned address (a 64-bit
//! number is two of them), bounds-checked, and every bit pattern is a valid value of
//! the tile's types. Because every shared-memory access safe code can make (tiles,
//! and the scratch array of [`crate::collective`]) has that one size, two of them
//! either touch the same word or disjoint ones: they never partially overlap, which
//! Rust's and PTX's memory models would count as a data race even between atomics
//! (two tiles of `u32` and `u64` over the same [`DynamicShared`] bytes, say). So
//! even a misuse that safe code can still write — a tile handed to `sync` on a path
//! only some threads take, two tiles made from one array (handles are `Copy`, so a
//! second `tile()` starts a new phase sequence), a slot never written — gives
//! unspecified values (a 64-bit value may mix the halves of two stores) or a hang,
//! never a data race or a read of an invalid value. What the phases add is that in
//! code every thread of the block runs alike, using one tile per array, every read
//! sees exactly the value its owner stored before the barrier: the values are
//! determined. See `docs/SOUNDNESS.md` for the barrier policy.
//!
//! Static arrays are at most [`STATIC_SHARED_MAX_BYTES`] (a compile-time check in
//! [`static_shared!`](crate::static_shared)), so their PTX declarations are exact.
//! A [`DynamicShared`] length comes from `%dynamic_smem_size`, the bytes the
//! launch actually allocated (the driver refuses a launch asking for more than the
//! kernel's limit, which the runtime checks against the device before launching).

use core::marker::PhantomData;

use crate::thread::LocalIndex;
use crate::transpose::PaddedSlot;
use crate::warp::Shuffle;

#[cfg(target_arch = "nvptx64")]
core::arch::global_asm!(".extern .shared .align 16 .b8 __xlog_dynamic_shared[];");

/// A block's statically sized shared array of `N` `T`s. Get one with
/// [`static_shared!`](crate::static_shared).
pub struct SharedArray<T, const N: usize> {
    ptr: *mut T,
    owner: Owner,
    _marker: PhantomData<[T; N]>,
}

impl<T, const N: usize> Clone for SharedArray<T, N> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T, const N: usize> Copy for SharedArray<T, N> {}

impl<T, const N: usize> SharedArray<T, N> {
    /// Wraps the generic address of a shared array.
    ///
    /// # Safety
    ///
    /// Only [`static_shared!`](crate::static_shared) calls this: `ptr` is the generic
    /// address of a `.shared` array of at least `N * size_of::<T>()` bytes, aligned
    /// for `T`.
    #[doc(hidden)]
    #[inline(always)]
    pub unsafe fn __from_shared_ptr(ptr: *mut T) -> Self {
        SharedArray {
            ptr,
            owner: Owner::running(),
            _marker: PhantomData,
        }
    }

    /// Number of elements, `N`.
    #[inline(always)]
    pub const fn len(&self) -> usize {
        N
    }

    /// Whether `N == 0`.
    #[inline(always)]
    pub const fn is_empty(&self) -> bool {
        N == 0
    }

    /// The generic address of the first element.
    #[inline(always)]
    pub fn as_mut_ptr(&self) -> *mut T {
        self.ptr
    }

    /// The block that made this handle.
    #[inline(always)]
    pub(crate) fn owner(&self) -> Owner {
        self.owner
    }

    /// Reads element `i`.
    ///
    /// # Safety
    ///
    /// 1. `i < N`;
    /// 2. element `i` was initialised (shared memory starts undefined);
    /// 3. no other thread writes element `i` concurrently (a barrier separates
    ///    their write from this read).
    #[inline(always)]
    pub unsafe fn read(&self, i: usize) -> T
    where
        T: Copy,
    {
        self.owner.check();
        check_index(i, N);
        // SAFETY: obligation 1 keeps the access inside the array; 2 and 3 make the
        // read defined.
        unsafe { self.ptr.add(i).read() }
    }

    /// Writes element `i`.
    ///
    /// # Safety
    ///
    /// 1. `i < N`;
    /// 2. no other thread reads or writes element `i` concurrently (a barrier
    ///    separates their access from this write).
    #[inline(always)]
    pub unsafe fn write(&self, i: usize, value: T) {
        self.owner.check();
        check_index(i, N);
        // SAFETY: obligation 1 keeps the access inside the array; 2 excludes a race.
        unsafe { self.ptr.add(i).write(value) }
    }
}

impl<T: Shuffle, const N: usize> SharedArray<T, N> {
    /// The array as a [`Tile`] in its write phase, slots named by [`LocalIndex`]
    /// (see the module docs).
    #[inline(always)]
    pub fn tile(self) -> Tile<T, Writing> {
        Tile::new(self.ptr, N, self.owner)
    }

    /// The array as the padded staging [`Tile`] of a `TILE × TILE` transpose, in its
    /// write phase: slots named by the [`PaddedSlot<TILE>`](PaddedSlot)s of
    /// [`TransposeTile::loads`](crate::transpose::TransposeTile::loads) only. `N`
    /// must be at least `TILE · (TILE + 1)`
    /// ([`TransposeTile::SLOTS`](crate::transpose::TransposeTile::SLOTS)), checked
    /// when the call is compiled to code:
    ///
    /// ```compile_fail
    /// let _ = xlog_device::static_shared!(S: [u32; 32 * 32]).padded_tile::<32>();
    /// ```
    #[inline(always)]
    pub fn padded_tile<const TILE: usize>(self) -> Tile<T, Writing, Padded<TILE>> {
        const {
            assert!(
                TILE > 0 && N / TILE > TILE,
                "a padded transpose tile needs `TILE * (TILE + 1)` slots"
            )
        };
        Tile::new(self.ptr, N, self.owner)
    }
}

impl<T, const N: usize> core::fmt::Debug for SharedArray<T, N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        crate::view::debug_ptr_len(f, "SharedArray", self.ptr, N)
    }
}

/// Declares a block-shared array and evaluates to its [`SharedArray`] handle:
/// `let tile = static_shared!(TILE: [f32; 256]);`.
///
/// The element type and length must be concrete (not generic parameters of the
/// enclosing function): the array is a module-scope `.shared` variable, allocated
/// once per block for each kernel that uses it. Its contents start undefined.
#[macro_export]
// The expansion contains inline PTX, unstable on nvptx: let it compile in kernel
// crates that do not enable `asm_experimental_arch` themselves.
#[cfg_attr(
    target_arch = "nvptx64",
    allow_internal_unstable(asm_experimental_arch)
)]
macro_rules! static_shared {
    ($name:ident : [$t:ty; $n:expr]) => {{
        const __XLOG_LEN: usize = $crate::shared::__static_len::<$t>($n);
        #[cfg(target_arch = "nvptx64")]
        $crate::__core::arch::global_asm!(
            $crate::__core::concat!(
                ".shared .align {align} .b8 __xlog_shared_", $crate::__core::env!("CARGO_CRATE_NAME"), "_",
                $crate::__core::stringify!($name), "_", $crate::__core::line!(), "_", $crate::__core::column!(), "[{size}];"
            ),
            align = const $crate::shared::__align_of::<$t>(),
            size = const $crate::shared::__size_of_array::<$t>(__XLOG_LEN),
        );
        #[cfg(target_arch = "nvptx64")]
        let __xlog_ptr: *mut $t = {
            let p: u64;
            // SAFETY: `cvta.shared.u64` converts the address of the array declared
            // just above to a generic address; it touches no memory.
            unsafe {
                $crate::__core::arch::asm!(
                    $crate::__core::concat!(
                        "cvta.shared.u64 {p}, __xlog_shared_", $crate::__core::env!("CARGO_CRATE_NAME"), "_",
                        $crate::__core::stringify!($name), "_", $crate::__core::line!(), "_", $crate::__core::column!(), ";"
                    ),
                    p = out(reg64) p,
                    options(pure, nomem, nostack)
                )
            };
            p as *mut $t
        };
        // In the simulator each invocation is keyed by the address of this static,
        // whose distinct contents keep it from being merged with another's.
        #[cfg(not(target_arch = "nvptx64"))]
        let __xlog_ptr: *mut $t = {
            static __XLOG_SITE: $crate::shared::__SharedSite = $crate::shared::__SharedSite($crate::__core::concat!(
                $crate::__core::file!(), ":", $crate::__core::line!(), ":", $crate::__core::column!(), ":",
                $crate::__core::stringify!($name)
            ));
            $crate::shared::__host_shared::<$t>(&__XLOG_SITE, __XLOG_LEN)
        };
        // SAFETY: the pointer addresses the `.shared` array declared above, sized and
        // aligned for `__XLOG_LEN` values of the element type.
        unsafe { $crate::shared::SharedArray::<$t, __XLOG_LEN>::__from_shared_ptr(__xlog_ptr) }
    }};
}

/// The most bytes one [`static_shared!`](crate::static_shared) array may hold:
/// 48 KiB (`0xc000`), the static shared memory ptxas accepts per kernel.
pub const STATIC_SHARED_MAX_BYTES: usize = 0xc000;

/// `n`, after checking at compile time that `n` `T`s fit in
/// [`STATIC_SHARED_MAX_BYTES`].
///
/// The limit is not only ptxas's: PTX sizes are 32-bit in ptxas and the driver, so
/// an array of 2^32 bytes or more would be declared modulo 2^32, smaller than the
/// length a tile bounds-checks against.
#[doc(hidden)]
pub const fn __static_len<T>(n: usize) -> usize {
    match core::mem::size_of::<T>().checked_mul(n) {
        Some(bytes) if bytes <= STATIC_SHARED_MAX_BYTES => n,
        _ => panic!(
            "a `static_shared!` array may hold at most 48 KiB (0xc000 bytes, the static shared \
             memory of a kernel); use `DynamicShared` with the kernel's `shared = ..` setting \
             for more"
        ),
    }
}

#[doc(hidden)]
pub const fn __align_of<T>() -> usize {
    let a = core::mem::align_of::<T>();
    if a < 4 {
        4
    } else {
        a
    }
}

#[doc(hidden)]
pub const fn __size_of_array<T>(n: usize) -> usize {
    let bytes = core::mem::size_of::<T>() * n;
    // PTX rejects zero-length static arrays.
    if bytes == 0 {
        1
    } else {
        bytes
    }
}

/// The identity of one [`static_shared!`](crate::static_shared) invocation in the
/// simulator: a `static` holding its place in the source.
#[doc(hidden)]
#[cfg(not(target_arch = "nvptx64"))]
pub struct __SharedSite(pub &'static str);

/// The simulated block's array for `site`, of `len` `T`s (see the module docs of
/// [`crate::sim`]).
#[doc(hidden)]
#[cfg(not(target_arch = "nvptx64"))]
#[track_caller]
pub fn __host_shared<T>(site: &'static __SharedSite, len: usize) -> *mut T {
    let key = core::ptr::from_ref(site) as usize;
    crate::sim::static_shared(key, __size_of_array::<T>(len), __align_of::<T>()).cast::<T>()
}

/// The bound check of the unchecked accessors ([`SharedArray::read`] and the like):
/// a `debug_assert!` on the GPU, always on in the simulator, where an out-of-bounds
/// index panics like a slice's.
#[inline(always)]
#[track_caller]
fn check_index(i: usize, len: usize) {
    #[cfg(target_arch = "nvptx64")]
    debug_assert!(i < len);
    #[cfg(not(target_arch = "nvptx64"))]
    if i >= len {
        crate::panic::cold::out_of_bounds("shared array ", len, i);
    }
}

/// The block a shared-memory handle was made in, which every access through the
/// handle checks.
///
/// In the simulator shared memory is a host allocation per worker, which the
/// worker's next block refills and the launch's end frees, and safe host code can
/// keep a handle past its block (in a `thread_local!`): the check turns what would
/// read another block's array or freed memory into a panic. It holds the running
/// block's [`number`](crate::sim::block_number), never reused; 0 marks memory that
/// is not simulated shared memory (the unit tests' tiles over ordinary arrays),
/// usable only outside a launch. On the GPU a handle cannot outlive its block (no
/// thread-locals, shared memory is per block in hardware): the type is empty and the
/// check does nothing, so the device layout and code are unchanged.
#[derive(Clone, Copy)]
pub(crate) struct Owner {
    #[cfg(not(target_arch = "nvptx64"))]
    block: u64,
}

impl Owner {
    /// The block running now (in the simulator: 0 outside a launch).
    #[inline(always)]
    fn running() -> Self {
        Owner {
            #[cfg(not(target_arch = "nvptx64"))]
            block: crate::sim::block_number(),
        }
    }

    /// Ordinary host memory, for tests: usable only outside a launch.
    #[cfg(all(test, not(target_arch = "nvptx64")))]
    pub(crate) const UNSIMULATED: Owner = Owner { block: 0 };

    /// Panics unless the block running now made the handle.
    #[inline(always)]
    #[track_caller]
    pub(crate) fn check(self) {
        #[cfg(not(target_arch = "nvptx64"))]
        if self.block != crate::sim::block_number() {
            used_outside_its_block();
        }
    }
}

/// Panics: a shared-memory handle was used in another block or after its launch.
#[cfg(not(target_arch = "nvptx64"))]
#[cold]
#[inline(never)]
#[track_caller]
fn used_outside_its_block() -> ! {
    panic!(
        "a shared-memory handle was used outside the block that made it: shared memory \
         lives only while its block runs, so a tile, `SharedWords` or shared array kept \
         past it (in a `thread_local!`, say) cannot be used"
    )
}

/// The launch's dynamic shared memory viewed as `T`s: CUDA's
/// `extern __shared__ T buf[];`.
pub struct DynamicShared<T> {
    ptr: *mut T,
    len: usize,
    owner: Owner,
}

impl<T> Clone for DynamicShared<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for DynamicShared<T> {}

impl<T> DynamicShared<T> {
    /// The dynamic shared memory of this launch: `len()` is the launch's dynamic
    /// shared bytes divided by `size_of::<T>()`. The base is 16-byte aligned, so `T`
    /// may need at most that alignment.
    #[inline(always)]
    pub fn get() -> Self {
        const {
            assert!(
                core::mem::align_of::<T>() <= 16,
                "dynamic shared memory is 16-byte aligned"
            )
        };
        device_or_sim!(
            device: {
                let (p, bytes): (u64, u32);
                // SAFETY: reads the address of the extern shared array this crate
                // declares and the %dynamic_smem_size register; no memory is touched.
                unsafe {
                    core::arch::asm!(
                        "cvta.shared.u64 {p}, __xlog_dynamic_shared;",
                        "mov.u32 {n}, %dynamic_smem_size;",
                        p = out(reg64) p, n = out(reg32) bytes,
                        options(pure, nomem, nostack)
                    )
                };
                let size = core::mem::size_of::<T>();
                DynamicShared {
                    ptr: p as *mut T,
                    len: if size == 0 { 0 } else { bytes as usize / size },
                    owner: Owner::running(),
                }
            },
            sim: { let (p, bytes) = crate::sim::dynamic_shared();
                let size = core::mem::size_of::<T>();
                DynamicShared {
                    ptr: p.cast::<T>(),
                    len: bytes.checked_div(size).unwrap_or(0),
                    owner: Owner::running(),
                } }
        )
    }

    /// Number of whole `T`s that fit.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no `T` fits (the launch asked for too little dynamic shared memory).
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The generic address of the first element.
    #[inline(always)]
    pub fn as_mut_ptr(&self) -> *mut T {
        self.ptr
    }

    /// The block that made this handle.
    #[inline(always)]
    pub(crate) fn owner(&self) -> Owner {
        self.owner
    }

    /// Reads element `i`.
    ///
    /// # Safety
    ///
    /// As [`SharedArray::read`], with `len()` as the bound.
    #[inline(always)]
    pub unsafe fn read(&self, i: usize) -> T
    where
        T: Copy,
    {
        self.owner.check();
        check_index(i, self.len);
        // SAFETY: the caller keeps `i` in bounds and the read race-free.
        unsafe { self.ptr.add(i).read() }
    }

    /// Writes element `i`.
    ///
    /// # Safety
    ///
    /// As [`SharedArray::write`], with `len()` as the bound.
    #[inline(always)]
    pub unsafe fn write(&self, i: usize, value: T) {
        self.owner.check();
        check_index(i, self.len);
        // SAFETY: the caller keeps `i` in bounds and the write race-free.
        unsafe { self.ptr.add(i).write(value) }
    }
}

impl<T: Shuffle> DynamicShared<T> {
    /// The launch's dynamic shared memory as a [`Tile`] of `len()` slots in its write
    /// phase, slots named by [`LocalIndex`] (see the module docs).
    #[inline(always)]
    pub fn tile(self) -> Tile<T, Writing> {
        Tile::new(self.ptr, self.len, self.owner)
    }

    /// The launch's dynamic shared memory as the padded staging [`Tile`] of a
    /// `TILE × TILE` transpose (see [`SharedArray::padded_tile`]); a slot past
    /// `len()` panics when stored or read.
    #[inline(always)]
    pub fn padded_tile<const TILE: usize>(self) -> Tile<T, Writing, Padded<TILE>> {
        Tile::new(self.ptr, self.len, self.owner)
    }
}

impl<T> core::fmt::Debug for DynamicShared<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        crate::view::debug_ptr_len(f, "DynamicShared", self.ptr, self.len)
    }
}

/// The write phase of a [`Tile`]: each thread stores into the slots it owns.
#[derive(Debug)]
pub enum Writing {}

/// The read phase of a [`Tile`]: any thread reads any slot.
#[derive(Debug)]
pub enum Reading {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Linear {}
    impl<const TILE: usize> Sealed for super::Padded<TILE> {}
}

/// How the slots of a [`Tile`] are handed out to the threads of its block in a write
/// phase: the witness type that names them. Implemented by [`Linear`] and
/// [`Padded`] only.
pub trait Layout: sealed::Sealed {
    /// The witness naming a slot this thread owns in a write phase.
    type Slot;

    #[doc(hidden)]
    fn __index(slot: Self::Slot) -> usize;
}

/// The layout of `tile()`: slot `s` belongs to thread `s mod blockDim.x`, named by
/// its [`LocalIndex`] (`thread::local_index()`, `thread::block_stride(len)`).
#[derive(Debug)]
pub enum Linear {}

impl Layout for Linear {
    type Slot = LocalIndex;

    #[inline(always)]
    fn __index(slot: LocalIndex) -> usize {
        slot.get()
    }
}

/// The layout of `padded_tile::<TILE>()`: the `TILE` rows of `TILE + 1` slots a
/// transpose stages a tile in, slot `r·(TILE + 1) + c` belonging to the thread that
/// loads item `r·TILE + c` of the tile, named by its [`PaddedSlot<TILE>`](PaddedSlot)
/// from [`TransposeTile::loads`](crate::transpose::TransposeTile::loads).
#[derive(Debug)]
pub enum Padded<const TILE: usize> {}

impl<const TILE: usize> Layout for Padded<TILE> {
    type Slot = PaddedSlot<TILE>;

    #[inline(always)]
    fn __index(slot: PaddedSlot<TILE>) -> usize {
        slot.get()
    }
}

/// A block's shared array of 32- or 64-bit numbers (`u32`, `i32`, `f32`, `u64`,
/// `i64`, `f64`), used in phases, its slots handed out by its [`Layout`] `L`: see
/// the module docs.
///
/// # Soundness
///
/// See the module docs: every access is a relaxed atomic of 4-byte words of an
/// in-bounds slot, so no use of a tile is a data race, even against a tile of
/// another type over the same bytes; the phases make the values deterministic in
/// uniform code, and the layout keeps one tile's write phase to one kind of slot
/// witness, each held by one thread of the block. A tile is `!Send`, `!Sync` and
/// not `Clone`: each thread keeps its own, in one phase at a time.
pub struct Tile<T: Shuffle, Phase, L: Layout = Linear> {
    ptr: *mut T,
    len: usize,
    owner: Owner,
    _phase: PhantomData<(*const Phase, T, L)>,
}

impl<T: Shuffle, L: Layout> Tile<T, Writing, L> {
    /// A write phase over `len` slots at `ptr`, which the callers take from a
    /// [`SharedArray`] or [`DynamicShared`] handle with its `owner` (so the slots
    /// lie in a shared array aligned for `T`).
    #[inline(always)]
    fn new(ptr: *mut T, len: usize, owner: Owner) -> Self {
        Tile {
            ptr,
            len,
            owner,
            _phase: PhantomData,
        }
    }
}

impl<T: Shuffle, P, L: Layout> Tile<T, P, L> {
    /// Number of slots.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the tile has no slots.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline(always)]
    #[track_caller]
    fn slot(&self, i: usize) -> *mut T {
        self.owner.check();
        // SAFETY: the tile's `len` slots lie inside the shared array it was made from,
        // which exists while its block runs (checked above).
        unsafe { crate::view::checked_element(self.ptr, self.len, i, "shared tile ") }
    }
}

impl<T: Shuffle, L: Layout> Tile<T, Writing, L> {
    /// Stores `v` into slot `i`, which this thread owns: a [`LocalIndex`] for a
    /// [`Linear`] tile, a [`PaddedSlot`] for a [`Padded`] one.
    ///
    /// # Panics
    ///
    /// When `i >= len()`.
    #[inline(always)]
    #[track_caller]
    pub fn set(&mut self, i: L::Slot, v: T) {
        let p = self.slot(L::__index(i));
        // SAFETY: `p` is an in-bounds slot of a shared array aligned for `T` (so to
        // 4 bytes), and every safe access to shared memory is a 4-byte atomic on an
        // aligned word.
        unsafe { store_word(p, v) }
    }

    /// Waits at the block barrier ([`sync_threads`](crate::barrier::sync_threads)):
    /// every store of the write phase is then visible to every thread of the block.
    /// Every thread of the block must call it.
    #[inline(always)]
    pub fn sync(self) -> Tile<T, Reading, L> {
        crate::barrier::sync_threads();
        Tile {
            ptr: self.ptr,
            len: self.len,
            owner: self.owner,
            _phase: PhantomData,
        }
    }
}

impl<T: Shuffle, L: Layout> Tile<T, Reading, L> {
    /// Reads slot `i` (any slot).
    ///
    /// # Panics
    ///
    /// When `i >= len()`.
    #[inline(always)]
    #[track_caller]
    pub fn get(&self, i: usize) -> T {
        let p = self.slot(i);
        // SAFETY: as in `set`.
        unsafe { load_word(p) }
    }

    /// Waits at the block barrier, after which every thread has finished its reads,
    /// and returns the tile to a write phase. Every thread of the block must call it.
    #[inline(always)]
    pub fn sync(self) -> Tile<T, Writing, L> {
        crate::barrier::sync_threads();
        Tile {
            ptr: self.ptr,
            len: self.len,
            owner: self.owner,
            _phase: PhantomData,
        }
    }
}

impl<T: Shuffle, P, L: Layout> core::fmt::Debug for Tile<T, P, L> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        crate::view::debug_ptr_len(f, "Tile", self.ptr, self.len)
    }
}

/// A relaxed atomic load of a 32- or 64-bit number, as 32-bit words.
///
/// Every shared-memory access safe code can reach goes through this function and
/// [`store_word`], and each is one or two relaxed atomic accesses of a 4-byte word at
/// a 4-byte-aligned address: two of them either cover the same bytes or none, so no
/// pair of unsynchronised accesses can partially overlap (which Rust's and PTX's
/// memory models would make a data race). A 64-bit value is two words, low word
/// first; a value read while another thread writes it may mix the halves of two
/// stores, which is still a valid number of every `Shuffle` type.
///
/// # Safety
///
/// 1. On the device, `p` is a generic address of the calling block's shared
///    memory (it is converted to a `.shared` address); on the host, any pointer;
/// 2. `p` is valid for reads and writes of `T` and aligned to 4 bytes;
/// 3. every concurrent access to the bytes of `*p` is a 4-byte atomic on a word
///    that `p` is split into.
#[inline(always)]
pub(crate) unsafe fn load_word<T: Shuffle>(p: *mut T) -> T {
    let words = p.cast::<u32>();
    // SAFETY: obligations 1 to 3; the first word of `T` is 4 bytes, aligned to 4.
    let lo = unsafe { word::load(words) };
    let hi = if T::__WIDE {
        // SAFETY: as above; `T` is 8 bytes, so the second word is inside it.
        unsafe { word::load(words.add(1)) }
    } else {
        0
    };
    T::__from_bits(lo, hi)
}

/// A relaxed atomic store of a 32- or 64-bit number, as 32-bit words (see
/// [`load_word`]).
///
/// # Safety
///
/// As [`load_word`].
#[inline(always)]
pub(crate) unsafe fn store_word<T: Shuffle>(p: *mut T, v: T) {
    let (lo, hi) = v.__to_bits();
    let words = p.cast::<u32>();
    // SAFETY: obligations 1 to 3; the first word of `T` is 4 bytes, aligned to 4.
    unsafe { word::store(words, lo) };
    if T::__WIDE {
        // SAFETY: as above; `T` is 8 bytes, so the second word is inside it.
        unsafe { word::store(words.add(1), hi) };
    }
}

/// A relaxed atomic wrapping add to a word of shared memory, returning the old
/// value: the simulator's (on the GPU, `SharedWords` adds through `window.rs`).
///
/// # Safety
///
/// As [`load_word`], for a `u32`.
#[cfg(not(target_arch = "nvptx64"))]
#[inline(always)]
pub(crate) unsafe fn fetch_add_word(p: *mut u32, v: u32) -> u32 {
    // SAFETY: forwarded obligations.
    unsafe { word::fetch_add(p, v) }
}

/// A relaxed atomic unsigned minimum (`MIN`) or maximum into a word of shared
/// memory, returning the old value.
///
/// # Safety
///
/// As [`load_word`], for a `u32`.
#[inline(always)]
pub(crate) unsafe fn fetch_extreme_word<const MIN: bool>(p: *mut u32, v: u32) -> u32 {
    if MIN {
        // SAFETY: forwarded obligations.
        unsafe { word::fetch_min(p, v) }
    } else {
        // SAFETY: forwarded obligations.
        unsafe { word::fetch_max(p, v) }
    }
}

/// A relaxed atomic `f32` addition into a word of shared memory, returning the old
/// value.
///
/// # Safety
///
/// As [`load_word`], for an `f32`.
#[inline(always)]
pub(crate) unsafe fn fetch_add_f32_word(p: *mut f32, v: f32) -> f32 {
    // SAFETY: forwarded obligations.
    unsafe { word::fetch_add_f32(p, v) }
}

/// The 4-byte accesses behind [`load_word`], [`store_word`], [`fetch_add_word`],
/// [`fetch_extreme_word`] and [`fetch_add_f32_word`].
///
/// On the device they are PTX `ld` / `st` / `atom` with `.relaxed.cta` semantics in
/// the `.shared` state space (`LDS`, `STS`, `ATOMS` in SASS). Every thread that can
/// reach a block's shared memory belongs to that block, so CTA scope makes any two
/// of these accesses to one word *morally strong* in PTX's memory model: they never
/// race, as with the wider scopes `core::sync::atomic` would give, which lower to
/// generic-address `.sys` accesses (`LD.E.STRONG.SYS`, not `LDS`). On the host
/// (the simulator and unit tests) they are `core::sync::atomic` operations.
///
/// This rests on no launch using thread-block clusters: xlog sets no cluster
/// dimensions and has no `mapa` / `.shared::cluster` access, so no other block can
/// address these words. Adding either needs `.cluster` scope here.
mod word {
    #[cfg(target_arch = "nvptx64")]
    mod device {
        /// The `.shared` window address of `p`, a generic address of shared memory.
        #[inline(always)]
        fn shared(p: *mut u32) -> u32 {
            let a: u32;
            // SAFETY: address arithmetic only; nothing is read or written.
            unsafe {
                core::arch::asm!(
                    "{{ .reg .b64 t; cvta.to.shared.u64 t, {p}; cvt.u32.u64 {a}, t; }}",
                    p = in(reg64) p,
                    a = out(reg32) a,
                    options(pure, nomem, nostack)
                )
            };
            a
        }

        /// # Safety
        /// `p` is an aligned word of this block's shared memory, every concurrent
        /// access to which is atomic.
        #[inline(always)]
        pub(in super::super) unsafe fn load(p: *mut u32) -> u32 {
            let r: u32;
            // SAFETY: the caller's obligations; a 4-byte relaxed atomic load.
            unsafe {
                core::arch::asm!(
                    "ld.relaxed.cta.shared.b32 {r}, [{a}];",
                    r = out(reg32) r,
                    a = in(reg32) shared(p),
                    options(nostack)
                )
            };
            r
        }

        /// # Safety
        /// As [`load`].
        #[inline(always)]
        pub(in super::super) unsafe fn store(p: *mut u32, v: u32) {
            // SAFETY: the caller's obligations; a 4-byte relaxed atomic store.
            unsafe {
                core::arch::asm!(
                    "st.relaxed.cta.shared.b32 [{a}], {v};",
                    a = in(reg32) shared(p),
                    v = in(reg32) v,
                    options(nostack)
                )
            };
        }

        /// # Safety
        /// As [`load`].
        #[inline(always)]
        pub(in super::super) unsafe fn fetch_min(p: *mut u32, v: u32) -> u32 {
            let r: u32;
            // SAFETY: the caller's obligations; a 4-byte relaxed atomic minimum.
            unsafe {
                core::arch::asm!(
                    "atom.relaxed.cta.shared.min.u32 {r}, [{a}], {v};",
                    r = out(reg32) r,
                    a = in(reg32) shared(p),
                    v = in(reg32) v,
                    options(nostack)
                )
            };
            r
        }

        /// # Safety
        /// As [`load`].
        #[inline(always)]
        pub(in super::super) unsafe fn fetch_max(p: *mut u32, v: u32) -> u32 {
            let r: u32;
            // SAFETY: the caller's obligations; a 4-byte relaxed atomic maximum.
            unsafe {
                core::arch::asm!(
                    "atom.relaxed.cta.shared.max.u32 {r}, [{a}], {v};",
                    r = out(reg32) r,
                    a = in(reg32) shared(p),
                    v = in(reg32) v,
                    options(nostack)
                )
            };
            r
        }

        /// # Safety
        /// As [`load`], for an `f32`.
        #[inline(always)]
        pub(in super::super) unsafe fn fetch_add_f32(p: *mut f32, v: f32) -> f32 {
            let r: f32;
            // SAFETY: the caller's obligations; a 4-byte relaxed atomic addition.
            unsafe {
                core::arch::asm!(
                    "atom.relaxed.cta.shared.add.f32 {r}, [{a}], {v};",
                    r = out(reg32) r,
                    a = in(reg32) shared(p.cast::<u32>()),
                    v = in(reg32) v,
                    options(nostack)
                )
            };
            r
        }
    }
    #[cfg(target_arch = "nvptx64")]
    pub(super) use device::{fetch_add_f32, fetch_max, fetch_min, load, store};

    #[cfg(not(target_arch = "nvptx64"))]
    mod host {
        use core::sync::atomic::{AtomicU32, Ordering::Relaxed};

        /// # Safety
        /// `p` is valid and aligned, and every concurrent access to it is atomic.
        #[inline(always)]
        pub(in super::super) unsafe fn load(p: *mut u32) -> u32 {
            // SAFETY: the caller's obligations.
            unsafe { AtomicU32::from_ptr(p) }.load(Relaxed)
        }

        /// # Safety
        /// As [`load`].
        #[inline(always)]
        pub(in super::super) unsafe fn store(p: *mut u32, v: u32) {
            // SAFETY: the caller's obligations.
            unsafe { AtomicU32::from_ptr(p) }.store(v, Relaxed)
        }

        /// # Safety
        /// As [`load`].
        #[inline(always)]
        pub(in super::super) unsafe fn fetch_add(p: *mut u32, v: u32) -> u32 {
            // SAFETY: the caller's obligations.
            unsafe { AtomicU32::from_ptr(p) }.fetch_add(v, Relaxed)
        }

        /// # Safety
        /// As [`load`].
        #[inline(always)]
        pub(in super::super) unsafe fn fetch_min(p: *mut u32, v: u32) -> u32 {
            // SAFETY: the caller's obligations.
            unsafe { AtomicU32::from_ptr(p) }.fetch_min(v, Relaxed)
        }

        /// # Safety
        /// As [`load`].
        #[inline(always)]
        pub(in super::super) unsafe fn fetch_max(p: *mut u32, v: u32) -> u32 {
            // SAFETY: the caller's obligations.
            unsafe { AtomicU32::from_ptr(p) }.fetch_max(v, Relaxed)
        }

        /// # Safety
        /// As [`load`], for an `f32`.
        #[inline(always)]
        pub(in super::super) unsafe fn fetch_add_f32(p: *mut f32, v: f32) -> f32 {
            // SAFETY: the caller's obligations; an `f32` is one aligned word.
            let word = unsafe { AtomicU32::from_ptr(p.cast::<u32>()) };
            let old = word
                .fetch_update(Relaxed, Relaxed, |b| {
                    Some((f32::from_bits(b) + v).to_bits())
                })
                .unwrap_or_else(|b| b);
            f32::from_bits(old)
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    pub(super) use host::{fetch_add, fetch_add_f32, fetch_max, fetch_min, load, store};
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thread::local_witness;

    #[test]
    fn tile_slots_round_trip_as_atomic_words() {
        let mut mem = [0u64; 4];
        let mut t: Tile<f64, Writing> = Tile {
            ptr: mem.as_mut_ptr().cast::<f64>(),
            len: 4,
            owner: Owner::UNSIMULATED,
            _phase: PhantomData,
        };
        t.set(local_witness(1), -2.5);
        t.set(local_witness(3), 7.0);
        // Host-side phase change without the device barrier.
        let r: Tile<f64, Reading> = Tile {
            ptr: t.ptr,
            len: t.len,
            owner: t.owner,
            _phase: PhantomData,
        };
        assert_eq!((r.get(1), r.get(3), r.get(0)), (-2.5, 7.0, 0.0));
        let mut words = [0u32; 2];
        let mut w: Tile<i32, Writing> = Tile {
            ptr: words.as_mut_ptr().cast::<i32>(),
            len: 2,
            owner: Owner::UNSIMULATED,
            _phase: PhantomData,
        };
        w.set(local_witness(0), -3);
        assert_eq!(words[0] as i32, -3);
    }

    #[test]
    fn a_padded_tile_takes_the_slots_of_loads() {
        let mut mem = [0u32; 20];
        let mut t: Tile<u32, Writing, Padded<4>> =
            Tile::new(mem.as_mut_ptr(), 20, Owner::UNSIMULATED);
        t.set(crate::transpose::padded_witness(6), 9);
        t.set(crate::transpose::padded_witness(19), 4);
        assert_eq!((mem[6], mem[19]), (9, 4));
    }

    #[test]
    fn wide_slots_are_two_words_low_first() {
        let mut words = [0u32; 4];
        let mut t: Tile<u64, Writing> = Tile {
            ptr: words.as_mut_ptr().cast::<u64>(),
            len: 2,
            owner: Owner::UNSIMULATED,
            _phase: PhantomData,
        };
        t.set(local_witness(1), 0x1122_3344_5566_7788);
        assert_eq!(words, [0, 0, 0x5566_7788, 0x1122_3344]);
        words[0] = 0xdead_beef;
        words[1] = 0xffff_ffff;
        // SAFETY: `words` holds two `u64`s' worth of aligned words, used by this
        // thread only.
        let v = unsafe { load_word(words.as_mut_ptr().cast::<i64>()) };
        assert_eq!(v, -0x2152_4111);
    }

    #[test]
    fn static_arrays_up_to_48_kib_are_accepted() {
        assert_eq!(__static_len::<u32>(STATIC_SHARED_MAX_BYTES / 4), 0x3000);
        assert_eq!(__static_len::<u64>(0), 0);
    }

    #[test]
    #[should_panic(expected = "at most 48 KiB")]
    fn a_static_array_past_48_kib_is_refused() {
        __static_len::<u32>(STATIC_SHARED_MAX_BYTES / 4 + 1);
    }

    #[test]
    #[should_panic(expected = "at most 48 KiB")]
    fn a_static_array_whose_size_overflows_is_refused() {
        // 2^61 + 1 eight-byte elements are 2^64 + 8 bytes, which wraps to 8.
        __static_len::<u64>((1 << 61) + 1);
    }

    #[test]
    #[should_panic(expected = "shared tile index out of bounds: the len is 2 but the index is 2")]
    fn tile_bounds_are_checked() {
        let mut mem = [0u32; 2];
        let mut t: Tile<u32, Writing> = Tile {
            ptr: mem.as_mut_ptr(),
            len: 2,
            owner: Owner::UNSIMULATED,
            _phase: PhantomData,
        };
        t.set(local_witness(2), 1);
    }
}
