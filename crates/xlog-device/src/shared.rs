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
//!   line and column of the invocation, so each invocation has its own array (shared
//!   by every call of the function containing it, like a `static`).
//!
//! # Soundness
//!
//! The handles themselves are plain addresses and safe to copy. Every access is
//! `unsafe` with the obligations above, because nothing in the type system can tell
//! which thread last wrote an element. Safe block-wide reductions exist as barrier
//! reductions in [`barrier`](crate::barrier); safe shared-memory reductions and
//! scans are not written yet.

use core::marker::PhantomData;

#[cfg(target_arch = "nvptx64")]
core::arch::global_asm!(".extern .shared .align 16 .b8 __xlog_dynamic_shared[];");

/// A block's statically sized shared array of `N` `T`s. Get one with
/// [`static_shared!`](crate::static_shared).
pub struct SharedArray<T, const N: usize> {
    ptr: *mut T,
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
        debug_assert!(i < N);
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
        debug_assert!(i < N);
        // SAFETY: obligation 1 keeps the access inside the array; 2 excludes a race.
        unsafe { self.ptr.add(i).write(value) }
    }
}

impl<T, const N: usize> core::fmt::Debug for SharedArray<T, N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SharedArray")
            .field("ptr", &self.ptr)
            .field("len", &N)
            .finish()
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
        const __XLOG_LEN: usize = $n;
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
        #[cfg(not(target_arch = "nvptx64"))]
        let __xlog_ptr: *mut $t = $crate::shared::__host_shared();
        // SAFETY: the pointer addresses the `.shared` array declared above, sized and
        // aligned for `__XLOG_LEN` values of the element type.
        unsafe { $crate::shared::SharedArray::<$t, __XLOG_LEN>::__from_shared_ptr(__xlog_ptr) }
    }};
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

#[doc(hidden)]
#[cfg(not(target_arch = "nvptx64"))]
pub fn __host_shared<T>() -> *mut T {
    crate::host::unsupported("static_shared!")
}

/// The launch's dynamic shared memory viewed as `T`s: CUDA's
/// `extern __shared__ T buf[];`.
pub struct DynamicShared<T> {
    ptr: *mut T,
    len: usize,
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
        device_only!("shared::DynamicShared::get", {
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
            }
        })
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
        debug_assert!(i < self.len);
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
        debug_assert!(i < self.len);
        // SAFETY: the caller keeps `i` in bounds and the write race-free.
        unsafe { self.ptr.add(i).write(value) }
    }
}

impl<T> core::fmt::Debug for DynamicShared<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DynamicShared")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .finish()
    }
}
