//! [`LoggingAdaptor`]: CSV lines and `tracing` events for every allocation and free.

use std::io::Write;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use super::{AllocTag, DeviceBlock, DeviceMemoryResource};
use crate::error::Result;
use crate::stream::Stream;
use crate::sync::Unpoisoned;

/// The CSV header [`LoggingAdaptor`] writes first.
pub const CSV_HEADER: &str = "time_ns,thread,action,pointer,bytes,stream,tag";

/// Writes one CSV line per allocation, free and failure
/// (`time_ns,thread,action,pointer,bytes,stream,tag`) and emits a `tracing` event
/// on target `xlog::alloc` for each. A failing sink never fails the allocation.
pub struct LoggingAdaptor<R> {
    upstream: R,
    sink: Mutex<Box<dyn Write + Send>>,
}

impl<R: DeviceMemoryResource> LoggingAdaptor<R> {
    /// Wrap `upstream`, writing CSV to `sink` (the header first).
    pub fn new(upstream: R, sink: impl Write + Send + 'static) -> Self {
        let mut sink: Box<dyn Write + Send> = Box::new(sink);
        if let Err(e) = writeln!(sink, "{CSV_HEADER}") {
            tracing::warn!(target: "xlog::alloc", "allocation log header not written: {e}");
        }
        LoggingAdaptor {
            upstream,
            sink: Mutex::new(sink),
        }
    }

    /// The decorated resource.
    pub fn upstream(&self) -> &R {
        &self.upstream
    }

    fn log(&self, action: &str, ptr: u64, bytes: usize, stream: &Stream, tag: AllocTag) {
        let time_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let thread = std::thread::current();
        let thread = thread
            .name()
            .map(str::to_owned)
            .unwrap_or_else(|| format!("{:?}", thread.id()));
        tracing::debug!(target: "xlog::alloc", action, ptr = format_args!("{ptr:#x}"), bytes, stream = stream.id().0, tag = tag.0);
        let line = format!(
            "{time_ns},{},{action},{ptr:#x},{bytes},{},{}",
            csv_field(&thread),
            stream.id().0,
            csv_field(tag.0)
        );
        let mut sink = self.sink.lock_unpoisoned();
        if let Err(e) = writeln!(sink, "{line}") {
            tracing::warn!(target: "xlog::alloc", "allocation log line not written: {e}");
        }
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

// SAFETY: allocation and free are forwarded to `upstream` unchanged (a refused
// allocation never reaches it), so upstream's guarantees hold for this adaptor.
unsafe impl<R: DeviceMemoryResource> DeviceMemoryResource for LoggingAdaptor<R> {
    fn allocate(&self, bytes: usize, stream: &Stream, tag: AllocTag) -> Result<DeviceBlock> {
        match self.upstream.allocate(bytes, stream, tag) {
            Ok(block) => {
                self.log("allocate", block.ptr(), bytes, stream, tag);
                Ok(block)
            }
            Err(e) => {
                self.log("allocate_failed", 0, bytes, stream, tag);
                Err(e)
            }
        }
    }

    unsafe fn deallocate(&self, block: DeviceBlock, stream: &Stream) -> Result<()> {
        let (ptr, bytes, tag) = (block.ptr(), block.bytes(), block.tag());
        // SAFETY: the caller's obligations are forwarded unchanged.
        let r = unsafe { self.upstream.deallocate(block, stream) };
        self.log(
            if r.is_ok() { "free" } else { "free_failed" },
            ptr,
            bytes,
            stream,
            tag,
        );
        r
    }

    super::forward_to_upstream!();

    fn describe(&self) -> String {
        format!("logging({})", self.upstream.describe())
    }
}
