//! The simulator as a [`Platform`]: each call goes to the simulated driver
//! (`exec`), which has the same contract as the CUDA call of the same name. What
//! the simulator lacks it says through the capability methods (no CUDA graphs, no
//! interop with CUDA libraries, no NCCL), and it takes the recorder's accesses
//! for its hazard detector.

use std::ffi::c_void;

use super::exec;
use super::hazard::Touch;
use super::SimEntry;
use crate::driver::{
    Context, HostPage, MemsetWord, Platform, RawContext, RawEvent, RawFunction, RawModule,
    RawStream,
};
use crate::error::Result;
use crate::launch::BufferUse;

/// The simulator: kernels, streams and memory on the host (see [`crate::sim`]).
pub(crate) struct Simulator;

impl Platform for Simulator {
    fn is_simulator(&self) -> bool {
        true
    }

    fn has_graphs(&self) -> bool {
        false
    }

    fn interop(&self) -> bool {
        false
    }

    fn nccl(&self) -> bool {
        false
    }

    fn runs_host_builds(&self) -> bool {
        true
    }

    /// One touch per recorded range of `uses`; a range listed twice is one
    /// access, writing if either use writes.
    fn record_accesses(&self, uses: &[BufferUse<'_>], touches: &mut Vec<Touch>) {
        for u in uses {
            let (ptr, bytes, access) = u.range();
            let write = access.writes();
            match touches
                .iter_mut()
                .find(|t| (t.ptr, t.bytes) == (ptr, bytes))
            {
                Some(t) => t.write |= write,
                None => touches.push(Touch { ptr, bytes, write }),
            }
        }
    }

    fn init(&self) -> Result<()> {
        Ok(())
    }

    fn device_count(&self) -> Result<u32> {
        super::device_count()
    }

    fn open_context(&self, ordinal: u32) -> Result<Context> {
        Ok(Context::without_context(exec::device_info(ordinal)))
    }

    unsafe fn bind_context(&self, _ctx: RawContext) -> Result<()> {
        Ok(())
    }

    fn release_context(&self, _ctx: &Context) {}

    fn retain_pool_memory(&self, _ctx: &Context) -> Result<()> {
        Ok(())
    }

    fn trim_pool_memory(&self, _ctx: &Context) -> Result<()> {
        Ok(())
    }

    fn stack_size(&self) -> Result<usize> {
        Ok(exec::STACK_BYTES)
    }

    fn set_stack_size(&self, bytes: usize) -> Result<()> {
        exec::set_stack_size(bytes)
    }

    fn ctx_synchronize(&self) -> Result<()> {
        exec::ctx_synchronize()
    }

    fn stream_create(&self) -> Result<RawStream> {
        exec::stream_create()
    }

    unsafe fn stream_destroy(&self, s: RawStream) -> Result<()> {
        // SAFETY: the simulated call has the same obligations, the caller's.
        unsafe { exec::stream_destroy(s) }
    }

    unsafe fn stream_synchronize(&self, s: RawStream) -> Result<()> {
        // SAFETY: the simulated call has the same obligations, the caller's.
        unsafe { exec::stream_synchronize(s) }
    }

    unsafe fn stream_query(&self, s: RawStream) -> Result<bool> {
        // SAFETY: the simulated call has the same obligations, the caller's.
        let done = unsafe { exec::stream_query(s) };
        exec::alive("cuStreamQuery").map(|()| done)
    }

    unsafe fn stream_settle(&self, s: RawStream) -> Result<()> {
        // SAFETY: the simulated call has the same obligations, the caller's; it
        // returns only when the stream's worker has run everything queued.
        unsafe { exec::stream_synchronize(s) }
    }

    /// The simulator has no graphs to capture into.
    unsafe fn stream_is_capturing(&self, _s: RawStream) -> bool {
        false
    }

    unsafe fn stream_wait_event(&self, s: RawStream, ev: RawEvent) -> Result<()> {
        // SAFETY: the simulated call has the same obligations, the caller's.
        unsafe { exec::stream_wait_event(s, ev) }
    }

    /// The simulated devices share one memory.
    unsafe fn enable_peer_access(&self, _this: &Context, _peer: &Context) -> Result<bool> {
        Ok(true)
    }

    fn event_create_untimed(&self) -> Result<RawEvent> {
        exec::event_create()
    }

    unsafe fn event_record(&self, ev: RawEvent, s: RawStream) -> Result<()> {
        // SAFETY: the simulated call has the same obligations, the caller's.
        unsafe { exec::event_record(ev, s) }
    }

    unsafe fn event_query(&self, ev: RawEvent) -> bool {
        // SAFETY: the simulated call has the same obligations, the caller's.
        unsafe { exec::event_query(ev) }
    }

    /// No event is recorded in a capture: the simulator has none.
    unsafe fn event_is_outside_capture(&self, _ev: RawEvent) -> bool {
        true
    }

    unsafe fn event_synchronize(&self, ev: RawEvent) -> Result<()> {
        // SAFETY: the simulated call has the same obligations, the caller's.
        unsafe { exec::event_synchronize(ev) }
    }

    unsafe fn event_destroy(&self, ev: RawEvent) -> Result<()> {
        // SAFETY: the simulated call has the same obligations, the caller's.
        unsafe { exec::event_destroy(ev) }
    }

    unsafe fn mem_alloc_async(&self, bytes: usize, s: RawStream) -> Result<u64> {
        // SAFETY: the simulated call has the same obligations, the caller's.
        unsafe { exec::mem_alloc_async(bytes, s) }
    }

    unsafe fn mem_free_async(&self, ptr: u64, s: RawStream) -> Result<()> {
        // SAFETY: the simulated call has the same obligations, the caller's.
        unsafe { exec::mem_free_async(ptr, s) }
    }

    fn mem_alloc(&self, bytes: usize) -> Result<u64> {
        exec::mem_alloc(bytes)
    }

    unsafe fn mem_free(&self, ptr: u64) -> Result<()> {
        exec::mem_free(ptr)
    }

    unsafe fn memcpy_htod_async(
        &self,
        dst: u64,
        src: *const u8,
        len: usize,
        s: RawStream,
    ) -> Result<()> {
        // SAFETY: the simulated call has the same obligations, the caller's.
        unsafe { exec::memcpy_htod_async(dst, src, len, s) }
    }

    unsafe fn memcpy_dtoh_async(
        &self,
        dst: *mut u8,
        src: u64,
        len: usize,
        s: RawStream,
    ) -> Result<()> {
        // SAFETY: the simulated call has the same obligations, the caller's.
        unsafe { exec::memcpy_dtoh_async(dst, src, len, s) }
    }

    unsafe fn memcpy_dtod_async(&self, dst: u64, src: u64, len: usize, s: RawStream) -> Result<()> {
        // SAFETY: the simulated call has the same obligations, the caller's.
        unsafe { exec::memcpy_dtod_async(dst, src, len, s) }
    }

    /// A device-to-device copy: the simulated devices share one memory.
    unsafe fn memcpy_peer_async(
        &self,
        dst: u64,
        _dst_ctx: &Context,
        src: u64,
        _src_ctx: &Context,
        len: usize,
        s: RawStream,
    ) -> Result<()> {
        // SAFETY: the simulated devices share one memory; the obligations carry over.
        unsafe { exec::memcpy_dtod_async(dst, src, len, s) }
    }

    unsafe fn memset_d8_async(&self, dst: u64, value: u8, len: usize, s: RawStream) -> Result<()> {
        // SAFETY: the simulated call has the same obligations, the caller's.
        unsafe { exec::memset_d8_async(dst, value, len, s) }
    }

    unsafe fn memset_words_async(
        &self,
        dst: u64,
        value: MemsetWord,
        count: usize,
        s: RawStream,
    ) -> Result<()> {
        // SAFETY: the simulated call has the same obligations, the caller's.
        unsafe { exec::memset_words_async(dst, value, count, s) }
    }

    fn module_load(&self, image: &[u8]) -> Result<RawModule> {
        exec::module_load(image)
    }

    unsafe fn module_function(
        &self,
        m: RawModule,
        name: &str,
        entry: Option<SimEntry>,
    ) -> Result<Option<RawFunction>> {
        // SAFETY: the simulated call has the same obligations, the caller's.
        unsafe { exec::module_function(m, name, entry) }
    }

    unsafe fn module_global(&self, m: RawModule, name: &str) -> Result<Option<(u64, usize)>> {
        // SAFETY: the simulated call has the same obligations, the caller's.
        Ok(unsafe { exec::module_global(m, name) })
    }

    unsafe fn module_unload(&self, m: RawModule) -> Result<()> {
        // SAFETY: the simulated call has the same obligations, the caller's.
        unsafe { exec::module_unload(m) }
    }

    fn host_alloc_mapped(&self, bytes: usize) -> Result<(*mut u8, u64)> {
        exec::host_alloc_mapped(bytes)
    }

    unsafe fn host_free(&self, host: *mut u8) -> Result<()> {
        exec::host_free(host)
    }

    /// Simulated memory is host memory: a page of it, as `host_alloc_mapped` gives.
    fn host_page_mapped(&self) -> Result<HostPage> {
        let (host, dev) = exec::host_alloc_mapped(crate::pinned::PAGE)?;
        Ok(HostPage {
            host,
            dev,
            registered: false,
        })
    }

    unsafe fn host_page_free(&self, page: HostPage) -> Result<()> {
        exec::host_free(page.host)
    }

    unsafe fn memcpy_htod_sync(&self, dst: u64, src: &[u8]) -> Result<()> {
        // SAFETY: the simulated call has the same obligations, the caller's.
        unsafe { exec::memcpy_htod_sync(dst, src) }
    }

    /// Nothing to raise: a simulated launch gets the dynamic shared memory it asks
    /// for (checked against the device's limits before).
    unsafe fn function_set_max_dynamic_shared(&self, _f: RawFunction, _bytes: u32) -> Result<()> {
        Ok(())
    }

    unsafe fn launch_kernel(
        &self,
        f: RawFunction,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        s: RawStream,
        params: &mut [*mut c_void],
        touches: &[Touch],
    ) -> Result<()> {
        // SAFETY: the simulated call has the same obligations, the caller's.
        unsafe { exec::launch_kernel(f, grid, block, shared_bytes, s, params, touches) }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::buffer::{BufferCore, DeviceBuffer, ReadBuffer};
    use crate::resource::{AllocTag, Allocator, HostResource};
    use crate::stream::Stream;
    use crate::track::Access;

    /// The detector checks what each use recorded, not the buffer: two views of
    /// one buffer stay two ranges, each with its own access, and a range listed
    /// twice is one access that writes if either use does.
    #[test]
    fn each_listed_range_is_kept_with_its_own_access() {
        let s = Stream::host_placeholder(0);
        let allocator = Arc::new(Allocator::new(7, Box::new(HostResource::new(0))));
        let block = allocator.allocate(32, &s, AllocTag("test")).unwrap();
        let ready = s.publish();
        let buf = DeviceBuffer::<u32>::from_core(BufferCore::new(block, allocator, s, ready), 8);
        let base = buf.device_ptr();
        let (low, high) = (buf.slice(..4), buf.slice(4..));
        let uses = [
            BufferUse::new(low.arg(), Access::Read),
            BufferUse::new(high.arg(), Access::Read),
            BufferUse::new(low.arg(), Access::Write),
        ];
        let mut touches = Vec::new();
        Simulator.record_accesses(&uses, &mut touches);
        let got: Vec<(u64, usize, bool)> =
            touches.iter().map(|t| (t.ptr, t.bytes, t.write)).collect();
        assert_eq!(got, vec![(base, 16, true), (base + 16, 16, false)]);
    }
}
