//! CI check (no GPU): the embedded module defines every elementwise kernel for
//! every element type, and `ptxas` validates it for sm_80 and sm_90 without spills.

use xlog_kernels::MODULE;

const OPS: &[&str] = &[
    "fill", "copy", "cast_f32", "cast_f64", "scale", "axpy", "add", "sub", "mul", "min", "max",
];
const TYPES: &[&str] = &["f32", "f64", "i32", "u32", "u64"];

#[test]
fn module_defines_every_kernel_for_every_type() {
    let mut want: Vec<String> = OPS
        .iter()
        .flat_map(|op| TYPES.iter().map(move |t| format!("{op}_{t}")))
        .collect();
    want.sort();
    let mut got: Vec<String> = MODULE.kernels().iter().map(|s| s.to_string()).collect();
    got.sort();
    assert_eq!(got, want);
}

#[test]
fn ptxas_accepts_every_kernel_without_spills() {
    let reports =
        xlog_build::ptxas::check_module(MODULE.name(), MODULE.ptx(), &["sm_80", "sm_90"], &[])
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(reports.len(), 2);
    for r in &reports {
        assert_eq!(
            r.functions.len(),
            MODULE.kernels().len(),
            "ptxas -arch={} saw every kernel",
            r.arch
        );
    }
}
