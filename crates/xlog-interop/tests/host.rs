//! Exports of host-memory buffers (`xlog_runtime::host`): what the consumer sees,
//! how long the memory lives and is counted, and that the deleter releases it once.

use std::sync::Arc;

use dlpark::ffi::DLDeviceType;
use dlpark::DlpackFlags;
use xlog_interop::arrow::{self, ARROW_DEVICE_CUDA};
use xlog_interop::dlpack::{self, Consumer};
use xlog_interop::{Column, Element, InteropError, Origin};
use xlog_runtime::resource::{HostResource, StatsAdaptor, StatsHandle};
use xlog_runtime::{host, DeviceBuffer, DeviceMemoryResource, Stream};

fn stack() -> (Arc<dyn DeviceMemoryResource>, StatsHandle, Stream) {
    let stats = StatsAdaptor::new(HostResource::new(0));
    let handle = stats.handle();
    (Arc::new(stats), handle, Stream::host_placeholder(0))
}

fn no_sync() -> Consumer {
    Consumer::no_stream()
}

/// A host-memory buffer claiming device 0.
fn buffer<T: xlog_runtime::DeviceCopy>(
    res: Arc<dyn DeviceMemoryResource>,
    s: &Stream,
    len: usize,
) -> DeviceBuffer<T> {
    // SAFETY: these tests only inspect what an export describes and when memory is
    // freed; nothing dereferences the host address as device memory or launches.
    unsafe { host::buffer(res, s, len) }.unwrap()
}

/// A host-memory validity bitmap holding `bits`.
fn bitmap(res: Arc<dyn DeviceMemoryResource>, s: &Stream, bits: &[u8]) -> DeviceBuffer<u8> {
    let b = buffer::<u8>(res, s, bits.len());
    // SAFETY: a host buffer's address is host memory of `bits.len()` bytes, which
    // nothing else accesses yet.
    unsafe { std::ptr::copy_nonoverlapping(bits.as_ptr(), b.device_ptr() as *mut u8, bits.len()) };
    b
}

fn live(stats: &StatsHandle) -> usize {
    stats.snapshot().current_bytes
}

#[test]
fn a_writable_export_describes_the_range_and_lives_until_the_deleter() {
    let (res, stats, s) = stack();
    let buf: DeviceBuffer<f32> = buffer(res, &s, 100);
    let base = buf.device_ptr();
    assert_eq!(live(&stats), 400);
    let tensor = dlpack::export(buf, 10..30, no_sync()).unwrap();
    // SAFETY: the export's metadata is valid while the handle lives.
    let t = unsafe { tensor.tensor() };
    assert_eq!(t.data as u64, base + 40);
    assert_eq!(t.device.device_type, DLDeviceType::CUDA);
    assert_eq!(t.device.device_id, 0);
    assert_eq!(t.dtype, f32::DTYPE);
    assert_eq!(t.byte_offset, 0);
    // SAFETY: ndim is 1, so shape and strides hold one entry.
    assert_eq!(unsafe { (*t.shape, *t.strides) }, (20, 1));
    assert_eq!(tensor.version().major, 1);
    assert!(!tensor.flags().contains(DlpackFlags::READ_ONLY));
    assert_eq!(live(&stats), 400, "counted while exported");
    // The consumer releases on another thread.
    std::thread::spawn(move || drop(tensor)).join().unwrap();
    assert_eq!(live(&stats), 0, "freed by the deleter");
    assert_eq!(stats.snapshot().total_count, 1);
}

#[test]
fn a_read_export_is_flagged_and_shares_the_buffer() {
    let (res, stats, s) = stack();
    let buf = Arc::new(buffer::<u32>(res, &s, 8));
    // SAFETY: nothing writes through the tensor (nothing reads it either).
    let tensor = unsafe { dlpack::export_read(buf.clone(), .., no_sync()) }.unwrap();
    assert!(tensor.flags().contains(DlpackFlags::READ_ONLY));
    assert_eq!(Arc::strong_count(&buf), 2, "the export holds the buffer");
    drop(buf);
    assert_eq!(live(&stats), 32, "alive through the export alone");
    drop(tensor);
    assert_eq!(live(&stats), 0);
}

