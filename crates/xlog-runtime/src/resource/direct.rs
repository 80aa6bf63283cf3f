//! [`DirectResource`]: synchronous `cuMemAlloc` / `cuMemFree`, the backend for
//! compute-sanitizer runs (no pool hides an out-of-bounds access).

use super::{AllocTag, DeviceBlock, DeviceMemoryResource, Ledger};
use crate::device::Device;
use crate::driver;
use crate::error::Result;
use crate::stream::Stream;

/// A backend that allocates with `cuMemAlloc` and frees with `cuMemFree` after
/// synchronising the free's stream. Slower, but every block is a separate driver
/// allocation, which is what memory checkers need. Cross-stream fencing still
/// applies: tracking belongs to buffers, not to the backend.
pub struct DirectResource {
    device: Device,
    ledger: Ledger,
}

impl DirectResource {
    /// A backend on `device`.
    pub fn new(device: &Device) -> DirectResource {
        DirectResource {
            device: device.clone(),
            ledger: Ledger::default(),
        }
    }

    /// Statistics of the blocks this resource has handed out, kept in the lock every
    /// allocation and free takes anyway (no adaptor needed).
    pub fn stats(&self) -> super::StatsHandle {
        self.ledger.stats()
    }
}

// SAFETY: blocks come from `cuMemAlloc` on this device and are freed with `cuMemFree` only after the free stream is synchronised.
unsafe impl DeviceMemoryResource for DirectResource {
    fn allocate(&self, bytes: usize, stream: &Stream, tag: AllocTag) -> Result<DeviceBlock> {
        if bytes == 0 {
            let block = DeviceBlock::new(self.device.ordinal(), 0, 0, tag);
            self.ledger.open(&block);
            return Ok(block);
        }
        // The block is freed on this stream: refuse one `deallocate` would refuse.
        super::require_device_stream("DirectResource", self.device.ordinal(), stream)?;
        self.device.bind()?;
        let ptr = driver::mem_alloc(bytes)
            .map_err(|e| e.while_(|| format!("allocating {bytes} bytes tagged `{tag}`")))?;
        let block = DeviceBlock::new(self.device.ordinal(), ptr, bytes, tag);
        self.ledger.open(&block);
        Ok(block)
    }

    unsafe fn deallocate(&self, block: DeviceBlock, stream: &Stream) -> Result<()> {
        if block.bytes() == 0 {
            return self.ledger.close(&block);
        }
        super::require_device_stream("DirectResource", self.device.ordinal(), stream)?;
        self.ledger.close(&block)?;
        // Every use is ordered before the tail of `stream`: once it drains, no work
        // touches the block and the synchronous free is safe.
        if let Err(e) = stream.synchronize() {
            self.ledger.reopen(&block);
            return Err(e);
        }
        // SAFETY: the block is ours (removed from the live set above) and the stream
        // that orders all its uses has drained.
        if let Err(e) = unsafe { driver::mem_free(block.ptr()) } {
            self.ledger.reopen(&block);
            return Err(stream.explain_fault(e));
        }
        Ok(())
    }

    fn device_ordinal(&self) -> u32 {
        self.device.ordinal()
    }

    fn bytes_outstanding(&self) -> usize {
        self.ledger.outstanding()
    }

    fn reap_pending(&self) -> Result<usize> {
        Ok(0)
    }

    fn tracks_streams(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        "direct".into()
    }
}
