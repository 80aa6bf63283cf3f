//! Where a library call's work goes: launched now on a stream ([`Now`]) or
//! recorded into a graph ([`Record`]).
//!
//! Each library call that can record is written once, as a body generic over
//! [`Exec`]: it allocates through it, fills through it, and launches its kernels
//! through a trait of kernel calls that [`kernel_calls!`] implements for both
//! targets from one list (the launcher's `launch` for [`Now`], its `record` for
//! [`Record`]). The public eager function and its `record_*` twin are then one
//! line each.
//!
//! What differs between the targets, and only here:
//!
//! | | [`Now`] | [`Record`] |
//! | --- | --- | --- |
//! | a buffer the call allocates | owned, returned to the caller | zeroed, kept in the caller's [`GraphArena`], lent for the graph's life |
//! | a buffer that must start as `v` | allocated and filled now | a fill node before its first use, so every replay starts from `v` |
//! | an output sized by a device count | the count read back (synchronises) | sized for the most the count can be; the count stays on the device |

use std::ops::Range;

use xlog::{
    AllocTag, BufferView, BufferViewMut, DeviceBuffer, DeviceCopy, Error, GraphArena,
    GraphRecorder, ReadBuffer, Result, Stream, WriteBuffer,
};

/// A target for a library call's work. See the [module docs](self).
pub(crate) trait Exec {
    /// A buffer the call allocates: owned ([`Now`]) or borrowed from the arena for
    /// the graph's life ([`Record`]).
    type Buf<T: DeviceCopy>;
    /// A buffer a kernel reads.
    type In<'a, T: DeviceCopy>: Copy;
    /// A buffer of the caller's that a kernel writes.
    type Out<'a, T: DeviceCopy>;

    /// The stream work is launched on, or the recorder's (allocations are made on
    /// it either way).
    fn stream(&self) -> &Stream;

    /// A new buffer of `len` elements whose contents the call's kernels write
    /// before anything reads them (zeroed when recording, so a graph's buffer reads
    /// as zeros until a replay writes it).
    ///
    /// # Safety
    /// When launching now the memory is uninitialised: every element must be
    /// written by work queued before anything reads it (the obligation of
    /// `Runtime::alloc_uninit`).
    unsafe fn alloc_uninit<T: DeviceCopy>(
        &mut self,
        len: usize,
        tag: AllocTag,
    ) -> Result<Self::Buf<T>>;

    /// A new buffer of `len` elements that holds `value` when the call's work
    /// starts: filled now, or by a fill node at every replay (for the values a
    /// graph's memset sets: see `GraphRecorder::fill`).
    fn filled<T: DeviceCopy>(&mut self, len: usize, value: T) -> Result<Self::Buf<T>>;

    /// A new buffer of `len` zeroed elements (zeroed once: a graph's replays find
    /// what the previous replay left).
    fn zeroed<T: DeviceCopy>(&mut self, len: usize) -> Result<Self::Buf<T>>;

    /// `buf` as an input of a later kernel.
    fn view<T: DeviceCopy>(buf: &Self::Buf<T>) -> Self::In<'_, T>;

    /// `buf` as the output of a later kernel.
    fn view_mut<T: DeviceCopy>(buf: &mut Self::Buf<T>) -> Self::Out<'_, T>;

    /// The number of elements of an input.
    fn len<T: DeviceCopy>(x: &Self::In<'_, T>) -> usize;

    /// The number of elements of an output.
    fn out_len<T: DeviceCopy>(x: &Self::Out<'_, T>) -> usize;

    /// An output as an input of a later kernel.
    fn read_out<'a, T: DeviceCopy>(out: &'a Self::Out<'_, T>) -> Self::In<'a, T>;

    /// Elements `r` of an input. Recording refuses a proper part: a graph holds
    /// its buffers by borrows for its whole life, and a part is a value of the
    /// call's own (see [`Record`]).
    fn slice<'a, T: DeviceCopy>(x: Self::In<'a, T>, r: Range<usize>) -> Result<Self::In<'a, T>>;

    /// `x` for a shorter borrow (what covariance gives a concrete type).
    fn shorten<'a, 'b: 'a, T: DeviceCopy>(x: Self::In<'b, T>) -> Self::In<'a, T>;

    /// Elements `r` of a buffer the call allocated, as an output; as
    /// [`slice`](Exec::slice).
    fn slice_mut<T: DeviceCopy>(
        buf: &mut Self::Buf<T>,
        r: Range<usize>,
    ) -> Result<Self::Out<'_, T>>;

