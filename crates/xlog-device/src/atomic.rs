//! Atomic read-modify-write operations on device memory (global or shared).
//!
//! The equivalents of CUDA's `atomicAdd`, `atomicMin`, `atomicMax`, `atomicExch` and
//! `atomicCAS`: relaxed ordering, at least device (GPU) scope, on 32- and 64-bit integers;
//! `fetch_add` and `swap` also on `f32` and `f64`; `load` and `store` also on `u8`,
//! `u16`, `i8` and `i16`
//! ([PTX `atom`](https://docs.nvidia.com/cuda/parallel-thread-execution/#parallel-synchronization-and-communication-instructions-atom)).
//! Pointers may be generic addresses of global or shared memory. Combine with
//! [`crate::barrier`] fences when other memory must be ordered around them.
//!
//! Loads and stores are `ld` / `st` `.relaxed.gpu` (inline PTX). Integer
//! read-modify-writes go through `core::sync::atomic`, which LLVM lowers to `atom`
//! (GPU scope; compare-exchange to `atom.relaxed.sys.cas`, system scope, with the
//! pinned toolchain; a later LLVM may widen more of them, which stays sound); on
//! the host they are the simulator's atomics. Float addition uses `atom.add.f32` /
//! `atom.add.f64` directly, and a compare-and-swap loop in the simulator.
//!
//! # Safety (all functions)
//!
//! 1. `ptr` is non-null, aligned for `T`, and points to device memory valid for
//!    reads and writes for the duration of the call;
//! 2. every concurrent access to `*ptr` is atomic and made by a thread of the same
//!    GPU (this kernel or another): loads, stores and most read-modify-writes are
//!    GPU-scoped, so the host or a peer device touching the word while a kernel
//!    runs would race with them.

use core::sync::atomic::Ordering::Relaxed;

mod sealed {
    pub trait Sealed {}
}

/// Types with atomic loads and stores (`ld` / `st` `.relaxed.gpu`): `u8`, `u16`,
/// `i8`, `i16`, `u32`, `i32`, `u64`, `i64`, `f32`, `f64`. The element types of atomic views.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no device atomics",
    label = "not one of `u8`, `u16`, `i8`, `i16`, `u32`, `i32`, `u64`, `i64`, `f32`, `f64`",
    note = "atomic views and `xlog::device::atomic` work on 32- and 64-bit integers and floats, and load and store 8- and 16-bit integers"
)]
pub trait AtomicStore: Copy + sealed::Sealed {
    #[doc(hidden)]
    unsafe fn __load(ptr: *mut Self) -> Self;
    #[doc(hidden)]
    unsafe fn __store(ptr: *mut Self, v: Self);
}

/// Types with atomic add and exchange besides loads and stores: `u32`, `i32`,
/// `u64`, `i64`, `f32`, `f64`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no device atomic add or exchange",
    label = "not one of `u32`, `i32`, `u64`, `i64`, `f32`, `f64`",
    note = "`fetch_add` and `swap` work on 32- and 64-bit integers and floats; 8- and 16-bit integers have atomic `load` and `store` only"
)]
pub trait AtomicAdd: AtomicStore {
    #[doc(hidden)]
    unsafe fn __fetch_add(ptr: *mut Self, v: Self) -> Self;
    #[doc(hidden)]
    unsafe fn __swap(ptr: *mut Self, v: Self) -> Self;
}

/// Integers with the full set of atomics: `u32`, `i32`, `u64`, `i64`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no device atomic min / max / bitwise / compare-exchange",
    label = "not one of `u32`, `i32`, `u64`, `i64`",
    note = "floats have atomic `fetch_add`, `swap`, `load` and `store` only"
)]
pub trait AtomicInt: AtomicAdd {
    #[doc(hidden)]
    unsafe fn __fetch_min(ptr: *mut Self, v: Self) -> Self;
    #[doc(hidden)]
    unsafe fn __fetch_max(ptr: *mut Self, v: Self) -> Self;
    #[doc(hidden)]
    unsafe fn __fetch_and(ptr: *mut Self, v: Self) -> Self;
    #[doc(hidden)]
    unsafe fn __fetch_or(ptr: *mut Self, v: Self) -> Self;
    #[doc(hidden)]
    unsafe fn __fetch_xor(ptr: *mut Self, v: Self) -> Self;
    #[doc(hidden)]
    unsafe fn __compare_exchange(ptr: *mut Self, current: Self, new: Self) -> Result<Self, Self>;
}

