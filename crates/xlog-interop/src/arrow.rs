//! The Arrow C Device Data Interface: export columns as `ArrowDeviceArray`,
//! import device arrays as columns.
//!
//! The embedded `ArrowArray` is arrow-rs's [`FFI_ArrowArray`] (its `release`
//! callback frees what the producer allocated, once; dropping an unreleased one
//! calls it). Only the device wrapper, which arrow-rs does not have, is written
//! here, checked against the header's layout by the tests.
//!
//! An export's `sync_event` points at a CUDA event recorded after the column's
//! pending writes: a consumer waits on it before reading. Arrow arrays are
//! immutable, so the consumer gets read access; it must have finished (or
//! ordered on the device before `release`) its reads when it calls `release`,
//! since the interface carries no stream back to the producer.

use std::ffi::c_void;
use std::panic::AssertUnwindSafe;
use std::ptr::NonNull;
use std::sync::Arc;

use arrow_buffer::Buffer;
use arrow_data::ffi::FFI_ArrowArray;
use arrow_data::ArrayData;
use arrow_schema::ffi::FFI_ArrowSchema;
use xlog_runtime::{DeviceBuffer, ForeignEvent, OwnedEvent, ReadyAfter, Stream};

use crate::column::{check_validity, count_nulls, Column, Origin};
use crate::element::Element;
use crate::error::{InteropError, Result};
use crate::held::Held;

/// `ArrowDeviceType` of CUDA device memory (`ARROW_DEVICE_CUDA`).
pub const ARROW_DEVICE_CUDA: i32 = 2;

/// `struct ArrowDeviceArray` of the Arrow C Device Data Interface.
///
/// Dropping one whose `array` was not released releases it (through
/// [`FFI_ArrowArray`]'s `Drop`).
#[repr(C)]
#[derive(Debug)]
pub struct ArrowDeviceArray {
    /// The array; its buffers are device addresses.
    pub array: FFI_ArrowArray,
    /// The device ordinal.
    pub device_id: i64,
    /// `ArrowDeviceType` ([`ARROW_DEVICE_CUDA`] for CUDA memory).
    pub device_type: i32,
    /// For CUDA, a `CUevent*`: waiting on the event orders the producer's writes
    /// before the consumer's work. Null when nothing needs waiting for.
    pub sync_event: *mut c_void,
    /// Reserved, zero.
    pub reserved: [i64; 3],
}

// SAFETY: the release callback of arrays made here may run on any thread (it
// drops buffers, whose frees are stream-ordered); imported arrays are released
// once, by whichever thread drops the last buffer.
unsafe impl Send for ArrowDeviceArray {}

/// What an exported array keeps alive: the column's buffers and the event its
/// `sync_event` points at.
struct ExportOwner<T: Element> {
    _values: Held<T>,
    _validity: Option<Held<u8>>,
    _event: Option<OwnedEvent>,
    /// The buffers' ranges, registered as exported until the release: importing
    /// them back into xlog meanwhile is refused.
    _marks: Vec<Box<dyn Send + Sync>>,
    /// The `CUevent` that `sync_event` points at.
    event_handle: Box<*mut c_void>,
}

// SAFETY: `event_handle` is a plain handle only read by consumers; the buffers and
// the event are Send + Sync.
unsafe impl<T: Element> Send for ExportOwner<T> {}
// SAFETY: as above.
unsafe impl<T: Element> Sync for ExportOwner<T> {}

/// Export a column as a device array and its schema, with a `sync_event`
/// recorded on `on` after the column's pending writes.
///
/// A column with a validity bitmap has its nulls counted first: the bitmap's
/// first `ceil(len / 8)` bytes are downloaded on `on` (which waits for the
/// column's pending writes and for the copy), and a count other than the
/// column's [`Column::null_count`] is refused ([`InteropError::NullCount`]), as
/// is a bitmap too short for the values or of another device.
///
/// `on` must be a stream of the column's runtime and device: another runtime's
/// stream, or a host placeholder, is refused (an event there would order
/// nothing).
pub fn export<T: Element>(
    column: Column<T>,
    on: &Stream,
) -> Result<(ArrowDeviceArray, FFI_ArrowSchema)> {
    let (values, validity, claimed, _) = column.into_parts();
    let len = values.len();
    let null_count = checked_null_count(&values, validity.as_ref(), claimed, on)?;
    let device = values.block_id().device;
    // One event after both buffers' writes: `on` waits for the values' writes,
    // then for the validity's, and the second record captures both.
    let mut event = Some(values.core().ready_event(on)?);
    if let Some(v) = &validity {
        event = Some(v.core().ready_event(on)?);
    }
    let raw_event = event.as_ref().map_or(std::ptr::null_mut(), |e| e.as_raw());
    let (values_ptr, values_bytes) = (values.device_ptr(), len * std::mem::size_of::<T>());
    let validity_at = validity.as_ref().map(|v| (v.device_ptr(), v.len()));
    let mut marks = vec![values.core().mark_exported()];
    marks.extend(validity.as_ref().map(|v| v.core().mark_exported()));
    let owner: Arc<AssertUnwindSafe<ExportOwner<T>>> = Arc::new(AssertUnwindSafe(ExportOwner {
        _values: Held::Owned(values),
        _validity: validity.map(Held::Owned),
        _event: event,
        _marks: marks,
        event_handle: Box::new(raw_event),
    }));
    let sync_event = if raw_event.is_null() {
        std::ptr::null_mut()
    } else {
        (&*owner.event_handle as *const *mut c_void)
            .cast_mut()
            .cast()
    };
    // SAFETY: each address is valid for its length while `owner` lives, which the
    // buffers keep alive; arrow never dereferences them on this path (validation is
    // skipped and the null count is given).
    let data = unsafe {
        let values_buf = device_buffer(values_ptr, values_bytes, owner.clone());
        let nulls = validity_at.map(|(p, n)| device_buffer(p, n, owner.clone()));
        ArrayData::builder(T::ARROW)
            .len(len)
            .add_buffer(values_buf)
            .null_bit_buffer(nulls)
            .null_count(null_count)
            .build_unchecked()
    };
    let schema = FFI_ArrowSchema::try_from(&T::ARROW).map_err(|e| InteropError::Unsupported {
        what: "Arrow export",
        reason: e.to_string(),
    })?;
    Ok((
        ArrowDeviceArray {
            array: FFI_ArrowArray::new(&data),
            device_id: device as i64,
            device_type: ARROW_DEVICE_CUDA,
            sync_event,
            reserved: [0; 3],
        },
        schema,
    ))
}

