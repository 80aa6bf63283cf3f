//! Generic kernels: one or two type parameters, scalars of the type, bounds inline
//! and in `where`, launched with inferred and explicit types, recorded into graphs,
//! and wrapped by generic code that names the types trait.
#![allow(dead_code, unused_variables)]
#![deny(unsafe_code)]
use xlog::prelude::*;

// SAFETY: never launched.
#[allow(unsafe_code)]
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x), write(out), for T in [f32, f64, u32, core::primitive::u8])]
pub fn scale<T: core::ops::Mul<Output = T>>(a: T, x: &[T], out: &mut [T]) {
    let i = thread::index_1d();
    if i < x.len() && i < out.len() {
        out[i] = a * x[i.get()];
    }
}

#[xlog_kernel(read(x, idx), write(out), for T in [f32, u64], for I in [u32, u64])]
pub fn gather<T, I>(x: &[T], idx: &[I], out: &mut [T])
where
    I: Into<u64>,
{
    for i in thread::grid_stride(out.len()) {
        if let Some(&v) = idx.get(i.get()).and_then(|&j| x.get(j.into() as usize)) {
            out[i] = v;
        }
    }
}

/// Generic host code over a kernel's types.
fn scale_any<T: ScaleType>(s: &Stream, a: T, x: &DeviceBuffer<T>, out: &mut DeviceBuffer<T>) -> xlog::Result<()> {
    scale::launch(s, scale::config(x.len()), a, x, out)
}

fn calls(s: &Stream, x: &DeviceBuffer<f32>, idx: &DeviceBuffer<u64>, out: &mut DeviceBuffer<f32>) -> xlog::Result<()> {
    scale::launch(s, scale::config(4), 2.0f32, x, out)?;
    scale::launch::<f32>(s, scale::config(4), 2.0, x, out)?;
    scale_any(s, 2.0f32, x, out)?;
    gather::launch(s, gather::config(4), x, idx, out)?;
    gather::launch::<f32, u64>(s, gather::config(4), x, idx, out)?;
    gather::check_abi::<u64, u32>()?;
    gather::check_abi_all()?;
    let mut rec = xlog::GraphRecorder::new(s);
    scale::record::<f32>(&mut rec, scale::config(4), 2.0, x, &*out)?;
    Ok(())
}

fn main() {}
