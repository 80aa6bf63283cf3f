//! [`AsyncResource`]: stream-ordered allocation with `cuMemAllocAsync` /
//! `cuMemFreeAsync` from the device's default memory pool.

use super::{AllocTag, DeviceBlock, DeviceMemoryResource, Ledger};
use crate::device::Device;
use crate::driver;
use crate::error::{Error, Result};
use crate::stream::Stream;

/// `CUDA_ERROR_OUT_OF_MEMORY`.
const OUT_OF_MEMORY: u32 = 2;

/// The production backend: allocation and free are queued on a stream, so memory
/// is reused in stream order without synchronising the host.
///
/// Freed bytes stay counted as outstanding until their stream has run the free:
/// found out on later allocations and frees (every 64th of a thread queries the
/// fence event of each stream with pending frees, and records it again where
/// frees remain), or by [`reap_pending`], which synchronises the streams (in
/// relaxed capture mode: another thread's graph capture neither refuses the wait
/// nor is broken by it).
///
/// The driver's pool keeps the memory of freed blocks (its release threshold is set
/// to the maximum, so hot sizes never go back to the device). When the driver runs
/// out of memory for a block, the allocation waits for the pending frees, trims the
/// pool to what is allocated (`cuMemPoolTrimTo`) and tries once more.
///
/// [`reap_pending`]: DeviceMemoryResource::reap_pending
pub struct AsyncResource {
    device: Device,
    ledger: Ledger,
}

impl AsyncResource {
    /// A backend on `device`. Fails if the device has no memory pools.
    pub fn new(device: &Device) -> Result<AsyncResource> {
        if !device.info().memory_pools {
            return Err(Error::Unsupported {
                what: format!("AsyncResource on device {}", device.ordinal()),
                reason:
                    "the device does not support stream-ordered memory pools; use DirectResource"
                        .into(),
            });
        }
        device.bind()?;
        device.ctx.retain_pool_memory()?;
        Ok(AsyncResource {
            device: device.clone(),
            ledger: Ledger::default(),
        })
    }

    fn check_stream(&self, stream: &Stream) -> Result<()> {
        super::require_device_stream("AsyncResource", self.device.ordinal(), stream)
    }
}

// SAFETY: blocks come from `cuMemAllocAsync` on the given stream of this device, and `cuMemFreeAsync` frees them in stream order.
unsafe impl DeviceMemoryResource for AsyncResource {
    fn allocate(&self, bytes: usize, stream: &Stream, tag: AllocTag) -> Result<DeviceBlock> {
        if bytes == 0 {
            let block = DeviceBlock::new(self.device.ordinal(), 0, 0, tag);
            self.ledger.open(&block);
            return Ok(block);
        }
        self.check_stream(stream)?;
        self.device.bind()?;
        self.ledger
            .retire_passed(Stream::completed_epoch, Stream::mark_progress);
        // SAFETY: the stream belongs to this device (`check_stream` above)
        // and is alive for the call.
        let alloc = || unsafe { driver::mem_alloc_async(bytes, stream.raw()) };
        let ptr = match alloc() {
            // The driver's pool keeps the memory of freed blocks (its release
            // threshold is the maximum), so a block larger than any free one
            // needs memory those blocks may hold: wait for the pending frees, give
            // the pool's unused memory back, and try once more.
            Err(Error::Driver {
                code: OUT_OF_MEMORY,
                ..
            }) => {
                self.reap_pending()?;
                self.device.ctx.trim_pool_memory()?;
                alloc()
            }
            r => r,
        }
        .map_err(|e| {
            stream
                .explain_fault(e)
                .while_(|| format!("allocating {bytes} bytes tagged `{tag}`"))
        })?;
        let block = DeviceBlock::new(self.device.ordinal(), ptr, bytes, tag);
        self.ledger.open(&block);
        Ok(block)
    }

    unsafe fn deallocate(&self, block: DeviceBlock, stream: &Stream) -> Result<()> {
        if block.bytes() == 0 {
            return self.ledger.close(&block);
        }
        self.check_stream(stream)?;
        self.device.bind()?;
        // The free is queued after this epoch: any later one the device completes
        // covers it.
        let after = stream.publish_epoch();
        self.ledger.close_pending(&block, stream, after)?;
        // SAFETY: the block was live in this resource (checked just above) and the
        // caller ordered every use before the tail of `stream`.
        if let Err(e) = unsafe { driver::mem_free_async(block.ptr(), stream.raw()) } {
            self.ledger.reopen_pending(&block, stream);
            return Err(stream.explain_fault(e));
        }
        self.ledger
            .retire_passed(Stream::completed_epoch, Stream::mark_progress);
        Ok(())
    }

    fn device_ordinal(&self) -> u32 {
        self.device.ordinal()
    }

    fn bytes_outstanding(&self) -> usize {
        self.ledger.outstanding()
    }

    /// Waits for each stream with pending frees in relaxed capture mode
    /// (`Stream::settle`), so that a reap, the out-of-memory retry's included,
    /// neither fails during another thread's graph capture nor breaks it.
    fn reap_pending(&self) -> Result<usize> {
        self.ledger.reap_with(|s| {
            crate::testing::fault_point!(Reap, "the stream synchronisation of a reap");
            s.settle()
        })
    }

    fn tracks_streams(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        "async".into()
    }
}

impl AsyncResource {
    /// Whether `id` is a block this resource currently has live.
    pub fn is_live(&self, id: super::BlockId) -> bool {
        self.ledger.contains(id)
    }

    /// Statistics of the blocks this resource has handed out, kept in the lock every
    /// allocation and free takes anyway (no adaptor needed).
    pub fn stats(&self) -> super::StatsHandle {
        self.ledger.stats()
    }
}
