//! Shared-memory words addressed by their 32-bit `.shared` window address: the
//! addressing of [`SharedWords`](crate::exchange::SharedWords) on the GPU.
//!
//! A generic pointer into shared memory is 64 bits; every access through one costs
//! a 64-bit multiply-add for the index, a `cvta.to.shared` and a truncation, and a
//! compiler that hoists such addresses keeps each in two registers. The `.shared`
//! window is 32-bit (a block's shared memory is at most 228 KiB), so a handle
//! converts its array's address once, into a [`Base`], and each access adds a
//! 32-bit byte offset to it: what CUDA C++ compiles a `__shared__` index to.
//!
//! The accesses are the same relaxed 4-byte atomics as every other safe shared
//! access (`crate::shared`, # Soundness); only the way their address is computed
//! differs. On the host (the simulator) a [`Base`] is the host pointer itself.

/// A shared array's base address: its `.shared` window address on the GPU, the
/// host pointer in the simulator.
#[cfg(target_arch = "nvptx64")]
pub(crate) type Base = u32;
/// A shared array's base address: its `.shared` window address on the GPU, the
/// host pointer in the simulator.
#[cfg(not(target_arch = "nvptx64"))]
pub(crate) type Base = *mut u8;

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::Base;

    /// The base of the shared array at generic address `p`.
    #[inline(always)]
    pub(crate) fn base<T>(p: *mut T) -> Base {
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

    /// A relaxed 4-byte atomic load of the word `offset` bytes past `base`.
    ///
    /// # Safety
    ///
    /// 1. `base` came from [`base`] of a generic address of this block's shared
    ///    memory, and `offset` bytes past it is an aligned word of the same array;
    /// 2. every concurrent access to that word is atomic.
    #[inline(always)]
    pub(crate) unsafe fn load(base: Base, offset: u32) -> u32 {
        let r: u32;
        // SAFETY: the caller's obligations; a 4-byte relaxed atomic load.
        unsafe {
            core::arch::asm!(
                "ld.relaxed.cta.shared.b32 {r}, [{a}];",
                r = out(reg32) r,
                a = in(reg32) base.wrapping_add(offset),
                options(nostack)
            )
        };
        r
    }

    /// A relaxed 4-byte atomic store (see [`load`]).
    ///
    /// # Safety
    ///
    /// As [`load`].
    #[inline(always)]
    pub(crate) unsafe fn store(base: Base, offset: u32, v: u32) {
        // SAFETY: the caller's obligations; a 4-byte relaxed atomic store.
        unsafe {
            core::arch::asm!(
                "st.relaxed.cta.shared.b32 [{a}], {v};",
                a = in(reg32) base.wrapping_add(offset),
                v = in(reg32) v,
                options(nostack)
            )
        };
    }

    /// A relaxed 4-byte atomic wrapping add, returning the old value (see
    /// [`load`]).
    ///
    /// # Safety
    ///
    /// As [`load`].
    #[inline(always)]
    pub(crate) unsafe fn fetch_add(base: Base, offset: u32, v: u32) -> u32 {
        let r: u32;
        // SAFETY: the caller's obligations; a 4-byte relaxed atomic add.
        unsafe {
            core::arch::asm!(
                "atom.relaxed.cta.shared.add.u32 {r}, [{a}], {v};",
                r = out(reg32) r,
                a = in(reg32) base.wrapping_add(offset),
                v = in(reg32) v,
                options(nostack)
            )
        };
        r
    }
}

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use super::Base;
    use crate::shared::{fetch_add_word, load_word, store_word};

    /// The base of the shared array at host address `p`.
    #[inline(always)]
    pub(crate) fn base<T>(p: *mut T) -> Base {
        p.cast()
    }

    /// The word `offset` bytes past `base`.
    #[inline(always)]
    fn word(base: Base, offset: u32) -> *mut u32 {
        base.wrapping_add(offset as usize).cast()
    }

    /// A relaxed atomic load of the word `offset` bytes past `base`.
    ///
    /// # Safety
    ///
    /// 1. `offset` bytes past `base` is an aligned word of the array `base` came
    ///    from, which is live;
    /// 2. every concurrent access to that word is atomic.
    #[inline(always)]
    pub(crate) unsafe fn load(base: Base, offset: u32) -> u32 {
        // SAFETY: the caller's obligations.
        unsafe { load_word(word(base, offset)) }
    }

    /// A relaxed atomic store (see [`load`]).
    ///
    /// # Safety
    ///
    /// As [`load`].
    #[inline(always)]
    pub(crate) unsafe fn store(base: Base, offset: u32, v: u32) {
        // SAFETY: the caller's obligations.
        unsafe { store_word(word(base, offset), v) }
    }

    /// A relaxed atomic wrapping add, returning the old value (see [`load`]).
    ///
    /// # Safety
    ///
    /// As [`load`].
    #[inline(always)]
    pub(crate) unsafe fn fetch_add(base: Base, offset: u32, v: u32) -> u32 {
        // SAFETY: the caller's obligations.
        unsafe { fetch_add_word(word(base, offset), v) }
    }
}

#[cfg(target_arch = "nvptx64")]
pub(crate) use device::{base, fetch_add, load, store};
#[cfg(not(target_arch = "nvptx64"))]
pub(crate) use host::{base, fetch_add, load, store};
