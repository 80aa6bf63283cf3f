//! Kernels of the stress tests: elementwise mixes with random read / write /
//! read-write sets over buffers of different lengths, optionally slowed down so a
//! missing fence shows up as wrong data. [`mix`] is the CPU model of both.

use xlog::prelude::*;

xlog::kernel_module!();

/// The value both kernels and the CPU model compute for one element.
#[inline(always)]
pub fn mix(a: u32, b: u32, salt: u32) -> u32 {
    let mut x = a.wrapping_mul(0x9E37_79B1) ^ b.rotate_left(11) ^ salt;
    x ^= x >> 16;
    x = x.wrapping_mul(0x7FEB_352D);
    x ^ (x >> 15)
}

/// Element `i` of `s`, wrapping around (0 for an empty slice).
#[inline(always)]
pub fn at(s: &[u32], i: usize) -> u32 {
    if s.is_empty() {
        0
    } else {
        s[i % s.len()]
    }
}

/// `out[i] = mix(a[i % |a|], b[i % |b|], salt)` after sleeping `spin_ns`.
#[xlog_kernel(read(a, b), write(out))]
pub fn mix_w(a: &[u32], b: &[u32], out: &mut [u32], salt: u32, spin_ns: u32) {
    if spin_ns > 0 {
        thread::sleep_ns(spin_ns);
    }
    let i = thread::index_1d();
    if i < out.len() {
        out[i] = mix(at(a, i.get()), at(b, i.get()), salt);
    }
}

/// `out[i] = mix(a[i % |a|], b[i % |b|], salt) ^ out[i].rotate_left(5)` after sleeping.
#[xlog_kernel(read(a, b), read_write(out))]
pub fn mix_rw(a: &[u32], b: &[u32], out: &mut [u32], salt: u32, spin_ns: u32) {
    if spin_ns > 0 {
        thread::sleep_ns(spin_ns);
    }
    let i = thread::index_1d();
    if i < out.len() {
        out[i] = mix(at(a, i.get()), at(b, i.get()), salt) ^ out[i].rotate_left(5);
    }
}
