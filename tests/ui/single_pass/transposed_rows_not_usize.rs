//! The row count of a transposed view is a `usize`: a float, a signed or a `bool`
//! parameter would be converted, and a conversion could change the shape the
//! witnesses are derived from.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(read(x), write(out per transposed(4, rows)))]
pub fn float_rows(x: &[f32], out: &mut [f32], rows: f32) {}

#[xlog_kernel(read(x), write(out per transposed(4, rows)))]
pub fn signed_rows(x: &[f32], out: &mut [f32], rows: i64) {}

#[xlog_kernel(read(x), write(out per transposed(4, rows)))]
pub fn bool_rows(x: &[f32], out: &mut [f32], rows: bool) {}

#[xlog_kernel(read(x), write(out per transposed(4, rows)))]
pub fn spelled_out(x: &[f32], out: &mut [f32], rows: ::core::primitive::usize) {}

fn main() {}
