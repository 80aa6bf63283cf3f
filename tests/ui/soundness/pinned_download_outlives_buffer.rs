//! The bytes a download yields borrow the page-locked buffer: they cannot outlive it.
use xlog::prelude::*;

fn dangling<'a>(rt: &Runtime, s: &Stream, dev: &DeviceBuffer<u32>) -> xlog::Result<&'a [u32]> {
    let mut host = rt.alloc_pinned::<u32>(4)?;
    let data = dev.download_to_pinned(s, &mut host)?.wait()?;
    Ok(data)
}

fn main() {}