/// Relaxed loads and stores at GPU scope. `core::sync::atomic` lowers them to
/// PTX's *system* scope (`ld.relaxed.sys`), which also orders against the host and
/// peer devices; the read-modify-write operations are GPU-scoped (`atom` without a
/// scope) or wider, and these are GPU-scoped too: every access a kernel's atomics can
/// meet comes from the same GPU (the runtime fences other streams' work, and no
/// safe path maps device buffers into the host), so the accesses stay morally
/// strong and race-free. On the host (the simulator) they are `core::sync::atomic`.
mod gpu_scope {
    macro_rules! width {
        ($name:ident, $t:ty, $atomic:ident, $reg:ident, $ld:literal, $st:literal) => {
            pub(super) mod $name {
                /// # Safety
                /// As the module's functions: `p` valid and aligned device memory,
                /// every concurrent access to it atomic.
                #[inline(always)]
                pub(in super::super) unsafe fn load(p: *mut $t) -> $t {
                    device_or_sim!(
                        device: {
                            let r: $t;
                            // SAFETY: the caller's obligations.
                            unsafe { core::arch::asm!($ld, r = out($reg) r, p = in(reg64) p, options(nostack)) };
                            r
                        },
                        sim: {
                            // SAFETY: the caller's obligations.
                            unsafe { core::sync::atomic::$atomic::from_ptr(p) }.load(super::Relaxed)
                        }
                    )
                }

                /// # Safety
                /// As [`load`].
                #[inline(always)]
                pub(in super::super) unsafe fn store(p: *mut $t, v: $t) {
                    device_or_sim!(
                        device: {
                            // SAFETY: the caller's obligations.
                            unsafe { core::arch::asm!($st, p = in(reg64) p, v = in($reg) v, options(nostack)) };
                        },
                        sim: {
                            // SAFETY: the caller's obligations.
                            unsafe { core::sync::atomic::$atomic::from_ptr(p) }.store(v, super::Relaxed)
                        }
                    )
                }
            }
        };
    }
    #[cfg(not(target_arch = "nvptx64"))]
    use core::sync::atomic::Ordering::Relaxed;
    // A byte or half-word lives in a 16-bit register; `st.b8` stores its low byte.
    width!(
        w8,
        u8,
        AtomicU8,
        reg16,
        "ld.relaxed.gpu.b8 {r}, [{p}];",
        "st.relaxed.gpu.b8 [{p}], {v};"
    );
    width!(
        w16,
        u16,
        AtomicU16,
        reg16,
        "ld.relaxed.gpu.b16 {r}, [{p}];",
        "st.relaxed.gpu.b16 [{p}], {v};"
    );
    width!(
        w32,
        u32,
        AtomicU32,
        reg32,
        "ld.relaxed.gpu.b32 {r}, [{p}];",
        "st.relaxed.gpu.b32 [{p}], {v};"
    );
    width!(
        w64,
        u64,
        AtomicU64,
        reg64,
        "ld.relaxed.gpu.b64 {r}, [{p}];",
        "st.relaxed.gpu.b64 [{p}], {v};"
    );
}

/// `AtomicStore` for an integer: GPU-scoped loads and stores of its width.
macro_rules! atomic_store {
    ($($t:ty => $bits:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl AtomicStore for $t {
            #[inline(always)]
            unsafe fn __load(ptr: *mut Self) -> Self {
                // SAFETY: the caller upholds the module's obligations; the same bytes
                // as the unsigned integer of their width.
                unsafe { gpu_scope::$bits::load(ptr.cast()) as $t }
            }
            #[inline(always)]
            unsafe fn __store(ptr: *mut Self, v: Self) {
                // SAFETY: as in `__load`.
                unsafe { gpu_scope::$bits::store(ptr.cast(), v as _) }
            }
        }
    )*};
}

atomic_store!(u8 => w8, u16 => w16, i8 => w8, i16 => w16);

