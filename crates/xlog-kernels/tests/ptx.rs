//! CI check (no GPU): the embedded module defines every elementwise kernel for
//! every element type, every cooperative, single-pass and library kernel, and `ptxas` validates it for
//! sm_80 and sm_90 without spills.

use xlog_kernels::MODULE;

const OPS: &[&str] = &[
    "fill", "copy", "cast_f32", "cast_f64", "scale", "axpy", "axpy_vec", "add", "sub", "mul",
    "min", "max",
];
const COOPERATIVE: &[&str] = &[
    "histogram_u8",
    "atomic_fold_i64",
    "block_sum_u64",
    "block_sum_f32",
    "block_sum_f64",
    "warp_sum_u32",
    "block_reverse_f32",
    "select_odd_u32",
    "block_collectives_u32",
    "warp_collectives_u64",
    "inclusive_scan_u32",
    "inclusive_scan_u64",
    "inclusive_scan_f32",
    "inclusive_max_scan_u32",
    "transpose_f32",
    "transpose_f64",
];
const TYPES: &[&str] = &["f32", "f64", "i32", "u32", "u64"];
/// The query-engine library's element types.
const LIBRARY_TYPES: &[&str] = &["u32", "i32", "f32", "u64", "i64", "f64"];

/// The library's kernels: reduce, scan, gather / scatter for every type, and the
/// user-style operators.
fn library() -> Vec<String> {
    let mut v: Vec<String> =
        LIBRARY_TYPES
            .iter()
            .flat_map(|t| {
                [
                    "reduce_sum",
                    "reduce_min",
                    "reduce_max",
                    "scan_inclusive_sum",
                    "scan_exclusive_sum",
                ]
                .iter()
                .map(move |op| format!("{op}_{t}"))
                .chain(["u32", "u64"].iter().flat_map(move |i| {
                    [format!("gather_{t}_by_{i}"), format!("scatter_{t}_by_{i}")]
                }))
            })
            .collect();
    v.extend(
        [
            "fold_or_u32",
            "scan_inclusive_max_u32",
            "scan_last_nonzero_u32",
        ]
        .map(String::from),
    );
    v
}

#[test]
fn module_defines_every_kernel_for_every_type() {
    let mut want: Vec<String> = OPS
        .iter()
        .flat_map(|op| TYPES.iter().map(move |t| format!("{op}_{t}")))
        .chain(COOPERATIVE.iter().map(|k| k.to_string()))
        .chain(library())
        .collect();
    want.sort();
    let mut got: Vec<String> = MODULE
        .kernels()
        .iter()
        .map(|(k, _)| k.to_string())
        .collect();
    got.sort();
    assert_eq!(got, want);
}

#[test]
fn ptxas_accepts_every_kernel_without_spills() {
    let reports = xlog_build::ptxas::check_image(&MODULE).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(reports.len(), 2);
}

macro_rules! check_abi {
    ($($t:ident),*) => {$({
        use xlog_kernels::elementwise::$t as k;
        for (op, check) in [
            ("fill", k::fill::check_abi as fn() -> xlog::Result<()>),
            ("copy", k::copy::check_abi),
            ("cast_f32", k::cast_f32::check_abi),
            ("cast_f64", k::cast_f64::check_abi),
            ("scale", k::scale::check_abi),
            ("axpy", k::axpy::check_abi),
            ("axpy_vec", k::axpy_vec::check_abi),
            ("add", k::add::check_abi),
            ("sub", k::sub::check_abi),
            ("mul", k::mul::check_abi),
            ("min", k::min::check_abi),
            ("max", k::max::check_abi),
        ] {
            check().unwrap_or_else(|e| panic!("{op}_{}: {e}", stringify!($t)));
        }
    })*};
}

#[test]
fn every_launcher_agrees_with_the_device_build() {
    check_abi!(f32, f64, i32, u32, u64);
    use xlog_kernels::cooperative as c;
    for check in [
        c::histogram_u8::check_abi as fn() -> xlog::Result<()>,
        c::atomic_fold_i64::check_abi,
        c::block_sum_u64::check_abi,
        c::block_sum_f32::check_abi,
        c::block_sum_f64::check_abi,
        c::warp_sum_u32::check_abi,
        c::block_reverse_f32::check_abi,
        c::select_odd_u32::check_abi,
        c::block_collectives_u32::check_abi,
        c::warp_collectives_u64::check_abi,
    ] {
        check().unwrap();
    }
    use xlog_kernels::single_pass as p;
    for check in [
        p::inclusive_scan_u32::check_abi as fn() -> xlog::Result<()>,
        p::inclusive_scan_u64::check_abi,
        p::inclusive_scan_f32::check_abi,
        p::inclusive_max_scan_u32::check_abi,
        p::transpose_f32::check_abi,
        p::transpose_f64::check_abi,
    ] {
        check().unwrap();
    }
    use xlog_kernels::{gather as g, reduce as r, scan as s};
    for check in [
        r::reduce_sum_f32::check_abi as fn() -> xlog::Result<()>,
        r::reduce_min_i64::check_abi,
        r::reduce_max_u64::check_abi,
        r::fold_or_u32::check_abi,
        s::scan_inclusive_sum_i32::check_abi,
        s::scan_exclusive_sum_f64::check_abi,
        s::scan_inclusive_max_u32::check_abi,
        s::scan_last_nonzero_u32::check_abi,
        g::gather_f32_by_u64::check_abi,
        g::scatter_i64_by_u32::check_abi,
    ] {
        check().unwrap();
    }
    assert_eq!(
        OPS.len() * TYPES.len() + COOPERATIVE.len() + library().len(),
        MODULE.kernels().len()
    );
}
