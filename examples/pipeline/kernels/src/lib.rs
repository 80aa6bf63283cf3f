//! Kernels of the pipeline example: a producer, two consumers and an overwriter.

use xlog::prelude::*;

xlog::kernel_module!();

/// A cheap integer hash, the same on host and device.
#[inline(always)]
pub fn mix(i: u32, seed: u32) -> u32 {
    let mut x = i.wrapping_mul(0x9E37_79B1) ^ seed;
    x ^= x >> 15;
    x = x.wrapping_mul(0x85EB_CA77);
    x ^ (x >> 13)
}

/// `col[i] = mix(i, seed)`.
#[xlog_kernel(write(col))]
pub fn produce(col: &mut [u32], seed: u32) {
    let i = thread::index_1d();
    if i < col.len() {
        col[i] = mix(i.get() as u32, seed);
    }
}

/// `out[i] = col[i] % 1000` (consumer one).
#[xlog_kernel(read(col), write(out))]
pub fn modulo(col: &[u32], out: &mut [u32]) {
    let i = thread::index_1d();
    if i < col.len() && i < out.len() {
        out[i] = col[i.get()] % 1000;
    }
}

/// `out[i] = col[i] >> shift` (consumer two).
#[xlog_kernel(read(col), write(out))]
pub fn shift(col: &[u32], out: &mut [u32], shift: u32) {
    let i = thread::index_1d();
    if i < col.len() && i < out.len() {
        out[i] = col[i.get()] >> (shift & 31);
    }
}

/// `col[i] = col[i] ^ mask` (the overwriter reads and writes in place). Declared
/// with a fixed block size to show the setting: launch it with `flip::config(n)`.
#[xlog_kernel(read_write(col), block = 128)]
pub fn flip(col: &mut [u32], mask: u32) {
    let i = thread::index_1d();
    if i < col.len() {
        col[i] ^= mask;
    }
}
