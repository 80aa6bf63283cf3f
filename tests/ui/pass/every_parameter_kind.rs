//! Every parameter kind compiles and the launchers accept buffers and views.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[derive(Clone, Copy, DeviceCopy)]
#[repr(C)]
pub struct Params {
    pub scale: f32,
    pub offset: [f32; 2],
}

/// Every access mode and scalar kind.
#[xlog_kernel(read(x), write(out), read_write(acc))]
pub fn all(p: Params, n: u32, flag: bool, x: &[f32], out: &mut [f32], acc: &mut [f64]) {
    let i = thread::index_1d();
    if i < out.len() && i < x.len() && flag && (i.get() as u32) < n {
        out[i] = x[i.get()] * p.scale + p.offset[0];
        // A read slice takes the witness too.
        out[i] += x[i];
    }
    if let Some(a) = acc.get_mut(i) {
        *a += 1.0;
    }
}

/// # Safety
/// `n <= out.len()`.
#[xlog_kernel(write(out), block = 128, shared = 512)]
pub unsafe fn raw(out: &mut [u32], n: usize) {
    let i = thread::index_1d().get();
    if i < n {
        // SAFETY: `i < n <= out.len()` by the kernel's contract.
        unsafe { *out.as_mut_ptr().add(i) = 1 };
    }
}

fn call(rt: &Runtime, s: &Stream) -> xlog::Result<()> {
    let x = rt.upload(&[1.0f32; 8])?;
    let mut out = rt.alloc_zeroed::<f32>(8)?;
    let mut acc = rt.alloc_zeroed::<f64>(8)?;
    let p = Params { scale: 2.0, offset: [1.0, 0.0] };
    all::launch(s, LaunchConfig::for_len(8), p, 8, true, &x, &mut out, &mut acc)?;
    // Views: a read view in, a mutable view out.
    let mut head = out.slice_mut(0..4);
    all::launch(s, LaunchConfig::for_len(4), p, 4, true, &x.slice(4..), &mut head, &mut acc)?;
    let mut ints = rt.alloc_zeroed::<u32>(8)?;
    // SAFETY: n == len.
    unsafe { raw::launch(s, raw::config(8), &mut ints, 8)? };
    Ok(())
}

fn main() {}
