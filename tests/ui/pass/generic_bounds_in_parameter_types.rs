//! A generic kernel whose parameter type needs the bound of its first type
//! parameter (an associated type, `<T as Widen>::Wide`): the bounds on the first
//! parameter are supertraits of the types trait, so the launcher and generic host
//! code that names the trait have them.
#![allow(dead_code, unused_variables)]
#![deny(unsafe_code)]
use xlog::prelude::*;

// SAFETY: never launched.
#[allow(unsafe_code)]
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

pub trait Widen: Copy {
    type Wide: DeviceCopy;
}
impl Widen for u32 {
    type Wide = u64;
}
impl Widen for f32 {
    type Wide = f64;
}

#[xlog_kernel(read(x, idx), write(out), for T in [f32, u32], for I in [u32])]
pub fn widen<T: Copy, I: Into<u64>>(x: &[T], idx: &[I], out: &mut [T], w: <T as Widen>::Wide)
where
    T: Widen,
{
}

/// Generic host code: `T: WidenType<u32>` implies `T: Widen`.
fn widen_any<T: WidenType<u32>>(
    s: &Stream,
    x: &DeviceBuffer<T>,
    idx: &DeviceBuffer<u32>,
    out: &mut DeviceBuffer<T>,
    w: <T as Widen>::Wide,
) -> xlog::Result<()> {
    widen::launch(s, widen::config(4), x, idx, out, w)
}

fn calls(s: &Stream, x: &DeviceBuffer<f32>, idx: &DeviceBuffer<u32>, out: &mut DeviceBuffer<f32>) -> xlog::Result<()> {
    widen::launch(s, widen::config(4), x, idx, out, 1.0f64)?;
    widen_any(s, x, idx, out, 1.0f64)?;
    widen::check_abi::<u32, u32>()?;
    let mut rec = xlog::GraphRecorder::new(s);
    widen::record(&mut rec, widen::config(4), x, idx, &*out, 1.0f64)?;
    Ok(())
}

fn main() {}
