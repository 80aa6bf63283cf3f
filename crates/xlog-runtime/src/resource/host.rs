//! [`HostResource`]: host memory behind the resource trait, for testing adaptors
//! and accounting without a GPU. It is never device memory and never backs a launch.

use std::alloc::Layout;

use super::{AllocTag, DeviceBlock, DeviceMemoryResource, Ledger};
use crate::error::{Error, Result};
use crate::stream::Stream;
use crate::testing::Faults;

const ALIGN: usize = 256;

/// Host-memory resource with the same accounting as the device backends: frees
/// are pending until [`reap_pending`], and failures can be injected.
///
/// [`tracks_streams`] is `false`: the runtime refuses to launch on it.
///
/// [`reap_pending`]: DeviceMemoryResource::reap_pending
/// [`tracks_streams`]: DeviceMemoryResource::tracks_streams
#[derive(Default)]
pub struct HostResource {
    device: u32,
    ledger: Ledger,
    fail_allocations: Faults,
    fail_reaps: Faults,
}

impl HostResource {
    /// A host resource that reports `device` as its ordinal.
    pub fn new(device: u32) -> HostResource {
        HostResource {
            device,
            ..Default::default()
        }
    }

    /// Statistics of the blocks this resource has handed out, kept in the lock every
    /// allocation and free takes anyway (no adaptor needed).
    pub fn stats(&self) -> super::StatsHandle {
        self.ledger.stats()
    }

    /// Make the next `n` allocations fail with [`Error::InjectedFault`].
    pub fn fail_next_allocations(&self, n: usize) {
        self.fail_allocations.arm(n);
    }

    /// Make the next `n` stream synchronisations during reap fail.
    pub fn fail_next_reaps(&self, n: usize) {
        self.fail_reaps.arm(n);
    }
}

// SAFETY: `tracks_streams` is false, so the runtime never passes its host blocks to the device (clause 3).
unsafe impl DeviceMemoryResource for HostResource {
    fn allocate(&self, bytes: usize, _stream: &Stream, tag: AllocTag) -> Result<DeviceBlock> {
        if bytes == 0 {
            let block = DeviceBlock::new(self.device, 0, 0, tag);
            self.ledger.open(&block);
            return Ok(block);
        }
        self.fail_allocations.check("HostResource::allocate")?;
        let layout = Layout::from_size_align(bytes, ALIGN).map_err(|_| Error::SizeOverflow {
            len: bytes,
            elem_size: 1,
        })?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            return Err(Error::HostOutOfMemory { bytes });
        }
        let block = DeviceBlock::new(self.device, ptr as u64, bytes, tag);
        self.ledger.open(&block);
        Ok(block)
    }

    unsafe fn deallocate(&self, block: DeviceBlock, stream: &Stream) -> Result<()> {
        if block.bytes() == 0 {
            return self.ledger.close(&block);
        }
        self.ledger.close_pending(&block, stream, 0)?;
        let layout =
            Layout::from_size_align(block.bytes(), ALIGN).expect("validated at allocation");
        // SAFETY: the block was live in this resource, so it came from `alloc` with
        // this layout and is freed once.
        unsafe { std::alloc::dealloc(block.ptr() as *mut u8, layout) };
        Ok(())
    }

    fn device_ordinal(&self) -> u32 {
        self.device
    }

    fn bytes_outstanding(&self) -> usize {
        self.ledger.outstanding()
    }

    fn reap_pending(&self) -> Result<usize> {
        self.ledger
            .reap_with(|_| self.fail_reaps.check("HostResource::reap_pending"))
    }

    fn tracks_streams(&self) -> bool {
        false
    }

    fn describe(&self) -> String {
        "host".into()
    }
}