/// The number of nulls the bitmap marks among the column's elements, if it is
/// `claimed`; the export hands it to arrow-rs unchecked, which trusts it (with 0
/// it drops the bitmap), so it is counted here from the bitmap itself. The
/// bitmap's length and device are checked again too: the values may have been
/// replaced through [`Column::values_mut`] since the column was made.
fn checked_null_count<T: Element>(
    values: &DeviceBuffer<T>,
    validity: Option<&DeviceBuffer<u8>>,
    claimed: usize,
    on: &Stream,
) -> Result<usize> {
    let len = values.len();
    let counted = match validity {
        None => 0,
        Some(bitmap) => {
            check_validity(values, bitmap)?;
            count_nulls(&bitmap.slice(..len.div_ceil(8)).download(on)?, len)
        }
    };
    if counted != claimed {
        return Err(InteropError::NullCount {
            claimed,
            counted: Some(counted),
            len,
        });
    }
    Ok(counted)
}

/// An arrow `Buffer` over device memory, owned by `owner`.
///
/// # Safety
/// `ptr` is valid for `bytes` bytes while `owner` lives, and nothing reads it on
/// the host.
unsafe fn device_buffer<O: std::panic::RefUnwindSafe + Send + Sync + 'static>(
    ptr: u64,
    bytes: usize,
    owner: Arc<O>,
) -> Buffer {
    let at = NonNull::new(ptr as *mut u8).unwrap_or(NonNull::dangling());
    // SAFETY: the caller's obligations.
    unsafe { Buffer::from_custom_allocation(at, bytes, owner) }
}

