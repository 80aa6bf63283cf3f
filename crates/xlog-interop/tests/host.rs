//! Exports of host-memory buffers (`xlog_runtime::host`): what the consumer sees,
//! how long the memory lives and is counted, and that the deleter releases it once.

use std::sync::Arc;

use dlpark::ffi::DLDeviceType;
use dlpark::DlpackFlags;
use xlog_interop::arrow::{self, ARROW_DEVICE_CUDA};
use xlog_interop::dlpack::{self, Consumer};
use xlog_interop::{Column, Element, Origin};
use xlog_runtime::resource::{HostResource, StatsAdaptor, StatsHandle};
use xlog_runtime::{host, DeviceBuffer, DeviceMemoryResource, Stream};

fn stack() -> (Arc<dyn DeviceMemoryResource>, StatsHandle, Stream) {
    let stats = StatsAdaptor::new(HostResource::new(0));
    let handle = stats.handle();
    (Arc::new(stats), handle, Stream::host_placeholder(0))
}

fn no_sync() -> Consumer {
    // SAFETY: host memory: there is no device work to order.
    unsafe { Consumer::unsynchronized() }
}

fn live(stats: &StatsHandle) -> usize {
    stats.snapshot().current_bytes
}

#[test]
fn a_writable_export_describes_the_range_and_lives_until_the_deleter() {
    let (res, stats, s) = stack();
    let buf: DeviceBuffer<f32> = host::buffer(res, &s, 100).unwrap();
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
    let buf = Arc::new(host::buffer::<u32>(res, &s, 8).unwrap());
    let tensor = dlpack::export_read(buf.clone(), .., no_sync()).unwrap();
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
    let buf: DeviceBuffer<i64> = host::buffer(res, &s, 4).unwrap();
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
    let buf: DeviceBuffer<f32> = host::buffer(res, &s, 4).unwrap();
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
    let values: DeviceBuffer<f64> = host::buffer(res.clone(), &s, 20).unwrap();
    let validity: DeviceBuffer<u8> = host::buffer(res, &s, 3).unwrap();
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
    let (array, _schema) = Column::new(host::buffer::<i32>(res, &s, 5).unwrap())
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
    let values = host::buffer::<f32>(res.clone(), &s, 17).unwrap();
    let validity = host::buffer::<u8>(res, &s, 2).unwrap();
    let e = Column::with_validity(values, validity, 0).unwrap_err();
    assert!(e.to_string().contains("needs 3 bytes"), "{e}");
}

#[test]
fn a_refused_arrow_import_releases_the_array_once() {
    let (res, stats, s) = stack();
    for case in 0..3 {
        let buf = host::buffer::<f32>(res.clone(), &s, 6).unwrap();
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
