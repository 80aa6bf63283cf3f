//! CI check (no GPU): this kernel crate's PTX passes ptxas for sm_80 and sm_90 with
//! no register spills, and defines every kernel it declares.

#[test]
fn ptxas_accepts_every_kernel_without_spills() {
    xlog_build::ptxas::check_image(&distributed_kernels::MODULE).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn every_launcher_agrees_with_the_device_build() {
    distributed_kernels::rank_warp_counts::check_abi().unwrap();
    distributed_kernels::rank_starts::check_abi().unwrap();
    distributed_kernels::rank_scatter::check_abi().unwrap();
    distributed_kernels::sum_by_group::check_abi().unwrap();
    assert_eq!(distributed_kernels::MODULE.kernels().len(), 4);
}
