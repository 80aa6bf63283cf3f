//! CI check (no GPU): this kernel crate's PTX passes ptxas for sm_80 and sm_90 with
//! no register spills, and defines every kernel it declares.

#[test]
fn ptxas_accepts_every_kernel_without_spills() {
    xlog_build::ptxas::check_image(&datalog_kernels::MODULE).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn every_launcher_agrees_with_the_device_build() {
    use datalog_kernels as k;
    for check in [
        k::owners::check_abi as fn() -> xlog::Result<()>,
        k::count::check_abi,
        k::expand::check_abi,
        k::off_diagonal::check_abi,
    ] {
        check().unwrap();
    }
    assert_eq!(datalog_kernels::MODULE.kernels().len(), 4);
}
