//! [`InteropError`]: why an import or export was refused.

/// Why an import or an export was refused. A refused import has already dropped
/// what it was given (running the producer's deleter or release callback once).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InteropError {
    /// The memory is on another device (or is not CUDA device memory).
    #[error("{what} is on {found} but the import stream is on CUDA device {expected}")]
    DeviceMismatch {
        /// What was being imported.
        what: &'static str,
        /// The device it declares, e.g. `CUDA device 1` or `device type 1 (CPU)`.
        found: String,
        /// The ordinal of the import stream's device.
        expected: u32,
    },
    /// The element type differs from the buffer's.
    #[error("{what} holds {found} but the buffer's element type is `{expected}`")]
    Dtype {
        /// What was being imported.
        what: &'static str,
        /// The declared element type.
        found: String,
        /// The Rust element type asked for.
        expected: &'static str,
    },
    /// The elements are not one dense row-major run.
    #[error("{what} is not contiguous (shape {shape:?}, strides {strides:?}); make it contiguous first (e.g. `.contiguous()`)")]
    NonContiguous {
        /// What was being imported.
        what: &'static str,
        /// The shape.
        shape: Vec<i64>,
        /// The strides, in elements.
        strides: Vec<i64>,
    },
    /// The byte offset leaves the first element misaligned or cannot be honoured.
    #[error("{what} has byte offset {offset}, {reason}")]
    ByteOffset {
        /// What was being imported.
        what: &'static str,
        /// The offset (bytes for DLPack, elements for Arrow).
        offset: u64,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The data pointer is null but the length is not zero.
    #[error("{what} has a null data pointer but {len} elements")]
    NullData {
        /// What was being imported.
        what: &'static str,
        /// The element count.
        len: usize,
    },
    /// The producer marked the memory read-only; xlog buffers are writable.
    #[error("{what} is marked read-only by its producer; import a writable tensor (or a copy)")]
    ReadOnly {
        /// What was being imported.
        what: &'static str,
    },
    /// The structure is not one xlog can import (version, layout, children...).
    #[error("{what}: {reason}")]
    Unsupported {
        /// What was being imported.
        what: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A column's null count is not the number of nulls its validity bitmap
    /// marks (or exceeds its length), so an Arrow consumer would misread it.
    #[error("the column claims {claimed} nulls but {}; give the number of cleared bits among the first {len} of the bitmap", match counted { Some(c) => format!("its validity bitmap marks {c} of its {len} elements null"), None => format!("it has only {len} elements") })]
    NullCount {
        /// The count the column was given.
        claimed: usize,
        /// The bitmap's count, when it was counted.
        counted: Option<usize>,
        /// The column's length.
        len: usize,
    },
    /// The runtime refused (wrong stream, driver failure, range out of bounds...).
    #[error(transparent)]
    Runtime(#[from] xlog_runtime::Error),
}

/// Results of this crate.
pub type Result<T, E = InteropError> = std::result::Result<T, E>;
