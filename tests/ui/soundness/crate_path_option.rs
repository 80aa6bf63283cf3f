//! `crate = path` could point the generated checks at a look-alike facade whose
//! `DeviceCopy` assertion checks nothing.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

mod fake {
    pub mod __private {
        #[allow(unused_imports)]
        pub use xlog::__private::{device, rt};
        pub fn assert_device_copy<T>() {}
    }
}

/// A host pointer: not device data.
#[derive(Clone, Copy)]
pub struct HostPtr(pub *const u8);

#[xlog_kernel(crate = fake, write(out))]
pub fn sneaky(p: HostPtr, out: &mut [u32]) {}

fn main() {}
