//! `kernel_module!()` in a crate with no build script: the message says what to add.
#![allow(dead_code)]
xlog::kernel_module!();

fn main() {}