macro_rules! atomic_int {
    ($($t:ty => $atomic:ident, $bits:ident),*) => {$(
        atomic_store!($t => $bits);
        impl AtomicAdd for $t {
            #[inline(always)]
            unsafe fn __fetch_add(ptr: *mut Self, v: Self) -> Self {
                // SAFETY: the caller upholds the module's obligations, which are
                // `from_ptr`'s (aligned, valid, only accessed atomically).
                unsafe { core::sync::atomic::$atomic::from_ptr(ptr) }.fetch_add(v, Relaxed)
            }
            #[inline(always)]
            unsafe fn __swap(ptr: *mut Self, v: Self) -> Self {
                // SAFETY: as in `__fetch_add`.
                unsafe { core::sync::atomic::$atomic::from_ptr(ptr) }.swap(v, Relaxed)
            }
        }
        impl AtomicInt for $t {
            #[inline(always)]
            unsafe fn __fetch_min(ptr: *mut Self, v: Self) -> Self {
                // SAFETY: as in `__fetch_add`.
                unsafe { core::sync::atomic::$atomic::from_ptr(ptr) }.fetch_min(v, Relaxed)
            }
            #[inline(always)]
            unsafe fn __fetch_max(ptr: *mut Self, v: Self) -> Self {
                // SAFETY: as in `__fetch_add`.
                unsafe { core::sync::atomic::$atomic::from_ptr(ptr) }.fetch_max(v, Relaxed)
            }
            #[inline(always)]
            unsafe fn __fetch_and(ptr: *mut Self, v: Self) -> Self {
                // SAFETY: as in `__fetch_add`.
                unsafe { core::sync::atomic::$atomic::from_ptr(ptr) }.fetch_and(v, Relaxed)
            }
            #[inline(always)]
            unsafe fn __fetch_or(ptr: *mut Self, v: Self) -> Self {
                // SAFETY: as in `__fetch_add`.
                unsafe { core::sync::atomic::$atomic::from_ptr(ptr) }.fetch_or(v, Relaxed)
            }
            #[inline(always)]
            unsafe fn __fetch_xor(ptr: *mut Self, v: Self) -> Self {
                // SAFETY: as in `__fetch_add`.
                unsafe { core::sync::atomic::$atomic::from_ptr(ptr) }.fetch_xor(v, Relaxed)
            }
            #[inline(always)]
            unsafe fn __compare_exchange(ptr: *mut Self, current: Self, new: Self) -> Result<Self, Self> {
                // SAFETY: as in `__fetch_add`.
                unsafe { core::sync::atomic::$atomic::from_ptr(ptr) }
                    .compare_exchange(current, new, Relaxed, Relaxed)
            }
        }
    )*};
}

atomic_int!(u32 => AtomicU32, w32, i32 => AtomicI32, w32, u64 => AtomicU64, w64, i64 => AtomicI64, w64);

macro_rules! atomic_float {
    ($($t:ty, $bits:ty, $w:ident, $atomic:ident, $add:literal, $reg:ident);*) => {$(
        impl sealed::Sealed for $t {}
        impl AtomicAdd for $t {
            #[inline(always)]
            unsafe fn __fetch_add(ptr: *mut Self, v: Self) -> Self {
                device_or_sim!(
                    device: {
                        let r: $t;
                        // SAFETY: the caller upholds the module's obligations: `ptr` is a
                        // valid, aligned address of global or shared memory, and other
                        // accesses are atomic.
                        unsafe {
                            core::arch::asm!($add, r = out($reg) r, p = in(reg64) ptr, v = in($reg) v, options(nostack))
                        };
                        r
                    },
                    sim: {
                        // SAFETY: as above; a compare-and-swap loop on the bits, as
                        // atomic float addition has no host instruction.
                        let bits = unsafe { core::sync::atomic::$atomic::from_ptr(ptr.cast::<$bits>()) };
                        let mut old = bits.load(Relaxed);
                        loop {
                            let new = (<$t>::from_bits(old) + v).to_bits();
                            match bits.compare_exchange_weak(old, new, Relaxed, Relaxed) {
                                Ok(_) => break <$t>::from_bits(old),
                                Err(found) => old = found,
                            }
                        }
                    }
                )
            }
            #[inline(always)]
            unsafe fn __swap(ptr: *mut Self, v: Self) -> Self {
                // SAFETY: as in `__fetch_add`; same-size integer atomics on the bits.
                let old = unsafe { core::sync::atomic::$atomic::from_ptr(ptr.cast::<$bits>()) }
                    .swap(v.to_bits(), Relaxed);
                <$t>::from_bits(old)
            }
        }
        impl AtomicStore for $t {
            #[inline(always)]
            unsafe fn __load(ptr: *mut Self) -> Self {
                // SAFETY: the caller upholds the module's obligations; the bits as
                // the unsigned integer of their width.
                <$t>::from_bits(unsafe { gpu_scope::$w::load(ptr.cast::<$bits>()) })
            }
            #[inline(always)]
            unsafe fn __store(ptr: *mut Self, v: Self) {
                // SAFETY: as in `__load`.
                unsafe { gpu_scope::$w::store(ptr.cast::<$bits>(), v.to_bits()) }
            }
        }
    )*};
}

