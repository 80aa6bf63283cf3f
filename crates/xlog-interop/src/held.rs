//! What an export keeps alive: a buffer moved out of xlog, or a shared one.

use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use xlog_runtime::{Access, DeviceBuffer, DeviceCopy};

use crate::error::Result;

/// Where a lent buffer goes when its consumer releases it.
pub(crate) type GiveBack<T> = Box<dyn FnOnce(DeviceBuffer<T>) + Send>;

/// A buffer lent to one consumer: handed to `back` when dropped (after the
/// deleter recorded the consumer's use, or when the export is refused).
pub(crate) struct Lent<T: DeviceCopy> {
    buf: Option<DeviceBuffer<T>>,
    back: Option<GiveBack<T>>,
}

impl<T: DeviceCopy> Lent<T> {
    pub(crate) fn new(buf: DeviceBuffer<T>, back: GiveBack<T>) -> Lent<T> {
        Lent {
            buf: Some(buf),
            back: Some(back),
        }
    }
}

impl<T: DeviceCopy> Drop for Lent<T> {
    fn drop(&mut self) {
        if let (Some(buf), Some(back)) = (self.buf.take(), self.back.take()) {
            back(buf);
        }
    }
}

/// The buffer behind an export, alive (and counted by the runtime's budget and
/// statistics) until the consumer releases it.
// Held once per export, inside a heap context: the size difference costs nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Held<T: DeviceCopy> {
    /// Moved out of xlog: the consumer may write it.
    Owned(DeviceBuffer<T>),
    /// Lent: out of xlog until the consumer releases it, then given back. The
    /// consumer may write it.
    Lent(Lent<T>),
    /// Shared with xlog, which can only read it through its `Arc`; the consumer
    /// promised (unsafely) to honour the read-only flag.
    Shared(Arc<DeviceBuffer<T>>),
}

impl<T: DeviceCopy> Held<T> {
    pub(crate) fn buffer(&self) -> &DeviceBuffer<T> {
        match self {
            Held::Owned(b) => b,
            Held::Lent(l) => l.buf.as_ref().expect("a lent buffer is held until dropped"),
            Held::Shared(b) => b,
        }
    }

    /// The access the consumer gets.
    pub(crate) fn access(&self) -> Access {
        match self {
            Held::Owned(_) | Held::Lent(_) => Access::ReadWrite,
            Held::Shared(_) => Access::Read,
        }
    }
}

/// `range` of a buffer of `len` elements as (start, count).
pub(crate) fn resolve(range: impl RangeBounds<usize>, len: usize) -> Result<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => Some(s),
        Bound::Excluded(&s) => s.checked_add(1),
        Bound::Unbounded => Some(0),
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1),
        Bound::Excluded(&e) => Some(e),
        Bound::Unbounded => Some(len),
    };
    match (start, end) {
        (Some(s), Some(e)) if s <= e && e <= len => Ok((s, e - s)),
        _ => Err(xlog_runtime::Error::InvalidArgument {
            what: "export range".into(),
            reason: format!("it is out of bounds for a buffer of {len} elements"),
        }
        .into()),
    }
}
