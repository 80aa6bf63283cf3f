//! A module image built without `unsafe`: its entry points could take other
//! parameters than the typed launchers pass.
#![allow(dead_code)]

static MODULE: xlog::ModuleImage = xlog::ModuleImage::from_ptx("m", ".version 7.0");

fn main() {}
