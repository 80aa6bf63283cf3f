//! Warp-level operations: shuffles, votes, reductions and the warp barrier.
//!
//! These wrap PTX's `.sync` warp instructions
//! ([`shfl.sync`](https://docs.nvidia.com/cuda/parallel-thread-execution/#data-movement-and-conversion-instructions-shfl-sync),
//! [`vote.sync`](https://docs.nvidia.com/cuda/parallel-thread-execution/#parallel-synchronization-and-communication-instructions-vote-sync),
//! [`redux.sync`](https://docs.nvidia.com/cuda/parallel-thread-execution/#parallel-synchronization-and-communication-instructions-redux-sync)),
//! the equivalents of CUDA's `__shfl_*_sync`, `__all_sync`, `__any_sync`,
//! `__ballot_sync`, `__reduce_*_sync` and `__syncwarp`.
//!
//! They are `unsafe`: PTX leaves the behaviour undefined when the calling thread is
//! not in `mask`, or when a thread named in `mask` does not execute a matching
//! instruction with the same mask (for example because it returned early at the end
//! of a partial last block). Every function here has the same obligations:
//!
//! # Safety (all functions)
//!
//! 1. the calling thread's lane is set in `mask`;
//! 2. every lane set in `mask` is a live (not exited) thread of this warp that
//!    executes this same operation, with the same `mask`, before any of them
//!    proceeds past it.
//!
//! Use [`FULL_MASK`] when the whole warp participates (block size a multiple of 32
//! and no early return before the call), or [`active_mask`] to name the threads that
//! are converged here.

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

/// Threads per warp on every NVIDIA GPU.
pub const WARP_SIZE: u32 = 32;

/// The mask naming all 32 lanes.
pub const FULL_MASK: u32 = 0xffff_ffff;

