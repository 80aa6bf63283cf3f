//! Device-side views of kernel buffer parameters.
//!
//! | declared access | device parameter |
//! | --- | --- |
//! | `read(p)` | `&[T]` (shared, immutable: any thread reads any element) |
//! | `write(p)` | [`Out<'_, T>`]: each thread writes the elements its [`ThreadIndex`] names |
//! | `read_write(p)` | [`InOut<'_, T>`]: as `Out`, and reading those elements too |
//!
//! Writes from many GPU threads into one `&mut [T]` would alias, so the write views
//! hand out `&mut T` only for an index witnessed by a [`ThreadIndex`]. Sharing across
//! threads goes through explicit tools instead: [`crate::atomic`] and
//! [`crate::shared`]. A kernel declared `unsafe fn` may take raw access
//! ([`Out::as_mut_ptr`], [`Out::as_mut_slice`]); its launcher is then `unsafe`.
//!
//! # Soundness
//!
//! Every thread of a launch receives its own copy of each view, all pointing at the
//! same buffer, and the host launcher guarantees that no other parameter of the
//! launch aliases a write view's buffer (it holds `&mut DeviceBuffer`). Safe access
//! to elements goes through [`ThreadIndex`] only, and each value of `ThreadIndex` is
//! held by exactly one thread of the launch (see [`crate::thread`]). Two threads can
//! therefore never obtain references to the same element, and within one thread the
//! `&mut self` receiver serialises access as for any Rust collection. Bounds are
//! checked: an out-of-range index panics, like slice indexing.

use core::marker::PhantomData;
use core::ops::{Index, IndexMut};

use crate::thread::ThreadIndex;

/// What indexes a write view: only [`ThreadIndex`], a witness that the element
/// belongs to the calling thread. The trait exists so that indexing a write view with
/// anything else (`out[i.get()]`, `out[5]`) says so, instead of "mismatched types".
///
/// # Soundness
///
/// Sealed: implemented for [`ThreadIndex`] only, and no other crate can add an
/// implementation (for `usize`, say), so every index reaching a write view is a
/// witness.
#[diagnostic::on_unimplemented(
    message = "a write view is indexed by this thread's `ThreadIndex`, not by `{Self}`",
    label = "not a `ThreadIndex`",
    note = "writes go only to elements this thread owns: index with `thread::index_1d()` or an item of `thread::grid_stride(..)` (`out[i] = v`), and read slices with `x[i]` or `x[i.get()]`",
    note = "for writes elsewhere use `xlog::device::atomic` or shared memory, or declare the kernel `unsafe fn` and use `as_mut_ptr()`"
)]
pub trait WriteIndex: sealed::Sealed + Copy {
    #[doc(hidden)]
    fn __witnessed(self) -> usize;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::thread::ThreadIndex {}
}

impl WriteIndex for ThreadIndex {
    #[inline(always)]
    fn __witnessed(self) -> usize {
        self.get()
    }
}

macro_rules! write_view {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        pub struct $name<'a, T> {
            ptr: *mut T,
            len: usize,
            _buffer: PhantomData<&'a mut [T]>,
        }

        impl<'a, T> $name<'a, T> {
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
            /// 3. every thread builds its view from the same `ptr` and `len`.
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
            pub fn get_mut(&mut self, i: ThreadIndex) -> Option<&mut T> {
                let i = i.get();
                if i < self.len {
                    // SAFETY: `i < len` keeps the access in bounds (obligation 1 of
                    // `__from_raw_parts`); `i` is witnessed by this thread's
                    // `ThreadIndex`, so no other thread references element `i`
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

        impl<T, I: WriteIndex> Index<I> for $name<'_, T> {
            type Output = T;

            /// # Panics
            ///
            /// When `i` is out of bounds.
            #[inline(always)]
            #[track_caller]
            fn index(&self, i: I) -> &T {
                let n = i.__witnessed();
                assert!(n < self.len, "index out of bounds: the len is {} but the index is {}", self.len, n);
                // SAFETY: in bounds (checked above, obligation 1); element `n` belongs
                // to this thread's witness, so no other thread writes it.
                unsafe { &*self.ptr.add(n) }
            }
        }

        impl<T, I: WriteIndex> IndexMut<I> for $name<'_, T> {
            /// # Panics
            ///
            /// When `i` is out of bounds.
            #[inline(always)]
            #[track_caller]
            fn index_mut(&mut self, i: I) -> &mut T {
                let n = i.__witnessed();
                assert!(n < self.len, "index out of bounds: the len is {} but the index is {}", self.len, n);
                // SAFETY: as in `get_mut`: in bounds, owned by this thread's witness,
                // and `&mut self` excludes other references from this thread.
                unsafe { &mut *self.ptr.add(n) }
            }
        }

        impl<T> core::fmt::Debug for $name<'_, T> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_struct(stringify!($name)).field("ptr", &self.ptr).field("len", &self.len).finish()
            }
        }
    };
}

write_view!(
    /// The device side of a `write(p)` parameter: each thread writes the elements its
    /// [`ThreadIndex`] witnesses (`out[i] = v`). Reading back what this thread wrote is
    /// allowed; the buffer's prior contents are unspecified for a write-only parameter.
    ///
    /// See the module docs' # Soundness.
    Out
);

write_view!(
    /// The device side of a `read_write(p)` parameter: each thread reads and writes the
    /// elements its [`ThreadIndex`] witnesses (`y[i] = a * x[i.get()] + y[i]`).
    ///
    /// See the module docs' # Soundness.
    InOut
);

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::thread::witness;

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
        let mut v = unsafe { InOut::__from_raw_parts(data.as_mut_ptr(), data.len()) };
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