    /// Elements `r` of an output; as [`slice`](Exec::slice).
    fn reslice<'a, T: DeviceCopy>(
        out: &'a mut Self::Out<'_, T>,
        r: Range<usize>,
    ) -> Result<Self::Out<'a, T>>;

    /// `x` passed where a kernel reads none of it: an empty view when launching
    /// now; when recording, the whole buffer (a graph cannot hold a view of none
    /// of it, and declaring a read the kernel does not make only adds ordering).
    fn unread<'a, T: DeviceCopy>(x: Self::In<'a, T>) -> Self::In<'a, T>;

    /// Fills `out` with `value` (a fill node when recording: see
    /// `GraphRecorder::fill` for the values it takes).
    fn fill<T: DeviceCopy>(&mut self, out: &mut Self::Out<'_, T>, value: T) -> Result<()>;

    /// Copies `src` into `dst` (equal lengths).
    fn copy<T: DeviceCopy>(
        &mut self,
        src: Self::In<'_, T>,
        dst: &mut Self::Out<'_, T>,
    ) -> Result<()>;

    /// The length of an output whose size a device count decides, at most `cap`:
    /// [`Now`] runs `count` and reads its one element back (synchronising the
    /// stream); [`Record`] answers `cap` without running it (the call's kernels
    /// leave their own count on the device).
    fn counted_len(
        &mut self,
        cap: usize,
        count: impl FnOnce(&mut Self) -> Result<Self::Buf<u64>>,
    ) -> Result<usize>;
}

/// Work launched now on a stream.
pub(crate) struct Now<'s>(pub(crate) &'s Stream);

impl Now<'_> {
    /// `x` as a kernel's input.
    pub(crate) fn input<'x, T: DeviceCopy>(
        &self,
        x: &'x (impl ReadBuffer<T> + ?Sized),
    ) -> BufferView<'x, T> {
        x.as_view()
    }

    /// `out` as a kernel's output.
    pub(crate) fn output<'x, T: DeviceCopy>(
        &self,
        out: &'x mut (impl WriteBuffer<T> + ?Sized),
    ) -> BufferViewMut<'x, T> {
        out.as_view_mut()
    }
}

impl Exec for Now<'_> {
    type Buf<T: DeviceCopy> = DeviceBuffer<T>;
    type In<'a, T: DeviceCopy> = BufferView<'a, T>;
    type Out<'a, T: DeviceCopy> = BufferViewMut<'a, T>;

    fn stream(&self) -> &Stream {
        self.0
    }

    unsafe fn alloc_uninit<T: DeviceCopy>(
        &mut self,
        len: usize,
        tag: AllocTag,
    ) -> Result<DeviceBuffer<T>> {
        // SAFETY: the caller's obligation.
        unsafe { self.0.runtime()?.alloc_uninit::<T>(self.0, len, tag) }
    }

    fn filled<T: DeviceCopy>(&mut self, len: usize, value: T) -> Result<DeviceBuffer<T>> {
        // SAFETY: the fill writes every element before anything else is queued.
        let mut buf = unsafe { self.alloc_uninit::<T>(len, AllocTag("library call: filled")) }?;
        buf.fill(self.0, value)?;
        Ok(buf)
    }

    fn zeroed<T: DeviceCopy>(&mut self, len: usize) -> Result<DeviceBuffer<T>> {
        self.0.runtime()?.alloc_zeroed_on::<T>(self.0, len)
    }

    fn view<T: DeviceCopy>(buf: &DeviceBuffer<T>) -> BufferView<'_, T> {
        buf.as_view()
    }

    fn view_mut<T: DeviceCopy>(buf: &mut DeviceBuffer<T>) -> BufferViewMut<'_, T> {
        buf.as_view_mut()
    }

    fn len<T: DeviceCopy>(x: &BufferView<'_, T>) -> usize {
        x.len()
    }

    fn out_len<T: DeviceCopy>(x: &BufferViewMut<'_, T>) -> usize {
        x.len()
    }

    fn read_out<'a, T: DeviceCopy>(out: &'a BufferViewMut<'_, T>) -> BufferView<'a, T> {
        out.as_view()
    }

    fn slice<'a, T: DeviceCopy>(x: Self::In<'a, T>, r: Range<usize>) -> Result<Self::In<'a, T>> {
        Ok(x.slice(r))
    }

    fn shorten<'a, 'b: 'a, T: DeviceCopy>(x: BufferView<'b, T>) -> BufferView<'a, T> {
        x
    }

    fn slice_mut<T: DeviceCopy>(
        buf: &mut DeviceBuffer<T>,
        r: Range<usize>,
    ) -> Result<BufferViewMut<'_, T>> {
        Ok(buf.slice_mut(r))
    }

    fn reslice<'a, T: DeviceCopy>(
        out: &'a mut BufferViewMut<'_, T>,
        r: Range<usize>,
    ) -> Result<BufferViewMut<'a, T>> {
        Ok(out.slice_mut(r))
    }

    fn unread<'a, T: DeviceCopy>(x: Self::In<'a, T>) -> Self::In<'a, T> {
        x.slice(0..0)
    }

    fn fill<T: DeviceCopy>(&mut self, out: &mut BufferViewMut<'_, T>, value: T) -> Result<()> {
        out.fill(self.0, value)
    }

    fn copy<T: DeviceCopy>(
        &mut self,
        src: BufferView<'_, T>,
        dst: &mut BufferViewMut<'_, T>,
    ) -> Result<()> {
        dst.copy_from(self.0, &src)
    }

    fn counted_len(
        &mut self,
        _cap: usize,
        count: impl FnOnce(&mut Self) -> Result<DeviceBuffer<u64>>,
    ) -> Result<usize> {
        Ok(count(self)?.download(self.0)?[0] as usize)
    }
}

