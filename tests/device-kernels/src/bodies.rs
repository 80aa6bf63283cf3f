//! Kernel bodies that compile for the host as well as the device: they take the
//! device-side views `#[xlog_kernel]` would build, so the host type-checks them.

use xlog_device::math;
use xlog_device::prelude::*;

/// `y[i] = a * x[i] + y[i]`.
pub fn saxpy(a: f32, x: &[f32], y: &mut InOut<'_, f32>) {
    let i = thread::index_1d();
    if i < y.len() && i < x.len() {
        y[i] += a * x[i.get()];
    }
}

/// `out[linear_index()] = linear_index()` for any launch shape: the host checks that the
/// values form the permutation `0..total_threads()`.
///
/// # Safety
/// 1. `out.len()` equals the launch's total thread count (any shape: the linear
///    index is unique, but it is not a `ThreadIndex` witness outside 1-D launches).
pub unsafe fn thread_indices(out: &mut Out<'_, u64>) {
    let i = thread::linear_index();
    if i < out.len() {
        // SAFETY: `linear_index` is unique per thread for every launch shape, so no
        // two threads write one element; `i < len`.
        unsafe { *out.as_mut_ptr().add(i) = i as u64 };
    }
}

/// A recursion `depth` calls deep, each frame holding 32 words read at a
/// data-dependent index (so they live in the frame, not in registers): a stack
/// need that grows with the data, about 150 bytes a level.
#[inline(never)]
pub fn recurse(depth: u32, seed: u32) -> u32 {
    let mut frame = [0u32; 32];
    for (i, w) in frame.iter_mut().enumerate() {
        *w = seed.wrapping_mul(i as u32 + 1) ^ depth;
    }
    if depth == 0 {
        return frame[(seed % 32) as usize];
    }
    let below = recurse(depth - 1, frame[(depth % 32) as usize]);
    frame[(below % 32) as usize] ^ below
}

/// Writes one element past the end on the last thread: the bounds check panics with
/// a formatted message, which the panic handler records as its location.
pub fn out_of_bounds_write(out: &mut Out<'_, u32>) {
    let i = thread::index_1d();
    if i.get() + 1 == thread::total_threads() {
        // Deliberately unchecked against `len`: `out` has `total_threads() - 1` slots.
        out[i] = 1;
    } else if i < out.len() {
        out[i] = 0;
    }
}

/// The `f32` math outputs for one input, in `math_f32`'s order.
pub fn math_f32_values(x: f32) -> [f32; crate::MATH_F32_OUTPUTS] {
    let ax = math::abs(x);
    [
        math::sqrt(ax),
        math::exp(x),
        math::ln(ax),
        math::sin(x),
        math::cos(x),
        math::pow(ax, 1.7),
        math::fma(x, 2.5, -1.0),
        math::floor(x),
        math::fast::exp(x),
        math::fast::sin(x),
        math::fast::cos(x),
    ]
}

/// The `f64` math outputs for one input, in `math_f64`'s order.
pub fn math_f64_values(x: f64) -> [f64; crate::MATH_F64_OUTPUTS] {
    let ax = math::abs(x);
    [
        math::sqrt(ax),
        math::exp(x),
        math::ln(ax),
        math::sin(x),
        math::cos(x),
        math::pow(ax, 1.7),
        math::fma(x, 2.5, -1.0),
        math::floor(x),
        math::ceil(x),
    ]
}