atomic_float!(
    f32, u32, w32, AtomicU32, "atom.add.f32 {r}, [{p}], {v};", reg32;
    f64, u64, w64, AtomicU64, "atom.add.f64 {r}, [{p}], {v};", reg64
);

/// `atomicAdd`: adds `v` to `*ptr` (integers wrap), returning the old value.
///
/// # Safety
///
/// See the module docs.
#[inline(always)]
pub unsafe fn fetch_add<T: AtomicAdd>(ptr: *mut T, v: T) -> T {
    // SAFETY: forwarded obligations.
    unsafe { T::__fetch_add(ptr, v) }
}

/// `atomicExch`: stores `v`, returning the old value.
///
/// # Safety
///
/// See the module docs.
#[inline(always)]
pub unsafe fn swap<T: AtomicAdd>(ptr: *mut T, v: T) -> T {
    // SAFETY: forwarded obligations.
    unsafe { T::__swap(ptr, v) }
}

/// An atomic (relaxed) load of `*ptr`.
///
/// # Safety
///
/// See the module docs.
#[inline(always)]
pub unsafe fn load<T: AtomicStore>(ptr: *mut T) -> T {
    // SAFETY: forwarded obligations.
    unsafe { T::__load(ptr) }
}

/// An atomic (relaxed) store of `v` into `*ptr`.
///
/// # Safety
///
/// See the module docs.
#[inline(always)]
pub unsafe fn store<T: AtomicStore>(ptr: *mut T, v: T) {
    // SAFETY: forwarded obligations.
    unsafe { T::__store(ptr, v) }
}

/// `atomicMin`: stores `min(*ptr, v)`, returning the old value.
///
/// # Safety
///
/// See the module docs.
#[inline(always)]
pub unsafe fn fetch_min<T: AtomicInt>(ptr: *mut T, v: T) -> T {
    // SAFETY: forwarded obligations.
    unsafe { T::__fetch_min(ptr, v) }
}

/// `atomicMax`: stores `max(*ptr, v)`, returning the old value.
///
/// # Safety
///
/// See the module docs.
#[inline(always)]
pub unsafe fn fetch_max<T: AtomicInt>(ptr: *mut T, v: T) -> T {
    // SAFETY: forwarded obligations.
    unsafe { T::__fetch_max(ptr, v) }
}

/// `atomicAnd`: stores `*ptr & v`, returning the old value.
///
/// # Safety
///
/// See the module docs.
#[inline(always)]
pub unsafe fn fetch_and<T: AtomicInt>(ptr: *mut T, v: T) -> T {
    // SAFETY: forwarded obligations.
    unsafe { T::__fetch_and(ptr, v) }
}

/// `atomicOr`: stores `*ptr | v`, returning the old value.
///
/// # Safety
///
/// See the module docs.
#[inline(always)]
pub unsafe fn fetch_or<T: AtomicInt>(ptr: *mut T, v: T) -> T {
    // SAFETY: forwarded obligations.
    unsafe { T::__fetch_or(ptr, v) }
}

/// `atomicXor`: stores `*ptr ^ v`, returning the old value.
///
/// # Safety
///
/// See the module docs.
#[inline(always)]
pub unsafe fn fetch_xor<T: AtomicInt>(ptr: *mut T, v: T) -> T {
    // SAFETY: forwarded obligations.
    unsafe { T::__fetch_xor(ptr, v) }
}

/// `atomicCAS`: stores `new` if `*ptr == current`. `Ok(old)` when it did, `Err(old)`
/// with the value found otherwise.
///
/// # Safety
///
/// See the module docs.
#[inline(always)]
pub unsafe fn compare_exchange<T: AtomicInt>(ptr: *mut T, current: T, new: T) -> Result<T, T> {
    // SAFETY: forwarded obligations.
    unsafe { T::__compare_exchange(ptr, current, new) }
}
