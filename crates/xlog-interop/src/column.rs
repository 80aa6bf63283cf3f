//! [`Column`]: a typed device column with an optional Arrow validity bitmap,
//! owned by xlog or imported (DLPack, Arrow).

use xlog_runtime::{DeviceBuffer, ReadyAfter, Stream};

use crate::element::Element;
use crate::error::{InteropError, Result};

/// Where a column's memory came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Allocated by an xlog runtime.
    Owned,
    /// Imported from a DLPack tensor (its deleter runs when the column is dropped).
    Dlpack,
    /// Imported from an Arrow device array (released when the column is dropped).
    Arrow,
}

/// A column of `T` on the device, with an optional validity bitmap (Arrow's:
/// bit `i % 8` of byte `i / 8` set means element `i` is valid).
///
/// Whatever its origin, the values and the bitmap are ordinary tracked buffers:
/// launchers take them and xlog fences them; dropping the column frees them
/// (owned) or hands them back to their producer (imported) after xlog's uses.
#[derive(Debug)]
pub struct Column<T: Element> {
    values: DeviceBuffer<T>,
    validity: Option<DeviceBuffer<u8>>,
    null_count: usize,
    origin: Origin,
}

impl<T: Element> Column<T> {
    /// A column without nulls over an xlog buffer.
    pub fn new(values: DeviceBuffer<T>) -> Column<T> {
        Column::assemble(values, None, 0, Origin::Owned)
    }

    /// A column with a validity bitmap of at least `ceil(len / 8)` bytes and the
    /// number of its cleared bits among the first `len`. The bitmap must be of
    /// the values' runtime and device. The count is checked against the bitmap
    /// when the column is exported to Arrow ([`crate::arrow::export`]), which
    /// refuses a column whose count is not the bitmap's.
    pub fn with_validity(
        values: DeviceBuffer<T>,
        validity: DeviceBuffer<u8>,
        null_count: usize,
    ) -> Result<Column<T>> {
        check_validity(&values, &validity)?;
        if null_count > values.len() {
            return Err(InteropError::NullCount {
                claimed: null_count,
                counted: None,
                len: values.len(),
            });
        }
        let origin = if values.core().is_imported() {
            Origin::Dlpack
        } else {
            Origin::Owned
        };
        Ok(Column::assemble(values, Some(validity), null_count, origin))
    }

    pub(crate) fn assemble(
        values: DeviceBuffer<T>,
        validity: Option<DeviceBuffer<u8>>,
        null_count: usize,
        origin: Origin,
    ) -> Column<T> {
        Column {
            values,
            validity,
            null_count,
            origin,
        }
    }

    /// A column over a DLPack tensor (no nulls).
    ///
    /// # Safety
    /// As [`crate::dlpack::import`].
    pub unsafe fn from_dlpack(
        tensor: crate::dlpack::Versioned,
        on: &Stream,
        ready: ReadyAfter,
    ) -> Result<Column<T>> {
        // SAFETY: the caller's obligations are forwarded unchanged.
        let values = unsafe { crate::dlpack::import_versioned(tensor, on, ready) }?;
        Ok(Column::assemble(values, None, 0, Origin::Dlpack))
    }

    /// A column over an Arrow device array.
    ///
    /// # Safety
    /// As [`crate::arrow::import`].
    pub unsafe fn from_arrow(
        array: crate::arrow::ArrowDeviceArray,
        schema: &arrow_schema::ffi::FFI_ArrowSchema,
        on: &Stream,
    ) -> Result<Column<T>> {
        // SAFETY: the caller's obligations are forwarded unchanged.
        unsafe { crate::arrow::import(array, schema, on) }
    }

    /// Export as an Arrow device array (see [`crate::arrow::export`]).
    pub fn into_arrow(
        self,
        on: &Stream,
    ) -> Result<(
        crate::arrow::ArrowDeviceArray,
        arrow_schema::ffi::FFI_ArrowSchema,
    )> {
        crate::arrow::export(self, on)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the column has no elements.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The values.
    pub fn values(&self) -> &DeviceBuffer<T> {
        &self.values
    }

    /// The values, to write (launchers fence them as usual).
    pub fn values_mut(&mut self) -> &mut DeviceBuffer<T> {
        &mut self.values
    }

    /// The validity bitmap, if the column can hold nulls.
    pub fn validity(&self) -> Option<&DeviceBuffer<u8>> {
        self.validity.as_ref()
    }

    /// Number of null elements.
    pub fn null_count(&self) -> usize {
        self.null_count
    }

    /// Where the memory came from.
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// The values, the bitmap, the null count and the origin.
    pub fn into_parts(self) -> (DeviceBuffer<T>, Option<DeviceBuffer<u8>>, usize, Origin) {
        (self.values, self.validity, self.null_count, self.origin)
    }
}

/// Refuse a validity bitmap shorter than `ceil(values.len() / 8)` bytes, or of
/// another runtime or device than the values.
pub(crate) fn check_validity<T: Element>(
    values: &DeviceBuffer<T>,
    validity: &DeviceBuffer<u8>,
) -> Result<()> {
    let needed = values.len().div_ceil(8);
    if validity.len() < needed {
        return Err(InteropError::Unsupported {
            what: "validity bitmap",
            reason: format!(
                "{} bytes for {} values (needs {needed} bytes)",
                validity.len(),
                values.len()
            ),
        });
    }
    let (v, b) = (values.core(), validity.core());
    if v.runtime_id() != b.runtime_id() || v.id().device != b.id().device {
        return Err(InteropError::Unsupported {
            what: "validity bitmap",
            reason: format!(
                "it is on device {} of runtime {}, the values on device {} of runtime {}",
                b.id().device,
                b.runtime_id(),
                v.id().device,
                v.runtime_id()
            ),
        });
    }
    Ok(())
}

/// The number of cleared bits among the first `len` bits of `bitmap` (Arrow's
/// order: bit `i % 8` of byte `i / 8`). `bitmap` holds at least `ceil(len / 8)`
/// bytes.
pub(crate) fn count_nulls(bitmap: &[u8], len: usize) -> usize {
    let (whole, rest) = (len / 8, len % 8);
    let valid: usize = bitmap[..whole]
        .iter()
        .map(|b| b.count_ones() as usize)
        .sum();
    let tail = if rest == 0 {
        0
    } else {
        (bitmap[whole] & ((1u8 << rest) - 1)).count_ones() as usize
    };
    len - valid - tail
}

#[cfg(test)]
mod tests {
    use super::count_nulls;

    #[test]
    fn nulls_are_the_cleared_bits_among_the_first_len() {
        assert_eq!(count_nulls(&[], 0), 0);
        assert_eq!(count_nulls(&[0xff, 0xff], 16), 0);
        assert_eq!(count_nulls(&[0x00, 0x00], 16), 16);
        // Bits past `len` do not count, set or not.
        assert_eq!(count_nulls(&[0b0000_0101], 3), 1);
        assert_eq!(count_nulls(&[0b1111_1000], 3), 3);
        assert_eq!(count_nulls(&[0xf0, 0x01, 0x00], 9), 4);
    }
}