/// Values a shuffle can move: 32-bit values in one `shfl.sync`, 64-bit values in two.
pub trait Shuffle: Copy + sealed::Sealed {
    #[doc(hidden)]
    fn __to_bits(self) -> (u32, u32);
    #[doc(hidden)]
    fn __from_bits(lo: u32, hi: u32) -> Self;
    #[doc(hidden)]
    const __WIDE: bool;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! shuffle32 {
    ($($t:ty => |$v:ident| $to:expr, |$b:ident| $from:expr;)*) => {$(
        impl sealed::Sealed for $t {}
        impl Shuffle for $t {
            #[inline(always)]
            fn __to_bits(self) -> (u32, u32) { let $v = self; ($to, 0) }
            #[inline(always)]
            fn __from_bits($b: u32, _: u32) -> Self { $from }
            const __WIDE: bool = false;
        }
    )*};
}

shuffle32! {
    u32 => |v| v, |b| b;
    i32 => |v| v as u32, |b| b as i32;
    f32 => |v| v.to_bits(), |b| f32::from_bits(b);
}

macro_rules! shuffle64 {
    ($($t:ty => |$v:ident| $to:expr, |$b:ident| $from:expr;)*) => {$(
        impl sealed::Sealed for $t {}
        impl Shuffle for $t {
            #[inline(always)]
            fn __to_bits(self) -> (u32, u32) { let $v = self; let bits: u64 = $to; (bits as u32, (bits >> 32) as u32) }
            #[inline(always)]
            fn __from_bits(lo: u32, hi: u32) -> Self { let $b = (lo as u64) | ((hi as u64) << 32); $from }
            const __WIDE: bool = true;
        }
    )*};
}

shuffle64! {
    u64 => |v| v, |b| b;
    i64 => |v| v as u64, |b| b as i64;
    f64 => |v| v.to_bits(), |b| f64::from_bits(b);
}

macro_rules! shuffle_fn {
    ($(#[$doc:meta])* $name:ident, $mode:literal, $clamp:literal, $lane:ident, $sim:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// See the module docs: the caller is in `mask`, and every lane in `mask`
        /// executes this call with the same `mask`.
        #[inline(always)]
        pub unsafe fn $name<T: Shuffle>(mask: u32, value: T, $lane: u32) -> T {
            device_or_sim!(
                device: {
                    let (lo, hi) = value.__to_bits();
                    let shfl = |v: u32| -> u32 {
                        let r: u32;
                        // SAFETY: the caller upholds the module's obligations 1 and 2;
                        // no memory is accessed.
                        unsafe {
                            asm!(
                                concat!("shfl.sync.", $mode, ".b32 {r}, {v}, {l}, ", $clamp, ", {m};"),
                                r = out(reg32) r, v = in(reg32) v, l = in(reg32) $lane, m = in(reg32) mask,
                                options(nomem, nostack)
                            )
                        };
                        r
                    };
                    let lo = shfl(lo);
                    // All lanes take the same branch: `__WIDE` is a property of `T`.
                    let hi = if T::__WIDE { shfl(hi) } else { 0 };
                    T::__from_bits(lo, hi)
                },
                sim: { let (lo, hi) = value.__to_bits();
                let r = crate::sim::warp_exchange(
                    concat!("warp::", stringify!($name)),
                    crate::sim::WarpOp::Shuffle(crate::sim::ShuffleMode::$sim),
                    mask,
                    lo as u64 | (hi as u64) << 32,
                    $lane,
                );
                T::__from_bits(r as u32, (r >> 32) as u32) }
            )
        }
    };
}

shuffle_fn!(
    /// `__shfl_sync`: the value `value` holds on lane `src_lane` (mod 32).
    shuffle_idx, "idx", "0x1f", src_lane, Idx
);
shuffle_fn!(
    /// `__shfl_up_sync`: the value of lane `lane - delta`; lanes below `delta` get their
    /// own value back.
    shuffle_up, "up", "0", delta, Up
);
shuffle_fn!(
    /// `__shfl_down_sync`: the value of lane `lane + delta`; lanes past 31 get their own
    /// value back.
    shuffle_down, "down", "0x1f", delta, Down
);
shuffle_fn!(
    /// `__shfl_xor_sync`: the value of lane `lane ^ lane_mask` (butterfly exchange).
    shuffle_xor, "bfly", "0x1f", lane_mask, Xor
);

macro_rules! vote_pred {
    ($(#[$doc:meta])* $name:ident, $op:literal, $sim:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// See the module docs.
        #[inline(always)]
        pub unsafe fn $name(mask: u32, pred: bool) -> bool {
            device_or_sim!(
                device: {
                    let r: u32;
                    // SAFETY: the caller upholds the module's obligations; no memory is
                    // accessed and the predicate registers are scoped to the block.
                    unsafe {
                        asm!(
                            concat!("{{ .reg .pred %p, %q; setp.ne.u32 %p, {v}, 0; vote.sync.", $op, ".pred %q, %p, {m}; selp.u32 {r}, 1, 0, %q; }}"),
                            v = in(reg32) pred as u32, m = in(reg32) mask, r = out(reg32) r,
                            options(nomem, nostack)
                        )
                    };
                    r != 0
                },
                sim: { crate::sim::warp_exchange(
                    concat!("warp::", stringify!($name)),
                    crate::sim::WarpOp::$sim,
                    mask,
                    pred as u64,
                    0,
                ) != 0 }
            )
        }
    };
}

vote_pred!(
    /// `__all_sync`: whether `pred` is true on every lane of `mask`.
    all, "all", All
);
vote_pred!(
    /// `__any_sync`: whether `pred` is true on any lane of `mask`.
    any, "any", Any
);

/// `__ballot_sync`: bit `k` is set when lane `k` is in `mask` and passed `true`.
///
/// # Safety
///
/// See the module docs.
#[inline(always)]
pub unsafe fn ballot(mask: u32, pred: bool) -> u32 {
    device_or_sim!(
        device: {
            let r: u32;
            // SAFETY: the caller upholds the module's obligations; no memory is accessed.
            unsafe {
                asm!(
                    "{{ .reg .pred %p; setp.ne.u32 %p, {v}, 0; vote.sync.ballot.b32 {r}, %p, {m}; }}",
                    v = in(reg32) pred as u32, m = in(reg32) mask, r = out(reg32) r,
                    options(nomem, nostack)
                )
            };
            r
        },
        sim: { crate::sim::warp_exchange("warp::ballot", crate::sim::WarpOp::Ballot, mask, pred as u64, 0) as u32 }
    )
}

/// The lanes of `mask` whose bit `bit` of `label` equals the calling lane's (the
/// calling lane included): one ballot, inverted on the lanes where the bit is
/// clear, with the bit tested as a predicate (one step of CUB's `MatchAny`). Bits
/// of the result outside `mask` are unspecified.
///
/// # Safety
///
/// See the module docs.
#[inline(always)]
pub unsafe fn agree_on_bit(mask: u32, label: u32, bit: u32) -> u32 {
    device_or_sim!(
        device: {
            let r: u32;
            // SAFETY: the caller upholds the module's obligations; no memory is accessed
            // and the registers are scoped to the block.
            unsafe {
                asm!(
                    "{{ .reg .pred %p; .reg .b32 %t; and.b32 %t, {l}, {b}; setp.ne.u32 %p, %t, 0; vote.sync.ballot.b32 {r}, %p, {m}; @!%p not.b32 {r}, {r}; }}",
                    l = in(reg32) label, b = in(reg32) 1u32 << (bit % 32), m = in(reg32) mask, r = out(reg32) r,
                    options(nomem, nostack)
                )
            };
            r
        },
        sim: {
            let set = label >> (bit % 32) & 1 == 1;
            let votes = crate::sim::warp_exchange("warp::agree_on_bit", crate::sim::WarpOp::Ballot, mask, set as u64, 0) as u32;
            if set { votes } else { !votes }
        }
    )
}

/// `__activemask()`: the lanes currently executing together with this one. Safe: it
/// has no participation requirement. The simulator, which does not model
/// convergence, returns the lanes of the warp that exist and have not exited.
#[inline(always)]
pub fn active_mask() -> u32 {
    device_or_sim!(
        device: {
            let r: u32;
            // SAFETY: `activemask` has no preconditions and touches no memory.
            unsafe { asm!("activemask.b32 {r};", r = out(reg32) r, options(nomem, nostack)) };
            r
        },
        sim: { crate::sim::live_lanes("warp::active_mask") }
    )
}

/// `__syncwarp(mask)`: waits for the lanes of `mask`, and orders their memory
/// accesses (shared memory written before is visible to them after).
///
/// # Safety
///
/// See the module docs.
#[inline(always)]
pub unsafe fn sync_warp(mask: u32) {
    device_or_sim!(
        device: {
            // SAFETY: the caller upholds the module's obligations. No `nomem`: this is a
            // memory barrier for the compiler as well.
            unsafe { asm!("bar.warp.sync {m};", m = in(reg32) mask, options(nostack)) }
        },
        sim: { crate::sim::warp_exchange("warp::sync_warp", crate::sim::WarpOp::Sync, mask, 0, 0); }
    )
}

macro_rules! redux {
    ($(#[$doc:meta])* $name:ident, $t:ty, $op:literal, $sim:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// See the module docs.
        #[inline(always)]
        pub unsafe fn $name(mask: u32, value: $t) -> $t {
            device_or_sim!(
                device: {
                    let r: $t;
                    // SAFETY: the caller upholds the module's obligations; no memory is
                    // accessed. `redux.sync` needs sm_80, the minimum xlog targets.
                    unsafe {
                        asm!(concat!("redux.sync.", $op, " {r}, {v}, {m};"),
                            r = out(reg32) r, v = in(reg32) value, m = in(reg32) mask, options(nomem, nostack))
                    };
                    r
                },
                sim: { crate::sim::warp_exchange(
                    concat!("warp::", stringify!($name)),
                    crate::sim::WarpOp::Reduce(crate::sim::Reduce::$sim),
                    mask,
                    value as u32 as u64,
                    0,
                ) as u32 as $t }
            )
        }
    };
}

redux!(
    /// `__reduce_add_sync` on `u32`: the wrapping sum over the lanes of `mask`.
    reduce_add_u32, u32, "add.u32", AddU32
);
redux!(
    /// `__reduce_min_sync` on `u32`.
    reduce_min_u32, u32, "min.u32", MinU32
);
redux!(
    /// `__reduce_max_sync` on `u32`.
    reduce_max_u32, u32, "max.u32", MaxU32
);
redux!(
    /// `__reduce_min_sync` on `i32`.
    reduce_min_i32, i32, "min.s32", MinI32
);
redux!(
    /// `__reduce_max_sync` on `i32`.
    reduce_max_i32, i32, "max.s32", MaxI32
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_values_round_trip_through_bits() {
        let v = -1.5e300f64;
        let (lo, hi) = v.__to_bits();
        assert_eq!(f64::__from_bits(lo, hi), v);
        let (lo, hi) = (-7i64).__to_bits();
        assert_eq!(i64::__from_bits(lo, hi), -7);
        assert_eq!(f32::__from_bits(2.5f32.__to_bits().0, 0), 2.5);
    }
}
