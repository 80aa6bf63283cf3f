//! GPU suite of the ABI regression kernels (opt-in: `--features gpu-tests`; every
//! test fails without a device): each kernel's output is checked on the host, so a
//! launcher that passed its parameters wrongly would show here.

use xlog::prelude::*;
use xlog_abi_kernels::{inner, names, scale, scale_u32, Elem, Wide};
use xlog_test_support::gpu_runtime;

#[test]
fn scalar_names_like_launcher_locals_reach_the_kernel() {
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let mut out = rt.alloc_zeroed::<u32>(7).unwrap();
    names::launch(
        &s,
        LaunchConfig::for_len(7),
        11,
        22,
        33,
        44,
        55,
        66,
        77,
        &mut out,
    )
    .unwrap();
    assert_eq!(out.download(&s).unwrap(), [11, 22, 33, 44, 55, 66, 77]);
}

#[test]
fn super_paths_name_the_same_type_on_both_sides() {
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let n = 1000;
    let mut o = rt.alloc_zeroed::<Wide>(n).unwrap();
    inner::fill_super::launch(&s, LaunchConfig::for_len(n), &mut o).unwrap();
    let got = o.download(&s).unwrap();
    for (i, w) in got.iter().enumerate() {
        assert_eq!(*w, Wide([i as u32; 16]), "element {i}");
    }
}

#[test]
fn the_feature_switched_element_type_computes() {
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let n = 4097;
    let x: Vec<Elem> = (0..n).map(|i| i as Elem * 0.5).collect();
    let dx = rt.upload_on(&s, &x).unwrap();
    let mut out = rt.alloc_zeroed::<Elem>(n).unwrap();
    scale::launch(&s, scale::config(n), 3.0, &dx, &mut out).unwrap();
    let got = out.download(&s).unwrap();
    for i in 0..n {
        assert_eq!(got[i], 3.0 * x[i], "element {i}");
    }
}

#[test]
fn a_macro_rules_kernel_computes() {
    let rt = gpu_runtime();
    let s = rt.new_stream().unwrap();
    let x: Vec<u32> = (0..300).collect();
    let dx = rt.upload_on(&s, &x).unwrap();
    let mut out = rt.alloc_zeroed::<u32>(300).unwrap();
    scale_u32::launch(&s, scale_u32::config(300), 7, &dx, &mut out).unwrap();
    let want: Vec<u32> = x.iter().map(|v| 7 * v).collect();
    assert_eq!(out.download(&s).unwrap(), want);
}