/// An imported array, released once the last buffer made from it is dropped.
struct Imported(#[allow(dead_code)] FFI_ArrowArray);

// SAFETY: Arrow requires producers' release callbacks to be callable from any
// thread; nothing else is reached through the array after import.
unsafe impl Send for Imported {}
// SAFETY: as above; shared access reads nothing.
unsafe impl Sync for Imported {}

/// Import a device array of `T` (with its schema) as a column on `on`'s device.
///
/// The array must be CUDA memory of that device, a flat primitive array whose
/// format is `T`'s, with an offset whose validity bits start on a byte boundary.
/// If `sync_event` is set, `on` waits on it. On refusal the array is released
/// once before this returns; on success it is released when the column's last
/// buffer is dropped, after xlog's uses of them.
///
/// # Safety
/// 1. The buffers address `length + offset` elements (and validity bits) on the
///    device, valid until the array is released.
/// 2. If `sync_event` is null, the producer's writes are already ordered before
///    work queued on `on` after this call; otherwise waiting on the event orders
///    them.
/// 3. Nobody writes the memory until the array is released.
/// 4. No buffer of the array is memory of a live xlog buffer (e.g. an array a
///    foreign library made over a buffer's `device_ptr`): one memory would get
///    two xlog buffers whose uses are never fenced against each other.
///
/// Checked, not assumed: lengths, offsets and null counts are non-negative and
/// their byte extents fit the address space, and buffers overlapping a live
/// import, an xlog export or a buffer marked held are refused.
pub unsafe fn import<T: Element>(
    array: ArrowDeviceArray,
    schema: &FFI_ArrowSchema,
    on: &Stream,
) -> Result<Column<T>> {
    const WHAT: &str = "Arrow device array";
    let ArrowDeviceArray {
        array,
        device_id,
        device_type,
        sync_event,
        ..
    } = array;
    let device = on.device_ordinal();
    if array.is_released() {
        return Err(InteropError::Unsupported {
            what: WHAT,
            reason: "the array was already released".into(),
        });
    }
    if device_type != ARROW_DEVICE_CUDA || device_id != device as i64 {
        return Err(InteropError::DeviceMismatch {
            what: WHAT,
            found: if device_type == ARROW_DEVICE_CUDA {
                format!("CUDA device {device_id}")
            } else {
                format!("device type {device_type}")
            },
            expected: device,
        });
    }
    if schema.format() != T::ARROW_FORMAT {
        return Err(InteropError::Dtype {
            what: WHAT,
            found: format!("format {:?}", schema.format()),
            expected: std::any::type_name::<T>(),
        });
    }
    if array.num_buffers() != 2 || array.num_children() != 0 || array.dictionary().is_some() {
        return Err(InteropError::Unsupported {
            what: WHAT,
            reason: format!(
                "{} buffers and {} children: only flat primitive arrays (validity, values) import",
                array.num_buffers(),
                array.num_children()
            ),
        });
    }
    // arrow-rs casts the C fields (`int64_t`) to `usize`: a negative one comes back
    // as 2^63 or more.
    let (len, offset) = (array.len(), array.offset());
    for (field, v) in [("length", len), ("offset", offset)] {
        if v > i64::MAX as usize {
            return Err(InteropError::Unsupported {
                what: WHAT,
                reason: format!("the {field} is negative ({})", v as i64),
            });
        }
    }
    let elem = std::mem::size_of::<T>() as u64;
    let extent = (offset as u64)
        .checked_add(len as u64)
        .and_then(|n| n.checked_mul(elem));
    let validity = array.buffer(0) as u64;
    let values = array.buffer(1) as u64;
    let bits_extent = (offset / 8) as u64 + len.div_ceil(8) as u64;
    if extent.and_then(|bytes| values.checked_add(bytes)).is_none()
        || validity.checked_add(bits_extent).is_none()
    {
        return Err(InteropError::Unsupported {
            what: WHAT,
            reason: format!("offset {offset} + length {len} elements overflow the address space"),
        });
    }
    if values == 0 && len != 0 {
        return Err(InteropError::NullData { what: WHAT, len });
    }
    let null_count = match array.null_count() as i64 {
        n @ 0.. if n as usize <= len => n as usize,
        -1 if validity == 0 => 0,
        -1 => {
            return Err(InteropError::Unsupported {
                what: WHAT,
                reason: "the null count is unknown (-1)".into(),
            })
        }
        n => {
            return Err(InteropError::Unsupported {
                what: WHAT,
                reason: format!("null count {n} for {len} elements"),
            })
        }
    };
    if validity == 0 && null_count != 0 {
        return Err(InteropError::Unsupported {
            what: WHAT,
            reason: format!("{null_count} nulls but no validity buffer"),
        });
    }
    if validity != 0 && offset % 8 != 0 {
        return Err(InteropError::ByteOffset {
            what: WHAT,
            offset: offset as u64,
            reason: "whose validity bits do not start on a byte boundary",
        });
    }
    let ready = if sync_event.is_null() {
        ReadyAfter::ImportStream
    } else {
        // SAFETY: for CUDA the producer sets `sync_event` to a `CUevent*` (obligation 2).
        ReadyAfter::Event(unsafe { ForeignEvent::from_raw(*sync_event.cast::<*mut c_void>()) })
    };
    let owner = Arc::new(Imported(array));
    let values_at = if len == 0 {
        0
    } else {
        values + offset as u64 * elem
    };
    // SAFETY: obligation 1 gives the addresses; `owner` keeps them alive; the
    // event or the caller orders the producer (2); nobody writes (3).
    let values =
        unsafe { DeviceBuffer::<T>::import_raw(on, values_at, len, ready, owner.clone()) }?;
    let validity = if validity == 0 {
        None
    } else {
        let bytes = len.div_ceil(8);
        let at = if bytes == 0 {
            0
        } else {
            validity + (offset / 8) as u64
        };
        // SAFETY: as above; the values import already ordered `on` after the producer.
        Some(unsafe {
            DeviceBuffer::<u8>::import_raw(on, at, bytes, ReadyAfter::ImportStream, owner)
        }?)
    };
    Ok(Column::assemble(
        values,
        validity,
        null_count,
        Origin::Arrow,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    #[test]
    fn device_array_layout_matches_the_header() {
        // struct ArrowArray: 5 int64, buffers, children, dictionary, release, private_data.
        assert_eq!(size_of::<FFI_ArrowArray>(), 80);
        // struct ArrowDeviceArray { ArrowArray array; int64_t device_id;
        //   ArrowDeviceType device_type; void* sync_event; int64_t reserved[3]; }
        assert_eq!(offset_of!(ArrowDeviceArray, array), 0);
        assert_eq!(offset_of!(ArrowDeviceArray, device_id), 80);
        assert_eq!(offset_of!(ArrowDeviceArray, device_type), 88);
        assert_eq!(offset_of!(ArrowDeviceArray, sync_event), 96);
        assert_eq!(offset_of!(ArrowDeviceArray, reserved), 104);
        assert_eq!(size_of::<ArrowDeviceArray>(), 128);
        assert_eq!(align_of::<ArrowDeviceArray>(), 8);
    }
}