#[test]
fn a_legacy_export_carries_the_same_tensor() {
    let (res, stats, s) = stack();
    let buf: DeviceBuffer<i64> = buffer(res, &s, 4);
    let ptr = buf.device_ptr();
    let tensor = dlpack::export_legacy(buf, .., no_sync()).unwrap();
    // SAFETY: valid while the handle lives.
    assert_eq!(unsafe { tensor.tensor() }.data as u64, ptr);
    drop(tensor);
    assert_eq!(live(&stats), 0);
}

#[test]
fn an_out_of_bounds_range_is_refused_and_the_buffer_freed() {
    let (res, stats, s) = stack();
    let buf: DeviceBuffer<f32> = buffer(res, &s, 4);
    let Err(e) = dlpack::export(buf, 2..9, no_sync()) else {
        panic!("an out-of-bounds range was exported")
    };
    assert!(e.to_string().contains("out of bounds"), "{e}");
    assert_eq!(live(&stats), 0);
}

#[test]
fn python_stream_values_follow_the_protocol() {
    // SAFETY: no handle above 2 is passed.
    unsafe {
        assert!(Consumer::from_python(None).is_ok());
        assert!(Consumer::from_python(Some(1)).is_ok());
        assert!(Consumer::from_python(Some(2)).is_ok());
        assert!(Consumer::from_python(Some(-1)).is_ok());
        let e = Consumer::from_python(Some(0)).unwrap_err().to_string();
        assert!(e.contains("ambiguous"), "{e}");
        assert!(Consumer::from_python(Some(-7)).is_err());
    }
}

#[test]
fn an_arrow_export_carries_values_validity_and_nulls_until_release() {
    let (res, stats, s) = stack();
    let values: DeviceBuffer<f64> = buffer(res.clone(), &s, 20);
    let validity = bitmap(res, &s, &[0xff, 0b1111_0111, 0b1111_1011]);
    let (vp, np) = (values.device_ptr(), validity.device_ptr());
    let col = Column::with_validity(values, validity, 2).unwrap();
    assert_eq!(col.origin(), Origin::Owned);
    let (array, schema) = col.into_arrow(&s).unwrap();
    assert_eq!(schema.format(), "g");
    assert_eq!(array.device_type, ARROW_DEVICE_CUDA);
    assert_eq!(array.device_id, 0);
    assert!(array.sync_event.is_null(), "host memory records no event");
    let a = &array.array;
    assert_eq!((a.len(), a.offset(), a.null_count()), (20, 0, 2));
    assert_eq!((a.num_buffers(), a.num_children()), (2, 0));
    assert_eq!((a.buffer(0) as u64, a.buffer(1) as u64), (np, vp));
    assert_eq!(live(&stats), 163);
    drop(schema);
    // Dropping an unreleased array calls its release callback.
    std::thread::spawn(move || drop(array)).join().unwrap();
    assert_eq!(live(&stats), 0);
}

#[test]
fn a_column_without_nulls_exports_no_validity_buffer() {
    let (res, stats, s) = stack();
    let (array, _schema) = Column::new(buffer::<i32>(res, &s, 5))
        .into_arrow(&s)
        .unwrap();
    assert!(array.array.buffer(0).is_null());
    assert_eq!(array.array.null_count(), 0);
    drop(array);
    assert_eq!(live(&stats), 0);
}

#[test]
fn a_short_validity_bitmap_is_refused() {
    let (res, _, s) = stack();
    let values = buffer::<f32>(res.clone(), &s, 17);
    let validity = buffer::<u8>(res, &s, 2);
    let e = Column::with_validity(values, validity, 0).unwrap_err();
    assert!(e.to_string().contains("needs 3 bytes"), "{e}");
}

