//! Several GPUs: communicators over NCCL, collectives and point-to-point transfers
//! as typed, fenced operations on [`DeviceBuffer`](crate::DeviceBuffer)s.
//!
//! ```no_run
//! use xlog_runtime::nccl::{Communicator, Group, ReduceOp};
//! use xlog_runtime::Runtime;
//! # fn main() -> xlog_runtime::Result<()> {
//! let runtimes = [Runtime::get(0)?, Runtime::get(1)?];
//! let comms = Communicator::init_all(&runtimes)?;        // one rank per device
//! let streams = [runtimes[0].stream()?, runtimes[1].stream()?];
//! let mut bufs = [runtimes[0].upload(&[1.0f32; 4])?, runtimes[1].upload(&[2.0f32; 4])?];
//! let [b0, b1] = &mut bufs;
//! // Every rank's part in one group: one thread drives both devices.
//! Group::new()
//!     .all_reduce_in_place(&comms[0], &streams[0], b0, ReduceOp::Sum)
//!     .all_reduce_in_place(&comms[1], &streams[1], b1, ReduceOp::Sum)
//!     .launch()?;
//! comms[0].wait(&streams[0], std::time::Duration::from_secs(30))?;
//! assert_eq!(b0.download(&streams[0])?, vec![3.0; 4]);
//! # Ok(()) }
//! ```
//!
//! # Fencing
//!
//! A collective is one more piece of stream work: each rank's part goes through
//! the same recorder as a kernel launch (its send buffers recorded as read, its
//! receive buffers as written, an in-place buffer as read and written), so it
//! waits for the kernels and copies that wrote its inputs on other streams, and
//! later work on other streams, frees included, waits for it. A [`Group`] checks
//! every part (devices, lengths, the communicators' state, and that the ranks of
//! one process agree, whichever thread issues their parts) before anything is
//! queued, queues each part's waits, queues the NCCL calls between one
//! `ncclGroupStart` / `ncclGroupEnd` pair, and commits every part.
//!
//! # Failures
//!
//! NCCL's errors become [`Error::Nccl`](crate::Error::Nccl) with NCCL's message.
//! Collective work waits on the peers: a peer that died or never issues its
//! part leaves the stream waiting forever. [`Communicator::wait`] waits for a
//! stream with a timeout, polling the communicator's asynchronous error
//! (`ncclCommGetAsyncError`) meanwhile; on an error or at the timeout it aborts
//! the communicator (`ncclCommAbort`, which ends its kernels) and returns the
//! error. A failed communicator refuses further work and is aborted, not
//! destroyed, when dropped.
//!
//! Which waits are bounded depends on how the communicator was made:
//! - [`Communicator::init_rank_within`] makes a nonblocking one: its join, each
//!   [`Group::launch`]'s wait for NCCL to queue the work (a launch that fails
//!   partway aborts it) and [`Communicator::wait`] all end in an error by the
//!   caller's timeout;
//! - [`Communicator::init_rank`] and [`Communicator::init_all`] make blocking ones:
//!   the join waits for every rank, and NCCL's own calls inside a launch (which
//!   connect the peers on first use) can wait for a peer that stopped, holding
//!   the communicator's lock; only [`Communicator::wait`] is bounded;
//! - dropping a communicator that has not failed destroys it
//!   (`ncclCommDestroy`), which waits for its queued work: wait for that work
//!   with a timeout, or [`abort`](Communicator::abort), before dropping one whose
//!   peers may not issue their part.
//!
//! # On the simulator
//!
//! With `XLOG_BACKEND=sim` and `XLOG_SIM_DEVICES=N`, [`Communicator::init_all`]
//! makes a simulated clique: collectives and transfers run on the simulated
//! streams, matched across ranks in issue order as NCCL matches them, and the
//! hazard detector checks them like any other operation.

mod agree;
mod comm;
mod env;
pub(crate) mod ffi;
mod group;
mod poll;

pub use comm::{Communicator, UniqueId, EXCHANGE_TIMEOUT};
pub use env::{ProcessEnv, UNIQUE_ID_ENV, UNIQUE_ID_FILE_ENV};
pub use ffi::NCCL_ENV;
pub use group::Group;

