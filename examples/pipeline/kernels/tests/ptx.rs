//! CI check (no GPU): this kernel crate's PTX passes ptxas for sm_80 and sm_90 with
//! no register spills, and defines every kernel it declares.

#[test]
fn ptxas_accepts_every_kernel_without_spills() {
    xlog_build::ptxas::check_image(&pipeline_kernels::MODULE).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn every_launcher_agrees_with_the_device_build() {
    use pipeline_kernels::{flip, modulo, produce, shift, MODULE};
    produce::check_abi().unwrap();
    modulo::check_abi().unwrap();
    shift::check_abi().unwrap();
    flip::check_abi().unwrap();
    assert_eq!(MODULE.kernels().len(), 4);
}
