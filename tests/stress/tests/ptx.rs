//! CI check (no GPU): the stress kernels pass ptxas for sm_80 and sm_90 without spills.

#[test]
fn ptxas_accepts_every_kernel_without_spills() {
    let m = &xlog_stress::MODULE;
    assert_eq!(m.kernels().len(), 2);
    let reports = xlog_build::ptxas::check_module(m.name(), m.ptx(), &["sm_80", "sm_90"], &[])
        .unwrap_or_else(|e| panic!("{e}"));
    for r in &reports {
        assert_eq!(r.functions.len(), 2, "ptxas -arch={}", r.arch);
    }
}

#[test]
fn every_launcher_agrees_with_the_device_build() {
    xlog_stress::mix_w::check_abi().unwrap();
    xlog_stress::mix_rw::check_abi().unwrap();
}
