//! Page-locked memory is page-aligned, no more: a page-locked buffer of elements
//! aligned past a page would hand out misaligned slices.
use xlog::prelude::*;

#[derive(Clone, Copy, DeviceCopy)]
#[repr(C, align(8192))]
pub struct TwoPages {
    pub first: u32,
}

fn pages(rt: &Runtime) -> xlog::Result<()> {
    let host = rt.alloc_pinned::<TwoPages>(4)?;
    let _ = host.as_slice()?;
    Ok(())
}

fn main() {
    if let Ok(rt) = Runtime::get(0) {
        let _ = pages(&rt);
    }
}
