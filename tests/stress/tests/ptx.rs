//! CI check (no GPU): the stress kernels pass ptxas for sm_80 and sm_90 without spills.

#[test]
fn ptxas_accepts_every_kernel_without_spills() {
    assert_eq!(xlog_stress::MODULE.kernels().len(), 2);
    xlog_build::ptxas::check_image(&xlog_stress::MODULE).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn every_launcher_agrees_with_the_device_build() {
    xlog_stress::mix_w::check_abi().unwrap();
    xlog_stress::mix_rw::check_abi().unwrap();
}
