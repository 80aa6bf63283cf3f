//! A pending download borrows its page-locked destination: the host cannot read it before `wait`.
use xlog::prelude::*;

fn read_early(rt: &Runtime, s: &Stream, dev: &DeviceBuffer<u32>) -> xlog::Result<u32> {
    let mut host = rt.alloc_pinned::<u32>(4)?;
    let pending = dev.download_to_pinned(s, &mut host)?;
    let early = host.as_slice()?[0];
    pending.wait()?;
    Ok(early)
}

fn main() {}
