//! Atomic read-modify-write operations on device memory (global or shared).
//!
//! The equivalents of CUDA's `atomicAdd`, `atomicMin`, `atomicMax`, `atomicExch` and
//! `atomicCAS`: relaxed ordering, device (GPU) scope, on 32- and 64-bit integers;
//! `fetch_add` and `swap` also on `f32` and `f64`
//! ([PTX `atom`](https://docs.nvidia.com/cuda/parallel-thread-execution/#parallel-synchronization-and-communication-instructions-atom)).
//! Pointers may be generic addresses of global or shared memory. Combine with
//! [`crate::barrier`] fences when other memory must be ordered around them.
//!
//! Integer operations go through `core::sync::atomic` (which LLVM lowers to `atom`,
//! and which are the host's atomics in the simulator); float addition uses
//! `atom.add.f32` / `atom.add.f64` directly, and a compare-and-swap loop in the
//! simulator.
//!
//! # Safety (all functions)
//!
//! 1. `ptr` is non-null, aligned for `T`, and points to device memory valid for
//!    reads and writes for the duration of the call;
//! 2. every concurrent access to `*ptr` (from any thread, including the host or other
//!    kernels) is atomic.

use core::sync::atomic::Ordering::Relaxed;

mod sealed {
    pub trait Sealed {}
}

/// Types with atomic add, exchange, load and store: `u32`, `i32`, `u64`, `i64`,
/// `f32`, `f64`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no device atomics",
    label = "not one of `u32`, `i32`, `u64`, `i64`, `f32`, `f64`",
    note = "atomic views and `xlog::device::atomic` work on 32- and 64-bit integers and floats"
)]
pub trait AtomicAdd: Copy + sealed::Sealed {
    #[doc(hidden)]
    unsafe fn __fetch_add(ptr: *mut Self, v: Self) -> Self;
    #[doc(hidden)]
    unsafe fn __swap(ptr: *mut Self, v: Self) -> Self;
    #[doc(hidden)]
    unsafe fn __load(ptr: *mut Self) -> Self;
    #[doc(hidden)]
    unsafe fn __store(ptr: *mut Self, v: Self);
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

macro_rules! atomic_int {
    ($($t:ty => $atomic:ident),*) => {$(
        impl sealed::Sealed for $t {}
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
            #[inline(always)]
            unsafe fn __load(ptr: *mut Self) -> Self {
                // SAFETY: as in `__fetch_add`.
                unsafe { core::sync::atomic::$atomic::from_ptr(ptr) }.load(Relaxed)
            }
            #[inline(always)]
            unsafe fn __store(ptr: *mut Self, v: Self) {
                // SAFETY: as in `__fetch_add`.
                unsafe { core::sync::atomic::$atomic::from_ptr(ptr) }.store(v, Relaxed)
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

atomic_int!(u32 => AtomicU32, i32 => AtomicI32, u64 => AtomicU64, i64 => AtomicI64);

macro_rules! atomic_float {
    ($($t:ty, $bits:ty, $atomic:ident, $add:literal, $reg:ident);*) => {$(
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
            #[inline(always)]
            unsafe fn __load(ptr: *mut Self) -> Self {
                // SAFETY: as in `__swap`.
                let bits = unsafe { core::sync::atomic::$atomic::from_ptr(ptr.cast::<$bits>()) }.load(Relaxed);
                <$t>::from_bits(bits)
            }
            #[inline(always)]
            unsafe fn __store(ptr: *mut Self, v: Self) {
                // SAFETY: as in `__swap`.
                unsafe { core::sync::atomic::$atomic::from_ptr(ptr.cast::<$bits>()) }.store(v.to_bits(), Relaxed)
            }
        }
    )*};
}

atomic_float!(
    f32, u32, AtomicU32, "atom.add.f32 {r}, [{p}], {v};", reg32;
    f64, u64, AtomicU64, "atom.add.f64 {r}, [{p}], {v};", reg64
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
pub unsafe fn load<T: AtomicAdd>(ptr: *mut T) -> T {
    // SAFETY: forwarded obligations.
    unsafe { T::__load(ptr) }
}

/// An atomic (relaxed) store of `v` into `*ptr`.
///
/// # Safety
///
/// See the module docs.
#[inline(always)]
pub unsafe fn store<T: AtomicAdd>(ptr: *mut T, v: T) {
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