#[test]
fn a_null_count_other_than_the_bitmaps_is_refused_at_export() {
    let (res, stats, s) = stack();
    // 20 values, 4 of them null (bits 3, 9, 10 and 19); the bits past 20 are set.
    let bits = [0b1111_0111, 0b1111_1001, 0b1111_0111];
    for claimed in [0, 3, 5, 20] {
        let col = Column::with_validity(
            buffer::<f32>(res.clone(), &s, 20),
            bitmap(res.clone(), &s, &bits),
            claimed,
        )
        .unwrap();
        let e = col.into_arrow(&s).unwrap_err();
        assert!(
            matches!(
                e,
                InteropError::NullCount {
                    counted: Some(4),
                    len: 20,
                    ..
                }
            ),
            "{claimed}: {e}"
        );
        assert!(e.to_string().contains("marks 4 of its 20"), "{e}");
        assert_eq!(live(&stats), 0, "a refused export frees the column");
    }
    let e = Column::with_validity(
        buffer::<f32>(res.clone(), &s, 20),
        bitmap(res.clone(), &s, &bits),
        21,
    )
    .unwrap_err();
    assert!(e.to_string().contains("only 20 elements"), "{e}");
    let col = Column::with_validity(
        buffer::<f32>(res.clone(), &s, 20),
        bitmap(res, &s, &bits),
        4,
    )
    .unwrap();
    let (array, _schema) = col.into_arrow(&s).unwrap();
    assert_eq!(array.array.null_count(), 4);
    assert!(!array.array.buffer(0).is_null(), "the bitmap travels");
}

#[test]
fn a_column_whose_values_were_replaced_is_refused_at_export() {
    let (res, stats, s) = stack();
    let mut col = Column::with_validity(
        buffer::<f32>(res.clone(), &s, 8),
        bitmap(res.clone(), &s, &[0xff]),
        0,
    )
    .unwrap();
    let mut longer = buffer::<f32>(res.clone(), &s, 20);
    std::mem::swap(col.values_mut(), &mut longer);
    drop(longer);
    let e = col.into_arrow(&s).unwrap_err();
    assert!(e.to_string().contains("needs 3 bytes"), "{e}");
    assert_eq!(live(&stats), 0);
    // Values of another device swapped in are refused too.
    let other: Arc<dyn DeviceMemoryResource> = Arc::new(HostResource::new(1));
    let mut col = Column::with_validity(
        buffer::<f32>(res.clone(), &s, 8),
        bitmap(res, &s, &[0xff]),
        0,
    )
    .unwrap();
    let mut elsewhere = buffer::<f32>(other, &s, 8);
    std::mem::swap(col.values_mut(), &mut elsewhere);
    let e = col.into_arrow(&s).unwrap_err();
    assert!(e.to_string().contains("the values on device 1"), "{e}");
}

#[test]
fn a_refused_arrow_import_releases_the_array_once() {
    let (res, stats, s) = stack();
    for case in 0..3 {
        let buf = buffer::<f32>(res.clone(), &s, 6);
        let (mut array, schema) = Column::new(buf).into_arrow(&s).unwrap();
        let want = match case {
            0 => {
                array.device_id = 3;
                "is on CUDA device 3"
            }
            1 => {
                array.device_type = 1;
                "is on device type 1"
            }
            _ => {
                // The device a placeholder stream reports, so the dtype is checked.
                array.device_id = s.device_ordinal() as i64;
                "holds format \"f\""
            }
        };
        // SAFETY: refused before anything is dereferenced.
        let e = unsafe { arrow::import::<u32>(array, &schema, &s) }
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{e}");
        assert_eq!(
            live(&stats),
            0,
            "case {case}: released once (the buffer is freed)"
        );
    }
}

#[test]
fn a_lent_buffer_is_writable_for_the_consumer_and_comes_back_after_the_deleter() {
    use std::sync::Mutex;
    let (res, stats, s) = stack();
    let buf: DeviceBuffer<f32> = buffer(res, &s, 16);
    let ptr = buf.device_ptr();
    let slot: Arc<Mutex<Option<DeviceBuffer<f32>>>> = Arc::new(Mutex::new(None));
    let back = slot.clone();
    let tensor = dlpack::lend(buf, 4..8, no_sync(), move |b| {
        *back.lock().unwrap() = Some(b);
    })
    .unwrap();
    // A consumer may write: no read-only flag, and xlog holds no handle meanwhile.
    assert!(!tensor.flags().contains(DlpackFlags::READ_ONLY));
    // SAFETY: valid while the handle lives.
    assert_eq!(unsafe { tensor.tensor() }.data as u64, ptr + 16);
    assert!(slot.lock().unwrap().is_none(), "lent: out of xlog");
    assert_eq!(live(&stats), 64);
    std::thread::spawn(move || drop(tensor)).join().unwrap();
    let b = slot
        .lock()
        .unwrap()
        .take()
        .expect("given back by the deleter");
    assert_eq!((b.device_ptr(), b.len()), (ptr, 16));
    assert_eq!(live(&stats), 64, "given back, not freed");
    drop(b);
    assert_eq!(live(&stats), 0);
}

