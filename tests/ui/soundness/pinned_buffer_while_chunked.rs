//! Chunks borrow their page-locked buffer exclusively: the buffer cannot be read while a chunk may be a copy's destination.
use xlog::prelude::*;

fn read_whole(rt: &Runtime, s: &Stream, dev: &DeviceBuffer<u32>) -> xlog::Result<u32> {
    let mut host = rt.alloc_pinned::<u32>(8)?;
    let mut chunks = host.chunks_mut(4);
    let pending = dev.download_to_pinned(s, &mut chunks[0])?;
    let whole = host.as_slice()?[0];
    pending.wait()?;
    Ok(whole)
}

fn main() {}
