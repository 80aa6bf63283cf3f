//! A pending upload borrows its page-locked source: the host cannot write it while the copy may read it.
use xlog::prelude::*;

fn write_early(rt: &Runtime, s: &Stream, dev: &mut DeviceBuffer<u32>) -> xlog::Result<()> {
    let mut host = rt.alloc_pinned::<u32>(4)?;
    let pending = dev.upload_from_pinned(s, &host)?;
    host.as_mut_slice()?[0] = 1;
    pending.wait()
}

fn main() {}