use xlog_device::DeviceCopy;

/// The NCCL library in use, loaded now if it was not yet: its path and version
/// (`ncclGetVersion`: 22803 for 2.28.3). [`Error::NcclNotFound`](crate::Error::NcclNotFound)
/// says where xlog looked (see [`NCCL_ENV`]) and what to install.
pub fn library() -> crate::Result<(&'static str, u32)> {
    ffi::library()
}

/// A reduction operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReduceOp {
    /// The sum (wrapping for integers, as on the device).
    Sum,
    /// The product (wrapping for integers).
    Prod,
    /// The maximum.
    Max,
    /// The minimum.
    Min,
}

impl ReduceOp {
    /// NCCL's `ncclRedOp_t`.
    pub(crate) fn raw(self) -> i32 {
        match self {
            ReduceOp::Sum => 0,
            ReduceOp::Prod => 1,
            ReduceOp::Max => 2,
            ReduceOp::Min => 3,
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// An element type NCCL reduces: `i8`, `u8`, `i32`, `u32`, `i64`, `u64`, `f32`,
/// `f64`, and with the `half` feature `half::f16` and `half::bf16` (each reduction
/// step rounded to the type, as NCCL's kernels do). Collectives that only move
/// data (broadcast, all-gather, all-to-all, send and receive) take any
/// [`DeviceCopy`] type.
pub trait Reducible: DeviceCopy + sealed::Sealed {
    #[doc(hidden)]
    const __DTYPE: ffi::DataType;
    #[doc(hidden)]
    fn __combine(self, other: Self, op: i32) -> Self;
}

macro_rules! reducible {
    ($($t:ty => $d:ident, $sum:expr, $prod:expr;)*) => {$(
        impl sealed::Sealed for $t {}
        impl Reducible for $t {
            const __DTYPE: ffi::DataType = ffi::DataType::$d;
            #[inline]
            fn __combine(self, other: Self, op: i32) -> Self {
                let (sum, prod): (fn($t, $t) -> $t, fn($t, $t) -> $t) = ($sum, $prod);
                match op {
                    0 => sum(self, other),
                    1 => prod(self, other),
                    2 => if other > self { other } else { self },
                    _ => if other < self { other } else { self },
                }
            }
        }
    )*};
}

reducible! {
    i8 => I8, i8::wrapping_add, i8::wrapping_mul;
    u8 => U8, u8::wrapping_add, u8::wrapping_mul;
    i32 => I32, i32::wrapping_add, i32::wrapping_mul;
    u32 => U32, u32::wrapping_add, u32::wrapping_mul;
    i64 => I64, i64::wrapping_add, i64::wrapping_mul;
    u64 => U64, u64::wrapping_add, u64::wrapping_mul;
    f32 => F32, |a, b| a + b, |a, b| a * b;
    f64 => F64, |a, b| a + b, |a, b| a * b;
}

#[cfg(feature = "half")]
reducible! {
    half::f16 => F16, |a, b| half::f16::from_f32(a.to_f32() + b.to_f32()),
        |a, b| half::f16::from_f32(a.to_f32() * b.to_f32());
    half::bf16 => BF16, |a, b| half::bf16::from_f32(a.to_f32() + b.to_f32()),
        |a, b| half::bf16::from_f32(a.to_f32() * b.to_f32());
}

/// The simulator's reduction for `T` (a [`crate::sim::Reducer`]).
///
/// # Safety
/// `acc` and `x` each hold `count` elements of `T` (any alignment).
pub(crate) unsafe fn reduce_as<T: Reducible>(acc: *mut u8, x: *const u8, count: usize, op: i32) {
    for i in 0..count {
        // SAFETY: the caller's obligation; unaligned accesses, since the bytes may
        // be a staging vector of `u8`.
        unsafe {
            let a = acc.cast::<T>().add(i);
            let v = a
                .read_unaligned()
                .__combine(x.cast::<T>().add(i).read_unaligned(), op);
            a.write_unaligned(v);
        }
    }
}