#[test]
fn a_refused_lend_gives_the_buffer_back() {
    use std::sync::Mutex;
    let (res, _, s) = stack();
    let slot = Arc::new(Mutex::new(None));
    let back = slot.clone();
    let Err(e) = dlpack::lend_legacy(buffer::<u8>(res, &s, 4), 2..9, no_sync(), move |b| {
        *back.lock().unwrap() = Some(b);
    }) else {
        panic!("an out-of-bounds range was lent")
    };
    assert!(e.to_string().contains("out of bounds"), "{e}");
    assert!(slot.lock().unwrap().is_some());
}

#[test]
fn xlog_refuses_to_import_its_own_live_export() {
    use std::sync::Mutex;
    let (res, stats, s) = stack();
    let buf: DeviceBuffer<f32> = buffer(res, &s, 8);
    let (ptr, len) = (buf.device_ptr(), buf.len());
    let slot = Arc::new(Mutex::new(None));
    let back = slot.clone();
    let tensor = dlpack::lend_legacy(buf, 2.., no_sync(), move |b| {
        *back.lock().unwrap() = Some(b);
    })
    .unwrap();
    // A consumer hands the tensor straight back (the legacy-capsule retry of
    // `xlog.from_dlpack(wrapper_of_an_xlog_buffer)`): a second identity of the
    // memory, refused; the tensor is deleted once, so the buffer comes back.
    // SAFETY: host memory, never dereferenced; the import is refused anyway.
    let e = unsafe { host::import::<f32>(&s, 0, ptr + 8, len - 2, tensor) }.unwrap_err();
    assert!(e.to_string().contains("xlog exported"), "{e}");
    let b = slot
        .lock()
        .unwrap()
        .take()
        .expect("the refused tensor was deleted");
    assert_eq!(live(&stats), 32);
    // Once it is back, the memory is no longer exported. (An import of it now would
    // be the caller's unsafe promise, as for any memory.)
    let tensor = dlpack::export(b, .., no_sync()).unwrap();
    drop(tensor);
    assert_eq!(live(&stats), 0);
}

#[test]
fn implausible_python_stream_handles_are_refused() {
    // SAFETY: every value is refused before it is used as a handle.
    unsafe {
        for bogus in [3isize, 12345, dlpack::MIN_STREAM_HANDLE - 1] {
            let e = Consumer::from_python(Some(bogus)).unwrap_err().to_string();
            assert!(e.contains("not a CUDA stream handle"), "{bogus}: {e}");
        }
    }
}

#[test]
fn negative_or_overflowing_arrow_fields_are_refused_and_the_array_released_once() {
    let (res, stats, s) = stack();
    // Field offsets in `struct ArrowArray`: length 0, null_count 8, offset 16.
    for (field, value, want) in [
        (0usize, -5i64, "length is negative"),
        (2, -1, "offset is negative"),
        (2, i64::MAX / 2, "overflow the address space"),
        (1, -7, "null count -7"),
        (1, 99, "null count 99"),
    ] {
        let col = Column::with_validity(
            buffer::<f32>(res.clone(), &s, 6),
            bitmap(res.clone(), &s, &[0x3f]),
            0,
        )
        .unwrap();
        let (mut array, schema) = col.into_arrow(&s).unwrap();
        array.device_id = s.device_ordinal() as i64;
        // SAFETY: the field is an `int64_t` of the `#[repr(C)]` ArrowArray at the
        // start of the struct (layout checked by the crate's tests).
        unsafe {
            (&mut array.array as *mut _ as *mut i64)
                .add(field)
                .write(value);
        }
        // SAFETY: refused before anything is dereferenced.
        let e = unsafe { arrow::import::<f32>(array, &schema, &s) }
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{want}: {e}");
        assert_eq!(live(&stats), 0, "{want}: released once");
    }
}

#[test]
fn a_validity_bitmap_of_another_device_is_refused() {
    let (res, _, s) = stack();
    let other: Arc<dyn DeviceMemoryResource> = Arc::new(HostResource::new(1));
    let values = buffer::<f32>(res, &s, 8);
    let validity = buffer::<u8>(other, &s, 1);
    let e = Column::with_validity(values, validity, 0).unwrap_err();
    assert!(e.to_string().contains("on device 1"), "{e}");
}
