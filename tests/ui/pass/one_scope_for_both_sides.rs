//! Host launchers resolve parameter types in the kernel's own scope, as the device
//! entry point does: `super::` paths, kernels in function bodies next to local types
//! that shadow module-level ones, and `macro_rules!` `$t:ty` parameters; and user
//! parameters named like generated locals are not shadowed.
#![allow(dead_code, unused_variables, clippy::too_many_arguments)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[derive(Clone, Copy, DeviceCopy)]
#[repr(C)]
pub struct Wide(pub [u32; 16]);

mod inner {
    use xlog::prelude::*;
    pub type Wide = u8;

    #[xlog_kernel(write(o))]
    pub fn fill_super(o: &mut [super::Wide]) {}
}

fn super_path(rt: &Runtime, s: &Stream) -> xlog::Result<()> {
    let mut o = rt.alloc_zeroed::<Wide>(4)?;
    inner::fill_super::launch(s, LaunchConfig::for_len(4), &mut o)
}

fn local_shadow(rt: &Runtime, s: &Stream) -> xlog::Result<()> {
    #[derive(Clone, Copy, DeviceCopy)]
    #[repr(C)]
    struct Wide(u8);

    #[xlog_kernel(write(o))]
    fn fill_local(o: &mut [Wide]) {}

    let mut o = rt.alloc_zeroed::<Wide>(4)?;
    fill_local::launch(s, LaunchConfig::for_len(4), &mut o)
}

macro_rules! scale_kernel {
    ($name:ident, $slice:ty, $out:ty, $t:ty) => {
        #[xlog_kernel(read(x), write(out))]
        pub fn $name(a: $t, x: $slice, out: $out) {}
    };
}
scale_kernel!(scale_f32, &[f32], &mut [f32], f32);

#[xlog_kernel(write(out))]
pub fn names(__stream: u32, __config: u64, __f: u8, __pre: i16, __params: f32, __out_arg: u32, out: &mut [u32]) {}

fn calls(rt: &Runtime, s: &Stream) -> xlog::Result<()> {
    let x = rt.upload(&[1.0f32; 4])?;
    let mut out = rt.alloc_zeroed::<f32>(4)?;
    scale_f32::launch(s, LaunchConfig::for_len(4), 2.0, &x, &mut out)?;
    let mut o = rt.alloc_zeroed::<u32>(4)?;
    names::launch(s, LaunchConfig::for_len(4), 1, 2, 3, 4, 5.0, 6, &mut o)
}

fn main() {}
