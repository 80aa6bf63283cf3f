//! Two shared arrays of one name made by one macro call: `static_shared!` names
//! its array after the call's line and column, which both expansions share.
use xlog::prelude::*;

xlog::kernel_module!();

macro_rules! two_arrays {
    () => {
        (
            xlog::device::static_shared!(S: [u32; 4]),
            xlog::device::static_shared!(S: [u32; 64]),
        )
    };
}

#[xlog_kernel(write(out))]
pub fn shared_twice(out: &mut [u32]) {
    let (small, big) = two_arrays!();
    let (_, _) = (small.words(), big.words());
    let i = thread::index_1d();
    if i < out.len() {
        out[i] = 1;
    }
}