/// Work recorded into a graph; what the call allocates is kept in `arena`,
/// which outlives the graph.
pub(crate) struct Record<'r, 'g> {
    pub(crate) rec: &'r mut GraphRecorder<'g>,
    pub(crate) arena: &'g GraphArena,
}

impl<'r, 'g> Record<'r, 'g> {
    /// The target for `rec`, allocating into `arena`.
    pub(crate) fn new(rec: &'r mut GraphRecorder<'g>, arena: &'g GraphArena) -> Self {
        Record { rec, arena }
    }

    /// `x` as a kernel's input.
    pub(crate) fn input<T: DeviceCopy>(&self, x: &'g impl ReadBuffer<T>) -> &'g dyn ReadBuffer<T> {
        x
    }

    /// `out` as a kernel's output.
    pub(crate) fn output<T: DeviceCopy>(&self, out: &'g impl WriteBuffer<T>) -> Written<'g, T> {
        Written {
            write: out,
            read: out,
        }
    }
}

/// A buffer a recorded kernel writes, borrowed for the graph's life, with its
/// read side (so a later node can read it without upcasting the borrow).
pub(crate) struct Written<'g, T: DeviceCopy> {
    pub(crate) write: &'g dyn WriteBuffer<T>,
    pub(crate) read: &'g dyn ReadBuffer<T>,
}

impl<T: DeviceCopy> Clone for Written<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: DeviceCopy> Copy for Written<'_, T> {}

/// Whether `r` is all of `len` elements; recording refuses a proper part.
fn whole(what: &str, len: usize, r: Range<usize>) -> Result<()> {
    if r == (0..len) {
        return Ok(());
    }
    Err(Error::Unsupported {
        what: format!("{what} of elements {r:?} of {len} in a recorded library call"),
        reason: "a graph holds its buffers by borrows for its whole life, and a part of one \
                 is a value of the call's own; record inputs that need no parts (for a sort, \
                 at most `sort::PORTION` keys)"
            .into(),
    })
}

impl<'g> Exec for Record<'_, 'g> {
    type Buf<T: DeviceCopy> = &'g DeviceBuffer<T>;
    type In<'a, T: DeviceCopy> = &'g dyn ReadBuffer<T>;
    type Out<'a, T: DeviceCopy> = Written<'g, T>;

    fn stream(&self) -> &Stream {
        self.rec.stream()
    }

