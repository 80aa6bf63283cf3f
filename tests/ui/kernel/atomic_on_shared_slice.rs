//! `atomic(..)` needs the buffer `&mut`: the launcher must hold it exclusively.
#![allow(dead_code, unused_variables)]
use xlog::prelude::*;

// SAFETY: never launched.
static MODULE: xlog::ModuleImage = unsafe { xlog::ModuleImage::from_ptx("ui", "") };

#[xlog_kernel(atomic(bins))]
pub fn count(bins: &[u32]) {}

fn main() {}
