//! Page-locked memory is aligned to 256 bytes at least, no more is promised: a
//! page-locked buffer of elements aligned past that could hand out misaligned slices.
use xlog::prelude::*;

#[derive(Clone, Copy, DeviceCopy)]
#[repr(C, align(512))]
pub struct Wide {
    pub first: u32,
}

fn pages(rt: &Runtime) -> xlog::Result<()> {
    let host = rt.alloc_pinned::<Wide>(4)?;
    let _ = host.as_slice()?;
    Ok(())
}

fn main() {
    if let Ok(rt) = Runtime::get(0) {
        let _ = pages(&rt);
    }
}