    unsafe fn alloc_uninit<T: DeviceCopy>(
        &mut self,
        len: usize,
        _tag: AllocTag,
    ) -> Result<&'g DeviceBuffer<T>> {
        self.zeroed(len)
    }

    fn filled<T: DeviceCopy>(&mut self, len: usize, value: T) -> Result<&'g DeviceBuffer<T>> {
        let buf = self.zeroed::<T>(len)?;
        if len > 0 {
            self.rec.fill(buf, value)?;
        }
        Ok(buf)
    }

    fn zeroed<T: DeviceCopy>(&mut self, len: usize) -> Result<&'g DeviceBuffer<T>> {
        let s = self.rec.stream();
        Ok(self.arena.keep(s.runtime()?.alloc_zeroed_on::<T>(s, len)?))
    }

    fn view<T: DeviceCopy>(buf: &&'g DeviceBuffer<T>) -> &'g dyn ReadBuffer<T> {
        *buf
    }

    fn view_mut<T: DeviceCopy>(buf: &mut &'g DeviceBuffer<T>) -> Written<'g, T> {
        Written {
            write: *buf,
            read: *buf,
        }
    }

    fn len<T: DeviceCopy>(x: &&'g dyn ReadBuffer<T>) -> usize {
        x.arg().len()
    }

    fn out_len<T: DeviceCopy>(x: &Written<'g, T>) -> usize {
        x.read.arg().len()
    }

    fn read_out<'a, T: DeviceCopy>(out: &'a Written<'g, T>) -> &'g dyn ReadBuffer<T> {
        out.read
    }

    fn slice<'a, T: DeviceCopy>(x: Self::In<'a, T>, r: Range<usize>) -> Result<Self::In<'a, T>> {
        whole("a view", x.arg().len(), r)?;
        Ok(x)
    }

    fn shorten<'a, 'b: 'a, T: DeviceCopy>(x: &'g dyn ReadBuffer<T>) -> &'g dyn ReadBuffer<T> {
        x
    }

    fn slice_mut<T: DeviceCopy>(
        buf: &mut &'g DeviceBuffer<T>,
        r: Range<usize>,
    ) -> Result<Written<'g, T>> {
        whole("a view", buf.len(), r)?;
        Ok(Self::view_mut(buf))
    }

    fn reslice<'a, T: DeviceCopy>(
        out: &'a mut Written<'g, T>,
        r: Range<usize>,
    ) -> Result<Written<'g, T>> {
        whole("a view", out.read.arg().len(), r)?;
        Ok(*out)
    }

    fn unread<'a, T: DeviceCopy>(x: Self::In<'a, T>) -> Self::In<'a, T> {
        x
    }

    fn fill<T: DeviceCopy>(&mut self, out: &mut Written<'g, T>, value: T) -> Result<()> {
        self.rec.fill(out.write, value).map(drop)
    }

    fn copy<T: DeviceCopy>(
        &mut self,
        src: &'g dyn ReadBuffer<T>,
        dst: &mut Written<'g, T>,
    ) -> Result<()> {
        self.rec.copy(src, dst.write).map(drop)
    }

    fn counted_len(
        &mut self,
        cap: usize,
        _count: impl FnOnce(&mut Self) -> Result<&'g DeviceBuffer<u64>>,
    ) -> Result<usize> {
        Ok(cap)
    }
}

/// Declares a trait of kernel calls, one method per kernel, and implements it
/// for [`Now`] (the kernel's `launch`) and [`Record`] (its `record`). Each
/// parameter is marked `r` (a buffer read: `Exec::In`), `w` (a buffer the call
/// allocated, written: `&mut Exec::Buf`), `o` (a buffer of the caller's, written:
/// `&mut Exec::Out`) or `v` (a value).
macro_rules! kernel_calls {
    (
        $(#[$doc:meta])*
        trait $name:ident<$($p:ident: $bound:path),*> {
            $(
                $(#[$fdoc:meta])*
                fn $f:ident = $($k:ident)::+ ($($a:ident: $m:ident $t:ty),* $(,)?);
            )*
        }
    ) => {
        $(#[$doc])*
        pub(crate) trait $name<$($p: $bound),*>: $crate::exec::Exec {
            $(
                $(#[$fdoc])*
                #[allow(clippy::too_many_arguments)]
                fn $f(
                    &mut self,
                    cfg: xlog::LaunchConfig,
                    $($a: kernel_calls!(@ty $m $t)),*
                ) -> xlog::Result<()>;
            )*
        }

        impl<$($p: $bound),*> $name<$($p),*> for $crate::exec::Now<'_> {
            $(
                #[allow(clippy::too_many_arguments)]
                fn $f(
                    &mut self,
                    cfg: xlog::LaunchConfig,
                    $($a: kernel_calls!(@ty $m $t)),*
                ) -> xlog::Result<()> {
                    $($k)::+::launch(self.0, cfg, $(kernel_calls!(@now $m $a)),*)
                }
            )*
        }

        impl<$($p: $bound),*> $name<$($p),*> for $crate::exec::Record<'_, '_> {
            $(
                #[allow(clippy::too_many_arguments)]
                fn $f(
                    &mut self,
                    cfg: xlog::LaunchConfig,
                    $($a: kernel_calls!(@ty $m $t)),*
                ) -> xlog::Result<()> {
                    $($k)::+::record(self.rec, cfg, $(kernel_calls!(@rec $m $a)),*).map(drop)
                }
            )*
        }
    };
    (@ty r $t:ty) => { Self::In<'_, $t> };
    (@ty w $t:ty) => { &mut Self::Buf<$t> };
    (@ty o $t:ty) => { &mut Self::Out<'_, $t> };
    (@ty v $t:ty) => { $t };
    (@now r $a:ident) => { &$a };
    (@now w $a:ident) => { $a };
    (@now o $a:ident) => { $a };
    (@now v $a:ident) => { $a };
    (@rec r $a:ident) => { $a };
    (@rec w $a:ident) => { *$a };
    (@rec o $a:ident) => { $a.write };
    (@rec v $a:ident) => { $a };
}
